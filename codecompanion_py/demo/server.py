"""A scripted HTTP/1.1 server on 127.0.0.1 that plays an LLM provider.

Each request is answered by `responder(request)`; every request is recorded. A streamed
reply goes out as one HTTP chunk per scripted chunk, over a real TCP socket, so a client
runs its whole streaming path. Used by the no-key demo, the tests and the benchmarks.

    python -m codecompanion_py.demo.server --bench-chunks N [--port P] [--line-every K] [--pace CPS]

serves an N-chunk OpenAI chat-completions stream to every POST and prints `READY <url>`.
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

import msgspec

HOST = "127.0.0.1"

_HEAD_LIMIT = 1 << 20  # longest request line + headers (and chunk-size line) accepted
_BATCH = 64 * 1024  # unpaced streams: bytes gathered into one socket write
_DRAIN_ABOVE = 256 * 1024  # unpaced streams: wait for the client once this much is unsent
_CRLF = b"\r\n"
_LAST_CHUNK = b"0\r\n\r\n"

# How a reply ended, as far as the connection is concerned.
_DONE = "done"  # fully written
_GONE = "gone"  # the client went away before the end: counted in `disconnects`
_BROKEN = "broken"  # the script failed after the head went out: the connection is dropped


@dataclass
class Request:
    method: str
    path: str  # including the query string
    headers: dict[str, str]  # lower-cased names; repeated headers joined with ", "
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON (None for an empty body)."""
        return json.loads(self.body) if self.body else None


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    chunks: Iterable[bytes] = ()
    delay: float = 0.0  # seconds between chunks; > 0 also drains after every chunk
    hang: bool = False  # after the chunks, never finish: wait for the client to leave
    length: int | None = None  # the body's total size, known: Content-Length instead of chunked


Responder = Callable[[Request], Union[Reply, Awaitable[Reply]]]


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


def _error_reply(status: int, message: str) -> Reply:
    return json_reply({"error": {"message": message}}, status=status)


