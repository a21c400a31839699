"""Slash commands that fetch, look up and outline, a slash command of the user's own, and
`gba`/`gbd` on the context block, in real Neovim against local servers."""

from __future__ import annotations

import itertools
import re

import pytest

from codecompanion_py.demo.server import Reply, ScriptedServer, ServerThread, json_reply
from tests.e2e.test_chat_surface import chat_config, notes, reply, send, setup
from tests.e2e.test_context import block, context_sent, user_message

pytestmark = pytest.mark.nvim

PAGE = b"<html><head><title>t</title><script>evil()</script></head><body><h1>Release notes</h1><p>Version 2 adds <b>speed</b>.</p></body></html>"


def run_slash(editor, typed: str, word: str) -> None:
    """Type `typed` (ending in part of a slash command), complete it and accept `word`."""
    editor.nvim.command("normal! G")
    editor.nvim.options["completeopt"] = "menuone,noinsert"
    editor.nvim.input(f"A{typed}<C-x><C-o>")
    editor.wait_for(lambda: editor.nvim.call("pumvisible") == 1, what="the completion menu")
    items = editor.nvim.call("complete_info", ["items"])["items"]
    assert items[0]["word"] == word, items
    editor.nvim.input("<C-y><Esc>")


def test_fetch_help_and_symbols_share_what_they_name(editor, tmp_path):
    (tmp_path / "mod.lua").write_text(
        "local M = {}\nlocal function helper(x)\n  return x\nend\nfunction M.run(a)\n  return helper(a)\nend\nreturn M\n"
    )
    replies = itertools.count()
    gets = []

    def respond(request):
        if request.method == "GET":
            gets.append(request.path)
            return Reply(headers={"content-type": "text/html; charset=utf-8"}, chunks=[PAGE])
        return reply(f"ok {next(replies)}")

    with ServerThread(ScriptedServer(respond)) as server:
        setup(editor, server.url, chat_config(""))
        editor.lua("vim.ui.input = function(opts, on_done) on_done(_G.cc_answer) end")
        editor.lua("vim.ui.select = function(items, opts, on_choice) on_choice('mod.lua', 1) end")
        editor.nvim.command(f"cd {tmp_path}")
        editor.nvim.command("CodeCompanionChat")

        editor.lua(f"_G.cc_answer = '{server.url}/notes'")
        run_slash(editor, "What changed? /fet", "/fetch")
        editor.wait_for(lambda: editor.lines()[-1] == f"What changed? #{{fetch:{server.url}/notes}}", what="inserted")
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone")
        (page,) = context_sent(server, 0)
        assert page == f"Context: {server.url}/notes\n```\nRelease notes\nVersion 2 adds speed.\n```"

        editor.lua("_G.cc_answer = 'nvim_buf_set_lines()'")
        run_slash(editor, "/hel", "/help")
        editor.wait_for(lambda: editor.lines()[-1] == "#{help:nvim_buf_set_lines()}", what="inserted")
        editor.type_prompt(f" and #{{fetch:{server.url}/notes}} again")
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone", count=2)
        help_text, page_again = context_sent(server, 1)
        assert help_text.startswith("Context: Vim help *nvim_buf_set_lines()* (api.txt)\n```help\n")
        assert "Sets (replaces) a line-range in the buffer." in help_text and "nvim_buf_set_mark" not in help_text
        # named again, the page replaces what it sent; read once: /fetch keeps pages for a while
        assert page_again == page.replace("/notes\n", "/notes (updated)\n", 1) and gets == ["/notes"]

        run_slash(editor, "/sym", "/symbols")
        editor.wait_for(lambda: editor.lines()[-1] == "#{symbols:mod.lua}", what="inserted")
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone", count=3)
        outline = context_sent(server, 2)[-1]
        assert outline == (
            "Context: symbols of mod.lua (2)\n```\nfunction helper (line 2)\nfunction M.run (line 5)\n```"
        )

        # a page that cannot be read: the turn ends with the reason, the chat stays usable
        editor.type_prompt("#{fetch:http://127.0.0.1:9/nothing}")
        editor.nvim.input("<CR>")
        done = editor.wait_event("CodeCompanionChatDone", count=4)
        assert done["data"]["status"] == "error" and "could not fetch http://127.0.0.1:9/nothing" in editor.text()
        send(editor, "still there?", 5)
        assert user_message(server, -1) == "still there?"


