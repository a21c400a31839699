"""`gm`: a follow-up typed while the reply streams (CodeCompanion's `btw`), given to the LLM with
the tool results of the same turn, or sent as the next message when the turn has no further
request (a plain reply, an agent's turn)."""

from __future__ import annotations

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread

from .lua_tools import calculator_callback
from .test_acp import open_agent_chat
from .test_chat_surface import reply
from .test_tools import setup_with_tools, text_reply, tool_call_reply

pytestmark = pytest.mark.nvim


def press_gm_while_streaming(editor) -> None:
    editor.wait_for(
        lambda: editor.lua(
            "return vim.b.codecompanion_py_streaming or "
            "require('codecompanion_py.chat').last_chat().status == 'streaming'"
        ),
        what="the reply streaming",
    )
    editor.nvim.input("gm")


def test_a_follow_up_goes_with_the_tool_results_of_the_same_turn(editor):
    call = ("call_calc", "calculator", {"num1": 2, "num2": 3, "operation": "add"})
    replies = [tool_call_reply(call, delay=0.4), text_reply("5, and hi")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup_with_tools(editor, server.url, calculator_callback(""), answers=["and say hi"])
        editor.nvim.command("CodeCompanionChat Use the @{calculator} tool for 2+3")
        press_gm_while_streaming(editor)
        editor.wait_event("CodeCompanionChatDone", timeout=30)
        assert editor.lua("return _G.cc_prompts") == []  # vim.ui.input asked "btw ...", no approval
        second = server.requests[1].json()["messages"]
        assert [m["role"] for m in second[-2:]] == ["tool", "user"]
        assert second[-1]["content"] == "and say hi"
        lines = editor.lines()
        at = lines.index("and say hi")
        assert lines[at - 2] == "## Me" and lines[at + 2].startswith("## CodeCompanion")
        assert lines.count("5, and hi") == 1
        assert len(server.requests) == 2  # nothing left over to send


def test_a_follow_up_after_a_plain_reply_is_the_next_message(editor):
    with ServerThread(ScriptedServer.sequence([reply("first answer", delay=1.0), reply("second")])) as server:
        setup_with_tools(editor, server.url, answers=["one more thing"])
        editor.nvim.command("CodeCompanionChat hello")
        press_gm_while_streaming(editor)
        editor.wait_event("CodeCompanionChatDone", count=2, timeout=30)
        second = server.requests[1].json()["messages"]
        assert second[-1] == {"role": "user", "content": "one more thing"}
        assert editor.lines().count("one more thing") == 1


def test_gm_outside_a_reply_says_what_it_is_for(editor):
    with ServerThread(ScriptedServer.sequence([])) as server:
        setup_with_tools(editor, server.url)
        editor.nvim.command("CodeCompanionChat")
        editor.nvim.input("gm")
        editor.wait_for(lambda: editor.lua("return _G.cc_notes"), what="the note")
        assert editor.lua("return _G.cc_notes") == [
            "CodeCompanion: gm sends a follow-up while a reply streams; now write it and send it"
        ]


def test_a_follow_up_to_an_agent_is_its_next_prompt(editor, tmp_path):
    open_agent_chat(editor, tmp_path, "pause 1.5", answers=["and then this"])
    press_gm_while_streaming(editor)
    editor.wait_event("CodeCompanionChatDone", count=2, timeout=30)
    text = editor.text()
    assert "paused" in text and "echo: and then this" in text
