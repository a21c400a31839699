"""ask_questions in real Neovim: the model's questions are shown in the chat and put to the
user through `vim.ui.select` (options, Other) and `vim.ui.input` (a typed answer), and the
answers go back to the model."""

from __future__ import annotations

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread

from .test_tools import setup_with_tools, text_reply, tool_call_reply, tool_messages

pytestmark = pytest.mark.nvim

QUESTIONS = {
    "questions": [
        {
            "header": "Runner",
            "question": "Which test runner should I use?",
            "options": [{"label": "pytest", "recommended": True}, {"label": "unittest"}],
        },
        {"header": "Name", "question": "What should the module be called?"},
        {"header": "Style", "question": "Formatter?", "options": [{"label": "ruff"}]},
    ]
}


def test_questions_are_put_to_the_user_and_the_answers_reach_the_model(editor):
    replies = [tool_call_reply(("q1", "ask_questions", QUESTIONS)), text_reply("Thanks.")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        # pytest; typed "calc"; Other, then typed "black"
        setup_with_tools(editor, server.url, answers=["pytest", "calc", "Other", "black"])
        editor.nvim.command("CodeCompanionChat Set up tests with @{agent}")
        chat = editor.nvim.current.buffer.number
        editor.wait_event("CodeCompanionChatDone", timeout=30)
        [answered] = tool_messages(server.requests[1])
        assert answered["content"] == "**Runner**: pytest\n**Name**: calc\n**Style**: black"
        prompts = editor.lua("return _G.cc_prompts")
        assert prompts[0]["items"] == ["pytest (recommended)", "unittest", "Other: type an answer", "Skip", "Cancel"]
        text = editor.text(chat)
        assert "Question 1/3: Runner" in text and "Which test runner should I use?" in text
        assert "Question 2/3: Name" in text
