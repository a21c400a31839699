"""An agent's process: started in its own process group, stopped as a group.

Agents are wrappers around wrappers (npm shims spawning native binaries, which spawn
shells), and some ignore end of input, so stopping one means signalling the whole group
and reaping the leader. stderr is the agent's free-form log: it goes to our log and its
last lines are kept for error messages, never parsed.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import signal
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from ..errors import ConfigError
from ..processes import KILL_GRACE, close_pipes, signal_group, start_in_group, terminate_group
from .jsonrpc import MAX_LINE

log = logging.getLogger("codecompanion_py.acp")

STDERR_LINES = 20
STDERR_LINE_BYTES = 2000  # of each line kept: the tail goes into messages the editor shows

_P = TypeVar("_P", bound="AgentProcess")


class AgentProcess:
    start_error: type[Exception] = ConfigError  # what a command that cannot start raises
    preexec: Callable[[], None] | None = None  # run in the child before exec

    def __init__(self, name: str, argv: Sequence[str], proc: asyncio.subprocess.Process) -> None:
        self.name = name
        self.argv = list(argv)
        self.proc = proc
        self.pgid = proc.pid  # start_in_group: the agent leads its own group
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        assert proc.stderr is not None
        self._stderr = asyncio.ensure_future(self._drain_stderr(proc.stderr))

    @classmethod
    async def start(
        cls: type[_P], name: str, argv: Sequence[str], *, cwd: str, env: Mapping[str, str], install_hint: str = ""
    ) -> _P:
        if not argv:
            raise cls.start_error(f"{name}: no command to start")
        try:
            proc = await start_in_group(
                argv,
                cwd=cwd,
                env=dict(env),
                limit=MAX_LINE,
                preexec_fn=cls.preexec,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except FileNotFoundError:
            hint = f"; {install_hint}" if install_hint else ""
            raise cls.start_error(f"{name}: the command `{argv[0]}` was not found on PATH{hint}") from None
        except PermissionError:
            raise cls.start_error(f"{name}: `{argv[0]}` is not executable") from None
        except OSError as error:
            raise cls.start_error(f"{name}: cannot run `{argv[0]}`: {error.strerror or error}") from None
        log.info("%s: started %s (pid %d)", name, " ".join(argv), proc.pid)
        return cls(name, argv, proc)

    @property
    def stdin(self) -> asyncio.StreamWriter:
        assert self.proc.stdin is not None
        return self.proc.stdin

    @property
    def stdout(self) -> asyncio.StreamReader:
        assert self.proc.stdout is not None
        return self.proc.stdout

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def describe_exit(self) -> str:
        """Why the agent is gone, with the end of its stderr, for the user."""
        code = self.proc.returncode
        what = (
            "is not running"
            if code is None
            else (f"was killed by signal {-code}" if code < 0 else f"exited with code {code}")
        )
        tail = "\n".join(self.stderr_tail)
        return f"{self.name} {what}" + (f"; its last output:\n{tail}" if tail else "")

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        while True:
            try:
                line = await stream.readline()
            except ValueError:  # an enormous line: its start was dropped, keep going
                continue
            except (ConnectionError, OSError):
                return
            if not line:
                return
            text = line[:STDERR_LINE_BYTES].decode("utf-8", errors="replace").rstrip()
            if len(line) > STDERR_LINE_BYTES:
                text += " […]"
            if text:
                self.stderr_tail.append(text)
                log.debug("%s stderr: %s", self.name, text)

    async def stop(self, grace: float = KILL_GRACE) -> None:
        """Close its input, signal the group (TERM, then KILL after `grace`) and reap the leader."""
        with contextlib.suppress(Exception):
            self.stdin.close()
        try:
            await terminate_group(self.pgid, grace)
        finally:
            if self.proc.returncode is None:
                signal_group(self.pgid, signal.SIGKILL)
            with contextlib.suppress(asyncio.TimeoutError, ProcessLookupError):
                await asyncio.wait_for(asyncio.shield(self.proc.wait()), timeout=grace)
            self._stderr.cancel()
            close_pipes(self.proc)  # pipes a stray process may hold
            log.info("%s: stopped (pid %d, code %s)", self.name, self.pgid, self.proc.returncode)

    def kill_now(self) -> None:
        """For interpreter exit, when there is no loop left to wait on."""
        if self.proc.returncode is None:
            signal_group(self.pgid, signal.SIGKILL)
