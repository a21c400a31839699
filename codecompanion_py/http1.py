"""An HTTP/1.1 transport for httpx whose response bodies come in the blocks the socket gives.

Why: a provider streams a reply as one HTTP chunk per token. httpcore hands each chunk up
through h11's event machinery and four wrapping iterators, about 8 µs apiece: at 10,000
chunks that was more than half of the engine's time for a reply, more than the SSE
decoding, JSON decoding and rendering together. Here the chunked framing is undone with
`bytes.find` over whatever the socket delivered, and the body iterator yields all of it at
once, so the SSE decoder sees many frames per call.

httpx keeps everything above the wire: the client API, headers, cookies, redirects,
timeouts (given here as `request.extensions["timeout"]`), content decoding. This module
only opens connections (TCP, or TLS with httpx's own SSL context: certifi, `SSL_CERT_FILE`,
`verify = false`), writes requests, and reads responses: status line, headers, and bodies
framed by `Transfer-Encoding: chunked`, `Content-Length`, or the connection's end. Idle
connections are kept for reuse, like httpcore's pool. Failures are raised as httpx's own
exceptions (`ConnectError`, `ReadTimeout`, `RemoteProtocolError`...), so callers see no
difference. Every outbound client uses it unless a proxy is configured (in the settings or
the environment): proxies stay with httpx's transport (outbound.py). Given a `connect_guard`,
it connects only to the addresses the guard resolved and checked (web pages: netguard.py),
TLS still verified against the name.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx

MAX_HEAD = 256 * 1024  # the longest status line + headers accepted
_PAUSE_ABOVE = 4 * 1024 * 1024  # received but unread bytes past which the socket stops reading
_READ_DEFAULT = 60.0

# (host, port) -> the addresses to connect to, checked; raises an httpx.ConnectError to refuse.
ConnectGuard = Callable[[str, int], Awaitable[list[str]]]


class ChunkedDecoder:
    """Undoes `Transfer-Encoding: chunked` on input cut anywhere: `feed` returns the payload
    bytes the input completed, `done` turns true after the last chunk and its trailers."""

    __slots__ = ("_buffer", "_left", "_state", "done", "rest")

    def __init__(self) -> None:
        self._buffer = b""
        self._left = 0  # bytes of the current chunk's data still to come
        self._state = "size"  # size line, data, the CRLF after data, trailer lines
        self.done = False
        self.rest = b""  # bytes after the end of the body

    def feed(self, data: bytes) -> bytes:
        buffer = self._buffer + data if self._buffer else data
        end = len(buffer)
        out: list[bytes] = []
        state = self._state
        left = self._left
        pos = _whole_chunks(buffer, out) if state == "size" else 0
        while pos < end:
            if state == "data":
                take = left if left <= end - pos else end - pos
                out.append(buffer[pos : pos + take])
                pos += take
                left -= take
                if left:
                    break
                state = "crlf"
            if state == "crlf":
                if end - pos < 2:
                    break
                if buffer[pos : pos + 2] != b"\r\n":
                    raise httpx.RemoteProtocolError("malformed chunked body: a chunk is longer than its size")
                pos += 2
                state = "size"
            newline = buffer.find(b"\n", pos)
            if newline < 0:
                if end - pos > 4096:
                    raise httpx.RemoteProtocolError("malformed chunked body: a chunk-size line is too long")
                break
            line = buffer[pos:newline].rstrip(b"\r")
            pos = newline + 1
            if state == "trailer":
                if not line:
                    self.done = True
                    self.rest = buffer[pos:]
                    pos = end
                    break
                continue
            left = _chunk_size(line)
            state = "data" if left else "trailer"
        self._buffer = buffer[pos:]
        self._state = state
        self._left = left
        return out[0] if len(out) == 1 else b"".join(out)


_HEX = b"0123456789abcdefABCDEF"


def _whole_chunks(buffer: bytes, out: list[bytes]) -> int:
    """The common case first: complete chunks with a plain size line (`1a\\r\\n`), one after
    another, as a provider sends one per token. Their data goes to `out`; the position of
    the first thing that is not one (the last chunk, a cut-off chunk, an extension, a bare
    LF, a malformed chunk) is returned, for the general loop to read or reject."""
    pos = 0
    end = len(buffer)
    find = buffer.find
    while True:
        newline = find(b"\r\n", pos, pos + 18)  # at most 16 hex digits before it
        if newline <= pos:
            return pos
        size_line = buffer[pos:newline]
        if size_line.strip(_HEX):
            return pos
        start = newline + 2
        stop = start + int(size_line, 16)
        if stop == start or stop + 2 > end or buffer[stop : stop + 2] != b"\r\n":
            return pos
        out.append(buffer[start:stop])
        pos = stop + 2


def _chunk_size(line: bytes) -> int:
    size = line.split(b";", 1)[0].strip()  # a chunk extension is ignored
    if not size or len(size) > 16 or size.strip(b"0123456789abcdefABCDEF"):
        raise httpx.RemoteProtocolError(f"malformed chunked body: bad chunk size {line[:40]!r}")
    return int(size, 16)


class _Connection(asyncio.Protocol):
    """One socket: what it received, waiting to be read, and whether it has ended."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._received: list[bytes] = []
        self._size = 0
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False
        self.transport: asyncio.Transport | None = None
        self.ended = False  # the peer closed, or the connection was lost
        self.error: BaseException | None = None
        self.idle_since = 0.0
        self.received_any = False  # for this request: a kept connection that answered is not stale

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.received_any = True
        self._received.append(data)
        self._size += len(data)
        if self._size > _PAUSE_ABOVE and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.ended = True
        self._wake()
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self.error = exc
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # ours
    @property
    def unread(self) -> bool:
        return bool(self._received)

    async def read(self, timeout: float | None) -> bytes:
        """Everything received since the last read; b"" once the connection has ended."""
        if not self._received and not self.ended:
            self._waiter = waiter = self._loop.create_future()
            timer = self._loop.call_later(timeout, _expire, waiter) if timeout is not None else None
            try:
                await waiter
            finally:
                self._waiter = None
                if timer is not None:
                    timer.cancel()
        if not self._received:
            if self.error is not None:
                raise httpx.ReadError(str(self.error) or type(self.error).__name__)
            return b""
        data = self._received[0] if len(self._received) == 1 else b"".join(self._received)
        self._received.clear()
        self._size = 0
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return data

    def unread_back(self, data: bytes) -> None:
        """Bytes a reader took but did not use go back in front of the rest."""
        if data:
            self._received.insert(0, data)
            self._size += len(data)

    def write(self, data: bytes) -> None:
        if self.transport is None or self.transport.is_closing():
            raise httpx.WriteError("the connection is closed")
        self.transport.write(data)

    def close(self) -> None:
        self.ended = True
        if self.transport is not None:
            self.transport.close()


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


