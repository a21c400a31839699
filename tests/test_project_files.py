"""The files /file, /image and /symbols offer: git's list in a work tree, else a bounded
walk; capped; a git that hangs gives way to the walk."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from codecompanion_py import project_files
from codecompanion_py.project_files import list_files, walk

HAVE_GIT = shutil.which("git") is not None


def write(path, text="x\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    write(root / "README.md")
    write(root / "src" / "app.py")
    write(root / "build" / "out.bin")
    write(root / ".gitignore", "build/\n")
    for skipped in (".git", "node_modules", ".venv", "__pycache__"):
        write(root / skipped / "inside.txt")
    write(root / "deep" / "2" / "3" / "4" / "5" / "6" / "7" / "at_depth_8.txt")
    write(root / "deep" / "2" / "3" / "4" / "5" / "6" / "7" / "8" / "at_depth_9.txt")
    (root / "link").symlink_to(root / "README.md")
    return root


def test_the_walk_skips_tool_directories_symlinks_and_what_is_too_deep(project):
    assert walk(str(project)) == [
        ".gitignore",
        "README.md",
        "build/out.bin",
        "deep/2/3/4/5/6/7/at_depth_8.txt",
        "src/app.py",
    ]


async def test_outside_a_work_tree_the_files_are_walked(project):
    (project / ".git" / "inside.txt").unlink()  # an empty .git is no repository
    assert await list_files(str(project)) == walk(str(project))


@pytest.mark.skipif(not HAVE_GIT, reason="git is not installed")
async def test_in_a_work_tree_git_lists_tracked_and_untracked_files_but_not_ignored_ones(tmp_path):
    root = tmp_path / "repo"
    write(root / "tracked.txt")
    write(root / ".gitignore", "ignored/\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "tracked.txt", ".gitignore"], cwd=root, check=True)
    write(root / "untracked ü.txt")
    write(root / "ignored" / "secret.txt")
    write(root / "node_modules" / "kept.js")  # git's list: what .gitignore does not exclude
    assert sorted(await list_files(str(root))) == [
        ".gitignore",
        "node_modules/kept.js",
        "tracked.txt",
        "untracked ü.txt",
    ]


async def test_at_most_max_files_are_listed(tmp_path, monkeypatch):
    monkeypatch.setattr(project_files, "MAX_FILES", 3)
    for n in range(6):
        write(tmp_path / f"f{n}.txt")
    assert len(walk(str(tmp_path))) == 3
    if HAVE_GIT:
        subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
        assert await list_files(str(tmp_path)) == ["f0.txt", "f1.txt", "f2.txt"]


async def test_a_git_that_hangs_gives_way_to_the_walk(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "git"
    write(fake, f"#!/bin/sh\ntouch {tmp_path / 'asked'}\nsleep 30\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(project_files, "GIT_TIMEOUT", 0.3)
    write(tmp_path / "work" / "a.txt")
    started = time.monotonic()
    assert await list_files(str(tmp_path / "work")) == ["a.txt"]
    assert time.monotonic() - started < 5
    assert (tmp_path / "asked").exists()


async def test_a_cwd_that_is_gone_has_no_files(tmp_path):
    assert await list_files(str(tmp_path / "gone")) == []
