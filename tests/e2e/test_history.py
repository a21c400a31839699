"""Saved chats in real Neovim: a chat of two turns, Neovim quit, a new Neovim, the chat
reopened from :CodeCompanionHistory and carried on with its whole history."""

from __future__ import annotations

import json

import pynvim
import pytest

from codecompanion_py.demo.launch import nvim_binary
from codecompanion_py.demo.server import ScriptedServer, ServerThread, json_reply, sse_reply
from tests.e2e.conftest import RECORD_EVENTS, Editor, quit_nvim
from tests.e2e.test_chat import chunk
from tests.e2e.test_chat_surface import chat_config, reply, send, setup

pytestmark = pytest.mark.nvim

PICK_FIRST = """
_G.cc_picked = {}
vim.ui.select = function(items, opts, on_choice)
  table.insert(_G.cc_picked, { prompt = opts.prompt, labels = vim.tbl_map(opts.format_item, items) })
  on_choice(items[1], 1)
end
"""


def start(nvim_home, monkeypatch, data_home) -> tuple[Editor, int]:
    init, env = nvim_home
    for key in ("XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.setenv("XDG_DATA_HOME", str(data_home))  # where the chats are saved
    nvim = pynvim.attach("child", argv=[nvim_binary(), "--embed", "--headless", "-u", str(init)])
    editor = Editor(nvim)
    editor.lua(RECORD_EVENTS)
    return editor, nvim.call("getpid")


def close_chat(editor) -> None:
    """<C-c>: the chat is gone (only hidden, a pick would show it again, not reopen it)."""
    editor.lua("require('codecompanion_py.chat').close(vim.api.nvim_get_current_buf())")
    editor.wait_event("CodeCompanionChatClosed")


def test_a_chat_is_saved_and_carried_on_after_neovim_restarts(nvim_home, monkeypatch, tmp_path):
    data = tmp_path / "data"
    replies = [reply("Paris."), reply("About 2.1 million."), reply("The Seine.")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        editor, pid = start(nvim_home, monkeypatch, data)
        try:
            setup(editor, server.url, chat_config(""))
            editor.nvim.command("CodeCompanionChat")
            send(editor, "Capital of France?", 1)
            send(editor, "Its population?", 2)
            folder = data / "nvim" / "codecompanion_py" / "history"
            saved = editor.wait_for(lambda: list(folder.glob("[!.]*.json")) or None, what="the saved chat")
        finally:
            quit_nvim(editor.nvim, pid)
        record = json.loads(saved[0].read_text())
        assert record["title"] == "Capital of France?" and record["adapter"] == "testllm"
        assert [m["role"] for m in record["messages"]] == ["user", "assistant", "user", "assistant"]

        editor, pid = start(nvim_home, monkeypatch, data)
        try:
            setup(editor, server.url, chat_config(""))
            editor.lua(PICK_FIRST)
            editor.nvim.command("CodeCompanionHistory")
            editor.wait_for(lambda: editor.nvim.current.buffer.options["filetype"] == "codecompanion", what="reopened")
            [picked] = editor.lua("return _G.cc_picked")
            assert picked["prompt"] == "Saved chats"
            assert picked["labels"][0].startswith("Capital of France?  (testllm, ")
            text = editor.text()
            assert "## Me\n\nCapital of France?\n\n## CodeCompanion (testllm)\n\nParis." in text
            assert "About 2.1 million." in text and editor.lines()[-3:] == ["## Me", "", ""]
            send(editor, "Its river?", 1)
            roles = [(m["role"], m["content"]) for m in server.requests[2].json()["messages"] if m["role"] != "system"]
            assert roles == [
                ("user", "Capital of France?"),
                ("assistant", "Paris."),
                ("user", "Its population?"),
                ("assistant", "About 2.1 million."),
                ("user", "Its river?"),
            ]
        finally:
            quit_nvim(editor.nvim, pid)
    again = json.loads(saved[0].read_text())  # the same file, now with the third turn
    assert len(again["messages"]) == 6 and again["id"] == record["id"]


def test_a_title_is_written_by_the_llm_and_chats_are_renamed_and_deleted(editor, tmp_path):
    replies = [reply("Paris."), reply('"French capital question."'), reply("Blue.")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup(
            editor,
            server.url,
            chat_config("") + " interactions = { chat = { adapter = 'testllm' },"
            " background = { chat = { opts = { enabled = true } } } },",
        )
        folder = tmp_path / "history"
        editor.lua(f"require('codecompanion_py.rpc').history_dir = function() return '{folder}' end")
        editor.nvim.command("CodeCompanionChat")
        send(editor, "Capital of France?", 1)
        editor.wait_for(lambda: len(server.requests) == 2, what="the title request")
        title_request = server.requests[1].json()["messages"]
        assert title_request[0]["role"] == "system" and "title" in title_request[0]["content"]
        assert "Capital of France?" in title_request[1]["content"] and "Paris." in title_request[1]["content"]

        def saved_titles():
            return sorted(json.loads(p.read_text())["title"] for p in folder.glob("[!.]*.json"))

        editor.wait_for(lambda: saved_titles() == ["French capital question"], what="the written title")
        send(editor, "Sky colour?", 2)  # one title per chat: no second title request
        assert len(server.requests) == 3 and saved_titles() == ["French capital question"]

        editor.lua(PICK_FIRST)
        editor.lua("vim.ui.input = function(opts, on_done) _G.cc_default = opts.default; on_done('Geography') end")
        editor.nvim.command("CodeCompanionHistory rename")
        editor.wait_for(lambda: saved_titles() == ["Geography"], what="renamed")
        assert editor.lua("return _G.cc_default") == "French capital question"
        assert editor.lua("return _G.cc_picked")[-1]["prompt"] == "Saved chat to rename"
        send(editor, "Grass colour?", 3)  # the open chat keeps the new title
        assert saved_titles() == ["Geography"]
        editor.nvim.command("CodeCompanionHistory delete")  # answers the first choice: Delete
        editor.wait_for(lambda: saved_titles() == [], what="deleted")


def test_a_reopened_chat_goes_on_with_another_adapter(editor, tmp_path):
    first = [reply("Paris."), reply("Blue.")]
    models = json_reply({"data": [{"id": "other-model"}]})
    other = ScriptedServer(lambda r: models if r.method == "GET" else reply("Seine."))
    with ServerThread(ScriptedServer.sequence(first)) as one, ServerThread(other) as two:
        editor.lua("vim.env.OTHER_KEY = 'k'")
        setup(
            editor,
            one.url,
            chat_config("")
            + f""" adapters = {{ http = {{
                 testllm = function() return require("codecompanion.adapters").extend("openai_compatible",
                   {{ env = {{ url = "{one.url}" }}, schema = {{ model = {{ default = "test-model" }} }} }}) end,
                 other = function() return require("codecompanion.adapters").extend("openai_compatible",
                   {{ env = {{ url = "{two.url}" }}, schema = {{ model = {{ default = "other-model" }} }} }}) end,
               }} }},""",
        )
        folder = tmp_path / "history"
        editor.lua(f"require('codecompanion_py.rpc').history_dir = function() return '{folder}' end")
        editor.nvim.command("CodeCompanionChat")
        send(editor, "Capital of France?", 1)
        send(editor, "Sky colour?", 2)
        close_chat(editor)
        editor.lua(PICK_FIRST)
        editor.nvim.command("CodeCompanionHistory")
        editor.wait_for(lambda: "Sky colour?" in editor.text(), what="reopened")
        editor.lua("""vim.ui.select = function(items, opts, on_choice)
          for i, item in ipairs(items) do
            local label = opts.format_item and opts.format_item(item) or item
            if tostring(label):find("other", 1, true) then return on_choice(item, i) end
          end
          on_choice(items[1], 1)
        end""")
        editor.nvim.input("ga")
        editor.wait_event("CodeCompanionChatAdapter", count=3)
        send(editor, "Its river?", 3)
        body = [r for r in two.requests if r.method == "POST"][-1].json()
        assert body["model"] == "other-model"
        assert [(m["role"], m["content"]) for m in body["messages"] if m["role"] != "system"] == [
            ("user", "Capital of France?"),
            ("assistant", "Paris."),
            ("user", "Sky colour?"),
            ("assistant", "Blue."),
            ("user", "Its river?"),
        ]


def test_an_agent_chat_reopens_in_its_own_session(editor, tmp_path):
    from tests.e2e.test_acp import open_agent_chat

    project = tmp_path / "proj"
    project.mkdir()
    log = tmp_path / "agent.log"
    folder = tmp_path / "history"
    editor.lua(f"require('codecompanion_py.rpc').history_dir = function() return '{folder}' end")
    open_agent_chat(editor, project, "hello there", env_lua=f'FAKE_AGENT_LOG = "{log}"')
    editor.wait_event("CodeCompanionChatDone")
    saved = editor.wait_for(lambda: list(folder.glob("[!.]*.json")) or None, what="the saved chat")
    record = json.loads(saved[0].read_text())
    assert record["adapter"] == "fake" and record["session_id"] == "sess-1"
    close_chat(editor)
    editor.lua(PICK_FIRST)
    editor.nvim.command("CodeCompanionHistory")
    editor.wait_for(lambda: "echo: hello there" in editor.text(), what="reopened")
    send(editor, "and again", 2)
    sent = [json.loads(line) for line in log.read_text().splitlines()]
    loads = [m["params"]["sessionId"] for m in sent if m.get("method") == "session/load"]
    prompts = [m["params"]["prompt"] for m in sent if m.get("method") == "session/prompt"]
    assert loads == ["sess-1"]
    assert prompts[-1] == [{"type": "text", "text": "and again"}]  # the agent remembers: no transcript told
    assert "earlier question" not in editor.text()  # its replay is not drawn again
    assert editor.text().count("echo: hello there") == 1 and "echo: and again" in editor.text()


def test_qa_mid_stream_loses_nothing_that_was_on_screen(nvim_home, monkeypatch, tmp_path):
    data = tmp_path / "data"
    streaming = sse_reply([chunk("The first half of the answer, "), chunk("then more")], delay=0.3)
    streaming.hang = True  # the reply never finishes
    with ServerThread(ScriptedServer.sequence([streaming])) as server:
        editor, pid = start(nvim_home, monkeypatch, data)
        try:
            setup(editor, server.url, chat_config(""))
            editor.nvim.command("CodeCompanionChat")
            editor.type_prompt("Explain it all")
            editor.nvim.input("<CR>")
            editor.wait_for(lambda: "then more" in editor.text(), what="the reply on screen")
        finally:
            quit_nvim(editor.nvim, pid)  # :qa! while the reply still streams
    folder = data / "nvim" / "codecompanion_py" / "history"
    [saved] = list(folder.glob("[!.]*.json"))
    messages = json.loads(saved.read_text())["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[1]["parts"][0]["text"] == "The first half of the answer, then more"


def test_a_crash_mid_stream_keeps_what_streamed_a_second_before(nvim_home, monkeypatch, tmp_path):
    import os
    import signal

    data = tmp_path / "data"
    streaming = sse_reply([chunk("Streamed before the crash.")])
    streaming.hang = True
    with ServerThread(ScriptedServer.sequence([streaming])) as server:
        editor, pid = start(nvim_home, monkeypatch, data)
        try:
            setup(editor, server.url, chat_config(""))
            editor.nvim.command("CodeCompanionChat")
            editor.type_prompt("Go")
            editor.nvim.input("<CR>")
            editor.wait_for(lambda: "before the crash" in editor.text(), what="the reply on screen")
            folder = data / "nvim" / "codecompanion_py" / "history"

            def saved_reply():
                for path in folder.glob("[!.]*.json"):  # not a save under way (`.saving-*`, renamed at its end)
                    messages = json.loads(path.read_text())["messages"]
                    if len(messages) == 2:
                        return messages[1]["parts"][0]["text"]
                return None

            # saved while it streams (every second): no exit hook is needed
            assert editor.wait_for(saved_reply, what="a save mid-stream") == "Streamed before the crash."
            os.kill(pid, signal.SIGKILL)
        finally:
            quit_nvim(editor.nvim, pid, grace=1)
