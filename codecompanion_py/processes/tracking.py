"""The process groups we started, and what happens to them when we end.

* `start_in_group` starts a child as the leader of a new session, so of its own process
  group, and tracks the group until it is gone.
* `terminate_group` sends the group SIGTERM, then SIGKILL after `KILL_GRACE` seconds (or
  at once if that wait is cancelled).
* `kill_all_groups` SIGKILLs every tracked group (the engine's exit, and `atexit`), and a
  janitor process kills them when this process dies without that (SIGKILL, a crash).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from .groups import KILL_GRACE, POLL, group_alive, group_exists, signal_group

log = logging.getLogger("codecompanion_py.processes")

_JANITOR_SCRIPT = r"""
import os, signal, sys
for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
    signal.signal(sig, signal.SIG_IGN)
groups = set()
for line in sys.stdin.buffer:
    try:
        op, pgid = line[:1], int(line[1:])
    except ValueError:
        continue
    if op == b"+":
        groups.add(pgid)
    elif op == b"-":
        groups.discard(pgid)
    for gone in [g for g in groups if g != pgid]:
        try:
            os.killpg(gone, 0)
        except OSError:
            groups.discard(gone)
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""
"""The janitor: a small process that reads `+PGID` and `-PGID` lines, and when its input
ends (this process has exited, however it died) SIGKILLs the groups still listed. A group
that is gone is dropped from the list at the next line, so its id, once free, is not
killed later by mistake."""

JANITOR = True
"""Start the janitor with the first group (a test host turns it off to see the rest work)."""


class _Groups:
    """The process groups started by `start_in_group` that may still have members, and the
    janitor that is told about them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pgids: set[int] = set()
        self._janitor: subprocess.Popen[bytes] | None = None
        self._janitor_pid = 0
        self._retired: list[subprocess.Popen[bytes]] = []  # kept: their fds must not be reused

    def add(self, pgid: int) -> None:
        with self._lock:
            self._pgids = {group for group in self._pgids if group_exists(group)}
            self._pgids.add(pgid)
            self._tell(f"+{pgid}\n")

    def discard(self, pgid: int) -> None:
        with self._lock:
            if pgid in self._pgids:
                self._pgids.discard(pgid)
                self._tell(f"-{pgid}\n")

    def snapshot(self) -> set[int]:
        with self._lock:
            return set(self._pgids)

    def kill_all(self) -> list[int]:
        # at exit a daemon thread may have died holding the lock: kill without it then
        locked = self._lock.acquire(timeout=1)
        try:
            pgids, self._pgids = sorted(self._pgids), set()
            for pgid in pgids:
                signal_group(pgid, signal.SIGKILL)
                if locked:
                    self._tell(f"-{pgid}\n")
        finally:
            if locked:
                self._lock.release()
        return pgids

    def janitor_fd(self) -> int | None:
        """The write end of the janitor's input, the janitor started if it is not running;
        None when there is none."""
        with self._lock:
            return self._ensure_janitor()

    def _tell(self, line: str) -> None:
        """Tell the janitor. It is a safety net: a line it cannot take at once is dropped,
        never waited for."""
        fd = self._ensure_janitor()
        if fd is None:
            return
        try:
            os.write(fd, line.encode())
        except BlockingIOError:
            log.warning("process janitor busy; not told %r", line.strip())
        except OSError:  # it died: the next line starts another
            self._retire()

    def _ensure_janitor(self) -> int | None:
        if not JANITOR:
            return None
        janitor = self._janitor
        if janitor is None or self._janitor_pid != os.getpid() or janitor.poll() is not None:
            self._retire()
            janitor = self._start_janitor()
            if janitor is None:
                return None
            assert janitor.stdin is not None
            fd = janitor.stdin.fileno()
            with contextlib.suppress(OSError):  # a new janitor learns the whole list
                os.write(fd, "".join(f"+{pgid}\n" for pgid in sorted(self._pgids)).encode())
            self._janitor, self._janitor_pid = janitor, os.getpid()
        assert janitor.stdin is not None
        return janitor.stdin.fileno()

    def _retire(self) -> None:
        if self._janitor is not None and self._janitor_pid == os.getpid():
            self._retired.append(self._janitor)
        self._janitor = None

    @staticmethod
    def _start_janitor() -> subprocess.Popen[bytes] | None:
        if not sys.executable:
            return None
        try:
            # no preexec_fn: the janitor must outlive the thread that starts it; its input
            # is a pipe whose write end only this process holds (non-inheritable)
            janitor = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _JANITOR_SCRIPT],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as error:
            log.warning("cannot start the process janitor: %s", error)
            return None
        assert janitor.stdin is not None
        os.set_blocking(janitor.stdin.fileno(), False)
        return janitor


_groups = _Groups()


def tracked_groups() -> set[int]:
    """The ids of the process groups started here that may still have members."""
    return _groups.snapshot()


def forget_group(pgid: int) -> None:
    """Stop tracking group `pgid` if it has no member left."""
    if not group_exists(pgid):
        _groups.discard(pgid)


def kill_all_groups() -> list[int]:
    """SIGKILL every process group started here that may still have members, at once,
    from any thread: commands, their background children, terminals, agents. For the
    engine's exit; returns the group ids."""
    return _groups.kill_all()


atexit.register(kill_all_groups)


async def start_in_group(argv: Sequence[str], **options: Any) -> asyncio.subprocess.Process:
    """`asyncio.create_subprocess_exec(*argv, **options)` with the child leading a new
    session, and so its own process group: its pid is the group's id. The group is tracked
    until it is gone (`kill_all_groups`); the child itself tells the janitor its group
    before it runs the command (in its `preexec_fn`, which wraps the caller's), so there is
    no moment when it could outlive a killed host unseen. OSError (a missing or unusable
    executable) is left to the caller to report."""
    options["preexec_fn"] = _announcing(_groups.janitor_fd(), options.get("preexec_fn"))
    proc = await asyncio.create_subprocess_exec(*argv, start_new_session=True, **options)
    _groups.add(proc.pid)
    return proc


def _announcing(fd: int | None, then: Callable[[], None] | None) -> Callable[[], None] | None:
    """A `preexec_fn`: `then()`, and the child's group (its pid: it leads a new session) told
    to the janitor on `fd` (the pipe is open in the child until it execs)."""
    if fd is None:
        return then

    def preexec() -> None:
        if then is not None:
            then()
        with contextlib.suppress(OSError):
            os.write(fd, b"+%d\n" % os.getpid())

    return preexec


async def terminate_group(pgid: int, grace: float = KILL_GRACE) -> None:
    """SIGTERM to the group, then SIGKILL to whatever is still alive after `grace` seconds
    (or at once if this wait is itself cancelled)."""
    if not signal_group(pgid, signal.SIGTERM):
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    try:
        while loop.time() < deadline:
            await asyncio.sleep(POLL)
            if not await asyncio.to_thread(group_alive, pgid):  # a /proc scan: off the loop
                return
    finally:
        if group_alive(pgid):
            signal_group(pgid, signal.SIGKILL)
        forget_group(pgid)
