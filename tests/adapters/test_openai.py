"""The OpenAI chat-completions adapter, from fixture files written from the documented wire format."""

import msgspec
import pytest

from codecompanion_py.adapters import call_handler, resolve
from codecompanion_py.adapters.request import build_request
from codecompanion_py.errors import AdapterError
from codecompanion_py.events import ErrorEvent, FinalEvent, TokenEvent, ToolCallEvent, UsageEvent
from codecompanion_py.messages import ImagePart, Message, TextPart, ToolCall, ToolResultPart, ToolSpec
from codecompanion_py.stream.iterators import replay_body


@pytest.fixture
def openai():
    return resolve("openai")


def _final(events):
    finals = [e for e in events if isinstance(e, FinalEvent)]
    assert len(finals) == 1, events
    return finals[0]


def test_build_messages_maps_every_part(openai):
    call = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
    history = [
        Message.of("system", "be brief"),
        Message(role="user", parts=(TextPart(text="what is this?"), ImagePart(data="QUJD", media_type="image/png"))),
        Message(role="assistant", parts=(TextPart(text="Checking"), call)),
        Message(role="tool", parts=(ToolResultPart(tool_call_id="call_1", name="get_weather", content="sunny"),)),
        Message.of("user", "thanks"),
    ]
    wire = call_handler(openai, "build_messages", history)["messages"]
    assert wire == [
        {"role": "system", "content": "be brief"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Checking",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "user", "content": "thanks"},
    ]


def test_tool_results_inside_a_user_message_become_tool_messages(openai):
    msg = Message(
        role="user", parts=(ToolResultPart(tool_call_id="c9", name="t", content="42"), TextPart(text="go on"))
    )
    assert call_handler(openai, "form_messages", [msg])["messages"] == [
        {"role": "tool", "tool_call_id": "c9", "content": "42"},
        {"role": "user", "content": "go on"},
    ]


def test_build_tools_accepts_specs_and_openai_tables(openai):
    spec = ToolSpec(
        name="a",
        description="A",
        strict=True,
        parameters={"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
    )
    table = {
        "type": "function",
        "function": {"name": "b", "description": "B", "parameters": {"type": "object", "properties": {}}},
    }
    tools = call_handler(openai, "build_tools", [spec, table])["tools"]
    assert tools[0] == {
        "type": "function",
        "function": {"name": "a", "description": "A", "strict": True, "parameters": spec.parameters},
    }
    assert tools[1]["function"]["name"] == "b"
    with pytest.raises(AdapterError, match="duplicate tool name"):
        call_handler(openai, "build_tools", [spec, spec])


async def test_request_body_headers_and_url(openai, openai_key):
    tools = [ToolSpec(name="t")]
    ready, request = await build_request(openai, [Message.of("user", "hi")], tools=tools, settings={"temperature": 0.5})
    body = msgspec.json.decode(request.body)
    assert body == {
        "model": "gpt-4.1",
        "temperature": 0.5,
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [
            {
                "type": "function",
                "function": {"name": "t", "description": "", "parameters": {"type": "object", "properties": {}}},
            }
        ],
    }
    assert request.url == "https://api.openai.com/v1/chat/completions"
    assert request.headers["Authorization"] == f"Bearer {openai_key}"
    assert openai_key not in repr(request)


def test_streamed_text_with_usage(openai, fixture_bytes):
    events = replay_body(openai, fixture_bytes("openai/text_streaming.txt"))
    tokens = [e.content for e in events if isinstance(e, TokenEvent)]
    assert tokens == ["The", " capital of France", " is Paris — café ☕."]
    assert [e.index for e in events if isinstance(e, TokenEvent)] == [0, 1, 2]
    final = _final(events)
    assert final.message.text == "The capital of France is Paris — café ☕."
    assert final.finish_reason == "stop"
    assert (final.usage.prompt_tokens, final.usage.completion_tokens, final.usage.total_tokens) == (14, 8, 22)
    assert any(isinstance(e, UsageEvent) for e in events)
    assert isinstance(events[-1], FinalEvent)


def test_streamed_parallel_tool_calls_assembled_by_index(openai, fixture_bytes):
    events = replay_body(openai, fixture_bytes("openai/tools_streaming.txt"))
    final = _final(events)
    calls = final.message.tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_q2Uy", "get_weather", {"city": "London"}),
        ("call_b51i", "get_time", {"zone": "UTC"}),
        ("call_n0args", "list_files", {}),
    ]
    assert final.finish_reason == "tool_calls"
    assert final.usage.total_tokens == 404
    complete = [e for e in events if isinstance(e, ToolCallEvent) and e.is_final]
    assert [e.arguments for e in complete] == [c.arguments for c in calls]
    fragments = [e.args_fragment for e in events if isinstance(e, ToolCallEvent) and not e.is_final and e.index == 0]
    assert "".join(fragments) == '{"city":"London"}'


def test_error_inside_a_200_stream_is_an_error_event_after_the_partial_text(openai, fixture_bytes):
    events = replay_body(openai, fixture_bytes("openai/error_streaming.txt"))
    assert [e.content for e in events if isinstance(e, TokenEvent)] == ["Partial answer"]
    assert isinstance(events[-1], ErrorEvent)
    assert "Token limit reached" in events[-1].message
    assert not any(isinstance(e, FinalEvent) for e in events)


def test_non_streamed_bodies_take_the_same_path(openai, fixture_bytes):
    final = _final(replay_body(openai, fixture_bytes("openai/text_no_streaming.json")))
    assert final.message.text == "Hello! How can I help?"
    assert final.usage.total_tokens == 16
    calls = _final(replay_body(openai, fixture_bytes("openai/tools_no_streaming.json"))).message.tool_calls
    assert [(c.id, c.arguments["city"]) for c in calls] == [("call_A", "Paris"), ("call_B", "Rome")]


def test_concatenated_arguments_under_one_index_are_split_not_merged(openai, fixture_bytes):
    calls = _final(replay_body(openai, fixture_bytes("openai/concatenated_args_streaming.txt"))).message.tool_calls
    assert [c.arguments for c in calls] == [{"path": "a.py"}, {"path": "b.py"}]
    assert all(c.id.startswith("call_") for c in calls)  # the provider sent no ids
    assert len({c.id for c in calls}) == 2


def test_unparseable_arguments_keep_the_call_with_the_error(openai):
    body = (
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":'
        b'{"name":"t","arguments":"{\\"a\\": tru"}}]}}]}\n\ndata: [DONE]\n\n'
    )
    call = _final(replay_body(openai, body)).message.tool_calls[0]
    assert call.arguments == {}
    assert call.provider_data["invalid_arguments"] == '{"a": tru'
    assert "not valid JSON" in call.provider_data["error"]


def test_malformed_frame_is_a_clear_error(openai):
    events = replay_body(openai, b'data: {"choices":[{"index":0,"delta":{"content":"ok"}}]}\n\ndata: {not json\n\n')
    assert isinstance(events[-1], ErrorEvent)
    assert "malformed response" in events[-1].message and "{not json" in events[-1].message


def test_empty_response_is_an_error_not_an_empty_message(openai):
    events = replay_body(
        openai, b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}\n\ndata: [DONE]\n\n'
    )
    assert isinstance(events[-1], ErrorEvent)
    assert "no content (finish reason: length)" in events[-1].message


