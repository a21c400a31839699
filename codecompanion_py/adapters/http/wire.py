"""Pieces every wire format's handlers share: typed frame decoding with a clear error,
the inline handler derived from the chat one, and the `stream` body flag."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from ...errors import AdapterError
from ..handlers import call_handler

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
