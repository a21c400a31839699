"""The project root, and the one place the file tools resolve paths and touch files.

* Paths are refused, never repaired (no `~`/`$VAR` expansion, no backslashes, no invisible
  characters); each `PathRefused` tells the LLM what was wrong and what to send, never contents.
* `resolve()` follows symlinks itself, one component at a time with `lstat`, so it knows which
  links it crossed. The real path must be inside the root, compared by components (`/r-evil`
  is not inside `/r`). Dangling symlinks are always refused: nothing is created through a link.
  A final symlink that stays inside is followed, and kept in `Target.link` for `delete()`.
* Protected paths (.git, .env*, keys, credentials, hard-linked files, and files that run code
  by themselves: .envrc, .nvim.lua/.exrc, .lazy.lua, .vscode/, .idea/, .husky/) are
  accepted but flagged: the user is always asked, even in YOLO mode.
* I/O re-walks `Target.real` from the root with `O_DIRECTORY|O_NOFOLLOW` fds and acts relative
  to the parent's fd: a parent swapped for a symlink after `resolve()` fails, it cannot escape.
* Reads never block (`O_NONBLOCK`; FIFOs and devices are refused). Writes are atomic: an
  `O_EXCL` temp file beside the target, fsync, `os.replace`, fsync of the directory.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import stat
import unicodedata
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..errors import ConfigError, FileTooLarge, PathRefused

MAX_PATH_CHARS = 4096
MAX_SYMLINKS = 40
BINARY_SNIFF_BYTES = 8192
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_ENV_VAR = re.compile(r"\$(\{|\(|[A-Za-z_])")
_DRIVE = re.compile(r"^[A-Za-z]:/")
# each folder, with why it is protected when the reason is more than its name
_PROTECTED_DIRS = {
    name: f"inside {name}{why}"
    for name, why in (
        (".git", ""),
        (".ssh", ""),
        (".codecompanion", ""),
        # what an editor, an IDE or git runs by itself when the project is opened or committed to
        (".vscode", " (VS Code runs its tasks and settings)"),
        (".idea", " (JetBrains IDEs run its configurations)"),
        (".husky", " (git hooks)"),
    )
}
# Files that run code without the user running them: on entering the directory (direnv,
# mise), on opening Neovim or Vim there (exrc, lazy.nvim), on a commit (pre-commit). CI
# workflows run elsewhere, when pushed: not protected.
_AUTORUN_FILES = frozenset(
    {
        ".envrc",
        ".nvim.lua",
        ".nvimrc",
        ".exrc",
        ".vimrc",
        "_vimrc",
        "_exrc",
        ".lazy.lua",
        ".mise.toml",
        "mise.toml",
        ".pre-commit-config.yaml",
    }
)
# mise reads every one of these (`_.source` runs a script at each prompt); lefthook's hooks
# read their config at each commit, as pre-commit does
_AUTORUN_NAME = re.compile(r"\.?(mise(\.[\w.-]+)?\.toml|lefthook(-local)?\.(ya?ml|toml|jsonc?))")
_CREDENTIAL_FILES = frozenset({".netrc", ".npmrc", ".pypirc"})
_KEY_PREFIXES = ("id_rsa", "id_ed25519", "id_ecdsa")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Target:
    raw: str  # what the LLM sent
    relative: str  # relative to the root, '/'-separated: the path as named, else the real one
    real: Path  # fully resolved; for a missing file: real parent / name
    exists: bool
    protected: str | None  # why the user must always be asked, or None
    link: Path | None = None  # the final-component symlink that was followed (delete() unlinks it)


@dataclass(frozen=True)
class FileText:
    text: str  # line endings normalised to "\n"
    newline: str  # "\r\n" when most line endings were CRLF, else "\n"
    final_newline: bool
    sha256: str  # of the raw bytes on disk
    mode: int  # permission bits


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Workspace:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(os.path.realpath(os.fspath(root)))
        if not self.root.is_dir():
            raise ConfigError(f"the project root {self.root} is not a directory")

    def resolve(self, raw: str) -> Target:
        shown = self._check_raw(raw)
        lexical = PurePosixPath(raw)  # collapses repeated '/' and '.', keeps '..'
        absolute = lexical.is_absolute()
        start, parts = Path("/") if absolute else self.root, list(lexical.parts[1 if absolute else 0 :])
        if parts and parts[-1] != "..":
            parent, crossed = self._walk(start, parts[:-1], shown)
            real, final = self._walk(parent, parts[-1:], shown)
            link, crossed = (final[0] if final else None), crossed + final
        else:
            (real, crossed), link = self._walk(start, parts, shown), None
        if not real.is_relative_to(self.root):
            how = "leads through a symlink to outside" if crossed else "is outside"
            raise PathRefused(
                f"path '{shown}' {how} the project root {self.root}; use a path relative to the "
                "project root (only files inside the project can be used)"
            )
        if link is not None and not link.is_relative_to(self.root):
            raise PathRefused(f"path '{shown}' is a symlink outside the project root {self.root}; use a project path")
        try:
            st = _lstat(None, str(real))  # every component was just lstat-ed: this fails only in a race
        except OSError as exc:
            raise _refusal(exc, shown, "inspect") from None
        if raw.endswith("/") and (st is None or not stat.S_ISDIR(st.st_mode)):
            raise PathRefused(f"path '{shown}' ends with '/', which names a directory; give a file path")
        joined = PurePosixPath(os.path.normpath(PurePosixPath(self.root) / lexical))  # '..' not following links
        named = joined.relative_to(self.root) if joined.is_relative_to(self.root) else None
        relative = (named or PurePosixPath(real.relative_to(self.root))).as_posix()
        protected = self._protection(
            [named, real.relative_to(self.root), link.relative_to(self.root) if link else None], st
        )
        return Target(raw, relative, real, st is not None, protected, link)

    def _check_raw(self, raw: object) -> str:
        """Refuse what must not reach the filesystem; returns the path as messages show it."""
        hint = f"send a file path relative to the project root {self.root}"
        if not isinstance(raw, str):
            raise PathRefused(f"the path must be a string, not {type(raw).__name__}; {hint}")
        if not raw:
            raise PathRefused(f"the path is empty; {hint}")
        if len(raw) > MAX_PATH_CHARS:
            raise PathRefused(f"the path is {len(raw)} characters long (the limit is {MAX_PATH_CHARS}); {hint}")
        for ch in raw:
            if unicodedata.category(ch) in _INVISIBLE:
                raise PathRefused(
                    f"the path contains the control or invisible character U+{ord(ch):04X}; "
                    f"type it with plain visible characters and {hint}"
                )
        shown = raw if len(raw) <= 200 else f"{raw[:200]}..."
        if "\\" in raw or _DRIVE.match(raw):
            raise PathRefused(
                f"path '{shown}' looks like a Windows path (backslash or drive letter); "
                f"use '/' between directories and {hint}"
            )
        if raw.startswith("~") or _ENV_VAR.search(raw):
            raise PathRefused(f"path '{shown}': '~' and environment variables ('$...') are not expanded; {hint}")
        return shown

    def _walk(self, start: Path, parts: list[str], shown: str) -> tuple[Path, list[Path]]:
        """Resolve `parts` from `start` like the kernel would; returns the path and the links crossed."""
        current, crossed, pending = start, list[Path](), list(reversed(parts))
        while pending:
            part = pending.pop()
            if part in ("", ".", ".."):
                current = current.parent if part == ".." else current
                continue
            candidate = current / part
            try:
                st = os.lstat(candidate)
            except FileNotFoundError:  # a missing component is never a link: carry on lexically
                current = candidate
                continue
            except NotADirectoryError:
                raise PathRefused(
                    f"path '{shown}' goes through {self._show(current)}, which is a file, not a "
                    "directory; check the path"
                ) from None
            except OSError as exc:
                raise _refusal(exc, shown, "use") from None
            if not stat.S_ISLNK(st.st_mode):
                current = candidate
                continue
            crossed.append(candidate)
            if len(crossed) > MAX_SYMLINKS:
                raise PathRefused(f"path '{shown}' goes through too many symlinks (a loop?); use the real path")
            try:
                os.stat(candidate)
            except OSError as exc:
                why = "whose target does not exist" if exc.errno == errno.ENOENT else f"that fails ({exc.strerror})"
                raise PathRefused(
                    f"path '{shown}' goes through {self._show(candidate)}, a symlink {why}; files "
                    "are never created through a symlink, use the real path instead"
                ) from None
            target = os.readlink(candidate)
            if target.startswith("/"):
                current = Path("/")
            pending.extend(reversed(target.split("/")))
        return current, crossed

    def code_running_paths(self) -> list[str]:
        """What in the project runs code by itself, as it is now: `.git` whole (its hooks, its
        config with aliases, pagers and `core.fsmonitor`, a `commondir` that points git at
        another config...), the folders IDEs and hook managers run from, and the autorun
        files at the top (.envrc, .nvim.lua, mise...). A sandboxed command gets them
        read-only: git can read the repository there, not commit."""
        found = [str(self.root / ".git")]
        with suppress(OSError):
            for entry in os.scandir(self.root):
                name = entry.name.lower()
                if name in _PROTECTED_DIRS and name not in (".git", ".ssh") or name in ("mise", ".mise"):
                    found.append(entry.path)
                elif name in _AUTORUN_FILES or _AUTORUN_NAME.fullmatch(name):
                    found.append(entry.path)
        return [path for path in found if os.path.lexists(path)]

    def _show(self, path: Path) -> str:
        inside = path.is_relative_to(self.root)
        return f"'{path.relative_to(self.root).as_posix()}'" if inside else "a path outside the project"

    @staticmethod
    def _protection(paths: list[PurePosixPath | Path | None], st: os.stat_result | None) -> str | None:
        for path in paths:
            parts = [part.lower() for part in path.parts] if path is not None else []
            if reason := next((_PROTECTED_DIRS[p] for p in parts if p in _PROTECTED_DIRS), None):
                return reason
            name = parts[-1] if parts else ""
            in_mise = name.endswith(".toml") and bool({"mise", ".mise"} & set(parts[:-1]))  # mise/conf.d/x.toml
            if name in _AUTORUN_FILES or _AUTORUN_NAME.fullmatch(name) or in_mise:
                return f"a file that runs code by itself ({name})"
            if name == ".env" or name.startswith(".env."):
                return "an environment file (.env*)"
            if name.endswith((".pem", ".key")) or name.startswith(_KEY_PREFIXES):
                return "a private key"
            if name in _CREDENTIAL_FILES:
                return f"a credentials file ({name})"
        if st is not None and stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            return "a file with other hard links"
        return None

    def read_bytes(self, target: Target, *, max_bytes: int = 2_000_000) -> tuple[bytes, os.stat_result]:
        """A regular file's bytes, opened without following links (FIFOs and devices refused)."""
        shown = target.relative
        dir_fd, name = self._open_parent(target.real, shown)
        try:
            return self._read_bytes(dir_fd, name, shown, max_bytes)
        except OSError as exc:
            raise _refusal(exc, shown, "read") from None
        finally:
            os.close(dir_fd)

    def read_text(self, target: Target, *, max_bytes: int = 2_000_000) -> FileText:
        shown = target.relative
        data, st = self.read_bytes(target, max_bytes=max_bytes)
        if b"\0" in data[:BINARY_SNIFF_BYTES]:
            raise PathRefused(f"'{shown}' is a binary file (it contains NUL bytes); only text files can be read")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PathRefused(f"'{shown}' is not valid UTF-8 text (bad byte at offset {exc.start})") from None
        return _file_text(data, text, stat.S_IMODE(st.st_mode), "\n")

    def write_text(
        self,
        target: Target,
        text: str,
        *,
        expected_sha256: str | None = None,
        newline: str = "\n",
        final_newline: bool | None = None,
    ) -> FileText:
        """Replace the file atomically; each line feed in `text` is written as `newline`."""
        if newline not in ("\n", "\r\n"):
            raise ValueError(f"newline must be '\\n' or '\\r\\n', not {newline!r}")
        if final_newline is not None and final_newline != text.endswith("\n"):
            text = text + "\n" if final_newline else text[:-1]  # add or strip exactly one
        data = _encode(text.replace("\n", newline))
        shown = target.relative
        dir_fd, name = self._open_parent(target.real, shown)
        try:
            st = _lstat(dir_fd, name)
            if st is not None:
                _require_regular(st, shown)  # also refuses a final component that became a symlink
            if expected_sha256 is not None:
                current = None if st is None else self._read_bytes(dir_fd, name, shown, None)[0]
                if current is None or sha256_of(current) != expected_sha256.lower():
                    raise PathRefused(f"'{shown}' changed since it was read; read it again (nothing was written)")
            mode = self._replace(dir_fd, name, data, st, shown)
        except OSError as exc:
            raise _refusal(exc, shown, "write") from None
        finally:
            os.close(dir_fd)
        return _file_text(data, data.decode("utf-8"), mode, newline)

    def create_text(self, target: Target, text: str) -> FileText:
        shown = target.relative
        if target.exists:
            raise PathRefused(f"'{shown}' already exists; use insert_edit_into_file to change it")
        data = _encode(text)
        dir_fd, name = self._open_parent(target.real, shown, create=True)
        try:
            mode = _write_new(dir_fd, name, data, None)  # O_EXCL: never over a file or a symlink
            with suppress(OSError):
                os.fsync(dir_fd)
        except FileExistsError:
            raise PathRefused(f"'{shown}' already exists; use insert_edit_into_file to change it") from None
        except OSError as exc:
            raise _refusal(exc, shown, "create") from None
        finally:
            os.close(dir_fd)
        return _file_text(data, text, mode, "\n")

    def delete(self, target: Target) -> None:
        """Unlink a regular file, or a symlink (never its target); directories are refused."""
        path = target.link if target.link is not None else target.real
        shown = path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else target.relative
        dir_fd, name = self._open_parent(path, shown)
        try:
            st = _lstat(dir_fd, name)
            if st is None:
                raise PathRefused(f"'{shown}' does not exist; nothing was deleted")
            if target.link is None:
                _require_regular(st, shown)
            elif not stat.S_ISLNK(st.st_mode):
                raise PathRefused(f"'{shown}' is no longer a symlink; resolve the path again (nothing was deleted)")
            os.unlink(name, dir_fd=dir_fd)
            with suppress(OSError):
                os.fsync(dir_fd)
        except OSError as exc:
            raise _refusal(exc, shown, "delete") from None
        finally:
            os.close(dir_fd)

    def _open_parent(self, path: Path, shown: str, *, create: bool = False) -> tuple[int, str]:
        """An fd of `path`'s parent reached from the root without following links, and the name."""
        parts = path.relative_to(self.root).parts if path.is_relative_to(self.root) else ()
        if not parts:
            raise PathRefused(f"'{shown}' is not a file inside the project root {self.root}; give a file path")
        try:
            return open_parent(self.root, parts, create=create), parts[-1]
        except OSError as exc:
            raise _refusal(exc, shown, "reach") from None

    @staticmethod
    def _read_bytes(dir_fd: int | None, name: str, shown: str, max_bytes: int | None) -> tuple[bytes, os.stat_result]:
        before = _lstat(dir_fd, name)
        if before is None:
            raise PathRefused(f"'{shown}' does not exist; check the path, or use create_file to make it")
        _require_regular(before, shown)  # do not even open FIFOs or devices
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
        try:
            st = os.fstat(fd)
            _require_regular(st, shown)  # it may have been swapped since the lstat
            limit = max_bytes if max_bytes is not None else st.st_size + (1 << 30)
            if st.st_size > limit:
                raise FileTooLarge(
                    f"'{shown}' is {st.st_size} bytes, above the {limit}-byte limit; too large to read", limit=limit
                )
            chunks, total = list[bytes](), 0
            while chunk := os.read(fd, min(1 << 20, limit + 1 - total)):
                chunks.append(chunk)
                total += len(chunk)
                if total > limit:
                    raise FileTooLarge(
                        f"'{shown}' is more than {limit} bytes (the limit); it is too large to read", limit=limit
                    )
            return b"".join(chunks), st
        finally:
            os.close(fd)

    @staticmethod
    def _replace(dir_fd: int, name: str, data: bytes, old: os.stat_result | None, shown: str) -> int:
        """Write a temp file beside `name` and rename it over `name`; returns the mode. A file with
        other hard links gets a new inode: the other names keep the old content, which is safe."""
        tmp = f".{name[:128]}.{secrets.token_hex(8)}.ccpy-tmp"
        mode = _write_new(dir_fd, tmp, data, old)
        try:
            now = _lstat(dir_fd, name)
            if now is not None and stat.S_ISLNK(now.st_mode):
                raise PathRefused(f"'{shown}' became a symlink after it was checked; nothing was written")
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
        with suppress(OSError):  # some filesystems cannot fsync a directory; the data is already safe
            os.fsync(dir_fd)
        return mode


