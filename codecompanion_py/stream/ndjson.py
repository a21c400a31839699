"""Incremental newline-delimited JSON splitter over bytes.

Returns each complete, non-blank line with surrounding whitespace stripped (so CRLF line
endings are fine), still as bytes: decoding the JSON is the caller's job. Between calls
only the pieces of the incomplete last line are kept (as a list, joined once when its
line ending arrives, so a long line in many small chunks is not re-copied every call).
``max_line`` (bytes, 0 for none) caps one line: past it ``feed`` raises
``ResponseTooLarge`` instead of keeping more.
"""

from __future__ import annotations

from .sse import line_too_long

__all__ = ["NDJSONDecoder"]


class NDJSONDecoder:
    """Feed the response body in chunks cut anywhere; get back the completed lines."""

    __slots__ = ("_pending", "_pending_size", "_limit")

    def __init__(self, max_line: int = 0) -> None:
        self._pending: list[bytes] = []  # pieces of the incomplete last line
        self._pending_size = 0
        self._limit = max_line

    def feed(self, chunk: bytes) -> list[bytes]:
        lines = chunk.split(b"\n")
        pending = self._pending
        if len(lines) == 1:  # no line ending in this chunk
            if chunk:
                pending.append(chunk)
                self._pending_size += len(chunk)
                if self._limit and self._pending_size > self._limit:
                    raise line_too_long(self._limit)
            return []
        if pending:
            if self._limit and self._pending_size + len(lines[0]) > self._limit:
                raise line_too_long(self._limit)
            pending.append(lines[0])
            lines[0] = b"".join(pending)
            pending.clear()
        last = lines.pop()
        self._pending_size = len(last)
        if last:
            pending.append(last)
            if self._limit and len(last) > self._limit:
                raise line_too_long(self._limit)
        return [stripped for line in lines if (stripped := line.strip())]

    def flush(self) -> list[bytes]:
        """End of the stream: the last line if it had no line ending."""
        tail = b"".join(self._pending).strip()
        self._pending.clear()
        self._pending_size = 0
        return [tail] if tail else []
