"""The project's files offered by the chat's pickers (/file, /image, /symbols).

`git ls-files` (tracked and untracked, .gitignore respected) inside a work tree, else a
walk of at most `WALK_DEPTH` levels that skips `SKIP`; at most `MAX_FILES` names, relative
to the editor's cwd. git runs as a child process group with a short timeout and the walk
in a thread, so the engine's loop goes on while the editor waits for the list.

Unlike `tools.search.list_project_files` (the LLM's file_search: every file, no cap, its
own .gitignore rules), this is bounded for a picker opened anywhere, `~` included.
"""

from __future__ import annotations

import asyncio
import os

from .processes.run import run_process_raw

MAX_FILES = 5000
GIT_TIMEOUT = 3.0
"""Seconds git may take before the walk lists the files instead."""
WALK_DEPTH = 8
SKIP = frozenset({".git", "node_modules", ".venv", "__pycache__"})

_GIT_OUTPUT = 4 * 1024 * 1024  # room for MAX_FILES names of any sensible length


async def list_files(cwd: str) -> list[str]:
    """The files under `cwd`, as '/'-separated paths relative to it: git's order, or sorted
    when walked. Nothing for a cwd that is gone."""
    if not os.path.isdir(cwd):
        return []
    names = await _git_files(cwd)
    if names:
        return names[:MAX_FILES]
    return await asyncio.to_thread(walk, cwd)


async def _git_files(cwd: str) -> list[str]:
    argv = ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"]
    result = await run_process_raw(
        argv, cwd=cwd, timeout=GIT_TIMEOUT, max_output=_GIT_OUTPUT, merge_stderr=False, keep_tail=False
    )
    if not result.ok:
        return []
    # each name ends in NUL: the last piece is empty, or a name cut short by the cap
    return [os.fsdecode(name) for name in result.output.split(b"\0")[:-1]]


def walk(root: str) -> list[str]:
    """Regular files (not symlinks) up to `WALK_DEPTH` levels down, `SKIP` directories left
    out, the first `MAX_FILES` found, sorted."""
    found: list[str] = []
    pending = [("", 1)]  # (directory relative to root, the depth of its entries)
    while pending:
        directory, depth = pending.pop()
        try:
            with os.scandir(os.path.join(root, directory)) as entries:
                listed = list(entries)
        except OSError:
            continue
        for entry in listed:
            rel = directory + entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth < WALK_DEPTH and entry.name not in SKIP:
                        pending.append((rel + "/", depth + 1))
                elif entry.is_file(follow_symlinks=False):
                    found.append(rel)
                    if len(found) >= MAX_FILES:
                        return sorted(found)
            except OSError:
                continue
    return sorted(found)


__all__ = ["GIT_TIMEOUT", "MAX_FILES", "SKIP", "WALK_DEPTH", "list_files", "walk"]
