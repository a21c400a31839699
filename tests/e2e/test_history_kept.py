"""What the history keeps, in real Neovim against a local server: a chat whose only request
failed is not kept (its first save, made while the request ran, is removed), and a chat's
title is what the user typed, not what `prompt_decorator` made of it."""

from __future__ import annotations

import json

import msgspec
import pytest

from codecompanion_py.demo.connection import Reply
from codecompanion_py.demo.server import ScriptedServer, ServerThread
from tests.e2e.test_chat_surface import reply, send, setup

pytestmark = pytest.mark.nvim

DECORATED = """interactions = { chat = { adapter = "testllm", opts = {
  prompt_decorator = function(message) return "<prompt>" .. message .. "</prompt>" end,
} } },"""


def slow_failure() -> Reply:
    """A 400 whose body comes half a second after its head: the chat is saved meanwhile."""
    body = msgspec.json.encode({"error": {"message": "the model is not available"}})
    headers = {"content-type": "application/json"}
    return Reply(status=400, headers=headers, chunks=[b"", body], length=len(body), delay=0.5)


def test_a_failed_chat_is_not_kept_and_titles_are_what_the_user_typed(editor, tmp_path):
    folder = tmp_path / "history"

    def saved() -> list[dict]:
        return [json.loads(p.read_text()) for p in folder.glob("[!.]*.json")]

    with ServerThread(ScriptedServer.sequence([slow_failure(), reply("Paris.")])) as server:
        setup(editor, server.url, DECORATED)
        editor.lua(f"require('codecompanion_py.rpc').history_dir = function() return '{folder}' end")
        editor.nvim.command("CodeCompanionChat")
        send(editor, "Will this fail?", 1)
        assert "the model is not available" in editor.text()

        editor.nvim.command("CodeCompanionChat")  # a second chat, whose request works
        send(editor, "Capital of France?", 2)
        [kept] = editor.wait_for(lambda: saved() or None, what="the chat that got a reply saved")
        assert [m["role"] for m in kept["messages"]] == ["user", "assistant"]
        assert kept["messages"][0]["parts"][0]["text"] == "<prompt>Capital of France?</prompt>"  # what the LLM got
        assert kept["title"] == "Capital of France?"
    assert len(saved()) == 1  # the failed chat's file is gone
