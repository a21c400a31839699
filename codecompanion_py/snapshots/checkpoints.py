"""A chat's checkpoints: the worktree before and after each turn, and the rewind to one.

Before a turn is sent, the worktree is snapshotted (`git.py`), and again when the turn ends,
so every turn has the files as they were before it. Rewinding to turn k puts back every
file that differs from its checkpoint: edited ones get their bytes back, deleted ones come
back, created ones go.

What the user changed is never overwritten silently. Changes made between turns show as the
difference between one turn's end and the next turn's start (and between the last turn's end
and now); a file changed there, or open with unsaved changes, is a conflict, and the user
chooses for each: keep theirs, or take the checkpoint's.

Bounds: a chat keeps its last `MAX_PER_CHAT` checkpoints (older ones are dropped with their
refs), a worktree at most `MAX_REFS` checkpoint refs (the oldest go first, whichever chat they
belonged to: chats pruned from the history leave none behind for long); a checkpoint is two
trees, whose blobs git shares with every other snapshot.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import secrets
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import msgspec

from ..errors import SnapshotError
from . import restore
from .git import ABSENT, REFS, Change, GitStore
from .stores import Stores

log = logging.getLogger("codecompanion_py.snapshots")

CHECKPOINT_REFS = REFS + "checkpoints/"
_REF = re.compile(r"[0-9]{14}-[0-9a-f]{6}")
_OBJECT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
MAX_PER_CHAT = 50
MAX_REFS = 1000
MAX_SHOWN_BYTES = 512 * 1024  # a conflict's checkpoint side, shown in a diff


class Checkpoint(msgspec.Struct, kw_only=True):
    """The worktree before (and after) one turn; saved with the chat."""

    ref: str
    """The name under CHECKPOINT_REFS that keeps its trees from git's garbage collection
    (time first, so the oldest sort first)."""
    root: str
    """The worktree snapshotted."""
    header: int
    """Which `## Me` of the chat buffer (counted from the top) the turn was sent under."""
    keep: int
    """The chat's messages before the turn, system prompts aside."""
    before: str
    after: str | None = None
    at: float = 0.0
    text: str = ""
    """The message's first line, for `/rewind`'s list."""

    def valid(self) -> bool:
        """Whether a saved chat's checkpoint can be used as it is: its ref name and object ids
        go to git (a newline in one would be a command of its own), so each must look right."""
        return bool(
            _REF.fullmatch(self.ref)
            and _OBJECT.fullmatch(self.before)
            and (self.after is None or _OBJECT.fullmatch(self.after))
            and os.path.isabs(self.root)
            and self.header >= 0
        )


@dataclass(frozen=True)
class Conflict:
    relative: str
    path: str
    checkpoint: str | None  # its text at the checkpoint (None: absent there, binary or too large)


@dataclass(frozen=True)
class RewindPlan:
    store: GitStore
    target: Checkpoint
    changes: list[Change]  # from now (old) to the checkpoint (new)
    conflicts: list[Conflict]


@dataclass(frozen=True)
class Restored:
    relative: str
    path: str
    action: Literal["restored", "removed", "kept"]


