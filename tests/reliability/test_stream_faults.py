"""Streams that end wrong, over real sockets: cut off before the provider's own end marker
(for every wire format, text and tool calls), reset or closed mid-body, an HTML page where
the API should answer, bytes that are not UTF-8. A cut-off reply is an error, never a
complete answer: its tool calls are not run, its text is kept in the history marked
incomplete, and the command line exits non-zero."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pytest

from codecompanion_py import cli
from codecompanion_py.adapters import extend, resolve
from codecompanion_py.adapters.http import copilot
from codecompanion_py.chat.session import ChatSession
from codecompanion_py.client import HttpClient
from codecompanion_py.demo.server import ServerThread
from codecompanion_py.events import ErrorEvent, FinalEvent, TokenEvent, ToolCallEvent
from codecompanion_py.messages import Message, ToolSpec
from codecompanion_py.stream.iterators import HttpStreamIterator
from codecompanion_py.tools.registry import ToolSettings

from ..chat.test_session import Recorder
from ..streaming import chat_at
from .fault_server import Fault, FaultServer, events, sse, stream

KEY = "sk-reliability-0123456789abcdef"
READ = {"path": "a.py"}


def read_call(arguments: str) -> dict:
    """The Responses API's item for a call of read_file with `arguments` (so far)."""
    return {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read_file", "arguments": arguments}


TOOLS = [ToolSpec(name="read_file", parameters={"type": "object", "properties": {"path": {"type": "string"}}})]


def ndjson(*lines: dict[str, Any]) -> list[bytes]:
    return [json.dumps(line).encode() + b"\n" for line in lines]


def openai_delta(**delta: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}


def openai_finish(reason: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}


OPENAI_CALL = openai_delta(
    tool_calls=[
        {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps(READ)},
        }
    ]
)


def gemini(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


ANTHROPIC_START = {"type": "message_start", "message": {"content": [], "usage": {"input_tokens": 3}}}
ANTHROPIC_END = [
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
    {"type": "message_stop"},
]
RESPONSES_DONE = {"type": "response.completed", "response": {"status": "completed"}}

# adapter -> kind -> (the frames that arrive, the end marker the provider would have sent after them)
STREAMS: dict[str, dict[str, tuple[list[bytes], list[bytes]]]] = {
    "openai": {
        "text": (
            sse(openai_delta(role="assistant", content="Hello"), openai_delta(content=" world"), done=False),
            sse(openai_finish("stop")),
        ),
        "tool_call": (sse(OPENAI_CALL, done=False), sse(openai_finish("tool_calls"))),
    },
    "anthropic": {
        "text": (
            events(
                ANTHROPIC_START,
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}},
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " world"}},
            ),
            events(*ANTHROPIC_END),
        ),
        "tool_call": (
            events(
                ANTHROPIC_START,
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}},
                },
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": json.dumps(READ)},
                },
            ),
            events(*ANTHROPIC_END),
        ),
    },
    "gemini": {
        "text": (
            sse(gemini([{"text": "Hello"}]), gemini([{"text": " world"}]), done=False),
            sse(gemini([{"text": ""}], "STOP"), done=False),
        ),
        "tool_call": (
            sse(gemini([{"functionCall": {"name": "read_file", "args": READ}}]), done=False),
            sse(gemini([{"text": ""}], "STOP"), done=False),
        ),
    },
    "ollama": {
        "text": (
            ndjson(
                {"message": {"role": "assistant", "content": "Hello"}, "done": False},
                {"message": {"role": "assistant", "content": " world"}, "done": False},
            ),
            ndjson({"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"}),
        ),
        "tool_call": (
            ndjson(
                {
                    "message": {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [{"function": {"name": "read_file", "arguments": READ}}],
                    },
                    "done": False,
                }
            ),
            ndjson({"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"}),
        ),
    },
    "openai_responses": {
        "text": (
            events(
                {"type": "response.created", "response": {"status": "in_progress"}},
                {"type": "response.output_text.delta", "output_index": 0, "delta": "Hello"},
                {"type": "response.output_text.delta", "output_index": 0, "delta": " world"},
            ),
            events(RESPONSES_DONE),
        ),
        "tool_call": (
            events(
                {"type": "response.output_item.added", "output_index": 0, "item": read_call("")},
                {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": json.dumps(READ)},
                {
                    "type": "response.output_item.done",
                    "output_index": 0,
                    "item": read_call(json.dumps(READ)),
                },
            ),
            events(RESPONSES_DONE),
        ),
    },
}
STREAMS["copilot_chat"] = STREAMS["openai"]
STREAMS["copilot_responses"] = STREAMS["openai_responses"]
KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "openai_responses": "OPENAI_API_KEY",
}
CASES = [(adapter, kind) for adapter in STREAMS for kind in ("text", "tool_call")]


