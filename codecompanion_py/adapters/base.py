"""The HTTP adapter: data (url, headers, env, schema, opts) plus handlers.

`HTTPAdapter.from_data()` builds one from CodeCompanion's table shape. Before each request
`prepare()` resolves `env` values, substitutes `${name}` in the url, headers and
parameters, and maps `schema` settings into the request parameters. Resolved values live
only in `env_replaced`, which no repr, log or error shows.

An `env` value is read as CodeCompanion reads it, the first that applies: `cmd:<command>`
(its output), `file:<path>` (its text), the name of a set environment variable (its value),
a function (called with the adapter; a Lua one through the editor, see `lua.py`), a dotted
path into the adapter (`schema.model.default`), else the value itself (a literal key). One
difference: an unset name that looks like a variable (`MY_API_KEY`: capitals and an
underscore) is "not set", an error that says so, rather than a key sent as it is.

Functions in the data (Lua ones from setup(), Python ones from built-in adapters) are
called once per request, in `prepare()`: env functions, header functions, and the schema's
`default`, `enabled` / `condition`, `choices` and `validate`; the prepared copy holds their
values (`schema.model.default` is the model name there).

Keys. An environment variable set to an empty string counts as not set (no `Bearer `
header with nothing after it), and so does a command that prints nothing; a required
one is then "not set", naming the variable or the command. A command's output loses one
trailing line ending, as a shell's `$(...)` does; a line break inside it is refused. A
url or header value that would hold a CR, LF or NUL (a key from a CRLF env file, a
second line of output) is refused with an error that names where the value comes from,
never the value. `secrets` lists the resolved values that are credentials (those in
credential headers, and env entries named like a key or token): the client replaces
them with `***` in every error text.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import os
import re
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..processes import signal_group, start_in_group
from ..scrubber import KNOWN, url_credentials
from . import lua
from .handlers import call_handler
from .lua import LuaFunction

if TYPE_CHECKING:
    from ..client import HttpClient
    from ..editor_port import Editor

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_.]+)\}")
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_UNSET_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")  # MY_API_KEY: a variable, not a key
_LINE_BREAK = re.compile(r"[\r\n\x00]")
_SECRET_NAME = re.compile(r"key|token|secret|password|authorization|credential", re.IGNORECASE)
DEFAULT_CMD_TIMEOUT = 20.0


_SHARED = (str, int, float, bool, type(None), LuaFunction)


def _copied(value: Any, lua_found: list[LuaFunction]) -> Any:
    """`copy.deepcopy` for adapter data, several times faster on its tables: dicts and lists
    are copied, strings, numbers and functions shared (`deepcopy` shares them too). The Lua
    functions met are added to `lua_found`."""
    kind = value.__class__
    if kind is dict:
        return {key: _copied(item, lua_found) for key, item in value.items()}
    if kind is list:
        return [_copied(item, lua_found) for item in value]
    if kind is LuaFunction:
        lua_found.append(value)
        return value
    if isinstance(value, _SHARED) or callable(value):
        return value
    return copy.deepcopy(value)


@dataclass(repr=False)
class HTTPAdapter:
    name: str
    formatted_name: str = ""
    type: str = "http"
    url: str = ""
    env: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=dict)
    schema: dict[str, dict[str, Any]] = field(default_factory=dict)
    opts: dict[str, Any] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=lambda: {"llm": "assistant", "user": "user"})
    features: dict[str, Any] = field(default_factory=dict)
    handlers: dict[str, Any] = field(default_factory=dict)
    env_replaced: dict[str, Any] = field(default_factory=dict)
    secrets: tuple[str, ...] = field(default=(), compare=False)
    """Set by `prepare()`: the resolved values that are credentials, never to be shown."""
    client: HttpClient | None = field(default=None, compare=False)
    """Set by `prepare()` on the copy it returns: the HttpClient the request goes through,
    for `env` callables that make requests of their own (Copilot's token exchange). Not
    part of the adapter's data: `copy()` and `to_data()` leave it out."""
    editor: Editor | None = field(default=None, compare=False)
    """Set by `prepare()` like `client`: the editor that Lua functions are called through."""
    holds_lua: bool = field(default=True, compare=False)
    """False when `copy()` found no Lua function in its data: its handlers then run directly,
    not in a greenlet where Lua can be called (`lua.run_sync`, 10 µs each, three a request)."""

    _FIELDS = frozenset(
        (
            "name",
            "formatted_name",
            "type",
            "url",
            "env",
            "headers",
            "parameters",
            "body",
            "schema",
            "opts",
            "roles",
            "features",
            "handlers",
        )
    )

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> HTTPAdapter:
        unknown = sorted(set(data) - cls._FIELDS)
        if unknown:
            raise ConfigError(f"adapter {data.get('name', '?')}: unknown keys {unknown}")
        if not data.get("name"):
            raise ConfigError("an adapter needs a name")
        adapter = cls(**copy.deepcopy(dict(data)))
        adapter.formatted_name = adapter.formatted_name or adapter.name
        return adapter

    def to_data(self) -> dict[str, Any]:
        return {key: copy.deepcopy(getattr(self, key)) for key in self._FIELDS}

    def copy(self) -> HTTPAdapter:
        """A copy whose tables can be changed without touching this adapter's (each request
        prepares one)."""
        lua_found: list[LuaFunction] = []
        adapter = HTTPAdapter(**{key: _copied(getattr(self, key), lua_found) for key in self._FIELDS})
        adapter.formatted_name = adapter.formatted_name or adapter.name
        adapter.holds_lua = bool(lua_found)
        return adapter

    @property
    def lua_editor(self) -> Editor | None:
        """What its handlers run with (`lua.run_sync`): `editor`, or None when no Lua
        function can be met."""
        return self.editor if self.holds_lua else None

    @property
    def model(self) -> str | None:
        model = self.schema.get("model", {}).get("default")
        if isinstance(model, LuaFunction) and not lua.in_context():
            return model.last  # known once a request resolved it
        return model(self) if callable(model) else model

    def set_model(self, model: str) -> None:
        self.schema.setdefault("model", {"mapping": "parameters"})["default"] = model

    @property
    def vision(self) -> bool:
        """Whether the model reads images, as CodeCompanion decides it: `opts.vision` (off when
        absent), and off for a model whose `schema.model.choices` entry has `opts` without
        `has_vision`."""
        choices = self.schema.get("model", {}).get("choices")
        entry = choices.get(self.model) if isinstance(choices, Mapping) else None
        model_opts = entry.get("opts") if isinstance(entry, Mapping) else None
        if isinstance(model_opts, Mapping) and not model_opts.get("has_vision"):
            return False
        return bool(self.opts.get("vision"))

    @property
    def streaming(self) -> bool:
        return bool(self.opts.get("stream", True))

    def __repr__(self) -> str:  # never shows env values or headers
        return f"HTTPAdapter(name={self.name!r}, model={self.model!r})"


def map_schema_to_params(adapter: HTTPAdapter, settings: Mapping[str, Any] | None = None) -> None:
    """Write each schema entry's value (user setting, else default) into its `mapping`.
    A default given as a function is replaced by its value on this adapter."""
    settings = settings or {}
    for key, entry in adapter.schema.items():
        if not isinstance(entry, dict):
            continue
        if not _enabled(adapter, entry):
            continue
        if key in settings:
            value = settings[key]
            _validate(adapter, key, entry, value)
        else:
            value = entry.get("default")
            if callable(value):
                value = entry["default"] = value(adapter)
        if value is None or not entry.get("mapping"):
            continue
        _check_choice(adapter, key, entry, value)
        target = _dig(adapter, entry["mapping"])
        *parents, leaf = key.split(".")
        for part in parents:
            target = target.setdefault(part, {})
        target[leaf] = value


def _enabled(adapter: HTTPAdapter, entry: Mapping[str, Any]) -> bool:
    """`enabled` (or the older `condition`): a boolean or a function of the adapter."""
    for name in ("enabled", "condition"):
        check = entry.get(name)
        if callable(check) and not check(adapter):
            return False
        if check is False:
            return False
    return True


def _validate(adapter: HTTPAdapter, key: str, entry: Mapping[str, Any], value: Any) -> None:
    """A setting against the entry's `validate` function: `ok[, message]`."""
    check = entry.get("validate")
    if not callable(check):
        return
    answer = check.call_many(value) if isinstance(check, LuaFunction) else check(value)
    ok, message = (answer[0], answer[1] if len(answer) > 1 else None) if isinstance(answer, tuple) else (answer, None)
    if not ok:
        raise ConfigError(f"{adapter.name}: {key}={value!r} is not valid" + (f": {message}" if message else ""))


def _choices(adapter: HTTPAdapter, entry: Mapping[str, Any]) -> list[Any] | None:
    choices = entry.get("choices")
    if callable(choices):
        choices = choices(adapter)
    if isinstance(choices, Mapping):
        return list(choices)
    return list(choices) if choices else None


def _check_choice(adapter: HTTPAdapter, key: str, entry: Mapping[str, Any], value: Any) -> None:
    # Models outside the list are allowed: providers add models faster than lists change.
    if key == "model":
        return
    choices = _choices(adapter, entry)
    if choices is not None and value not in choices:
        raise ConfigError(f"{adapter.name}: {key}={value!r} is not one of {choices}")


def _dig(adapter: HTTPAdapter, mapping: str) -> dict[str, Any]:
    """`parameters` or a dotted path such as `body.generationConfig` on the adapter."""
    head, *rest = mapping.split(".")
    target = getattr(adapter, head, None)
    if not isinstance(target, dict):
        raise ConfigError(f"{adapter.name}: schema mapping {mapping!r} does not name a table")
    for part in rest:
        target = target.setdefault(part, {})
    return target


async def resolve_env(adapter: HTTPAdapter) -> dict[str, Any]:
    """Resolve every `env` entry; an unset environment variable resolves to None."""
    timeout = float(adapter.opts.get("cmd_timeout", DEFAULT_CMD_TIMEOUT))
    resolved: dict[str, Any] = {}
    for key, spec in adapter.env.items():
        resolved[key] = await _resolve_one(adapter, key, spec, timeout)
    return resolved


async def _resolve_one(adapter: HTTPAdapter, key: str, spec: Any, timeout: float) -> Any:
    if isinstance(spec, LuaFunction):
        return await spec.call_async(adapter.editor, adapter)
    if callable(spec):
        value = spec(adapter)
        return await value if inspect.isawaitable(value) else value  # e.g. a token exchange
    if not isinstance(spec, str):
        return spec
    return await resolve_env_string(adapter.name, key, spec, timeout, lookup=lambda path: _lookup_path(adapter, path))


async def resolve_env_string(
    owner: str,
    key: str,
    spec: str,
    timeout: float = DEFAULT_CMD_TIMEOUT,
    *,
    lookup: Callable[[str], Any] | None = None,
) -> Any:
    """One `env` value as a user writes it: `cmd:<shell command>` (its output),
    `file:<path>` (its text), the name of an environment variable (its value), a dotted
    path that `lookup` finds (a value of the adapter), or else the literal string; an unset
    variable-like name (`MY_API_KEY`) is None. `owner` names the adapter in errors."""
    if spec.startswith("cmd:"):
        return await _run_env_command(owner, key, spec[4:].strip(), timeout)
    if spec.startswith("file:"):
        path = Path(spec[5:].strip()).expanduser()
        try:
            return path.read_text().strip()
        except OSError as exc:
            raise ConfigError(f"{owner}: env {key!r} could not read {path}: {exc.strerror}") from None
    if spec in os.environ:
        return os.environ[spec] if os.environ[spec].strip() else None  # empty: no value
    if lookup is not None and "." in spec:
        found = lookup(spec)
        if found is not None:
            return found
    if _UNSET_NAME.match(spec):
        return None  # an environment variable that is not set
    return spec


async def _run_env_command(owner: str, key: str, command: str, timeout: float) -> str | None:
    # Its own process group, so a timeout kills the command's children too (they would
    # otherwise keep the pipe open). The full environment: the command may need a secret.
    proc = await start_in_group(
        ["/bin/sh", "-c", command],
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        stdin=asyncio.subprocess.DEVNULL,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        signal_group(proc.pid, signal.SIGKILL)
        await proc.wait()
        raise ConfigError(f"{owner}: env {key!r} command timed out after {timeout:g}s") from None
    if proc.returncode != 0:
        raise ConfigError(f"{owner}: env {key!r} command failed with exit code {proc.returncode}")
    # One trailing line ending goes, as in a shell's $(...); one inside is a second line.
    text = out.decode(errors="replace").removesuffix("\n").removesuffix("\r").strip(" \t")
    if _LINE_BREAK.search(text):
        raise ConfigError(
            f"{owner}: env {key!r} command (`{_program(command)} ...`) printed more than one line; "
            "it must print the value alone, on one line"
        )
    return text or None  # printed nothing: no value


def _program(command: str) -> str:
    words = command.split()
    return words[0] if words else "?"


def _lookup_path(adapter: HTTPAdapter, path: str) -> Any:
    head, *rest = path.split(".")
    if head not in HTTPAdapter._FIELDS:
        return None
    value: Any = getattr(adapter, head)
    for part in rest:
        value = value.get(part) if isinstance(value, Mapping) else None
    if isinstance(value, LuaFunction):
        return value.last  # called later in prepare(); a path to one reads what it returned last
    return value(adapter) if callable(value) else value


def substitute(text: str, values: Mapping[str, Any]) -> str:
    """Replace `${name}` with its resolved value; unknown or unset names raise KeyError."""

    def replace(match: re.Match[str]) -> str:
        value = values.get(match.group(1))
        if value is None:
            raise KeyError(match.group(1))
        return str(value)

    return _PLACEHOLDER.sub(replace, text)


async def prepare(
    adapter: HTTPAdapter,
    settings: Mapping[str, Any] | None = None,
    *,
    client: HttpClient | None = None,
    editor: Editor | None = None,
) -> HTTPAdapter:
    """A request-ready copy: env resolved, placeholders filled, schema mapped, setup run.
    `client` is the HttpClient the request will go through, kept as the copy's `client`
    for `env` callables that need to make requests of their own; `editor` is what Lua
    functions of the adapter are called through (see `lua.py`)."""
    ready = adapter.copy()
    ready.client = client
    ready.editor = editor
    model = ready.schema.get("model")
    if isinstance(model, dict) and isinstance(model.get("default"), LuaFunction):
        # first, so that an env entry `schema.model.default` is the model's name
        model["default"] = await model["default"].call_async(editor, ready)
    values = await resolve_env(ready)
    ready.env_replaced = values
    ready.secrets = _secrets(ready, values)
    KNOWN.remember(ready.secrets)  # scrubbed from whatever comes in from outside (scrubber.py)
    ready = await lua.run_sync(ready.lua_editor, _fill, ready, values, settings)
    in_url = url_credentials(ready.url)  # https://user:password@host: basic auth before a model
    if in_url:
        ready.secrets = (*ready.secrets, *in_url)
        KNOWN.remember(in_url)
    return ready


def _fill(ready: HTTPAdapter, values: Mapping[str, Any], settings: Mapping[str, Any] | None) -> HTTPAdapter:
    """The synchronous rest of `prepare()`, where Lua functions can be called."""
    _require(ready, values)
    map_schema_to_params(ready, settings)
    try:
        url = substitute(ready.url, values)
    except KeyError as missing:
        raise ConfigError(f"{ready.name}: the url needs {_describe(ready, missing.args[0])}") from None
    _check_one_line(ready, "url", ready.url, url)
    ready.url = url
    headers: dict[str, str] = {}
    for name, value in ready.headers.items():
        if callable(value):  # CodeCompanion calls a header function with the adapter
            value = value(ready)
        if value is None:  # an extend() removing a header its base sends
            continue
        try:
            headers[name] = substitute(str(value), values)
        except KeyError:
            continue  # an optional credential that is not set: send no such header
        _check_one_line(ready, f"{name} header", str(value), headers[name])
    ready.headers = headers
    ready.parameters = _substitute_tree(ready.parameters, values)
    if call_handler(ready, "setup") is False:
        raise ConfigError(f"{ready.name}: adapter setup failed")
    return ready


def _require(adapter: HTTPAdapter, values: Mapping[str, Any]) -> None:
    for key in adapter.opts.get("required_env", ()):
        if values.get(key) is None or values.get(key) == "":
            raise ConfigError(f"{adapter.name}: {_describe(adapter, key)} {_unset(adapter, key)}")


def _unset(adapter: HTTPAdapter, key: str) -> str:
    spec = adapter.env.get(key)
    if isinstance(spec, str) and _ENV_NAME.match(spec) and spec in os.environ:
        return "is empty (set it to the key, or unset it)"
    if isinstance(spec, str) and spec.startswith("cmd:"):
        return f"is not set: the command (`{_program(spec[4:])} ...`) printed nothing"
    return "is not set"


def _source(adapter: HTTPAdapter, key: str) -> str:
    """Where env `key`'s value comes from, in words; never the value."""
    spec = adapter.env.get(key)
    if isinstance(spec, str):
        if spec.startswith("cmd:"):
            return f"the output of env.{key}'s command (`{_program(spec[4:])} ...`)"
        if spec.startswith("file:"):
            return f"the file {spec[5:].strip()} (env.{key})"
        if _ENV_NAME.match(spec) or spec in os.environ:
            return f"the {spec} environment variable (env.{key})"
    return f"env.{key}"


def _check_one_line(adapter: HTTPAdapter, where: str, template: str, value: str) -> None:
    """Refuse a url or header value with CR, LF or NUL, naming its source, never its value."""
    if not _LINE_BREAK.search(value):
        return
    keys = [k for k in _PLACEHOLDER.findall(template) if _LINE_BREAK.search(str(adapter.env_replaced.get(k, "")))]
    sources = ", ".join(_source(adapter, k) for k in keys) or f"the adapter's {where}"
    raise ConfigError(
        f"{adapter.name}: {sources} has a line break (CR or LF) or a NUL character in it, which cannot go in "
        f"the {where}: a key is one line (an env file saved with CRLF line endings, a command printing two lines?)"
    )


def _secrets(adapter: HTTPAdapter, values: Mapping[str, Any]) -> tuple[str, ...]:
    """The resolved values that are credentials: in a credential header, or named like one."""
    keys = {k for k in values if _SECRET_NAME.search(k)}
    for name, template in adapter.headers.items():
        if template is not None and _SECRET_NAME.search(name):
            keys.update(_PLACEHOLDER.findall(str(template)))
    found = {values[k] for k in keys if isinstance(values.get(k), str) and values[k]}
    return tuple(sorted(found))


def written_secrets(table: Any) -> list[str]:
    """The credentials a config table (an adapter, an agent, an MCP server) holds as they are,
    known before it is first used: what its credential `env` entries say literally or name
    in the environment (a `cmd:` or a `file:` is read only when used), and the literal
    values of its credential headers."""
    if not isinstance(table, Mapping):
        return []
    found = []
    env, headers = table.get("env"), table.get("headers")
    for key, spec in env.items() if isinstance(env, Mapping) else ():
        if not isinstance(spec, str) or not _SECRET_NAME.search(str(key)) or spec.startswith(("cmd:", "file:")):
            continue
        found.append(os.environ.get(spec, "") if _ENV_NAME.match(spec) else spec)
    for name, value in headers.items() if isinstance(headers, Mapping) else ():
        if isinstance(value, str) and _SECRET_NAME.search(str(name)):
            found.append(value.split(" ", 1)[1] if value.lower().startswith(("bearer ", "basic ")) else value)
    return [value.strip() for value in found if "${" not in value and value.strip()]


def _describe(adapter: HTTPAdapter, key: str) -> str:
    spec = adapter.env.get(key)
    if isinstance(spec, str) and _ENV_NAME.match(spec):
        return f"{key} (environment variable {spec})"
    return f"env.{key}"


def _substitute_tree(value: Any, values: Mapping[str, Any]) -> Any:
    if isinstance(value, str) and "${" in value:
        try:
            return substitute(value, values)
        except KeyError:
            return value
    if isinstance(value, dict):
        return {k: _substitute_tree(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute_tree(v, values) for v in value]
    return value


def deep_merge(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A new dict: tables merge key by key, any other value in `overrides` replaces."""
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def merge_keep(target: dict[str, Any], extra: Mapping[str, Any] | None) -> None:
    """Merge `extra` into `target` where `target` has nothing yet (first writer wins)."""
    for key, value in (extra or {}).items():
        if key not in target:
            target[key] = value
        elif isinstance(target[key], dict) and isinstance(value, Mapping):
            merge_keep(target[key], value)