class _BadRequest(Exception):
    pass


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
                return _error_reply(
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
        self._server = await asyncio.start_server(self._serve, HOST, port, limit=_HEAD_LIMIT)
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
        server.close()
        current = asyncio.current_task()
        tasks = [t for t in self._tasks if t is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()

    # -- one connection ---------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None  # asyncio.start_server runs each connection's handler as a task
        self._tasks.add(task)
        try:
            while not self._closing:
                try:
                    received = await _read_request(reader, writer)
                except _BadRequest as exc:
                    await self._send(None, _error_reply(400, str(exc)), reader, writer, keep_alive=False)
                    return
                if received is None:
                    return
                request, keep_alive = received
                self.requests.append(request)
                reply = await self._reply_to(request)
                keep_alive = keep_alive and "close" not in _tokens(reply.headers, "connection")
                outcome = await self._send(request, reply, reader, writer, keep_alive)
                if outcome == _GONE:
                    self.disconnects += 1
                if outcome != _DONE or not keep_alive:
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
            return _error_reply(500, str(exc) or type(exc).__name__)
        if not isinstance(reply, Reply):
            return _error_reply(500, f"the responder returned {type(reply).__name__}, not a Reply")
        return reply

    async def _send(
        self,
        request: Request | None,
        reply: Reply,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        keep_alive: bool,
    ) -> str:
        """Write the reply. Framing: headers the reply sets itself (Content-Length or
        Transfer-Encoding) are sent as they are, with the chunks as the raw body; else a
        known `length` gives Content-Length; else each chunk becomes one HTTP chunk."""
        names = {name.lower() for name in reply.headers}
        bodiless = (
            (request is not None and request.method == "HEAD")
            or reply.status in (204, 304)
            or 100 <= reply.status < 200
        )
        chunked = not bodiless and reply.length is None and not names & {"content-length", "transfer-encoding"}
        lines = [f"HTTP/1.1 {reply.status} {_reason(reply.status)}"]
        lines += [f"{name}: {value}" for name, value in reply.headers.items()]
        if chunked:
            lines.append("transfer-encoding: chunked")
        elif (
            reply.length is not None
            and "content-length" not in names
            and reply.status not in (204, 304)
            and not 100 <= reply.status < 200
        ):
            lines.append(f"content-length: {reply.length}")
        if not keep_alive and "connection" not in names:
            lines.append("connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        try:
            if bodiless:
                writer.write(head)
                await writer.drain()
                return _DONE
            if reply.delay > 0:
                outcome = await _write_paced(reply, head, chunked, reader, writer)
            else:
                outcome = await _write_burst(reply, head, chunked, reader, writer)
            if outcome != _DONE:
                return outcome
            if reply.hang:
                return await _hang(reader, writer)
            return await _finish(chunked, reader, writer)
        except ConnectionError:
            return _GONE
        except Exception:  # a chunk generator raised or yielded a non-bytes: drop the connection
            return _BROKEN


def _frame(piece: bytes, chunked: bool) -> bytes:
    return b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece


def _gone(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    return writer.is_closing() or reader.at_eof()


async def _write_paced(
    reply: Reply, head: bytes, chunked: bool, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> str:
    """Each chunk written and drained on its own, `delay` seconds apart."""
    writer.write(head)
    await writer.drain()
    for i, piece in enumerate(reply.chunks):
        if i:
            await asyncio.sleep(reply.delay)
        if _gone(reader, writer):
            return _GONE
        if piece:  # an empty HTTP chunk would end the body
            writer.write(_frame(piece, chunked))
            await writer.drain()
    return _DONE


async def _write_burst(
    reply: Reply, head: bytes, chunked: bool, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> str:
    """As fast as the client reads: chunks gathered into ~64 KiB writes (each still its
    own HTTP chunk), draining only when the unsent backlog grows large."""
    transport = writer.transport
    parts = [head]
    size = len(head)
    for piece in reply.chunks:
        if not piece:
            continue
        if chunked:
            parts += (b"%x\r\n" % len(piece), piece, _CRLF)
        else:
            parts.append(piece)
        size += len(piece)
        if size >= _BATCH:
            writer.write(b"".join(parts))
            parts.clear()
            size = 0
            if transport.get_write_buffer_size() > _DRAIN_ABOVE:
                await writer.drain()
            else:
                await asyncio.sleep(0)  # let other connections, and news of this one, in
            if _gone(reader, writer):
                return _GONE
    if parts:
        writer.write(b"".join(parts))
    return _DONE


async def _finish(chunked: bool, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str:
    if _gone(reader, writer):
        return _GONE
    if chunked:
        writer.write(_LAST_CHUNK)
    if writer.transport.get_write_buffer_size() == 0 and not writer.is_closing():
        return _DONE  # all of it is with the kernel: a client leaving now has had it all
    await writer.drain()
    return _DONE


async def _hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str:
    """Keep the reply unfinished until the client leaves (or the server closes, which
    cancels this)."""
    await writer.drain()
    try:
        while await reader.read(65536):
            pass
    except ConnectionError:
        pass
    return _GONE


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _tokens(headers: dict[str, str], name: str) -> set[str]:
    values = [v for k, v in headers.items() if k.lower() == name]
    return {t.strip().lower() for v in values for t in v.split(",")}


async def _read_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> tuple[Request, bool] | None:
    """The next request on the connection and whether the client keeps the connection
    alive after it; None when the client closed the connection cleanly."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial.strip():
            raise _BadRequest("the connection closed inside the request head") from None
        return None
    except asyncio.LimitOverrunError:
        raise _BadRequest("the request head is too large") from None
    lines = head.lstrip(b"\r\n").decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _BadRequest(f"malformed request line: {lines[0][:200]!r}")
    method, path, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise _BadRequest(f"malformed header line: {line[:200]!r}")
        name, value = name.lower(), value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value

    if headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
    if "chunked" in _tokens(headers, "transfer-encoding"):
        body = await _read_chunked(reader)
    elif "content-length" in headers:
        try:
            length = int(headers["content-length"])
        except ValueError:
            length = -1
        if length < 0:
            raise _BadRequest(f"bad content-length: {headers['content-length']!r}")
        body = await reader.readexactly(length)
    else:
        body = b""
    connection = _tokens(headers, "connection")
    keep_alive = "keep-alive" in connection if version == "HTTP/1.0" else "close" not in connection
    return Request(method, path, headers, body), keep_alive


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    pieces = []
    while True:
        try:
            line = await reader.readuntil(_CRLF)
            size = int(line.split(b";", 1)[0].strip(), 16)
        except (ValueError, asyncio.LimitOverrunError):
            raise _BadRequest("malformed chunk size in the request body") from None
        if size == 0:
            break
        pieces.append(await reader.readexactly(size))
        if await reader.readexactly(2) != _CRLF:
            raise _BadRequest("a request body chunk does not end with CRLF")
    try:
        while await reader.readuntil(_CRLF) != _CRLF:  # trailer fields, ignored
            pass
    except asyncio.LimitOverrunError:
        raise _BadRequest("a request trailer field is too large") from None
    return b"".join(pieces)


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


# -- the benchmark stream ------------------------------------------------------------


def openai_stream_frames(n: int, *, model: str = "demo", line_every: int = 0) -> list[bytes]:
    """The SSE frames of an OpenAI chat-completions stream with `n` content chunks: a role
    chunk, `n` chunks "tok<i> ", a finish chunk, a usage chunk and `data: [DONE]`.

    With `line_every` > 0 every `line_every`-th token ends its line instead of a space,
    and every fifth such line a paragraph, as prose does; 0 keeps the whole reply on one
    line (a worst case for Neovim's wrapped-line layout and its markdown highlighters)."""
    base = {"id": "chatcmpl-demo", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

    def frame(delta: dict, finish: str | None = None) -> bytes:
        chunk = {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        return b"data: " + msgspec.json.encode(chunk) + b"\n\n"

    prompt_tokens = 10
    frames = [frame({"role": "assistant", "content": ""})]
    frames += [frame({"content": token}) for token in bench_tokens(n, line_every)]
    frames.append(frame({}, "stop"))
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": n, "total_tokens": prompt_tokens + n}
    frames.append(b"data: " + msgspec.json.encode({**base, "choices": [], "usage": usage}) + b"\n\n")
    frames.append(b"data: [DONE]\n\n")
    return frames


def _chunked_body(frames: list[bytes]) -> bytes:
    """`frames` framed once, ahead of time, as a whole chunked body: one HTTP chunk each."""
    return b"".join(_frame(f, True) for f in frames if f) + _LAST_CHUNK


def bench_tokens(n: int, line_every: int = 0) -> list[str]:
    """`n` tokens "tok<i>" and their separators; see `openai_stream_frames`."""

    def ending(i: int) -> str:
        if line_every <= 0 or i % line_every != line_every - 1:
            return " "
        return "\n\n" if i % (5 * line_every) == 5 * line_every - 1 else "\n"

    return [f"tok{i}{ending(i)}" for i in range(n)]


def anthropic_stream_frames(n: int, *, model: str = "demo", line_every: int = 0) -> list[bytes]:
    """The same content as an Anthropic Messages stream (`event:` and `data:` lines)."""

    def frame(payload: dict) -> bytes:
        return b"event: " + payload["type"].encode() + b"\ndata: " + msgspec.json.encode(payload) + b"\n\n"

    start = {
        "type": "message_start",
        "message": {
            "id": "msg_demo",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    frames = [
        frame(start),
        frame({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ]
    frames += [
        frame({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": token}})
        for token in bench_tokens(n, line_every)
    ]
    frames += [
        frame({"type": "content_block_stop", "index": 0}),
        frame(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": n},
            }
        ),
        frame({"type": "message_stop"}),
    ]
    return frames


def gemini_stream_frames(n: int, *, model: str = "demo", line_every: int = 0) -> list[bytes]:
    """The same content as a Gemini `streamGenerateContent?alt=sse` stream (CRLF framing)."""

    def frame(payload: dict) -> bytes:
        return b"data: " + msgspec.json.encode(payload) + b"\r\n\r\n"

    tokens = bench_tokens(n, line_every)
    frames = [
        frame(
            {
                "candidates": [{"content": {"parts": [{"text": token}], "role": "model"}, "index": 0}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": i + 1, "totalTokenCount": 11 + i},
                "modelVersion": model,
            }
        )
        for i, token in enumerate(tokens)
    ]
    frames.append(
        frame(
            {
                "candidates": [
                    {"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": "STOP", "index": 0}
                ],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": n, "totalTokenCount": 10 + n},
            }
        )
    )
    return frames


STREAM_FORMATS = {"openai": openai_stream_frames, "anthropic": anthropic_stream_frames, "gemini": gemini_stream_frames}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the same scripted SSE stream to every POST.")
    parser.add_argument("--format", choices=sorted(STREAM_FORMATS), default="openai", help="wire format")
    parser.add_argument("--bench-chunks", type=int, required=True, metavar="N", help="content chunks per reply")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    parser.add_argument(
        "--line-every", type=int, default=0, metavar="K", help="end a line every K tokens (default 0: one long line)"
    )
    parser.add_argument(
        "--pace", type=int, default=0, metavar="CPS", help="send CPS chunks a second (default 0: as fast as read)"
    )
    args = parser.parse_args(argv)
    frames = STREAM_FORMATS[args.format](args.bench_chunks, line_every=args.line_every)
    if args.pace > 0:  # a hundredth of a second's chunks at a time, each write its own HTTP chunk
        step = max(1, round(args.pace / 100))
        pieces = [b"".join(frames[i : i + step]) for i in range(0, len(frames), step)]
        stream = Reply(
            headers={"content-type": "text/event-stream", "cache-control": "no-cache"}, chunks=pieces, delay=0.01
        )
    else:  # pre-encoded once: every POST gets the same bytes, already chunk-framed
        stream = Reply(
            headers={"content-type": "text/event-stream", "cache-control": "no-cache", "transfer-encoding": "chunked"},
            chunks=[_chunked_body(frames)],
        )
    not_post = _error_reply(405, "the bench server answers POST requests only")

    serve_forever(
        ScriptedServer(lambda request: stream if request.method == "POST" else not_post),
        args.port,
        announce="READY {url}",
    )


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


if __name__ == "__main__":
    main()