@pytest.fixture
def point(monkeypatch, tmp_path):
    """The adapter `name` as its user configures it, sending to the local server."""
    copilot.clear_caches()
    for name in ("GITHUB_COPILOT_TOKEN", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)

    def configure(name: str, url: str):
        if name.startswith("copilot"):
            monkeypatch.setenv("GH_COPILOT_TOKEN", "gho_fault_server_login_0123456789")
            endpoint = "responses" if name.endswith("responses") else "chat/completions"
            return extend("copilot", {"opts": {"token_url": url + "/copilot_internal/v2/token", "endpoint": endpoint}})
        if name in KEY_ENV:
            monkeypatch.setenv(KEY_ENV[name], KEY)
        adapter = resolve(name)
        if name == "ollama":
            monkeypatch.setenv("OLLAMA_HOST", url)
        else:  # the provider's own host replaced, its path and placeholders kept
            adapter.url = url + "/" + adapter.url.split("/", 3)[3]
        return adapter

    yield configure
    copilot.clear_caches()


def provider_reply(adapter: str, body: list[bytes]):
    """The responder: Copilot's token exchange when asked, else the stream."""
    kind = "application/x-ndjson" if adapter == "ollama" else "text/event-stream"

    def respond(request):
        if request.path.endswith("/copilot_internal/v2/token"):
            token = {"token": "tid=copilot-fault", "expires_at": 4102444800, "endpoints": {"api": server.url}}
            return Fault(
                headers={"content-type": "application/json"}, body=[json.dumps(token).encode()], framing="length"
            )
        return stream(body, kind)

    server = FaultServer(respond)
    return server


async def run(adapter, client, tools=TOOLS) -> tuple[list[Any], HttpStreamIterator]:
    iterator = HttpStreamIterator(adapter, [Message.of("user", "read a.py")], client=client, tools=tools)
    return [event async for event in iterator], iterator


@pytest.mark.parametrize("adapter, kind", CASES, ids=[f"{a}-{k}" for a, k in CASES])
async def test_a_stream_with_its_end_marker_is_whole(adapter, kind, client, point):
    frames, end = STREAMS[adapter][kind]
    async with provider_reply(adapter, frames + end) as server:
        got, _ = await run(point(adapter, server.url), client)
    final = got[-1]
    assert isinstance(final, FinalEvent), final
    if kind == "text":
        assert final.message.text == "Hello world"
    else:
        assert [(c.name, c.arguments) for c in final.message.tool_calls] == [("read_file", READ)]


@pytest.mark.parametrize("adapter, kind", CASES, ids=[f"{a}-{k}" for a, k in CASES])
async def test_a_stream_cut_before_its_end_marker_is_an_error(adapter, kind, client, point):
    frames, _ = STREAMS[adapter][kind]
    size = sum(len(f) for f in frames)
    async with provider_reply(adapter, frames) as server:
        got, iterator = await run(point(adapter, server.url), client)
    error = got[-1]
    assert isinstance(error, ErrorEvent), error
    assert error.kind == "IncompleteResponse"
    assert f"the response was cut off after {size} bytes" in error.message
    assert not any(isinstance(e, FinalEvent) for e in got)
    assert not any(isinstance(e, ToolCallEvent) and e.is_final for e in got)  # nothing to run
    partial = iterator.partial_message()
    if kind == "tool_call":
        assert "its tool calls were not run" in error.message
        assert partial is None  # no text; and tool calls never go into the history
    else:
        assert "".join(e.content for e in got if isinstance(e, TokenEvent)) == "Hello world"
        assert partial is not None and partial.text == "Hello world" and not partial.tool_calls
        assert partial.parts[-1].provider_data == {"incomplete": True, "error": error.message}


