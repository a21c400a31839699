"""Saved chats: one JSON file per chat, written atomically after each turn, so a chat can
be reopened (`:CodeCompanionHistory`) and carried on, with any adapter.

A file holds the chat's canonical messages (messages.py, as msgspec encodes them), its
adapter, model and settings, the project it ran in, a title (the first line of its first message
until an LLM or the user writes one), an agent chat's session id, and when it was created
and last updated. The newest `keep` chats stay; older ones are
pruned.

Saved chats are read through one door, `read_saved`: regular files only, at most
`MAX_SAVED_BYTES`, bytes that are not UTF-8 replaced, and any way a file can be broken
(truncated, nested past Python's limits, not a chat) one `Unreadable` with its reason. The
picker lists such a file as "unreadable: <reason>" beside the others; reopening one says
why in one line. A reopened chat shows at most `MAX_SHOWN_CHARS` of its latest turns (the
LLM still gets them all), so a long one does not hold up the editor.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from ..errors import CodeCompanionError
from ..messages import Message, valid_utf8
from ..snapshots.checkpoints import Checkpoint

log = logging.getLogger("codecompanion_py")

DEFAULT_KEEP = 200
TITLE_LENGTH = 60
MAX_SAVED_BYTES = 20 * 1024 * 1024
MAX_SHOWN_CHARS = 200_000
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


class Summary(msgspec.Struct, kw_only=True):
    """What the picker shows of a saved chat (decoding only this skips its messages)."""

    id: str
    title: str
    adapter: str
    model: str | None = None
    cwd: str = ""
    created: float = 0.0
    updated: float = 0.0

    def __post_init__(self) -> None:
        # each is shown on one line (the picker, the chat's headers): a saved newline broke the reopening
        self.title, self.adapter = " ".join(self.title.split()), " ".join(self.adapter.split())
        self.model = " ".join(self.model.split()) if self.model else self.model


class Record(Summary, kw_only=True):
    titled: bool = False  # the title was written (by the LLM or the user), not taken from the first line
    session_id: str | None = None  # an agent's chat: its session, loaded again when the agent can
    settings: dict[str, Any] = msgspec.field(default_factory=dict)  # the settings header's values
    messages: list[Message] = msgspec.field(default_factory=list)
    checkpoints: list[Checkpoint] = msgspec.field(default_factory=list)  # the worktree before each turn


class Unreadable(ValueError):
    """A saved chat that cannot be used; `str()` is the reason, one line."""


class Missing(Unreadable):
    """There is no such saved chat (never saved, or deleted)."""


T = TypeVar("T")


def read_saved(path: Path, kind: type[T]) -> T:
    """The one way a saved chat is read: see the module's docstring."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        raise Missing("there is no such saved chat") from None
    except OSError as error:
        raise Unreadable(error.strerror or str(error)) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable("not a regular file")
        if info.st_size > MAX_SAVED_BYTES:
            limit = _megabytes(MAX_SAVED_BYTES)
            raise Unreadable(f"too large to open ({_megabytes(info.st_size)}; the limit is {limit})")
        data = handle.read(MAX_SAVED_BYTES + 1)
    if len(data) > MAX_SAVED_BYTES:
        raise Unreadable(f"too large to open (more than {_megabytes(MAX_SAVED_BYTES)})")
    try:
        return msgspec.json.decode(valid_utf8(data), type=kind)
    except RecursionError:
        raise Unreadable("nested too deep") from None
    except (msgspec.DecodeError, msgspec.ValidationError, CodeCompanionError, ValueError) as error:
        raise Unreadable(f"not a saved chat ({str(error).splitlines()[0][:200]})") from None


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.0f} MB"


def new_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:8]


def title_of(messages: Sequence[Message]) -> str:
    return first_line(next((m.text for m in messages if m.role == "user" and not m.context_id and m.text.strip()), ""))


def first_line(text: str) -> str:
    """A title from a message: its first line, cut to TITLE_LENGTH."""
    line = text.strip().splitlines()[0] if text.strip() else "(empty chat)"
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1] + "…"


class HistoryStore:
    def __init__(self, root: str | Path, keep: int = DEFAULT_KEEP) -> None:
        self.root = Path(root)
        self.keep = keep

    def _path(self, chat_id: str) -> Path:
        if not chat_id or "/" in chat_id or chat_id.startswith("."):
            raise ValueError(f"not a saved chat's id: {chat_id!r}")
        return self.root / f"{chat_id}.json"

    def save(self, record: Record, *, prune: bool = True) -> bool:
        """Write the record in one step (a temporary file renamed over the old one); True when
        that made a new file, which is when the folder is pruned (unless `prune` is False: the
        caller prunes later)."""
        self.root.mkdir(parents=True, exist_ok=True)
        data = msgspec.json.encode(record)
        path = self._path(record.id)
        new = not path.exists()
        fd, temp = tempfile.mkstemp(dir=self.root, prefix=".saving-", suffix=".json")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        if new and prune:
            self.prune()
        return new

    def load(self, chat_id: str) -> Record:
        return read_saved(self._path(chat_id), Record)

    def _files(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return [path for path in self.root.glob("*.json") if not path.name.startswith(".")]

    def summaries(self) -> list[dict[str, Any]]:
        """Every saved chat, the most recently updated first; one that cannot be read is
        listed as "unreadable: <reason>" (`unreadable` holds the reason)."""
        found: list[tuple[Summary, str | None]] = []
        for path in self._files():
            try:
                found.append((read_saved(path, Summary), None))
            except Missing:  # deleted since the folder was read
                continue
            except Unreadable as error:
                log.warning("history: %s is unreadable: %s", path.name, error)
                with contextlib.suppress(OSError):
                    updated = path.lstat().st_mtime
                    title = f"unreadable: {error} ({path.name})"
                    found.append((Summary(id=path.stem, title=title, adapter="?", updated=updated), str(error)))
        found.sort(key=lambda entry: entry[0].updated, reverse=True)
        return [
            {**msgspec.structs.asdict(summary), **({"unreadable": reason} if reason else {})}
            for summary, reason in found
        ]

    def delete(self, chat_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._path(chat_id).unlink()

    def prune(self) -> None:
        """Keep the `keep` most recently written files. Runs after a save that added one, so
        it reads only the directory, never the chats themselves."""
        dated = []
        for path in self._files():
            with contextlib.suppress(OSError):
                dated.append((path.stat().st_mtime_ns, path.name, path))
        for _, _, path in sorted(dated, reverse=True)[self.keep :]:
            with contextlib.suppress(OSError):
                path.unlink()


def transcript(messages: Sequence[Message], limit: int = MAX_SHOWN_CHARS) -> tuple[list[dict[str, str]], int]:
    """The turns as the chat buffer shows them again: the user's and the LLM's text (tool
    calls and results, and shared context, are in the history the engine keeps, not in the
    buffer). Only the latest turns that fit in `limit` characters (the last one cut to its
    end if it alone does not); the second value is how many earlier turns are left out."""
    turns = [
        {"role": m.role, "text": m.text}
        for m in messages
        if m.role in ("user", "assistant") and not m.context_id and m.text.strip()
    ]
    shown, room = 0, limit
    for turn in reversed(turns):
        if len(turn["text"]) > room:
            if shown == 0:  # the last turn alone is too long: its end
                turn["text"] = "[... cut: the start is not shown]\n" + turn["text"][-room:]
                shown = 1
            break
        room -= len(turn["text"])
        shown += 1
    return turns[len(turns) - shown :], len(turns) - shown
