"""Streams over real HTTP on 127.0.0.1, the canned scenarios, and failure modes."""

import asyncio
import gzip
import json

import pytest

from codecompanion_py.adapters import extend, resolve
from codecompanion_py.client import HttpClient
from codecompanion_py.demo.server import Reply, json_reply, sse_reply
from codecompanion_py.events import ErrorEvent, FinalEvent, ReasoningEvent, TokenEvent, ToolCallEvent, ToolResultEvent
from codecompanion_py.messages import Message
from codecompanion_py.stream.iterators import (
    HttpStreamIterator,
    MockStreamIterator,
    joined_tokens,
    looks_streamed,
    replay_body,
    replay_stream,
)

from ..streaming import ask
from ..waiting import async_wait_until


async def test_mock_scenarios_are_stable():
    simple = await replay_stream(MockStreamIterator("simple"))
    assert [type(e) for e in simple] == [TokenEvent, TokenEvent, FinalEvent]
    assert simple[-1].message.text == "Hello, world"
    tool = await replay_stream(MockStreamIterator("tool_call"))
    assert [type(e).__name__ for e in tool] == [
        "TokenEvent",
        "ToolCallEvent",
        "ToolCallEvent",
        "ToolCallEvent",
        "ToolResultEvent",
        "FinalEvent",
    ]
    assert "".join(e.args_fragment for e in tool if isinstance(e, ToolCallEvent)) == '{"a": 2, "b": 2}'
    assert isinstance(tool[4], ToolResultEvent) and tool[-1].message.text == "Sum is 4"
    assert await replay_stream(MockStreamIterator("tool_call")) == tool
    with pytest.raises(ValueError, match="unknown scenario"):
        MockStreamIterator("nope")


@pytest.fixture
async def client():
    # No retries: these tests check what each failure says; tests/reliability tests retrying.
    http = HttpClient(read_timeout=0.5, connect_timeout=1, retries=0)
    yield http
    await http.aclose()


def compatible(url: str, **overrides):
    return extend("openai_compatible", {"env": {"url": url}, **overrides})


async def test_http_stream_in_tiny_network_chunks_matches_the_recorded_parse(scripted_server, client, fixture_bytes):
    body = fixture_bytes("openai/tools_streaming.txt")
    tiny = Reply(
        headers={"content-type": "text/event-stream"}, chunks=[body[i : i + 7] for i in range(0, len(body), 7)]
    )
    server = await scripted_server(tiny)
    events = await ask(compatible(server.url), client)
    recorded = replay_body(resolve("openai"), body)
    final, expected = events[-1], recorded[-1]
    assert isinstance(final, FinalEvent)
    assert final.message.tool_calls == expected.message.tool_calls
    assert final.usage == expected.usage
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions" and sent.method == "POST"
    assert sent.json()["messages"] == [{"role": "user", "content": "hi"}]
    assert "authorization" not in sent.headers  # no key configured for openai_compatible


async def test_a_chunks_events_come_as_one_batch_and_the_batches_end_with_the_stream(scripted_server, client):
    frames = [{"choices": [{"index": 0, "delta": {"content": f"t{i} "}}]} for i in range(5)]
    whole = sse_reply(frames)
    whole = Reply(headers=whole.headers, chunks=[b"".join(whole.chunks)])  # the whole reply in one chunk
    server = await scripted_server(whole, sse_reply(frames, delay=0.01))

    async def batches():
        stream = HttpStreamIterator(compatible(server.url), [Message.of("user", "hi")], client=client)
        seen = []
        while batch := await stream.next_batch():
            seen.append(batch)
        assert await stream.next_batch() == []  # and stays ended
        return seen

    one = await batches()
    # the chunk's tokens at once; the reply's end (the body's end) after them
    assert [[type(e) for e in batch] for batch in one] == [[TokenEvent] * 5, [FinalEvent]]
    assert one[-1][-1].message.text == "t0 t1 t2 t3 t4 "
    several = await batches()  # chunk by chunk: the same events
    assert len(several) > 2 and [e for batch in several for e in batch] == [e for batch in one for e in batch]


def test_joined_tokens_keeps_the_order_and_the_text():
    final = FinalEvent(message=Message.of("assistant", "abc"))
    events = [
        TokenEvent(content="a", index=0),
        TokenEvent(content="b", index=1),
        ReasoningEvent(content="r"),
        TokenEvent(content="c", index=2),
        final,
    ]
    assert joined_tokens(events) == [
        TokenEvent(content="ab", index=0),
        ReasoningEvent(content="r"),
        TokenEvent(content="c", index=2),
        final,
    ]
    assert joined_tokens([]) == []


async def test_api_key_header_is_sent(scripted_server, client, monkeypatch):
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "k-123")
    server = await scripted_server(sse_reply([{"choices": [{"index": 0, "delta": {"content": "ok"}}]}]))
    await ask(compatible(server.url), client)
    assert server.requests[0].headers["authorization"] == "Bearer k-123"