def test_a_slash_command_of_the_users_own_adds_context_and_has_its_keymap(editor, tmp_path):
    with ServerThread(ScriptedServer.sequence([reply("one"), reply("two")])) as server:
        setup(
            editor,
            server.url,
            chat_config("""slash_commands = {
              git_files = {
                description = "List git files",
                callback = function(chat)
                  chat:add_context({ role = "user", content = "a.py\\nb.py" }, "git", "<git_files>")
                end,
                keymaps = { modes = { n = "gG" } },
              },
              now = { enabled = false },
            }"""),
        )
        editor.nvim.command("CodeCompanionChat")
        chat = editor.nvim.current.buffer.number
        words = editor.lua(
            "return vim.tbl_map(function(i) return i.word .. '|' .. i.menu end,"
            " require('codecompanion_py.chat').omnifunc(0, '/'))"
        )
        assert "/git_files|List git files" in words and not any(w.startswith("/now|") for w in words)
        editor.nvim.input("gG")
        editor.wait_for(lambda: block(editor, chat) == ["> Context:", "> - <git>git_files</git>"], what="listed")
        send(editor, "which files?", 1)
        assert context_sent(server, 0) == ["Context: git\n```\na.py\nb.py\n```"]
        assert user_message(server, 0) == "which files?"


def test_gba_and_gbd_switch_how_a_buffer_is_followed(editor, tmp_path):
    (tmp_path / "a.txt").write_text("first\n")
    with ServerThread(ScriptedServer.sequence([reply(f"ok {i}") for i in range(3)])) as server:
        setup(editor, server.url, chat_config(""))
        editor.lua("_G.cc_notes = {}; vim.notify = function(msg) table.insert(_G.cc_notes, msg) end")
        editor.nvim.command(f"cd {tmp_path}")
        editor.nvim.command("edit a.txt")
        source = editor.nvim.current.buffer
        editor.nvim.command("CodeCompanionChat")
        chat = editor.nvim.current.buffer.number
        send(editor, "#{buffer}", 1)
        lines = editor.lines(chat)
        row = len(lines) - lines[::-1].index("> - <buf>a.txt</buf> (diff)")
        editor.nvim.current.window.cursor = (row, 0)
        editor.nvim.input("gba")
        editor.wait_for(lambda: block(editor, chat) == ["> Context:", "> - <buf>a.txt</buf> (all)"], what="all")
        assert any("a.txt</buf> is sent whole when it changes" in n for n in notes(editor))
        source[0] = "second"
        send(editor, "now?", 2)
        assert context_sent(server, 1)[-1] == "Context: a.txt (1 line) (updated)\n```text\nsecond\n```"
        assert not any("first" in t for t in context_sent(server, 1))  # replaced, not added
        lines = editor.lines(chat)
        row = len(lines) - lines[::-1].index("> - <buf>a.txt</buf> (all)")
        editor.nvim.current.window.cursor = (row, 0)
        editor.nvim.input("gba")  # again: no longer followed
        editor.wait_for(lambda: block(editor, chat) == ["> Context:", "> - <buf>a.txt</buf>"], what="off")
        source[0] = "third"
        send(editor, "and now?", 3)
        assert not any("third" in t for t in context_sent(server, 2))