def open_parent(root: Path, parts: Sequence[str], *, create: bool = False, replace_files: bool = False) -> int:
    """An fd of the folder that holds `parts[-1]`, walked from `root` one component at a time
    without following links (a link in the way is ELOOP, an OSError like any other). With
    `create`, missing folders are made; with `replace_files` too, a regular file where a folder
    must be goes (a snapshot being put back)."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)  # ELOOP if a link took its place
            except NotADirectoryError:
                if not (replace_files and stat.S_ISREG(os.lstat(part, dir_fd=fd).st_mode)):
                    raise
                os.unlink(part, dir_fd=fd)
                os.mkdir(part, 0o777, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def protected_reason(relative: PurePosixPath) -> str | None:
    """Why a path in the project is protected (.git, .env*, keys, credentials), or None."""
    return Workspace._protection([relative], None)


def read_regular(path: Path, shown: str, max_bytes: int) -> bytes:
    """The bytes of the regular file at the real path `path` (its last component no link), at
    most `max_bytes`: FIFOs, devices and sockets are refused without being opened for reading."""
    try:
        return Workspace._read_bytes(None, str(path), shown, max_bytes)[0]
    except OSError as exc:
        raise _refusal(exc, shown, "read") from None


def _write_new(dir_fd: int, name: str, data: bytes, like: os.stat_result | None) -> int:
    """Create `name` (O_EXCL), write and fsync `data`, owner and mode copied from `like`
    (else 0o644 minus the umask); on failure it is removed. Returns the mode."""
    fd = os.open(name, _CREATE_FLAGS, 0o644, dir_fd=dir_fd)
    try:
        if like is not None:
            if (like.st_uid, like.st_gid) != (os.geteuid(), os.getegid()):
                with suppress(OSError):
                    os.fchown(fd, like.st_uid, like.st_gid)
            os.fchmod(fd, stat.S_IMODE(like.st_mode))
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        return stat.S_IMODE(os.fstat(fd).st_mode)
    except BaseException:
        with suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)
        raise
    finally:
        os.close(fd)


def _lstat(dir_fd: int | None, name: str) -> os.stat_result | None:
    with suppress(FileNotFoundError):
        return os.lstat(name, dir_fd=dir_fd)
    return None


def _require_regular(st: os.stat_result, shown: str) -> None:
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise PathRefused(f"'{shown}' is a directory, not a file; give the path of a file in it")
    if stat.S_ISLNK(mode):
        raise PathRefused(f"'{shown}' became a symlink after it was checked; resolve the path again")
    if not stat.S_ISREG(mode):
        kind = (
            "a named pipe (FIFO)"
            if stat.S_ISFIFO(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "not a regular file"
        )
        raise PathRefused(f"'{shown}' is {kind}; only regular files can be used")


def _refusal(exc: OSError, shown: str, action: str) -> PathRefused:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return PathRefused(
            f"'{shown}' changed after it was checked: it, or a directory on its way, is now a symlink "
            "or a file; resolve the path again (nothing was changed)"
        )
    if exc.errno == errno.ENOENT:
        return PathRefused(f"'{shown}' or a directory on its way does not exist; check the path")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return PathRefused(f"permission denied to {action} '{shown}'; ask the user")
    return PathRefused(f"could not {action} '{shown}': {exc.strerror or exc}; the file was left unchanged")


def _encode(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise PathRefused("the new content cannot be written as UTF-8 (lone surrogates); send plain text") from None


def _file_text(data: bytes, text: str, mode: int, default_newline: str) -> FileText:
    crlf, lf = data.count(b"\r\n"), data.count(b"\n") - data.count(b"\r\n")
    newline = "\r\n" if crlf > lf else "\n" if lf else default_newline
    return FileText(text.replace("\r\n", "\n"), newline, data.endswith(b"\n"), sha256_of(data), mode)


__all__ = ["FileText", "Target", "Workspace", "protected_reason", "read_regular", "sha256_of"]
