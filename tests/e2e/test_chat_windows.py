"""One chat window a tab, in real Neovim as CodeCompanion keeps it: a chat opened while another
shows (`:CodeCompanionChat`, a history pick, a palette prompt) takes that chat's window, of
any layout, instead of opening one more split; the other chat stays, hidden, and comes back
with `}`. A saved chat that is open already is shown when picked, not opened twice."""

from __future__ import annotations

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread
from tests.e2e.test_chat_surface import chat_config, reply, send, setup
from tests.e2e.test_prompts import PICK_NAMED
from tests.reliability.test_saved_chats_door import open_history, pick, saved_chat

pytestmark = pytest.mark.nvim

RECORD_OPENS = """
_G.cc_opens = {}
local rpc = require("codecompanion_py.rpc")
local notify = rpc.notify
rpc.notify = function(method, payload)
  if method == "chat.open" then table.insert(_G.cc_opens, payload.chat_id) end
  return notify(method, payload)
end
"""


def windows(editor) -> int:
    return len(editor.nvim.api.tabpage_list_wins(0))


def chat_buffers(editor) -> list[int]:
    return sorted(editor.lua("return vim.tbl_keys(require('codecompanion_py.chat').chats)"))


def hidden(editor) -> list[int]:
    return [e["data"]["bufnr"] for e in editor.events() if e["event"] == "CodeCompanionChatHidden"]


