"""The chat as a CodeCompanion user drives it, in real Neovim against a local server:
keymaps by CodeCompanion's names and their overrides, Toggle/Add/ranges, the window
layouts, roles, callbacks and the events around them."""

from __future__ import annotations

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread, json_reply, sse_reply
from tests.e2e.test_chat import chunk

pytestmark = pytest.mark.nvim


def reply(text: str, delay: float = 0.0):
    return sse_reply([chunk(text), chunk(finish="stop")], delay=delay)


def setup(editor, url: str, extra: str = "") -> None:
    """The local server as the adapter, plus `extra` Lua fields of setup()'s table."""
    editor.lua(f"""require("codecompanion").setup({{
      adapters = {{ http = {{ testllm = function()
        return require("codecompanion.adapters").extend("openai_compatible", {{
          env = {{ url = "{url}" }}, schema = {{ model = {{ default = "test-model" }} }},
        }})
      end }} }},
      {extra}
    }})""")
    editor.lua("_G.cc_notes = {}; vim.notify = function(msg) table.insert(_G.cc_notes, msg) end")


def chat_config(body: str) -> str:
    return f'interactions = {{ chat = {{ adapter = "testllm", {body} }} }},'


def send(editor, text: str, count: int, key: str = "<CR>") -> None:
    editor.type_prompt(text)
    editor.nvim.input(key)
    editor.wait_event("CodeCompanionChatDone", count=count)


def notes(editor) -> list[str]:
    return editor.lua("return _G.cc_notes")


def mapped(editor, lhs: str, mode: str = "n") -> bool:
    """Whether the chat buffer maps `lhs` (Neovim's own global maps, such as gx, do not count)."""
    return any(m["lhs"] == lhs for m in editor.nvim.api.buf_get_keymap(0, mode))


def test_keymaps_are_remapped_removed_and_added_as_in_codecompanion(editor):
    with ServerThread(ScriptedServer.sequence([reply("one")])) as server:
        setup(
            editor,
            server.url,
            chat_config("""keymaps = {
              send = { modes = { n = "<C-g>" } },
              clear = false,
              mine = { modes = { n = "gz" }, description = "Mine", callback = function(chat) vim.g.mine = chat.bufnr end,
                opts = { silent = true } },
            }"""),
        )
        editor.nvim.command("CodeCompanionChat")
        buf = editor.nvim.current.buffer.number
        assert not mapped(editor, "<CR>") and not mapped(editor, "gx")  # remapped, removed
        assert mapped(editor, "gr") and mapped(editor, "q") and mapped(editor, "<C-G>")
        maps = {m["lhs"]: m for m in editor.nvim.api.buf_get_keymap(0, "n")}
        stop, mine = maps["q"], maps["gz"]  # a default, and the user's with map-arguments of its own
        assert (stop["noremap"], stop["nowait"], stop["silent"], stop["desc"]) == (1, 1, 0, "Stop the current request")
        assert (mine["noremap"], mine["nowait"], mine["silent"], mine["desc"]) == (1, 1, 1, "Mine")
        editor.nvim.input("gz")
        editor.wait_for(lambda: editor.nvim.vars.get("mine") == buf, what="the function callback")
        send(editor, "hello", 1, key="<C-g>")
        assert "one" in editor.text() and len(server.requests) == 1
        editor.nvim.input("?")
        listing = editor.wait_for(
            lambda: next(
                (
                    editor.nvim.api.buf_get_lines(editor.nvim.api.win_get_buf(w), 0, -1, False)
                    for w in editor.nvim.api.list_wins()
                    if editor.nvim.api.win_get_config(w)["relative"]
                ),
                None,
            ),
            what="the keymap list",
        )
        assert any("gz" in line and "Mine" in line for line in listing)
        assert not any("Clear all messages" in line for line in listing)


def test_toggle_hides_a_streaming_chat_which_keeps_streaming_and_comes_back_whole(editor):
    slow = sse_reply([chunk(f"w{i} ") for i in range(60)] + [chunk(finish="stop")], delay=0.02)
    with ServerThread(ScriptedServer.sequence([slow])) as server:
        setup(editor, server.url, chat_config(""))
        editor.nvim.command("CodeCompanionChat count")
        buf = editor.nvim.current.buffer.number
        editor.wait_for(lambda: "w2 " in editor.text(buf), what="some streamed text")
        editor.nvim.command("CodeCompanionChat Toggle")
        editor.wait_event("CodeCompanionChatHidden")
        assert editor.nvim.call("win_findbuf", buf) == []
        editor.wait_event("CodeCompanionChatDone")  # while hidden
        editor.nvim.command("CodeCompanionChat Toggle")
        opened = editor.wait_event("CodeCompanionChatOpened", count=2)
        assert opened["data"]["bufnr"] == buf and editor.nvim.current.buffer.number == buf
        assert "w59" in editor.text(buf) and editor.lines(buf)[-3:] == ["## Me", "", ""]


