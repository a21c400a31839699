"""OpenAI Responses API: typed events, call_id keyed tool results, encrypted reasoning round trip."""

import msgspec
import pytest

from codecompanion_py.adapters import call_handler, extend, resolve
from codecompanion_py.adapters.request import build_request
from codecompanion_py.events import ErrorEvent, FinalEvent, ReasoningEvent, TokenEvent
from codecompanion_py.messages import ImagePart, Message, TextPart, ToolResultPart, ToolSpec
from codecompanion_py.stream.iterators import replay_body

from ..streaming import ask, in_pieces


@pytest.fixture
def responses():
    return resolve("openai_responses")


def test_reasoning_text_and_tool_calls_keyed_by_call_id(responses, fixture_bytes):
    events = replay_body(responses, fixture_bytes("openai_responses/reasoning_tools_streaming.txt"))
    assert "".join(e.content for e in events if isinstance(e, ReasoningEvent)) == "Need the capital lookup."
    assert [e.content for e in events if isinstance(e, TokenEvent)] == ["Looking it up."]
    final = events[-1]
    assert isinstance(final, FinalEvent) and final.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in final.message.tool_calls] == [
        ("call_kL0P", "get_capital", {"country": "France"}),
        ("call_2", "get_time", {}),
    ]
    assert final.message.parts[0].provider_data == {
        "openai_responses": {"id": "rs_01", "encrypted_content": "gAAAAencrypted=="}
    }
    assert (final.usage.total_tokens, final.usage.reasoning_tokens) == (65, 12)


def test_error_event_ends_the_stream_with_the_message(responses, fixture_bytes):
    events = replay_body(responses, fixture_bytes("openai_responses/error_streaming.txt"))
    assert [e.content for e in events if isinstance(e, TokenEvent)] == ["Partial"]
    assert isinstance(events[-1], ErrorEvent) and "You exceeded your current quota." in events[-1].message


def test_incomplete_non_streamed_response(responses, fixture_bytes):
    final = replay_body(responses, fixture_bytes("openai_responses/incomplete_no_streaming.json"))[-1]
    assert final.message.text == "Cut sho" and final.finish_reason == "length" and final.usage.total_tokens == 21


def test_history_round_trip_sends_reasoning_back_and_results_by_call_id(responses, fixture_bytes):
    reply = replay_body(responses, fixture_bytes("openai_responses/reasoning_tools_streaming.txt"))[-1].message
    history = [
        Message.of("system", "be brief"),
        Message(role="user", parts=(TextPart(text="capital?"), ImagePart(data="QUJD"))),
        reply,
        Message(role="tool", parts=(ToolResultPart(tool_call_id="call_kL0P", name="get_capital", content="Paris"),)),
    ]
    body = call_handler(responses, "build_messages", history)
    assert body["instructions"] == "be brief"
    user, reasoning, text, call, call2, output = body["input"]
    assert user == {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "capital?"},
            {"type": "input_image", "image_url": "data:image/png;base64,QUJD"},
        ],
    }
    assert reasoning == {
        "type": "reasoning",
        "id": "rs_01",
        "encrypted_content": "gAAAAencrypted==",
        "summary": [{"type": "summary_text", "text": "Need the capital lookup."}],
    }
    assert text == {"role": "assistant", "content": [{"type": "output_text", "text": "Looking it up."}]}
    assert call == {
        "type": "function_call",
        "call_id": "call_kL0P",
        "name": "get_capital",
        "arguments": '{"country":"France"}',
    }
    assert output == {"type": "function_call_output", "call_id": "call_kL0P", "output": "Paris"}


async def test_request_asks_for_encrypted_reasoning_and_streams(responses, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    _, request = await build_request(
        responses, [Message.of("user", "hi")], tools=[ToolSpec(name="t")], settings={"max_tokens": 50}
    )
    body = msgspec.json.decode(request.body)
    assert request.url == "https://api.openai.com/v1/responses"
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"} and body["max_output_tokens"] == 50
    assert body["tools"] == [
        {"type": "function", "name": "t", "description": "", "parameters": {"type": "object", "properties": {}}}
    ]
    assert body["stream"] is True


async def test_over_real_http(fixture_bytes, monkeypatch, scripted_server, client):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    server = await scripted_server(in_pieces(fixture_bytes("openai_responses/reasoning_tools_streaming.txt"), 50))
    events = await ask(extend("openai_responses", {"url": server.url + "/v1/responses"}), client)
    assert events[-1].message.tool_calls[0].id == "call_kL0P"
    assert server.requests[0].path == "/v1/responses"