# --- in the chat: the tool is not run ----------------------------------------------------


class Editor:
    """Answers read_file's buffer question (no buffer: read the disk) and records it."""

    def __init__(self):
        self.calls = []

    reviews_edits = False  # no diff review after a write here

    async def call(self, method, args):
        self.calls.append(method)
        return None


async def chat_over(server: FaultServer, tmp_path) -> tuple[ChatSession, Editor, HttpClient]:
    (tmp_path / "a.py").write_text("print('a')\n")
    client = HttpClient(retries=0)
    settings = ToolSettings.from_config({"opts": {"default_tools": ["read_file"]}})
    editor = Editor()
    session = chat_at(server.url, tmp_path, client, Recorder(), tools=settings, editor=editor)
    return session, editor, client


CALL_A = openai_delta(
    tool_calls=[
        {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"filepath": "a.py"})},
        }
    ]
)


async def test_the_chat_runs_a_tool_call_that_ended_properly(tmp_path):
    server = FaultServer.sequence(
        stream(sse(CALL_A, openai_finish("tool_calls"))),
        stream(sse(openai_delta(content="It prints a."), openai_finish("stop"))),
    )
    async with server:
        session, editor, client = await chat_over(server, tmp_path)
        try:
            await session.submit("what does a.py print?")
        finally:
            await client.aclose()
    assert session.view.sink.ops[-1]["status"] == "success"
    assert editor.calls == ["buffer.get"]  # read_file ran
    assert "print('a')" in session.history[-2].tool_results[0].content


async def test_the_chat_does_not_run_a_tool_call_from_a_cut_off_stream(tmp_path):
    async with FaultServer.sequence(stream(sse(CALL_A, done=False))) as server:
        session, editor, client = await chat_over(server, tmp_path)
        try:
            await session.submit("what does a.py print?")
        finally:
            await client.aclose()
    done = session.view.sink.ops[-1]
    assert done["status"] == "error" and "the response was cut off after" in done["message"]
    assert "its tool calls were not run" in done["message"]
    assert editor.calls == []  # read_file never ran
    assert not any(op["op"] in ("tool_call", "tool_output") for op in session.view.sink.ops)
    assert not any(m.tool_calls or m.tool_results for m in session.history)
    assert len(server.requests) == 1


async def test_the_chat_keeps_cut_off_text_marked_incomplete_and_goes_on(tmp_path):
    server = FaultServer.sequence(
        stream(sse(openai_delta(content="The answer is"), done=False)),
        stream(sse(openai_delta(content="42."), openai_finish("stop"))),
    )
    async with server:
        session, _, client = await chat_over(server, tmp_path)
        try:
            await session.submit("question")
            done = session.view.sink.ops[-1]
            assert done["status"] == "error" and "cut off" in done["message"]
            partial = session.history[-1]
            assert partial.role == "assistant" and partial.text == "The answer is"
            assert partial.parts[-1].provider_data["incomplete"] is True
            await session.submit("go on")
        finally:
            await client.aclose()
    assert session.view.sink.ops[-1]["status"] == "success"
    sent = server.requests[1].json()["messages"]
    assert [m["role"] for m in sent][-3:] == ["user", "assistant", "user"] and sent[-2]["content"] == "The answer is"


# --- the command line ------------------------------------------------------------------