def test_add_and_a_range_share_the_lines_of_the_buffer(editor, tmp_path):
    source = tmp_path / "calc.py"
    source.write_text("def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n")
    with ServerThread(ScriptedServer.sequence([reply("It adds.")])) as server:
        setup(editor, server.url, chat_config(""))
        editor.nvim.command(f"edit {source}")
        editor.nvim.command("1,2CodeCompanionChat Add")  # no chat yet: one opens with the lines
        chat = editor.nvim.current.buffer.number
        text = editor.text(chat)
        assert "Here is some code from" in text and "calc.py" in text
        assert "```python\ndef add(a, b):\n    return a + b\n```" in text
        assert len(server.requests) == 0  # Add only shares: the user sends

        editor.nvim.command(f"buffer {editor.nvim.call('bufnr', str(source))}")
        editor.nvim.command("4,4CodeCompanionChat What does this print?")
        editor.wait_event("CodeCompanionChatDone")
        [sent] = [m["content"] for m in server.requests[0].json()["messages"] if m["role"] == "user"]
        assert sent.startswith("What does this print?\n\nHere is some code from")
        assert "```python\nprint(add(1, 2))\n```" in sent


def test_chats_cycle_in_the_window_and_ctrl_c_closes_one(editor):
    with ServerThread(ScriptedServer.sequence([])) as server:
        setup(editor, server.url, chat_config(""))
        editor.nvim.command("CodeCompanionChat")
        first = editor.nvim.current.buffer.number
        editor.nvim.command("CodeCompanionChat")
        second = editor.nvim.current.buffer.number
        win = editor.nvim.current.window.handle
        editor.nvim.input("}")
        editor.wait_for(lambda: editor.nvim.current.buffer.number == first, what="the next chat")
        assert editor.nvim.current.window.handle == win
        editor.nvim.input("{")
        editor.wait_for(lambda: editor.nvim.current.buffer.number == second, what="the previous chat")
        editor.nvim.input("<C-c>")
        closed = editor.wait_event("CodeCompanionChatClosed")
        assert closed["data"]["bufnr"] == second
        assert not editor.nvim.api.buf_is_valid(second) and editor.nvim.api.buf_is_valid(first)


def test_code_block_keymaps_headers_and_the_file_under_the_cursor(editor, tmp_path):
    (tmp_path / "notes.md").write_text("some notes\n")
    answer = "Try this:\n\n```lua\nlocal x = 1\nprint(x)\n```\n\nSee notes.md for more."
    with ServerThread(ScriptedServer.sequence([reply(answer)])) as server:
        setup(
            editor,
            server.url,
            chat_config('opts = { register = "a", goto_file_action = "edit" }'),
        )
        editor.nvim.command(f"cd {tmp_path}")
        editor.nvim.command("CodeCompanionChat")
        buf = editor.nvim.current.buffer.number
        send(editor, "code please", 1)
        editor.nvim.input("gy")
        editor.wait_for(lambda: editor.nvim.call("getreg", "a") == "local x = 1\nprint(x)\n", what="the yank")

        editor.nvim.command("normal! gg")
        editor.nvim.input("]]")
        editor.wait_for(lambda: editor.nvim.current.line.startswith("## CodeCompanion"), what="the next header")
        editor.nvim.input("[[")
        editor.wait_for(lambda: editor.nvim.current.line == "## Me", what="the previous header")

        editor.nvim.input("gf")
        fence = editor.lines(buf).index("```lua") + 1
        editor.wait_for(lambda: editor.nvim.call("foldclosed", fence) == fence, what="the code folded")

        row = next(i for i, line in enumerate(editor.lines(buf), 1) if "notes.md" in line)
        editor.nvim.command("normal! zR")
        editor.nvim.api.win_set_cursor(0, [row, editor.lines(buf)[row - 1].index("notes.md")])
        editor.nvim.input("gR")
        editor.wait_for(lambda: editor.nvim.current.buffer.name.endswith("notes.md"), what="the file opened")

        editor.nvim.command(f"buffer {buf}")
        editor.nvim.command("normal! G")
        editor.nvim.input("gc")
        editor.wait_for(lambda: "```" in editor.lines(buf)[-3:], what="an empty code block")


