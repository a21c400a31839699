"""The code review for the editor (lua/codecompanion_py/code_review.lua): the agent's hunks
since the baseline, accepting and ignoring them, comments, `Approve`, `Share`, and what
`#{code_review}` sends. Each answer is a table for Lua; a review that cannot be had is an
`error` line in it, never a raise (the editor shows it and carries on)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from . import calls
from .errors import SnapshotError
from .review import hunks as hunks_of
from .review import text
from .review.store import MAX_CODE_CHARS, MAX_COMMENT_CHARS, Comment, ReviewError, ReviewFiles, parse_comments
from .snapshots.baseline import advance_baseline, ensure_baseline
from .snapshots.git import BASELINE_REF, GitStore
from .snapshots.stores import Stores

Answer = dict[str, Any]
MAX_BASELINE_BYTES = 16 * 1024 * 1024
MAX_ENTRIES = 5_000  # a quickfix list past this helps no one (a vendored tree, a lockfile)
T = TypeVar("T")
_DIFF = ("diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--no-relative")
_PREFIXES = ("--src-prefix=a/", "--dst-prefix=b/")


class ReviewCalls:
    def __init__(self, stores: Stores) -> None:
        self._stores = stores
        self._turn = asyncio.Lock()

    def one_at_a_time(self, handler: Callable[[Any], Awaitable[T]]) -> Callable[[Any], Awaitable[T]]:
        """`handler` run after the review calls that came before it: each reads and writes the
        review's state file, and an edit's `review.track` must be in before the list that
        follows it (both await git, so the later one could otherwise read first)."""

        async def in_turn(call: Any) -> T:
            async with self._turn:
                return await handler(call)

        return in_turn

    # --- where a call's review lives ------------------------------------------------------

    async def _store(self, call: calls.ReviewCall) -> GitStore:
        return await self._stores.for_folder(call.cwd)

    async def _files(self, call: calls.ReviewCall, store: GitStore | None) -> ReviewFiles:
        """Comments work without a store (no git): then per folder, with no branch."""
        root = store.root if store else Path(os.path.realpath(call.cwd))
        branch = await store.branch() if store else "no-branch"
        folder = Path(call.dir) if call.dir else self._stores.folder().parent / "code_review"
        return ReviewFiles(folder.expanduser(), root, branch)

    async def _store_or_none(self, call: calls.ReviewCall) -> GitStore | None:
        try:
            return await self._store(call)
        except SnapshotError:
            return None

    @staticmethod
    def _relative(root: Path, path: str) -> str:
        full = os.path.realpath(path if os.path.isabs(path) else os.path.join(root, path))
        rel = os.path.relpath(full, os.path.realpath(root))
        if rel == os.pardir or rel.startswith(os.pardir + os.sep):
            raise ReviewError(f"{path} is outside {root}, the folder under review")
        return rel.replace(os.sep, "/")

    async def _hunks(self, store: GitStore, baseline: str, paths: list[str] | None) -> list[hunks_of.Hunk]:
        """The hunks from the baseline to the worktree now (`paths`: only those files)."""
        if paths is not None and not paths:
            return []
        old, new = await store.tree_of(baseline), await store.snapshot()
        spec = [":(literal)" + p for p in paths or []]
        return hunks_of.parse((await store.git(*_DIFF, *_PREFIXES, old, new, "--", *spec)).decode("utf-8", "replace"))

    # --- requests ---------------------------------------------------------------------------

    async def open(self, call: calls.ReviewCall) -> Answer:
        """`:CodeCompanionCodeReview [All]`: one entry per hunk, for the quickfix list."""
        try:
            store = await self._store(call)
        except SnapshotError as error:  # the editor lists the edited files instead
            return {"fallback": str(error), **await self._listed(call, None)}
        baseline = await store.ref(BASELINE_REF)
        if baseline is None:
            return {
                "error": "there is no review baseline yet: one is taken when an agent starts, "
                "or run :CodeCompanionCodeReview Start"
            }
        files = await self._files(call, store)
        state = files.state(baseline)
        everything = call.scope == "all"
        found = await self._hunks(store, baseline, None if everything else state.tracked)
        if not everything:
            found = [h for h in found if h.path not in state.ignored and h.key not in state.accepted]
        items = [
            {
                "filename": str(store.root / h.path),
                "lnum": h.first,
                "end_lnum": h.last,
                "text": h.summary(),
                "user_data": {"path": h.path, "key": h.key},
            }
            for h in found[:MAX_ENTRIES]
        ]
        if len(found) > MAX_ENTRIES:
            more = f"CodeCompanion: the review lists the first {MAX_ENTRIES:,} of {len(found):,} hunks"
            files.warnings.append(more)
        return {"items": items, "root": str(store.root), "baseline_ref": BASELINE_REF, **self._said(files)}

    async def accept(self, call: calls.ReviewAt) -> Answer:
        """`Accept` / `a`: the hunk at the line stays out of reviews until the baseline moves."""
        return await self._mark(call, accept=True)

    async def ignore(self, call: calls.ReviewAt) -> Answer:
        """`Ignore` / `x`: the file stays out of reviews until the baseline moves."""
        return await self._mark(call, accept=False)

    async def _mark(self, call: calls.ReviewAt, *, accept: bool) -> Answer:
        store = await self._store(call)
        baseline = await store.ref(BASELINE_REF)
        if baseline is None:
            return {"error": "there is no review baseline yet"}
        path = self._relative(store.root, call.path)
        files = await self._files(call, store)
        state = files.state(baseline)
        if not accept:
            state.ignored = sorted({*state.ignored, path})
            files.save_state(state)
            return {"message": f"{path} is ignored until the baseline advances", **self._said(files)}
        hunk = hunks_of.covering(await self._hunks(store, baseline, [path]), path, call.line)
        if hunk is None:
            return {"error": f"{path} has no change since the baseline"}
        state.accepted = sorted({*state.accepted, hunk.key})
        files.save_state(state)
        return {"message": f"accepted the hunk at {path}:{hunk.first}", **self._said(files)}

    async def approve(self, call: calls.ReviewCall) -> Answer:
        """`Approve` / `Start`: the baseline moves to now; comments stay pending (said)."""
        store = await self._store(call)
        files = await self._files(call, store)
        await self._advance(store, files)
        pending = files.comments()
        answer: Answer = {"message": "approved: the next review starts from here"}
        if pending:
            count = f"{len(pending)} comment{'s' if len(pending) != 1 else ''}"
            answer["warning"] = (
                f"{count} still pending: send with #{{code_review}}, or edit with :CodeCompanionCodeReview Comments"
            )
        return answer | self._listed_now(files)

    async def _advance(self, store: GitStore, files: ReviewFiles) -> None:
        commit = await advance_baseline(store)
        files.save_state(files.state(commit))  # accepted, ignored and tracked start afresh

    async def comment(self, call: calls.ReviewComment) -> Answer:
        """`Comment`: add, replace (a comment on that line) or delete (empty text)."""
        store = await self._store_or_none(call)
        files = await self._files(call, store)
        path = self._relative(files.root, call.path)
        start, end = sorted((max(1, call.line), max(1, call.end_line)))
        kept = [c for c in files.comments() if not (c.path == path and c.start_line <= start <= c.end_line)]
        words = call.text.strip()
        if words:
            new = Comment(
                path=path,
                start_line=start,
                end_line=end,
                code=call.code[:MAX_CODE_CHARS],
                filetype=call.filetype,
                comment=words[:MAX_COMMENT_CHARS],
            )
            kept.append(new)
            kept.sort(key=lambda c: (c.path, c.start_line))
        files.write_comments(kept)
        return self._listed_now(files)

    async def comments(self, call: calls.ReviewCall) -> Answer:
        """The pending comments (for virtual text), and the file `Comments` edits."""
        files = await self._files(call, await self._store_or_none(call))
        return {"text": files.raw(), **self._listed_now(files)}

    async def save_comments(self, call: calls.ReviewText) -> Answer:
        """The comments file as the user left it (`:bw` of `Comments`)."""
        files = await self._files(call, await self._store_or_none(call))
        found, stray = parse_comments(call.text)
        if stray:  # kept where they can find it: nothing they typed is dropped
            files.write_raw_aside(call.text)
        files.write_comments(found)
        return self._listed_now(files)

    async def share(self, call: calls.ReviewCall) -> Answer:
        """`Share`: the comments to review.md (same path every time), the baseline moves."""
        store = await self._store_or_none(call)
        files = await self._files(call, store)
        pending = files.comments()
        if not pending:
            return {"error": "no comments to share", **self._said(files)}
        files.write_review(text.review_md(pending, str(files.root)))
        files.write_comments([])
        if store is not None:
            await self._advance(store, files)
        return {"path": str(files.review_path), **self._listed_now(files)}

    async def pending(self, call: calls.ReviewCall) -> Answer:
        """What `#{code_review}` would send now (nothing when no comment is pending)."""
        files = await self._files(call, await self._store_or_none(call))
        found = files.comments()
        if not found:
            return self._said(files)
        # whole comments, as many as the item may hold: those left stay pending for the next one
        sent = found[:1]
        while len(sent) < len(found) and len(text.for_llm(found[: len(sent) + 1])) <= call.limit:
            sent.append(found[len(sent)])
        if len(sent) < len(found):
            left = len(found) - len(sent)
            files.warnings.append(
                f"CodeCompanion: {left} more review comments stay pending: send #{{code_review}} again"
            )
        return {
            "ids": [c.id for c in sent],
            "llm": text.for_llm(sent),
            "shown": text.for_chat(sent),
            "count": len(sent),
            **self._said(files),
        }

    async def consume(self, call: calls.ReviewText) -> Answer:
        """`#{code_review}` went with a message: those comments are sent, the baseline moves."""
        store = await self._store_or_none(call)
        files = await self._files(call, store)
        sent = set(call.ids)
        files.write_comments([c for c in files.comments() if c.id not in sent])
        if store is not None and sent:
            await self._advance(store, files)
        return self._listed_now(files)

    async def baseline_text(self, call: calls.ReviewAt) -> Answer:
        """The file as the baseline has it, for the diff view (`absent` when it was not there)."""
        store = await self._store(call)
        baseline = await store.ref(BASELINE_REF)
        if baseline is None:
            return {"error": "there is no review baseline yet"}
        path = self._relative(store.root, call.path)
        blob = (await store.git("rev-parse", "--verify", "--quiet", f"{baseline}:{path}", ok=(0, 1, 128))).strip()
        if not blob:
            return {"text": "", "absent": True}
        size = int((await store.git("cat-file", "-s", blob.decode())).strip() or 0)
        if size > MAX_BASELINE_BYTES:
            return {"error": f"{path} was above {MAX_BASELINE_BYTES:,} bytes at the baseline: use a diff plugin"}
        data = (await store.blobs([(blob.decode(), path)]))[path]
        return {"text": data.decode("utf-8", "replace"), "absent": False}

    # --- notifications ----------------------------------------------------------------------

    async def track(self, call: calls.ReviewAt) -> None:
        """An agent edited `path` through our tools: it is in the default review's scope."""
        store = await self._store_or_none(call)
        if store is None:
            return  # without a store, `:CodeCompanionChat Changes` lists the files
        baseline = await store.ref(BASELINE_REF)
        try:
            path = self._relative(store.root, call.path)
        except ReviewError:
            return  # not in this worktree: not its review
        files = await self._files(call, store)
        state = files.state(baseline)
        if path not in state.tracked:
            state.tracked.append(path)
            files.save_state(state)

    async def baseline(self, call: calls.ReviewCall) -> None:
        """A CLI agent was sent a prompt: a baseline unless there is one."""
        store = await self._store_or_none(call)
        if store is not None:
            await ensure_baseline(store)

    # --- answers ----------------------------------------------------------------------------

    async def _listed(self, call: calls.ReviewCall, store: GitStore | None) -> Answer:
        return self._listed_now(await self._files(call, store))

    @staticmethod
    def _listed_now(files: ReviewFiles) -> Answer:
        found = files.comments()
        listed = [
            {"file": str(files.root / c.path), "start_line": c.start_line, "end_line": c.end_line, "comment": c.comment}
            for c in found
        ]
        return {"comments": listed, "comments_file": str(files.comments_path), **ReviewCalls._said(files)}

    @staticmethod
    def _said(files: ReviewFiles) -> Answer:
        return {"warnings": list(files.warnings)} if files.warnings else {}


def answering(handler: Callable[[Any], Awaitable[Answer]]) -> Callable[[Any], Awaitable[Answer]]:
    """A request whose expected failures (no git, a file that cannot be written) are an
    `error` line in the answer."""

    async def answer(call: Any) -> Answer:
        try:
            return await handler(call)
        except (SnapshotError, ReviewError) as error:
            return {"error": str(error)}

    return answer
