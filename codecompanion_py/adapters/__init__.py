"""Adapter registry: `resolve()` an adapter by name or table, `extend()` one with overrides.

Built-in adapters are modules under `adapters/http/` exporting `ADAPTER`, a dict in
CodeCompanion's table shape; they are imported only when first resolved. The user's adapters
(from `setup({adapters = {http = {...}}})`) are registered by name and may extend a
built-in, including one of the same name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, Union

from ..errors import ConfigError
from .base import HTTPAdapter, deep_merge, prepare
from .handlers import call_handler, get_handler, in_layout

# Lua's `require("codecompanion_py.adapters").extend(base, overrides)` returns the
# overrides with this key naming the base, since a Lua function cannot cross the RPC.
EXTENDS_KEY = "__extends"

_BUILTIN: dict[str, str] = {
    "anthropic": "codecompanion_py.adapters.http.anthropic",
    "openai": "codecompanion_py.adapters.http.openai",
    "openai_compatible": "codecompanion_py.adapters.http.openai_compatible",
    "openai_responses": "codecompanion_py.adapters.http.openai_responses",
    "copilot": "codecompanion_py.adapters.http.copilot",
    "demo": "codecompanion_py.adapters.http.demo",
    "gemini": "codecompanion_py.adapters.http.gemini",
    "ollama": "codecompanion_py.adapters.http.ollama",
    **dict.fromkeys(
        ("azure_openai", "deepseek", "githubmodels", "huggingface", "kimi", "mistral", "novita", "openrouter", "xai"),
        "codecompanion_py.adapters.http.providers",
    ),
}

Definition = Union[HTTPAdapter, Mapping[str, Any], Callable[[], Any], str]
_user: dict[str, Definition] = {}


def builtin_names() -> list[str]:
    return sorted(_BUILTIN)


def available() -> list[str]:
    return sorted(set(_BUILTIN) | set(_user))


def register(name: str, definition: Definition) -> None:
    """Add or replace a user adapter (data table, HTTPAdapter, factory, or another name)."""
    _user[name] = definition


def clear_user_adapters() -> None:
    _user.clear()


def _builtin_data(name: str) -> dict[str, Any]:
    module_name = _BUILTIN.get(name)
    if module_name is None:
        raise ConfigError(f"unknown adapter {name!r}; available: {', '.join(available())}")
    module = importlib.import_module(module_name)
    return module.ADAPTERS[name] if hasattr(module, "ADAPTERS") else module.ADAPTER


def _data_for(name: str, *, builtin_only: bool = False) -> dict[str, Any]:
    if builtin_only or name not in _user:
        return _builtin_data(name)
    definition = _user[name]
    if callable(definition) and not isinstance(definition, HTTPAdapter):
        definition = definition()
    if isinstance(definition, HTTPAdapter):
        return definition.to_data()
    if isinstance(definition, str):
        if definition == name:
            return _builtin_data(name)
        return _data_for(definition)
    if isinstance(definition, Mapping):
        return _table_data(definition, defining=name)
    raise ConfigError(f"adapter {name!r}: expected a table, got {type(definition).__name__}")


def _table_data(table: Mapping[str, Any], *, defining: str | None = None) -> dict[str, Any]:
    overrides = {k: v for k, v in table.items() if k != EXTENDS_KEY}
    base = table.get(EXTENDS_KEY)
    if base is None:
        data = dict(overrides)
        data.setdefault("name", defining)
        return data
    base_data = _data_for(base, builtin_only=(base == defining))
    merged = merge_over(base_data, overrides)
    if defining and "name" not in overrides:
        merged["name"] = defining
        if "formatted_name" not in overrides and defining != base:
            merged["formatted_name"] = defining
    return merged


def merge_over(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """`overrides` deep-merged over an adapter's data, its handlers in the base's layout."""
    if isinstance(overrides.get("handlers"), Mapping) and isinstance(base.get("handlers"), Mapping):
        overrides = {**overrides, "handlers": in_layout(overrides["handlers"], base["handlers"])}
    return deep_merge(base, overrides)


def model_choices(adapter: HTTPAdapter) -> list[str]:
    """The models the adapter's schema lists, its current one first."""
    entry = adapter.schema.get("model", {})
    choices = entry.get("choices") or []
    if callable(choices):
        choices = choices(adapter)
    names = list(choices)
    current = adapter.model
    return ([current] if current else []) + [n for n in names if n != current]


def extend(base: str | HTTPAdapter, overrides: Mapping[str, Any] | None = None) -> HTTPAdapter:
    """A new adapter: `base` with `overrides` deep-merged over it."""
    base_data = base.to_data() if isinstance(base, HTTPAdapter) else _data_for(base)
    return HTTPAdapter.from_data(merge_over(base_data, overrides or {}))


def resolve(spec: Definition | None, *, model: str | None = None) -> HTTPAdapter:
    """An adapter from a name, an HTTPAdapter, a table (`{name=..., model=...}` or an
    `extend` result) or a factory function. Each call returns a fresh copy."""
    if spec is None:
        raise ConfigError("no adapter given")
    if isinstance(spec, HTTPAdapter):
        adapter = spec.copy()
    elif isinstance(spec, str):
        adapter = HTTPAdapter.from_data(_data_for(spec))
    elif isinstance(spec, Mapping) and EXTENDS_KEY not in spec and set(spec) <= {"name", "model"}:
        # CodeCompanion's `adapter = { name = "openai", model = "gpt-4.1" }`
        return resolve(spec.get("name"), model=model or spec.get("model"))
    elif isinstance(spec, Mapping):
        adapter = HTTPAdapter.from_data(_table_data(spec))
    elif callable(spec):
        return resolve(spec(), model=model)
    else:
        raise ConfigError(f"cannot resolve an adapter from {type(spec).__name__}")
    if model:
        adapter.set_model(model)
    return adapter


__all__ = [
    "EXTENDS_KEY",
    "HTTPAdapter",
    "available",
    "builtin_names",
    "call_handler",
    "extend",
    "get_handler",
    "model_choices",
    "prepare",
    "register",
    "resolve",
]
