"""Running a command to its end.

`run_process_raw` runs a command in its own process group: stdout and stderr share one
pipe (the output interleaved as it was written), capped with bounded memory (`capture.py`);
on timeout, or when the awaiting task is cancelled, the whole group is stopped; stdin is
/dev/null unless bytes are given. Its output is bytes, for callers whose output is data
(git, ripgrep). `run_process` is the same run with the output as text for the LLM:
decoded (invalid UTF-8 replaced) and cleaned of terminal escapes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..errors import ToolError
from .capture import Capture, append_line, feed, pump
from .commands import safe_env, strip_ansi, to_argv
from .groups import KILL_GRACE, close_pipes, die_with_parent, exited, signal_group
from .tracking import forget_group, start_in_group, terminate_group

DRAIN_GRACE = 1.0
"""Seconds the output may stay open after the command itself has exited (background
processes that inherited the pipe); past that those processes are stopped."""

Output = TypeVar("Output", bytes, str)


@dataclass(frozen=True)
class ProcessResult(Generic[Output]):
    """A finished command: its output as bytes (`run_process_raw`, markers included) or as
    text (`run_process`)."""

    argv: tuple[str, ...]
    exit_code: int | None
    """The exit status; negative (-signal) when a signal other than ours ended it, None
    when it was killed on timeout."""
    output: Output
    timed_out: bool
    truncated: bool
    stderr: bytes = b""
    """Empty unless `merge_stderr=False`."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


def _not_started(argv: Sequence[str], exit_code: int, message: str) -> ProcessResult[bytes]:
    return ProcessResult(tuple(argv), exit_code, f"{message}\n".encode(), False, False)


async def run_process(
    command: str | Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    timeout: float = 300.0,
    max_output: int = 100_000,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    preexec: Callable[[], None] | None = None,
) -> ProcessResult[str]:
    """Run `command` in `cwd` and return its exit code and capped, cleaned output.

    A missing executable is a result (exit code 127), not an exception; a `cwd` that does
    not exist raises ToolError. Cancelling the awaiting task kills the process group and
    re-raises CancelledError."""
    raw = await run_process_raw(
        command, cwd=cwd, timeout=timeout, max_output=max_output, env=env, stdin=stdin, preexec=preexec
    )
    output = strip_ansi(raw.output.decode("utf-8", errors="replace"))
    return ProcessResult(raw.argv, raw.exit_code, output, raw.timed_out, raw.truncated)


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
    preexec: Callable[[], None] | None = None,
) -> ProcessResult[bytes]:
    """Run `command` in `cwd`, in its own process group, and return its exit code and its
    capped output as bytes, with the markers appended (`[timed out after N s]`, ...): for
    callers such as git and ripgrep whose output is data, and for `run_process`, which
    decodes it for the LLM. With `merge_stderr=False` stderr is captured apart (its
    first `max_stderr` bytes); with `keep_tail=False` only the first `max_output` bytes are
    kept. `preexec` runs in the child before the command (a sandbox's confinement).

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
            preexec_fn=then(die_with_parent(), preexec),
            stdin=asyncio.subprocess.DEVNULL if stdin is None else asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT if merge_stderr else asyncio.subprocess.PIPE,
        )
    except FileNotFoundError:
        return _not_started(argv, 127, f"command not found: {argv[0]}")
    except PermissionError:
        return _not_started(argv, 126, f"permission denied: {argv[0]}")
    except OSError as error:  # exec format error and the like
        return _not_started(argv, 126, f"cannot run {argv[0]}: {error.strerror or error}")
    except subprocess.SubprocessError as error:  # the preexec failed: the command did not start
        return _not_started(argv, 126, f"cannot start {argv[0]}: {error}")

    pgid = proc.pid  # the child leads its own group
    out = Capture(max_output, keep_tail=keep_tail)
    err = Capture(max_stderr, keep_tail=False)
    assert proc.stdout is not None
    readers = [asyncio.ensure_future(pump(proc.stdout, out))]
    if not merge_stderr:
        assert proc.stderr is not None
        readers.append(asyncio.ensure_future(pump(proc.stderr, err)))
    feeder = None
    if stdin is not None:
        assert proc.stdin is not None
        feeder = asyncio.ensure_future(feed(proc.stdin, stdin))
    waiter = asyncio.ensure_future(exited(proc))
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
        if proc.returncode is not None:
            forget_group(pgid)  # tracked on while background processes it left run
        for io_task in (*readers, feeder):
            if io_task is not None and io_task.done() and not io_task.cancelled():
                io_task.exception()  # retrieved: a read or write error just ends that stream early

    data = out.render()
    for note in notes:
        data = append_line(data, note)
    exit_code = None if timed_out else proc.returncode
    truncated = bool(out.omitted or err.omitted)
    return ProcessResult(tuple(argv), exit_code, data, timed_out, truncated, stderr=err.render())


def then(first: Callable[[], None] | None, second: Callable[[], None] | None) -> Callable[[], None] | None:
    """One `preexec_fn` that runs `first`, then `second` (either may be None)."""
    if first is None or second is None:
        return first or second

    def both() -> None:
        first()
        second()

    return both


def _format_seconds(seconds: float) -> str:
    return f"{seconds:g}"
