"""Gemini's Interactions API: typed steps in, step events out, and the signatures that must
go back verbatim (coverage_matrix.json has its fixtures' text, calls, usage and errors)."""

import msgspec
import pytest

from codecompanion_py.adapters import call_handler, extend, resolve
from codecompanion_py.adapters.request import build_request
from codecompanion_py.events import ErrorEvent
from codecompanion_py.messages import ImagePart, Message, ReasoningPart, TextPart, ToolResultPart, ToolSpec
from codecompanion_py.stream.iterators import HttpStreamIterator, replay_body, replay_stream

from ..streaming import final_of, in_pieces


@pytest.fixture
def interactions():
    return resolve("gemini_interactions")


def test_thought_and_call_signatures_are_kept(interactions, fixture_bytes):
    text = final_of(replay_body(interactions, fixture_bytes("gemini_interactions/text_streaming.txt"))).message
    (thought,) = [p for p in text.parts if isinstance(p, ReasoningPart)]
    assert thought.text == "Weighing the options."
    assert thought.provider_data == {"gemini_interactions": {"signature": "c2lnLXRob3VnaHQtMQ=="}}
    tools = final_of(replay_body(interactions, fixture_bytes("gemini_interactions/tools_streaming.txt")))
    first, second = tools.message.tool_calls
    assert first.provider_data == {"gemini_interactions": {"signature": "c2lnLWNhbGwtMQ=="}}
    assert second.provider_data is None
    assert not [p for p in tools.message.parts if isinstance(p, ReasoningPart)]  # an empty signature is none


def test_history_goes_back_as_typed_steps_with_signatures(interactions, fixture_bytes):
    reply = final_of(replay_body(interactions, fixture_bytes("gemini_interactions/tools_streaming.txt"))).message
    answer = final_of(replay_body(interactions, fixture_bytes("gemini_interactions/text_streaming.txt"))).message
    foreign = Message(role="assistant", parts=(ReasoningPart(text="elsewhere", provider_data={"anthropic": {}}),))
    history = [
        Message.of("system", "be brief"),
        Message.of("system", "use tools"),
        Message(
            role="user", parts=(TextPart(text="what is in main?"), ImagePart(data="QUJD", media_type="image/jpeg"))
        ),
        reply,
        Message(
            role="tool",
            parts=(
                ToolResultPart(tool_call_id="fc7k2m", name="read_file", content="def main(): ..."),
                ToolResultPart(tool_call_id="fc9q1z", name="grep_search", content="main.py:1"),
            ),
        ),
        answer,
        foreign,
        Message.of("user", "thanks"),
    ]
    body = call_handler(interactions, "build_messages", history)
    assert body["system_instruction"] == "be brief\n\nuse tools"
    assert body["input"] == [
        {
            "type": "user_input",
            "content": [
                {"type": "text", "text": "what is in main?"},
                {"type": "image", "data": "QUJD", "mime_type": "image/jpeg"},
            ],
        },
        {
            "type": "function_call",
            "id": "fc7k2m",
            "name": "read_file",
            "arguments": {"path": "src/main.py"},
            "signature": "c2lnLWNhbGwtMQ==",
        },
        {"type": "function_call", "id": "fc9q1z", "name": "grep_search", "arguments": {"query": "def main"}},
        {
            "type": "function_result",
            "name": "read_file",
            "call_id": "fc7k2m",
            "result": [{"type": "text", "text": "def main(): ..."}],
        },
        {
            "type": "function_result",
            "name": "grep_search",
            "call_id": "fc9q1z",
            "result": [{"type": "text", "text": "main.py:1"}],
        },
        {
            "type": "thought",
            "signature": "c2lnLXRob3VnaHQtMQ==",
            "summary": [{"type": "text", "text": "Weighing the options."}],
        },
        {"type": "model_output", "content": [{"type": "text", "text": "Tabs or spaces: pick one, é ✓."}]},
        {"type": "user_input", "content": [{"type": "text", "text": "thanks"}]},
    ]  # another provider's reasoning, with no signature this API takes, is left out


