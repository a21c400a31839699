"""Small things a new user meets in the chat buffer, each in real Neovim: a failure to start
the engine told once, a retry's line that the reply takes away, the error's place, the token
count in sight on a narrow window, `?` listing the keys of this kind of chat, and the cursor
after what a slash command inserts."""

from __future__ import annotations

import json

import pytest

from codecompanion_py.demo.server import Reply, ScriptedServer, ServerThread, sse_reply

from .test_chat import chunk, setup_local, usage

pytestmark = pytest.mark.nvim


def test_an_engine_that_cannot_start_is_told_once_per_command(editor):
    """`:CodeCompanionChat hello` opens a chat, then sends: two calls, one message (without the
    Lua traceback Neovim adds); the next command says it again."""
    editor.lua("vim.g.python3_host_prog = '/nonexistent/python3'")
    editor.lua("_G.notes = {}; vim.notify = function(msg) table.insert(_G.notes, msg) end")
    editor.nvim.command("CodeCompanionChat hello")
    [told] = editor.lua("return _G.notes")
    assert "the Python engine is not available" in told and "stack traceback" not in told
    editor.nvim.input("<CR>")
    editor.wait_for(lambda: len(editor.lua("return _G.notes")) == 2, what="the second command's message")
    # the engine's own host, while an install runs: told once too
    editor.lua("""for _, a in ipairs(vim.api.nvim_get_autocmds({ event = 'FuncUndefined' })) do
      vim.api.nvim_clear_autocmds({ event = 'FuncUndefined', group = a.group }) end
      vim.g.codecompanion_py_build = 'running'; _G.notes = {}""")
    editor.nvim.command("CodeCompanionChat hello")
    assert editor.lua("return _G.notes") == [
        "CodeCompanion: the Python engine is still being installed; try again when the install says it is done"
    ]


def busy(wait_ms: int) -> Reply:
    return Reply(
        status=503,
        headers={"content-type": "application/json", "retry-after-ms": str(wait_ms)},
        chunks=[json.dumps({"error": {"message": "busy"}}).encode()],
    )


def test_a_retry_shows_one_line_while_it_waits_and_the_reply_takes_it_away(editor):
    # the reply's lines as each retry's op leaves them (the waits are too short to watch)
    editor.lua("""_G.seen = {}
      local render = require("codecompanion_py.chat.render")
      local pending = render.pending
      render.pending = function(chat, op)
        pending(chat, op)
        local lines = vim.api.nvim_buf_get_lines(chat.bufnr, 0, -1, false)
        table.insert(_G.seen, vim.list_slice(lines, 5))
      end""")
    ok = sse_reply([chunk("Hello"), chunk(" there"), chunk(finish="stop"), usage(12)])
    with ServerThread(ScriptedServer.sequence([busy(10), busy(10), ok, busy(10), busy(10), busy(10)])) as server:
        setup_local(editor, server.url)
        editor.nvim.command("CodeCompanionChat hi")
        editor.wait_event("CodeCompanionChatDone")
        header = "## CodeCompanion (testllm)"
        notice = "> testllm: server error (HTTP 503): retrying in 0.0 s, {} of 2"
        assert editor.lua("return _G.seen") == [
            [header, "", notice.format(1)],
            [header, "", notice.format(2)],  # in place of the first
            [header, "", ""],  # the reply came: its line is the reply's
        ]
        assert editor.lines() == ["## Me", "", "hi", "", header, "", "Hello there", "", "## Me", "", ""]
        # retries that end in an error: the last stays beside it
        editor.type_prompt("again")
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone", count=2)
        reply = editor.lines()[editor.lines().index("again") + 2 :]
        assert reply[:5] == [
            header,
            "",
            notice.format(2),
            "",
            "> **Error:** testllm: server error (HTTP 503): busy; this is on the provider's side: try again later",
        ]


