"""Where a sandboxed command may write, what it may not read, what stays read-only: the
policy's paths resolved once against the filesystem, for any mechanism to enforce.

Paths are taken by their real path (a denied `~/.ssh` that is a link hides its target);
absent ones are left out (there is nothing to hide, and a mechanism cannot mount over a
missing path without creating it).
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass

from .policy import SandboxPolicy, expand

MAX_SOCKETS = 256
"""Listening sockets hidden one by one at most (`/proc/net/unix`), besides the session's
runtime folder hidden whole; the seccomp filter closes every Unix socket anyway."""


@dataclass(frozen=True)
class Confinement:
    root: str  # the project: writable
    cwd: str
    writable: tuple[str, ...]  # beside the root and the temp dirs: the user's `writable`
    readonly: tuple[str, ...]  # inside a writable path: files that run code (.git/hooks...)
    pinned: tuple[str, ...]  # the folders between the root and those: mount points, so never renamed away
    deny_dirs: tuple[str, ...]
    deny_files: tuple[str, ...]
    sockets: tuple[str, ...]  # listening Unix sockets outside the writable paths
    hidden_dirs: tuple[str, ...]  # the session's runtime folder: agents' and editors' sockets
    temp: tuple[str, ...]  # the temp dirs: /tmp and $TMPDIR, writable

    @classmethod
    def of(
        cls,
        policy: SandboxPolicy,
        *,
        root: str,
        cwd: str,
        readonly: Iterable[str] = (),
    ) -> Confinement:
        root = os.path.realpath(root)
        writable = _existing(expand(p, base=root) for p in policy.writable)
        temp = _existing(["/tmp", tempfile.gettempdir()])
        open_paths = (root, *writable, *temp)
        deny_dirs: list[str] = []
        deny_files: list[str] = []
        for path in _existing(expand(p, base=root) for p in policy.deny_read):
            if path in open_paths or any(_under(p, path) for p in open_paths):
                continue  # never the project itself: denying it would deny the work
            (deny_dirs if os.path.isdir(path) else deny_files).append(path)
        hidden = [d for d in _runtime_dirs() if not any(_under(p, d) or p == d for p in open_paths)]
        covered = (*open_paths, *hidden, *deny_dirs)  # what is writable, or hidden whole
        sockets = [s for s in listening_sockets() if not any(_under(s, p) for p in covered)][:MAX_SOCKETS]
        deny_files = [f for f in deny_files if not any(_under(f, d) for d in (*deny_dirs, *hidden))]
        # a path the user made writable on purpose (`writable = { ".git" }`) stays so
        kept = [p for p in _existing(readonly) if not any(p == w or _under(p, w) for w in writable)]
        return cls(
            root=root,
            cwd=os.path.realpath(cwd),
            writable=tuple(writable),
            readonly=tuple(kept),
            pinned=tuple(_between(kept, open_paths)),
            deny_dirs=tuple(deny_dirs),
            deny_files=tuple(deny_files),
            sockets=tuple(sockets),
            hidden_dirs=tuple(hidden),
            temp=tuple(temp),
        )


def _existing(paths: Iterable[str]) -> list[str]:
    found: list[str] = []
    for path in paths:
        real = os.path.realpath(path)
        if real != "/" and real not in found and os.path.lexists(real):
            found.append(real)
    return found


def _between(paths: list[str], roots: tuple[str, ...]) -> list[str]:
    """The folders strictly between a writable root and each of `paths`: `.git` for
    `.git/hooks`. Renaming `.git` away and making a new one would leave its hooks writable."""
    found: list[str] = []
    for path in paths:
        root = next((r for r in roots if _under(path, r)), None)
        folder = os.path.dirname(path)
        while root is not None and _under(folder, root):
            if folder not in found:
                found.insert(0, folder)
            folder = os.path.dirname(folder)
    return sorted(found, key=len)


def _under(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip("/") + "/")


def _runtime_dirs() -> list[str]:
    """The session's runtime folder (`$XDG_RUNTIME_DIR`, else /run/user/<uid>): D-Bus, the
    ssh and gpg agents, Wayland and, often, Neovim's own server socket."""
    candidates = [os.environ.get("XDG_RUNTIME_DIR") or "", f"/run/user/{os.getuid()}"]
    return _existing(c for c in candidates if c and os.path.isabs(c))


def listening_sockets() -> list[str]:
    """The paths of the Unix sockets bound in this network namespace (Linux): a sandboxed
    command could connect to any of them (Neovim's server, Docker, tmux, X11) and act
    outside the sandbox through it, read-only mount or not."""
    try:
        with open("/proc/net/unix", "rb") as table:
            lines = table.read(4 * 1024 * 1024).splitlines()[1:]
    except OSError:
        return []
    found: list[str] = []
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) < 8 or not fields[7].startswith(b"/"):
            continue  # unbound, or abstract (`@name`: a network namespace of its own hides those)
        path = os.path.normpath(os.fsdecode(fields[7]))
        try:
            if stat.S_ISSOCK(os.lstat(path).st_mode) and path not in found:
                found.append(path)
        except OSError:
            continue
    return found
