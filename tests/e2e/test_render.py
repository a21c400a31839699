"""The chat buffer renders what the engine sends: every UI op has a Lua renderer, an op
Lua does not know is reported, absent values arrive as nil, and agents' recorded update
sequences (Claude Code's repeated tool updates, the Codex bridge's fenced output) come out
as blocks updated in place with the reply's text in paragraphs of its own."""

from __future__ import annotations

from codecompanion_py.ui import ops

from .test_acp import open_agent_chat, project  # noqa: F401  (fixture)


def test_every_engine_op_has_a_lua_renderer(editor):
    lua_names = editor.lua('return require("codecompanion_py.chat").op_names()')
    assert sorted(lua_names) == sorted(ops.OP_NAMES)


def test_an_op_lua_does_not_know_is_reported_once(editor, project):  # noqa: F811
    chat = open_agent_chat(editor, project, "")
    editor.lua(
        """
      local chat = require("codecompanion_py.chat")
      chat.apply(..., { { op = "no_such_op" }, { op = "no_such_op" } })""",
        chat,
    )
    notes = [n for n in editor.lua("return _G.cc_notes") if "unknown UI op" in n]
    assert notes == [
        'CodeCompanion: the engine sent an unknown UI op "no_such_op"; the Lua and Python parts '
        "of the plugin do not match (update both)"
    ]


def test_absent_values_are_left_out_not_sent_as_null():
    [begin, done] = ops.encode(
        [
            ops.Begin(adapter=ops.AdapterInfo(name="codex", formatted_name="Codex", type="acp")),
            ops.Done(status="success"),
        ]
    )
    assert begin == {"op": "begin", "adapter": {"name": "codex", "formatted_name": "Codex", "type": "acp"}}
    assert done == {"op": "done", "status": "success"}
    assert ops.encode([ops.fire("ToolApprovalRequested", {"tool": "Read", "id": None})]) == [
        {"op": "fire", "event": "ToolApprovalRequested", "data": {"tool": "Read"}}
    ]


def reply_of(editor, chat) -> str:
    text = editor.text(chat)
    return text[text.index("## CodeCompanion (Fake Agent)") :]


def test_claude_tool_updates_rewrite_one_block_and_text_gets_its_own_paragraph(editor, project):  # noqa: F811
    chat = open_agent_chat(editor, project, "replay claude_tool_updates")
    editor.wait_event("CodeCompanionChatDone")
    assert reply_of(editor, chat) == "\n".join(
        [
            "## CodeCompanion (Fake Agent)",
            "",
            "I'll read the notes.",
            "",
            "**Tool** ✓ Read notes.txt",
            f"  ↳ `{project}/notes.txt:1`",
            "",
            "```",
            "first line",
            "```",
            "",
            'The notes say "first line".',
            "",
            "**Plan**",
            "",
            "- [x] Read the notes",
            "",
            "Done.",
            "",
            "## Me",
            "",
            "",
        ]
    )
    # the agent's model is known only once its session started: that is no change of model
    assert not [n for n in editor.lua("return _G.cc_notes") if "now using" in n]


def test_output_that_is_fenced_already_is_not_fenced_again(editor, project):  # noqa: F811
    chat = open_agent_chat(editor, project, "replay codex_bridge_command")
    editor.wait_event("CodeCompanionChatDone")
    assert reply_of(editor, chat) == "\n".join(
        [
            "## CodeCompanion (Fake Agent)",
            "",
            "**Tool** ✓ ls",
            "",
            "```",
            "notes.txt",
            "```",
            "",
            "There is one file.",
            "",
            "## Me",
            "",
            "",
        ]
    )


def test_long_output_is_folded_whole_and_text_after_it_stays_outside(editor, project):  # noqa: F811
    chat = open_agent_chat(editor, project, "replay long_output")
    editor.wait_event("CodeCompanionChatDone")
    lines = editor.lines(chat)
    opening = lines.index("test_a PASSED") - 1  # the fence line, 0-based
    closing = lines.index("5 passed") + 1
    assert lines[opening].startswith("```") and lines[closing] == lines[opening]
    fold = editor.lua("local row = ...; return { vim.fn.foldclosed(row), vim.fn.foldclosedend(row) }", opening + 1)
    assert fold == [opening + 1, closing + 1]  # 1-based: the whole block, its closing fence included
    assert lines[closing + 2] == "All five pass."
