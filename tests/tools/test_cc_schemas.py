"""The schemas CodeCompanion's models are tuned on, run as a model sends them: what the model
is shown is CodeCompanion's, and the older forms our models may still send keep working."""

from __future__ import annotations

from pathlib import Path

import pytest

from codecompanion_py.tools.registry import CATALOG, ToolSettings, enabled_definitions

from .test_catalog import NOTES, Editor, chat, project  # noqa: F401 (the fixture)


def parameters(name: str) -> dict:  # type: ignore[type-arg]
    return enabled_definitions(ToolSettings(), CATALOG)[name].spec().parameters


def test_the_schemas_the_model_sees_are_codecompanions() -> None:
    edit = parameters("insert_edit_into_file")
    assert edit["required"] == ["filepath", "edits", "explanation", "mode"]
    assert edit["properties"]["mode"]["enum"] == ["append", "overwrite"] and "content" not in edit["properties"]
    assert edit["properties"]["edits"]["items"]["required"] == ["oldText", "newText", "replaceAll"]
    read = parameters("read_file")
    assert read["required"] == ["filepath", "start_line_number_base_zero", "end_line_number_base_zero"]
    assert {read["properties"][n]["type"] for n in read["required"][1:]} == {"number"}
    severity = parameters("get_diagnostics")["properties"]["severity"]
    assert severity["enum"] == ["ERROR", "WARNING", "INFORMATION", "HINT"]


@pytest.mark.parametrize(
    ("mode", "edit", "written"),
    [  # append applies the edits; overwrite makes the first edit's newText the file
        ("append", {"oldText": "needle", "newText": "pin", "replaceAll": False}, b"hello\npin in notes\n"),
        ("overwrite", {"oldText": "", "newText": "all new\n", "replaceAll": False}, b"all new\n"),
    ],
)
async def test_codecompanions_modes(project: Path, mode: str, edit: dict, written: bytes) -> None:  # noqa: F811
    result = await chat(project.root).run(
        "insert_edit_into_file", filepath="notes.txt", edits=[edit], explanation="why", mode=mode
    )
    assert result.status == "success", result.content
    assert (project.root / "notes.txt").read_bytes() == written


async def test_the_older_edit_forms_still_work(project: Path) -> None:  # noqa: F811
    session = chat(project.root)
    edited = await session.run(
        "insert_edit_into_file", filepath="notes.txt", mode="edit", edits=[{"oldText": "hello", "newText": "hi"}]
    )
    appended = await session.run("insert_edit_into_file", filepath="notes.txt", mode="append", content="end\n")
    assert edited.status == appended.status == "success"
    assert (project.root / "notes.txt").read_bytes() == b"hi\nneedle in notes\nend\n"
    wrong = await session.run("insert_edit_into_file", filepath="notes.txt", mode="sideways", edits=[])
    assert wrong.status == "error" and "mode" in wrong.content


async def test_read_file_takes_numbers_and_still_reads_a_whole_file_without_them(project: Path) -> None:  # noqa: F811
    session = chat(project.root)
    second = await session.run(
        "read_file", filepath="notes.txt", start_line_number_base_zero=1.0, end_line_number_base_zero=-1
    )
    assert second.content.endswith("```\nneedle in notes\n```")
    whole = await session.run("read_file", filepath="notes.txt")
    assert NOTES.decode().strip() in whole.content
    half = await session.run("read_file", filepath="notes.txt", start_line_number_base_zero=0.5)
    assert half.status == "error" and "whole line number" in half.content
