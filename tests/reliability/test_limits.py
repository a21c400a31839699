"""Caps on what a response may make the engine hold: one SSE/NDJSON line or event, and a
whole response. A server sending 64 MiB without a newline meets a small configured cap:
the stream fails with an error that names the cap and its setting, and the connection is
dropped (the server gets to send only a part of it). Memory is not measured: the caps
are what bound it."""

from __future__ import annotations

import functools
import json

import pytest

from codecompanion_py import cli, config
from codecompanion_py.adapters import extend
from codecompanion_py.client import HttpClient, HttpRequest
from codecompanion_py.demo.server import ServerThread
from codecompanion_py.errors import ConfigError, ResponseTooLarge
from codecompanion_py.events import ErrorEvent
from codecompanion_py.messages import Message
from codecompanion_py.stream.iterators import HttpStreamIterator
from codecompanion_py.stream.ndjson import NDJSONDecoder
from codecompanion_py.stream.sse import SSEDecoder

from .fault_server import Fault, FaultServer, sse, stream

MiB = 1 << 20
PIECE = 64 * 1024


def endless_line(total: int = 64 * MiB, prefix: bytes = b"data: ") -> object:
    """`total` bytes with no line ending, made as they are sent."""
    yield prefix
    for _ in range(total // PIECE):
        yield b"x" * PIECE


@pytest.fixture
async def capped():
    made = []

    def make(**caps) -> HttpClient:
        http = HttpClient(read_timeout=10, connect_timeout=2, retries=0, **caps)
        made.append(http)
        return http

    yield make
    for http in made:
        await http.aclose()


async def ask(adapter, http) -> list:
    return [e async for e in HttpStreamIterator(adapter, [Message.of("user", "hi")], client=http)]


def compatible(url: str):
    return extend("openai_compatible", {"env": {"url": url}})


async def test_a_64_mib_line_without_a_newline_stops_at_the_line_cap(capped):
    async with FaultServer.sequence(stream(endless_line())) as server:
        got = await ask(compatible(server.url), capped(max_line_bytes=MiB))
    assert len(got) == 1 and isinstance(got[0], ErrorEvent) and got[0].kind == "ResponseTooLarge"
    assert got[0].message.startswith(
        "OpenAI Compatible: a line in the response is longer than 1 MiB "
        "(adapters.http.opts.max_line_bytes); reading stopped after "
    )
    assert server.sent[0] < 32 * MiB  # the client hung up long before the 64 MiB were out (kernel buffers aside)


async def test_an_ndjson_line_without_a_newline_stops_at_the_line_cap(capped, monkeypatch):
    async with FaultServer.sequence(
        stream(endless_line(prefix=b'{"message":{"content":"'), "application/x-ndjson")
    ) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.url)
        got = await ask(extend("ollama", {}), capped(max_line_bytes=MiB))
    assert got[-1].kind == "ResponseTooLarge"
    assert "Ollama: a line in the response is longer than 1 MiB" in got[-1].message
    assert server.sent[0] < 32 * MiB


async def test_one_event_of_endless_data_lines_stops_at_the_cap(capped):
    lines = (b"data: " + b"y" * 1000 + b"\n" for _ in range(8 * 1024))  # 8 MiB, never a blank line
    async with FaultServer.sequence(stream(lines)) as server:
        got = await ask(compatible(server.url), capped(max_line_bytes=MiB))
    assert got[-1].kind == "ResponseTooLarge"
    assert "the data of one event in the response is longer than 1 MiB" in got[-1].message


async def test_a_whole_response_stops_at_the_response_cap(capped):
    frame = sse({"choices": [{"index": 0, "delta": {"content": "z" * 65000}}]}, done=False)[0]
    frames = (frame for _ in range(1024))  # 64 MiB of valid frames
    async with FaultServer.sequence(stream(frames)) as server:
        got = await ask(compatible(server.url), capped(max_response_bytes=2 * MiB))
    assert got[-1].kind == "ResponseTooLarge"
    assert got[-1].message.startswith(
        "OpenAI Compatible: the response is larger than 2 MiB "
        "(adapters.http.opts.max_response_bytes); reading stopped after "
    )
    assert server.sent[0] < 32 * MiB


async def test_a_whole_body_stops_at_the_response_cap(capped):
    adapter = compatible("")
    adapter.opts["stream"] = False
    async with FaultServer.sequence(stream(endless_line(8 * MiB, b'{"choices":"'), "application/json")) as server:
        adapter.env["url"] = server.url
        got = await ask(adapter, capped(max_response_bytes=MiB))
    assert got[-1].kind == "ResponseTooLarge" and "larger than 1 MiB" in got[-1].message


async def test_fetch_json_stops_at_the_response_cap(capped):
    huge = Fault(headers={"content-type": "application/json"}, body=endless_line(8 * MiB, b'{"a":"'))
    async with FaultServer.sequence(huge) as server:
        request = HttpRequest(url=server.url + "/models", body=b"", method="GET", stream=False, provider="Example")
        with pytest.raises(ResponseTooLarge, match="Example: the response is larger than"):
            await capped(max_response_bytes=MiB).fetch_json(request)


async def test_an_error_body_is_read_only_in_part(capped):
    page = Fault(
        status=502,
        headers={"content-type": "text/html"},
        body=[b"<html><head><title>Bad gateway</title></head>", *(b"<p>" * 1000 for _ in range(4096))],
    )
    async with FaultServer.sequence(page) as server:
        got = await ask(compatible(server.url), capped())
    assert got[-1].message.startswith("OpenAI Compatible: server error (HTTP 502): an HTML page: Bad gateway")


def test_the_decoders_refuse_a_line_past_the_cap_however_it_arrives():
    for decoder in (SSEDecoder(100), NDJSONDecoder(100)):
        with pytest.raises(ResponseTooLarge, match="longer than 100 bytes"):
            for _ in range(20):
                decoder.feed(b"data: " + b"a" * 10)
    with pytest.raises(ResponseTooLarge):
        SSEDecoder(100).feed(b"data: " + b"a" * 200 + b"\r\n")  # a whole long line in one chunk
    assert SSEDecoder(100).feed(b"data: " + b"a" * 50 + b"\n\n")[0].data == b"a" * 50


def test_the_cli_stops_at_the_configured_cap(capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    settings = config.load({"adapters": {"http": {"opts": {"max_line_bytes": MiB}}}}).http
    monkeypatch.setattr(cli, "HttpClient", functools.partial(HttpClient, settings=settings))
    models = Fault(
        headers={"content-type": "application/json"}, body=[b'{"data":[{"id":"llama3.1"}]}'], framing="length"
    )

    def respond(request):
        return stream(endless_line()) if request.path.endswith("/chat/completions") else models

    with ServerThread(FaultServer(respond)) as server:
        code = cli.main(["chat", "--adapter", "openai_compatible", "--url", server.url, "hi"])
    assert code == 1
    assert "longer than 1 MiB (adapters.http.opts.max_line_bytes)" in capsys.readouterr().err


def test_the_caps_default_to_generous_values_and_are_checked():
    made = HttpClient()
    assert (made.max_line_bytes, made.max_response_bytes) == (16 * MiB, 256 * MiB)
    with pytest.raises(ConfigError, match="max_line_bytes must be a number of at least 1"):
        config.load({"adapters": {"http": {"opts": {"max_line_bytes": 0}}}})
    loaded = config.load({"adapters": {"http": {"opts": {"max_response_bytes": json.loads("1048576")}}}})
    assert loaded.http.max_response_bytes == MiB and HttpClient(settings=loaded.http).max_response_bytes == MiB