def _tls_context(verify: bool) -> ssl.SSLContext:
    context = httpx.create_ssl_context(verify=verify)
    context.set_alpn_protocols(["http/1.1"])
    return context


# The verifying context, one for every transport while the certificates it read stay named
# the same (SSL_CERT_FILE, SSL_CERT_DIR, else certifi's).
_verified: tuple[tuple[str | None, str | None], ssl.SSLContext] | None = None


def verified_tls() -> ssl.SSLContext:
    """The SSL context that verifies servers. The engine's host makes it ahead, on a thread
    (loading the certificates lets other threads run), so that the first https chat does not
    wait 20 ms for it."""
    global _verified
    names = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    made = _verified
    if made is None or made[0] != names:
        made = _verified = (names, _tls_context(True))
    return made[1]


class Http1Transport(httpx.AsyncBaseTransport):
    def __init__(
        self,
        *,
        verify: bool = True,
        keepalive_expiry: float = 5.0,
        max_idle: int = 8,
        connect_guard: ConnectGuard | None = None,
    ) -> None:
        self._verify = verify
        self._guard = connect_guard
        self._ssl_context: ssl.SSLContext | None = None  # made with the first https connection
        self._keepalive = keepalive_expiry
        self._max_idle = max_idle
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"the URL has no http:// or https:// scheme: {url}", request=request)
        key = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        timeouts = request.extensions.get("timeout", {})
        read_timeout = timeouts.get("read", _READ_DEFAULT)
        message = _request_bytes(request, await request.aread())
        answer = None
        kept = self._take_idle(key)
        if kept is not None:
            try:
                answer = await _exchange(kept, message, read_timeout, request)
                connection = kept
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
                if kept.received_any:
                    raise
                # A kept connection the server had closed meanwhile: the request never reached
                # it, so it goes again on a new one (as browsers and httpcore do).
        if answer is None:
            connection = await self._connect(key, request, timeouts.get("connect"))
            answer = await _exchange(connection, message, read_timeout, request)
        head, rest = answer
        status, reason, headers, keep = _parse_head(head, request)
        connection.unread_back(rest)
        body = _Body(self, key, connection, _framing(request.method, status, headers), keep, read_timeout)
        return httpx.Response(
            status, headers=headers, stream=body, extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason}
        )

    async def _connect(self, key: tuple[str, str, int], request: httpx.Request, timeout: float | None) -> _Connection:
        scheme, host, port = key
        loop = asyncio.get_running_loop()
        connection = _Connection(loop)
        tls = self._tls() if scheme == "https" else None
        try:
            # A guard resolves the name itself, and the connection goes to an address it checked.
            addresses = [host] if self._guard is None else await asyncio.wait_for(self._guard(host, port), timeout)
            deadline = None if timeout is None else loop.time() + timeout  # one budget for every address
            for index, address in enumerate(addresses):
                opening = loop.create_connection(
                    lambda: connection, address, port, ssl=tls, server_hostname=host if tls else None
                )
                left = None if deadline is None else max(deadline - loop.time(), 0.001)
                try:
                    await asyncio.wait_for(opening, left)
                    break
                except (OSError, asyncio.TimeoutError):  # on 3.10 a timeout is no OSError
                    if index == len(addresses) - 1:
                        raise
        except (asyncio.TimeoutError, TimeoutError):
            raise httpx.ConnectTimeout(f"timed out connecting to {host}:{port}", request=request) from None
        except OSError as error:  # refused, unreachable, DNS, TLS (ssl.SSLError is an OSError)
            raise httpx.ConnectError(str(error) or type(error).__name__, request=request) from None
        return connection

    def _tls(self) -> ssl.SSLContext:
        """httpx's SSL context (certifi, SSL_CERT_FILE...), made when first needed: loading the
        certificates takes 20 ms, which a chat with a local model over http never waits for."""
        if self._ssl_context is None:
            self._ssl_context = verified_tls() if self._verify else _tls_context(False)
        return self._ssl_context

    def _take_idle(self, key: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            if not connection.ended and not connection.unread and now - connection.idle_since < self._keepalive:
                return connection
            connection.close()
        return None

    def release(self, key: tuple[str, str, int], connection: _Connection) -> None:
        idle = self._idle.setdefault(key, [])
        if connection.ended or connection.unread or len(idle) >= self._max_idle:
            connection.close()
            return
        connection.idle_since = time.monotonic()
        connection.received_any = False
        idle.append(connection)

    async def aclose(self) -> None:
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()


async def _exchange(
    connection: _Connection, message: bytes, timeout: float | None, request: httpx.Request
) -> tuple[bytes, bytes]:
    try:
        connection.write(message)
        return await _read_head(connection, timeout, request)
    except BaseException:
        connection.close()
        raise


def _request_bytes(request: httpx.Request, body: bytes) -> bytes:
    url = request.url
    target = url.raw_path or b"/"
    lines = [request.method.encode("ascii") + b" " + target + b" HTTP/1.1"]
    chunked = False
    for name, value in request.headers.raw:
        if name.lower() == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
        lines.append(name + b": " + value)
    head = b"\r\n".join(lines) + b"\r\n\r\n"
    if chunked:  # httpx frames a body of unknown length so; it is whole here
        body = (b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n"
    return head + body


async def _read_head(connection: _Connection, timeout: float | None, request: httpx.Request) -> tuple[bytes, bytes]:
    """The response head (an interim 1xx skipped) and the bytes after it."""
    buffer = b""
    while True:
        end = buffer.find(b"\r\n\r\n")
        if end >= 0:
            head, buffer = buffer[:end], buffer[end + 4 :]
            if head[9:10] == b"1" and head[9:12] != b"101":  # 100 Continue, 103 Early Hints
                continue
            return head, buffer
        if len(buffer) > MAX_HEAD:
            raise httpx.RemoteProtocolError("the response headers are too large", request=request)
        try:
            data = await connection.read(timeout)
        except TimeoutError:
            raise httpx.ReadTimeout("timed out waiting for the response", request=request) from None
        if not data:
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
        buffer += data


def _parse_head(head: bytes, request: httpx.Request) -> tuple[int, bytes, list[tuple[bytes, bytes]], bool]:
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise httpx.RemoteProtocolError(f"not an HTTP/1.x response: {lines[0][:60]!r}", request=request)
    status = int(parts[1])
    reason = parts[2] if len(parts) > 2 else b""
    headers: list[tuple[bytes, bytes]] = []
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            raise httpx.RemoteProtocolError(f"malformed response header: {line[:60]!r}", request=request)
        headers.append((name, value.strip()))
    connection_header = b",".join(v for n, v in headers if n.lower() == b"connection").lower()
    keep = parts[0] == b"HTTP/1.1" and b"close" not in connection_header
    if parts[0] == b"HTTP/1.0" and b"keep-alive" in connection_header:
        keep = True
    return status, reason, headers, keep


def _framing(method: str, status: int, headers: list[tuple[bytes, bytes]]) -> str | int:
    """ "none", "chunked", "close" (read to the end), or the Content-Length."""
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return "none"
    encoding = b",".join(v for n, v in headers if n.lower() == b"transfer-encoding").lower()
    if encoding:
        return "chunked" if encoding.rstrip().endswith(b"chunked") else "close"
    lengths = {v for n, v in headers if n.lower() == b"content-length"}
    if len(lengths) == 1:
        length = next(iter(lengths))
        if length.isdigit():
            return int(length)
    if lengths:
        raise httpx.RemoteProtocolError(f"bad Content-Length: {b', '.join(sorted(lengths))[:60]!r}")
    return "close"


class _Body(httpx.AsyncByteStream):
    """A response body: each step yields all the payload bytes the socket has given."""

    def __init__(
        self,
        transport: Http1Transport,
        key: tuple[str, str, int],
        connection: _Connection,
        framing: str | int,
        keep: bool,
        timeout: float | None,
    ) -> None:
        self._transport = transport
        self._key = key
        self._connection: _Connection | None = connection
        self._framing = framing
        self._keep = keep
        self._timeout = timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self._connection
        if connection is None:
            raise httpx.StreamClosed()
        framing = self._framing
        try:
            if framing == "none":
                pass
            elif framing == "chunked":
                decoder = ChunkedDecoder()
                while not decoder.done:
                    data = await self._read(connection)
                    if not data:
                        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")
                    payload = decoder.feed(data)
                    if payload:
                        yield payload
                connection.unread_back(decoder.rest)  # anything after the body makes it unusable
            elif framing == "close":
                self._keep = False
                while data := await self._read(connection):
                    yield data
            else:
                assert isinstance(framing, int)
                left = framing
                while left > 0:
                    data = await self._read(connection)
                    if not data:
                        raise httpx.RemoteProtocolError(
                            f"peer closed connection without sending complete message body "
                            f"(received {framing - left} bytes, expected {framing})"
                        )
                    if len(data) > left:
                        connection.unread_back(data[left:])
                        data = data[:left]
                    left -= len(data)
                    yield data
        except BaseException:
            self._keep = False
            raise
        finally:
            self._finish()

    async def _read(self, connection: _Connection) -> bytes:
        try:
            return await connection.read(self._timeout)
        except TimeoutError:
            raise httpx.ReadTimeout("timed out waiting for the response body") from None

    def _finish(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._keep:
            self._transport.release(self._key, connection)
        else:
            connection.close()

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:  # left before the end: the rest of the body is unread
            connection.close()
