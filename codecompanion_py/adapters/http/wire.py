"""Pieces every wire format shares: typed frame decoding with a clear error, user and
assistant turns that alternate, the inline handler derived from the chat one, the `stream`
body flag, the handler table built from a module's handlers, and the `opts` and `schema`
entries of its ADAPTER table."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import msgspec

from ...errors import AdapterError
from ...messages import Message
from ..handlers import NEW_TO_OLD, call_handler, in_layout

T = TypeVar("T")


def frame_decoder(struct: type[T]) -> Callable[[Any], T]:
    """A decoder for one frame or body given as bytes, str or an already decoded table.
    The typed decoder is built once; malformed input raises AdapterError with a preview."""
    decode = msgspec.json.Decoder(struct).decode

    def decode_frame(data: Any) -> T:
        try:
            return decode(data) if isinstance(data, (bytes, str)) else msgspec.convert(data, struct)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise AdapterError(f"malformed response: {exc}: {_preview(data)}") from None

    return decode_frame


def _preview(data: Any) -> str:
    text = data.decode(errors="replace") if isinstance(data, bytes) else str(data)
    return text if len(text) <= 200 else text[:200] + "..."


def whole_response(
    text: list[str],
    reasoning: list[str],
    *,
    finish_reason: str | None,
    usage: Any,
    reasoning_end: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The `parse_chat` result for a whole, non-streamed response."""
    result: dict[str, Any] = {
        "status": "success",
        "output": {"role": "assistant", "content": "".join(text) or None, "reasoning": "".join(reasoning) or None},
        "finish_reason": finish_reason,
        "usage": usage,
    }
    if reasoning_end:
        result["reasoning_end"] = reasoning_end
    return result


def alternating_turns(
    messages: Iterable[Message], assistant: str, key: str, parts_of: Callable[[Message], list[Any]]
) -> list[dict[str, Any]]:
    """The conversation as `{"role": "user" or assistant, key: parts}` turns, for an API that
    wants user and assistant turns to alternate: consecutive turns of one role are merged;
    system messages (the caller's to place) and messages without parts are left out."""
    turns: list[dict[str, Any]] = []
    last_role, last_parts = None, []  # the last turn's, kept at hand: this runs per message of a long chat
    for message in messages:
        role = message.role
        if role == "system":
            continue
        parts = parts_of(message)
        if not parts:
            continue
        role = assistant if role == "assistant" else "user"
        if role == last_role:
            last_parts.extend(parts)
        else:
            turns.append({"role": role, key: parts})
            last_role, last_parts = role, parts
    return turns


def parse_inline(self: Any, data: Any, context: Any = None) -> dict[str, Any] | None:
    """A whole non-streamed body as `{status, output = text}`, through the adapter's parse_chat."""
    result = call_handler(self, "parse_chat", data, None)
    if result is None or result["status"] == "error":
        return result
    return {"status": "success", "output": result["output"]["content"] or ""}


def setup_stream_flag(self: Any) -> bool:
    """`stream: true` in the body when the adapter streams, nothing otherwise."""
    if self.opts.get("stream", True):
        self.parameters["stream"] = True
    else:
        self.parameters.pop("stream", None)
    return True


def handler_table(namespace: Mapping[str, Any], **shared: Callable[..., Any]) -> dict[str, Any]:
    """The nested handler table (Contract 1) of a wire module: every function its
    `namespace` (the module's `globals()`, once its handlers are defined) defines under a
    handler's name (`build_messages`, `parse_chat`...), plus the `shared` ones it takes from
    elsewhere (passed by name: an import only `globals()` used would look unused to a linter),
    and `parse_inline` above unless it has its own."""
    found = {name: namespace[name] for name in NEW_TO_OLD if callable(namespace.get(name))}
    return in_layout({"parse_inline": parse_inline, **found, **shared}, {"request": {}})


def provider_opts(**extra: Any) -> dict[str, Any]:
    """The `opts` of a built-in wire format, which streams, calls tools and reads images;
    `extra` adds or replaces."""
    return {"stream": True, "tools": True, "vision": True, **extra}


def setting(
    order: int,
    kind: str,
    default: Any = None,
    *,
    optional: bool = False,
    mapping: str | None = "parameters",
    **extra: Any,
) -> dict[str, Any]:
    """One `schema` entry of type `kind`, sent in the body's `mapping` (None: used elsewhere,
    e.g. in the url); an `optional` one is left out of the body while unset."""
    entry: dict[str, Any] = {"order": order, "type": kind, "default": default, **extra}
    if mapping is not None:
        entry["mapping"] = mapping
    if optional:
        entry["optional"] = True
    return entry
