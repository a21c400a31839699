"""Taking a chat's checkpoints, and rewinding it to one (`gz`, `/rewind`, `rewind()`).

Before each message is sent the worktree is snapshotted (`snapshots/checkpoints.py`) and
the review's baseline made when there is none; when the turn ends, snapshotted again.
A rewind asks the user about each file they changed since (keep theirs, or take the
checkpoint's), puts the rest back, cuts the conversation when asked to, and tells the
chat what it did.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any, Literal

from ..errors import ConfigError, SnapshotError
from ..snapshots import checkpoints as bounds
from ..snapshots.baseline import ensure_baseline
from ..snapshots.checkpoints import Checkpoint, Checkpoints, RewindPlan
from ..ui import ops
from .protocol import Session

log = logging.getLogger("codecompanion_py.chat")

CLOSE_WAIT = 1.0


class Rewinder:
    def __init__(self, checkpoints: Checkpoints, notify: Callable[[str, str], None]) -> None:
        self.checkpoints = checkpoints
        self._notify = notify
        self._told: set[str] = set()  # folders whose snapshot failed, said once each
        self._pending: set[asyncio.Task[None]] = set()  # snapshots after turns

    def before_turn(
        self, session: Session, chain: list[Checkpoint], *, header: int, text: str
    ) -> Callable[[bool], asyncio.Task[Checkpoint | None]]:
        """The checkpoint of the worktree the turn starts from (and the review's baseline),
        taken while the request goes out: the session waits for it before anything may change
        a file. Called before the turn starts (the messages it keeps are counted then); what
        it returns takes it once the turn has started (`files`: whether it may change one:
        else only its place is kept). A folder that cannot have one is said once, and the
        chat goes on without."""
        keep = sum(m.role != "system" for m in session.history)  # now, before the turn adds its message

        def taken(files: bool) -> asyncio.Task[Checkpoint | None]:
            """Once the turn's message is in: whether it can change files is known then."""
            task = asyncio.get_running_loop().create_task(
                self._checkpoint(str(session.workspace.root), chain, header=header, keep=keep, text=text, files=files)
            )
            session.before_changes = task
            return task

        return taken

    async def _checkpoint(
        self, root: str, chain: list[Checkpoint], *, header: int, keep: int, text: str, files: bool
    ) -> Checkpoint | None:
        try:
            checkpoint = await self.checkpoints.before_turn(root, header=header, keep=keep, text=text, files=files)
            if checkpoint.before is not None:
                store = await self.checkpoints.stores.for_folder(root)
                await self.checkpoints.keep_alive(checkpoint)
                await ensure_baseline(store, checkpoint.before)
        except SnapshotError as error:
            if root not in self._told:
                self._told.add(root)
                self._notify(f"CodeCompanion: no checkpoints in this folder: {error}", "WARN")
            return None
        except Exception:  # never in the turn's way
            log.exception("the checkpoint before a turn failed")
            return None
        # a header seen before (after /clear) replaces the turns from it on; the oldest past the bound go
        dropped = [c for c in chain if c.header >= header]
        chain[:] = [c for c in chain if c.header < header] + [checkpoint]
        dropped += chain[: max(len(chain) - bounds.MAX_PER_CHAT, 0)]
        del chain[: max(len(chain) - bounds.MAX_PER_CHAT, 0)]
        if dropped:
            await self.checkpoints.drop(dropped)
        return checkpoint

    def after_turn(
        self, before: asyncio.Future[Checkpoint | None] | None, on_saved: Callable[[], object]
    ) -> asyncio.Task[None]:
        """The worktree as the turn left it, kept with the turn's own checkpoint (a turn
        without one has none: another turn's would take its changes for the turn's), then
        `on_saved` (the chat is saved with it)."""

        async def snap() -> None:
            checkpoint = await before if before is not None else None
            if checkpoint is None:
                return
            try:
                await self.checkpoints.after_turn(checkpoint)
            except SnapshotError as error:  # without it, a rewind asks about all the turn changed
                log.info("the snapshot after a turn failed: %s", error)
            on_saved()

        task = asyncio.get_running_loop().create_task(snap())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        return task

    async def close(self) -> None:
        """The engine stops: the snapshots after turns finish (a second at most)."""
        if self._pending:
            _done, late = await asyncio.wait(list(self._pending), timeout=CLOSE_WAIT)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)

    async def rewind(
        self,
        session: Session,
        chain: list[Checkpoint],
        *,
        header: int,
        restore: Literal["all", "files", "conversation"],
        dirty: list[str],
    ) -> bool:
        """Back to before the turn sent under the `header`th `## Me` (its files, its
        conversation or both: `restore`); False when the user cancelled."""
        if session.busy:
            raise ConfigError("wait for the reply to finish (or press q) to rewind the chat")
        if self._pending:  # the snapshots after the last turns: what a rewind tells the user's changes by
            await asyncio.wait(list(self._pending))
        index = next((i for i, c in enumerate(chain) if c.header == header), None)
        if index is None:
            raise ConfigError(_no_checkpoint(chain, header))
        target = chain[index]
        if target.keep < 0 and restore != "files":
            raise ConfigError("the conversation was compacted since that turn: rewind its files only")
        files = restore in ("all", "files")
        conversation = restore in ("all", "conversation")
        restored: list[ops.RestoredFile] = []
        plan = await self._plan(session, chain, index, dirty) if files else None
        if plan is not None:
            keep_mine: set[str] = set()
            if plan.conflicts:
                asked = [{"path": c.path, "relative": c.relative, "checkpoint": c.checkpoint} for c in plan.conflicts]
                reply = await session.editor.call("rewind.conflicts", {"files": asked})
                if not isinstance(reply, Mapping) or reply.get("cancel"):
                    return False
                choices: Any = reply.get("choices")
                taken = choices if isinstance(choices, Mapping) else {}
                keep_mine = {c.relative for c in plan.conflicts if taken.get(c.relative) != "checkpoint"}
                if await plan.store.snapshot() != plan.now:  # changed while the user answered
                    raise ConfigError("files changed while you answered; nothing was rewound: rewind again")
            done = await self.checkpoints.apply(plan, keep_mine)
            restored = [ops.RestoredFile(path=r.path, relative=r.relative, action=r.action) for r in done]
        if conversation:
            session.rewind(target.keep)
        session.view.push(ops.Rewound(header=header, conversation=conversation, files=tuple(restored)))
        kept = any(r.action == "kept" for r in restored)
        await self.checkpoints.settle(chain, index, conversation=conversation, kept=kept)  # after the user sees it
        return True

    async def _plan(self, session: Session, chain: list[Checkpoint], index: int, dirty: list[str]) -> RewindPlan | None:
        store = await self.checkpoints.stores.for_folder(str(session.workspace.root))
        if chain[index].root != str(store.root):
            raise ConfigError(f"that checkpoint is of {chain[index].root}, not of this chat's folder: open it there")
        return await self.checkpoints.plan(chain, index, dirty)

    def listing(self, chain: list[Checkpoint]) -> list[dict[str, Any]]:
        """`/rewind`'s list: each turn that can be gone back to, newest first."""
        return [{"header": c.header, "text": c.text, "at": c.at} for c in reversed(chain)]

    async def drop(self, chain: list[Checkpoint]) -> None:
        dropped = list(chain)
        chain.clear()
        await self.checkpoints.drop(dropped)


def _no_checkpoint(chain: list[Checkpoint], header: int) -> str:
    if not chain:
        return "this chat has no checkpoints yet: one is taken before each message is sent"
    if header > chain[-1].header:
        return "that message has not been sent: there is nothing to rewind"
    return (
        "that message has no checkpoint (a message added during a turn with gm, one sent before "
        f"checkpoints were taken, or older than the last {bounds.MAX_PER_CHAT} turns)"
    )
