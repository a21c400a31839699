"""The HTTP/1.1 transport (http1.py) against raw sockets on 127.0.0.1 that send exact bytes:
framing, kept connections, a kept connection the server has closed, interim responses,
timeouts, TLS, and the fall-back to httpx's transport when a proxy is set."""

from __future__ import annotations

import asyncio
import gzip
import ssl
from collections.abc import Awaitable, Callable

import certifi
import httpx
import pytest

from codecompanion_py.client import HttpClient
from codecompanion_py.http1 import ChunkedDecoder, Http1Transport, verified_tls


def chunked(*pieces: bytes, trailer: bytes = b"") -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n" + trailer + b"\r\n"


def test_a_chunked_body_cut_anywhere_decodes_the_same():
    body = chunked(b"data: one\n\n", b"data: two\n\n", b"x" * 300) + b""
    body = body.replace(b"b\r\ndata: two", b"b;name=value\r\ndata: two")  # an extension is ignored
    body = body.replace(b"12c\r\n", b"12C\n")  # as is a bare LF after the size
    whole = b"data: one\n\ndata: two\n\n" + b"x" * 300
    for cut in range(1, len(body)):
        decoder = ChunkedDecoder()
        out = decoder.feed(body[:cut]) + decoder.feed(body[cut:])
        assert out == whole and decoder.done, cut
    decoder = ChunkedDecoder()
    assert b"".join(decoder.feed(body[i : i + 1]) for i in range(len(body))) == whole and decoder.done


def test_trailers_and_what_follows_the_body():
    decoder = ChunkedDecoder()
    assert decoder.feed(chunked(b"abc", trailer=b"X-Checksum: 1\r\n") + b"HTTP/1.1 200") == b"abc"
    assert decoder.done and decoder.rest == b"HTTP/1.1 200"


@pytest.mark.parametrize(
    "body, problem",
    [
        (b"zz\r\nabc\r\n", "bad chunk size"),
        (b"1_0\r\n" + b"a" * 16 + b"\r\n", "bad chunk size"),
        (b"-3\r\nabc\r\n", "bad chunk size"),
        (b"3\r\nabcdef\r\n", "longer than its size"),
        (b"f" * 5000, "too long"),
    ],
)
def test_a_malformed_chunked_body_is_a_protocol_error(body, problem):
    with pytest.raises(httpx.RemoteProtocolError, match=problem):
        ChunkedDecoder().feed(body)


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class RawServer:
    """Answers each connection with `handler`; counts the connections."""

    def __init__(self, handler: Handler, ssl_context: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.connections = 0
        self._ssl = ssl_context

    async def __aenter__(self) -> RawServer:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            try:
                await self.handler(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()

        self._server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=self._ssl)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"{'https' if self._ssl else 'http'}://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        await self._server.wait_closed()


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return head, await reader.readexactly(length)


def client() -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=Http1Transport(), timeout=httpx.Timeout(5.0))


async def test_a_chunked_stream_arrives_in_blocks_and_the_connection_is_kept():
    frames = [b"data: %d\n\n" % i for i in range(500)]

    async def handler(reader, writer):
        for _ in range(2):  # two requests on one connection
            head, body = await read_request(reader)
            assert head.startswith(b"POST /v1/chat HTTP/1.1\r\nHost: 127.0.0.1:") and body == b'{"a":1}'
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
            writer.write(chunked(*frames))
            await writer.drain()

    async with RawServer(handler) as server, client() as http:
        for _ in range(2):
            async with http.stream("POST", server.url + "/v1/chat", content=b'{"a":1}') as response:
                assert response.status_code == 200 and response.headers["content-type"] == "text/event-stream"
                blocks = [block async for block in response.aiter_raw()]
            assert b"".join(blocks) == b"".join(frames)
            assert len(blocks) < len(frames)  # many chunks per block
        assert server.connections == 1