@pytest.mark.parametrize("end, code", [(True, 0), (False, 1)], ids=["whole", "cut_off"])
def test_the_cli_exits_non_zero_for_a_cut_off_reply(end, code, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    frames = sse(openai_delta(content="Hello"), *([openai_finish("stop")] if end else []), done=end)
    models = Fault(
        headers={"content-type": "application/json"}, body=[b'{"data":[{"id":"llama3.1"}]}'], framing="length"
    )

    def respond(request):
        return stream(frames) if request.path.endswith("/chat/completions") else models

    with ServerThread(FaultServer(respond)) as server:
        status = cli.main(["chat", "--adapter", "openai_compatible", "--url", server.url, "hi"])
    out, err = capsys.readouterr()
    assert status == code
    assert out.startswith("Hello")
    assert ("cut off" in err) is (not end)


# --- broken connections, HTML, bad bytes -----------------------------------------------

TEXT = sse(openai_delta(content="Hello"), openai_delta(content=" world"), done=False)


def compatible(url: str):
    return extend("openai_compatible", {"env": {"url": url, "api_key": KEY}})


async def test_a_connection_reset_mid_stream_says_so_with_the_bytes_received(client):
    async with FaultServer.sequence(stream(TEXT, end="reset", pause=0.2)) as server:
        got, iterator = await run(compatible(server.url), client, tools=None)
    error = got[-1]
    assert isinstance(error, ErrorEvent) and error.kind == "IncompleteResponse"
    match = re.fullmatch(r"OpenAI Compatible: the connection was reset by the server after (\d+) bytes", error.message)
    assert match and int(match.group(1)) == sum(len(f) for f in TEXT)
    assert iterator.partial_message().text == "Hello world"


async def test_a_connection_closed_mid_body_says_so_with_the_bytes_received(client):
    async with FaultServer.sequence(stream(TEXT, end="close", pause=0.1)) as server:
        got, _ = await run(compatible(server.url), client, tools=None)
    error = got[-1]
    assert isinstance(error, ErrorEvent) and error.kind == "IncompleteResponse"
    assert error.message == (
        f"OpenAI Compatible: the server closed the connection in the middle of the response, "
        f"after {sum(len(f) for f in TEXT)} bytes"
    )


PAGE = b"<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>portal</body></html>\n"


@pytest.mark.parametrize("content_type", ["text/html; charset=utf-8", "text/event-stream"])
async def test_an_html_page_with_status_200_says_to_check_the_url(content_type, client):
    async with FaultServer.sequence(stream([PAGE], content_type)) as server:
        got, _ = await run(compatible(server.url), client, tools=None)
    assert len(got) == 1 and isinstance(got[0], ErrorEvent)
    assert got[0].message == (
        "OpenAI Compatible: the server answered with an HTML page (Sign in), not the "
        f"provider's API: check the URL {server.url}/v1/chat/completions"
    )


async def test_invalid_utf8_is_shown_with_replacement_characters(client, caplog):
    frames = [b'data: {"choices":[{"index":0,"delta":{"content":"caf\xe9 \xff ok"}}]}\n\n', *sse(openai_finish("stop"))]
    with caplog.at_level(logging.WARNING):
        async with FaultServer.sequence(stream(frames)) as server:
            got, _ = await run(compatible(server.url), client, tools=None)
    final = got[-1]
    assert isinstance(final, FinalEvent), final
    assert final.message.text == "caf\ufffd \ufffd ok"
    assert not caplog.records  # no traceback logged


async def test_a_json_error_body_with_status_200_is_said_as_such(client):
    body = json.dumps({"error": {"message": "model is loading"}}).encode()
    async with FaultServer.sequence(stream([body], "application/json")) as server:
        got, _ = await run(compatible(server.url), client, tools=None)
    assert (
        got[-1].message == f"OpenAI Compatible: the answer is not an event stream ({len(body)} bytes): model is loading"
    )


async def test_an_empty_200_body_is_an_error(client):
    async with FaultServer.sequence(stream([])) as server:
        got, _ = await run(compatible(server.url), client, tools=None)
    assert got[-1].kind == "IncompleteResponse" and "the response was empty (0 bytes)" in got[-1].message


def test_an_adapter_without_end_markers_can_say_so():
    from codecompanion_py.stream.iterators import replay_body

    body = b"".join(sse(openai_delta(content="ok"), done=False))
    assert isinstance(replay_body(resolve("openai"), body)[-1], ErrorEvent)
    lenient = extend("openai", {"opts": {"require_stream_end": False}})
    assert replay_body(lenient, body)[-1].message.text == "ok"
