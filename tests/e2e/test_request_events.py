"""CodeCompanion's request events for the inline assistant and :CodeCompanionCmd, in real
Neovim against a local server: RequestStarted, RequestStreaming and RequestFinished fire as
they do for a chat (spinner plugins follow them), with `interaction`, `adapter`, `id`,
`bufnr` and, at the end, `status`."""

from __future__ import annotations

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread, error_reply
from tests.e2e.test_chat_surface import chat_config, setup
from tests.e2e.test_inline import answer, open_code, wait_review

pytestmark = pytest.mark.nvim

REQUEST_EVENTS = ["CodeCompanionRequestStarted", "CodeCompanionRequestStreaming", "CodeCompanionRequestFinished"]


def requests(editor) -> list[dict]:
    return [e for e in editor.events() if e["event"].startswith("CodeCompanionRequest")]


def test_an_inline_request_fires_the_request_events_between_its_own(editor, tmp_path):
    fixed = "PLACEMENT: replace\ndef add(a, b):\n    return a + b\n"
    with ServerThread(ScriptedServer.sequence([answer(fixed)])) as server:
        setup(editor, server.url, chat_config(""))
        buf = open_code(editor, tmp_path)
        editor.nvim.command("1,2CodeCompanion fix the bug")
        wait_review(editor, buf)
    names = [e for e in editor.event_names() if e.startswith(("CodeCompanionRequest", "CodeCompanionInline"))]
    assert names == ["CodeCompanionInlineStarted", *REQUEST_EVENTS, "CodeCompanionInlineFinished"]
    started, streaming, finished = (e["data"] for e in requests(editor))
    assert started["interaction"] == "inline" and started["bufnr"] == buf.number
    assert started["adapter"]["name"] == "testllm" and started["adapter"]["model"] == "test-model"
    assert started["id"] == streaming["id"] == finished["id"]
    assert finished["status"] == "success"


def test_cmd_fires_the_request_events_and_says_when_it_failed(editor, tmp_path):
    replies = [answer("%s/return/yield/g"), error_reply(500, "the server is down")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup(editor, server.url, chat_config(""))
        buf = open_code(editor, tmp_path)
        editor.nvim.command("CodeCompanionCmd replace return with yield")
        editor.wait_event("CodeCompanionRequestFinished")
        editor.wait_for(lambda: editor.nvim.api.get_mode()["mode"] == "c", what="the command line")
        editor.nvim.input("<Esc>")
        assert [e["event"] for e in requests(editor)] == REQUEST_EVENTS
        started, _, finished = (e["data"] for e in requests(editor))
        assert started["interaction"] == "cmd" and started["bufnr"] == buf.number
        assert started["adapter"]["name"] == "testllm" and started["id"] == finished["id"]
        assert finished["status"] == "success"

        editor.nvim.command("CodeCompanionCmd again")
        failed = editor.wait_event("CodeCompanionRequestFinished", count=2)["data"]
        assert failed["status"] == "error" and failed["interaction"] == "cmd"
        assert failed["id"] != finished["id"]
