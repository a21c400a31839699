"""`make demo` in real Neovim: the launcher's setup table, its demo project and its first
message, the demo provider's scripted tool loop through the real plugin (a read, an edit
that asks first with the diff, a report), and the chat's hint and `?` keymap list."""

from __future__ import annotations

import json

import pynvim
import pytest

from codecompanion_py.demo.launch import make_project, nvim_argv, nvim_binary, setup_lua, write_init
from codecompanion_py.demo.provider import HELLO_PY, TIDY_GREET, serve
from tests.waiting import wait_until

from .test_inline import screen, topfill
from .test_tools import RECORD_UI

pytestmark = pytest.mark.nvim

REVIEW_KEYS = "g2 accept  g3 reject  g5/g6 hunk  gv diff  g1 always accept"
HINT = "Welcome to CodeCompanion ✨! Press ? for options"


@pytest.fixture
def demo(editor, tmp_path):
    """Neovim as `make demo` opens it: in the demo project, `hello.py` open, a chat beside
    it with the suggested message typed, the launcher's setup table (the `demo` adapter is
    pointed at a server of this test, to see the requests)."""
    project = make_project(tmp_path / "project")
    with serve() as server:
        editor.lua(RECORD_UI)
        definition = f'require("codecompanion_py.adapters").extend("demo", {{ env = {{ url = "{server.url}" }} }})'
        editor.setup(setup_lua("demo_here", definition))
        editor.nvim.command(f"cd {project}")
        *_, first, chat, c, suggest = nvim_argv(tmp_path / "init.lua", [])
        assert (first, chat, c) == ("hello.py", "+CodeCompanionChat", "-c")
        editor.nvim.command(f"edit {first}")
        editor.nvim.command(chat[1:])
        editor.nvim.command(suggest)
        yield editor, project, server


def wait_review(editor, project) -> int:
    """Wait for the review of the edit in hello.py's buffer; the buffer."""
    buf = editor.nvim.call("bufnr", str(project / "hello.py"))
    editor.wait_for(
        lambda: editor.lua("return require('codecompanion_py.diff').reviews[...] ~= nil", buf),
        what="the review of the edit",
        timeout=60,
    )
    return buf


def review(editor, project, action: str) -> None:
    """Wait for the review of the edit in hello.py's buffer, then answer it."""
    editor.lua("require('codecompanion_py.diff').act(...)", wait_review(editor, project), action)


def sent_messages(server) -> list[list[dict]]:
    return [request.json()["messages"] for request in server.requests]


def test_accepting_the_demo_edit_changes_the_file_shows_the_diff_and_reports_how_to_undo(demo):
    editor, project, server = demo
    chat = editor.nvim.current.buffer.number
    assert editor.lines(chat) == ["## Me", "", "Tidy up hello.py"]
    assert "  " + HINT in editor.virtual_text()
    editor.nvim.input("<CR>")
    review(editor, project, "accept_change")  # the edit is written, then reviewed: g2 keeps it
    done = editor.wait_event("CodeCompanionChatDone", timeout=60)
    assert done["data"]["status"] == "success"
    assert editor.lua("return _G.cc_prompts") == []  # nothing asked before: the read and the edit ran
    # the open buffer was edited and saved
    edited = (project / "hello.py").read_text()
    assert TIDY_GREET in edited and edited != HELLO_PY
    text = editor.text(chat)
    assert '-    return "Hello, " + name + "!"' in text and '+    return f"Hello, {name}!"' in text  # the diff
    assert "Done: hello.py was edited in the open buffer and saved." in text
    assert "press `u`" in text and editor.lines(chat)[-3:] == ["## Me", "", ""]
    names = editor.event_names()
    assert "CodeCompanionToolReviewed" in names and "CodeCompanionFileEdited" in names

    # three requests: the message, the read's result, the edit's result; the hint never sent
    first, second, third = sent_messages(server)
    assert first[-1] == {"role": "user", "content": "Tidy up hello.py"}
    assert HINT not in json.dumps(sent_messages(server))
    assert second[-1]["role"] == "tool" and 'return "Hello, " + name + "!"' in second[-1]["content"]
    assert third[-1]["role"] == "tool" and "was edited" in third[-1]["content"]

    # the edit is one undo step in the file's buffer
    hello = editor.nvim.call("bufnr", str(project / "hello.py"))
    editor.nvim.command(f"buffer {hello}")
    editor.nvim.command("undo")
    assert editor.nvim.api.buf_get_lines(hello, 0, -1, False) == HELLO_PY.removesuffix("\n").split("\n")


