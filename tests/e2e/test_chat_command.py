""":CodeCompanionChat read as CodeCompanion 19 reads it, in real Neovim against a local
server and the fake agent: `Changes` lists the files the LLM edited in the quickfix list,
`adapter=`, `model=` and `command=` are taken wherever they are, and nothing of these goes
to the LLM as a prompt."""

from __future__ import annotations

import json
import sys

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread

from .test_acp import FAKE_AGENT
from .test_chat_surface import notes, reply, setup
from .test_tools import setup_with_tools, text_reply, tool_call_reply

pytestmark = pytest.mark.nvim


def quickfix(editor) -> dict:
    return editor.lua("""local qf = vim.fn.getqflist({ title = 1, items = 1 })
      return { title = qf.title, items = vim.tbl_map(function(i)
        return { name = vim.api.nvim_buf_get_name(i.bufnr), lnum = i.lnum, text = i.text } end, qf.items) }""")


def test_changes_lists_the_files_the_llm_edited_in_the_quickfix_list(editor, tmp_path):
    replies = [
        tool_call_reply(("c1", "create_file", {"filepath": "new.py", "content": "x = 1\n"})),
        text_reply("Created."),
    ]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        editor.nvim.command(f"cd {tmp_path}")
        setup_with_tools(editor, server.url, "create_file = { opts = { require_confirmation_after = false } },")
        editor.nvim.command("CodeCompanionChat Changes")  # nothing edited yet: said, nothing sent
        assert any("no files have been edited" in n for n in editor.lua("return _G.cc_notes"))
        assert editor.nvim.call("getqflist") == []

        editor.nvim.command("CodeCompanionChat Create new.py with @{create_file}")
        editor.wait_event("CodeCompanionChatDone", timeout=30)
        editor.nvim.command("changes")  # a user's own list comes first: Changes pushes a new one
        editor.nvim.command("CodeCompanionChat changes")  # as CodeCompanion: any case
        listed = quickfix(editor)
        assert listed["title"] == "Files edited by the LLM"
        assert listed["items"] == [{"name": str(tmp_path / "new.py"), "lnum": 1, "text": "created by create_file"}]
        assert editor.nvim.current.buffer.options["buftype"] == "quickfix"
        assert len(server.requests) == 2  # the LLM heard neither command


def test_adapter_and_model_are_read_anywhere_and_other_words_stay_in_the_prompt(editor):
    with ServerThread(ScriptedServer.sequence([reply("ok")])) as server:
        setup(editor, server.url, 'interactions = { chat = { adapter = "testllm" } },')
        editor.nvim.command("CodeCompanionChat explain x=1 please model=other-model")
        editor.wait_event("CodeCompanionChatDone")
        body = server.requests[0].json()
        assert body["model"] == "other-model"
        assert body["messages"][-1]["content"] == "explain x=1 please"  # a word that is no option is kept


def test_command_picks_how_an_agent_starts_and_a_wrong_one_is_said(editor, tmp_path):
    log = tmp_path / "agent.log"
    editor.nvim.command(f"cd {tmp_path}")
    with ServerThread(ScriptedServer.sequence([reply("an HTTP reply")])) as server:
        editor.setup(f"""{{ adapters = {{
          acp = {{ fake = {{ defaults = {{ timeout = 10000 }}, commands = {{
            default = {{ "{sys.executable}", "{FAKE_AGENT}" }},
            logged = {{ "env", "FAKE_AGENT_LOG={log}", "{sys.executable}", "{FAKE_AGENT}" }} }} }} }},
          http = {{ testllm = function()
            return require("codecompanion.adapters").extend("openai_compatible", {{ env = {{ url = "{server.url}" }} }})
          end }} }} }}""")
        editor.lua("_G.cc_notes = {}; vim.notify = function(msg) table.insert(_G.cc_notes, msg) end")
        editor.nvim.command("CodeCompanionChat adapter=fake command=logged stream please")
        editor.wait_event("CodeCompanionChatDone", timeout=30)
        assert "Hello from the fake agent." in editor.text()
        assert log.exists() and "session/prompt" in log.read_text()  # started with `logged`

        editor.nvim.command("CodeCompanionChat adapter=fake command=nope hi")
        editor.wait_for(
            lambda: any("has no command 'nope'; it has default, logged" in n for n in notes(editor)),
            what="the unknown command said",
        )
        editor.nvim.command("CodeCompanionChat adapter=testllm command=logged hi")
        editor.wait_for(
            lambda: any(
                "command=logged picks how an agent starts; this chat's adapter is not an agent" in n
                for n in notes(editor)
            ),
            what="command= for an HTTP adapter said",
        )
        editor.wait_for(lambda: len(server.requests) == 1, what="the HTTP chat asked all the same")
        assert "command=" not in json.dumps(server.requests[0].json()["messages"])
