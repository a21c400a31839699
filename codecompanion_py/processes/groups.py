"""Process groups as the operating system has them: signal one, tell whether anything
live is left in it, and the `preexec_fn` that makes a child die with its parent.

A child started by `tracking.start_in_group` leads a new session, so its own process group
(whose id is the child's pid): signalling the group reaches the background children it
leaves too.
"""

from __future__ import annotations

import asyncio
import functools
import os
import signal
import sys
from collections.abc import Callable, Iterator

KILL_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL when a process group is stopped."""

POLL = 0.05
"""Seconds between two looks at a child or a group that is expected to end."""


def close_pipes(proc: asyncio.subprocess.Process) -> None:
    """Close our ends of the child's pipes, which a stray process of its group may still
    hold open after the child itself has exited."""
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


@functools.cache
def die_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` asking Linux to SIGKILL the child when its parent dies (None elsewhere,
    or when libc's prctl cannot be had).

    Linux fires this signal when the *thread* that forked the child ends, not only the
    process. Our children are forked by asyncio on the thread that runs the event loop
    (`create_subprocess_exec` calls Popen there, whatever thread then waits for the exit):
    the engine's loop thread, which lives as long as the engine, and whose end means the
    engine is going and its children should go too. Never start one from a short-lived
    thread (`asyncio.to_thread`). It reaches the child only: its own children are left to
    the janitor and `kill_all_groups`."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def preexec() -> None:
        prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG

    return preexec


def signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # the id was reused by someone else's group: not ours to touch
        return False
    return True


def group_exists(pgid: int) -> bool:
    """Whether group `pgid` has any member (zombies included): cheaper than `group_alive`."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # the id is someone else's now
        return False
    return True


def group_alive(pgid: int) -> bool:
    """Whether a live (non-zombie) process is in group `pgid`.

    `killpg(pgid, 0)` also succeeds while only zombies are left (orphans whose reaper is
    slow or absent), so on Linux /proc tells the live ones apart."""
    return next(_live_members(pgid), None) is not None


def live_members(pgid: int) -> list[int]:
    """The pids of group `pgid`'s live (non-zombie) processes; `[pgid]` when the group
    exists but /proc cannot tell its members."""
    return list(_live_members(pgid))


def _live_members(pgid: int) -> Iterator[int]:
    if not group_exists(pgid):
        return
    try:
        entries = os.listdir("/proc")
    except OSError:
        yield pgid
        return
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        # after "pid (comm) ": state ppid pgrp session ...
        if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] not in (b"Z", b"X"):
            yield int(name)


async def exited(proc: asyncio.subprocess.Process) -> None:
    """Until the child itself has exited. `Process.wait()` also waits for its pipes to close,
    which a background grandchild holding them can delay for ever."""
    wait = asyncio.ensure_future(proc.wait())
    try:
        while proc.returncode is None and not wait.done():
            await asyncio.wait([wait], timeout=POLL)
    finally:
        if not wait.done():
            wait.cancel()
