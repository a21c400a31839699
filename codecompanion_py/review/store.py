"""A review's state on disk, per repository root and branch (under the user's
`interactions.code_review.opts.storage_dir`):

    <storage_dir>/<root, flattened>/review.md                 what `Share` wrote last
    <storage_dir>/<root, flattened>/<branch, flattened>/comments.md   the pending comments
    <storage_dir>/<root, flattened>/<branch, flattened>/state.json    accepted hunks, ignored
                                                               and tracked files, for one baseline

comments.md is markdown the user may edit (`Comments`): a `## path:start-end` heading, the
code in a fence, the prose. It and state.json are user data: read through a size cap, and a
file that cannot be read is moved aside (said once) rather than overwritten or crashed on.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from ..errors import CodeCompanionError, FileTooLarge, PathRefused
from ..tools.workspace import read_regular

MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_COMMENT_CHARS = 20_000
MAX_CODE_CHARS = 40_000
_HEADING = re.compile(r"^## (.+):(\d{1,9})-(\d{1,9})\s*$")
_FENCE = re.compile(r"^(`{3,})(\S*)\s*$")


class ReviewError(CodeCompanionError):
    """A review's files could not be read or written; `str()` says which and why."""


class Comment(msgspec.Struct, frozen=True, kw_only=True):
    path: str  # relative to the root, with `/`
    start_line: int
    end_line: int
    code: str = ""
    filetype: str = ""
    comment: str

    @property
    def id(self) -> str:
        text = f"{self.path}\0{self.start_line}\0{self.end_line}\0{self.comment}"
        return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


class State(msgspec.Struct, kw_only=True):
    baseline: str | None = None  # the baseline commit the sets below belong to
    accepted: list[str] = []  # hunk keys
    ignored: list[str] = []  # paths
    tracked: list[str] = []  # paths the agent edited through our tools


def flatten(path: str) -> str:
    """A path or branch as one safe file name, distinct for distinct inputs."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", path).strip("_")[-60:] or "root"
    return f"{readable}-{hashlib.sha256(path.encode('utf-8', 'surrogateescape')).hexdigest()[:10]}"


@dataclass
class ReviewFiles:
    storage_dir: Path
    root: Path
    branch: str
    warnings: list[str] = field(default_factory=list)  # one line per file moved aside

    @property
    def repo_dir(self) -> Path:
        return self.storage_dir / flatten(str(self.root))

    @property
    def folder(self) -> Path:
        return self.repo_dir / flatten(self.branch)

    @property
    def comments_path(self) -> Path:
        return self.folder / "comments.md"

    @property
    def review_path(self) -> Path:
        return self.repo_dir / "review.md"

    # --- comments ---------------------------------------------------------------------------

    def comments(self) -> list[Comment]:
        text = self._read(self.comments_path)
        if text is None:
            return []
        found, stray = parse_comments(text)
        if stray:  # text that is no comment: kept aside before anything rewrites the file
            self._aside(self.comments_path, "holds text that is not a comment (## path:start-end)")
            self.write_comments(found)
        return found

    def raw(self) -> str:
        """The comments file's text, as `Comments` opens it."""
        return self._read(self.comments_path) or ""

    def write_comments(self, comments: list[Comment]) -> None:
        if comments:
            self._write(self.comments_path, format_comments(comments))
        else:
            self.comments_path.unlink(missing_ok=True)

    def write_raw_aside(self, raw: str) -> None:
        """Text of the user's that is no comment: kept beside the comments file, said once."""
        kept = self.comments_path.with_name(f"comments.md.kept-{time.strftime('%Y%m%d-%H%M%S')}")
        self._write(kept, raw)
        self.warnings.append(f"CodeCompanion: text that is no comment (## path:start-end) was kept as {kept}")

    def write_review(self, markdown: str) -> None:
        self._write(self.review_path, markdown)

    # --- state ------------------------------------------------------------------------------

    def state(self, baseline: str | None) -> State:
        """The sets that hold for `baseline`; those of another baseline are gone."""
        path = self.folder / "state.json"
        text = self._read(path)
        state = State(baseline=baseline)
        if text is not None:
            try:
                state = msgspec.json.decode(text, type=State)
            except msgspec.DecodeError as error:
                self._aside(path, f"cannot be read ({error})")
                return State(baseline=baseline)
        if state.baseline != baseline:
            return State(baseline=baseline)
        return state

    def save_state(self, state: State) -> None:
        self._write(self.folder / "state.json", msgspec.json.format(msgspec.json.encode(state)).decode())

    # --- files ------------------------------------------------------------------------------

    def _read(self, path: Path) -> str | None:
        if not os.path.lexists(path):
            return None
        try:
            data = read_regular(Path(os.path.realpath(path)), path.name, MAX_FILE_BYTES)
        except FileTooLarge:
            self._aside(path, f"is above {MAX_FILE_BYTES:,} bytes")
            return None
        except PathRefused as refused:
            raise ReviewError(f"the code review's {path} cannot be read: {refused}") from None
        return data.decode("utf-8", "replace")

    def _aside(self, path: Path, why: str) -> None:
        kept = path.with_name(f"{path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}")
        try:
            os.replace(path, kept)
        except OSError as error:
            raise ReviewError(f"the code review's {path} {why}, and could not be moved aside: {error}") from None
        self.warnings.append(f"CodeCompanion: the code review's {path.name} {why}; it was kept as {kept}")

    def _write(self, path: Path, text: str) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            temporary.write_text(text, encoding="utf-8")
            os.replace(temporary, path)
        except OSError as error:
            raise ReviewError(f"the code review could not write {path}: {error}") from None