def reply_lines(editor, prompt: str) -> list[str]:
    """The lines from the reply's header (after `prompt`) to the next `## Me`."""
    lines = editor.lines()
    start = len(lines) - lines[::-1].index(prompt) + 1
    return lines[start : lines.index("## Me", start)]


def test_an_error_follows_its_header_or_the_partial_reply_after_one_blank_line(editor):
    denied = Reply(
        status=401,
        headers={"content-type": "application/json"},
        chunks=[json.dumps({"error": {"message": "Incorrect API key provided"}}).encode()],
    )
    cut_off = sse_reply([chunk("Partial answer")], done=False)  # no end: the reply was cut off
    with ServerThread(ScriptedServer.sequence([denied, cut_off])) as server:
        setup_local(editor, server.url)
        editor.nvim.command("CodeCompanionChat hi")
        editor.wait_event("CodeCompanionChatDone")
        header, blank, error, after = reply_lines(editor, "hi")
        assert (header, blank, after) == ("## CodeCompanion (testllm)", "", "")
        assert error.startswith("> **Error:** testllm rejected the API key (HTTP 401)")
        editor.type_prompt("again")
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone", count=2)
        header, blank, text, blank2, error, after = reply_lines(editor, "again")
        assert (blank, text, blank2, after) == ("", "Partial answer", "", "")
        assert error.startswith("> **Error:** ") and "cut off" in error


SCREEN = """
vim.cmd("redraw!")
local rows = {}
for row = 1, vim.o.lines do
  local cells = {}
  for col = 1, vim.o.columns do table.insert(cells, vim.fn.screenstring(row, col)) end
  table.insert(rows, table.concat(cells))
end
return rows
"""


def test_the_token_count_is_in_sight_in_a_narrow_window(editor):
    """The count sits on the blank line below the reply: at the end of a last line as wide as
    the window it was cut off at the window's edge."""
    ok = sse_reply([chunk("A line that fills the narrow window."), chunk(finish="stop"), usage(12)])
    with ServerThread(ScriptedServer.sequence([ok])) as server:
        setup_local(editor, server.url)
        editor.nvim.command("set columns=80 lines=20")
        editor.nvim.command("CodeCompanionChat hi")
        editor.wait_event("CodeCompanionChatDone")
        editor.nvim.command("vertical resize 36")
        screen = [row[-36:] for row in editor.lua(SCREEN)]
        last = screen.index("A line that fills the narrow window.")
        assert screen[last + 1].strip() == "(12 tokens)" and screen[last + 2].rstrip() == "## Me"


def keymap_list(editor) -> list[str]:
    """`?` in the chat: the lines of the float it opens (closed again with q)."""
    chat = editor.nvim.current.window
    editor.nvim.input("?")
    win = editor.wait_for(
        lambda: next((w for w in editor.nvim.api.list_wins() if editor.nvim.api.win_get_config(w)["relative"]), None),
        what="the keymap list",
    )
    listing = editor.nvim.api.buf_get_lines(editor.nvim.api.win_get_buf(win), 0, -1, False)
    editor.nvim.input("q")
    editor.wait_for(lambda: editor.nvim.current.window == chat, what="the list closed")
    return [" ".join(line.split()) for line in listing]


def test_question_mark_lists_the_keys_of_this_kind_of_chat(editor, tmp_path):
    from .test_acp import open_agent_chat

    with ServerThread(ScriptedServer.sequence([])) as server:
        setup_local(editor, server.url)
        editor.nvim.command("CodeCompanionChat")
        editor.wait_for(
            lambda: editor.lua(
                "return require('codecompanion_py.chat').chats[vim.api.nvim_get_current_buf()].engine_ready"
            ),
            what="the chat open in the engine",
        )
        http = keymap_list(editor)
    assert "gr Regenerate the last response" in http and "gs Toggle the system prompt on/off" in http
    assert not any(line.startswith(("gao ", "gas ")) for line in http)
    assert "ga Change adapter and model" in http and "q Stop the current request" in http

    open_agent_chat(editor, tmp_path, "")
    editor.wait_for(
        lambda: (
            editor.lua("return require('codecompanion_py.chat').chats[vim.api.nvim_get_current_buf()].adapter.type")
            == "acp"
        ),
        what="the agent chat open in the engine",
    )
    agent = keymap_list(editor)
    assert "gao Pick the agent's mode, model or another option" in agent
    assert "gas Resume an earlier session of the agent" in agent
    assert not any(line.startswith(("gr ", "gs ")) for line in agent)
    assert "ga Change adapter and model" in agent and "q Stop the current request" in agent


def test_a_slash_command_leaves_the_cursor_after_what_it_inserted(editor, tmp_path):
    """Run from its keymap, in insert mode or normal, `/file` puts the cursor after the
    reference it inserts: what the user types next follows it."""
    from tests.e2e.test_chat_surface import chat_config, setup

    (tmp_path / "notes.md").write_text("hi\n")
    keymaps = 'slash_commands = { file = { keymaps = { modes = { i = "<C-f>", n = "gF" } } } }'
    setup(editor, "http://127.0.0.1:9", chat_config(keymaps))
    editor.lua("vim.ui.select = function(items, opts, on_choice) on_choice(items[1], 1) end")
    editor.nvim.command(f"cd {tmp_path}")
    editor.nvim.command("CodeCompanionChat")
    editor.nvim.command("normal! G")
    editor.nvim.input("ARead <C-f>")
    editor.wait_for(lambda: editor.lines()[-1] == "Read #{file:notes.md}", what="the reference inserted")
    editor.nvim.input(" first<Esc>")
    editor.wait_for(lambda: editor.lines()[-1] == "Read #{file:notes.md} first", what="typed after it")
    editor.nvim.input("0gF")  # normal mode, at the start of the line
    editor.wait_for(lambda: editor.lines()[-1].startswith("#{file:notes.md}Read"), what="the second reference")
    editor.nvim.input("a, <Esc>")
    line = "#{file:notes.md}, Read #{file:notes.md} first"
    editor.wait_for(lambda: editor.lines()[-1] == line, what="typed")
    # completed from the menu, while typing
    editor.nvim.options["completeopt"] = "menuone,noinsert"
    editor.nvim.input("A and /fil<C-x><C-o>")
    editor.wait_for(lambda: editor.nvim.call("pumvisible") == 1, what="the completion menu")
    editor.nvim.input("<C-y>")
    editor.wait_for(lambda: editor.lines()[-1] == line + " and #{file:notes.md}", what="the third reference")
    editor.nvim.input(" last<Esc>")
    editor.wait_for(lambda: editor.lines()[-1] == line + " and #{file:notes.md} last", what="typed after it")


def test_an_adapter_that_cannot_open_is_told_once_and_the_message_stays(editor):
    """The chat's open fails, and its prompt, sent in the same command, ends quietly: no
    second message that the chat is not open."""
    editor.setup("{}")
    editor.lua("""_G.notes = {}; vim.notify = function(msg) table.insert(_G.notes, msg) end
      local chat = require("codecompanion_py.chat")
      local apply = chat.apply
      _G.ops = {}
      chat.apply = function(id, ops)
        for _, op in ipairs(ops) do table.insert(_G.ops, op.op) end
        return apply(id, ops)
      end""")
    for count in (1, 2):  # and again with the next message
        if count == 1:
            editor.nvim.command("CodeCompanionChat adapter=does_not_exist hello")
        else:
            editor.nvim.input("<CR>")
        editor.wait_for(lambda n=count: editor.lua("return _G.ops").count("done") == n, what="the message to end")
        notes = editor.lua("return _G.notes")
        assert len(notes) == count and all("unknown adapter 'does_not_exist'" in n for n in notes), notes
        assert editor.nvim.current.buffer.options["modifiable"] and editor.lines()[-1] == "hello"
