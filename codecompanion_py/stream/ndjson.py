"""Incremental newline-delimited JSON splitter over bytes.

Returns each complete, non-blank line with surrounding whitespace stripped (so CRLF line
endings are fine), still as bytes: decoding the JSON is the caller's job. The lines come
from a `LineSplitter`; ``max_line`` (bytes, 0 for none) caps one line: past it ``feed``
raises ``ResponseTooLarge`` instead of keeping more.
"""

from __future__ import annotations

from .lines import LineSplitter

__all__ = ["NDJSONDecoder"]


class NDJSONDecoder:
    """Feed the response body in chunks cut anywhere; get back the completed lines."""

    __slots__ = ("_lines",)

    def __init__(self, max_line: int = 0) -> None:
        self._lines = LineSplitter(max_line)

    def feed(self, chunk: bytes) -> list[bytes]:
        return [stripped for line in self._lines.split(chunk) if (stripped := line.strip())]

    def flush(self) -> list[bytes]:
        """End of the stream: the last line if it had no line ending."""
        tail = self._lines.take().strip()
        return [tail] if tail else []
