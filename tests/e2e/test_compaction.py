"""A chat near its model's context window, in real Neovim: the earlier turns are summarised
by the LLM (User CodeCompanionChatCompacting fires, the chat says so) and the request goes
on with the summary; `/compact` does it on demand."""

from __future__ import annotations

import pytest

from codecompanion_py.chat.compaction import SUMMARISE
from codecompanion_py.demo.server import ScriptedServer, ServerThread
from tests.e2e.test_chat_surface import chat_config, reply, send, setup

pytestmark = pytest.mark.nvim

STORY = "Once upon a time there was a very long story. " * 20  # ~240 tokens


def non_system(body: dict) -> list[tuple[str, str]]:
    return [(m["role"], m["content"][:40]) for m in body["messages"] if m["role"] != "system"]


def test_a_chat_past_its_window_is_summarised_and_goes_on(editor):
    replies = [reply(STORY), reply("Second answer."), reply("The story, in brief."), reply("Third answer.")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        # a model with a small window (300 tokens) and the default trigger, 85% of it
        editor.lua(f"""require("codecompanion").setup({{
          adapters = {{ http = {{ small = function()
            return require("codecompanion.adapters").extend("openai_compatible", {{
              env = {{ url = "{server.url}" }},
              schema = {{ model = {{ default = "tiny", choices = {{ tiny = {{ meta = {{ context_window = 300 }} }} }} }} }},
            }})
          end }} }},
          interactions = {{ chat = {{ adapter = "small",
            opts = {{ context_management = {{ compaction = {{ min_token_savings = 0 }} }} }} }} }},
        }})""")
        editor.nvim.command("CodeCompanionChat")
        send(editor, "Tell me a story", 1)
        send(editor, "Shorter?", 2)  # 2 turns: nothing older than the last two to summarise yet
        assert len(server.requests) == 2
        send(editor, "Thanks!", 3)
        assert len(server.requests) == 4
        summary_request = server.requests[2].json()["messages"]
        assert summary_request[0] == {"role": "system", "content": SUMMARISE}
        assert "Tell me a story" in summary_request[1]["content"] and "very long story" in summary_request[1]["content"]
        assert non_system(server.requests[3].json()) == [
            ("user", "Summary of the 2 earlier messages of thi"),
            ("user", "Shorter?"),
            ("assistant", "Second answer."),
            ("user", "Thanks!"),
        ]
        assert "The story, in brief." in server.requests[3].json()["messages"][1]["content"]
        events = editor.event_names()
        assert "CodeCompanionChatCompacting" in events
        assert events.index("CodeCompanionChatCompacting") < len(events) - 1
        assert "Compacted: the 2 earlier messages" in editor.text()
        assert "of the model's 300-token window" in editor.text()


def test_slash_compact_summarises_on_demand(editor):
    replies = [reply("One."), reply("Two."), reply("Three."), reply("All of it, briefly."), reply("Four.")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup(editor, server.url, chat_config(""))
        editor.nvim.command("CodeCompanionChat")
        for count, text in enumerate(["first", "second", "third"], start=1):
            send(editor, text, count)
        editor.nvim.command("normal! G")
        editor.nvim.options["completeopt"] = "menuone,noinsert"
        editor.nvim.input("A/comp<C-x><C-o>")
        editor.wait_for(lambda: editor.nvim.call("pumvisible") == 1, what="the completion menu")
        editor.nvim.input("<C-y><Esc>")
        editor.wait_event("CodeCompanionChatDone", count=4)
        assert server.requests[3].json()["messages"][0]["content"] == SUMMARISE
        assert "Compacted: the 2 earlier messages" in editor.text()
        send(editor, "fourth", 5)
        assert non_system(server.requests[4].json())[0] == ("user", "Summary of the 2 earlier messages of thi")
        assert [m for m in non_system(server.requests[4].json()) if m[0] == "user"][1:] == [
            ("user", "second"),
            ("user", "third"),
            ("user", "fourth"),
        ]
