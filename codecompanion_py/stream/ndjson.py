"""Incremental newline-delimited JSON splitter over bytes: complete, non-blank lines."""

from __future__ import annotations

__all__ = ["NDJSONDecoder"]


class NDJSONDecoder:
    def __init__(self) -> None:
        self._tail = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        lines = (self._tail + chunk).split(b"\n")
        self._tail = lines.pop()
        return [stripped for line in lines if (stripped := line.strip())]

    def flush(self) -> list[bytes]:
        tail, self._tail = self._tail.strip(), b""
        return [tail] if tail else []
