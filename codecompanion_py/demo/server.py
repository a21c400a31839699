"""A scripted HTTP/1.1 server on 127.0.0.1 that plays an LLM provider.

Each request is answered by `responder(request)`; every request is recorded. A streamed
reply goes out as one HTTP chunk per scripted chunk, over a real TCP socket, so a client
runs its whole streaming path. Used by the no-key demo, the tests and the benchmarks
(`bench_server.py`). The connection itself, reading requests and writing replies, is
`connection.py`.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Iterable
from typing import Any

import msgspec

from .connection import (
    DONE,
    GONE,
    HEAD_LIMIT,
    BadRequest,
    Reply,
    Request,
    Responder,
    header_tokens,
    read_request,
    send_reply,
    stop_serving,
)

HOST = "127.0.0.1"


def _encode(payload: bytes | str | dict) -> bytes:
    if isinstance(payload, bytes):
        return payload
    if isinstance(payload, str):
        return payload.encode()
    return msgspec.json.encode(payload)  # compact, key order kept


def sse_reply(payloads: Iterable[bytes | str | dict], *, done: bool = True, delay: float = 0.0) -> Reply:
    """One `data: ...` Server-Sent Events frame per payload, then `data: [DONE]` if `done`."""
    frames = [b"data: " + _encode(p) + b"\n\n" for p in payloads]
    if done:
        frames.append(b"data: [DONE]\n\n")
    return Reply(headers={"content-type": "text/event-stream"}, chunks=frames, delay=delay)


def json_reply(obj: Any, status: int = 200) -> Reply:
    """A JSON body with its Content-Length."""
    body = msgspec.json.encode(obj)
    return Reply(status=status, headers={"content-type": "application/json"}, chunks=[body], length=len(body))


def error_reply(status: int, message: str) -> Reply:
    """A provider's JSON error body, `{"error": {"message": ...}}`."""
    return json_reply({"error": {"message": message}}, status=status)


class ScriptedServer:
    """Serves each request with responder(request); records every request."""

    def __init__(self, responder: Responder) -> None:
        self.responder = responder
        self.requests: list[Request] = []
        self.disconnects = 0  # replies the client abandoned before their end
        self._server: asyncio.AbstractServer | None = None
        self._port: int | None = None
        self._tasks: set[asyncio.Task] = set()
        self._closing = False

    @classmethod
    def sequence(cls, replies: list[Reply]) -> ScriptedServer:
        """The nth request gets the nth reply; any further request a 500 JSON error."""
        pending = list(replies)
        served = 0

        def next_reply(request: Request) -> Reply:
            nonlocal served
            served += 1
            if not pending:
                return error_reply(
                    500,
                    f"the scripted server ran out of replies: request {served} "
                    f"({request.method} {request.path}) but only {len(replies)} scripted",
                )
            return pending.pop(0)

        return cls(next_reply)

    async def start(self, port: int = 0) -> None:
        if self._server is not None:
            raise RuntimeError("the scripted server is already started")
        self._closing = False
        self._server = await asyncio.start_server(self._serve, HOST, port, limit=HEAD_LIMIT)
        self._port = self._server.sockets[0].getsockname()[1]

    @property
    def url(self) -> str:
        if self._port is None:
            raise RuntimeError("the scripted server is not started")
        return f"http://{HOST}:{self._port}"

    async def close(self) -> None:
        """Stop listening and drop every connection, hanging ones included."""
        if self._server is None:
            return
        self._closing = True
        server, self._server = self._server, None
        await stop_serving(server, self._tasks)

    # -- one connection ---------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None  # asyncio.start_server runs each connection's handler as a task
        self._tasks.add(task)
        try:
            while not self._closing:
                try:
                    received = await read_request(reader, writer)
                except BadRequest as exc:
                    await send_reply(None, error_reply(400, str(exc)), reader, writer, keep_alive=False)
                    return
                if received is None:
                    return
                request, keep_alive = received
                self.requests.append(request)
                reply = await self._reply_to(request)
                keep_alive = keep_alive and "close" not in header_tokens(reply.headers, "connection")
                outcome = await send_reply(request, reply, reader, writer, keep_alive)
                if outcome == GONE:
                    self.disconnects += 1
                if outcome != DONE or not keep_alive:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return  # the client left between replies or while sending a request
        except asyncio.CancelledError:
            # close() ends connections by cancelling them. This task is the top of the
            # connection: end it normally (Python 3.11's start_server callback calls
            # task.exception() on it, which raises for a cancelled task).
            return
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _reply_to(self, request: Request) -> Reply:
        try:
            reply = self.responder(request)
            if inspect.isawaitable(reply):
                reply = await reply
        except Exception as exc:  # the script failed: tell the client, keep serving
            return error_reply(500, str(exc) or type(exc).__name__)
        if not isinstance(reply, Reply):
            return error_reply(500, f"the responder returned {type(reply).__name__}, not a Reply")
        return reply


class ServerThread:
    """Runs a ScriptedServer on its own asyncio loop in a daemon thread, for synchronous
    callers (tests driving Neovim, benchmarks)."""

    def __init__(self, server: ScriptedServer) -> None:
        self.server = server
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="scripted-server", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(timeout=10)
        except BaseException:
            self._stop()
            raise
        return self.server

    def __exit__(self, *exc: object) -> None:
        if self.loop.is_closed():
            return
        try:
            if self._thread.is_alive():
                asyncio.run_coroutine_threadsafe(self.server.close(), self.loop).result(timeout=10)
        finally:
            self._stop()

    def _stop(self) -> None:
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
        if not self._thread.is_alive() and not self.loop.is_closed():
            self.loop.close()


def serve_forever(server: ScriptedServer, port: int, *, announce: str) -> None:
    """Run `server` on `port` until interrupted, first printing `announce` with its `{url}`
    (the line a parent process waits for)."""

    async def run() -> None:
        await server.start(port)
        print(announce.format(url=server.url), flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass
