"""A long chat stays highlighted, and cheap: each finished turn leaves the region Neovim
parses again after every change, and what is written at the end does not make Neovim
parse the earlier turns again (lua/codecompanion_py/chat/highlight.lua)."""

from __future__ import annotations

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread, sse_reply

from .test_chat import chunk, setup_local

pytestmark = pytest.mark.nvim

# About 40 KB of reply: more than a region holds, so every turn ends in a region of its own.
PARAGRAPH = "Step {i} of turn {turn} is **important**, and `code` says why.\n\n```lua\nlocal x = {i}\n```\n\n"


def long_reply(turn: int):
    text = "".join(PARAGRAPH.format(i=i, turn=turn) for i in range(500))
    return sse_reply([chunk(text[i : i + 4_000]) for i in range(0, len(text), 4_000)] + [chunk(finish="stop")])


CAPTURES = """
local buf, row, col = ...
vim.api.nvim_win_set_cursor(0, { row + 1, 0 })
vim.cmd("normal! zz")
vim.cmd("redraw")
vim.treesitter.get_parser(buf):parse({ row, row + 1 }) -- what the highlighter does for a drawn line
return vim.tbl_map(function(c) return c.capture end, vim.treesitter.get_captures_at_pos(buf, row, col))
"""


def captures(editor, buf: int, row: int, col: int) -> list[str]:
    return editor.lua(CAPTURES, buf, row, col)


def row_of(editor, text: str, after: int = 0) -> int:
    return next(i for i, line in enumerate(editor.lines()) if i >= after and line.startswith(text))


def regions(editor, buf: int) -> list[list[int]]:
    """The parsed regions of the chat's root, as [first row, last row + 1], empty ones left out."""
    return editor.lua(
        """local out = {}
        for _, region in pairs(vim.treesitter.get_parser(...):included_regions()) do
          local r = region[1]
          if r and r[6] > r[3] then table.insert(out, { r[1], r[4] }) end
        end
        return out""",
        buf,
    )


def test_every_turn_of_a_long_chat_is_highlighted_and_an_edit_at_its_end_leaves_them_parsed(editor):
    with ServerThread(ScriptedServer.sequence([long_reply(t) for t in range(3)])) as server:
        setup_local(editor, server.url)
        editor.nvim.command("CodeCompanionChat first")
        buf = editor.nvim.current.buffer.number
        for turn in (1, 2, 3):
            editor.wait_event("CodeCompanionChatDone", count=turn)
            # the finished turn is sealed just after the reply, in a callback of its own
            editor.wait_for(lambda n=turn + 1: len(regions(editor, buf)) == n, what=f"turn {turn} sealed")
            if turn < 3:
                editor.type_prompt(f"question {turn + 1}")
                editor.nvim.input("<CR>")
        assert len(server.requests) == 3

    lines = editor.lines()
    headers = [i for i, line in enumerate(lines) if line == "## Me"]
    assert len(headers) == 4
    # each finished turn is a region of its own; the last holds the next message
    assert regions(editor, buf) == [
        [0, headers[1]],
        [headers[1], headers[2]],
        [headers[2], headers[3]],
        [headers[3], len(lines)],
    ]

    for turn in range(3):  # bold, inline code (markdown_inline) and the lua fence, in every turn
        step = row_of(editor, f"Step 7 of turn {turn} ")
        assert "markup.strong" in captures(editor, buf, step, lines[step].index("**important**") + 3)
        assert "markup.raw" in captures(editor, buf, step, lines[step].index("`code`") + 1)
        assert "keyword" in captures(editor, buf, row_of(editor, "local x = 7", after=step), 0)
    assert any(c.startswith("markup.heading") for c in captures(editor, buf, headers[0], 3))

    # the user writes their next message: the earlier turns need no new parse, only the last
    early, last = editor.lua(
        """local buf = ...
        vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "and one more thing" })
        local parser, n = vim.treesitter.get_parser(buf), vim.api.nvim_buf_line_count(buf)
        return { parser:is_valid(true, { 5, 6 }), parser:is_valid(true, { n - 1, n }) }""",
        buf,
    )
    assert early and not last


