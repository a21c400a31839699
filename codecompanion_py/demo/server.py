"""A scripted HTTP/1.1 server on 127.0.0.1 that plays an LLM provider.

Each request is answered by `responder(request)`; every request is recorded. Streamed
replies go out as one HTTP chunk per scripted chunk, so a client really receives them
one by one. Used by the no-key demo, the tests and the benchmarks.

    python -m codecompanion_py.demo.server --bench-chunks N   # serve an N-chunk OpenAI stream
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Union

HOST = "127.0.0.1"
_DRAIN_ABOVE = 256 * 1024


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    chunks: Iterable[bytes] = ()
    delay: float = 0.0
    hang: bool = False
    length: int | None = None  # set: a Content-Length body instead of chunked


Responder = Callable[[Request], Union[Reply, Awaitable[Reply]]]


def sse_reply(payloads: Iterable[bytes | str | dict], *, done: bool = True, delay: float = 0.0) -> Reply:
    frames = [b"data: " + _payload(p) + b"\n\n" for p in payloads]
    if done:
        frames.append(b"data: [DONE]\n\n")
    return Reply(headers={"content-type": "text/event-stream"}, chunks=frames, delay=delay)


def _payload(payload: bytes | str | dict) -> bytes:
    if isinstance(payload, bytes):
        return payload
    if isinstance(payload, str):
        return payload.encode()
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def json_reply(obj: Any, status: int = 200) -> Reply:
    body = json.dumps(obj).encode()
    return Reply(status=status, headers={"content-type": "application/json"}, chunks=[body], length=len(body))


class ScriptedServer:
    def __init__(self, responder: Responder) -> None:
        self.responder = responder
        self.requests: list[Request] = []
        self.disconnects = 0
        self._server: asyncio.AbstractServer | None = None
        self._port = 0
        self._writers: set[asyncio.StreamWriter] = set()

    @classmethod
    def sequence(cls, replies: list[Reply]) -> ScriptedServer:
        pending = list(replies)

        def next_reply(request: Request) -> Reply:
            if not pending:
                return json_reply({"error": {"message": "the scripted server ran out of replies"}}, status=500)
            return pending.pop(0)

        return cls(next_reply)

    async def start(self, port: int = 0) -> None:
        self._server = await asyncio.start_server(self._serve, HOST, port)
        self._port = self._server.sockets[0].getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self._port}"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    return
                self.requests.append(request)
                try:
                    reply = self.responder(request)
                    if inspect.isawaitable(reply):
                        reply = await reply
                except Exception as exc:  # the script failed: tell the client, keep serving
                    reply = json_reply({"error": {"message": str(exc)}}, status=500)
                if not await self._write(reply, reader, writer):
                    self.disconnects += 1
                    return
                if request.headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _write(self, reply: Reply, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Send the reply; False when the client went away before the end."""
        reason = HTTPStatus(reply.status).phrase if reply.status in HTTPStatus._value2member_map_ else "Status"
        head = [f"HTTP/1.1 {reply.status} {reason}"]
        head += [f"{k}: {v}" for k, v in reply.headers.items()]
        chunked = reply.length is None
        head.append("transfer-encoding: chunked" if chunked else f"content-length: {reply.length}")
        try:
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
            for piece in reply.chunks:
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
                if reply.delay:
                    await writer.drain()
                    await asyncio.sleep(reply.delay)
                elif writer.transport.get_write_buffer_size() > _DRAIN_ABOVE:
                    await writer.drain()
                if writer.is_closing() or reader.at_eof():
                    return False
            if reply.hang:
                await reader.read()  # returns at EOF: the client gave up
                return False
            if chunked:
                writer.write(b"0\r\n\r\n")
            await writer.drain()
            return True
        except (ConnectionError, RuntimeError):
            return False


async def _read_request(reader: asyncio.StreamReader) -> Request | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            data = await reader.readexactly(size + 2)
            if size == 0:
                break
            body += data[:-2]
    else:
        body = await reader.readexactly(int(headers.get("content-length", 0)))
    return Request(method, path, headers, body)


class ServerThread:
    """A ScriptedServer on its own loop in a daemon thread, for synchronous callers."""

    def __init__(self, server: ScriptedServer) -> None:
        self.server = server
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="scripted-server", daemon=True)

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(timeout=10)
        return self.server

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.server.close(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)


def openai_stream_frames(n: int, *, model: str = "demo", line_every: int = 16) -> list[bytes]:
    """An OpenAI chat-completions SSE stream of `n` content chunks, usage and [DONE].

    Every `line_every`-th chunk ends a line and every fifth line a paragraph, as prose
    does; 0 puts the whole reply on one line (a worst case for Neovim's wrapped-line
    layout and its markdown highlighters)."""
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

    def frame(delta: dict, finish: str | None = None) -> bytes:
        chunk = {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"

    frames = [frame({"role": "assistant", "content": ""})]
    def ending(i: int) -> str:
        if not line_every or i % line_every != line_every - 1:
            return " "
        return "\n\n" if i % (5 * line_every) == 5 * line_every - 1 else "\n"

    frames += [frame({"content": f"tok{i}{ending(i)}"}) for i in range(n)]
    frames.append(frame({}, "stop"))
    usage = {**base, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": n, "total_tokens": n + 10}}
    frames.append(b"data: " + json.dumps(usage, separators=(",", ":")).encode() + b"\n\n")
    frames.append(b"data: [DONE]\n\n")
    return frames


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench-chunks", type=int, required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--line-every", type=int, default=16, help="chunks per line; 0 for one long line")
    args = parser.parse_args(argv)
    frames = openai_stream_frames(args.bench_chunks, line_every=args.line_every)
    reply = Reply(headers={"content-type": "text/event-stream"}, chunks=frames)

    async def run() -> None:
        server = ScriptedServer(lambda request: reply)
        await server.start(args.port)
        print(f"READY {server.url}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(run())


if __name__ == "__main__":
    main()