async def test_a_gzip_compressed_stream_is_inflated(scripted_server, client):
    frames = b"".join(
        b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": f"w{i} "}}]}).encode() + b"\n\n"
        for i in range(50)
    )
    body = gzip.compress(frames + b"data: [DONE]\n\n")
    pieces = [body[i : i + 100] for i in range(0, len(body), 100)]
    server = await scripted_server(
        Reply(headers={"content-type": "text/event-stream", "content-encoding": "gzip"}, chunks=pieces)
    )
    events = await ask(compatible(server.url), client)
    assert "".join(e.content for e in events if isinstance(e, TokenEvent)) == "".join(f"w{i} " for i in range(50))


async def test_non_streaming_request_and_body(scripted_server, client, fixture_bytes):
    server = await scripted_server(json_reply(json.loads(fixture_bytes("openai/text_no_streaming.json"))))
    adapter = compatible(server.url, opts={"stream": False})
    events = await ask(adapter, client)
    assert events[-1].message.text == "Hello! How can I help?"
    assert "stream" not in server.requests[0].json()


@pytest.mark.parametrize(
    "status, body, expected",
    [
        (
            401,
            {"error": {"message": "Incorrect API key provided"}},
            "rejected the API key (HTTP 401): Incorrect API key provided; check the OPENAI_COMPATIBLE_API_KEY environment variable",
        ),
        (429, {"error": {"message": "Rate limit reached"}}, "rate limited (HTTP 429): Rate limit reached"),
        (
            404,
            {"error": {"message": "The model 'x' does not exist"}},
            "not found (HTTP 404): The model 'x' does not exist",
        ),
        (503, "upstream overloaded", "server error (HTTP 503): upstream overloaded"),
    ],
)
async def test_http_errors_carry_the_provider_message(scripted_server, client, status, body, expected):
    chunks = [json.dumps(body).encode() if isinstance(body, dict) else body.encode()]
    server = await scripted_server(Reply(status=status, chunks=chunks))
    events = await ask(compatible(server.url), client)
    assert len(events) == 1 and isinstance(events[0], ErrorEvent)
    assert expected in events[0].message
    assert events[0].status == status


async def test_401_names_the_environment_variable_never_the_key(scripted_server, client, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-secret")
    server = await scripted_server(Reply(status=401, chunks=[b'{"error":{"message":"bad key"}}']))
    adapter = resolve("openai")
    adapter.url = server.url + "/v1/chat/completions"
    events = await ask(adapter, client)
    assert "check the OPENAI_API_KEY environment variable" in events[0].message
    assert "sk-live-secret" not in events[0].message


async def test_connection_refused_is_a_clear_error(client):
    events = await ask(compatible("http://127.0.0.1:9"), client)
    assert isinstance(events[0], ErrorEvent) and "cannot connect to http://127.0.0.1:9" in events[0].message


async def test_a_silent_server_times_out(scripted_server, client):
    server = await scripted_server(
        Reply(
            headers={"content-type": "text/event-stream"},
            chunks=[b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'],
            hang=True,
        )
    )
    events = await ask(compatible(server.url), client)
    assert [type(e) for e in events] == [TokenEvent, ErrorEvent]
    assert "no data from the server for 0.5s" in events[-1].message


async def test_cancelling_closes_the_connection_promptly(scripted_server, client):
    slow = sse_reply([{"choices": [{"index": 0, "delta": {"content": f"w{i} "}}]} for i in range(500)], delay=0.01)
    server = await scripted_server(slow)
    stream = HttpStreamIterator(compatible(server.url), [Message.of("user", "go")], client=client)
    seen = []

    async def consume():
        async for event in stream:
            seen.append(event)

    task = asyncio.create_task(consume())
    await async_wait_until(lambda: len(seen) >= 5, 15, "five events")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await stream.close()
    for _ in range(100):
        if server.disconnects:
            break
        await asyncio.sleep(0.01)
    assert server.disconnects == 1
    assert stream.partial_message().text.startswith("w0 w1 w2 w3 w4")


async def test_missing_key_fails_before_any_request(scripted_server, client, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = await scripted_server()
    adapter = resolve("openai")
    adapter.url = server.url
    events = await ask(adapter, client)
    assert "OPENAI_API_KEY" in events[0].message and not server.requests


async def test_on_exit_is_told_how_the_request_ended(scripted_server, client):
    statuses = []
    server = await scripted_server(
        sse_reply([{"choices": [{"index": 0, "delta": {"content": "ok"}}]}]), Reply(status=500, chunks=[b"boom"])
    )
    adapter = compatible(
        server.url, handlers={"lifecycle": {"on_exit": lambda self, data: statuses.append(data["status"])}}
    )
    await ask(adapter, client)
    await ask(adapter, client)
    assert statuses == ["success", "error"]


def test_replay_tells_a_stream_from_a_whole_body():
    ollama, openai = resolve("ollama"), resolve("openai")
    assert looks_streamed(ollama, b'{"message": {"content": "a"}, "done": false}\n{"done": true}\n')
    assert not looks_streamed(ollama, b'{\n  "message": {\n    "content": "a"\n  },\n  "done": true\n}\n')
    assert not looks_streamed(ollama, b'{"message": {"content": "a"}, "done": true}\n')
    assert looks_streamed(openai, b'data: {"choices": []}\n\ndata: [DONE]\n\n')
    assert not looks_streamed(openai, b'{\n  "choices": []\n}\n')
