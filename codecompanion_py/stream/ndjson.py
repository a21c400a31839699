"""Incremental newline-delimited JSON splitter over bytes.

Returns each complete, non-blank line with surrounding whitespace stripped (so CRLF line
endings are fine), still as bytes: decoding the JSON is the caller's job. Between calls
only the pieces of the incomplete last line are kept (as a list, joined once when its
line ending arrives, so a long line in many small chunks is not re-copied every call).
"""

from __future__ import annotations

__all__ = ["NDJSONDecoder"]


class NDJSONDecoder:
    """Feed the response body in chunks cut anywhere; get back the completed lines."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: list[bytes] = []  # pieces of the incomplete last line

    def feed(self, chunk: bytes) -> list[bytes]:
        lines = chunk.split(b"\n")
        pending = self._pending
        if len(lines) == 1:  # no line ending in this chunk
            if chunk:
                pending.append(chunk)
            return []
        if pending:
            pending.append(lines[0])
            lines[0] = b"".join(pending)
            pending.clear()
        last = lines.pop()
        if last:
            pending.append(last)
        return [stripped for line in lines if (stripped := line.strip())]

    def flush(self) -> list[bytes]:
        """End of the stream: the last line if it had no line ending."""
        tail = b"".join(self._pending).strip()
        self._pending.clear()
        return [tail] if tail else []
