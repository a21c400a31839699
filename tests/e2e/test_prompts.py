"""The prompt library, the action palette and workflows in real Neovim against a local
server: a built-in prompt run from the palette on a selection, a markdown prompt of the
user's own (a nested, symlinked folder; a helper Lua file) run by alias and as a slash
command, a workflow of three steps that stops at its repeat limit, the Commit message prompt
that sends nothing while nothing is staged, a buffer named by its file (by its number only
without one), and a picker that is not installed said once."""

from __future__ import annotations

import subprocess

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread
from tests.e2e.test_chat_surface import chat_config, notes, reply, setup
from tests.e2e.test_context import llm_requests

pytestmark = pytest.mark.nvim

PICK_NAMED = """
_G.cc_offered = {}
vim.ui.select = function(items, opts, on_choice)
  local labels = vim.tbl_map(function(i) return opts.format_item and opts.format_item(i) or i end, items)
  table.insert(_G.cc_offered, labels)
  for i, label in ipairs(labels) do
    if label:find(_G.cc_pick, 1, true) then return on_choice(items[i], i) end
  end
  on_choice(nil, nil)
end
"""


def messages(server, index):
    return llm_requests(server)[index].json()["messages"]


def test_the_palette_lists_and_runs_a_builtin_prompt_on_a_selection(editor, tmp_path):
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    with ServerThread(ScriptedServer.sequence([reply("It subtracts.")])) as server:
        setup(editor, server.url, chat_config(""))
        editor.lua(PICK_NAMED)
        editor.lua("_G.cc_pick = 'Explain code'")
        editor.nvim.command(f"cd {tmp_path}")
        editor.nvim.command(f"edit {tmp_path / 'calc.py'}")
        editor.nvim.command("1,2CodeCompanionActions")
        editor.wait_event("CodeCompanionChatDone")
        offered = editor.lua("return _G.cc_offered")[0]
        assert offered[0].startswith("Chat  Open a new chat")
        assert any(label.startswith("Explain code") for label in offered)
        assert any(label.startswith("Commit message") for label in offered)
        sent = messages(server, 0)
        assert any(m["role"] == "system" and "You explain code" in m["content"] for m in sent)
        assert sent[-1]["content"].startswith("Explain this code from calc.py (lines 1-2):")  # its name, not "buffer 1"
        assert "````python\ndef add(a, b):\n    return a - b\n````" in sent[-1]["content"]

        # without a selection, prompts for visual mode are not offered
        editor.lua("_G.cc_pick = 'nothing'")
        editor.nvim.command("wincmd p")
        editor.nvim.command("CodeCompanionActions")
        offered = editor.lua("return _G.cc_offered")[-1]
        assert not any(label.startswith("Explain code") for label in offered)
        assert any(label.startswith("Commit message") for label in offered)


def test_a_markdown_prompt_of_the_users_own_runs_by_alias_and_as_a_slash_command(editor, tmp_path):
    real = tmp_path / "real-prompts" / "nested"
    real.mkdir(parents=True)
    (real / "review.md").write_text(
        "---\nname: Review\ninteraction: chat\ndescription: Review with our rules\n"
        "opts:\n  alias: review\n  auto_submit: true\n---\n\n## system\n\nBe strict.\n\n"
        "## user\n\nReview ${context.filetype} against ${rules.list}.\n"
    )
    (real / "rules.lua").write_text('return { list = function() return "RULE-1 and RULE-2" end }\n')
    (real / "broken.md").write_text("no front matter here\n")
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "linked").symlink_to(real, target_is_directory=True)
    (tmp_path / "a.lua").write_text("return 1\n")
    with ServerThread(ScriptedServer.sequence([reply("Looks fine."), reply("ok")])) as server:
        setup(
            editor, server.url, chat_config("") + f' prompt_library = {{ markdown = {{ dirs = {{ "{prompts}" }} }} }},'
        )
        editor.nvim.command(f"edit {tmp_path / 'a.lua'}")
        editor.nvim.command("CodeCompanion /review and be quick")
        editor.wait_event("CodeCompanionChatDone")
        sent = messages(server, 0)
        assert {"role": "system", "content": "Be strict."} in sent
        assert sent[-1]["content"] == "Review lua against RULE-1 and RULE-2.\n\nand be quick"
        assert any("broken.md: it has no front matter" in n for n in notes(editor)), notes(editor)

        # in the chat, /review puts the prompt's text in the message
        editor.nvim.command("normal! G")
        editor.nvim.options["completeopt"] = "menuone,noinsert"
        editor.nvim.input("A/rev<C-x><C-o>")
        editor.wait_for(lambda: editor.nvim.call("pumvisible") == 1, what="the completion menu")
        editor.nvim.input("<C-y><Esc>")
        editor.wait_for(lambda: "Review lua against RULE-1 and RULE-2." in editor.lines()[-1], what="inserted")


