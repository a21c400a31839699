"""The one adapter registry: the built-in HTTP adapters and agents, and the user's entries.

`config.load()` builds an `Adapters` from `setup({adapters = {http = {...}, acp = {...}}})`
and the config holds it, so two engines with two configs never see each other's adapters.
`BUILTIN` is the registry of built-ins alone, for code without a config (the CLI, tests).

A name is an agent (`"acp"`) when the user's `adapters.acp` or the built-in agents have it,
else an HTTP adapter (`"http"`) when the user's `adapters.http` or the built-ins have it
(`kind()`). Built-in HTTP adapters are listed in `adapters/http/providers.py` and imported
the first time a name is looked up.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, Literal, Union

from ..errors import ConfigError
from . import acp
from .acp import AcpAdapter
from .base import DEFAULT_CMD_TIMEOUT, HTTPAdapter, deep_merge
from .handlers import in_layout

Kind = Literal["http", "acp"]

# Lua's `require("codecompanion_py.adapters").extend(base, overrides)` returns the
# overrides with this key naming the base, since a Lua function cannot cross the RPC.
EXTENDS_KEY = "__extends"

Definition = Union[HTTPAdapter, Mapping[str, Any], Callable[[], Any], str]


@cache
def builtin_http() -> dict[str, str]:
    """Each built-in HTTP adapter's name and the module holding it (providers.py lists them)."""
    from .http import providers

    package = providers.__name__.rpartition(".")[0]
    modules = {name: f"{package}.{module}" for name, module in providers.MODULES.items()}
    return {**modules, **dict.fromkeys(providers.ADAPTERS, providers.__name__)}


def _builtin_data(name: str, available: Callable[[], list[str]]) -> dict[str, Any]:
    module_name = builtin_http().get(name)
    if module_name is None:
        raise ConfigError(f"unknown adapter {name!r}; available: {', '.join(available())}")
    module = importlib.import_module(module_name)
    return module.ADAPTERS[name] if hasattr(module, "ADAPTERS") else module.ADAPTER


