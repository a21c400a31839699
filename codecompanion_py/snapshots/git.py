"""One project's snapshots as git trees, written through an index of our own.

A snapshot is `git add -A` into an index file that is ours (kept under the data folder,
one per worktree, locked across engines) and `git write-tree`: the user's index, staged
changes, stash and refs are never touched, and no hook or fsmonitor of the repository runs.
The first snapshot starts from a copy of the user's index (without its skip-worktree and
assume-unchanged bits), so git knows the files' stat data and hashes only what changed: a
snapshot of 20,000 files with 50 changed takes about 90 ms, most of it `add` stating them.

In a git repository the trees go into its own object store. The review's baseline is at
`refs/worktree/codecompanion/baseline` (CodeCompanion's name, per worktree); what keeps
checkpoints and baselines from a `git gc` run in any worktree is under `KEEP_REFS`, a
folder per worktree. A repository that hides untracked files (`status.showUntrackedFiles=no`,
as one of dotfiles does) has its tracked files snapshotted only, and one at the home folder
none. A folder that is not a repository gets a bare shadow repository under the data folder
(at most `MAX_SHADOW_FILES` files; the home and root folders are refused, not copied). What
is ignored (`.gitignore`) is not in a snapshot.

Blobs come back as a checkout writes them (`cat-file --filters` for the paths whose
attributes convert them: line endings, LFS).
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import SnapshotError
from ..processes.commands import safe_env
from ..processes.run import run_process_raw

REFS = "refs/worktree/codecompanion/"
BASELINE_REF = REFS + "baseline"
# Shared by the worktrees, unlike refs/worktree/ (which a `git gc` in another worktree does not
# count as reachable): what keeps each worktree's checkpoints and baseline alive, by its key.
KEEP_REFS = "refs/codecompanion/"
MAX_SHADOW_FILES = 20_000
GIT_TIMEOUT = 60.0
MAX_GIT_OUTPUT = 256 * 1024 * 1024
ABSENT = "0" * 40
_IDENTITY = {
    "GIT_AUTHOR_NAME": "CodeCompanion",
    "GIT_AUTHOR_EMAIL": "codecompanion@localhost",
    "GIT_COMMITTER_NAME": "CodeCompanion",
    "GIT_COMMITTER_EMAIL": "codecompanion@localhost",
}
# what would change the bytes stored, or ask the user something, whatever their config says
_ECHOED = re.compile(rb"^(?:[0-9a-f]{40,64} [0-9a-f]{40,64}\n)*")
_CONVERTING = ("text", "eol", "crlf", "filter", "ident", "working-tree-encoding")
_CONFIG = (
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.untrackedCache=true",
    "core.splitIndex=false",  # a split index's shared part would be written beside the user's
    "core.hooksPath=/dev/null",  # no hook of the repository runs for our index or our refs
    "core.fsmonitor=false",  # nor a command its config names
    "advice.addEmbeddedRepo=false",
)
LOCK_WAIT = 30.0  # seconds another engine may hold our index (two Neovims in one repository)


@dataclass(frozen=True)
class Change:
    """One file that differs between two snapshots (`git diff-tree --raw`)."""

    path: str  # relative to the root, with `/`
    old_mode: str  # "000000" when absent
    new_mode: str
    old: str  # blob ids; ABSENT when the file is not there
    new: str


class GitStore:
    """Snapshots of one worktree (or one folder without git)."""

    def __init__(self, root: Path, git_dir: Path, index: Path, *, shadow: bool) -> None:
        self.root = root
        self.git_dir = git_dir
        self.index = index
        self.shadow = shadow
        self.lock = asyncio.Lock()  # one `add` at a time on our index
        self._queued: asyncio.Future[str] | None = None  # the next snapshot, shared by who waits for it
        self.untracked = True  # files git does not track (and does not ignore) are in a snapshot

    async def git(self, *args: str, stdin: bytes | None = None, ok: Iterable[int] = (0,)) -> bytes:
        argv = ["git", f"--git-dir={self.git_dir}", f"--work-tree={self.root}"]
        for item in _CONFIG:
            argv += ["-c", item]
        env = safe_env() | _IDENTITY | {"GIT_INDEX_FILE": str(self.index)}
        result = await run_process_raw(
            [*argv, *args],
            cwd=self.root,
            env=env,
            stdin=stdin,
            timeout=GIT_TIMEOUT,
            max_output=MAX_GIT_OUTPUT,
            merge_stderr=False,
            keep_tail=False,
        )
        if result.exit_code not in tuple(ok) or result.timed_out or result.truncated:
            said = result.stderr.decode("utf-8", "replace").strip().splitlines()
            why = said[-1] if said else "timed out" if result.timed_out else f"exit {result.exit_code}"
            raise SnapshotError(f"git {args[0]} failed in {self.root}: {why}")
        return result.output

    async def snapshot(self) -> str:
        """The worktree as it is now (or later): a tree id. Those who ask while one is being
        taken share the next one, so thirty chats starting at once take two, not thirty."""
        if self._queued is None:
            self._queued = asyncio.ensure_future(self._take())
        return await asyncio.shield(self._queued)

    @property
    def keep_refs(self) -> str:
        """This worktree's part of KEEP_REFS."""
        return f"{KEEP_REFS}{_key(self.root)[:16]}/"

    async def _take(self) -> str:
        async with self.lock, _IndexLock(self.index):
            self._queued = None  # who asks from now on may have changed files since: a new one
            if not self.index.exists():
                await self._seed_index()
            which = "-A" if self.untracked else "-u"
            try:
                await self.git("add", which, "--", ".")
            except SnapshotError:  # our index is damaged (or a copy git cannot read): begin again
                self.index.unlink(missing_ok=True)
                await self._seed_index()
                await self.git("add", which, "--", ".")
            return (await self.git("write-tree")).decode().strip()

    async def _seed_index(self) -> None:
        """Our index begins as a copy of the user's (its stat data: only what changed is hashed
        later), without the bits that tell git to look away from a file (skip-worktree,
        assume-unchanged): what hides a local change from `git status` must not hide it here."""
        self.index.parent.mkdir(parents=True, exist_ok=True)
        theirs = self.git_dir / "index"
        split = any(self.git_dir.glob("sharedindex.*"))  # their index names a file beside it
        if self.shadow or not theirs.is_file() or split:
            return
        await asyncio.to_thread(shutil.copyfile, theirs, self.index)
        listed = (await self.git("ls-files", "-v", "-z")).split(b"\0")
        skipped = [entry[2:] for entry in listed if entry[:2] == b"S "]
        unwatched = [entry[2:] for entry in listed if entry[:1].islower()]
        for flag, paths in (("--no-skip-worktree", skipped), ("--no-assume-unchanged", unwatched)):
            if paths:  # one flag a call: git takes only the last of them with --stdin
                await self.git("update-index", flag, "-z", "--stdin", stdin=b"\0".join(paths) + b"\0")

    async def commit(self, tree: str, message: str) -> str:
        return (await self.git("commit-tree", tree, "-m", message)).decode().strip()

    async def set_refs(self, refs: Mapping[str, str | None]) -> None:
        """Point each ref at an object, or delete it (None), in one transaction."""
        lines = [f"update {name} {sha}" if sha else f"delete {name}" for name, sha in refs.items()]
        if lines:
            await self.git("update-ref", "--stdin", stdin=("\n".join(lines) + "\n").encode())

    async def ref(self, name: str) -> str | None:
        out = await self.git("rev-parse", "--verify", "--quiet", name + "^{object}", ok=(0, 1))
        return out.decode().strip() or None

    async def refs(self, prefix: str) -> list[tuple[str, str]]:
        out = await self.git("for-each-ref", "--format=%(refname) %(objectname)", prefix)
        return [tuple(line.split(" ", 1)) for line in out.decode().splitlines() if " " in line]  # type: ignore[misc]

    async def ignored(self, paths: Sequence[str]) -> set[str]:
        """Those of `paths` that the worktree's ignore rules, as they are now, leave out."""
        if not paths:
            return set()
        names = b"".join(os.fsencode(path) + b"\0" for path in paths)
        out = await self.git("check-ignore", "--no-index", "-z", "--stdin", stdin=names, ok=(0, 1))
        return {os.fsdecode(name) for name in out.split(b"\0") if name}

    async def tree_of(self, rev: str) -> str:
        return (await self.git("rev-parse", "--verify", rev + "^{tree}")).decode().strip()

    async def changes(self, old: str, new: str, paths: Sequence[str] = ()) -> list[Change]:
        """The files that differ from tree `old` to tree `new` (no rename detection)."""
        out = await self.git("diff-tree", "-r", "-z", "--raw", "--no-renames", old, new, "--", *paths)
        fields = out.split(b"\0")
        found: list[Change] = []
        for meta, name in zip(fields[0::2], fields[1::2], strict=False):
            parts = meta.decode().lstrip(":").split(" ")
            if len(parts) >= 4:
                found.append(Change(os.fsdecode(name), parts[0], parts[1], parts[2], parts[3]))
        return found

    async def changed_paths(self, pairs: Sequence[tuple[str, str]]) -> set[str]:
        """The paths that differ within any of the (old, new) tree pairs, in one `diff-tree`."""
        if not pairs:
            return set()
        asked = "".join(f"{old} {new}\n" for old, new in pairs).encode()
        out = await self.git("diff-tree", "--stdin", "-r", "-z", "--name-only", "--no-renames", stdin=asked)
        # each pair is echoed ("<old> <new>\n") before its names, which end in NUL
        return {os.fsdecode(name) for field in out.split(b"\0") if (name := _ECHOED.sub(b"", field))}

    async def blobs(self, wanted: Sequence[tuple[str, str]]) -> dict[str, bytes]:
        """Each (blob id, path)'s bytes as a checkout would write them at that path: as
        stored, but for paths whose attributes convert them (line endings, LFS), which go
        through `cat-file --filters` one by one (its batch mode misreports their sizes)."""
        if not wanted:
            return {}
        request = "".join(f"{sha}\n" for sha, _path in wanted).encode()
        out = await self.git("cat-file", "--batch", stdin=request)
        found: dict[str, bytes] = {}
        at = 0
        for _sha, path in wanted:
            end = out.index(b"\n", at)
            header = out[at:end].split(b" ")
            if len(header) < 3:
                raise SnapshotError(f"git has no copy of {path} in the snapshot")
            size = int(header[2])
            found[path] = out[end + 1 : end + 1 + size]
            at = end + 2 + size
        converted = await self._converted([path for _sha, path in wanted])
        for sha, path in wanted:
            if path in converted:
                found[path] = await self.git("cat-file", "--filters", f"--path={path}", sha)
        return found

    async def _converted(self, paths: Sequence[str]) -> set[str]:
        """The paths whose attributes change their bytes between the store and the worktree."""
        names = b"\0".join(os.fsencode(path) for path in paths)
        out = await self.git("check-attr", "-z", "--stdin", *_CONVERTING, stdin=names)
        fields = out.split(b"\0")
        return {
            os.fsdecode(path)
            for path, _attr, value in zip(fields[0::3], fields[1::3], fields[2::3], strict=False)
            if value not in (b"unspecified", b"unset")
        }

    async def diff(self, old: str, new: str, paths: Sequence[str] = (), *, context: int = 0) -> str:
        """A unified diff between two trees (what the review shows hunk by hunk)."""
        flags = (f"-U{context}", "--no-color", "--no-ext-diff", "--no-renames")
        out = await self.git("diff", *flags, old, new, "--", *paths)
        return out.decode("utf-8", "replace")

    async def branch(self) -> str:
        out = await self.git("symbolic-ref", "--quiet", "--short", "HEAD", ok=(0, 1, 128))
        return out.decode().strip() or "HEAD"