async def test_request_body_url_and_settings(interactions, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    tools = [
        ToolSpec(name="t"),
        ToolSpec(name="read", description="d", parameters={"type": "object", "properties": {"p": {"type": "string"}}}),
    ]
    _, request = await build_request(
        interactions, [Message.of("user", "hi")], tools=tools, settings={"temperature": 0.2, "max_output_tokens": 50}
    )
    body = msgspec.json.decode(request.body)
    assert request.url == "https://generativelanguage.googleapis.com/v1beta/interactions?alt=sse"
    assert request.headers["x-goog-api-key"] == "k"
    assert body["model"] == "gemini-3.1-pro-preview" and body["store"] is False and body["stream"] is True
    assert body["generation_config"] == {
        "temperature": 0.2,
        "max_output_tokens": 50,
        "thinking_level": "high",
        "thinking_summaries": "auto",
    }
    assert body["tools"] == [
        {"type": "function", "name": "t", "description": ""},
        {
            "type": "function",
            "name": "read",
            "description": "d",
            "parameters": {"type": "object", "properties": {"p": {"type": "string"}}},
        },
    ]
    whole = extend("gemini_interactions", {"opts": {"stream": False}})
    _, request = await build_request(whole, [Message.of("user", "hi")])
    assert request.url.endswith("/v1beta/interactions") and "stream" not in msgspec.json.decode(request.body)


def test_a_failed_interaction_is_an_error_not_an_empty_answer(interactions):
    streamed = (
        b'event: interaction.completed\ndata: {"event_type":"interaction.completed","interaction":'
        b'{"status":"failed","error":{"code":"internal","message":"backend fell over"}}}\n\n'
    )
    events = replay_body(interactions, streamed)
    assert (
        isinstance(events[-1], ErrorEvent) and events[-1].message == "Gemini Interactions: backend fell over (internal)"
    )
    cut = b'event: step.delta\ndata: {"event_type":"step.delta","index":0,"delta":{"type":"text","text":"Hal"}}\n\n'
    events = replay_body(interactions, cut)
    assert isinstance(events[-1], ErrorEvent) and "cut off" in events[-1].message


async def test_a_tool_turn_over_real_http_sends_the_signatures_back(
    fixture_bytes, monkeypatch, scripted_server, client
):
    """Two requests to a local server speaking the API: the calls of the first reply, their
    signatures and results go in the second request's input."""
    monkeypatch.setenv("GEMINI_API_KEY", "key-1")
    server = await scripted_server(
        in_pieces(fixture_bytes("gemini_interactions/tools_streaming.txt"), 17),
        in_pieces(fixture_bytes("gemini_interactions/text_streaming.txt"), 17),
    )
    adapter = resolve("gemini_interactions")
    adapter.url = server.url + "/v1beta/interactions${stream}"
    history = [Message.of("user", "look at main")]
    reply = final_of(await replay_stream(HttpStreamIterator(adapter, history, client=client))).message
    results = [ToolResultPart(tool_call_id=c.id, name=c.name, content="ok") for c in reply.tool_calls]
    history += [reply, Message(role="tool", parts=tuple(results))]
    answer = final_of(await replay_stream(HttpStreamIterator(adapter, history, client=client)))
    assert answer.message.text == "Tabs or spaces: pick one, é ✓."
    first, second = (r.json() for r in server.requests)
    assert [r.path for r in server.requests] == ["/v1beta/interactions?alt=sse"] * 2
    assert first["input"] == [{"type": "user_input", "content": [{"type": "text", "text": "look at main"}]}]
    steps = second["input"]
    assert [s["type"] for s in steps] == [
        "user_input",
        "function_call",
        "function_call",
        "function_result",
        "function_result",
    ]
    assert steps[1]["signature"] == "c2lnLWNhbGwtMQ==" and steps[3]["call_id"] == "fc7k2m"
