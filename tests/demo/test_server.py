"""The scripted provider server, over real TCP sockets with httpx."""

from __future__ import annotations

import asyncio
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from codecompanion_py.demo.bench_server import openai_stream_frames
from codecompanion_py.demo.server import Reply, ScriptedServer, ServerThread, json_reply, sse_reply
from tests.waiting import async_wait_until

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
async def serve():
    servers: list[ScriptedServer] = []

    async def start(server: ScriptedServer) -> ScriptedServer:
        await server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await asyncio.wait_for(server.close(), 5)


async def raw_exchange(url: str, request: bytes) -> bytes:
    """Send `request` on a fresh socket and read until the server closes it."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(request)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    return data


def parse_chunked(body: bytes) -> list[bytes]:
    """The HTTP chunks of a chunked body, exactly as framed on the wire."""
    chunks, pos = [], 0
    while True:
        end = body.index(b"\r\n", pos)
        size = int(body[pos:end], 16)
        if size == 0:
            assert body[end:] == b"\r\n\r\n", "bytes after the last chunk"
            return chunks
        chunks.append(body[end + 2 : end + 2 + size])
        assert body[end + 2 + size : end + 4 + size] == b"\r\n"
        pos = end + 4 + size


# -- reply builders ------------------------------------------------------------------


def test_sse_reply_and_json_reply_build_the_expected_bytes():
    reply = sse_reply([{"a": 1, "b": [True, None]}, "plain text", b"raw"], delay=0.25)
    assert reply.chunks == [
        b'data: {"a":1,"b":[true,null]}\n\n',
        b"data: plain text\n\n",
        b"data: raw\n\n",
        b"data: [DONE]\n\n",
    ]
    assert reply.headers == {"content-type": "text/event-stream"} and reply.delay == 0.25
    assert sse_reply(["x"], done=False).chunks == [b"data: x\n\n"]

    body = json_reply({"error": {"message": "nope"}}, status=429)
    assert body.status == 429 and body.headers["content-type"] == "application/json"
    assert json.loads(b"".join(body.chunks)) == {"error": {"message": "nope"}}
    assert body.length == len(b"".join(body.chunks))


def test_openai_stream_frames_shape():
    frames = openai_stream_frames(3, model="m-x")
    assert frames[-1] == b"data: [DONE]\n\n" and len(frames) == 3 + 4
    chunks = [json.loads(f.removeprefix(b"data: ")) for f in frames[:-1]]
    assert [c["choices"][0]["delta"] for c in chunks[:4]] == [
        {"role": "assistant", "content": ""},
        {"content": "tok0 "},
        {"content": "tok1 "},
        {"content": "tok2 "},
    ]
    assert chunks[4]["choices"] == [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}]
    assert chunks[5]["choices"] == [] and chunks[5]["usage"]["completion_tokens"] == 3
    assert {c["model"] for c in chunks} == {"m-x"}
    lines = openai_stream_frames(10, line_every=2)
    assert b'"tok1\\n"' in lines[2] and b'"tok9\\n\\n"' in lines[10] and b'"tok0 "' in lines[1]


# -- streaming -----------------------------------------------------------------------


async def test_paced_stream_arrives_frame_by_frame(serve):
    reply = sse_reply([{"choices": [{"index": 0, "delta": {"content": f"w{i}"}}]} for i in range(4)], delay=0.05)
    server = await serve(ScriptedServer(lambda request: reply))
    arrivals: list[tuple[float, bytes]] = []
    async with httpx.AsyncClient() as client:
        asked = time.monotonic()
        async with client.stream("POST", f"{server.url}/v1/chat/completions", json={"stream": True}) as response:
            assert response.status_code == 200
            assert response.headers["content-type"] == "text/event-stream"
            assert response.headers["transfer-encoding"] == "chunked" and "content-length" not in response.headers
            async for raw in response.aiter_raw():
                arrivals.append((time.monotonic(), raw))
    assert [raw for _, raw in arrivals] == list(reply.chunks)  # one piece per frame, in order
    # frame k cannot arrive before the k pauses before it were slept: a lower bound holds on
    # any machine, where gaps between arrivals do not (a stalled client reads two frames close together)
    early = [(k, round(at - asked, 3)) for k, (at, _) in enumerate(arrivals) if at - asked < k * reply.delay - 0.001]
    assert not early, f"frames arrived before their pauses were slept: {early}"


async def test_unpaced_stream_is_one_http_chunk_per_frame(serve):
    frames = [b"data: %d\n\n" % i for i in range(3000)]
    server = await serve(ScriptedServer(lambda request: Reply(chunks=[frames[0], b"", *frames[1:]])))
    wire = await raw_exchange(server.url, b"GET /s HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
    head, _, body = wire.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"transfer-encoding: chunked" in head.lower() and b"connection: close" in head.lower()
    assert parse_chunked(body) == frames  # the empty chunk did not end the body early


# -- requests ------------------------------------------------------------------------


async def test_requests_are_recorded(serve):
    server = await serve(ScriptedServer(lambda request: json_reply({"ok": True})))
    body = {"model": "m", "messages": [{"role": "user", "content": "héllo"}], "stream": False}
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"{server.url}/v1/chat/completions?beta=1",
            json=body,
            headers={"Authorization": "Bearer k-1", "X-Trace-ID": "abc"},
        )
        assert response.json() == {"ok": True}
        assert response.headers["content-length"] == str(len(response.content))
        assert "transfer-encoding" not in response.headers
        await client.get(f"{server.url}/v1/models")
    first, second = server.requests
    assert (first.method, first.path) == ("POST", "/v1/chat/completions?beta=1")
    assert first.headers["authorization"] == "Bearer k-1" and first.headers["x-trace-id"] == "abc"
    assert all(name == name.lower() for name in first.headers)
    assert first.json() == body and json.loads(first.body) == body
    assert (second.method, second.path, second.body, second.json()) == ("GET", "/v1/models", b"", None)


async def test_chunked_request_body_is_read(serve):
    server = await serve(ScriptedServer(lambda request: json_reply({"got": len(request.body)})))

    async def parts():
        for piece in (b'{"messages": ', b"[1, 2, 3]", b"}"):
            yield piece

    async with httpx.AsyncClient() as client:
        response = await client.post(f"{server.url}/up", content=parts())
        again = await client.post(f"{server.url}/up", json=[1])  # the connection is still in step
    assert response.json() == {"got": 23} and again.json() == {"got": 3}
    assert server.requests[0].headers["transfer-encoding"] == "chunked"
    assert server.requests[0].json() == {"messages": [1, 2, 3]}


async def test_bad_request_gets_400_and_the_server_keeps_serving(serve):
    server = await serve(ScriptedServer(lambda request: json_reply({"ok": True})))
    wire = await raw_exchange(server.url, b"NONSENSE\r\n\r\n")
    assert wire.startswith(b"HTTP/1.1 400 Bad Request\r\n") and b"malformed request line" in wire
    async with httpx.AsyncClient() as client:
        assert (await client.get(server.url)).json() == {"ok": True}
    assert len(server.requests) == 1


# -- scripts, connections, failures --------------------------------------------------


async def test_sequence_serves_in_order_then_500s(serve):
    verbatim = Reply(headers={"content-length": "5"}, chunks=[b"he", b"llo"])
    server = await serve(ScriptedServer.sequence([json_reply({"n": 1}), sse_reply(["two"], done=False), verbatim]))
    async with httpx.AsyncClient() as client:
        responses = [await client.post(f"{server.url}/v1/chat/completions", json={"i": i}) for i in range(5)]
    assert responses[0].json() == {"n": 1}
    assert responses[1].text == "data: two\n\n"
    assert responses[2].text == "hello" and "transfer-encoding" not in responses[2].headers
    for extra in responses[3:]:
        assert extra.status_code == 500 and "ran out" in extra.json()["error"]["message"]
    assert [r.json()["i"] for r in server.requests] == [0, 1, 2, 3, 4]


async def test_keep_alive_serves_several_requests_on_one_connection(serve):
    server = await serve(ScriptedServer(lambda request: sse_reply(["x"])))

    async def post(client: httpx.AsyncClient, path: str, **kwargs) -> tuple[int, httpx.Response]:
        """The local port of the connection the request went over, and the response."""
        async with client.stream("POST", f"{server.url}{path}", json={}, **kwargs) as response:
            port = response.extensions["network_stream"].get_extra_info("client_addr")[1]
            await response.aread()
        return port, response

    async with httpx.AsyncClient() as client:
        (port1, first), (port2, second) = await post(client, "/a"), await post(client, "/b")
        port3, closing = await post(client, "/c", headers={"connection": "close"})
        port4, after = await post(client, "/d")
    assert first.text == second.text == after.text == "data: x\n\ndata: [DONE]\n\n"
    assert port1 == port2 == port3
    assert closing.headers["connection"] == "close" and "connection" not in second.headers
    assert port4 != port3  # the server closed that connection, as asked


async def test_responder_exception_is_a_500_json_error(serve):
    calls = []

    async def responder(request):
        calls.append(request.path)
        if len(calls) == 1:
            raise RuntimeError("the script broke")
        return json_reply({"fine": True})

    server = await serve(ScriptedServer(responder))
    async with httpx.AsyncClient() as client:
        failed = await client.post(f"{server.url}/x", json={})
        fine = await client.post(f"{server.url}/y", json={})
    assert failed.status_code == 500 and failed.headers["content-type"] == "application/json"
    assert failed.json() == {"error": {"message": "the script broke"}}
    assert fine.json() == {"fine": True} and len(server.requests) == 2


async def test_hang_gives_a_read_timeout_and_counts_the_disconnect(serve):
    server = await serve(
        ScriptedServer.sequence(
            [Reply(headers={"content-type": "text/event-stream"}, chunks=[b"data: first\n\n"], hang=True)]
        )
    )
    async with httpx.AsyncClient(timeout=httpx.Timeout(5.0, read=0.2)) as client:
        async with client.stream("POST", f"{server.url}/v1/chat/completions", json={}) as response:
            pieces = response.aiter_raw()
            assert await pieces.__anext__() == b"data: first\n\n"
            await asyncio.sleep(0.05)
            assert server.disconnects == 0  # hanging, not finished and not abandoned
            with pytest.raises(httpx.ReadTimeout):
                await pieces.__anext__()
    await async_wait_until(
        lambda: server.disconnects == 1, message=lambda: f"one disconnect; counted {server.disconnects}"
    )


async def test_client_leaving_a_paced_stream_counts_a_disconnect(serve):
    slow = sse_reply([f"w{i}" for i in range(200)], delay=0.02)
    server = await serve(ScriptedServer.sequence([slow, json_reply({"next": 1})]))
    async with httpx.AsyncClient() as client:
        async with client.stream("POST", f"{server.url}/s", json={}) as response:
            seen = []
            async for raw in response.aiter_raw():
                seen.append(raw)
                if len(seen) == 3:
                    break
            # still connected here; once the response closes, the server may count the
            # disconnect at any moment, so this is the place to check that none was counted
            assert seen == slow.chunks[:3] and server.disconnects == 0
        await async_wait_until(
            lambda: server.disconnects == 1, message=lambda: f"one disconnect; counted {server.disconnects}"
        )
        assert (await client.post(f"{server.url}/n", json={})).json() == {"next": 1}
    assert server.disconnects == 1


async def test_close_drops_hanging_connections_without_counting_them(serve):
    server = await serve(ScriptedServer(lambda request: Reply(chunks=[b"data: a\n\n"], hang=True)))
    async with httpx.AsyncClient(timeout=5) as client:
        async with client.stream("GET", server.url) as response:
            pieces = response.aiter_raw()
            assert await pieces.__anext__() == b"data: a\n\n"
            await asyncio.wait_for(server.close(), 2)
            with pytest.raises(httpx.RemoteProtocolError):
                await pieces.__anext__()
        with pytest.raises(httpx.ConnectError):
            await client.get(server.url)
    assert server.disconnects == 0


# -- synchronous callers and the CLI -------------------------------------------------


def test_server_thread_serves_sync_callers():
    thread = ServerThread(ScriptedServer.sequence([json_reply({"sync": True}), sse_reply(["s"])]))
    with thread as server:
        with httpx.Client() as client:
            assert client.post(f"{server.url}/v1/x", json={"q": 1}).json() == {"sync": True}
            with client.stream("POST", f"{server.url}/v1/y", json={}) as response:
                assert list(response.iter_lines()) == ["data: s", "", "data: [DONE]", ""]
        assert [r.json() for r in server.requests] == [{"q": 1}, {}]
        url = server.url
    assert thread.loop.is_closed() and not thread._thread.is_alive()
    with pytest.raises(httpx.ConnectError):
        httpx.get(url)


def test_bench_cli_serves_an_openai_stream():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # READY must be flushed by itself
    proc = subprocess.Popen(
        [sys.executable, "-m", "codecompanion_py.demo.bench_server", "--bench-chunks", "25"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 10)
        assert ready, "no READY line within 10 s"
        line = proc.stdout.readline()
        assert line.startswith("READY http://127.0.0.1:"), line
        url = line.split()[1]
        with httpx.Client(timeout=5) as client:
            bodies = []
            for _ in range(2):
                with client.stream("POST", f"{url}/v1/chat/completions", json={"stream": True}) as response:
                    assert response.headers["content-type"] == "text/event-stream"
                    assert response.headers["transfer-encoding"] == "chunked"
                    bodies.append(response.read())
            assert client.get(f"{url}/v1/models").status_code == 405
        assert bodies[0] == bodies[1]
        frames = bodies[0].split(b"\n\n")
        assert frames.pop() == b"" and frames.pop() == b"data: [DONE]"
        chunks = [json.loads(f.removeprefix(b"data: ")) for f in frames]
        assert len(chunks) == 1 + 25 + 2
        for chunk in chunks:
            assert chunk["object"] == "chat.completion.chunk" and chunk["id"] and chunk["model"]
            assert isinstance(chunk["created"], int)
        for chunk in chunks[:-1]:
            (choice,) = chunk["choices"]
            assert set(choice) == {"index", "delta", "logprobs", "finish_reason"}
        assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
        assert [c["choices"][0]["delta"]["content"] for c in chunks[1:26]] == [f"tok{i} " for i in range(25)]
        assert chunks[26]["choices"][0]["finish_reason"] == "stop"
        usage = chunks[27]["usage"]
        assert chunks[27]["choices"] == [] and usage["completion_tokens"] == 25
        assert usage["total_tokens"] == usage["prompt_tokens"] + 25
    finally:
        proc.kill()
        proc.wait(timeout=5)
        proc.stdout.close()
    assert proc.returncode != 0  # killed, not exited on its own