async def open_store(cwd: str | os.PathLike[str], data_dir: str | os.PathLike[str]) -> GitStore:
    """The store for the worktree holding `cwd`, or a shadow one for a folder without git."""
    if shutil.which("git") is None:
        raise SnapshotError("checkpoints and code review need git, which is not on PATH")
    folder = Path(cwd).resolve()
    data = Path(data_dir)
    result = await run_process_raw(
        ["git", "rev-parse", "--show-toplevel", "--absolute-git-dir"],
        cwd=folder,
        timeout=GIT_TIMEOUT,
        merge_stderr=False,
    )
    lines = result.output.decode().splitlines() if result.ok else []
    if len(lines) == 2:
        root, git_dir = Path(lines[0]), Path(lines[1])
        _refuse_home(root)
        store = GitStore(root, git_dir, data / "indexes" / (_key(git_dir) + ".index"), shadow=False)
        shown = await store.git("config", "--get", "status.showUntrackedFiles", ok=(0, 1))
        store.untracked = shown.strip() != b"no"  # a repository that hides them: its tracked files only
        return store
    _refuse_home(folder)
    count = await asyncio.to_thread(_count_files, folder, MAX_SHADOW_FILES)
    if count > MAX_SHADOW_FILES:
        raise SnapshotError(
            f"{folder} is not a git repository and holds more than {MAX_SHADOW_FILES:,} files: "
            "it is not snapshotted (run `git init` there to have checkpoints)"
        )
    shadow = data / "shadow" / (_key(folder) + ".git")
    if not (shadow / "HEAD").exists():
        shadow.parent.mkdir(parents=True, exist_ok=True)
        made = await run_process_raw(["git", "init", "--bare", "-q", str(shadow)], cwd=folder, merge_stderr=False)
        if not made.ok:
            raise SnapshotError(f"could not make a snapshot store in {shadow}: {made.stderr.decode(errors='replace')}")
    return GitStore(folder, shadow, data / "indexes" / (_key(shadow) + ".index"), shadow=True)


class _IndexLock:
    """Our index to one engine at a time: two Neovims in one repository share it."""

    def __init__(self, index: Path) -> None:
        self.path = index.with_name(index.name + ".engine-lock")
        self.fd = -1

    async def __aenter__(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        waited = 0.0
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if waited >= LOCK_WAIT:
                    os.close(self.fd)
                    raise SnapshotError("another Neovim has been taking a snapshot of this worktree too long") from None
                await asyncio.sleep(0.02)
                waited += 0.02

    async def __aexit__(self, *_exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def _refuse_home(folder: Path) -> None:
    if folder in (Path.home().resolve(), Path(folder.anchor)):
        raise SnapshotError(f"{folder} is not a project (your home or the root folder): it is not snapshotted")


def _key(path: Path) -> str:
    return hashlib.sha256(os.fsencode(path)).hexdigest()[:20]


def _count_files(root: Path, cap: int) -> int:
    """Files under `root` (not following links), counting stops past `cap`."""
    count, pending = 0, [root]
    while pending and count <= cap:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name != ".git":
                            pending.append(Path(entry.path))
                    else:
                        count += 1
        except OSError:
            continue
    return count
