"""Whether the adapters the chat, inline and cmd interactions use can work, for `:checkhealth`.

Each interaction's adapter is the one the engine would take (`interactions.<name>.adapter`,
inline and cmd falling back to the chat's). For an HTTP adapter each key it requires
(`opts.required_env`) is checked as `prepare()` would read it, without reading a value into
the report and without running anything: an environment variable set or not (the user's own
names as well as the built-in ones), a `file:` there or not, a `cmd:` said to be run when
the chat first needs the key (its program looked up on PATH), Copilot's login in the files
copilot.vim and copilot.lua write. For an agent, its command on PATH (`health.report`'s).
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .adapters.base import _UNSET_NAME, HTTPAdapter
from .adapters.lua import LuaFunction
from .checkhealth import Entry
from .errors import CodeCompanionError

if TYPE_CHECKING:
    from .config import Config

_FIX_VARIABLE = "Set {var} in the environment Neovim starts from (export {var}=...), or point env.{key} at `cmd:...`"


def entries(config: Config, agents: Mapping[str, Any]) -> list[Entry]:
    """One line saying which adapter each interaction uses, then each adapter's checks;
    `agents` is `health.report()["agents"]`."""
    roles = {
        "chat": config.chat_adapter,
        "inline": config.inline_adapter or config.chat_adapter,
        "cmd": config.cmd_adapter or config.chat_adapter,
    }
    users: dict[str, list[str]] = {}
    specs: dict[str, Any] = {}
    for role, spec in roles.items():
        name = _name(spec)
        users.setdefault(name, []).append(role)
        specs.setdefault(name, spec)
    out = []
    for name, roles_of in users.items():
        out.append(Entry("info", f"{_joined(roles_of)} {'use' if len(roles_of) > 1 else 'uses'} {name}"))
        out += _checks(config, name, specs[name], agents)
        not_chat = [role for role in roles_of if role != "chat"]
        if not_chat and config.adapters.kind(name) == "acp":  # only a chat can talk to an agent
            fix = [f"Set interactions.{role}.adapter to an HTTP adapter (copilot, openai...)" for role in not_chat]
            out.append(Entry("error", f"{_joined(not_chat)} cannot use the agent {name}", fix))
    return out


def _name(spec: Any) -> str:
    if isinstance(spec, Mapping):
        return str(spec.get("name") or "an adapter table of setup()")
    return str(spec)


def _joined(words: list[str]) -> str:
    words = [f"the {word} interaction" if len(words) == 1 else word for word in words]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _checks(config: Config, name: str, spec: Any, agents: Mapping[str, Any]) -> list[Entry]:
    if config.adapters.kind(name) == "acp":
        agent = agents.get(name) or {}
        command = f"`{agent.get('command', name)}`"
        if agent.get("found"):
            return [Entry("ok", f"{name}: {command} found on PATH")]
        install = agent.get("install")
        return [Entry("error", f"{name}: {command} is not on PATH", [install] if install else None)]
    try:
        adapter = config.adapters.http(spec)
    except CodeCompanionError as error:
        return [Entry("error", f"{name}: {error}")]
    required = [str(key) for key in adapter.opts.get("required_env") or ()]
    if not required:
        return [Entry("ok", f"{name}: needs no key")]
    return [_key(adapter, name, key) for key in required]


def _key(adapter: HTTPAdapter, name: str, key: str) -> Entry:
    """Where env `key` comes from and whether it is there; never its value."""
    spec = adapter.env.get(key)
    where = f"{name}: env.{key}"
    if spec is None:
        return Entry(
            "error", f"{where} is not given", [f"Give the adapter an env.{key} (a variable's name, `cmd:...`)"]
        )
    if getattr(spec, "__module__", "").endswith(".copilot"):  # the Copilot token exchange
        from .adapters.http import copilot

        try:
            copilot.oauth_token(adapter)
        except CodeCompanionError as error:
            return Entry("error", f"{name}: not logged in to GitHub Copilot", [str(error)])
        return Entry("ok", f"{name}: a GitHub Copilot login was found")
    if isinstance(spec, LuaFunction) or callable(spec):
        return Entry("info", f"{where} comes from a function, called when the chat first needs it")
    if not isinstance(spec, str):
        return Entry("ok", f"{where} is given in the config")
    if spec.startswith("cmd:"):
        return _command(where, spec[4:].strip())
    if spec.startswith("file:"):
        path = Path(spec[5:].strip()).expanduser()
        if os.access(path, os.R_OK) and path.is_file():
            return Entry("ok", f"{where} is read from {path}")
        return Entry("error", f"{where} is read from {path}, which is not a readable file")
    if spec in os.environ:
        if os.environ[spec].strip():
            return Entry("ok", f"{where}: {spec} is set")
        return Entry("error", f"{where}: {spec} is set but empty", [_FIX_VARIABLE.format(var=spec, key=key)])
    if "." in spec:
        return Entry("ok", f"{where} is read from the adapter's {spec}")
    if _UNSET_NAME.match(spec):  # read as prepare() reads it: a variable's name, not a key
        return Entry("error", f"{where}: {spec} is not set", [_FIX_VARIABLE.format(var=spec, key=key)])
    return Entry("ok", f"{where} is written in the config")


def _command(where: str, command: str) -> Entry:
    """A `cmd:` key: its program looked up, the command itself not run (it may ask for a password)."""
    try:
        program = shlex.split(command)[0]
    except (ValueError, IndexError):
        return Entry("error", f"{where}: `cmd:{command}` is not a command")
    if shutil.which(program) is None and not Path(program).expanduser().is_file():
        return Entry("error", f"{where} comes from `{program} ...`, which is not on PATH")
    return Entry("info", f"{where} comes from `{program} ...`, run when the chat first needs the key (not run here)")


__all__ = ["entries"]