class Checkpoints:
    def __init__(self, stores: Stores) -> None:
        self.stores = stores

    async def before_turn(self, cwd: str, *, header: int, keep: int, text: str) -> Checkpoint:
        """The worktree as the turn finds it (raises SnapshotError when it cannot be had)."""
        store = await self.stores.for_folder(cwd)
        tree = await store.snapshot()
        ref = f"{int(time.time() * 1000):014d}-{secrets.token_hex(3)}"
        line = text.strip().splitlines()[0][:80] if text.strip() else ""
        return Checkpoint(
            ref=ref, root=str(store.root), header=header, keep=keep, before=tree, at=time.time(), text=line
        )

    async def keep_alive(self, checkpoint: Checkpoint) -> None:
        """Its refs, so git keeps its trees; past MAX_REFS the oldest refs go."""
        store = await self.stores.for_folder(checkpoint.root)
        refs: dict[str, str | None] = {CHECKPOINT_REFS + checkpoint.ref: checkpoint.before}
        if checkpoint.after:
            refs[CHECKPOINT_REFS + checkpoint.ref + "-after"] = checkpoint.after
        await store.set_refs(refs)
        existing = sorted(name for name, _sha in await store.refs(CHECKPOINT_REFS))
        if len(existing) > MAX_REFS:
            await store.set_refs(dict.fromkeys(existing[: len(existing) - MAX_REFS]))

    async def after_turn(self, checkpoint: Checkpoint) -> None:
        store = await self.stores.for_folder(checkpoint.root)
        checkpoint.after = await store.snapshot()
        await self.keep_alive(checkpoint)

    async def drop(self, checkpoints: Sequence[Checkpoint]) -> None:
        """Their refs go (a dropped chat, turns rewound away, the oldest past MAX_PER_CHAT)."""
        by_root: dict[str, dict[str, str | None]] = {}
        for checkpoint in checkpoints:
            names = by_root.setdefault(checkpoint.root, {})
            names[CHECKPOINT_REFS + checkpoint.ref] = None
            names[CHECKPOINT_REFS + checkpoint.ref + "-after"] = None
        for root, names in by_root.items():
            try:
                store = await self.stores.for_folder(root)
                existing = {name for name, _sha in await store.refs(CHECKPOINT_REFS)}
                await store.set_refs({name: None for name in names if name in existing})
            except SnapshotError as error:
                log.info("checkpoint refs in %s were not dropped: %s", root, error)

    async def plan(self, chain: Sequence[Checkpoint], index: int, dirty: Collection[str]) -> RewindPlan:
        """What rewinding to `chain[index]` changes, and which of those files the user changed
        after it (or has unsaved in a buffer: `dirty`, absolute paths)."""
        target = chain[index]
        store = await self.stores.for_folder(target.root)
        now = await store.snapshot()
        changes = await store.changes(now, target.before)
        touched: set[str] = set()
        for turn, following in zip(chain[index:], [*chain[index + 1 :], None], strict=True):
            upto = following.before if following is not None else now
            if turn.after is None:  # a turn the engine did not see end: nothing to tell it apart by
                continue
            touched.update(change.path for change in await store.changes(turn.after, upto))
        root = Path(target.root)
        dirty_set = set(dirty)
        conflicted = [c for c in changes if c.path in touched or str(root / c.path) in dirty_set]
        shown = await _texts(store, [c for c in conflicted if c.new != ABSENT])
        conflicts = [Conflict(c.path, str(root / c.path), shown.get(c.path)) for c in conflicted]
        return RewindPlan(store, target, changes, conflicts)

    async def apply(self, plan: RewindPlan, keep_mine: Collection[str]) -> list[Restored]:
        """The checkpoint's files back, but for `keep_mine` (relative paths): removals first
        (a folder may have to make way for a file), then writes."""
        root = plan.store.root
        todo = [c for c in plan.changes if c.path not in keep_mine and c.new_mode != restore.GITLINK]
        removals = sorted((c for c in todo if c.new == ABSENT), key=lambda c: c.path.count("/"), reverse=True)
        writes = [c for c in todo if c.new != ABSENT]
        data = await plan.store.blobs([(c.new, c.path) for c in writes if c.new_mode != restore.SYMLINK])
        links = await plan.store.blobs([(c.new, c.path) for c in writes if c.new_mode == restore.SYMLINK])
        done: list[Restored] = []
        for change in removals:
            await asyncio.to_thread(restore.remove_file, root, change.path)
            done.append(Restored(change.path, str(root / change.path), "removed"))
        for change in writes:
            content = links.get(change.path) if change.new_mode == restore.SYMLINK else data.get(change.path)
            if content is None:
                raise SnapshotError(f"the checkpoint's copy of {change.path} is missing")
            await asyncio.to_thread(restore.write_file, root, change.path, content, change.new_mode)
            done.append(Restored(change.path, str(root / change.path), "restored"))
        done += [Restored(c.path, str(root / c.path), "kept") for c in plan.changes if c.path in keep_mine]
        return done

    async def settle(self, chain: list[Checkpoint], index: int, *, conversation: bool) -> None:
        """After a rewind to `chain[index]`: with the conversation, the turns from it on are
        gone, and their checkpoints with them; with the files alone, the rewind is the last
        turn's doing, not the user's (a later rewind does not ask about it)."""
        if conversation:
            dropped = chain[index:]
            del chain[index:]
            await self.drop(dropped)
        elif chain:
            await self.after_turn(chain[-1])


async def _texts(store: GitStore, changes: Sequence[Change]) -> dict[str, str]:
    """The checkpoint's side of each conflict as text, for its diff (binary and large left out)."""
    found = await store.blobs([(c.new, c.path) for c in changes])
    return {
        path: data.decode("utf-8")
        for path, data in found.items()
        if len(data) <= MAX_SHOWN_BYTES and b"\0" not in data and _is_utf8(data)
    }


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
