"""A native CLI's process as the bridge runs it: an AgentProcess (own process group,
stderr tail, stopped as a group) whose stdout is read as lines. On Linux the child also
gets SIGKILL if the bridge dies without stopping it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

from ..acp.agent_process import AgentProcess
from ..errors import NativeStartError
from ..processes import die_with_parent

log = logging.getLogger("codecompanion_py.acp_bridge")

STOP_GRACE = 1.0
"""Seconds between SIGTERM and SIGKILL: short, since the bridge itself may be getting its
own SIGKILL two seconds after its SIGTERM."""


def to_bytes(data: Any) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode()
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    if isinstance(data, (list, tuple)):
        return b"".join(to_bytes(part) for part in data)
    raise TypeError(f"cannot write {type(data).__name__} to a process")


class NativeProcess(AgentProcess):
    """An AgentProcess that dies with the bridge (Linux), with line reading and writing."""

    start_error = NativeStartError
    preexec = die_with_parent()

    def __init__(self, name: str, argv: Sequence[str], proc: asyncio.subprocess.Process) -> None:
        super().__init__(name, argv, proc)
        self.stopping = False

    async def write(self, data: Any) -> None:
        """Write to its stdin; ConnectionError when it is gone."""
        stdin = self.proc.stdin
        if stdin is None or stdin.is_closing():
            raise ConnectionResetError(f"{self.name}: its input is closed")
        stdin.write(to_bytes(data))
        await stdin.drain()

    def close_stdin(self) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(Exception):
                self.proc.stdin.close()

    async def lines(self) -> AsyncIterator[str]:
        """Its stdout, line by line (without the newline), until end of output."""
        stream = self.proc.stdout
        assert stream is not None
        while True:
            try:
                line = await stream.readline()
            except ValueError:  # longer than the limit: dropped
                log.warning("%s: skipped an output line longer than the limit", self.name)
                continue
            except (ConnectionError, OSError):
                return
            if not line:
                return
            yield line.decode("utf-8", errors="replace").rstrip("\r\n")

    async def finished(self, timeout: float = 2.0) -> int | None:
        """Its exit code once it has exited and its stderr is read (None if still running)."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.proc.wait()), timeout=timeout)
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(self._stderr), timeout=0.5)
        return self.proc.returncode

    async def stop(self, grace: float = STOP_GRACE) -> None:
        self.stopping = True
        await super().stop(grace)
