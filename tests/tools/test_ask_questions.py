"""ask_questions through the real orchestrator: each question goes to the editor's `approve`
question (options, Other, Skip; a typed answer; yes or no per option of a multiSelect), and
the answers come back to the model as CodeCompanion's `**header**: answer` lines."""

from __future__ import annotations

from pathlib import Path

from codecompanion_py.tools.approvals import Approvals
from codecompanion_py.tools.registry import ToolSettings

from .test_catalog import Editor, chat

STACK = {
    "header": "Stack",
    "question": "Which test runner?",
    "options": [
        {"label": "pytest", "recommended": True, "description": "what the project uses"},
        {"label": "unittest"},
    ],
}


async def test_questions_are_asked_in_turn_and_answered_back(tmp_path: Path) -> None:
    editor = Editor(
        {"choice": "0"},  # Stack: pytest
        {"choice": "answer", "text": "  snake_case  "},  # Names: typed
        {"choice": "yes"},  # Targets: linux
        {"choice": "no"},  # Targets: mac
        {"choice": "other"},  # Style: Other...
        {"choice": "answer", "text": "black"},
    )
    questions = [
        STACK,
        {"header": "Names", "question": "Naming style?", "options": []},
        {
            "header": "Targets",
            "question": "Where?",
            "multiSelect": True,
            "options": [{"label": "linux"}, {"label": "mac"}],
        },
        {"header": "Style", "question": "Formatter?", "options": [{"label": "ruff"}]},
    ]
    result = await chat(tmp_path, editor).run("ask_questions", questions=questions)
    assert result.status == "success", result.content
    assert result.content == "**Stack**: pytest\n**Names**: snake_case\n**Targets**: linux\n**Style**: black"
    first = editor.asked[0]
    assert [o["label"] for o in first["options"]] == [
        "pytest (recommended)",
        "unittest",
        "Other: type an answer",
        "Skip",
    ]
    assert (
        "**Question 1/4: Stack**" in first["detail"]
        and "- pytest (recommended): what the project uses" in first["detail"]
    )
    assert editor.asked[1]["input"] is True and editor.asked[1]["prompt"] == "Names, your answer: "


async def test_skip_and_cancel(tmp_path: Path) -> None:
    editor = Editor({"choice": "skip"}, {"choice": "cancel"})
    other = {"header": "Other", "question": "And?", "options": [{"label": "x"}]}
    result = await chat(tmp_path, editor).run("ask_questions", questions=[STACK, other, other])
    assert result.content == "**Stack**: No answer provided\nThe user cancelled the questions left"
    assert len(editor.asked) == 2  # the third was never asked


async def test_questions_are_asked_even_in_yolo_mode_and_hidden_characters_shown(tmp_path: Path) -> None:
    editor = Editor({"choice": "answer", "text": "ok"})
    tricky = {"header": "Q", "question": "Approve?\u202e evil", "options": []}
    result = await chat(tmp_path, editor, Approvals(yolo=True)).run("ask_questions", questions=[tricky])
    assert result.content == "**Q**: ok" and "\\u202e" in editor.asked[0]["detail"]


async def test_bad_calls_are_refused_before_anyone_is_asked(tmp_path: Path) -> None:
    editor = Editor()
    session = chat(tmp_path, editor)
    none = await session.run("ask_questions", questions=[])
    five = await session.run("ask_questions", questions=[STACK] * 5)
    assert none.status == five.status == "error" and "at most 4" in five.content and not editor.asked


def test_ask_questions_is_in_the_agent_group() -> None:
    assert ToolSettings().expand("agent")[0] == "ask_questions"
