"""The inline assistant and :CodeCompanionCmd in real Neovim against a local server: each
placement streamed into the buffer and reviewed (accepted, rejected, hunk by hunk), the
buffer's bytes, 'modified' and undo checked; an edit during the review; a stopped request."""

from __future__ import annotations

import contextlib

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread, sse_reply
from tests.e2e.test_chat import chunk
from tests.e2e.test_chat_surface import chat_config, notes, setup

pytestmark = pytest.mark.nvim

CODE = ["def add(a, b):", "    return a - b", "", "print(add(1, 2))"]


def answer(text: str, delay: float = 0.0):
    """`text` streamed in pieces of 7 characters, as a model streams."""
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
    return sse_reply([chunk(p) for p in pieces] + [chunk(finish="stop")], delay=delay)


def open_code(editor, tmp_path, lines=CODE):
    path = tmp_path / "calc.py"
    path.write_text("\n".join(lines) + "\n")
    editor.nvim.command(f"edit {path}")
    return editor.nvim.current.buffer


@contextlib.contextmanager
def rewrite_streaming(editor, tmp_path, config: str | None = None):
    """`:1,2CodeCompanion rewrite` of the code buffer, from a reply that stops after its first
    line and never ends: the buffer, while the request still runs."""
    slow = sse_reply([chunk("PLACEMENT: replace\n"), chunk("def add(a, b):\n")], delay=0.2)
    slow.hang = True
    with ServerThread(ScriptedServer.sequence([slow])) as server:
        setup(editor, server.url, chat_config("") if config is None else config)
        buf = open_code(editor, tmp_path)
        editor.nvim.command("1,2CodeCompanion rewrite")
        editor.wait_for(lambda: buf[:][:1] == ["def add(a, b):"] and len(buf[:]) == 3, what="streaming in")
        yield buf


def diff_marks(editor, buf) -> int:
    return editor.lua(
        "return #vim.api.nvim_buf_get_extmarks(..., vim.api.nvim_create_namespace('codecompanion_py_diff'), 0, -1, {})",
        buf.number,
    )


def wait_review(editor, buf):
    editor.wait_event("CodeCompanionInlineFinished")
    editor.wait_for(lambda: diff_marks(editor, buf) > 0, what="the diff review")


def test_replace_accepted_is_one_undo_step_and_rejected_leaves_the_bytes(editor, tmp_path):
    fixed = "PLACEMENT: replace\n```python\ndef add(a, b):\n    return a + b\n```\n"
    with ServerThread(ScriptedServer.sequence([answer(fixed), answer(fixed)])) as server:
        setup(editor, server.url, chat_config(""))
        buf = open_code(editor, tmp_path)
        editor.nvim.command("1,2CodeCompanion fix the bug")
        wait_review(editor, buf)
        assert buf[:] == ["def add(a, b):", "    return a + b", "", "print(add(1, 2))"]
        body = server.requests[0].json()["messages"]
        assert "The selected lines 1-2:\n```python\ndef add(a, b):\n    return a - b\n```" in body[1]["content"]
        assert body[1]["content"].endswith("The request: fix the bug")
        editor.nvim.input("g2")
        editor.wait_for(lambda: diff_marks(editor, buf) == 0, what="accepted")
        assert buf[:][1] == "    return a + b" and buf.options["modified"]
        editor.nvim.command("undo")  # the whole edit is one step
        assert buf[:] == CODE and not buf.options["modified"]

        editor.nvim.command("1,2CodeCompanion fix the bug")
        editor.wait_event("CodeCompanionInlineFinished", count=2)
        editor.wait_for(lambda: diff_marks(editor, buf) > 0, what="the second review")
        editor.nvim.input("g3")
        editor.wait_for(lambda: diff_marks(editor, buf) == 0, what="rejected")
        assert buf[:] == CODE and not buf.options["modified"]
        assert (tmp_path / "calc.py").read_text() == "\n".join(CODE) + "\n"
    events = editor.event_names()
    assert events.count("CodeCompanionInlineStarted") == 2 and events.count("CodeCompanionInlineFinished") == 2


def test_add_after_and_a_new_buffer(editor, tmp_path):
    added = "PLACEMENT: add\ndef sub(a, b):\n    return a - b\n"
    new = "PLACEMENT: new\nimport unittest\n"
    with ServerThread(ScriptedServer.sequence([answer(added), answer(new)])) as server:
        setup(editor, server.url, chat_config(""))
        buf = open_code(editor, tmp_path)
        editor.nvim.command("2")
        editor.nvim.command("CodeCompanion add a sub function")
        wait_review(editor, buf)
        assert buf[:] == CODE[:2] + ["def sub(a, b):", "    return a - b"] + CODE[2:]
        body = server.requests[0].json()["messages"]
        assert "Nothing is selected; the cursor is on line 2." in body[1]["content"]
        editor.nvim.input("g3")  # rejected: as it was
        editor.wait_for(lambda: buf[:] == CODE, what="rejected")
        assert not buf.options["modified"]

        editor.nvim.command("CodeCompanion write tests")
        editor.wait_event("CodeCompanionInlineFinished", count=2)
        editor.wait_for(lambda: editor.nvim.current.buffer.number != buf.number, what="a new buffer")
        new_buf = editor.nvim.current.buffer
        assert new_buf[:] == ["import unittest"] and new_buf.options["filetype"] == "python"
        assert buf[:] == CODE


