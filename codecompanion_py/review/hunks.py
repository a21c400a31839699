"""A unified diff (`git diff -U0` between the baseline's tree and a fresh snapshot) as hunks.

A hunk is known by its content (the file's path and its `-`/`+` lines), never by its line
numbers: an accepted hunk stays accepted while edits above it move it down the file.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class Hunk:
    path: str  # relative to the root, with `/`
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: tuple[str, ...]  # the `-` and `+` lines as the diff has them

    @property
    def key(self) -> str:
        """What an accepted hunk is remembered by."""
        digest = hashlib.sha256(self.path.encode("utf-8", "replace") + b"\0")
        digest.update("\n".join(self.lines).encode("utf-8", "replace"))
        return digest.hexdigest()[:24]

    @property
    def first(self) -> int:
        """The line of the file the hunk is at (the line after a pure deletion)."""
        return max(1, self.new_start + (0 if self.new_count else 1)) if self.new_start else 1

    @property
    def last(self) -> int:
        return self.first + max(self.new_count, 1) - 1

    def summary(self) -> str:
        added = sum(1 for line in self.lines if line.startswith("+"))
        removed = len(self.lines) - added
        first = next((line[1:].strip() for line in self.lines if line[1:].strip()), "")
        return f"+{added} -{removed} {first[:80]}".rstrip()


def parse(diff: str) -> list[Hunk]:
    """Each hunk of `diff`, in order; a binary file is one hunk at line 1."""
    hunks: list[Hunk] = []
    path = ""
    header: tuple[int, int, int, int] | None = None
    body: list[str] = []

    def close() -> None:
        if header is not None and path:
            hunks.append(Hunk(path, *header, tuple(body)))

    for line in diff.split("\n"):
        if line.startswith("diff --git "):
            close()
            header, body, path = None, [], _git_path(line)
        elif header is None and (line.startswith("+++ ") or line.startswith("--- ")):
            path = _side(line[4:]) or path
        elif line.startswith("Binary files ") and header is None:
            hunks.append(Hunk(path, 1, 1, 1, 1, (f"+[binary file {path} changed]",)))
        elif found_header := _HEADER.match(line):
            close()
            old_start, old_count, new_start, new_count = found_header.groups()
            header = (int(old_start), _count(old_count), int(new_start), _count(new_count))
            body = []
        elif header is not None and line[:1] in ("+", "-"):
            body.append(line)
    close()
    return hunks


def _count(text: str | None) -> int:
    return 1 if text is None else int(text)


def _git_path(line: str) -> str:
    """`diff --git a/x b/x`: the path, for a file whose header has no `+++` (binary, mode)."""
    rest = line[len("diff --git ") :]
    half = len(rest) // 2
    return _side(rest[half + 1 :]) if rest[half : half + 1] == " " else ""


def _side(text: str) -> str:
    """`a/x`, `"b/x"` or `/dev/null` (no file on that side: ""); a name with a space ends
    in a tab in `---`/`+++` lines."""
    text = _unquote(text.removesuffix("\t"))
    return "" if text == "/dev/null" else text[2:] if text[:2] in ("a/", "b/") else text


def _unquote(path: str) -> str:
    """Git quotes a path with unusual bytes (`"a\\tb"`, octal escapes)."""
    if not (path.startswith('"') and path.endswith('"')):
        return path
    raw = path[1:-1].encode("latin-1", "replace").decode("unicode_escape").encode("latin-1", "replace")
    return raw.decode("utf-8", "replace")


def covering(hunks: list[Hunk], path: str, line: int) -> Hunk | None:
    """The hunk of `path` holding `line` (of the file as it is now), else its nearest one."""
    mine = [h for h in hunks if h.path == path]
    for hunk in mine:
        if hunk.first <= line <= hunk.last:
            return hunk
    return min(mine, key=lambda h: abs(h.first - line), default=None)
