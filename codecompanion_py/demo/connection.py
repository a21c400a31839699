"""One HTTP/1.1 connection on the server's side, for the scripted server: a request read
(strictly: a malformed one is a `BadRequest`), a reply written (chunked, with a length,
paced or in bursts), and how the reply ended for the connection."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Union

HEAD_LIMIT = 1 << 20  # longest request line + headers (and chunk-size line) accepted
_BATCH = 64 * 1024  # unpaced streams: bytes gathered into one socket write
_DRAIN_ABOVE = 256 * 1024  # unpaced streams: wait for the client once this much is unsent
_CRLF = b"\r\n"
LAST_CHUNK = b"0\r\n\r\n"

# How a reply ended, as far as the connection is concerned.
DONE = "done"  # fully written
GONE = "gone"  # the client went away before the end: counted in `disconnects`
BROKEN = "broken"  # the script failed after the head went out: the connection is dropped


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


class BadRequest(Exception):
    """A request the server cannot read: answered with a 400, then the connection closes."""


async def send_reply(
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
        (request is not None and request.method == "HEAD") or reply.status in (204, 304) or 100 <= reply.status < 200
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
            return DONE
        if reply.delay > 0:
            outcome = await _write_paced(reply, head, chunked, reader, writer)
        else:
            outcome = await _write_burst(reply, head, chunked, reader, writer)
        if outcome != DONE:
            return outcome
        if reply.hang:
            return await _hang(reader, writer)
        return await _finish(chunked, reader, writer)
    except ConnectionError:
        return GONE
    except Exception:  # a chunk generator raised or yielded a non-bytes: drop the connection
        return BROKEN


def chunk_frame(piece: bytes, chunked: bool) -> bytes:
    """`piece` as one HTTP chunk, or as it is in a body that is not chunked."""
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
            return GONE
        if piece:  # an empty HTTP chunk would end the body
            writer.write(chunk_frame(piece, chunked))
            await writer.drain()
    return DONE


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
                return GONE
    if parts:
        writer.write(b"".join(parts))
    return DONE


async def _finish(chunked: bool, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str:
    if _gone(reader, writer):
        return GONE
    if chunked:
        writer.write(LAST_CHUNK)
    if writer.transport.get_write_buffer_size() == 0 and not writer.is_closing():
        return DONE  # all of it is with the kernel: a client leaving now has had it all
    await writer.drain()
    return DONE


async def _hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str:
    """Keep the reply unfinished until the client leaves (or the server closes, which
    cancels this)."""
    await writer.drain()
    try:
        while await reader.read(65536):
            pass
    except ConnectionError:
        pass
    return GONE


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def header_tokens(headers: dict[str, str], name: str) -> set[str]:
    values = [v for k, v in headers.items() if k.lower() == name]
    return {t.strip().lower() for v in values for t in v.split(",")}


async def read_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> tuple[Request, bool] | None:
    """The next request on the connection and whether the client keeps the connection
    alive after it; None when the client closed the connection cleanly."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial.strip():
            raise BadRequest("the connection closed inside the request head") from None
        return None
    except asyncio.LimitOverrunError:
        raise BadRequest("the request head is too large") from None
    lines = head.lstrip(b"\r\n").decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(f"malformed request line: {lines[0][:200]!r}")
    method, path, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise BadRequest(f"malformed header line: {line[:200]!r}")
        name, value = name.lower(), value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value

    if headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
    if "chunked" in header_tokens(headers, "transfer-encoding"):
        body = await _read_chunked(reader)
    elif "content-length" in headers:
        try:
            length = int(headers["content-length"])
        except ValueError:
            length = -1
        if length < 0:
            raise BadRequest(f"bad content-length: {headers['content-length']!r}")
        body = await reader.readexactly(length)
    else:
        body = b""
    connection = header_tokens(headers, "connection")
    keep_alive = "keep-alive" in connection if version == "HTTP/1.0" else "close" not in connection
    return Request(method, path, headers, body), keep_alive


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    pieces = []
    while True:
        try:
            line = await reader.readuntil(_CRLF)
            size = int(line.split(b";", 1)[0].strip(), 16)
        except (ValueError, asyncio.LimitOverrunError):
            raise BadRequest("malformed chunk size in the request body") from None
        if size == 0:
            break
        pieces.append(await reader.readexactly(size))
        if await reader.readexactly(2) != _CRLF:
            raise BadRequest("a request body chunk does not end with CRLF")
    try:
        while await reader.readuntil(_CRLF) != _CRLF:  # trailer fields, ignored
            pass
    except asyncio.LimitOverrunError:
        raise BadRequest("a request trailer field is too large") from None
    return b"".join(pieces)


async def stop_serving(server: asyncio.AbstractServer, connections: Iterable[asyncio.Task[Any]]) -> None:
    """Stop listening and end every connection's task but the caller's, hanging ones included."""
    server.close()
    current = asyncio.current_task()
    tasks = [t for t in connections if t is not current]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await server.wait_closed()
