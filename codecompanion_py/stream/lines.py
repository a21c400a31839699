"""Lines out of a body fed in chunks cut anywhere, for the SSE and NDJSON decoders.

Between calls only the pieces of the incomplete last line are kept (as a list, joined once
its line ending arrives, so a long line in many small chunks is not re-copied every call).
``limit`` (bytes, 0 for none) caps one line: past it ``split`` raises ``ResponseTooLarge``
instead of keeping more.
"""

from __future__ import annotations

from ..errors import ResponseTooLarge

__all__ = ["LineSplitter", "line_too_long", "size_text"]


class LineSplitter:
    """The LF-ended lines of a byte stream; `pending` holds the incomplete last one."""

    __slots__ = ("pending", "pending_size", "limit")

    def __init__(self, limit: int = 0) -> None:
        self.pending: list[bytes] = []  # pieces of the incomplete last line
        self.pending_size = 0
        self.limit = limit

    def split(self, chunk: bytes) -> list[bytes]:
        """The lines `chunk` completes, without their LF (a CR is the caller's to handle)."""
        lines = chunk.split(b"\n")
        pending = self.pending
        limit = self.limit
        if len(lines) == 1:  # no line ending in this chunk (or an empty chunk)
            if chunk:
                pending.append(chunk)
                self.pending_size += len(chunk)
                if limit and self.pending_size > limit:
                    raise line_too_long(limit)
            return []
        if pending:
            if limit and self.pending_size + len(lines[0]) > limit:
                raise line_too_long(limit)
            pending.append(lines[0])
            lines[0] = b"".join(pending)
            pending.clear()
        self.keep_last(lines)
        return lines

    def keep_last(self, lines: list[bytes]) -> None:
        """Take the last of `lines` (the line still open, maybe empty) into `pending`."""
        last = lines.pop()
        self.pending_size = len(last)
        if last:
            self.pending.append(last)
            if self.limit and len(last) > self.limit:
                raise line_too_long(self.limit)

    def take(self) -> bytes:
        """The incomplete last line, and nothing kept after it (the end of the stream)."""
        tail = b"".join(self.pending)
        self.pending.clear()
        self.pending_size = 0
        return tail


def line_too_long(limit: int, *, frame: bool = False) -> ResponseTooLarge:
    what = "the data of one event" if frame else "a line"
    return ResponseTooLarge(f"{what} in the response is longer than {size_text(limit)}")


def size_text(limit: int) -> str:
    """`16 MiB`, `512 KiB` or `100 bytes`: a cap as the user configured it."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if limit >= 1 << shift and limit % (1 << shift) == 0:
            return f"{limit >> shift} {unit}"
    return f"{limit} bytes"