def test_hunk_by_hunk_and_an_edit_during_the_review(editor, tmp_path):
    lines = ["a = 1", "b = 2", "c = 3", "d = 4", "e = 5"]
    changed = "PLACEMENT: replace\nA = 1\nb = 2\nc = 3\nd = 4\nE = 5\n"
    with ServerThread(ScriptedServer.sequence([answer(changed), answer(changed)])) as server:
        setup(editor, server.url, chat_config(""))
        buf = open_code(editor, tmp_path, lines)
        editor.nvim.command("1,5CodeCompanion capitalise")
        wait_review(editor, buf)
        assert buf[:] == ["A = 1", "b = 2", "c = 3", "d = 4", "E = 5"]
        editor.nvim.command("1")
        editor.nvim.input("g5")  # accept the first hunk
        editor.wait_for(lambda: diff_marks(editor, buf) > 0 and buf[0] == "A = 1", what="the first hunk accepted")
        editor.nvim.command("5")
        editor.nvim.input("g6")  # reject the last
        editor.wait_for(lambda: diff_marks(editor, buf) == 0, what="the review over")
        assert buf[:] == ["A = 1", "b = 2", "c = 3", "d = 4", "e = 5"]

        editor.nvim.command("silent! %d | call setline(1, ['a = 1', 'b = 2', 'c = 3', 'd = 4', 'e = 5']) | write")
        editor.nvim.command("1,5CodeCompanion capitalise")
        editor.wait_event("CodeCompanionInlineFinished", count=2)
        editor.wait_for(lambda: diff_marks(editor, buf) > 0, what="the second review")
        buf[2] = "c = 33"  # the user edits while the diff shows
        editor.nvim.input("g3")
        editor.wait_for(lambda: any("changed while the diff was shown" in n for n in notes(editor)), what="refusal")
        assert buf[:] == ["A = 1", "b = 2", "c = 33", "d = 4", "E = 5"]  # nothing of theirs lost


SCREEN = """
  local win = ...
  vim.cmd("redraw")
  local top, left = unpack(vim.fn.win_screenpos(win))
  local rows = {}
  for row = top, top + vim.api.nvim_win_get_height(win) - 1 do
    local cells = {}
    for col = left, left + vim.api.nvim_win_get_width(win) - 1 do
      table.insert(cells, vim.fn.screenstring(row, col))
    end
    table.insert(rows, vim.trim(table.concat(cells)))
  end
  return rows"""


def screen(editor, win: int = 0) -> list[str]:
    """The rows of the window as drawn on the screen (virtual lines, signs and all), trimmed."""
    return editor.lua(SCREEN, win or editor.nvim.current.window.handle)


def topfill(editor, win: int = 0) -> int:
    """How many virtual lines above the window's first line it draws."""
    return editor.lua("return vim.api.nvim_win_call(..., function() return vim.fn.winsaveview().topfill end)", win)


def test_a_review_of_line_1_scrolls_its_old_lines_and_keys_into_view_with_the_inline_keymaps(editor, tmp_path):
    fixed = "PLACEMENT: replace\n```python\ndef add(x, y):\n    return x + y\n```\n"
    keymaps = (
        'inline = { keymaps = { accept_change = { modes = { n = "ga" } }, reject_change = { modes = { n = "gr" } } } }'
    )
    with ServerThread(ScriptedServer.sequence([answer(fixed)])) as server:
        setup(editor, server.url, f'interactions = {{ chat = {{ adapter = "testllm" }}, {keymaps} }},')
        buf = open_code(editor, tmp_path)
        editor.nvim.command("1,2CodeCompanion fix the bug")
        wait_review(editor, buf)
        hint = "ga accept  gr reject  g5/g6 hunk  gv diff  g1 always accept"
        old, new = ["def add(a, b):", "return a - b"], ["+ def add(x, y):", "+     return x + y"]
        # the old lines, then the keys, right above the new lines: all drawn from the window's first row
        assert topfill(editor) == 3
        assert screen(editor)[:5] == [*old, hint, *new]
        editor.nvim.command("enew")  # the review's buffer hidden, then shown again: scrolled again
        editor.nvim.command(f"buffer {buf.number}")
        assert topfill(editor) == 3 and screen(editor)[:3] == [*old, hint]
        editor.nvim.command(f"resize 3 | enew | buffer {buf.number}")  # too low for all: the keys stay
        assert screen(editor) == [old[1], hint, new[0]]
        editor.nvim.input("ga")  # inline.keymaps.accept_change, as in CodeCompanion's config
        editor.wait_for(lambda: diff_marks(editor, buf) == 0, what="accepted")
        assert buf[:2] == ["def add(x, y):", "    return x + y"] and topfill(editor) == 0
    # CodeCompanion's documented inline keymaps are honoured, so never named in setup()'s notice
    assert (
        editor.lua(f'return require("codecompanion_py.config_check").unsupported({{ interactions = {{ {keymaps} }} }})')
        == []
    )