def test_the_demo_edit_review_shows_what_it_replaces_and_its_keys_from_the_first_row(demo):
    """The demo's edit starts on line 1: its old lines and keys are drawn, not hidden above it."""
    editor, project, _ = demo
    editor.nvim.input("<CR>")
    [win] = editor.nvim.call("win_findbuf", wait_review(editor, project))
    assert topfill(editor, win) == 3
    rows = screen(editor, win)
    assert rows[:2] == ["def greet(name):", 'return "Hello, " + name + "!"']
    # the keys, as much as the window's width shows: accepting and rejecting first
    assert rows[2].startswith("g2 accept  g3 reject") and REVIEW_KEYS.startswith(rows[2])
    assert rows[3] == "+ def greet(name: str) -> str:"
    review(editor, project, "accept_change")
    editor.wait_event("CodeCompanionChatDone", timeout=60)


def test_rejecting_the_demo_edit_leaves_the_file_and_the_chat_ends_cleanly(demo):
    editor, project, server = demo
    chat = editor.nvim.current.buffer.number
    editor.nvim.input("<CR>")
    review(editor, project, "reject_change")  # g3: the file goes back as it was
    done = editor.wait_event("CodeCompanionChatDone", timeout=60)
    assert done["data"]["status"] == "success"

    assert (project / "hello.py").read_text() == HELLO_PY
    text = editor.text(chat)
    assert "You rejected the edit, so `hello.py` is as it was." in text
    assert editor.lines(chat)[-3:] == ["## Me", "", ""]
    result = sent_messages(server)[-1][-1]
    assert result["role"] == "tool" and "rejected it: the file is as it was" in result["content"]

    # the next message runs the loop again in the same chat
    editor.nvim.command(f"buffer {chat}")
    editor.type_prompt("Once more")
    editor.nvim.input("<CR>")
    review(editor, project, "accept_change")
    editor.wait_event("CodeCompanionChatDone", count=2, timeout=60)
    assert TIDY_GREET in (project / "hello.py").read_text()


def floats() -> str:
    return """
      local out = {}
      for _, win in ipairs(vim.api.nvim_list_wins()) do
        if vim.api.nvim_win_get_config(win).relative ~= "" then
          table.insert(out, vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false))
        end
      end
      return out"""


def test_question_mark_lists_the_chats_keymaps_by_codecompanions_names(demo):
    editor, _, _ = demo
    chat = editor.nvim.current.buffer.number
    vt = editor.virtual_text()
    assert vt == ["  " + HINT]
    editor.nvim.input("?")
    [listed] = editor.wait_for(lambda: editor.lua(floats()) or None, what="the keymap window")
    keys = {line.split()[0]: line for line in listed}
    for key in ("<CR>", "q", "ga", "gr", "gx", "gy", "gc", "gd", "gs", "gf", "gR", "]]", "[[", "{", "}", "gty", "gtx"):
        assert key in keys, listed
    assert "<CR> <C-s>" in keys["<CR>"] and "Send the message to the LLM" in keys["<CR>"]
    assert keys["<CR>"].endswith("(insert, normal)")
    assert "Stop the current request" in keys["q"] and "YOLO" in keys["gty"] and "Clear all messages" in keys["gx"]
    assert keys["<C-c>"].endswith("Close the chat buffer (insert, normal)")
    assert "gao" not in keys and "gas" not in keys  # an agent chat's own: not in this HTTP chat

    editor.nvim.input("q")  # closes the list; the chat is untouched
    editor.wait_for(lambda: editor.lua(floats()) == [], what="the keymap window closed")
    assert editor.nvim.current.buffer.number == chat and editor.lines(chat) == ["## Me", "", "Tidy up hello.py"]
    assert editor.event_names().count("CodeCompanionChatStopped") == 0


def messages(nvim) -> str:
    return nvim.exec_lua("return vim.fn.execute('messages')")


def test_the_demos_provider_line_shows_once_neovim_is_up_and_never_asks_for_enter(tmp_path):
    """A real provider picked from the environment is named in Neovim, in a window narrower
    than the line: cut to fit, no hit-enter prompt."""
    why = "make demo: ollama qwen2.5-coder:32b-instruct, as Ollama answers (stop it for the offline demo)"
    init = write_init(tmp_path / "init.lua", notice=why)
    nvim = pynvim.attach("child", argv=[nvim_binary(), "--embed", "-u", str(init)])
    try:
        nvim.ui_attach(40, 10, rgb=True)  # a UI: Neovim runs VimEnter, as in a terminal
        # get_mode answers during a hit-enter prompt too, where any other request would wait
        wait_until(lambda: nvim.api.get_mode()["mode"] == "r" or "make demo" in messages(nvim), 15, lambda: "the line")
        assert not nvim.api.get_mode()["blocking"]  # no "Press ENTER"
        shown = messages(nvim).strip()
        assert why.startswith(shown) and len(shown) == nvim.eval("v:echospace") < len(why)
    finally:
        nvim.close()
