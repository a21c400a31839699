"""The calls Lua makes into the engine: each has a typed struct (calls.py), a payload that
does not fit it is one line to the user, and Lua's `{}` (an empty list on the wire) reads
as an empty table. The calls the engine makes of the editor: Python's list matches
editor.lua's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codecompanion_py import calls
from codecompanion_py.editor_port import EDITOR_METHODS
from codecompanion_py.engine import Engine
from codecompanion_py.errors import ConfigError
from codecompanion_py.ui import ops

from .test_engine import RecordingChannel

LUA = Path(__file__).parents[1] / "lua" / "codecompanion_py"
# rpc.notify("chat.open", ...), pcall(rpc.request, "mcp.status", ...), require(...).request, "files.read",
# request("history.rename", ...), send("config.set", ...), engine("chat.yolo"), when_idle("chat.clear", ...), vim.rpcrequest(chan, "request", "kill_agents", ...)
SENT = re.compile(
    r"""(?:\b(?:notify|notify_raw|request|engine|when_idle)\)?\s*[(,]\s*|\bsend\(\s*|"request",\s*|CodeCompanionPy\w+,\s*)"""
    r""""([a-z_]+(?:\.[a-z_]+)*)\"""",
)


def methods_lua_sends() -> set[str]:
    found: set[str] = set()
    for path in LUA.parent.rglob("*.lua"):  # lua/codecompanion/ too (its utils.log sends "log")
        found.update(SENT.findall(path.read_text()))
    return found


def test_every_method_lua_sends_has_a_struct():
    sent = methods_lua_sends()
    assert {"chat.submit", "chat.open", "config.set", "editor.reply", "history.rename", "kill_agents"} <= sent
    assert sorted(sent - set(calls.CALLS)) == []


def test_every_struct_is_a_method_lua_sends_and_the_engine_routes_it():
    assert sorted(set(calls.CALLS) - methods_lua_sends()) == []
    engine = Engine(RecordingChannel())
    try:
        routed = [*engine._notifications, *engine._requests]
        assert sorted(routed) == sorted(calls.CALLS)  # each once, as a notification or as a request
    finally:
        engine.shutdown()


def test_a_call_decodes_to_its_struct_with_lua_s_empty_tables():
    call = calls.decode("chat.submit", {"chat_id": 3, "text": "hi", "settings": [], "context": [], "removed": []})
    assert call == calls.ChatSubmit(chat_id=3, text="hi")
    assert calls.decode("mcp.prompt", {"server": "s", "arguments": []}) == calls.McpPrompt(server="s")
    assert calls.decode("chat.stop", []) == calls.ChatCall()
    assert calls.decode("history.rename", {"id": "a", "title": "b"}) == calls.SavedChatCall(id="a", title="b")
    assert calls.decode("config.set", {"a": 1}) == calls.ConfigSet(data={"a": 1})


def test_an_unknown_method_or_a_payload_that_does_not_fit_is_one_line():
    with pytest.raises(ConfigError, match="^unknown method 'chat.frobnicate'$"):
        calls.decode("chat.frobnicate", {})
    with pytest.raises(ConfigError) as raised:
        calls.decode("chat.submit", {"chat_id": 1, "text": ["not", "text"]})
    assert str(raised.value) == (
        "the editor sent chat.submit a payload the engine cannot read: Expected `str`, got `array` - at `$.text`"
    )
    with pytest.raises(ConfigError, match="a str, not a table"):
        calls.decode("chat.stop", "chat")


def test_a_bad_payload_is_reported_in_its_chat_and_a_request_s_as_an_error():
    engine = Engine(RecordingChannel())
    try:
        engine.dispatch("chat.submit", {"chat_id": 4, "removed": {"a": 1}}).result(5)
        [error] = [op for op in engine.channel.ops(4) if isinstance(op, ops.Error)]
        assert error.message.startswith("the editor sent chat.submit a payload the engine cannot read: ")
        with pytest.raises(ConfigError, match="unknown method 'history.frobnicate'"):
            engine.request("history.frobnicate", {})
        with pytest.raises(ConfigError, match="chat.submit is a notification, not a request"):
            engine.request("chat.submit", {})
        engine.dispatch("tools", {}).result(5)
        assert engine.channel.notes == [("tools is a request, not a notification", "ERROR")]
    finally:
        engine.shutdown()


def test_python_s_editor_methods_are_editor_lua_s():
    source = (LUA / "editor.lua").read_text()
    lua_methods = set(re.findall(r"^function methods\.(\w+)\(", source, re.MULTILINE))
    # editor.lua looks "tool.invoke" up as tool_invoke
    assert sorted(lua_methods) == sorted(method.replace(".", "_") for method in EDITOR_METHODS)