def merge_over(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """`overrides` deep-merged over an adapter's data, its handlers in the base's layout."""
    if isinstance(overrides.get("handlers"), Mapping) and isinstance(base.get("handlers"), Mapping):
        overrides = {**overrides, "handlers": in_layout(overrides["handlers"], base["handlers"])}
    return deep_merge(base, overrides)


class Adapters:
    """The adapters one config knows. `http`: the user's `adapters.http` entries (a table,
    an HTTPAdapter, a factory or another adapter's name); `acp`: the user's `adapters.acp`
    tables; `cmd_timeout`: seconds a `cmd:` env value may take (`adapters.opts.cmd_timeout`),
    given to every adapter resolved here."""

    def __init__(
        self,
        http: Mapping[str, Definition] | None = None,
        acp: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        cmd_timeout: float = DEFAULT_CMD_TIMEOUT,
    ) -> None:
        self._http: dict[str, Definition] = dict(http or {})
        self._acp: dict[str, Mapping[str, Any]] = dict(acp or {})
        self.cmd_timeout = cmd_timeout

    def kind(self, name: Any) -> Kind | None:
        """Whether `name` is an agent, an HTTP adapter, or neither (None; also for a table)."""
        if not isinstance(name, str):
            return None
        if name in self._acp or name in acp.BUILTIN:
            return "acp"
        if name in self._http or name in builtin_http():
            return "http"
        return None

    def names(self, kind: Kind) -> list[str]:
        if kind == "acp":
            return sorted(set(acp.BUILTIN) | set(self._acp))
        return sorted(set(builtin_http()) | set(self._http))

    def user_names(self) -> list[str]:
        """The names the user defined, HTTP ones first."""
        return [*self._http, *self._acp]

    def resolve(self, spec: Definition | None, *, model: str | None = None) -> HTTPAdapter | AcpAdapter:
        """The agent or the HTTP adapter `spec` names (see `http()` for the other specs)."""
        if self.kind(spec) == "acp":
            return self.agent(str(spec))
        return self.http(spec, model=model)

    def http(self, spec: Definition | None, *, model: str | None = None) -> HTTPAdapter:
        """An HTTP adapter from a name, an HTTPAdapter, a table (`{name=..., model=...}` or
        an `extend` result) or a factory function. Each call returns a fresh copy."""
        if spec is None:
            raise ConfigError("no adapter given")
        if isinstance(spec, HTTPAdapter):
            adapter = spec.copy()
        elif isinstance(spec, str):
            adapter = HTTPAdapter.from_data(self._data_for(spec))
        elif isinstance(spec, Mapping) and EXTENDS_KEY not in spec and set(spec) <= {"name", "model"}:
            # CodeCompanion's `adapter = { name = "openai", model = "gpt-4.1" }`
            return self.http(spec.get("name"), model=model or spec.get("model"))
        elif isinstance(spec, Mapping):
            adapter = HTTPAdapter.from_data(self._table_data(spec))
        elif callable(spec):
            return self.http(spec(), model=model)
        else:
            raise ConfigError(f"cannot resolve an adapter from {type(spec).__name__}")
        if model:
            adapter.set_model(model)
        if self.cmd_timeout != DEFAULT_CMD_TIMEOUT:  # the adapter's own opts.cmd_timeout wins
            adapter.opts.setdefault("cmd_timeout", self.cmd_timeout)
        return adapter

    def extend(self, base: str | HTTPAdapter, overrides: Mapping[str, Any] | None = None) -> HTTPAdapter:
        """A new adapter: `base` with `overrides` deep-merged over it."""
        base_data = base.to_data() if isinstance(base, HTTPAdapter) else self._data_for(base)
        return HTTPAdapter.from_data(merge_over(base_data, overrides or {}))

    def agent(self, name: str) -> AcpAdapter:
        """The agent `name`: a built-in, the user's table over it, or the user's own."""
        data = self._agent_data(name, set())
        return AcpAdapter(
            name=name,
            formatted_name=str(data.get("formatted_name") or name),
            commands=dict(data.get("commands") or {}),
            env=dict(data.get("env") or {}),
            defaults=dict(data.get("defaults") or {}),
            install=str(data.get("install") or ""),
            cmd_timeout=self.cmd_timeout,
        )

    def _agent_data(self, name: str, seen: set[str]) -> dict[str, Any]:
        if name in seen:
            raise ConfigError(f"adapters.acp.{name} extends itself")
        seen.add(name)
        base = acp.BUILTIN.get(name, {})
        table = self._acp.get(name)
        if table is None:
            if not base:
                raise ConfigError(f"unknown ACP adapter {name!r}; available: {', '.join(self.names('acp'))}")
            return deep_merge(base, {})
        table = dict(table)
        parent = table.pop("extends", None) or table.pop("__extends", None)
        if parent and parent != name:
            base = self._agent_data(str(parent), seen)
        return deep_merge(base, table)

    def _data_for(self, name: str, *, builtin_only: bool = False) -> dict[str, Any]:
        if builtin_only or name not in self._http:
            return _builtin_data(name, lambda: self.names("http"))
        definition = self._http[name]
        if callable(definition) and not isinstance(definition, HTTPAdapter):
            definition = definition()
        if isinstance(definition, HTTPAdapter):
            return definition.to_data()
        if isinstance(definition, str):
            if definition == name:
                return _builtin_data(name, lambda: self.names("http"))
            return self._data_for(definition)
        if isinstance(definition, Mapping):
            return self._table_data(definition, defining=name)
        raise ConfigError(f"adapter {name!r}: expected a table, got {type(definition).__name__}")

    def _table_data(self, table: Mapping[str, Any], *, defining: str | None = None) -> dict[str, Any]:
        overrides = {k: v for k, v in table.items() if k != EXTENDS_KEY}
        base = table.get(EXTENDS_KEY)
        if base is None:
            data = dict(overrides)
            data.setdefault("name", defining)
            return data
        base_data = self._data_for(base, builtin_only=(base == defining))
        merged = merge_over(base_data, overrides)
        if defining and "name" not in overrides:
            merged["name"] = defining
            if "formatted_name" not in overrides and defining != base:
                merged["formatted_name"] = defining
        return merged


BUILTIN = Adapters()
"""The built-ins alone: what code without a config resolves through."""
