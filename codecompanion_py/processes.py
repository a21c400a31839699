"""Child processes, each in its own process group, stopped as a group.

Shared by the tools (run_command, git and ripgrep for the search tools), the ACP client
(agents and the terminals they ask for), the ACP bridge (the native CLIs) and the
adapters' `cmd:` env values. Everything here is asyncio: the engine's loop must never
block on a child.

* `start_in_group` starts a child as the leader of a new session, so of its own process
  group (whose id is the child's pid): signalling the group reaches the background
  children it leaves too.
* `terminate_group` sends the group SIGTERM, then SIGKILL after `KILL_GRACE` seconds (or
  at once if that wait is cancelled); `group_alive` tells whether anything live is left.
* `to_argv` runs a command string without a shell unless it uses shell syntax
  (`needs_shell`); then it runs as `/bin/sh -c COMMAND`.
* `safe_env` is the engine's environment less anything that looks like a secret;
  `strip_ansi` removes terminal escapes from output shown as text.
* `run_process_raw` runs a command to its end: stdout and stderr share one pipe (the
  output interleaved as it was written), capped with bounded memory (the first half and a
  rolling last half of `max_output` bytes, joined by a `[... N bytes omitted ...]` line);
  on timeout, or when the awaiting task is cancelled, the whole group is stopped; stdin is
  /dev/null unless bytes are given.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import shlex
import signal
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ToolError

KILL_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL when a process group is stopped."""

DRAIN_GRACE = 1.0
"""Seconds the output may stay open after the command itself has exited (background
processes that inherited the pipe); past that those processes are stopped."""

_READ_CHUNK = 64 * 1024
_POLL = 0.05

_SHELL_CHARS = frozenset("|&;<>()$`*?[]{}~!\n\r")
_SHELL_WORDS = frozenset(
    {
        # keywords
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "case",
        "esac",
        "for",
        "select",
        "while",
        "until",
        "do",
        "done",
        "function",
        "time",
        "in",
        "[[",
        "]]",
        "{",
        "}",
        "!",
        # builtins that only mean something inside a shell
        ".",
        "source",
        "cd",
        "export",
        "unset",
        "set",
        "alias",
        "unalias",
        "eval",
        "exec",
        "exit",
        "return",
        "read",
        "readonly",
        "local",
        "declare",
        "typeset",
        "shift",
        "trap",
        "ulimit",
        "umask",
        "wait",
        "jobs",
        "fg",
        "bg",
        "pushd",
        "popd",
        "dirs",
        "builtin",
        "command",
        "type",
        "hash",
        "shopt",
        "let",
        "enable",
        "getopts",
        "times",
        "history",
        "disown",
        "suspend",
        "break",
        "continue",
    }
)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_COMMENT = re.compile(r"(?:^|\s)#")

_SECRET_PARTS = ("KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL")

_ANSI = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC ... BEL / ST (titles, hyperlinks)
    r"|\x1b[P^_X][^\x1b]*(?:\x1b\\)?"  # DCS / PM / APC / SOS ... ST
    r"|\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor movement)
    r"|\x1b[ -/]*[0-~]"  # other escapes: ESC ( B, ESC =, ESC M ...
    r"|\x1b"  # a stray or cut-off ESC
)


@dataclass(frozen=True)
class RawProcessResult:
    """`run_process_raw`'s result: the output as bytes (markers included)."""

    argv: tuple[str, ...]
    exit_code: int | None
    """The exit status; negative (-signal) when a signal other than ours ended it, None
    when it was killed on timeout."""
    output: bytes
    stderr: bytes
    """Empty unless `merge_stderr=False`."""
    timed_out: bool
    truncated: bool

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


# --- commands and environment -----------------------------------------------------------


def needs_shell(command: str) -> bool:
    """True when `command` uses shell syntax that only `/bin/sh -c` can run as meant."""
    if any(char in _SHELL_CHARS for char in command):
        return True
    if _COMMENT.search(command):
        return True
    try:
        words = shlex.split(command)
    except ValueError:  # unbalanced quotes: let the shell report it
        return True
    if not words:
        return False
    return words[0] in _SHELL_WORDS or bool(_ASSIGNMENT.match(words[0]))


def to_argv(command: str | Sequence[str]) -> list[str]:
    """The argv that runs `command`: a list as is, a string split like the shell would, or
    `["/bin/sh", "-c", command]` when it needs a shell."""
    if isinstance(command, str):
        if needs_shell(command):
            return ["/bin/sh", "-c", command]
        return shlex.split(command)
    return [os.fspath(part) for part in command]