def test_buffer_and_now_with_the_default_picker(editor, tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    with ServerThread(ScriptedServer.sequence([reply("ok")])) as server:
        setup(editor, server.url, chat_config(""))
        editor.lua("vim.ui.select = function(items, opts, on_choice) _G.cc_offered = items; on_choice(items[1], 1) end")
        editor.nvim.command(f"cd {tmp_path}")
        editor.nvim.command("edit a.txt")
        editor.nvim.command("CodeCompanionChat")
        run_slash(editor, "Read /buf", "/buffer")
        editor.wait_for(lambda: editor.lines()[-1] == "Read #{buffer:a.txt}", what="the buffer inserted")
        assert editor.lua("return _G.cc_offered") == ["a.txt"]  # file buffers only, not the chat
        editor.nvim.input("A at <Esc>")
        run_slash(editor, "/no", "/now")
        editor.wait_for(lambda: editor.lines()[-1] != "Read #{buffer:a.txt} at ", what="the date inserted")
        assert re.fullmatch(
            r"Read #\{buffer:a\.txt\} at \w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d [+-]\d{4}", editor.lines()[-1]
        )
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone")
        assert context_sent(server, 0) == ["Context: a.txt (1 line)\n```text\nalpha\n```"]


def test_file_offers_the_project_files_the_engine_lists(editor, tmp_path):
    """/file's picker lists what the engine's `files.list` finds under the cwd (here a walk:
    no repository, tool directories skipped) and inserts the pick."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("print(1)\n")
    (tmp_path / "notes.md").write_text("hi\n")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "dep.js").write_text("\n")
    with ServerThread(ScriptedServer.sequence([reply("ok")])) as server:
        setup(editor, server.url, chat_config(""))
        editor.lua("vim.ui.select = function(items, opts, on_choice) _G.cc_offered = items; on_choice(items[2], 2) end")
        editor.nvim.command(f"cd {tmp_path}")
        editor.nvim.command("CodeCompanionChat")
        run_slash(editor, "Read /fil", "/file")
        editor.wait_for(lambda: editor.lines()[-1] == "Read #{file:src/main.py}", what="the file inserted")
        assert editor.lua("return _G.cc_offered") == ["notes.md", "src/main.py"]


def test_a_help_tag_is_found_as_help_finds_it(editor):
    """`/help shiftwidth` shares the option's section, as `:help shiftwidth` opens it."""
    editor.lua("require('codecompanion').setup({})")
    items, problems = editor.lua(
        "return { require('codecompanion_py.chat.context').capture({ adapter = {} }, '#{help:shiftwidth}') }"
    )
    assert problems == [] and len(items) == 1
    assert items[0]["label"] == "Vim help *'shiftwidth'* (options.txt)"
    assert "Number of spaces" in items[0]["content"] and "local to buffer" in items[0]["content"]
    items, problems = editor.lua(
        "return { require('codecompanion_py.chat.context').capture({ adapter = {} }, '#{help:nvim_buf_set_lines()}') }"
    )
    assert items[0]["label"] == "Vim help *nvim_buf_set_lines()* (api.txt)"  # an exact tag stays itself


def test_a_slash_command_given_by_path_runs_as_codecompanion_runs_one(editor, tmp_path):
    (tmp_path / "todo.lua").write_text(
        """local Todo = {}
function Todo.new(args) return setmetatable({ Chat = args.Chat, config = args.config }, { __index = Todo }) end
function Todo:execute()
  self.Chat:add_context({ role = "user", content = "buy " .. self.config.opts.item }, "todo", "<todo>")
end
function Todo.enabled(chat) return true end
return Todo
"""
    )
    (tmp_path / "off.lua").write_text(
        "return { enabled = function() return false, 'needs a git repository' end, new = function() error('ran') end }\n"
    )
    with ServerThread(ScriptedServer.sequence([reply("one")])) as server:
        setup(
            editor,
            server.url,
            chat_config(f"""slash_commands = {{
              todo = {{ path = "{tmp_path / "todo.lua"}", description = "My todo", opts = {{ item = "milk" }} }},
              off = {{ path = "{tmp_path / "off.lua"}", description = "Off" }},
              gone = {{ path = "{tmp_path / "nowhere.lua"}", description = "Gone" }},
              file = {{ path = "interactions.chat.slash_commands.builtin.file", description = "Files" }},
            }}"""),
        )
        editor.nvim.command("CodeCompanionChat")
        chat = editor.nvim.current.buffer.number
        run_slash(editor, "/tod", "/todo")
        editor.wait_for(lambda: block(editor, chat) == ["> Context:", "> - <todo>todo</todo>"], what="listed")
        run_slash(editor, "/of", "/off")
        editor.wait_for(lambda: any("off.lua: needs a git repository" in n for n in notes(editor)), what="why")
        run_slash(editor, "/gon", "/gone")
        editor.wait_for(lambda: any("nowhere.lua" in n for n in notes(editor)), what="the missing file said")
        # a pasted built-in's CodeCompanion module path keeps this plugin's /file
        assert editor.lua(
            "local s = require('codecompanion_py.chat.slash') return s.commands().file.run == s.COMMANDS.file.run"
        )
        send(editor, "what to do?", 1)
        assert "Context: todo\n```\nbuy milk\n```" in context_sent(server, 0)


def test_share_posts_a_scrubbed_secret_gist_and_says_where_it_went(editor, tmp_path):
    gist = {"html_url": "https://gist.github.com/someone/abc123", "id": "abc123"}
    github = ScriptedServer(lambda r: json_reply(gist, status=201))
    with ServerThread(ScriptedServer.sequence([reply("Your key is sk-live-1234567890abcdef.")])) as server:
        with ServerThread(github) as gists:
            editor.lua("vim.env.MY_SERVICE_API_KEY = 'sk-live-1234567890abcdef'")
            setup(
                editor,
                server.url,
                chat_config(
                    "slash_commands = { share = { opts = { token = 'ghp_gisttoken0123456789',"
                    f" url = '{gists.url}/gists' }} }} }},"
                ),
            )
            editor.lua("""_G.cc_inputs = {}; vim.ui.input = function(opts, on_done)
              table.insert(_G.cc_inputs, opts.default); on_done(opts.default) end""")
            editor.nvim.command("CodeCompanionChat")
            send(editor, "What is my key?", 1)
            run_slash(editor, "/sha", "/share")
            note = "CodeCompanion: the chat is shared as a secret gist: https://gist.github.com/someone/abc123"
            editor.wait_for(lambda: note in notes(editor), what="where it went")
            assert editor.lua("return _G.cc_inputs") == ["CodeCompanion Chat", "codecompanion-chat.md"]
            request = github.requests[0]
            assert request.method == "POST" and request.path == "/gists"
            assert request.headers["authorization"] == "Bearer ghp_gisttoken0123456789"
            body = request.json()
            assert body["public"] is False and body["description"] == "CodeCompanion Chat"
            content = body["files"]["codecompanion-chat.md"]["content"]
            assert "What is my key?" in content and "Your key is ***." in content
            assert "sk-live" not in content and "ghp_gisttoken" not in content