def test_a_workflow_of_three_steps_stops_at_its_repeat_limit(editor):
    replies = [reply("one"), reply("two"), reply("two again"), reply("two once more"), reply("never")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup(
            editor,
            server.url,
            chat_config("")
            + """ prompt_library = { ["Build it"] = {
                interaction = "chat", description = "Write, test, fix",
                opts = { is_workflow = true, max_repeats = 2 },
                prompts = {
                  { { role = "user", content = "Write the code" } },
                  { { role = "user", content = "Run the tests" },
                    repeat_until = function(ctx) return ctx.last_reply:find("PASS") ~= nil end },
                  { { role = "user", content = "Write the docs" } },
                },
              } },""",
        )
        editor.lua(PICK_NAMED)
        editor.lua("_G.cc_pick = 'Build it (workflow)'")
        editor.nvim.command("CodeCompanionActions")
        editor.wait_for(
            lambda: any(
                "workflow Build it: stopped: step 2 did not get there in 2 repeats" in n for n in notes(editor)
            ),
            what="the workflow stopping at its limit",
        )
        sent = [messages(server, i)[-1]["content"] for i in range(len(llm_requests(server)))]
        assert sent == ["Write the code", "Run the tests", "Run the tests", "Run the tests"]
        marks = editor.lua(
            "return vim.tbl_map(function(m) return m[4].virt_text[1][1] end, vim.api.nvim_buf_get_extmarks(0,"
            " vim.api.nvim_create_namespace('codecompanion_py_workflow'), 0, -1, { details = true }))"
        )
        assert marks == ["Workflow: stopped: step 2 did not get there in 2 repeats"]


def test_the_commit_prompt_sends_nothing_while_nothing_is_staged(editor, tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.txt").write_text("hello\n")
    with ServerThread(ScriptedServer.sequence([reply("feat: add a.txt")])) as server:
        setup(editor, server.url, chat_config(""))
        editor.nvim.command(f"cd {tmp_path}")
        editor.nvim.command("CodeCompanion /commit")
        assert notes(editor) == ["CodeCompanion: Commit message: nothing is staged: stage changes with git add"]
        assert editor.nvim.current.buffer.options["filetype"] != "codecompanion" and llm_requests(server) == []

        # /commit typed in a chat: the same one line, and nothing goes into the message.
        editor.nvim.command("CodeCompanionChat")
        chat = editor.nvim.current.buffer
        before = chat[:]
        editor.nvim.exec_lua(
            "require('codecompanion_py.chat.slash').run(require('codecompanion_py.chat').chats[...], 'commit')",
            chat.number,
        )
        assert notes(editor)[-1] == "CodeCompanion: Commit message: nothing is staged: stage changes with git add"
        assert chat[:] == before and llm_requests(server) == []
        editor.nvim.command("close")

        subprocess.run(["git", "add", "a.txt"], cwd=tmp_path, check=True)
        editor.nvim.command("CodeCompanion /commit")
        editor.wait_event("CodeCompanionChatDone")
        assert "+hello" in messages(server, 0)[-1]["content"]


def test_a_buffer_without_a_file_is_named_by_its_number(editor):
    with ServerThread(ScriptedServer.sequence([reply("It is one line.")])) as server:
        setup(editor, server.url, chat_config(""))
        editor.nvim.command("enew")
        editor.nvim.current.buffer[:] = ["x = 1"]
        number = editor.nvim.current.buffer.number
        editor.nvim.command("1,1CodeCompanion /explain")
        editor.wait_event("CodeCompanionChatDone")
        assert messages(server, 0)[-1]["content"].startswith(f"Explain this code from buffer {number} (lines 1-1):")


def test_a_picker_that_is_not_installed_is_said_once_and_the_default_picks(editor):
    with ServerThread(ScriptedServer.sequence([])) as server:
        setup(editor, server.url, chat_config("") + ' display = { action_palette = { provider = "telescope" } },')
        if editor.lua("return (pcall(require, 'telescope'))"):
            pytest.skip("telescope is installed here")
        editor.lua(PICK_NAMED)
        editor.lua("_G.cc_pick = 'nothing'")
        editor.nvim.command("CodeCompanionActions")
        editor.nvim.command("CodeCompanionActions")
        assert len(editor.lua("return _G.cc_offered")) == 2  # vim.ui.select, both times
        assert notes(editor) == ['CodeCompanion: provider "telescope" is not installed: using the default picker']
