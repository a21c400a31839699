"""Saved chats: one JSON file per chat, written atomically after each turn, so a chat can
be reopened (`:CodeCompanionHistory`) and carried on, with any adapter.

A file holds the chat's canonical messages (messages.py, as msgspec encodes them), its
adapter, model and settings, the project it ran in, a title (the first line of its first message
until an LLM or the user writes one), an agent chat's session id, and when it was created
and last updated. The newest `keep` chats stay; older ones are
pruned. A file that cannot be read is skipped (and logged), never fatal.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from ..messages import Message

log = logging.getLogger("codecompanion_py")

DEFAULT_KEEP = 200
TITLE_LENGTH = 60


class Summary(msgspec.Struct, kw_only=True):
    """What the picker shows of a saved chat (decoding only this skips its messages)."""

    id: str
    title: str
    adapter: str
    model: str | None = None
    cwd: str = ""
    created: float = 0.0
    updated: float = 0.0


class Record(Summary, kw_only=True):
    titled: bool = False  # the title was written (by the LLM or the user), not taken from the first line
    session_id: str | None = None  # an agent's chat: its session, loaded again when the agent can
    settings: dict[str, Any] = msgspec.field(default_factory=dict)  # the settings header's values
    messages: list[Message] = msgspec.field(default_factory=list)


def new_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:8]


def title_of(messages: Sequence[Message]) -> str:
    first = next((m.text for m in messages if m.role == "user" and not m.context_id and m.text.strip()), "")
    line = first.strip().splitlines()[0] if first.strip() else "(empty chat)"
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
        return msgspec.json.decode(self._path(chat_id).read_bytes(), type=Record)

    def _files(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return [path for path in self.root.glob("*.json") if not path.name.startswith(".")]

    def summaries(self) -> list[dict[str, Any]]:
        """Every readable saved chat, the most recently updated first."""
        found = []
        for path in self._files():
            try:
                found.append(msgspec.json.decode(path.read_bytes(), type=Summary))
            except (OSError, msgspec.DecodeError, msgspec.ValidationError) as error:
                log.warning("history: skipped %s: %s", path.name, error)
        found.sort(key=lambda s: s.updated, reverse=True)
        return [msgspec.structs.asdict(s) for s in found]

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


def transcript(messages: Sequence[Message]) -> list[dict[str, str]]:
    """The turns as the chat buffer shows them again: the user's and the LLM's text (tool
    calls and results, and shared context, are in the history the engine keeps, not in the buffer)."""
    return [
        {"role": m.role, "text": m.text}
        for m in messages
        if m.role in ("user", "assistant") and not m.context_id and m.text.strip()
    ]
