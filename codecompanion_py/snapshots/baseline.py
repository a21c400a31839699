"""The code review's baseline: a commit of the worktree at `refs/worktree/codecompanion/baseline`.

It is taken when an agent first starts work with none there (a chat's message, a CLI agent's
prompt) and advanced when a review is approved or shared, so each review shows one round.
"""

from __future__ import annotations

from .git import BASELINE_REF, GitStore


async def ensure_baseline(store: GitStore, tree: str | None = None) -> None:
    """A baseline of the worktree as it is (or as `tree`) unless there is one."""
    if await store.ref(BASELINE_REF) is None:
        await advance_baseline(store, tree)


async def advance_baseline(store: GitStore, tree: str | None = None) -> str:
    """The baseline moved to the worktree as it is now (or to `tree`); its commit id."""
    commit = await store.commit(tree or await store.snapshot(), "CodeCompanion review baseline")
    # its ref under refs/worktree/ is what CodeCompanion names; the shared one keeps it from a
    # `git gc` run in another worktree
    await store.set_refs({BASELINE_REF: commit, store.keep_refs + "baseline": commit})
    return commit
