import msgspec
import pytest

from codecompanion_py.errors import AdapterError
from codecompanion_py.events import FinalEvent, TokenEvent, ToolCallEvent
from codecompanion_py.messages import (
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResultPart,
    ToolSpec,
    validate_tool_specs,
)


def test_message_keeps_parts_and_exposes_text_and_calls():
    call = ToolCall(id="c1", name="read_file", arguments={"path": "a.py"})
    msg = Message(role="assistant", parts=(ReasoningPart(text="hmm"), TextPart(text="Reading"), call))
    assert msg.text == "Reading"
    assert msg.reasoning == "hmm"
    assert msg.tool_calls == (call,)


@pytest.mark.parametrize("role", ["robot", "", "USER"])
def test_unknown_role_is_refused_with_the_allowed_ones(role):
    with pytest.raises(AdapterError, match="unknown role.*assistant, system, tool, user"):
        Message(role=role, parts=(TextPart(text="x"),))


def test_empty_content_without_tool_calls_is_refused():
    with pytest.raises(AdapterError, match="no content"):
        Message(role="assistant", parts=(TextPart(text=""),))
    with pytest.raises(AdapterError, match="no content"):
        Message(role="assistant", parts=(ReasoningPart(text=""),))


def test_an_answer_of_reasoning_alone_is_valid():
    assert Message(role="assistant", parts=(ReasoningPart(text="only thinking"),)).text == ""
    assert Message(role="assistant", parts=(ReasoningPart(text="", provider_data={"anthropic": {"redacted": "x"}}),))


def test_assistant_with_only_a_tool_call_is_valid():
    msg = Message(role="assistant", parts=(ToolCall(id="c", name="ls"),))
    assert msg.text == ""


def test_parts_must_fit_the_role():
    with pytest.raises(AdapterError, match="system message cannot hold a ImagePart"):
        Message(role="system", parts=(ImagePart(data="AAAA"),))
    with pytest.raises(AdapterError, match="tool message"):
        Message(role="tool", parts=(TextPart(text="x"),))


@pytest.mark.parametrize("name", ["", "has space", "a" * 65, "semi;colon", "dot.name"])
def test_bad_tool_names_are_refused(name):
    with pytest.raises(AdapterError, match="invalid tool name"):
        ToolCall(id="c", name=name)


def test_tool_call_from_json_parses_and_treats_empty_as_empty_object():
    assert ToolCall.from_json(id="c", name="t", arguments='{"a": [1, 2]}').arguments == {"a": [1, 2]}
    assert ToolCall.from_json(id="c", name="t", arguments="").arguments == {}
    assert ToolCall.from_json(id="c", name="t", arguments=None).arguments == {}


@pytest.mark.parametrize("raw, reason", [('{"a": ', "not valid JSON"), ("[1, 2]", "must be a JSON object")])
def test_tool_call_from_json_rejects_non_objects(raw, reason):
    with pytest.raises(AdapterError, match=reason):
        ToolCall.from_json(id="c", name="t", arguments=raw)


def test_tool_call_arguments_must_be_json_compatible():
    with pytest.raises(AdapterError, match="not JSON-compatible"):
        ToolCall(id="c", name="t", arguments={"x": object()})
    with pytest.raises(AdapterError, match="not a JSON number"):
        ToolCall(id="c", name="t", arguments={"x": float("nan")})


def test_parts_are_frozen():
    part = TextPart(text="x")
    with pytest.raises(AttributeError):
        part.text = "y"


def test_tool_spec_validation():
    spec = ToolSpec(
        name="weather",
        description="d",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    )
    assert spec.parameters["required"] == ["city"]
    with pytest.raises(AdapterError, match=r"required \['zone'\] not in properties"):
        ToolSpec(name="w", parameters={"type": "object", "properties": {}, "required": ["zone"]})
    with pytest.raises(AdapterError, match="top-level type must be 'object'"):
        ToolSpec(name="w", parameters={"type": "array"})
    with pytest.raises(AdapterError, match="not JSON-compatible"):
        ToolSpec(name="w", parameters={"type": "object", "properties": {"x": {1, 2}}})


def test_duplicate_tool_specs_are_refused():
    spec = ToolSpec(name="a")
    with pytest.raises(AdapterError, match="duplicate tool name 'a'"):
        validate_tool_specs([spec, ToolSpec(name="a", description="other")])


def test_messages_round_trip_through_json_with_tags():
    msg = Message(
        role="user",
        parts=(
            TextPart(text="see"),
            ImagePart(data="QUJD", media_type="image/jpeg"),
            ToolResultPart(tool_call_id="c", name="t", content="ok"),
        ),
    )
    encoded = msgspec.json.encode(msg)
    assert b'"type":"image"' in encoded
    assert msgspec.json.decode(encoded, type=Message) == msg


def test_decoding_invalid_message_reports_the_problem():
    with pytest.raises(msgspec.ValidationError, match="unknown role"):
        msgspec.json.decode(b'{"role":"bot","parts":[{"type":"text","text":"x"}]}', type=Message)


def test_events_encode_as_ndjson_lines_with_type():
    assert msgspec.json.encode(TokenEvent(content="hi")) == b'{"type":"token","content":"hi"}'
    event = ToolCallEvent(id="c", name="t", is_final=True, arguments={"a": 1})
    assert msgspec.json.decode(msgspec.json.encode(event))["arguments"] == {"a": 1}
    final = FinalEvent(message=Message.of("assistant", "done"))
    assert msgspec.json.decode(msgspec.json.encode(final))["type"] == "final"


def test_one_nesting_walker_serves_tool_arguments_and_lua_batches():
    from codecompanion_py.messages import nests_within
    from codecompanion_py.ui import ops

    assert nests_within("text", 1) and nests_within([[1]], 2) and not nests_within([[1]], 1)
    assert nests_within({"a": ({"b": 1},)}, 3) and not nests_within({"a": ({"b": 1},)}, 2)
    assert ops.for_lua("a prompt's text") == "a prompt's text"  # a bare value, not a table
    assert ops.for_lua({"n": 2**70}) == {"n": str(2**70)}  # wider than msgpack: its text
    assert ops.for_lua([1, "x", {"y": True}]) == [1, "x", {"y": True}]