def test_text_put_above_the_first_turn_is_highlighted_too(editor):
    with ServerThread(ScriptedServer.sequence([long_reply(0)])) as server:
        setup_local(editor, server.url)
        editor.nvim.command("CodeCompanionChat first")
        editor.wait_event("CodeCompanionChatDone")
    buf = editor.nvim.current.buffer.number
    # Inserted at the very start, the text is outside every region until they are laid again.
    editor.lua("vim.api.nvim_buf_set_lines(..., 0, 0, false, { '# Notes', '', 'a **note**', '' })", buf)
    editor.wait_for(
        lambda: regions(editor, buf)[0][0] == 0 and regions(editor, buf)[-1][1] == len(editor.lines()),
        what="the regions to cover the buffer again",
    )
    assert "markup.strong" in captures(editor, buf, 2, 4)
    assert any(c.startswith("markup.heading") for c in captures(editor, buf, 0, 0))


def test_regex_syntax_when_treesitter_is_off(editor):
    editor.setup("{ display = { chat = { treesitter = false } } }")
    editor.nvim.command("CodeCompanionChat")
    buf = editor.nvim.current.buffer.number
    editor.wait_for(lambda: editor.nvim.current.buffer.options["syntax"] == "markdown", what="markdown syntax")
    assert not editor.lua("return vim.treesitter.highlighter.active[...] ~= nil", buf)


def test_a_long_saved_chat_opens_in_regions_and_is_highlighted(editor):
    turns = []
    for turn in range(3):
        turns += [
            {"role": "user", "text": f"question {turn}"},
            {"role": "llm", "text": "".join(PARAGRAPH.format(i=i, turn=turn) for i in range(500)).strip()},
        ]
    editor.lua(
        'require("codecompanion_py.chat").open({ saved = { id = "s1", adapter = "demo", transcript = ... } })',
        turns,
    )
    buf = editor.nvim.current.buffer.number
    editor.wait_for(lambda: len(regions(editor, buf)) == 4, what="the saved chat laid in regions")
    lines = editor.lines()
    step = row_of(editor, "Step 7 of turn 0 ")
    assert "markup.strong" in captures(editor, buf, step, lines[step].index("**important**") + 3)
    step = row_of(editor, "Step 7 of turn 2 ")
    assert "markup.strong" in captures(editor, buf, step, lines[step].index("**important**") + 3)


def test_a_long_chat_cleared_and_regenerated_stays_highlighted(editor):
    with ServerThread(ScriptedServer.sequence([long_reply(t) for t in range(4)])) as server:
        setup_local(editor, server.url)
        editor.nvim.command("CodeCompanionChat first")
        buf = editor.nvim.current.buffer.number
        editor.wait_event("CodeCompanionChatDone")
        editor.wait_for(lambda: len(regions(editor, buf)) == 2, what="the chat laid in regions")
        # the last reply again (gr): it leaves, and the new one streams in
        editor.lua('require("codecompanion_py.chat.actions").regenerate(...)', buf)
        editor.wait_event("CodeCompanionChatDone", count=2)
        step = row_of(editor, "Step 7 of turn 1 ")
        line = editor.lines()[step]
        assert "markup.strong" in captures(editor, buf, step, line.index("**important**") + 3)
        # the chat cleared (gx), then a new turn
        editor.lua('require("codecompanion_py.chat.actions").clear(...)', buf)
        editor.wait_event("CodeCompanionChatCleared")
        editor.type_prompt("again")
        editor.nvim.input("<C-s>")
        editor.wait_event("CodeCompanionChatDone", count=3)
        step = row_of(editor, "Step 7 of turn 2 ")
        line = editor.lines()[step]
        assert "markup.strong" in captures(editor, buf, step, line.index("**important**") + 3)
        assert regions(editor, buf)[0][0] == 0 and regions(editor, buf)[-1][1] == len(editor.lines())
