"""call_handler() must find handlers under both layouts and both spellings."""

import pytest

from codecompanion_py.adapters import HTTPAdapter, call_handler, get_handler
from codecompanion_py.adapters.handlers import NEW_TO_OLD, is_new_format


def _recorder(tag):
    return lambda self, *args: (tag, self.name, args)


NEW = {
    "lifecycle": {"setup": _recorder("setup"), "on_exit": _recorder("on_exit"), "teardown": _recorder("teardown")},
    "request": {
        name: _recorder(name)
        for name in ("build_parameters", "build_messages", "build_tools", "build_reasoning", "build_body")
    },
    "response": {name: _recorder(name) for name in ("parse_chat", "parse_inline", "parse_tokens")},
    "tools": {"format_calls": _recorder("format_calls"), "format_response": _recorder("format_response")},
}
OLD = {
    "setup": _recorder("setup"),
    "on_exit": _recorder("on_exit"),
    "teardown": _recorder("teardown"),
    "form_parameters": _recorder("form_parameters"),
    "form_messages": _recorder("form_messages"),
    "form_tools": _recorder("form_tools"),
    "form_reasoning": _recorder("form_reasoning"),
    "set_body": _recorder("set_body"),
    "chat_output": _recorder("chat_output"),
    "inline_output": _recorder("inline_output"),
    "tokens": _recorder("tokens"),
    "tools": {"format_tool_calls": _recorder("format_tool_calls"), "output_response": _recorder("output_response")},
}
NEW_NAMES = [
    "setup",
    "on_exit",
    "teardown",
    "build_parameters",
    "build_messages",
    "build_tools",
    "build_reasoning",
    "build_body",
    "parse_chat",
    "parse_inline",
    "parse_tokens",
    "format_calls",
    "format_response",
]


@pytest.mark.parametrize("name", NEW_NAMES)
def test_new_names_reach_nested_handlers(name):
    adapter = HTTPAdapter(name="nested", handlers=NEW)
    assert call_handler(adapter, name, 1, 2) == (name, "nested", (1, 2))


@pytest.mark.parametrize("name", NEW_NAMES)
def test_new_names_reach_old_flat_handlers(name):
    adapter = HTTPAdapter(name="flat", handlers=OLD)
    assert call_handler(adapter, name, "x") == (NEW_TO_OLD[name], "flat", ("x",))


@pytest.mark.parametrize(
    "new, old",
    [("build_messages", "form_messages"), ("parse_chat", "chat_output"), ("format_calls", "format_tool_calls")],
)
def test_old_names_reach_nested_handlers(new, old):
    adapter = HTTPAdapter(name="nested", handlers=NEW)
    assert call_handler(adapter, old)[0] == new


def test_tools_alone_does_not_mark_the_new_format():
    assert not is_new_format({"tools": {"format_calls": _recorder("x")}})
    assert is_new_format({"response": {}})
    # an old-format adapter that happens to have a flat `format_calls` key is not looked up there
    adapter = HTTPAdapter(name="old", handlers={"tools": {"format_tool_calls": _recorder("old_calls")}})
    assert call_handler(adapter, "format_calls")[0] == "old_calls"


def test_missing_handler_is_none_and_call_returns_none():
    adapter = HTTPAdapter(name="bare", handlers={"request": {}})
    assert get_handler(adapter, "parse_chat") is None
    assert call_handler(adapter, "parse_chat", b"{}") is None