def fence(code: str) -> str:
    """A backtick fence longer than any run of backticks in `code` (at least 4)."""
    longest = max((len(run) for run in re.findall(r"`{4,}", code)), default=3)
    return "`" * (longest + 1)


def fenced(comment: Comment) -> str:
    """The comment's code in a fence of its filetype."""
    marks = fence(comment.code)
    return f"{marks}{comment.filetype}\n{comment.code}\n{marks}"


def format_comment(comment: Comment) -> str:
    return f"## {comment.path}:{comment.start_line}-{comment.end_line}\n\n{fenced(comment)}\n\n{comment.comment}\n"


def format_comments(comments: list[Comment]) -> str:
    return "\n".join(format_comment(c) for c in comments)


def parse_comments(text: str) -> tuple[list[Comment], bool]:
    """The comments in `text`, and whether it held anything else (text before the first
    heading, a heading without prose). Linear; never raises."""
    found: list[Comment] = []
    stray = False
    current: dict[str, object] | None = None
    prose: list[str] = []
    code: list[str] | None = None
    opened_with = ""

    def close() -> None:
        nonlocal stray
        if current is None:
            return
        words = "\n".join(prose).strip()
        if not words:
            stray = True
            return
        found.append(Comment(comment=words[:MAX_COMMENT_CHARS], **current))  # type: ignore[arg-type]

    for line in text.split("\n"):
        if opened_with:
            if line.strip() == opened_with:
                opened_with = ""
                assert current is not None and code is not None
                current["code"] = "\n".join(code)[:MAX_CODE_CHARS]
            elif code is not None:
                code.append(line)
            continue
        heading = _HEADING.match(line)
        if heading:
            close()
            start, end = int(heading.group(2)), int(heading.group(3))
            current = {"path": heading.group(1).strip(), "start_line": min(start, end), "end_line": max(start, end)}
            prose, code = [], None
            continue
        opened = _FENCE.match(line)
        if current is not None and code is None and opened and not any(p.strip() for p in prose):
            opened_with, code = opened.group(1), []
            current["filetype"] = opened.group(2)
        elif current is not None:
            prose.append(line)
        elif line.strip():
            stray = True
    close()
    return found, stray
