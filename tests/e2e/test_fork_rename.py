"""`/fork` (a new chat with the conversation so far, to take elsewhere) and `/rename` (the
chat's title in the history), as CodeCompanion 19 has them, in headless Neovim."""

from __future__ import annotations

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread

from .test_chat_surface import reply, send
from .test_tools import setup_with_tools

pytestmark = pytest.mark.nvim

RUN = (
    "local id, name = ... require('codecompanion_py.chat.slash').run(require('codecompanion_py.chat').chats[id], name)"
)
SAVED = "local rpc = require('codecompanion_py.rpc') return rpc.request('history.list', { dir = rpc.history_dir() })"


def test_fork_copies_the_conversation_and_each_chat_goes_its_own_way(editor):
    replies = [reply("the first answer"), reply("the fork's answer"), reply("the original's answer")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup_with_tools(editor, server.url)
        editor.nvim.command("CodeCompanionChat")
        original = editor.nvim.current.buffer.number
        send(editor, "first question", count=1)
        editor.lua(RUN, original, "fork")
        fork = editor.wait_for(
            lambda: editor.nvim.current.buffer.number != original and editor.nvim.current.buffer.number,
            what="the fork shown",
        )
        assert editor.lines(fork) == editor.lines(original)
        editor.wait_for(lambda: editor.lua("return require('codecompanion_py.chat').chats[...].engine_ready", fork))
        send(editor, "asked in the fork", count=2)
        sent = server.requests[1].json()["messages"]
        assert [(m["role"], m["content"]) for m in sent if m["role"] != "system"] == [
            ("user", "first question"),
            ("assistant", "the first answer"),
            ("user", "asked in the fork"),
        ]
        assert "asked in the fork" not in editor.lines(original)
        editor.nvim.command(f"buffer {original}")
        send(editor, "asked in the original", count=3)
        sent = server.requests[2].json()["messages"]
        assert "asked in the fork" not in [m["content"] for m in sent]
        ids = "local c = require('codecompanion_py.chat').chats return { c[...].open_payload.resume_id, c[select(2, ...)].open_payload.resume_id }"
        first, second = editor.lua(ids, original, fork)
        assert first and second and first != second  # each saved as its own chat


def test_rename_titles_the_chat_in_the_history(editor):
    with ServerThread(ScriptedServer.sequence([reply("an answer"), reply("more")])) as server:
        setup_with_tools(editor, server.url, answers=["A title of my own"])
        editor.nvim.command("CodeCompanionChat")
        chat = editor.nvim.current.buffer.number
        editor.lua(RUN, chat, "rename")  # before the first save: it is kept for it
        editor.wait_for(
            lambda: "CodeCompanion: the chat is now 'A title of my own'" in editor.lua("return _G.cc_notes")
        )
        send(editor, "hello there", count=1)
        mine = "return require('codecompanion_py.chat').chats[...].open_payload.resume_id"

        def saved():  # the history folder is shared with other tests: this chat's entry
            return next((e for e in editor.lua(SAVED) if e["id"] == editor.lua(mine, chat)), None)

        assert editor.wait_for(saved, what="the chat saved")["title"] == "A title of my own"
        editor.lua("_G.cc_answers = { 'Renamed again' }")
        editor.lua(RUN, chat, "rename")  # after it: the saved chat changes at once
        editor.wait_for(lambda: saved()["title"] == "Renamed again", what="the saved title changed")
