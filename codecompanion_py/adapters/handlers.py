"""Handler lookup that accepts both the nested and the old flat handler layouts.

Nested (new) layout::

    handlers = {
        "lifecycle": {"setup": ..., "on_exit": ..., "teardown": ...},
        "request": {"build_parameters": ..., "build_messages": ..., "build_tools": ...,
                    "build_reasoning": ..., "build_body": ...},
        "response": {"parse_chat": ..., "parse_inline": ..., "parse_tokens": ...},
        "tools": {"format_calls": ..., "format_response": ...},
    }

Flat (old) layout: `setup`, `form_parameters`, `form_messages`, `form_tools`,
`form_reasoning`, `set_body`, `chat_output`, `inline_output`, `tokens` at the top level,
and `tools.format_tool_calls` / `tools.output_response`.

An adapter is in the new layout when its handlers have `lifecycle`, `request` or
`response`; `tools` exists in both layouts, so it decides nothing. Callers may use either
name; it is translated to the adapter's layout. `in_layout()` rewrites a user's overrides
into the layout of the adapter they extend, so `handlers = { form_parameters = ... }` over a
built-in in the nested layout replaces its `request.build_parameters`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

NEW_TO_OLD: dict[str, str] = {
    "setup": "setup",
    "on_exit": "on_exit",
    "teardown": "teardown",
    "build_parameters": "form_parameters",
    "build_messages": "form_messages",
    "build_tools": "form_tools",
    "build_structured_output": "form_structured_output",
    "build_reasoning": "form_reasoning",
    "build_body": "set_body",
    "parse_chat": "chat_output",
    "parse_inline": "inline_output",
    "parse_tokens": "tokens",
    "parse_meta": "parse_message_meta",
    "format_calls": "format_tool_calls",
    "format_response": "output_response",
}
OLD_TO_NEW: dict[str, str] = {old: new for new, old in NEW_TO_OLD.items()}
CATEGORIES = ("lifecycle", "request", "response", "tools")
_NEW_FORMAT_MARKERS = ("lifecycle", "request", "response")
_OLD_TOOL_NAMES = frozenset(("format_tool_calls", "output_response", "output_tool_call"))


def is_new_format(handlers: Mapping[str, Any]) -> bool:
    return any(marker in handlers for marker in _NEW_FORMAT_MARKERS)


def get_handler(adapter: Any, name: str) -> Callable[..., Any] | None:
    """The handler called `name` (new or old spelling) on `adapter`, or None."""
    handlers: Mapping[str, Any] = getattr(adapter, "handlers", None) or {}
    if is_new_format(handlers):
        new = OLD_TO_NEW.get(name, name)
        for category in CATEGORIES:
            group = handlers.get(category)
            if isinstance(group, Mapping) and callable(group.get(new)):
                return group[new]
        return None
    old = NEW_TO_OLD.get(name, name)
    if old in _OLD_TOOL_NAMES:
        group = handlers.get("tools")
        found = group.get(old) if isinstance(group, Mapping) else None
    else:
        found = handlers.get(old)
    return found if callable(found) else None


_CATEGORY_OF: dict[str, str] = {
    **dict.fromkeys(("setup", "on_exit", "teardown"), "lifecycle"),
    **dict.fromkeys(
        (
            "build_parameters",
            "build_messages",
            "build_tools",
            "build_structured_output",
            "build_reasoning",
            "build_body",
        ),
        "request",
    ),
    **dict.fromkeys(("parse_chat", "parse_inline", "parse_tokens", "parse_meta"), "response"),
    **dict.fromkeys(("format_calls", "format_response"), "tools"),
}


def _entries(handlers: Mapping[str, Any]) -> dict[str, Any]:
    """Every handler of `handlers`, whichever layout, by its new name."""
    found: dict[str, Any] = {}
    if is_new_format(handlers):
        for category in CATEGORIES:
            group = handlers.get(category)
            if isinstance(group, Mapping):
                found.update({OLD_TO_NEW.get(str(k), str(k)): v for k, v in group.items()})
        return found
    for name, value in handlers.items():
        if name == "tools" and isinstance(value, Mapping):
            found.update({OLD_TO_NEW.get(str(k), str(k)): v for k, v in value.items()})
        else:
            found[OLD_TO_NEW.get(name, name)] = value
    return found


def in_layout(overrides: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    """`overrides` (handlers in either layout) rewritten into the layout of `base`."""
    entries = _entries(overrides)
    if is_new_format(base):
        nested: dict[str, Any] = {}
        for name, value in entries.items():
            nested.setdefault(_CATEGORY_OF.get(name, "lifecycle"), {})[name] = value
        return nested
    flat: dict[str, Any] = {}
    for name, value in entries.items():
        old = NEW_TO_OLD.get(name, name)
        if old in _OLD_TOOL_NAMES:
            flat.setdefault("tools", {})[old] = value
        else:
            flat[old] = value
    return flat


def bound_handler(adapter: Any, name: str) -> Callable[..., Any]:
    """`call_handler(adapter, name, ...)` with the handler found once: for a loop over a long
    chat's messages, where a lookup per message was a measurable share of building the request."""
    handler = get_handler(adapter, name)
    if handler is None:
        return lambda *args: None
    return functools.partial(handler, adapter)


def call_handler(adapter: Any, name: str, *args: Any) -> Any:
    """Call the adapter's handler `name` with the adapter as first argument; None if absent."""
    handler = get_handler(adapter, name)
    if handler is None:
        return None
    return handler(adapter, *args)


__all__ = [
    "CATEGORIES",
    "NEW_TO_OLD",
    "OLD_TO_NEW",
    "bound_handler",
    "call_handler",
    "get_handler",
    "in_layout",
    "is_new_format",
]
