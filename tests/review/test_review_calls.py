"""The review's engine calls against real git repositories: scope, accepting, ignoring,
rounds, and the user's index left as it was."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from codecompanion_py import calls
from codecompanion_py.review_calls import ReviewCalls, answering
from codecompanion_py.snapshots.git import BASELINE_REF, GitStore
from codecompanion_py.snapshots.stores import Stores

pytestmark = pytest.mark.skipif(subprocess.run(["git", "--version"]).returncode != 0, reason="needs git")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@t")
    git(root, "config", "user.name", "t")
    (root / "a.txt").write_text("".join(f"{n}\n" for n in range(1, 31)))
    (root / "b.txt").write_text("b\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "one")
    (root / "b.txt").write_text("b\nstaged\n")
    git(root, "add", "b.txt")
    return root


def run(work):
    return asyncio.run(work)


def test_a_review_round_from_start_to_consume(repo, tmp_path):
    review = ReviewCalls(Stores(lambda: str(tmp_path / "data")))
    where = {"cwd": str(repo), "dir": str(tmp_path / "storage")}
    index = (repo / ".git" / "index").read_bytes()

    async def flow():
        assert "no review baseline" in (await answering(review.open)(calls.ReviewCall(**where)))["error"]
        await review.approve(calls.ReviewCall(**where))
        text = (repo / "a.txt").read_text()
        (repo / "a.txt").write_text(text.replace("3\n", "three\n", 1).replace("20\n", "twenty\n"))
        (repo / "c.txt").write_text("new\n")
        await review.track(calls.ReviewAt(path=str(repo / "a.txt"), **where))
        await review.track(calls.ReviewAt(path="/elsewhere/x.txt", **where))  # not this worktree's
        got = await review.open(calls.ReviewCall(**where))
        assert [(i["user_data"]["path"], i["lnum"]) for i in got["items"]] == [("a.txt", 3), ("a.txt", 20)]
        everything = await review.open(calls.ReviewCall(scope="all", **where))
        assert [i["user_data"]["path"] for i in everything["items"]] == ["a.txt", "a.txt", "c.txt"]

        await review.accept(calls.ReviewAt(path=str(repo / "a.txt"), line=20, **where))
        got = await review.open(calls.ReviewCall(**where))
        assert [i["lnum"] for i in got["items"]] == [3]
        (repo / "a.txt").write_text("zero\n" + (repo / "a.txt").read_text())  # moves the accepted hunk
        got = await review.open(calls.ReviewCall(**where))
        assert [i["lnum"] for i in got["items"]] == [1, 4]  # still accepted: known by content

        await review.comment(calls.ReviewComment(path="a.txt", line=4, end_line=4, code="three", text="Why?", **where))
        pending = await review.pending(calls.ReviewCall(**where))
        assert pending["count"] == 1 and "Why?" in pending["llm"]
        before = git(repo, "rev-parse", BASELINE_REF)
        left = await review.consume(calls.ReviewText(ids=pending["ids"], **where))
        assert left["comments"] == [] and git(repo, "rev-parse", BASELINE_REF) != before
        assert (await review.open(calls.ReviewCall(scope="all", **where)))["items"] == []
        assert "count" not in await review.pending(calls.ReviewCall(**where))

        # what a context item may hold: whole comments, the rest left pending, never cut and lost
        for line in (1, 2, 3):
            comment = calls.ReviewComment(path="a.txt", line=line, end_line=line, code="x" * 500, text="t", **where)
            await review.comment(comment)
        some = await review.pending(calls.ReviewCall(limit=1_500, **where))
        assert some["count"] == 2 and len(some["llm"]) <= 1_500 and "stay pending" in some["warnings"][0]
        left = await review.consume(calls.ReviewText(ids=some["ids"], **where))
        assert len(left["comments"]) == 1

    run(flow())
    assert (repo / ".git" / "index").read_bytes() == index
    assert git(repo, "diff", "--cached", "--name-only") == "b.txt\n"


def test_the_baseline_s_text_for_the_diff_view(repo, tmp_path):
    review = ReviewCalls(Stores(lambda: str(tmp_path / "data")))
    where = {"cwd": str(repo), "dir": str(tmp_path / "storage")}

    async def flow():
        await review.baseline(calls.ReviewCall(**where))
        (repo / "a.txt").write_text("changed\n")
        (repo / "new.txt").write_text("new\n")
        old = await review.baseline_text(calls.ReviewAt(path="a.txt", **where))
        assert old["text"].startswith("1\n2\n") and not old["absent"]
        assert (await review.baseline_text(calls.ReviewAt(path="new.txt", **where)))["absent"]
        refused = await answering(review.baseline_text)(calls.ReviewAt(path="../outside.txt", **where))
        assert "outside" in refused["error"]

    run(flow())


def test_a_huge_review_lists_its_first_entries_and_says_so(repo, tmp_path, monkeypatch):
    from codecompanion_py import review_calls

    monkeypatch.setattr(review_calls, "MAX_ENTRIES", 1)
    review = ReviewCalls(Stores(lambda: str(tmp_path / "data")))
    where = {"cwd": str(repo), "dir": str(tmp_path / "storage")}

    async def flow():
        await review.approve(calls.ReviewCall(**where))
        (repo / "a.txt").write_text("one\n" + "".join(f"{n}\n" for n in range(2, 20)) + "twenty\n")
        got = await review.open(calls.ReviewCall(scope="all", **where))
        assert len(got["items"]) == 1 and "first 1 of 2 hunks" in got["warnings"][0]

    run(flow())


def test_a_list_asked_right_after_an_edit_was_tracked_waits_for_it(repo, tmp_path, monkeypatch):
    """`review.track` (a notification) and `:CodeCompanionCodeReview` (a request) each await
    git before they touch the state file; a slow git for the first must not let the list read
    the state before the edit is in it."""
    review = ReviewCalls(Stores(lambda: str(tmp_path / "data")))
    where = {"cwd": str(repo), "dir": str(tmp_path / "storage")}
    track, listing = review.one_at_a_time(review.track), review.one_at_a_time(review.open)
    slow = {"first": True}
    ref = GitStore.ref

    async def slow_first_ref(self, name):
        if slow.pop("first", False):
            await asyncio.sleep(0.3)  # the track's git, slow on a loaded machine
        return await ref(self, name)

    async def flow():
        await review.approve(calls.ReviewCall(**where))
        (repo / "a.txt").write_text("one\n" + (repo / "a.txt").read_text())
        monkeypatch.setattr(GitStore, "ref", slow_first_ref)
        # as the engine starts them: each call a task, in the order they came
        tracked = asyncio.ensure_future(track(calls.ReviewAt(path=str(repo / "a.txt"), **where)))
        got = await asyncio.ensure_future(listing(calls.ReviewCall(**where)))
        await tracked
        return [i["user_data"]["path"] for i in got["items"]]

    assert run(flow()) == ["a.txt"]