def test_roles_callbacks_and_a_prevented_submit(editor):
    with ServerThread(ScriptedServer.sequence([reply("first"), reply("second")])) as server:
        setup(
            editor,
            server.url,
            chat_config("""
              roles = { user = "Dev", llm = function(adapter) return "Bot " .. adapter.name end },
              callbacks = {
                on_before_submit = function(chat, info)
                  _G.before = (_G.before or 0) + 1
                  return _G.before > 1 -- the first submit is refused
                end,
                on_completed = function(chat, info) _G.completed = info.status end,
              },
              opts = { prompt_decorator = function(message) return "<prompt>" .. message .. "</prompt>" end },
            """),
        )
        editor.nvim.command("CodeCompanionChat")
        assert editor.lines()[0] == "## Dev"
        editor.type_prompt("hello")
        editor.nvim.input("<CR>")
        restored = editor.wait_event("CodeCompanionChatRestored")
        assert editor.nvim.current.buffer.options["modifiable"] and len(server.requests) == 0
        assert editor.lines()[-1] == "hello" and restored["data"]["bufnr"] == editor.nvim.current.buffer.number
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone")
        assert editor.lua("return _G.completed") == "success"
        assert "## Bot testllm" in editor.lines() and editor.lines()[-3:] == ["## Dev", "", ""]
        send(editor, "again", 2)
        users = [m["content"] for m in server.requests[1].json()["messages"] if m["role"] == "user"]
        assert users == ["<prompt>hello</prompt>", "<prompt>again</prompt>"]


@pytest.mark.parametrize("layout", ["float", "horizontal", "tab", "buffer"])
def test_window_layouts(editor, layout):
    with ServerThread(ScriptedServer.sequence([])) as server:
        setup(
            editor,
            server.url,
            chat_config("")
            + f'display = {{ chat = {{ window = {{ layout = "{layout}", height = 0.4, width = 0.5 }} }} }},',
        )
        tabs_before = len(editor.nvim.api.list_tabpages())
        wins_before = len(editor.nvim.api.tabpage_list_wins(0))
        editor.nvim.command("CodeCompanionChat")
        win = editor.nvim.current.window
        assert editor.nvim.current.buffer.options["filetype"] == "codecompanion"
        if layout == "float":
            assert editor.nvim.api.win_get_config(win)["relative"] == "editor"
        elif layout == "horizontal":
            assert win.width == editor.nvim.options["columns"]
            assert win.height == int(editor.nvim.options["lines"] * 0.4)
        elif layout == "tab":
            assert len(editor.nvim.api.list_tabpages()) == tabs_before + 1
        else:
            assert len(editor.nvim.api.tabpage_list_wins(0)) == wins_before
        assert win.options["wrap"] and win.options["linebreak"]


def test_codecompanion_api_and_send_code_off(editor, tmp_path):
    with ServerThread(ScriptedServer.sequence([])) as server:
        setup(editor, server.url, chat_config("") + "opts = { send_code = false },")
        editor.lua('require("codecompanion").chat()')
        buf = editor.nvim.current.buffer.number
        assert editor.lua("return require('codecompanion').buf_get_chat(...).bufnr", buf) == buf
        assert editor.lua("return require('codecompanion').last_chat().id") == buf
        editor.lua('require("codecompanion").toggle()')
        editor.wait_event("CodeCompanionChatHidden")
        editor.lua('require("codecompanion").toggle()')
        editor.wait_for(lambda: editor.nvim.current.buffer.number == buf, what="the chat back")
        editor.nvim.command("new")
        editor.nvim.current.buffer[:] = ["secret = 1"]
        editor.nvim.command("1CodeCompanionChat Add")
        assert any("sending code is turned off" in n for n in notes(editor))
        assert "secret" not in editor.text(buf)