def test_a_review_brings_its_first_change_into_view_in_a_window_the_user_is_not_in(editor, tmp_path):
    """As the chat's edit review, from the chat's window: the file's window goes to the change."""
    lines = [f"line {n}" for n in range(1, 81)]
    buf = open_code(editor, tmp_path, lines)
    code_win = editor.nvim.current.window
    editor.nvim.command("new")  # the user's window
    user_win = editor.nvim.current.window
    buf[59] = "LINE 60"
    editor.lua(
        "require('codecompanion_py.diff').start(..., { start = 0, count = 80, original = select(2, ...) })",
        buf.number,
        lines,
    )
    rows = screen(editor, code_win.handle)
    at = rows.index("line 60")
    assert rows[at + 1].startswith("g2 accept  g3 reject") and rows[at + 2] == "+ LINE 60"
    assert editor.nvim.current.window == user_win  # the user stays where they are


def test_q_stops_a_request_and_leaves_the_buffer_as_it_was(editor, tmp_path):
    with rewrite_streaming(editor, tmp_path) as buf:
        editor.nvim.input("q")
        editor.wait_event("CodeCompanionInlineFinished")
        editor.wait_for(lambda: buf[:] == CODE, what="put back")
        assert not buf.options["modified"] and diff_marks(editor, buf) == 0


def test_the_stop_key_is_codecompanions_inline_keymap_when_set(editor, tmp_path):
    stop = "keymaps = { stop = { modes = { n = 'gq' } } }"
    config = f"interactions = {{ chat = {{ adapter = 'testllm' }}, inline = {{ {stop} }} }},"
    with rewrite_streaming(editor, tmp_path, config) as buf:
        assert editor.lua("return vim.fn.maparg('q', 'n', false, true).buffer") is None
        editor.nvim.input("gq")
        editor.wait_event("CodeCompanionInlineFinished")
        editor.wait_for(lambda: buf[:] == CODE, what="put back")
        assert editor.lua("return vim.fn.maparg('gq', 'n')") == ""  # unmapped once done


def test_cmd_puts_the_command_on_the_command_line_without_running_it(editor, tmp_path):
    with ServerThread(ScriptedServer.sequence([answer("`:%s/return/yield/g`")])) as server:
        setup(editor, server.url, chat_config(""))
        buf = open_code(editor, tmp_path)
        editor.nvim.command("CodeCompanionCmd replace return with yield everywhere")
        editor.wait_for(lambda: editor.nvim.api.get_mode()["mode"] == "c", what="the command line")
        assert editor.nvim.call("getcmdline") == "%s/return/yield/g"
        assert buf[:] == CODE  # not run
        system = server.requests[0].json()["messages"][0]["content"]
        assert "one command" in system
        editor.nvim.input("<Esc>")


WORD_MARKS = """
local buf = ...
local out = { words = {}, old = {} }
for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, vim.api.nvim_create_namespace('codecompanion_py_diff'), 0, -1,
  { details = true })) do
  local d = m[4]
  if d.hl_group == 'CodeCompanionDiffText' then
    table.insert(out.words, vim.api.nvim_buf_get_text(buf, m[2], m[3], m[2], d.end_col, {})[1])
  end
  for _, line in ipairs(d.virt_lines or {}) do
    for _, chunk in ipairs(line) do
      if type(chunk[2]) == 'table' and vim.tbl_contains(chunk[2], 'CodeCompanionDiffTextDelete') then
        table.insert(out.old, chunk[1])
      end
    end
  end
end
return out
"""


@pytest.mark.parametrize("words", ["on", "additions off"])
def test_a_changed_line_has_its_changed_words_highlighted_in_both_versions(editor, tmp_path, words):
    if words != "on":
        editor.setup("{ display = { diff = { word_highlights = { additions = false } } } }")
    lines = ["local total = price * count", "return total"]
    buf = open_code(editor, tmp_path, lines)
    buf[0] = "local total = price + count"
    buf.append("print(total)")  # an added line has no words of its own to mark
    editor.lua(
        "require('codecompanion_py.diff').start(..., { start = 0, count = 3, original = select(2, ...) })",
        buf.number,
        lines,
    )
    marked = editor.lua(WORD_MARKS, buf.number)
    assert marked["words"] == (["+"] if words == "on" else [])
    assert marked["old"] == ["*"]
    assert (
        editor.lua("return vim.fn.hlexists('CodeCompanionDiffText') + vim.fn.hlexists('CodeCompanionDiffTextDelete')")
        == 2
    )
