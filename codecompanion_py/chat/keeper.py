"""Keeping chats: which saved chat each open chat writes to; its saves (when a turn starts,
every second while the reply streams, after the turn, and when Neovim exits); the title
an LLM writes for it (when the background interaction is on); and the editor's
`history.*` requests (list, load, rename, delete) for `:CodeCompanionHistory`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..adapters.base import HTTPAdapter
from ..client import HttpClient
from ..errors import CodeCompanionError, ConfigError
from ..snapshots.checkpoints import Checkpoint
from . import history, titles
from .context import shared
from .history import HistoryStore, Record
from .protocol import Session

log = logging.getLogger("codecompanion_py")

SAVE_EVERY = 1.0  # seconds between saves while a reply streams
# Not at once: a save (0.3 ms) made while the request is out takes the CPU from a local
# server (Ollama, the bench's) as it answers; a short reply is saved once, at its end.
FIRST_SAVE_AFTER = 0.1
PRUNE_AFTER = 2.0  # seconds from a new chat's first save to pruning the folder


@dataclass
class _Kept:
    id: str
    created: float
    title: str | None = None  # the LLM's, once written
    titling: bool = False
    # Without the LLM's: the first message as the user typed it (not as `prompt_decorator`
    # made it), or the title it was saved with.
    first_line: str | None = None
    checkpoints: list[Checkpoint] = field(default_factory=list)  # the worktree before each turn


class ChatKeeper:
    def __init__(
        self,
        settings: Callable[[], Any],  # the engine's current Config
        client: Callable[[], HttpClient],
        notify: Callable[[str, str], None],
    ) -> None:
        self._settings = settings
        self._client = client
        self._notify = notify
        self._kept: dict[Any, _Kept] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._prunes_due: set[str] = set()  # folders with a prune already on the way
        # the refs of a deleted chat's checkpoints go (set by the engine; chats pruned from the
        # history leave theirs to the bound of refs a worktree keeps)
        self.dropped: Callable[[list[Checkpoint]], object] | None = None

    def store(self, folder: Any = None) -> HistoryStore | None:
        root = folder or self._settings().editor.get("history_dir")
        return HistoryStore(str(root)) if root else None

    def begin(self, chat_id: Any, history_id: Any, resume_id: Any = None) -> Record | None:
        """Chat `chat_id` opens: a new saved chat, or the saved chat `history_id` it carries on
        (picked by the user: one that cannot be read is an error), or `resume_id`, the one it
        wrote to in an engine that stopped (when it cannot be read, the chat starts afresh as
        a new saved chat: the engine may have stopped before its first save)."""
        store, wanted = self.store(), history_id or resume_id
        if store is None or not wanted:
            self._kept[chat_id] = _Kept(history.new_id(), time.time())
            return None
        try:
            record = store.load(str(wanted))
        except (OSError, ValueError, msgspec.DecodeError, msgspec.ValidationError) as error:
            if history_id:
                raise ConfigError(f"the saved chat {history_id} cannot be read: {error}") from None
            if not isinstance(error, history.Missing):
                self._notify(f"CodeCompanion: the chat's earlier turns cannot be restored: {error}", "WARN")
            self._kept[chat_id] = _Kept(history.new_id(), time.time())
            return None
        title = record.title if record.titled else None
        self._kept[chat_id] = _Kept(
            record.id,
            record.created,
            title=title,
            first_line=record.title,
            checkpoints=[c for c in record.checkpoints if c.valid()],  # a saved file is not trusted
        )
        return record

    def saved_id(self, chat_id: Any) -> str | None:
        """The saved chat that chat `chat_id` writes to."""
        kept = self._kept.get(chat_id)
        return kept.id if kept is not None and self.store() is not None else None

    def typed(self, chat_id: Any, text: str) -> None:
        """The user sent `text` (before any `prompt_decorator`): the first is the chat's title
        until an LLM writes one."""
        kept = self._kept.get(chat_id)
        if kept is not None and kept.first_line is None and text.strip():
            kept.first_line = history.first_line(text)

    def checkpoints(self, chat_id: Any) -> list[Checkpoint]:
        """The chat's checkpoints, oldest first: the list itself, changed in place."""
        kept = self._kept.get(chat_id)
        return kept.checkpoints if kept is not None else []

    def forget(self, chat_id: Any) -> None:
        self._kept.pop(chat_id, None)

    def after_turn(self, session: Session) -> None:
        """Save the chat; after its first turn that got a reply, have its title written when
        that is on."""
        replied = self.save(session)
        kept = self._kept.get(session.chat_id)
        if replied and kept is not None and kept.title is None and not kept.titling and self._settings().make_titles:
            adapter = self._title_adapter(session)
            if adapter is not None:
                kept.titling = True
                task = asyncio.get_running_loop().create_task(self._write_title(session, kept, adapter))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    def watch(self, session: Session, turn: asyncio.Task[None]) -> None:
        """A turn started: saved FIRST_SAVE_AFTER seconds after it (the user's message), then
        every SAVE_EVERY seconds with what has streamed, so a crash loses at most that much;
        after the turn, `after_turn` (a turn over sooner is saved once, there)."""

        async def keep_saving() -> None:
            await asyncio.sleep(FIRST_SAVE_AFTER)
            while True:
                self.save(session)
                await asyncio.sleep(SAVE_EVERY)

        task = asyncio.get_running_loop().create_task(keep_saving())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        turn.add_done_callback(lambda _turn: task.cancel())

    async def close(self) -> None:
        """The engine stops: no save or title is left pending."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def save_all(self, sessions: Iterable[Session]) -> None:
        """Neovim is exiting (`:qa!` too): every chat as it stands, the reply streaming included."""
        for session in sessions:
            self.save(session)

    def save(self, session: Session) -> bool:
        """Write the chat as it stands; False when it has no reply. Such a chat is not kept
        once no request of it runs (they failed, or were stopped before any answer): the file
        its first save made goes, so failures do not fill the history."""
        store, kept = self.store(), self._kept.get(session.chat_id)
        messages = [m for m in session.snapshot() if m.role != "system"]
        replied = any(m.role == "assistant" for m in messages)
        if store is None or kept is None:
            return replied
        if not any(m.role == "user" and not m.context_id for m in messages):
            return replied
        if not replied and not session.busy:
            self._drop(store, kept)
            return False
        info, state = session.adapter_info(), session.saved_state()
        record = Record(
            id=kept.id,
            title=kept.title or kept.first_line or history.title_of(messages),
            titled=kept.title is not None,
            adapter=info.name,
            model=info.model,
            cwd=str(session.workspace.root),
            created=kept.created,
            updated=time.time(),
            session_id=state.session_id,
            settings=dict(state.settings),
            messages=messages,
            checkpoints=list(kept.checkpoints),
        )
        try:
            if store.save(record, prune=False):  # a new file: the folder is pruned, off this step
                self._prune_soon(store)
        except OSError as error:
            self._notify(f"CodeCompanion: the chat could not be saved to {store.root}: {error}", "WARN")
        return replied

    def _drop(self, store: HistoryStore, kept: _Kept) -> None:
        try:
            store.delete(kept.id)
        except (OSError, ValueError) as error:
            self._notify(
                f"CodeCompanion: a chat without a reply could not be removed from {store.root}: {error}", "WARN"
            )

    def _prune_soon(self, store: HistoryStore) -> None:
        """A chat's first save may come while its first reply streams; reading the folder (up
        to `keep` files, 1.5 ms) then would hold it up. One prune covers every chat saved
        before it runs, so chats made in a row do not read the folder once each."""
        folder = str(store.root)
        if folder in self._prunes_due:
            return
        self._prunes_due.add(folder)
        try:
            asyncio.get_running_loop().call_later(PRUNE_AFTER, self._prune, store)
        except RuntimeError:  # not on the engine's loop (Neovim exiting): now
            self._prune(store)

    def _prune(self, store: HistoryStore) -> None:
        self._prunes_due.discard(str(store.root))
        try:
            store.prune()
        except OSError as error:
            self._notify(f"CodeCompanion: old saved chats could not be removed from {store.root}: {error}", "WARN")

    def _title_adapter(self, session: Session) -> HTTPAdapter | None:
        spec = self._settings().background_adapter
        if spec is None:
            return session.title_adapter()  # an agent's chat needs one named
        try:
            return self._settings().adapters.http(spec)
        except CodeCompanionError as error:
            self._notify(f"CodeCompanion: interactions.background.adapter: {error}", "WARN")
            return None

    async def _write_title(self, session: Session, kept: _Kept, adapter: HTTPAdapter) -> None:
        try:
            title = await titles.make_title(adapter, self._client(), list(session.history))
        except CodeCompanionError as error:
            log.info("no title for chat %s: %s", kept.id, error)
            title = None
        if title and self._kept.get(session.chat_id) is kept:
            kept.title = title
            self.save(session)

    # --- the editor's requests ------------------------------------------------------------

    # (the editor says where: a request can arrive before the config that says it too)

    def summaries(self, folder: str | None) -> list[dict[str, Any]]:
        return self._store(folder).summaries()

    def delete(self, folder: str | None, chat: str) -> bool:
        """The saved chat goes, and its checkpoints' refs with it (through `dropped`)."""
        store = self._store(folder)
        with contextlib.suppress(OSError, ValueError, msgspec.DecodeError, msgspec.ValidationError):
            checkpoints = [c for c in store.load(chat).checkpoints if c.valid()]
            if checkpoints and self.dropped is not None:
                self.dropped(checkpoints)
        store.delete(chat)
        return True

    def rename(self, folder: str | None, chat: str, title: str) -> bool:
        store = self._store(folder)
        record = self._load(store, chat)
        title = _clean_title(title)
        store.save(msgspec.structs.replace(record, title=title, titled=True))
        for kept in self._kept.values():  # an open chat keeps the new title
            if kept.id == record.id:
                kept.title = title
        return True

    def retitle(self, chat_id: Any, title: str) -> str:
        """`/rename` in open chat `chat_id`: its title from now on (saved at once when it has
        been saved before); the title as kept."""
        kept = self._kept.get(chat_id)
        if kept is None:
            raise ConfigError("this chat is not open in the engine")
        kept.title = title = _clean_title(title)
        store = self.store()
        if store is not None:
            try:
                record = self._load(store, kept.id)
            except ConfigError:
                return title  # not saved yet: its first save takes the title
            store.save(msgspec.structs.replace(record, title=title, titled=True))
        return title

    def load(self, folder: str | None, chat: str) -> dict[str, Any]:
        """The saved chat, for the editor to show before it opens it again."""
        record = self._load(self._store(folder), chat)
        turns, hidden = history.transcript(record.messages)
        return {
            "id": record.id,
            "title": record.title,
            "adapter": record.adapter,
            "model": record.model,
            "cwd": record.cwd,
            "transcript": turns,
            "hidden": hidden,  # earlier turns the buffer leaves out (the engine keeps them)
            "context": shared(record.messages),
        }

    def _store(self, folder: str | None) -> HistoryStore:
        store = self.store(folder)
        if store is None:
            raise ConfigError("there is no history directory (the editor did not give one)")
        return store

    @staticmethod
    def _load(store: HistoryStore, chat: str) -> Record:
        try:
            return store.load(chat)
        except (OSError, ValueError, msgspec.DecodeError, msgspec.ValidationError) as error:
            raise ConfigError(f"the saved chat {chat} cannot be read: {error}") from None


def _clean_title(title: str) -> str:
    """A title as the user gave it, on one line; a `ConfigError` when nothing is left."""
    cleaned = " ".join(title.split())
    if not cleaned:
        raise ConfigError("a title cannot be empty")
    return cleaned
