"""Putting files back as a snapshot had them, confined to the worktree.

Every step walks from the root with `O_DIRECTORY | O_NOFOLLOW` and acts relative to the
parent's descriptor: a folder that became a symbolic link since the snapshot is refused, so
a rewind never writes outside the worktree. Each write is atomic (a temporary file beside the
target, renamed over it), not fsynced: the snapshot stays in git, so a rewind a crash cut
short can be made again, and 50 files do not wait on 100 syncs. A removed file's folders go
with it when they are left empty.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path, PurePosixPath

from ..errors import SnapshotError
from ..tools.workspace import open_parent

SYMLINK = "120000"
GITLINK = "160000"
EXECUTABLE = "100755"


def write_file(root: Path, relative: str, data: bytes, mode: str) -> None:
    """`relative` holds `data` again (a link to `data` for a symbolic link's mode)."""
    parts = _parts(relative)
    fd = _open_parent(root, parts, relative, create=True)
    name = parts[-1]
    try:
        _clear_way(fd, name)
        if mode == SYMLINK:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=fd)
            os.symlink(os.fsdecode(data), name, dir_fd=fd)
            return
        temp = f".{name}.rewind-{secrets.token_hex(4)}"
        out = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=fd)
        try:
            with os.fdopen(out, "wb") as handle:
                handle.write(data)
                os.fchmod(handle.fileno(), _permissions(fd, name, mode))
            os.replace(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=fd)
            raise
    except OSError as error:
        raise SnapshotError(f"{relative} could not be restored: {error.strerror or error}") from None
    finally:
        os.close(fd)


def remove_file(root: Path, relative: str) -> None:
    """`relative` goes, and each folder above it that is left empty (up to the root)."""
    parts = _parts(relative)
    try:
        fd = _open_parent(root, parts, relative, create=False)
    except FileNotFoundError:
        return
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(parts[-1], dir_fd=fd)
    except OSError as error:
        raise SnapshotError(f"{relative} could not be removed: {error.strerror or error}") from None
    finally:
        os.close(fd)
    for depth in range(len(parts) - 1, 0, -1):  # parts[:depth] is a folder it was in
        try:
            parent = _open_parent(root, parts[:depth], relative, create=False)
        except (OSError, SnapshotError):
            return
        try:
            os.rmdir(parts[depth - 1], dir_fd=parent)
        except OSError:  # not empty: the folders above are not either
            return
        finally:
            os.close(parent)


def _parts(relative: str) -> list[str]:
    """`relative` split, refused when it could leave the worktree or reach into a `.git`
    (a tree from a crafted saved chat could hold `.git/hooks/...`)."""
    parts = list(PurePosixPath(relative).parts)
    if (
        not parts
        or relative.startswith("/")
        or any(part in ("", ".", "..") or part.casefold() == ".git" for part in parts)
    ):
        raise SnapshotError(f"{relative!r} is not a path inside the project that may be restored")
    return parts


def _open_parent(root: Path, parts: list[str], relative: str, *, create: bool) -> int:
    """A descriptor of the folder that holds `parts[-1]` (FileNotFoundError when it is gone
    and `create` is not asked); a link or anything else in the way is refused."""
    try:
        return open_parent(root, parts, create=create, replace_files=create)
    except FileNotFoundError:
        if create:
            raise SnapshotError(f"{relative} is not restored: its folder cannot be made") from None
        raise
    except OSError as error:
        raise SnapshotError(
            f"{relative} is not restored: a folder on its path is not a folder now (a symbolic link is not followed)"
        ) from error


def _permissions(fd: int, name: str, mode: str) -> int:
    """The file's own permissions when it is there (a 0600 secret stays 0600), with the
    executable bits as the snapshot has them; else git's 0755 or 0644 within the umask."""
    try:
        info = os.lstat(name, dir_fd=fd)
    except FileNotFoundError:
        info = None
    if info is None or not stat.S_ISREG(info.st_mode):
        umask = os.umask(0)
        os.umask(umask)
        return (0o755 if mode == EXECUTABLE else 0o644) & ~umask
    bits = stat.S_IMODE(info.st_mode) & ~0o111
    return bits | ((bits & 0o444) >> 2) if mode == EXECUTABLE else bits


def _clear_way(fd: int, name: str) -> None:
    """An empty folder where the file goes (its files were removed first) is taken away."""
    try:
        info = os.lstat(name, dir_fd=fd)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        os.rmdir(name, dir_fd=fd)
