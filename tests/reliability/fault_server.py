"""A fault-injecting HTTP/1.1 server on 127.0.0.1, on real sockets, for the reliability tests.

Each request is answered by `responder(request)`, which returns a `Fault`: what to send
(status, headers, body pieces) and how the reply ends:

    "finish"  properly (the last chunk of a chunked body, or the whole Content-Length);
    "close"   FIN in the middle of the body (a chunked body without its last chunk);
    "reset"   RST (SO_LINGER 0) after the body pieces, after `pause` seconds;
    "drop"    the connection closed before any response (status and body unused);
    "hang"    nothing more, until the client leaves or `hang_for` seconds pass.

The server bounds itself: it answers at most `max_requests` requests (later ones are
dropped), it stops (closing every connection) `lifetime` seconds after it started if the
test has not stopped it, each reply's body is a finite iterable (a generator may stand
for 64 MiB without holding it), and a write loop stops as soon as the client leaves.
`sent` counts the body bytes each reply got out, so a test can see that a reader gave up.

`FaultServer` has `start()`/`close()` like the demo's `ScriptedServer`, so `ServerThread`
runs it on its own loop for synchronous tests (the CLI); it records the same `Request`s.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import socket
import struct
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Union

from codecompanion_py.demo.connection import Request, stop_serving

HOST = "127.0.0.1"
_HEAD_LIMIT = 64 * 1024


@dataclass
class Fault:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Iterable[bytes] = ()
    end: str = "finish"  # finish, close, reset, drop, hang
    framing: str = "chunked"  # chunked, or length (Content-Length: the sum of the pieces)
    pause: float = 0.0  # seconds before a reset or a close, so the client has read what came before
    hang_for: float = 10.0


Responder = Callable[[Request], Union[Fault, Awaitable[Fault]]]


def sse(*payloads: Any, done: bool = True) -> list[bytes]:
    """`data: ...` frames (dicts as JSON), then `data: [DONE]` if `done`."""
    frames = [b"data: " + (p if isinstance(p, bytes) else json.dumps(p).encode()) + b"\n\n" for p in payloads]
    return frames + ([b"data: [DONE]\n\n"] if done else [])


def events(*payloads: dict[str, Any]) -> list[bytes]:
    """`event: <type>` + `data: ...` frames, as Anthropic and the Responses API send them."""
    return [f"event: {p['type']}\ndata: {json.dumps(p)}\n\n".encode() for p in payloads]


def stream(pieces: Iterable[bytes], content_type: str = "text/event-stream", **options: Any) -> Fault:
    return Fault(headers={"content-type": content_type}, body=pieces, **options)


def status(code: int, message: str = "failed", headers: dict[str, str] | None = None) -> Fault:
    body = json.dumps({"error": {"message": message}}).encode()
    return Fault(
        status=code, headers={"content-type": "application/json", **(headers or {})}, body=[body], framing="length"
    )


class FaultServer:
    def __init__(self, responder: Responder, *, max_requests: int = 50, lifetime: float = 60.0) -> None:
        self.responder = responder
        self.max_requests = max_requests
        self.lifetime = lifetime
        self.requests: list[Request] = []
        self.sent: list[int] = []  # body bytes written, per reply
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._watchdog: asyncio.TimerHandle | None = None
        self._port = 0

    @classmethod
    def sequence(cls, *faults: Fault, **options: Any) -> FaultServer:
        """The nth request gets the nth fault; any later one is dropped."""
        pending = list(faults)
        return cls(lambda request: pending.pop(0) if pending else Fault(end="drop"), **options)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self._port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, HOST, 0, limit=_HEAD_LIMIT)
        self._port = self._server.sockets[0].getsockname()[1]
        loop = asyncio.get_running_loop()
        self._watchdog = loop.call_later(self.lifetime, lambda: loop.create_task(self.close()))

    async def close(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if self._server is None:
            return
        server, self._server = self._server, None
        await stop_serving(server, self._tasks)

    async def __aenter__(self) -> FaultServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while self._server is not None and len(self.requests) < self.max_requests:
                request = await _read_request(reader)
                if request is None:
                    return
                self.requests.append(request)
                fault = self.responder(request)
                if inspect.isawaitable(fault):
                    fault = await fault
                assert isinstance(fault, Fault)
                if not await self._answer(fault, reader, writer):
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return
        except asyncio.CancelledError:
            return  # close(): the connection ends with the server
        finally:
            self._tasks.discard(task)
            if not writer.is_closing():
                writer.close()

    async def _answer(self, fault: Fault, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Send the reply; True when the connection can serve another request."""
        if fault.end == "drop":
            writer.transport.abort()
            return False
        pieces = fault.body
        lines = [f"HTTP/1.1 {fault.status} Status"] + [f"{k}: {v}" for k, v in fault.headers.items()]
        if fault.framing == "length":
            pieces = list(pieces)
            lines.append(f"content-length: {sum(len(p) for p in pieces)}")
        else:
            lines.append("transfer-encoding: chunked")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        sent = 0
        self.sent.append(0)
        for piece in pieces:
            if not piece:
                continue
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece) if fault.framing == "chunked" else piece)
            await writer.drain()  # raises ConnectionError once the client has gone
            sent += len(piece)
            self.sent[-1] = sent
            if writer.is_closing() or reader.at_eof():
                return False
        if fault.end in ("reset", "close"):
            await writer.drain()
            await asyncio.sleep(fault.pause)
            if fault.end == "reset":
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
            else:
                writer.close()
            return False
        if fault.end == "hang":
            await writer.drain()
            try:
                await asyncio.wait_for(reader.read(), fault.hang_for)
            except asyncio.TimeoutError:
                pass
            return False
        if fault.framing == "chunked":
            writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True


async def _read_request(reader: asyncio.StreamReader) -> Request | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length") or 0)
    body = await reader.readexactly(length) if length else b""
    return Request(method, path, headers, body)
