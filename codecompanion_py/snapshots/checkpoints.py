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
import contextlib
import logging
import os
import re
import secrets
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

import msgspec

from ..errors import SnapshotError
from . import restore
from .git import ABSENT, Change, GitStore
from .restore import GITLINK
from .stores import Stores

log = logging.getLogger("codecompanion_py.snapshots")

_REF = re.compile(r"[0-9]{14}-[0-9a-f]{6}")
_OBJECT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
MAX_PER_CHAT = 50
MAX_REFS = 1000
MAX_SHOWN_BYTES = 512 * 1024  # a conflict's checkpoint side, shown in a diff


class Checkpoint(msgspec.Struct, kw_only=True):
    """The worktree before (and after) one turn; saved with the chat."""

    ref: str
    """The name under the worktree's `keep_refs` that keeps its trees from git's garbage collection
    (time first, so the oldest sort first)."""
    root: str
    """The worktree snapshotted."""
    header: int
    """Which `## Me` of the chat buffer (counted from the top) the turn was sent under."""
    keep: int
    """The chat's messages before the turn, system prompts aside."""
    before: str | None
    """The worktree's tree; None for a turn that could not change a file (no tools): the files
    as they were before it are those of the next turn that has one."""
    after: str | None = None
    at: float = 0.0
    text: str = ""
    """The message's first line, for `/rewind`'s list."""

    def valid(self) -> bool:
        """Whether a saved chat's checkpoint can be used as it is: its ref name and object ids
        go to git (a newline in one would be a command of its own), so each must look right."""
        return bool(
            _REF.fullmatch(self.ref)
            and (self.before is None or _OBJECT.fullmatch(self.before))
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
    now: str  # the worktree's tree the plan was made from


@dataclass(frozen=True)
class Restored:
    relative: str
    path: str
    action: Literal["restored", "removed", "kept"]


class Checkpoints:
    def __init__(self, stores: Stores) -> None:
        self.stores = stores

    async def before_turn(self, cwd: str, *, header: int, keep: int, text: str, files: bool = True) -> Checkpoint:
        """The worktree as the turn finds it (raises SnapshotError when it cannot be had); with
        `files` false (the turn cannot change one) no snapshot, only the turn's place."""
        store = await self.stores.for_folder(cwd)
        tree = await store.snapshot() if files else None
        ref = f"{int(time.time() * 1000):014d}-{secrets.token_hex(3)}"
        line = text.strip().splitlines()[0][:80] if text.strip() else ""
        return Checkpoint(
            ref=ref, root=str(store.root), header=header, keep=keep, before=tree, at=time.time(), text=line
        )

    async def keep_alive(self, checkpoint: Checkpoint) -> None:
        """Its refs, so git keeps its trees; past MAX_REFS the worktree's oldest refs go."""
        if checkpoint.before is None:
            return
        store = await self.stores.for_folder(checkpoint.root)
        prefix = store.keep_refs + "checkpoints/"
        refs: dict[str, str | None] = {prefix + checkpoint.ref: checkpoint.before}
        if checkpoint.after:
            refs[prefix + checkpoint.ref + "-after"] = checkpoint.after
        await store.set_refs(refs)
        existing = sorted(name for name, _sha in await store.refs(prefix))
        if len(existing) > MAX_REFS:
            await store.set_refs(dict.fromkeys(existing[: len(existing) - MAX_REFS]))

    async def after_turn(self, checkpoint: Checkpoint) -> None:
        if checkpoint.before is None:
            return
        store = await self.stores.for_folder(checkpoint.root)
        checkpoint.after = await store.snapshot()
        await self.keep_alive(checkpoint)

    async def drop(self, checkpoints: Sequence[Checkpoint]) -> None:
        """Their refs go (a dropped chat, turns rewound away, the oldest past MAX_PER_CHAT)."""
        by_root: dict[str, list[Checkpoint]] = {}
        for checkpoint in checkpoints:
            by_root.setdefault(checkpoint.root, []).append(checkpoint)
        for root, dropped in by_root.items():
            try:
                store = await self.stores.for_folder(root)
                prefix = store.keep_refs + "checkpoints/"
                names = {prefix + c.ref + end for c in dropped for end in ("", "-after")}
                existing = {name for name, _sha in await store.refs(prefix)}
                await store.set_refs({name: None for name in names if name in existing})
            except SnapshotError as error:
                log.info("checkpoint refs in %s were not dropped: %s", root, error)

    async def trusted(self, checkpoint: Checkpoint) -> Checkpoint:
        """The checkpoint as its refs have it: a saved chat's ids are only used when this
        plugin's refs still point at them (an `after` that does not match is left out, so
        more is asked, never less)."""
        store = await self.stores.for_folder(checkpoint.root)
        prefix = store.keep_refs + "checkpoints/"
        refs = dict(await store.refs(prefix))
        if refs.get(prefix + checkpoint.ref) != checkpoint.before:
            raise SnapshotError("that turn's checkpoint is gone from git (pruned, or not one this plugin made)")
        if checkpoint.after is not None and refs.get(prefix + checkpoint.ref + "-after") != checkpoint.after:
            checkpoint.after = None
        return checkpoint

    async def plan(self, chain: Sequence[Checkpoint], index: int, dirty: Collection[str]) -> RewindPlan | None:
        """What rewinding to `chain[index]` changes, and which of those files the user changed
        after it (or has unsaved in a buffer: `dirty`, absolute paths); None when no turn
        since could change a file. A turn whose end was not snapshotted cannot be told apart
        from the user: all it changed is asked about."""
        snapped = [c for c in chain[index:] if c.before is not None]
        if not snapped:
            return None
        target = await self.trusted(snapped[0])
        store = await self.stores.for_folder(target.root)
        now = await store.snapshot()
        assert target.before is not None
        changes = [c for c in await store.changes(now, target.before) if GITLINK not in (c.old_mode, c.new_mode)]
        gaps = []  # from each turn's end (its start, when its end was not seen) to the next one's start
        for turn, following in zip(snapped, [*snapped[1:], None], strict=True):
            upto = following.before if following is not None else now
            since = turn.after if turn.after is not None else turn.before
            assert since is not None and upto is not None
            gaps.append((since, upto))
        touched = await store.changed_paths(gaps)
        root = Path(target.root)
        dirty_set = set(dirty)
        conflicted = [c for c in changes if c.path in touched or str(root / c.path) in dirty_set]
        shown = await _texts(store, [c for c in conflicted if c.new != ABSENT])
        conflicts = [Conflict(c.path, str(root / c.path), shown.get(c.path)) for c in conflicted]
        return RewindPlan(store, target, changes, conflicts, now)

    async def apply(self, plan: RewindPlan, keep_mine: Collection[str]) -> list[Restored]:
        """The checkpoint's files back, but for `keep_mine` (relative paths) and whatever a
        kept path stands in the way of: `.gitignore` files first (what the checkpoint ignored
        was never in it, so it is not removed: a `.env` the turn unhid stays), then removals
        (a folder may have to make way for a file), then writes."""
        root, store = plan.store.root, plan.store
        kept = {c.path for c in plan.changes if _blocked(c.path, keep_mine)}
        todo = [c for c in plan.changes if c.path not in kept]
        ignores = [c for c in todo if c.new != ABSENT and PurePosixPath(c.path).name == ".gitignore"]
        done = await self._write(store, ignores)
        removals = [c for c in todo if c.new == ABSENT]
        unseen = await store.ignored([c.path for c in removals])  # under the checkpoint's rules now
        kept |= unseen
        for change in sorted(removals, key=lambda c: c.path.count("/"), reverse=True):
            if change.path not in unseen:
                await asyncio.to_thread(restore.remove_file, root, change.path)
                done.append(Restored(change.path, str(root / change.path), "removed"))
        done += await self._write(store, [c for c in todo if c.new != ABSENT and c not in ignores])
        done += [Restored(path, str(root / path), "kept") for path in sorted(kept)]
        return done

    async def _write(self, store: GitStore, writes: list[Change]) -> list[Restored]:
        data = await store.blobs([(c.new, c.path) for c in writes if c.new_mode != restore.SYMLINK])
        links = await store.blobs([(c.new, c.path) for c in writes if c.new_mode == restore.SYMLINK])
        done = []
        for change in writes:
            content = links.get(change.path) if change.new_mode == restore.SYMLINK else data.get(change.path)
            if content is None:
                raise SnapshotError(f"the checkpoint's copy of {change.path} is missing")
            await asyncio.to_thread(restore.write_file, store.root, change.path, content, change.new_mode)
            done.append(Restored(change.path, str(store.root / change.path), "restored"))
        return done

    async def settle(self, chain: list[Checkpoint], index: int, *, conversation: bool, kept: bool) -> None:
        """After a rewind to `chain[index]`: with the conversation, the turns from it on are
        gone, and their checkpoints with them; with the files alone and none of the user's
        kept, the rewind is the last turn's doing (a later rewind does not ask about it); with
        some kept, they stay the user's (and a later rewind asks about all it changed)."""
        if conversation:
            dropped = chain[index:]
            del chain[index:]
            await self.drop(dropped)
        elif chain and not kept:
            await self.after_turn(chain[-1])


def _blocked(path: str, keep_mine: Collection[str]) -> bool:
    """Whether putting `path` back would touch a kept path: the same one, a folder it is in,
    or a file where the kept one needs a folder."""
    return any(path == k or path.startswith(k + "/") or k.startswith(path + "/") for k in keep_mine)


async def _texts(store: GitStore, changes: Sequence[Change]) -> dict[str, str]:
    """The checkpoint's side of each conflict as text, for its diff (binary and large left out)."""
    texts = {}
    for path, data in (await store.blobs([(c.new, c.path) for c in changes])).items():
        if len(data) <= MAX_SHOWN_BYTES and b"\0" not in data:
            with contextlib.suppress(UnicodeDecodeError):
                texts[path] = data.decode("utf-8")
    return texts
