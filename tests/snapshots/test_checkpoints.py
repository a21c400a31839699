"""Checkpoints and rewind on real git repositories and plain folders, without Neovim."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from codecompanion_py.errors import SnapshotError
from codecompanion_py.snapshots import checkpoints as checkpoints_module
from codecompanion_py.snapshots import restore
from codecompanion_py.snapshots.checkpoints import Checkpoint, Checkpoints
from codecompanion_py.snapshots.git import KEEP_REFS as CHECKPOINT_REFS
from codecompanion_py.snapshots.stores import Stores


def git(root: Path, *args: str, input_text: str | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    run = subprocess.run(
        ["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True, input=input_text
    )
    return run.stdout


def tree_bytes(root: Path) -> dict[str, bytes | str]:
    """Every file under root but .git: its bytes (a link: its target), and each one's mode."""
    found: dict[str, bytes | str] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            path = Path(folder, name)
            key = str(path.relative_to(root))
            found[key] = os.readlink(path) if path.is_symlink() else path.read_bytes()
            found[key + ":x"] = str(os.access(path, os.X_OK) and not path.is_symlink())
    return found


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.txt").write_text("one\ntwo\n")
    (root / "b.txt").write_text("bee\n")
    (root / "crlf.txt").write_bytes(b"x\r\ny\r\n")
    (root / ".gitattributes").write_text("crlf.txt text eol=crlf\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    # uncommitted work, staged and not
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    (root / "staged.txt").write_text("staged\n")
    git(root, "add", "staged.txt")
    (root / "untracked.txt").write_text("mine\n")
    return root


@pytest.fixture
def points(tmp_path: Path) -> Checkpoints:
    return Checkpoints(Stores(lambda: str(tmp_path / "data")))


def agent_turn(root: Path, n: int) -> None:
    """What an agent's turn might do: edit, create (in a new folder), delete, binary, modes, links."""
    (root / "a.txt").write_text(f"agent {n}\n")
    (root / "crlf.txt").write_bytes(b"x\r\nagent\r\n")
    (root / f"new{n}" / "deep").mkdir(parents=True, exist_ok=True)
    (root / f"new{n}" / "deep" / "file.txt").write_text("created\n")
    if (root / "b.txt").exists():
        (root / "b.txt").unlink()
    (root / "blob.bin").write_bytes(bytes(range(256)) * (n + 1))
    if (root / "run.sh").exists():
        (root / "run.sh").chmod(0o644)
    if not (root / "link").is_symlink():
        (root / "link").symlink_to("a.txt")


async def test_rewind_is_byte_exact_to_each_turn_and_leaves_git_alone(repo: Path, points: Checkpoints) -> None:
    index_before = (repo / ".git" / "index").read_bytes()
    cached_before = git(repo, "diff", "--cached")
    refs_before = git(repo, "for-each-ref")
    states, chain = [], []
    for n in range(3):
        states.append(tree_bytes(repo))
        checkpoint = await points.before_turn(str(repo), header=n + 1, keep=2 * n, text=f"turn {n}\nmore")
        chain.append(checkpoint)
        await points.keep_alive(checkpoint)
        agent_turn(repo, n)
        await points.after_turn(checkpoint)
    assert chain[1].text == "turn 1"
    ours = [line for line in git(repo, "for-each-ref").splitlines() if line not in refs_before.splitlines()]
    assert len(ours) == 6 and all(CHECKPOINT_REFS in line for line in ours)  # before and after, each turn
    for n in (2, 1, 0):
        plan = await points.plan(chain, n, dirty=())
        assert plan.conflicts == []
        await points.apply(plan, keep_mine=())
        await points.settle(chain, n, conversation=n != 1, kept=False)  # the files alone: the turns stay
        assert tree_bytes(repo) == states[n]
    assert not (repo / "new0").exists()  # the folders made with created files go too
    assert (repo / ".git" / "index").read_bytes() == index_before
    assert git(repo, "diff", "--cached") == cached_before
    assert git(repo, "stash", "list") == ""
    assert git(repo, "for-each-ref") == refs_before  # the turns rewound away took their refs along


async def test_what_the_user_changed_after_the_checkpoint_is_asked_about(repo: Path, points: Checkpoints) -> None:
    first = await points.before_turn(str(repo), header=1, keep=0, text="one")
    agent_turn(repo, 0)
    await points.after_turn(first)
    (repo / "a.txt").write_text("the user's edit\n")  # between the turns
    second = await points.before_turn(str(repo), header=2, keep=2, text="two")
    (repo / "new0" / "deep" / "file.txt").write_text("agent again\n")
    await points.after_turn(second)
    (repo / "blob.bin").write_bytes(b"user after the last turn")
    plan = await points.plan([first, second], 0, dirty=[str(repo / "crlf.txt")])
    assert sorted(c.relative for c in plan.conflicts) == ["a.txt", "blob.bin", "crlf.txt"]
    a = next(c for c in plan.conflicts if c.relative == "a.txt")
    assert a.checkpoint == "one\ntwo\nthree\n" and a.path == str(repo / "a.txt")
    assert next(c for c in plan.conflicts if c.relative == "blob.bin").checkpoint is None  # not there before
    done = await points.apply(plan, keep_mine={"a.txt", "blob.bin"})
    assert (repo / "a.txt").read_text() == "the user's edit\n"
    assert (repo / "blob.bin").read_bytes() == b"user after the last turn"
    assert (repo / "crlf.txt").read_bytes() == b"x\r\ny\r\n"  # taken from the checkpoint
    assert not (repo / "new0").exists()
    assert {r.relative: r.action for r in done}["a.txt"] == "kept"


async def test_a_folder_without_git_has_checkpoints_too(tmp_path: Path, points: Checkpoints) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    (root / "b.txt").write_text("bee\n")
    before = tree_bytes(root)
    checkpoint = await points.before_turn(str(root), header=1, keep=0, text="x")
    agent_turn(root, 0)
    await points.after_turn(checkpoint)
    await points.apply(await points.plan([checkpoint], 0, dirty=()), keep_mine=())
    assert tree_bytes(root) == before
    assert not (root / ".git").exists()


async def test_a_folder_turned_into_a_link_is_not_followed(tmp_path: Path, repo: Path, points: Checkpoints) -> None:
    (repo / "sub").mkdir()
    (repo / "sub" / "f.txt").write_text("inside\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    checkpoint = await points.before_turn(str(repo), header=1, keep=0, text="x")
    (repo / "sub" / "f.txt").unlink()
    (repo / "sub").rmdir()
    (repo / "sub").symlink_to(outside)
    await points.after_turn(checkpoint)
    await points.apply(await points.plan([checkpoint], 0, dirty=()), keep_mine=())
    assert not (repo / "sub").is_symlink() and (repo / "sub" / "f.txt").read_text() == "inside\n"
    assert list(outside.iterdir()) == []
    # and a path under a link that is not itself being restored is refused, never followed
    (repo / "other").symlink_to(outside)
    with pytest.raises(SnapshotError, match="is not a folder now"):
        restore.write_file(repo, "other/x.txt", b"x", "100644")
    with pytest.raises(SnapshotError, match="is not a folder now"):
        restore.remove_file(repo, "other/x.txt")
    assert list(outside.iterdir()) == []


async def test_refs_are_bounded_per_worktree(repo: Path, points: Checkpoints, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoints_module, "MAX_REFS", 3)
    made = []
    for n in range(4):
        checkpoint = await points.before_turn(str(repo), header=n, keep=0, text="x")
        await points.after_turn(checkpoint)  # two refs each
        made.append(checkpoint)
    names = git(repo, "for-each-ref", "--format=%(refname)", CHECKPOINT_REFS).split()
    assert len(names) == 3 and names[-1].endswith(made[-1].ref + "-after")
    await points.drop(made)
    assert git(repo, "for-each-ref", CHECKPOINT_REFS) == ""


async def test_a_huge_folder_without_git_is_refused_clearly(
    tmp_path: Path, points: Checkpoints, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codecompanion_py.snapshots import git as git_module

    monkeypatch.setattr(git_module, "MAX_SHADOW_FILES", 3)
    root = tmp_path / "home"
    root.mkdir()
    for n in range(5):
        (root / f"{n}.txt").write_text("x")
    with pytest.raises(SnapshotError, match="not a git repository and holds more than 3 files"):
        await points.before_turn(str(root), header=1, keep=0, text="x")


async def test_a_linked_worktree_has_its_own_checkpoints(repo: Path, points: Checkpoints, tmp_path: Path) -> None:
    git(repo, "commit", "-qam", "work")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked), "-b", "agent")
    (linked / "a.txt").write_text("in the linked tree\n")
    linked_files = tree_bytes(linked)
    here = await points.before_turn(str(repo), header=1, keep=0, text="x")
    there = await points.before_turn(str(linked), header=1, keep=0, text="x")
    await points.keep_alive(here)
    await points.keep_alive(there)
    assert here.root == str(repo) and there.root == str(linked)
    (linked / "a.txt").write_text("agent\n")
    (repo / "a.txt").write_text("user in main\n")
    await points.after_turn(there)
    await points.apply(await points.plan([there], 0, dirty=()), keep_mine=())
    assert tree_bytes(linked) == linked_files  # the linked tree rewound...
    assert (repo / "a.txt").read_text() == "user in main\n"  # ...and nothing of the main one touched
    # each worktree's refs under its own key, shared so that a `git gc` in either keeps both
    mine = (await points.stores.for_folder(str(repo))).keep_refs + "checkpoints/"
    theirs = (await points.stores.for_folder(str(linked))).keep_refs + "checkpoints/"
    assert mine != theirs
    assert git(linked, "for-each-ref", "--format=%(refname)", mine).split() == [mine + here.ref]
    assert git(repo, "for-each-ref", "--format=%(refname)", theirs).split() == [
        theirs + there.ref,
        theirs + there.ref + "-after",
    ]
    git(repo, "gc", "--prune=now", "--quiet")
    await points.apply(await points.plan([here], 0, dirty=()), keep_mine=())  # its trees are still there


def test_deleting_a_saved_chat_drops_its_checkpoints(repo: Path, points: Checkpoints, tmp_path: Path) -> None:
    import asyncio
    import json
    from types import SimpleNamespace

    from codecompanion_py.chat.keeper import ChatKeeper

    async def made():
        checkpoint = await points.before_turn(str(repo), header=1, keep=0, text="x")
        await points.after_turn(checkpoint)
        return checkpoint

    checkpoint = asyncio.run(made())
    folder = tmp_path / "history"
    folder.mkdir()
    saved = {"id": "c", "title": "t", "adapter": "a", "messages": []}
    saved["checkpoints"] = [{k: getattr(checkpoint, k) for k in checkpoint.__struct_fields__}]
    (folder / "c.json").write_text(json.dumps(saved))
    keeper = ChatKeeper(lambda: SimpleNamespace(editor={"history_dir": str(folder)}), lambda: None, print)  # type: ignore[arg-type,return-value]
    keeper.dropped = lambda chain: asyncio.run(points.drop(chain))
    assert git(repo, "for-each-ref", CHECKPOINT_REFS).count("\n") == 2
    keeper.delete(None, "c")
    assert git(repo, "for-each-ref", CHECKPOINT_REFS) == "" and not (folder / "c.json").exists()


async def test_a_split_index_or_a_damaged_index_of_ours_still_snapshots(repo: Path, points: Checkpoints) -> None:
    git(repo, "update-index", "--split-index")  # the user's index now names a shared part beside it
    assert list((repo / ".git").glob("sharedindex.*"))
    first = await points.before_turn(str(repo), header=1, keep=0, text="x")
    store = await points.stores.for_folder(str(repo))
    store.index.write_bytes(b"DIRC garbage")  # ours, damaged
    (repo / "a.txt").write_text("changed\n")
    second = await points.before_turn(str(repo), header=2, keep=0, text="x")
    assert [c.path for c in await store.changes(first.before, second.before)] == ["a.txt"]
    assert not list(store.index.parent.glob("sharedindex.*"))


async def test_the_home_folder_is_never_copied_into_a_shadow_repository(
    tmp_path: Path, points: Checkpoints, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "me"
    home.mkdir()
    (home / "notes.txt").write_text("x")
    monkeypatch.setenv("HOME", str(home))
    with pytest.raises(SnapshotError, match="not a project"):
        await points.before_turn(str(home), header=1, keep=0, text="x")
    assert not (tmp_path / "data" / "snapshots" / "shadow").exists()


async def test_a_repository_that_hides_untracked_files_has_only_its_tracked_ones(
    repo: Path, points: Checkpoints
) -> None:
    git(repo, "config", "status.showUntrackedFiles", "no")  # as a repository of dotfiles is set up
    before = await points.before_turn(str(repo), header=1, keep=0, text="x")
    store = await points.stores.for_folder(str(repo))
    assert git(repo, "ls-tree", "-r", "--name-only", before.before).split().count("untracked.txt") == 0
    (repo / "a.txt").write_text("edited\n")
    (repo / "b.txt").unlink()
    after = await points.before_turn(str(repo), header=2, keep=0, text="x")
    assert sorted(c.path for c in await store.changes(before.before, after.before)) == ["a.txt", "b.txt"]


async def turn(points: Checkpoints, root: Path, change, header: int = 1):
    """One turn: its checkpoint, what it does, the snapshot after it."""
    checkpoint = await points.before_turn(str(root), header=header, keep=0, text="x")
    await points.keep_alive(checkpoint)
    change()
    await points.after_turn(checkpoint)
    return checkpoint


async def test_what_the_checkpoint_ignored_is_never_removed(repo: Path, points: Checkpoints) -> None:
    (repo / ".gitignore").write_text(".env\ndata/\n")
    (repo / ".env").write_text("SECRET=1\n")
    (repo / "data").mkdir()
    (repo / "data" / "results.csv").write_text("weeks of work\n")
    checkpoint = await turn(points, repo, lambda: (repo / ".gitignore").write_text("__pycache__/\n"))
    plan = await points.plan([checkpoint], 0, dirty=())
    assert plan.conflicts == []
    done = {r.relative: r.action for r in await points.apply(plan, keep_mine=())}
    assert (repo / ".env").read_text() == "SECRET=1\n" and (repo / "data" / "results.csv").exists()
    assert (repo / ".gitignore").read_text() == ".env\ndata/\n"
    assert done[".env"] == "kept" and done[".gitignore"] == "restored"


async def test_a_turn_whose_end_was_not_seen_has_all_it_changed_asked_about(repo: Path, points: Checkpoints) -> None:
    checkpoint = await points.before_turn(str(repo), header=1, keep=0, text="x")
    await points.keep_alive(checkpoint)  # no snapshot after it (the engine stopped)
    (repo / "a.txt").write_text("someone's\n")
    (repo / "mine").mkdir()
    (repo / "mine" / "notes.md").write_text("mine\n")
    plan = await points.plan([checkpoint], 0, dirty=())
    assert sorted(c.relative for c in plan.conflicts) == ["a.txt", "mine/notes.md"]


async def test_a_kept_file_is_not_removed_for_the_folder_the_checkpoint_had(repo: Path, points: Checkpoints) -> None:
    (repo / "d").mkdir()
    (repo / "d" / "x.txt").write_text("x\n")

    def agent() -> None:
        (repo / "d" / "x.txt").unlink()
        (repo / "d").rmdir()

    checkpoint = await turn(points, repo, agent)
    (repo / "d").write_text("the user's file\n")
    plan = await points.plan([checkpoint], 0, dirty=())
    assert [c.relative for c in plan.conflicts] == ["d"]
    done = {r.relative: r.action for r in await points.apply(plan, keep_mine={"d"})}
    assert (repo / "d").read_text() == "the user's file\n"
    assert done == {"d": "kept", "d/x.txt": "kept"}


async def test_a_restored_file_keeps_its_permissions(repo: Path, points: Checkpoints) -> None:
    (repo / "secret.yml").write_text("key: 1\n")
    (repo / "secret.yml").chmod(0o600)
    checkpoint = await turn(points, repo, lambda: (repo / "secret.yml").write_text("key: 2\n"))
    await points.apply(await points.plan([checkpoint], 0, dirty=()), keep_mine=())
    assert (repo / "secret.yml").read_text() == "key: 1\n" and (repo / "secret.yml").stat().st_mode & 0o777 == 0o600


async def test_a_crafted_checkpoint_is_refused(repo: Path, points: Checkpoints) -> None:
    """A saved chat's checkpoint whose tree was never one of ours (here: one holding a git
    hook) is refused; a path into `.git` is never written whatever the tree."""
    real = await turn(points, repo, lambda: None)
    hook = git(repo, "hash-object", "-w", "--stdin", input_text="#!/bin/sh\necho pwned\n").strip()
    hooks = git(repo, "mktree", input_text=f"100755 blob {hook}\tpost-commit\n").strip()
    dot_git = git(repo, "mktree", input_text=f"040000 tree {hooks}\thooks\n").strip()
    crafted = git(repo, "mktree", input_text=f"040000 tree {dot_git}\t.git\n").strip()
    forged = Checkpoint(ref=real.ref, root=real.root, header=1, keep=0, before=crafted)
    with pytest.raises(SnapshotError, match="not one this plugin made"):
        await points.plan([forged], 0, dirty=())
    with pytest.raises(SnapshotError, match="may be restored"):
        restore.write_file(repo, ".git/hooks/post-commit", b"x", "100755")
    with pytest.raises(SnapshotError, match="may be restored"):
        restore.write_file(repo, "sub/.GIT/config", b"x", "100644")
    assert not (repo / ".git" / "hooks" / "post-commit").exists()


async def test_no_hook_of_the_repository_runs_for_our_snapshots(repo: Path, points: Checkpoints) -> None:
    ran = repo.parent / "hook-ran"
    for name in ("post-index-change", "reference-transaction"):
        hook = repo / ".git" / "hooks" / name
        hook.write_text(f"#!/bin/sh\necho {name} >> {ran}\n")
        hook.chmod(0o755)
    await turn(points, repo, lambda: (repo / "a.txt").write_text("y\n"))
    assert not ran.exists()


async def test_two_engines_snapshot_one_repository_at_once(repo: Path, tmp_path: Path) -> None:
    import asyncio

    data = str(tmp_path / "shared-data")
    first, second = Checkpoints(Stores(lambda: data)), Checkpoints(Stores(lambda: data))
    (repo / "sub").mkdir()
    runs = [
        points.before_turn(str(where), header=1, keep=0, text="x")
        for points in (first, second)
        for where in (repo, repo / "sub")
    ]
    results = await asyncio.gather(*(runs * 4))
    assert len({c.before for c in results}) == 1


async def test_files_git_is_told_to_look_away_from_are_snapshotted_and_nested_repositories_left(
    repo: Path, points: Checkpoints
) -> None:
    git(repo, "update-index", "--skip-worktree", "b.txt")
    git(repo, "update-index", "--assume-unchanged", "run.sh")

    def agent() -> None:
        (repo / "b.txt").write_text("agent\n")
        (repo / "run.sh").write_text("agent\n")
        (repo / "vendor" / "lib").mkdir(parents=True)
        git(repo / "vendor" / "lib", "init", "-q")
        (repo / "vendor" / "lib" / "f").write_text("f")
        git(repo / "vendor" / "lib", "add", "f")
        git(repo / "vendor" / "lib", "commit", "-qm", "c")

    checkpoint = await turn(points, repo, agent)
    done = {
        r.relative: r.action for r in await points.apply(await points.plan([checkpoint], 0, dirty=()), keep_mine=())
    }
    assert (repo / "b.txt").read_text() == "bee\n" and (repo / "run.sh").read_text() == "#!/bin/sh\n"
    assert (repo / "vendor" / "lib" / "f").exists() and "vendor/lib" not in done  # a repository of its own


async def test_a_turn_that_cannot_change_files_takes_no_snapshot(repo: Path, points: Checkpoints) -> None:
    plain = await points.before_turn(str(repo), header=1, keep=0, text="x", files=False)
    await points.keep_alive(plain)
    await points.after_turn(plain)
    assert plain.before is None and git(repo, "for-each-ref", CHECKPOINT_REFS) == ""
    assert await points.plan([plain], 0, dirty=()) is None  # nothing since could change a file
    state = tree_bytes(repo)
    edit = await turn(points, repo, lambda: (repo / "a.txt").write_text("agent\n"), header=2)
    plan = await points.plan([plain, edit], 0, dirty=())
    assert plan is not None
    await points.apply(plan, keep_mine=())  # before the first turn: as before the next that had tools
    assert tree_bytes(repo) == state
