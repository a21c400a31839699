"""Anthropic Messages, from fixtures written from the documented wire format, through the
handlers and through a real local server."""

import json

import msgspec
import pytest

from codecompanion_py.adapters import call_handler, extend, resolve
from codecompanion_py.adapters.request import build_request
from codecompanion_py.demo.server import Reply
from codecompanion_py.events import ErrorEvent, ReasoningEvent, TokenEvent
from codecompanion_py.messages import ImagePart, Message, ReasoningPart, TextPart, ToolResultPart, ToolSpec
from codecompanion_py.stream.iterators import replay_body

from ..streaming import ask, final_of, in_pieces


@pytest.fixture
def anthropic():
    return resolve("anthropic")


def test_thinking_then_text_with_signature_and_merged_usage(anthropic, fixture_bytes):
    events = replay_body(anthropic, fixture_bytes("anthropic/thinking_streaming.txt"))
    assert (
        "".join(e.content for e in events if isinstance(e, ReasoningEvent))
        == "The user wants a greeting. Keep it short."
    )
    assert "".join(e.content for e in events if isinstance(e, TokenEvent)) == "Hello there! 👋"
    final = final_of(events)
    reasoning = final.message.parts[0]
    assert isinstance(reasoning, ReasoningPart)
    assert reasoning.provider_data == {"anthropic": {"signature": "EqQBCkYIARgCIkB3sig=="}}
    assert final.finish_reason == "stop"
    # input from message_start (12 + 30 cached), output from message_delta
    assert (final.usage.prompt_tokens, final.usage.completion_tokens, final.usage.total_tokens) == (42, 30, 72)
    assert final.usage.cached_tokens == 30


def test_parallel_tool_use_blocks(anthropic, fixture_bytes):
    final = final_of(replay_body(anthropic, fixture_bytes("anthropic/tools_streaming.txt")))
    assert final.message.text == "Checking both cities."
    assert [(c.id, c.name, c.arguments) for c in final.message.tool_calls] == [
        ("toolu_01NR", "get_weather", {"location": "London"}),
        ("toolu_02XY", "get_weather", {"location": "Paris"}),
        ("toolu_03NA", "list_files", {}),
    ]
    assert final.finish_reason == "tool_calls" and final.usage.completion_tokens == 65


def test_error_event_mid_stream_keeps_the_partial_text(anthropic, fixture_bytes):
    events = replay_body(anthropic, fixture_bytes("anthropic/error_streaming.txt"))
    assert [e.content for e in events if isinstance(e, TokenEvent)] == ["Partial"]
    assert isinstance(events[-1], ErrorEvent) and events[-1].message == "Anthropic: Overloaded (overloaded_error)"


def test_redacted_thinking_is_kept_opaque(anthropic, fixture_bytes):
    final = final_of(replay_body(anthropic, fixture_bytes("anthropic/redacted_thinking_streaming.txt")))
    assert final.message.parts[0] == ReasoningPart(text="", provider_data={"anthropic": {"redacted": "EqkEredacted"}})
    assert final.message.text == "Done."


def test_non_streamed_message_body(anthropic, fixture_bytes):
    final = final_of(replay_body(anthropic, fixture_bytes("anthropic/tools_no_streaming.json")))
    assert final.message.reasoning == "Need the weather."
    assert final.message.parts[0].provider_data == {"anthropic": {"signature": "sigABC"}}
    assert final.message.tool_calls[0].arguments == {"location": "Rome"}
    assert final.usage.total_tokens == 70
    assert call_handler(anthropic, "parse_tokens", fixture_bytes("anthropic/tools_no_streaming.json")) == 70


def test_history_round_trips_to_the_wire_with_signatures_tools_images_and_cache_points(anthropic, fixture_bytes):
    reply = final_of(replay_body(anthropic, fixture_bytes("anthropic/tools_no_streaming.json"))).message
    history = [
        Message.of("system", "be brief"),
        Message(
            role="user", parts=(TextPart(text="weather in this city?"), ImagePart(data="QUJD", media_type="image/jpeg"))
        ),
        reply,
        Message(role="tool", parts=(ToolResultPart(tool_call_id="toolu_A", name="get_weather", content="sunny"),)),
        Message(
            role="tool",
            parts=(ToolResultPart(tool_call_id="toolu_B", name="get_weather", content="boom", status="error"),),
        ),
    ]
    body = call_handler(anthropic, "build_messages", history)
    assert body["system"] == [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]
    user, assistant, results = body["messages"]
    assert user["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/jpeg", "data": "QUJD"},
        "cache_control": {"type": "ephemeral"},
    }
    assert assistant == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Need the weather.", "signature": "sigABC"},
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_A", "name": "get_weather", "input": {"location": "Rome"}},
        ],
    }
    # two tool messages merge into one user turn, since turns must alternate
    assert results["role"] == "user" and [b["tool_use_id"] for b in results["content"]] == ["toolu_A", "toolu_B"]
    assert results["content"][1]["is_error"] is True
    assert results["content"][-1]["cache_control"] == {"type": "ephemeral"}


def test_reasoning_from_another_provider_is_kept_as_text(anthropic):
    msg = Message(
        role="assistant",
        parts=(ReasoningPart(text="thought elsewhere", provider_data={"gemini": {"x": 1}}), TextPart(text="answer")),
    )
    blocks = call_handler(anthropic, "build_messages", [Message.of("user", "q"), msg])["messages"][1]["content"]
    assert blocks == [{"type": "text", "text": "thought elsewhere"}, {"type": "text", "text": "answer"}]


async def test_request_headers_body_and_extended_thinking(anthropic, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    ready, request = await build_request(
        anthropic,
        [Message.of("user", "hi")],
        tools=[ToolSpec(name="t")],
        settings={"extended_thinking": True, "thinking_budget": 2048, "temperature": 0.3},
    )
    body = msgspec.json.decode(request.body)
    assert request.headers["x-api-key"] == "sk-ant-test" and request.headers["anthropic-version"] == "2023-06-01"
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 8192 and "temperature" not in body and body["stream"] is True
    assert body["tools"] == [{"name": "t", "description": "", "input_schema": {"type": "object", "properties": {}}}]
    assert "extended_thinking" not in body and "thinking_budget" not in body


async def test_streams_over_real_http_and_401_names_the_variable(fixture_bytes, monkeypatch, scripted_server, client):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    crlf = fixture_bytes("anthropic/thinking_streaming.txt").replace(b"\n", b"\r\n")
    server = await scripted_server(
        in_pieces(crlf, 11), Reply(status=401, chunks=[fixture_bytes("anthropic/error_401.json")])
    )
    adapter = extend("anthropic", {"url": server.url + "/v1/messages"})
    assert final_of(await ask(adapter, client)).message.text == "Hello there! 👋"
    assert json.loads(server.requests[0].body)["messages"][0]["role"] == "user"
    errors = await ask(adapter, client)
    assert "Anthropic rejected the API key (HTTP 401): invalid x-api-key" in errors[0].message
    assert "ANTHROPIC_API_KEY" in errors[0].message and "sk-ant-secret" not in errors[0].message
