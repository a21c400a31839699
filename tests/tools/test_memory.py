"""The memory tool through the real orchestrator: CodeCompanion's `/memories` contract, its
`whitelist`, and the paths a model may send to get out (traversal, symlinks, other prefixes)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codecompanion_py.tools.approvals import Approvals
from codecompanion_py.tools.registry import ToolSettings

from .test_catalog import Editor, chat


def memory_chat(root: Path, whitelist: list[dict[str, str]] | None = None):  # type: ignore[no-untyped-def]
    settings = ToolSettings.from_config({"memory": {"opts": {"whitelist": whitelist or []}}})
    return chat(root, Editor(), Approvals(yolo=True), settings)


async def test_memories_are_created_viewed_edited_renamed_and_deleted(tmp_path: Path) -> None:
    session = memory_chat(tmp_path)
    empty = await session.run("memory", command="view", path="/memories")
    assert empty.status == "success" and "(empty)" in empty.content
    made = await session.run("memory", command="create", path="/memories/notes/todo.md", file_text="one\nthree\n")
    assert made.status == "success", made.content
    assert (tmp_path / "memories/notes/todo.md").read_text() == "one\nthree\n"
    await session.run("memory", command="insert", path="/memories/notes/todo.md", insert_line=1, insert_text="two\n")
    await session.run("memory", command="str_replace", path="/memories/notes/todo.md", old_str="three", new_str="3")
    assert (tmp_path / "memories/notes/todo.md").read_text() == "one\ntwo\n3\n"
    seen = await session.run("memory", command="view", path="/memories/notes/todo.md", view_range=[2, -1])
    assert seen.content == '<memoryTool filepath="/memories/notes/todo.md">     2\ttwo\n     3\t3</memoryTool>'
    listing = await session.run("memory", command="view", path="/memories")
    assert "- notes/\n- notes/todo.md" in listing.content
    moved = await session.run(
        "memory", command="rename", old_path="/memories/notes/todo.md", new_path="/memories/done.md"
    )
    assert moved.status == "success" and (tmp_path / "memories/done.md").exists()
    gone = await session.run("memory", command="delete", path="/memories/done.md")
    assert gone.status == "success" and not (tmp_path / "memories/done.md").exists()
    root = await session.run("memory", command="delete", path="/memories")
    assert root.status == "error" and (tmp_path / "memories").is_dir()


async def test_memory_asks_before_it_runs_by_default(tmp_path: Path) -> None:
    session = chat(tmp_path, Editor({"choice": "reject", "reason": "no"}))
    result = await session.run("memory", command="create", path="/memories/x.md", file_text="x")
    assert result.status == "rejected" and not (tmp_path / "memories").exists()
    assert "/memories/x.md" in session.editor.asked[0]["prompt"]


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("/memories/../secret.txt", "'..' is not allowed"),
        ("/memories/a/../../secret.txt", "'..' is not allowed"),
        ("/memoriesbackup/x", "start with one of /memories"),
        ("/etc/passwd", "start with one of /memories"),
        ("memories/x", "start with one of /memories"),
        ("/memories/out/secret.txt", "outside"),  # a symlink to a folder outside
        ("/memories/link.txt", "outside"),  # a symlink to a file outside
        ("/memories/x\0y", "NUL"),
    ],
)
async def test_memory_paths_that_lead_out_are_refused_and_touch_nothing(tmp_path: Path, path: str, said: str) -> None:
    project, outside = tmp_path / "proj", tmp_path / "outside"
    (project / "memories").mkdir(parents=True)
    outside.mkdir()
    (tmp_path / "secret.txt").write_text("top secret")
    (outside / "secret.txt").write_text("top secret")
    os.symlink(outside, project / "memories/out")
    os.symlink(outside / "secret.txt", project / "memories/link.txt")
    session = memory_chat(project)
    for command in ({"command": "view"}, {"command": "create", "file_text": "pwned"}, {"command": "delete"}):
        result = await session.run("memory", path=path, **command)
        assert result.status == "error" and said in result.content, result.content
        assert "top secret" not in result.content
    assert (outside / "secret.txt").read_text() == "top secret" and (
        tmp_path / "secret.txt"
    ).read_text() == "top secret"


async def test_a_memory_folder_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    project, outside = tmp_path / "proj", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    os.symlink(outside, project / "memories")
    result = await memory_chat(project).run("memory", command="create", path="/memories/x.md", file_text="x")
    assert result.status == "error" and "symlink" in result.content and not (outside / "x.md").exists()


async def test_memory_sizes_are_capped(tmp_path: Path) -> None:
    session = memory_chat(tmp_path)
    big = await session.run("memory", command="create", path="/memories/big.md", file_text="x" * 1_000_001)
    assert big.status == "error" and "at most" in big.content and not (tmp_path / "memories/big.md").exists()
    (tmp_path / "memories/long.md").write_text("y" * 100 + "\n" * 5000)
    seen = await session.run("memory", command="view", path="/memories/long.md")
    assert len(seen.content) < 17_000 and "cut at 16,000 characters" in seen.content


async def test_the_whitelist_mounts_a_folder_under_its_alias(tmp_path: Path) -> None:
    project, shared = tmp_path / "proj", tmp_path / "shared"
    project.mkdir()
    shared.mkdir()
    (shared / "team.md").write_text("use tabs\n")
    session = memory_chat(project, [{"path": str(shared), "as": "team"}])
    seen = await session.run("memory", command="view", path="/team/team.md")
    assert seen.status == "success" and "use tabs" in seen.content
    await session.run("memory", command="create", path="/team/more.md", file_text="and spaces\n")
    assert (shared / "more.md").read_text() == "and spaces\n"
    out = await session.run("memory", command="view", path="/team/../proj")
    assert out.status == "error"
    unlisted = await memory_chat(project).run("memory", command="view", path="/team/team.md")
    assert unlisted.status == "error" and "start with one of /memories" in unlisted.content
