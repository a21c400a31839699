"""The normalizer's shortcut for frames that hold only text (a built-in parse_chat's
`text_only`): over every recorded stream of the wires that have one, the events are those
parse_chat gives."""

import re
from pathlib import Path

import pytest

from codecompanion_py.adapters import resolve
from codecompanion_py.adapters.handlers import get_handler
from codecompanion_py.stream.iterators import replay_body

FIXTURES = Path(__file__).parents[1] / "fixtures"
WITH_SHORTCUT = ["anthropic", "azure_openai", "deepseek", "githubmodels", "huggingface", "kimi", "mistral", "novita",
                 "openai", "openrouter", "xai"]  # fmt: skip


@pytest.mark.parametrize("name", WITH_SHORTCUT)
def test_the_shortcut_gives_the_events_parse_chat_gives(name, monkeypatch):
    bodies = sorted((FIXTURES / name).glob("*_streaming.txt"))
    assert bodies
    adapter = resolve(name)
    parse_chat = get_handler(adapter, "parse_chat")

    def replayed():  # the ids made up for calls that came without one differ from run to run
        events = [replay_body(adapter, body.read_bytes()) for body in bodies]
        return re.sub(r"call_[0-9a-f]{12}", "call_?", repr(events))

    taken = []
    text_only = parse_chat.text_only

    def counted(data):
        taken.append(text_only(data))
        return taken[-1]

    monkeypatch.setattr(parse_chat, "text_only", counted)
    with_shortcut = replayed()
    assert any(text is not None for text in taken), "no frame took the shortcut"
    monkeypatch.delattr(parse_chat, "text_only")
    assert replayed() == with_shortcut


@pytest.mark.parametrize(
    "frame",
    [
        b'{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}',
        b'{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"s"}}',
        b'{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{"}}',
        b'{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"a"}}',
        b'{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}',
        b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"},"usage":{"output_tokens":1}}',
        b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
        b'{"type":"ping"}',
        b"not json",
    ],
)
def test_anthropic_leaves_every_other_frame_to_parse_chat(frame):
    from codecompanion_py.adapters.http.anthropic import text_only

    assert text_only(frame) is None


def test_anthropic_takes_a_text_delta():
    from codecompanion_py.adapters.http.anthropic import text_only

    frame = b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"caf\xc3\xa9"}}'
    assert text_only(frame) == "café"
