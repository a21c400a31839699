"""Saved chats in real Neovim: a chat of two turns, Neovim quit, a new Neovim, the chat
reopened from :CodeCompanionHistory and carried on with its whole history."""

from __future__ import annotations

import json

import pynvim
import pytest

from codecompanion_py.demo.launch import nvim_binary
from codecompanion_py.demo.server import ScriptedServer, ServerThread
from tests.e2e.conftest import RECORD_EVENTS, Editor, quit_nvim
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
            saved = editor.wait_for(lambda: list(folder.glob("*.json")) or None, what="the saved chat")
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