def test_the_engine_actions_answer_their_codecompanion_keys(editor):
    with ServerThread(ScriptedServer.sequence([reply("one"), reply("two")])) as server:
        setup(editor, server.url, chat_config(""))
        editor.nvim.command("CodeCompanionChat")
        buf = editor.nvim.current.buffer.number
        send(editor, "hello", 1)
        [system] = [m["content"] for m in server.requests[0].json()["messages"] if m["role"] == "system"]
        version = editor.lua("local v = vim.version() return ('%d.%d.%d'):format(v.major, v.minor, v.patch)")
        assert f"Neovim version is {version}" in system and editor.nvim.call("getcwd") in system
        editor.nvim.input("gs")
        editor.wait_for(lambda: any("system prompt off" in n for n in notes(editor)), what="gs")
        editor.nvim.input("gr")
        editor.wait_event("CodeCompanionChatDone", count=2)
        assert [m["role"] for m in server.requests[1].json()["messages"]] == ["user"]  # no system prompt, resent
        assert "two" in editor.text(buf) and "one" not in editor.text(buf)
        editor.nvim.input("gd")
        editor.wait_for(
            lambda: any(editor.nvim.api.win_get_config(w)["relative"] for w in editor.nvim.api.list_wins()),
            what="the debug window",
        )
        editor.nvim.input("q")
        editor.wait_for(lambda: editor.nvim.current.buffer.number == buf, what="back in the chat")
        editor.nvim.input("gx")
        editor.wait_event("CodeCompanionChatCleared")
        assert editor.lines(buf) == ["## Me", "", ""]


def test_a_chat_wiped_any_other_way_is_closed_too(editor):
    with ServerThread(ScriptedServer.sequence([])) as server:
        setup(editor, server.url, chat_config("callbacks = { on_closed = function(chat) _G.closed = chat.bufnr end },"))
        editor.nvim.command("CodeCompanionChat")
        buf = editor.nvim.current.buffer.number
        editor.nvim.command(f"bwipeout! {buf}")
        closed = editor.wait_event("CodeCompanionChatClosed")
        assert closed["data"]["bufnr"] == buf and editor.lua("return _G.closed") == buf
        assert editor.lua("return require('codecompanion').last_chat()") is None


# `copilot_internal/user` as GitHub answers it for a paid account (fields CodeCompanion reads)
COPILOT_USER = {
    "access_type_sku": "monthly_subscriber_quota",
    "copilot_plan": "individual",
    "quota_reset_date": "2026-12-01",
    "quota_snapshots": {
        "chat": {"entitlement": 0, "remaining": 0, "unlimited": True, "percent_remaining": 100.0},
        "completions": {"entitlement": 0, "remaining": 0, "unlimited": True, "percent_remaining": 100.0},
        "premium_interactions": {
            "entitlement": 300,
            "remaining": 225,
            "unlimited": False,
            "overage_permitted": False,
            "percent_remaining": 75.0,
        },
    },
}


def test_gs_shows_the_copilot_accounts_usage_and_is_refused_elsewhere(editor):
    stats = ScriptedServer(lambda r: json_reply(COPILOT_USER))
    with ServerThread(stats) as github, ServerThread(ScriptedServer.sequence([])) as other:
        editor.lua("vim.env.GH_COPILOT_TOKEN = 'gho_secret_login'")
        editor.lua(f"""require("codecompanion").setup({{
          adapters = {{ http = {{
            testllm = function() return require("codecompanion.adapters").extend("openai_compatible", {{
              env = {{ url = "{other.url}" }}, schema = {{ model = {{ default = "test-model" }} }} }}) end,
            copilot = function() return require("codecompanion.adapters").extend("copilot", {{
              opts = {{ stats_url = "{github.url}/copilot_internal/user" }} }}) end,
          }} }},
          interactions = {{ chat = {{ adapter = "copilot" }} }},
        }})""")
        editor.lua("_G.cc_notes = {}; vim.notify = function(msg) table.insert(_G.cc_notes, msg) end")
        editor.nvim.command("CodeCompanionChat")
        editor.wait_event("CodeCompanionChatAdapter")
        editor.nvim.input("gS")
        editor.wait_for(lambda: editor.nvim.current.buffer.options["filetype"] == "markdown", what="the float")
        shown = editor.lines()
        assert shown[:5] == [
            "## Premium Interactions",
            "- Used: 75 / 300 (25.0%)",
            "  █████░░░░░░░░░░░░░░░",
            "- Overage: Not Permitted",
            "",
        ]
        assert "## Chat" in shown and "- Status: Unlimited" in shown and shown[-1] == "Quotas reset on 2026-12-01"
        request = stats.requests[0]
        assert request.method == "GET" and request.path == "/copilot_internal/user"
        assert request.headers["authorization"] == "Bearer gho_secret_login"
        editor.nvim.input("q")
        editor.nvim.command("CodeCompanionChat adapter=testllm")
        editor.wait_event("CodeCompanionChatAdapter", count=2)
        editor.nvim.input("gS")
        editor.wait_for(
            lambda: (
                "CodeCompanion: usage statistics are only available when using the Copilot adapter" in notes(editor)
            ),
            what="the refusal",
        )
        assert len(stats.requests) == 1