@pytest.mark.parametrize("layout", ["vertical", "horizontal", "float", "buffer"])
def test_a_second_chat_takes_the_first_ones_window(editor, layout, tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    with ServerThread(ScriptedServer.sequence([])) as server:
        window = f'layout = "{layout}", width = 0.4, height = 0.4'
        setup(editor, server.url, chat_config("") + f"display = {{ chat = {{ window = {{ {window} }} }} }},")
        editor.nvim.command(f"edit {tmp_path / 'a.py'}")
        before = windows(editor)
        editor.nvim.command("CodeCompanionChat")
        first, win = editor.nvim.current.buffer.number, editor.nvim.current.window
        editor.nvim.command("CodeCompanionChat")
        second = editor.nvim.current.buffer.number
        assert second != first and editor.nvim.current.window == win
        assert windows(editor) == before + (layout != "buffer")
        if layout == "vertical":
            assert win.width == int(editor.nvim.options["columns"] * 0.4)
        elif layout == "horizontal":
            assert win.height == int(editor.nvim.options["lines"] * 0.4)
        elif layout == "float":
            assert editor.nvim.api.win_get_config(win)["relative"] == "editor"
        assert chat_buffers(editor) == [first, second] and editor.nvim.call("win_findbuf", first) == []
        assert hidden(editor) == [first]

        editor.nvim.input("}")  # the hidden chat, in the same window
        editor.wait_for(lambda: editor.nvim.current.buffer.number == first, what="the next chat")
        assert editor.nvim.current.window == win and windows(editor) == before + (layout != "buffer")
        editor.nvim.command("CodeCompanionChat")  # a third: still the one window
        assert editor.nvim.current.window == win and windows(editor) == before + (layout != "buffer")
        assert len(chat_buffers(editor)) == 3 and win.options["wrap"]
        editor.nvim.command("CodeCompanionChat Toggle")  # hidden: back to the file, not to another chat
        assert windows(editor) == before and editor.nvim.current.buffer.name.endswith("a.py")


def test_a_chat_of_another_layout_hides_the_one_shown(editor):
    with ServerThread(ScriptedServer.sequence([])) as server:
        setup(editor, server.url, chat_config(""))
        editor.lua('require("codecompanion").chat({ window_opts = { layout = "float" } })')
        floating = editor.nvim.current.buffer.number
        editor.nvim.command("CodeCompanionChat")  # vertical, as configured: the float goes
        assert windows(editor) == 2 and not editor.nvim.api.win_get_config(0)["relative"]
        assert hidden(editor) == [floating] and editor.nvim.call("win_findbuf", floating) == []
        editor.nvim.command("CodeCompanionChat Toggle")
        editor.nvim.command("CodeCompanionChat Toggle")
        assert windows(editor) == 2


def test_a_chat_in_the_last_window_beside_a_float_is_hidden_all_the_same(editor, tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    with ServerThread(ScriptedServer.sequence([])) as server:
        setup(editor, server.url, chat_config("") + 'display = { chat = { window = { layout = "buffer" } } },')
        editor.nvim.command(f"edit {tmp_path / 'a.py'}")
        editor.nvim.command("CodeCompanionChat")
        first = editor.nvim.current.buffer.number
        editor.lua(  # another plugin's float: the chat's window is the last that can close, so it cannot
            "vim.api.nvim_open_win(vim.api.nvim_create_buf(false, true), false,"
            " { relative = 'editor', row = 1, col = 1, width = 10, height = 2 })"
        )
        editor.lua('require("codecompanion").chat({ window_opts = { layout = "float" } })')
        assert editor.nvim.api.win_get_config(0)["relative"] == "editor" and hidden(editor) == [first]
        shown = [editor.nvim.api.win_get_buf(w).number for w in editor.nvim.api.list_wins()]
        assert first not in shown and editor.nvim.call("bufnr", str(tmp_path / "a.py")) in shown


def test_history_picks_share_one_window_and_an_open_chat_is_shown_not_opened_again(editor, tmp_path):
    folder = tmp_path / "history"
    saved_chat(folder, "20250101-000000-aaaa", "Rivers")
    saved_chat(folder, "20250101-000001-bbbb", "Mountains")
    with ServerThread(ScriptedServer.sequence([])) as server:
        open_history(editor, folder, server.url)
        editor.lua(RECORD_OPENS)
        pick(editor, "Rivers")
        rivers, win = editor.nvim.current.buffer.number, editor.nvim.current.window
        pick(editor, "Mountains")
        mountains = editor.nvim.current.buffer.number
        assert "Mountains question 0" in editor.text() and editor.nvim.current.window == win
        assert windows(editor) == 2 and win.width == int(editor.nvim.options["columns"] * 0.45)  # the default

        pick(editor, "Rivers")  # open already: its buffer comes back, no second copy
        assert editor.nvim.current.buffer.number == rivers and editor.nvim.current.window == win
        assert chat_buffers(editor) == [rivers, mountains] and windows(editor) == 2
        assert editor.lua("return _G.cc_opens") == [rivers, mountains]
        assert [e for e in editor.event_names() if e == "CodeCompanionChatCreated"] == ["CodeCompanionChatCreated"] * 2


def test_a_chat_saved_in_this_session_is_shown_when_picked(editor, tmp_path):
    folder = tmp_path / "history"
    with ServerThread(ScriptedServer.sequence([reply("Paris.")])) as server:
        open_history(editor, folder, server.url)
        editor.nvim.command("CodeCompanionChat")
        chat = editor.nvim.current.buffer.number
        send(editor, "Capital of France?", 1)
        editor.wait_for(lambda: list(folder.glob("[!.]*.json")) or None, what="the saved chat")
        editor.nvim.command("CodeCompanionChat")
        editor.lua(RECORD_OPENS)
        pick(editor, "Capital of France?")
        assert editor.nvim.current.buffer.number == chat and "Paris." in editor.text()
        assert len(chat_buffers(editor)) == 2 and editor.lua("return _G.cc_opens") == []


def test_a_palette_prompt_takes_the_window_of_the_chat_shown(editor, tmp_path):
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    with ServerThread(ScriptedServer.sequence([reply("It subtracts.")])) as server:
        setup(editor, server.url, chat_config(""))
        editor.lua(PICK_NAMED)
        editor.lua("_G.cc_pick = 'Explain code'")
        editor.nvim.command(f"edit {tmp_path / 'calc.py'}")
        editor.nvim.command("CodeCompanionChat")
        first, win = editor.nvim.current.buffer.number, editor.nvim.current.window
        editor.nvim.command("wincmd p")
        editor.nvim.command("1,2CodeCompanionActions")
        editor.wait_event("CodeCompanionChatDone")
        assert editor.nvim.current.window == win and editor.nvim.current.buffer.number != first
        assert "It subtracts." in editor.text() and windows(editor) == 2
        assert hidden(editor) == [first]