def test_unknown_fields_and_comment_lines_are_ignored(openai):
    body = (
        b': keep-alive\n\ndata: {"choices":[{"index":0,"delta":{"content":"x","brand_new":1},"x_extra":{}}],'
        b'"obfuscation":"zz"}\n\ndata: [DONE]\n\n'
    )
    assert _final(replay_body(openai, body)).message.text == "x"


def test_parse_inline_tokens_and_tool_formatting(openai, fixture_bytes):
    body = fixture_bytes("openai/text_no_streaming.json")
    assert call_handler(openai, "parse_inline", body) == {"status": "success", "output": "Hello! How can I help?"}
    assert call_handler(openai, "parse_tokens", body) == 16
    assert call_handler(openai, "tokens", body) == 16
    call = ToolCall(id="c1", name="t", arguments={})
    assert call_handler(openai, "format_tool_calls", [call]) == [
        {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
    ]
    assert call_handler(openai, "output_response", call, "out") == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "out",
    }


def test_parse_chat_accepts_a_decoded_table(openai):
    result = call_handler(openai, "parse_chat", {"choices": [{"index": 0, "delta": {"content": "hi"}}]}, None)
    assert result["status"] == "success" and result["output"]["content"] == "hi"


def test_a_handler_that_raises_becomes_an_error_event_not_a_crash(fixture_bytes):
    import asyncio

    from codecompanion_py.adapters import extend
    from codecompanion_py.stream.iterators import BaseStreamIterator
    from codecompanion_py.stream.normalizer import StreamNormalizer

    def broken(self, data, tools):
        raise KeyError("choices")

    adapter = extend("openai", {"handlers": {"response": {"parse_chat": broken}}})

    class OneChunk(BaseStreamIterator):
        sent = False

        async def _get_next_chunk(self):
            if self.sent:
                return None
            self.sent = True
            return fixture_bytes("openai/text_streaming.txt")

    async def run():
        return [event async for event in OneChunk(StreamNormalizer(adapter))]

    events = asyncio.run(run())
    assert len(events) == 1 and isinstance(events[0], ErrorEvent)
    assert events[0].message == "the adapter failed: KeyError: 'choices'"