@pytest.mark.parametrize("framing", ["length", "close"])
async def test_content_length_and_close_delimited_bodies(framing):
    body = b'{"answer": 42}'

    async def handler(reader, writer):
        await read_request(reader)
        length = b"content-length: %d\r\n" % len(body) if framing == "length" else b""
        writer.write(b"HTTP/1.1 200 OK\r\n" + length + b"\r\n" + body)
        await writer.drain()
        if framing == "length":  # a kept connection: the next request on it is answered too
            await read_request(reader)
            writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
            await writer.drain()

    async with RawServer(handler) as server, client() as http:
        assert (await http.get(server.url)).json() == {"answer": 42}
        if framing == "length":
            assert (await http.get(server.url)).status_code == 204
            assert server.connections == 1


async def test_a_kept_connection_the_server_closed_is_replaced_without_an_error():
    async def handler(reader, writer):
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        if server.connections == 1:  # its keep-alive ran out as the next request came: closed unanswered
            await read_request(reader)

    async with RawServer(handler) as server, client() as http:
        assert (await http.get(server.url)).text == "ok"
        assert (await http.get(server.url)).text == "ok"
        assert server.connections == 2
        await asyncio.sleep(0.05)  # closed while idle: seen before it is used
        assert (await http.get(server.url)).text == "ok"
        assert server.connections == 3


async def test_an_interim_response_is_skipped_and_headers_keep_their_order():
    async def handler(reader, writer):
        await read_request(reader)
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nSet-Cookie: a=1\r\n")
        writer.write(b"Set-Cookie: b=2\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()

    async with RawServer(handler) as server, client() as http:
        response = await http.post(server.url, content=b"x")
        assert response.status_code == 201 and response.headers.get_list("set-cookie") == ["a=1", "b=2"]


@pytest.mark.parametrize(
    "reply, error",
    [
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab", "without sending complete message body"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc", "received 3 bytes, expected 10"),
        (b"", "Server disconnected without sending a response"),
        (b"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP/1.x response"),
    ],
)
async def test_a_cut_off_or_foreign_answer_is_a_protocol_error(reply, error):
    async def handler(reader, writer):
        await read_request(reader)
        writer.write(reply)
        await writer.drain()

    async with RawServer(handler) as server, client() as http:
        with pytest.raises(httpx.RemoteProtocolError, match=error):
            await http.get(server.url)


async def test_silence_is_a_read_timeout_and_no_server_a_connect_error():
    async def handler(reader, writer):
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n")
        await writer.drain()
        await asyncio.sleep(2)

    async with RawServer(handler) as server:
        async with httpx.AsyncClient(transport=Http1Transport(), timeout=httpx.Timeout(0.2)) as http:
            async with http.stream("GET", server.url) as response:
                with pytest.raises(httpx.ReadTimeout):
                    async for _ in response.aiter_raw():
                        pass
    async with client() as http:
        with pytest.raises(httpx.ConnectError):
            await http.get("http://127.0.0.1:9/")


async def test_a_gzip_body_is_decoded_by_httpx():
    async def handler(reader, writer):
        await read_request(reader)
        body = gzip.compress(b"data: hello\n\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()

    async with RawServer(handler) as server, client() as http:
        assert (await http.get(server.url)).text == "data: hello\n\n"


async def test_tls_is_verified_unless_turned_off(tls_server_context):

    async def handler(reader, writer):
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nsecret")
        await writer.drain()

    async with RawServer(handler, tls_server_context) as server:
        async with client() as http:
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await http.get(server.url)
        async with httpx.AsyncClient(transport=Http1Transport(verify=False)) as http:
            assert (await http.get(server.url)).text == "secret"


def test_the_verifying_context_is_made_once_for_the_certificates_it_names(monkeypatch):
    # the engine's host makes it ahead of the first https chat: every transport must then use it
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    made = verified_tls()
    assert verified_tls() is made and Http1Transport()._tls() is made
    assert Http1Transport(verify=False)._tls() is not made
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())  # other certificates: made again
    assert verified_tls() is not made and Http1Transport()._tls() is verified_tls()


def test_a_proxy_keeps_httpx_transport(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(HttpClient()._http()._transport, Http1Transport)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    assert not isinstance(HttpClient()._http()._transport, Http1Transport)
