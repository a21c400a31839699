"""A child's output kept within a cap with bounded memory: its first half and a rolling
last half, joined by a `[... N bytes omitted ...]` line."""

from __future__ import annotations

import asyncio
import contextlib

READ_CHUNK = 64 * 1024


def capped(data: bytes, limit: int) -> bytes:
    """`data` within `limit` bytes as a command's output is kept: its first half and last
    half joined by a `[... N bytes omitted ...]` line."""
    capture = Capture(limit)
    capture.add(data)
    return capture.render()


class Capture:
    """Bytes written by a child, kept within `limit`: the first half and a rolling last half
    (or only a head of `limit` bytes when `keep_tail` is false)."""

    def __init__(self, limit: int, *, keep_tail: bool = True) -> None:
        limit = max(0, int(limit))
        if keep_tail:
            self.head_limit = limit // 2
            self.tail_limit = limit - self.head_limit
        else:
            self.head_limit, self.tail_limit = limit, 0
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data or self.tail_limit == 0:
            return
        if len(data) >= self.tail_limit:
            self.tail[:] = data[-self.tail_limit :]
        else:
            self.tail += data
            excess = len(self.tail) - self.tail_limit
            if excess > 0:
                del self.tail[:excess]

    @property
    def omitted(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def render(self) -> bytes:
        if not self.omitted:
            return bytes(self.head + self.tail)
        return append_line(bytes(self.head), f"[... {self.omitted} bytes omitted ...]") + bytes(self.tail)


def append_line(data: bytes, line: str) -> bytes:
    if data and not data.endswith(b"\n"):
        data += b"\n"
    return data + line.encode() + b"\n"


async def pump(stream: asyncio.StreamReader, capture: Capture) -> None:
    while True:
        chunk = await stream.read(READ_CHUNK)
        if not chunk:
            return
        capture.add(chunk)


async def feed(stream: asyncio.StreamWriter, data: bytes) -> None:
    try:
        stream.write(data)
        await stream.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the child exited without reading all of it
    finally:
        with contextlib.suppress(Exception):
            stream.close()
