"""The pieces the wire formats share (adapters/http/wire.py)."""

from codecompanion_py.adapters.http import anthropic, copilot, gemini, ollama, openai, openai_responses, wire
from codecompanion_py.messages import Message


def build_messages(self, messages):
    return {}


def parse_chat(self, data, tools=None):
    return None


def test_the_handler_table_holds_what_a_module_defines_under_handler_names():
    def mine(self):
        return True

    table = wire.handler_table({"build_messages": build_messages, "parse_chat": parse_chat, "helper": len}, setup=mine)
    assert table == {
        "lifecycle": {"setup": mine},
        "request": {"build_messages": build_messages},
        "response": {"parse_chat": parse_chat, "parse_inline": wire.parse_inline},
    }


def test_every_wire_format_has_the_handlers_a_chat_needs():
    for module in (anthropic, copilot, gemini, ollama, openai, openai_responses):
        handlers = module.ADAPTER["handlers"]
        assert {"build_messages", "build_tools"} <= set(handlers["request"]), module.__name__
        assert {"parse_chat", "parse_inline", "parse_tokens"} <= set(handlers["response"]), module.__name__
        assert set(handlers["tools"]) == {"format_calls", "format_response"}, module.__name__
    assert ollama.ADAPTER["handlers"]["request"]["build_tools"] is openai.build_tools


def test_turns_alternate_and_system_messages_are_left_to_the_caller():
    messages = [
        Message.of("system", "rules"),
        Message.of("user", "a"),
        Message.of("user", "b"),
        Message.of("assistant", "c"),
        Message.of("user", "-"),  # a message without parts: left out
        Message.of("user", "d"),
    ]
    turns = wire.alternating_turns(messages, "model", "parts", lambda m: [] if m.text == "-" else [m.text])
    assert turns == [
        {"role": "user", "parts": ["a", "b"]},
        {"role": "model", "parts": ["c"]},
        {"role": "user", "parts": ["d"]},
    ]


def test_settings_carry_only_what_is_set():
    assert wire.setting(2, "number", optional=True) == {
        "order": 2,
        "type": "number",
        "default": None,
        "mapping": "parameters",
        "optional": True,
    }
    assert wire.setting(1, "enum", "m", mapping=None, choices=["m"]) == {
        "order": 1,
        "type": "enum",
        "default": "m",
        "choices": ["m"],
    }
