"""A reply made only of reasoning (a thinking model that answers nothing) is a valid, empty
answer: the stream ends with a FinalEvent whose message keeps the reasoning, and that
message can go back to every provider in the history.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codecompanion_py import adapters, cli
from codecompanion_py.adapters import extend, resolve
from codecompanion_py.adapters.handlers import call_handler
from codecompanion_py.client import HttpClient
from codecompanion_py.demo.server import Reply, ScriptedServer
from codecompanion_py.events import ErrorEvent, FinalEvent, ReasoningEvent, TokenEvent
from codecompanion_py.messages import Message, ReasoningPart
from codecompanion_py.stream.iterators import HttpStreamIterator, replay_body, replay_stream

FIXTURES = Path(__file__).parent.parent / "fixtures"


# adapter, fixture, reasoning text, provider_data of the reasoning part, finish reason
REASONING_ONLY = [
    ("mistral", "mistral/reasoning_only_streaming.txt", "The user only said thanks. Nothing to add.", None, "stop"),
    (
        "anthropic",
        "anthropic/thinking_only_streaming.txt",
        "The user asked for silence. I will not reply.",
        {"anthropic": {"signature": "ErUBCkYIBRgCIkBonlysig=="}},
        "stop",
    ),
    ("ollama", "ollama/thinking_only_streaming.ndjson", "Nothing was asked. No reply needed.", None, "stop"),
    (
        "gemini_interactions",
        "gemini_interactions/thought_only_streaming.txt",
        "Only thanks. Nothing to answer.",
        {"gemini_interactions": {"signature": "c2lnLW9ubHk="}},
        "stop",
    ),
]


@pytest.mark.parametrize("adapter, fixture, reasoning, provider_data, finish", REASONING_ONLY)
def test_a_reasoning_only_stream_is_an_empty_answer(adapter, fixture, reasoning, provider_data, finish):
    events = replay_body(resolve(adapter), (FIXTURES / fixture).read_bytes())
    assert not any(isinstance(e, (ErrorEvent, TokenEvent)) for e in events)
    assert "".join(e.content for e in events if isinstance(e, ReasoningEvent)) == reasoning
    final = events[-1]
    assert isinstance(final, FinalEvent) and final.finish_reason == finish
    assert final.message.parts == (ReasoningPart(text=reasoning, provider_data=provider_data),)
    assert final.message.text == "" and final.message.tool_calls == ()
    assert final.usage is not None and final.usage.completion_tokens > 0


def test_redacted_thinking_alone_keeps_its_data():
    body = (
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va"}}\n\n'
        b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
        b'"usage":{"output_tokens":9}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    final = replay_body(resolve("anthropic"), body)[-1]
    assert isinstance(final, FinalEvent)
    assert final.message.parts == (ReasoningPart(text="", provider_data={"anthropic": {"redacted": "EmwKAhgBEgy3va"}}),)


async def test_over_http_the_stream_ends_with_the_final_event(monkeypatch):
    monkeypatch.setenv("MISTRAL_API_KEY", "test-key-mistral")
    body = (FIXTURES / "mistral/reasoning_only_streaming.txt").read_bytes()
    server = ScriptedServer.sequence(
        [
            Reply(
                headers={"content-type": "text/event-stream"},
                chunks=[body[i : i + 40] for i in range(0, len(body), 40)],
            )
        ]
    )
    await server.start()
    client = HttpClient(read_timeout=2, connect_timeout=1)
    try:
        adapter = extend("mistral", {"env": {"url": server.url}})
        events = await replay_stream(HttpStreamIterator(adapter, [Message.of("user", "thanks")], client=client))
    finally:
        await client.aclose()
        await server.close()
    assert [type(e).__name__ for e in events] == ["ReasoningEvent", "ReasoningEvent", "UsageEvent", "FinalEvent"]
    assert events[-1].message.reasoning == "The user only said thanks. Nothing to add."


@pytest.mark.parametrize(
    "adapter, body",
    [
        (
            "mistral",
            b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'
            b'data: {"choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
        ),
        (
            "ollama",
            b'{"message":{"role":"assistant","content":""},"done":false}\n'
            b'{"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}\n',
        ),
        (
            "anthropic",
            b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
            b'"usage":{"output_tokens":1}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n',
        ),
    ],
)
def test_a_stream_with_nothing_at_all_is_still_an_error(adapter, body):
    events = replay_body(resolve(adapter), body)
    assert isinstance(events[-1], ErrorEvent)
    assert "the response had no content (finish reason: stop)" in events[-1].message


def test_the_canonical_model_accepts_a_reasoning_only_answer():
    events = replay_body(resolve("mistral"), (FIXTURES / "mistral/reasoning_only_streaming.txt").read_bytes())
    assert isinstance(events[-1], FinalEvent), events[-1]


# --- sending it back ----------------------------------------------------------------------

CHAT_COMPLETIONS = {
    "openai",
    "openai_compatible",
    "azure_openai",
    "githubmodels",
    "mistral",
    "deepseek",
    "kimi",
    "openrouter",
    "xai",
    "huggingface",
    "novita",
    "copilot",
}
PROVIDERS = sorted(set(adapters.BUILTIN.names("http")) - {"demo"})


def _problems(adapter: str, body: dict[str, Any]) -> list[str]:
    """What the provider would refuse in the messages of a request body."""
    if adapter in CHAT_COMPLETIONS:
        return [
            f"assistant turn without content: {m}"
            for m in body["messages"]
            if m["role"] == "assistant" and not isinstance(m.get("content"), str) and not m.get("tool_calls")
        ]
    if adapter == "anthropic":
        turns = body["messages"]
        problems = [f"empty turn: {t}" for t in turns if not t["content"]]
        problems += [
            f"empty text block: {b}" for t in turns for b in t["content"] if b.get("type") == "text" and not b["text"]
        ]
        return problems + [f"{a['role']} twice in a row" for a, b in zip(turns, turns[1:]) if a["role"] == b["role"]]
    if adapter == "gemini":
        return [f"turn without parts: {c}" for c in body["contents"] if not c["parts"]] + [
            f"empty text part in {c}" for c in body["contents"] for p in c["parts"] if p.get("text") == ""
        ]
    if adapter == "ollama":
        return [f"message without string content: {m}" for m in body["messages"] if not isinstance(m["content"], str)]
    if adapter == "openai_responses":
        return [f"message item without content: {i}" for i in body["input"] if "role" in i and not i["content"]]
    if adapter == "gemini_interactions":
        steps = body["input"]
        problems = [
            f"step without content: {s}"
            for s in steps
            if s["type"] in ("user_input", "model_output") and not s["content"]
        ]
        problems += [
            f"thought without signature: {s}" for s in steps if s["type"] == "thought" and not s.get("signature")
        ]
        return problems + [f"empty text in {s}" for s in steps for c in s.get("content") or () if c.get("text") == ""]
    raise AssertionError(f"no wire rules for {adapter}")


def test_every_provider_has_wire_rules():
    for adapter in PROVIDERS:
        body = call_handler(resolve(adapter), "build_messages", [Message.of("user", "hi")])
        assert _problems(adapter, body) == []


@pytest.mark.parametrize("adapter", PROVIDERS)
def test_a_reasoning_only_answer_goes_back_as_a_valid_request(adapter):
    history: list[Message] = []
    # plain reasoning (Mistral, Ollama), then Anthropic's signed thinking, then OpenAI's encrypted reasoning
    for data in (
        None,
        {"anthropic": {"signature": "sig"}},
        {"openai_responses": {"id": "rs_1", "encrypted_content": "gAAA"}},
    ):
        history += [
            Message.of("user", "thanks"),
            Message(role="assistant", parts=(ReasoningPart(text="Nothing to add.", provider_data=data),)),
        ]
    history.append(Message.of("user", "and now?"))
    body = call_handler(resolve(adapter), "build_messages", history)
    assert _problems(adapter, body) == []


def test_replay_prints_the_final_event_of_a_reasoning_only_stream(capsys):
    assert cli.main(["replay", "--adapter", "mistral", str(FIXTURES / "mistral/reasoning_only_streaming.txt")]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["type"] for e in events] == ["reasoning", "reasoning", "usage", "final"]
    reasoning = "The user only said thanks. Nothing to add."
    assert events[-1]["message"]["parts"] == [{"type": "reasoning", "text": reasoning}]
