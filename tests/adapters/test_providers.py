"""OpenAI-wire providers: data over the openai adapter, and the quirks they switch on."""

import msgspec
import pytest

from codecompanion_py import adapters
from codecompanion_py.adapters import call_handler, resolve
from codecompanion_py.adapters.request import build_request
from codecompanion_py.events import FinalEvent, ReasoningEvent
from codecompanion_py.messages import Message, ReasoningPart, TextPart, ToolCall, ToolResultPart
from codecompanion_py.stream.iterators import replay_body

PROVIDERS = {
    "deepseek": ("DEEPSEEK_API_KEY", "https://api.deepseek.com/chat/completions"),
    "kimi": ("MOONSHOT_API_KEY", "https://api.moonshot.ai/v1/chat/completions"),
    "mistral": ("MISTRAL_API_KEY", "https://api.mistral.ai/v1/chat/completions"),
    "openrouter": ("OPENROUTER_API_KEY", "https://openrouter.ai/api/v1/chat/completions"),
    "xai": ("XAI_API_KEY", "https://api.x.ai/v1/chat/completions"),
    "huggingface": ("HUGGINGFACE_API_KEY", "https://router.huggingface.co/v1/chat/completions"),
    "novita": ("NOVITA_API_KEY", "https://api.novita.ai/v3/openai/chat/completions"),
}


@pytest.mark.parametrize("name", sorted(PROVIDERS))
async def test_each_provider_has_its_url_key_and_no_openai_only_parameters(name, monkeypatch):
    key_env, url = PROVIDERS[name]
    monkeypatch.setenv(key_env, "k-" + name)
    ready, request = await build_request(resolve(name), [Message.of("user", "hi")])
    assert request.url == url
    assert request.headers["Authorization"] == f"Bearer k-{name}"
    body = msgspec.json.decode(request.body)
    assert body["model"] == resolve(name).model and body["stream"] is True
    monkeypatch.delenv(key_env)
    with pytest.raises(Exception, match=key_env):
        await build_request(resolve(name), [Message.of("user", "hi")])


async def test_azure_deployment_url_and_api_key_header(monkeypatch):
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "az-key")
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://me.openai.azure.com")
    _, request = await build_request(resolve("azure_openai", model="my-deploy"), [Message.of("user", "hi")])
    assert (
        request.url
        == "https://me.openai.azure.com/openai/deployments/my-deploy/chat/completions?api-version=2024-10-21"
    )
    assert request.headers["api-key"] == "az-key" and "Authorization" not in request.headers


def test_azure_first_chunk_without_choices_is_skipped():
    body = (
        b'data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0}]}\n\n'
        b'data: {"choices":[{"content_filter_results":{},"delta":{"content":"hi"},"finish_reason":null,"index":0}]}\n\n'
        b"data: [DONE]\n\n"
    )
    assert replay_body(resolve("azure_openai"), body)[-1].message.text == "hi"


def test_reasoning_fields_of_deepseek_openrouter_and_copilot_are_shown_as_reasoning():
    for field in ("reasoning_content", "reasoning", "reasoning_text"):
        body = (
            b'data: {"choices":[{"index":0,"delta":{"%s":"think "}}]}\n\n'
            b'data: {"choices":[{"index":0,"delta":{"content":"answer"}}]}\n\ndata: [DONE]\n\n'
        ) % field.encode()
        events = replay_body(resolve("openai"), body)
        assert [e.content for e in events if isinstance(e, ReasoningEvent)] == ["think "], field
        assert events[-1].message.reasoning == "think " and events[-1].message.text == "answer"


def test_mistral_thinking_content_lists():
    body = (
        b'data: {"choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"Okay"}]}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"Hello"}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":" world"},"finish_reason":"stop"}]}\n\n'
    )
    final = replay_body(resolve("mistral"), body)[-1]
    assert isinstance(final, FinalEvent)
    assert (final.message.reasoning, final.message.text) == ("Okay", "Hello world")


def test_mistral_gets_9_character_ids_that_still_pair_calls_with_results():
    mistral = resolve("mistral")
    call = ToolCall(id="toolu_01NR_from_anthropic", name="t")
    native = ToolCall(id="3sKXImamX", name="t")
    history = [
        Message.of("user", "q"),
        Message(role="assistant", parts=(call, native)),
        Message(
            role="tool",
            parts=(
                ToolResultPart(tool_call_id=call.id, name="t", content="a"),
                ToolResultPart(tool_call_id=native.id, name="t", content="b"),
            ),
        ),
    ]
    wire = call_handler(mistral, "build_messages", history)["messages"]
    ids = [c["id"] for c in wire[1]["tool_calls"]]
    assert all(len(i) == 9 and i.isalnum() for i in ids)
    assert ids[1] == "3sKXImamX"  # already valid: unchanged
    assert [m["tool_call_id"] for m in wire[2:]] == ids
    # other providers keep ids as they are
    assert call_handler(resolve("openai"), "format_calls", [call])[0]["id"] == call.id


def test_deepseek_sends_reasoning_back_and_openai_does_not():
    turn = Message(role="assistant", parts=(ReasoningPart(text="because"), TextPart(text="yes")))
    plain = Message(role="assistant", parts=(TextPart(text="ok"),))
    deepseek = call_handler(resolve("deepseek"), "build_messages", [turn, plain])["messages"]
    assert [m["reasoning_content"] for m in deepseek] == ["because", " "]
    assert "reasoning_content" not in call_handler(resolve("openai"), "build_messages", [turn])["messages"][0]


def test_every_builtin_adapter_resolves():
    for name in adapters.BUILTIN.names("http"):
        assert resolve(name).name == name