@pytest.mark.parametrize(
    "model, system_role", [("o3", "developer"), ("gpt-5-mini", "developer"), ("gpt-4.1", "system")]
)
async def test_reasoning_models_get_developer_role_and_no_sampling_parameters(openai_key, model, system_role):
    adapter = resolve("openai", model=model)
    _, request = await build_request(
        adapter,
        [Message.of("system", "rules"), Message.of("user", "q")],
        settings={"temperature": 0.5, "max_tokens": 100},
    )
    body = msgspec.json.decode(request.body)
    assert body["messages"][0] == {"role": system_role, "content": "rules"}
    if system_role == "developer":
        assert "temperature" not in body and body["max_completion_tokens"] == 100 and "max_tokens" not in body
    else:
        assert body["temperature"] == 0.5 and body["max_tokens"] == 100


def test_o1_mini_has_no_system_role_so_the_prompt_joins_the_first_user_message():
    adapter = resolve("openai", model="o1-mini")
    wire = call_handler(adapter, "build_messages", [Message.of("system", "rules"), Message.of("user", "q")])["messages"]
    assert wire == [{"role": "user", "content": "rules\n\nq"}]


@pytest.mark.parametrize(
    "frame",
    [
        b"[DONE]",
        b"not json",
        b'{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}',
        b'{"choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}',
        b'{"choices":[{"index":0,"delta":{"reasoning_content":"hmm","content":"a"}}]}',
        b'{"choices":[{"index":0,"delta":{"refusal":"no","content":""}}]}',
        b'{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}],"content":"a"}}]}',
        b'{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}',
        b'{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"a"}]}}]}',
        b'{"error":{"message":"overloaded"}}',
        b'{"choices":[]}',
    ],
)
def test_text_only_leaves_every_other_frame_to_parse_chat(frame):
    from codecompanion_py.adapters.http.openai import text_only

    assert text_only(frame) is None


def test_text_only_takes_a_frame_of_text(openai):
    from codecompanion_py.adapters.http.openai import text_only

    frame = (
        b'{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":"caf\xc3\xa9"},"finish_reason":null}]}'
    )
    assert text_only(frame) == "café"
    assert call_handler(openai, "parse_chat", frame, None)["output"]["content"] == "café"
