"""The bridge served on its own stdin and stdout (`serve_stdio`, what `codecompanion-py
acp-bridge` runs), which become an asyncio stream pair whatever they are (pipes, regular
files)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Mapping
from typing import Any

from ..acp.jsonrpc import MAX_LINE
from .contract import BridgeAdapter
from .server import Bridge


class _BlockingWriter:
    """stdout that is a regular file: plain blocking writes."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


async def open_stdio() -> tuple[asyncio.StreamReader, Any]:
    """Our stdin and stdout as a stream pair. File descriptor 1 is pointed at stderr
    afterwards, so a stray print (ours or an adapter's) cannot corrupt the protocol."""
    loop = asyncio.get_running_loop()
    out_fd = os.dup(1)
    os.dup2(2, 1)
    reader = asyncio.StreamReader(limit=MAX_LINE)
    stdin = os.fdopen(os.dup(0), "rb", buffering=0)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    except ValueError:  # a regular file: read it in a thread

        def pump() -> None:
            with stdin:
                for chunk in iter(lambda: stdin.read(65536), b""):
                    loop.call_soon_threadsafe(reader.feed_data, chunk)
            loop.call_soon_threadsafe(reader.feed_eof)

        threading.Thread(target=pump, name="bridge-stdin", daemon=True).start()
    out = os.fdopen(out_fd, "wb", buffering=0)
    try:
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out)
    except ValueError:
        return reader, _BlockingWriter(out_fd)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


async def serve_stdio(adapter: BridgeAdapter, opts: Mapping[str, Any]) -> int:
    reader, writer = await open_stdio()
    return await Bridge(adapter, opts, reader, writer).serve()
