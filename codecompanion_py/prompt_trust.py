"""Whether the user trusts a project's own prompts: a `prompt_library.markdown.dirs` folder
inside the project (such as `.prompts`) comes with the repository, and its helper `.lua`
files would run in Neovim. Lua asks once per project (prompts/trust.lua, as direnv and mise
ask); the answers are kept here, in one JSON file Lua names (in stdpath("data")), by the
project's real path: {"/path": true | false}.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from .rules import expand

MAX_ANSWERS_BYTES = 64 * 1024  # one line per project: far below this


def answer(file: str, root: str) -> bool | None:
    """True (trusted), False (the user said no) or None (not asked yet)."""
    value = _answers(file).get(root)
    return value if isinstance(value, bool) else None


def remember(file: str, root: str, trusted: bool) -> None:
    """Keep the answer for `root`, the file written whole or not at all."""
    answers = _answers(file)
    answers[root] = trusted
    Path(file).parent.mkdir(parents=True, exist_ok=True)
    temporary = f"{file}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(answers, handle)
    os.replace(temporary, file)


def in_project(folder: str, root: str, home: str) -> bool:
    """Whether `folder` (as the config names it) is inside the project `root` (a real path):
    relative, or really in it. Neovim started in the home folder has no project: the folders
    there are the user's own."""
    if root == os.path.realpath(home):
        return False
    expanded = expand(folder, home)
    if not expanded.startswith("/"):
        return True
    real = os.path.realpath(expanded)
    return real == root or real.startswith(root.rstrip("/") + "/")


def _answers(file: str) -> dict[str, object]:
    with contextlib.suppress(OSError, ValueError), open(file, "rb") as handle:
        decoded = json.loads(handle.read(MAX_ANSWERS_BYTES))
        return decoded if isinstance(decoded, dict) else {}
    return {}


__all__ = ["answer", "in_project", "remember"]
