"""The chat actions that go through the engine, in real Neovim: gs, gx, gr, gd and the
settings header, with a local server recording what each request carried."""

from __future__ import annotations

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread, sse_reply
from tests.e2e.test_chat import chunk, setup_local

pytestmark = pytest.mark.nvim

CAPTURE_NOTES = """
_G.cc_notes = {}
local notify = vim.notify
vim.notify = function(msg, level, opts)
  table.insert(_G.cc_notes, msg)
  return notify(msg, level, opts)
end
"""


def replies(n: int):
    return [sse_reply([chunk(f"reply {i}"), chunk(finish="stop")]) for i in range(1, n + 1)]


def action(editor, name: str, buf: int) -> None:
    editor.lua(f'require("codecompanion_py.chat.actions").{name}(...)', buf)


def send(editor, text: str, count: int) -> None:
    editor.type_prompt(text)
    editor.nvim.input("<CR>")
    editor.wait_event("CodeCompanionChatDone", count=count)


def roles(request) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in request.json()["messages"]]


def test_gs_gr_and_gx_change_what_the_next_request_carries(editor):
    editor.lua(CAPTURE_NOTES)
    with ServerThread(ScriptedServer.sequence(replies(5))) as server:
        setup_local(editor, server.url)
        editor.nvim.command("CodeCompanionChat")
        buf = editor.nvim.current.buffer.number
        send(editor, "one", 1)

        action(editor, "toggle_system_prompt", buf)
        editor.wait_for(lambda: "CodeCompanion: system prompt off for this chat" in editor.lua("return _G.cc_notes"))
        send(editor, "two", 2)
        assert roles(server.requests[1])[0] == ("user", "one")  # no system message
        action(editor, "toggle_system_prompt", buf)
        editor.wait_for(lambda: "CodeCompanion: system prompt on for this chat" in editor.lua("return _G.cc_notes"))

        # gr: the last reply goes, the same messages go out again; a draft survives
        editor.type_prompt("draft in progress")
        action(editor, "regenerate", buf)
        editor.wait_event("CodeCompanionChatDone", count=3)
        assert roles(server.requests[2]) == roles(server.requests[1])[:0] + [
            ("system", roles(server.requests[2])[0][1]),
            ("user", "one"),
            ("assistant", "reply 1"),
            ("user", "two"),
        ]
        text = editor.text()
        assert "reply 2" not in text and "reply 3" in text and text.count("## CodeCompanion") == 2
        assert editor.lines()[-3:] == ["## Me", "", "draft in progress"]

        # gx: a fresh chat, ChatCleared, and the next request knows nothing of before
        action(editor, "clear", buf)
        cleared = editor.wait_event("CodeCompanionChatCleared")
        assert cleared["data"] == {"bufnr": buf, "id": buf}
        assert editor.lines() == ["## Me", "", ""]
        # the intro stays, token counts go
        assert editor.virtual_text() == ["  Welcome to CodeCompanion ✨! Press ? for options"]
        send(editor, "fresh", 4)
        assert [r for r, _ in roles(server.requests[3])] == ["system", "user"]
        assert roles(server.requests[3])[-1] == ("user", "fresh")


def test_gd_shows_the_messages_and_the_last_request_in_a_read_only_float(editor):
    with ServerThread(ScriptedServer.sequence(replies(1))) as server:
        setup_local(editor, server.url)
        editor.nvim.command("CodeCompanionChat")
        buf = editor.nvim.current.buffer.number
        send(editor, "what is up", 1)
        action(editor, "debug", buf)
        editor.wait_for(lambda: editor.nvim.current.buffer.number != buf, what="the debug window")
        shown = editor.text()
        assert shown.startswith("# Debug: testllm") and "## Messages (3)" in shown
        assert '"what is up"' in shown and "reply 1" in shown and '"model": "test-model"' in shown
        assert not editor.nvim.current.buffer.options["modifiable"]
        editor.nvim.input("q")
        editor.wait_for(lambda: editor.nvim.current.buffer.number == buf, what="q to close the debug window")


SETTINGS = """{
  adapters = { http = { testllm = function()
    return require("codecompanion_py.adapters").extend("openai_compatible", {
      env = { url = "%s" }, schema = { model = { default = "test-model" } },
    })
  end } },
  interactions = { chat = { adapter = "testllm" } },
  display = { chat = { show_settings = true } },
}"""


def test_the_settings_header_round_trip(editor):
    editor.lua(CAPTURE_NOTES)
    with ServerThread(ScriptedServer.sequence(replies(2))) as server:
        editor.setup(SETTINGS % server.url)
        editor.nvim.command("CodeCompanionChat")
        buf = editor.nvim.current.buffer.number
        editor.wait_for(lambda: editor.lines()[0] == "---", what="the settings header")
        lines = editor.lines()
        closing = lines.index("---", 1)
        assert lines[1] == 'model: "test-model"' and "temperature: null" in lines[:closing]
        assert lines[closing + 1 : closing + 3] == ["", "## Me"]

        row = lines.index("temperature: null")
        editor.nvim.api.buf_set_lines(buf, row, row + 1, False, ["temperature: 0.25"])
        send(editor, "one", 1)
        assert server.requests[0].json()["temperature"] == 0.25

        # a wrong value: a clear error, nothing sent, the message still there to fix and resend
        editor.nvim.api.buf_set_lines(buf, row, row + 1, False, ["temperature: hot"])
        editor.type_prompt("two")
        before = editor.lines()
        editor.nvim.input("<CR>")
        editor.wait_for(
            lambda: any("temperature must be a number" in n for n in editor.lua("return _G.cc_notes")),
            what="the settings error",
        )
        editor.wait_for(lambda: editor.nvim.current.buffer.options["modifiable"], what="the chat unlocked")
        assert editor.lines() == before and len(server.requests) == 1

        # a new model in the header: used, announced, and the header says so
        editor.nvim.api.buf_set_lines(buf, row, row + 1, False, ["temperature: 1"])
        editor.nvim.api.buf_set_lines(buf, 1, 2, False, ['model: "other-model"'])
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone", count=2)
        sent = server.requests[1].json()
        assert sent["model"] == "other-model" and sent["temperature"] == 1
        model = [e for e in editor.events() if e["event"] == "CodeCompanionChatModel"][-1]["data"]
        assert model["model"] == "other-model" and model["bufnr"] == buf and model["adapter"]["name"] == "testllm"
        assert editor.lines()[1] == 'model: "other-model"'


def test_chat_adapter_and_model_events_carry_cc_data(editor):
    with ServerThread(ScriptedServer.sequence(replies(1))) as server:
        setup_local(editor, server.url)
        editor.nvim.command("CodeCompanionChat")
        buf = editor.nvim.current.buffer.number
        adapter = editor.wait_event("CodeCompanionChatAdapter")["data"]
        model = editor.wait_event("CodeCompanionChatModel")["data"]
        expected = {"name": "testllm", "formatted_name": "testllm", "model": "test-model"}  # as CC sends it
        assert adapter == {"bufnr": buf, "id": buf, "adapter": expected}
        assert model == {"bufnr": buf, "id": buf, "adapter": expected, "model": "test-model"}
        send(editor, "hi", 1)
        started = editor.wait_event("CodeCompanionRequestStarted")["data"]
        finished = editor.wait_event("CodeCompanionRequestFinished")["data"]
        assert started["id"] == finished["id"] and finished["status"] == "success"
        assert started["bufnr"] == buf and started["interaction"] == "chat" and started["adapter"] == expected
