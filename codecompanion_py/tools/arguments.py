"""Checking the LLM's arguments against a tool's schema before anything runs.

Only the parts of JSON Schema that tool schemas use: `type`, `enum`, `required`,
`properties`, `items` and `additionalProperties: false`. Each problem is a sentence the
LLM can act on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def problems(args: Mapping[str, Any], parameters: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    _check(args, parameters, "arguments", found)
    return found


def _check(value: Any, schema: Any, where: str, found: list[str]) -> None:
    if not isinstance(schema, Mapping):
        return
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        allowed = tuple(t for name in names for t in _TYPES.get(name, (object,)))
        integral = "integer" in names and isinstance(value, float) and value.is_integer()
        wrong_bool = isinstance(value, bool) and "boolean" not in names
        if (not isinstance(value, allowed) and not integral) or wrong_bool:
            found.append(f"{where} must be {' or '.join(map(str, names))}, got {_describe(value)}")
            return
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and value not in enum:
        found.append(f"{where} must be one of {', '.join(map(repr, enum))}, got {value!r}")
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        properties = properties if isinstance(properties, Mapping) else {}
        for name in schema.get("required") or []:
            if name not in value:
                found.append(f"{where} is missing the required field `{name}`")
        for name, item in value.items():
            if name in properties:
                _check(item, properties[name], f"`{name}`", found)
            elif schema.get("additionalProperties") is False and "properties" in schema:
                # without `properties` the object is free-form, as providers read it (mcphub's tool_input)
                found.append(f"{where} has an unknown field `{name}` (expected: {', '.join(properties) or 'none'})")
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            _check(item, schema["items"], f"{where}[{index}]", found)


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    return f"{type(value).__name__} {value!r}"[:80]