def _is_secret(name: str) -> bool:
    upper = name.upper()
    return any(part in upper for part in _SECRET_PARTS) or upper.startswith("AWS_") or upper.endswith("_PAT")


def safe_env(base: Mapping[str, str] | None = None, *, allow: Iterable[str] = ()) -> dict[str, str]:
    """A copy of `base` (default `os.environ`) without variables whose names look like
    secrets (API keys, tokens, passwords, AWS settings...); names in `allow` are kept."""
    allowed = set(allow)
    source = os.environ if base is None else base
    return {name: value for name, value in source.items() if name in allowed or not _is_secret(name)}


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


# --- output capture ---------------------------------------------------------------------


class _Capture:
    """Bytes written by a child, kept within `limit`: the first half and a rolling last half
    (or only a head of `limit` bytes when `keep_tail` is false)."""

    def __init__(self, limit: int, *, keep_tail: bool = True) -> None:
        limit = max(0, int(limit))
        if keep_tail:
            self.head_limit = limit // 2
            self.tail_limit = limit - self.head_limit
        else:
            self.head_limit, self.tail_limit = limit, 0
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data or self.tail_limit == 0:
            return
        if len(data) >= self.tail_limit:
            self.tail[:] = data[-self.tail_limit :]
        else:
            self.tail += data
            excess = len(self.tail) - self.tail_limit
            if excess > 0:
                del self.tail[:excess]

    @property
    def omitted(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def render(self) -> bytes:
        if not self.omitted:
            return bytes(self.head + self.tail)
        return _append_line(bytes(self.head), f"[... {self.omitted} bytes omitted ...]") + bytes(self.tail)


def _append_line(data: bytes, line: str) -> bytes:
    if data and not data.endswith(b"\n"):
        data += b"\n"
    return data + line.encode() + b"\n"


async def _pump(stream: asyncio.StreamReader, capture: _Capture) -> None:
    while True:
        chunk = await stream.read(_READ_CHUNK)
        if not chunk:
            return
        capture.add(chunk)


async def _feed(stream: asyncio.StreamWriter, data: bytes) -> None:
    try:
        stream.write(data)
        await stream.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the child exited without reading all of it
    finally:
        with contextlib.suppress(Exception):
            stream.close()


# --- process groups ---------------------------------------------------------------------


async def start_in_group(argv: Sequence[str], **options: Any) -> asyncio.subprocess.Process:
    """`asyncio.create_subprocess_exec(*argv, **options)` with the child leading a new
    session, and so its own process group: its pid is the group's id. OSError (a missing or
    unusable executable) is left to the caller to report."""
    return await asyncio.create_subprocess_exec(*argv, start_new_session=True, **options)


def close_pipes(proc: asyncio.subprocess.Process) -> None:
    """Close our ends of the child's pipes, which a stray process of its group may still
    hold open after the child itself has exited."""
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


@functools.cache
def die_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` asking Linux to SIGKILL the child when its parent dies (None elsewhere,
    or when libc's prctl cannot be had)."""
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


def group_alive(pgid: int) -> bool:
    """Whether a live (non-zombie) process is in group `pgid`.

    `killpg(pgid, 0)` also succeeds while only zombies are left (orphans whose reaper is
    slow or absent), so on Linux /proc tells the live ones apart."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
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
            return True
    return False


async def terminate_group(pgid: int, grace: float = KILL_GRACE) -> None:
    """SIGTERM to the group, then SIGKILL to whatever is still alive after `grace` seconds
    (or at once if this wait is itself cancelled)."""
    if not signal_group(pgid, signal.SIGTERM):
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    try:
        while loop.time() < deadline:
            await asyncio.sleep(_POLL)
            if not await asyncio.to_thread(group_alive, pgid):  # a /proc scan: off the loop
                return
    finally:
        if group_alive(pgid):
            signal_group(pgid, signal.SIGKILL)


async def _exited(proc: asyncio.subprocess.Process) -> None:
    """Until the child itself has exited. `Process.wait()` also waits for its pipes to close,
    which a background grandchild holding them can delay for ever."""
    wait = asyncio.ensure_future(proc.wait())
    try:
        while proc.returncode is None and not wait.done():
            await asyncio.wait([wait], timeout=_POLL)
    finally:
        if not wait.done():
            wait.cancel()


def _format_seconds(seconds: float) -> str:
    return f"{seconds:g}"


# --- running ----------------------------------------------------------------------------


async def run_process_raw(
    command: str | Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    timeout: float | None = 300.0,
    max_output: int = 100_000,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    merge_stderr: bool = True,
    keep_tail: bool = True,
    max_stderr: int = 64 * 1024,
) -> RawProcessResult:
    """Run `command` in `cwd`, in its own process group, and return its exit code and its
    capped output as bytes, with the markers appended (`[timed out after N s]`, ...): for
    callers such as git and ripgrep whose output is data, and for `tools.process.run_process`,
    which decodes it for the LLM. With `merge_stderr=False` stderr is captured apart (its
    first `max_stderr` bytes); with `keep_tail=False` only the first `max_output` bytes are
    kept.

    A missing executable is a result (exit code 127), not an exception; an empty command or
    a `cwd` that does not exist raises ToolError. Cancelling the awaiting task stops the
    process group and re-raises CancelledError."""
    argv = to_argv(command)
    if not argv:
        raise ToolError("empty command")
    if not os.path.isdir(cwd):
        raise ToolError(f"working directory does not exist: {os.fspath(cwd)}")
    child_env = safe_env() if env is None else dict(env)
    try:
        proc = await start_in_group(
            argv,
            cwd=cwd,
            env=child_env,
            stdin=asyncio.subprocess.DEVNULL if stdin is None else asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT if merge_stderr else asyncio.subprocess.PIPE,
        )
    except FileNotFoundError:
        return RawProcessResult(tuple(argv), 127, f"command not found: {argv[0]}\n".encode(), b"", False, False)
    except PermissionError:
        return RawProcessResult(tuple(argv), 126, f"permission denied: {argv[0]}\n".encode(), b"", False, False)
    except OSError as error:  # exec format error and the like
        return RawProcessResult(
            tuple(argv), 126, f"cannot run {argv[0]}: {error.strerror or error}\n".encode(), b"", False, False
        )

    pgid = proc.pid  # the child leads its own group
    out = _Capture(max_output, keep_tail=keep_tail)
    err = _Capture(max_stderr, keep_tail=False)
    assert proc.stdout is not None
    readers = [asyncio.ensure_future(_pump(proc.stdout, out))]
    if not merge_stderr:
        assert proc.stderr is not None
        readers.append(asyncio.ensure_future(_pump(proc.stderr, err)))
    feeder = None
    if stdin is not None:
        assert proc.stdin is not None
        feeder = asyncio.ensure_future(_feed(proc.stdin, stdin))
    waiter = asyncio.ensure_future(_exited(proc))
    timed_out = False
    notes: list[str] = []
    try:
        await asyncio.wait([waiter], timeout=timeout)
        if waiter.done():
            _, pending = await asyncio.wait(readers, timeout=DRAIN_GRACE)
            if pending:  # background processes hold the pipe open
                await terminate_group(pgid)
                notes.append("[background processes still holding the output open were stopped]")
        else:
            timed_out = True
            await terminate_group(pgid)
            notes.append(f"[timed out after {_format_seconds(timeout or 0)} s]")
        await asyncio.wait(readers, timeout=DRAIN_GRACE)
        if not waiter.done():
            await asyncio.wait([waiter], timeout=KILL_GRACE)
    except asyncio.CancelledError:
        await terminate_group(pgid)
        raise
    finally:
        unfinished = [task for task in (*readers, waiter, feeder) if task is not None and not task.done()]
        for task in unfinished:
            task.cancel()
        if proc.returncode is None:
            signal_group(pgid, signal.SIGKILL)
        if any(not task.done() or task.cancelled() for task in readers):
            close_pipes(proc)  # pipes a stray process still holds
        for io_task in (*readers, feeder):
            if io_task is not None and io_task.done() and not io_task.cancelled():
                io_task.exception()  # retrieved: a read or write error just ends that stream early

    data = out.render()
    for note in notes:
        data = _append_line(data, note)
    exit_code = None if timed_out else proc.returncode
    return RawProcessResult(tuple(argv), exit_code, data, err.render(), timed_out, bool(out.omitted or err.omitted))


__all__ = [
    "DRAIN_GRACE",
    "KILL_GRACE",
    "RawProcessResult",
    "close_pipes",
    "die_with_parent",
    "group_alive",
    "needs_shell",
    "run_process_raw",
    "safe_env",
    "signal_group",
    "start_in_group",
    "strip_ansi",
    "terminate_group",
    "to_argv",
]
