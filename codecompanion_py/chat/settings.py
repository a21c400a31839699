"""The settings header (`display.chat.show_settings`): an HTTP adapter's schema parameters
as the chat shows them, and the values the user edited there, checked against the schema.

Lua parses the header's `key: value` lines into scalars (`None` for `null` or nothing);
`validate()` turns them into the settings the next request uses, or raises a `ConfigError`
that names the key and what it accepts, so a wrong value never reaches the provider.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..adapters.base import HTTPAdapter, _choices, _validate
from ..adapters.lua import LuaFunction
from ..errors import ConfigError
from ..ui.ops import SettingEntry

UNPARSED = "_unparsed"  # lines of the header Lua could not read as `key: value`
_NOT_SCALAR = {"map", "list", "table", "object", "array"}
_TYPES: dict[str, tuple[str, tuple[type, ...]]] = {
    "number": ("a number", (int, float)),
    "integer": ("a whole number", (int,)),
    "boolean": ("true or false", (bool,)),
    "string": ("text", (str,)),
}


def _entries(adapter: HTTPAdapter) -> list[tuple[str, dict[str, Any]]]:
    """The schema entries a header can show: scalar ones, not switched off, in `order`."""
    shown = []
    for key, entry in adapter.schema.items():
        if not isinstance(entry, dict) or entry.get("type") in _NOT_SCALAR:
            continue
        if entry.get("enabled") is False or entry.get("condition") is False:
            continue
        shown.append((key, entry))
    return sorted(shown, key=lambda item: (_order(item[1]), item[0]))


def _order(entry: Mapping[str, Any]) -> float:
    order = entry.get("order")
    return float(order) if isinstance(order, (int, float)) and not isinstance(order, bool) else 1e9


def header(adapter: HTTPAdapter, settings: Mapping[str, Any]) -> tuple[SettingEntry, ...]:
    """What the header shows: the user's value of each key, else the schema's default
    (a default computed by a function shows as unset until the user gives one)."""
    entries = []
    for key, entry in _entries(adapter):
        if key == "model":
            value: Any = adapter.model
        elif key in settings:
            value = settings[key]
        else:
            value = entry.get("default")
        if callable(value) or isinstance(value, (LuaFunction, dict, list)):
            value = None
        entries.append(SettingEntry(key=key, value=value))
    return tuple(entries)


def validate(adapter: HTTPAdapter, raw: Mapping[str, Any]) -> dict[str, Any]:
    """The header's values as settings for the next request (unset ones left out)."""
    unparsed = raw.get(UNPARSED)
    if unparsed:
        lines = ", ".join(repr(str(line)) for line in unparsed)
        raise ConfigError(f"settings header: cannot read {lines}; write one `key: value` per line")
    known = dict(_entries(adapter))
    settings: dict[str, Any] = {}
    for key, value in raw.items():
        if key == UNPARSED:
            continue
        entry = known.get(key)
        if entry is None:
            names = ", ".join(known) or "none"
            raise ConfigError(f"settings header: {adapter.name} has no setting {key!r} (it has: {names})")
        if value is None:
            continue
        settings[key] = _typed(adapter, key, entry, value)
    return settings


def _typed(adapter: HTTPAdapter, key: str, entry: Mapping[str, Any], value: Any) -> Any:
    kind = entry.get("type")
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        value = int(value)  # Lua numbers travel as floats
    if kind in _TYPES:
        what, types = _TYPES[kind]
        if isinstance(value, bool) != (kind == "boolean") or not isinstance(value, types):
            raise ConfigError(f"settings header: {key} must be {what}, not {value!r}")
    if key != "model" and not isinstance(entry.get("choices"), LuaFunction):
        choices = _choices(adapter, entry)
        if choices is not None and value not in choices:
            raise ConfigError(f"settings header: {key} must be one of {choices}, not {value!r}")
    if not isinstance(entry.get("validate"), LuaFunction):  # a Lua one runs with the request
        _validate(adapter, key, entry, value)
    return value
