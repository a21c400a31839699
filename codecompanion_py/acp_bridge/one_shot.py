"""One-shot runs: a Reaction's `run` runs with a `OneShotRun` as its context."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import NativeStartError
from .contract import Message, RunResult
from .native import NativeProcess

if TYPE_CHECKING:
    from .server import Bridge


class OneShotRun:
    """The `OneShotContext` of one Reaction's run: its processes are the bridge's (stopped
    with it), their lines go through `translate_inbound`."""

    def __init__(self, bridge: Bridge, request_id: Any, method: str) -> None:
        self._bridge = bridge
        self.request_id = request_id
        self.method = method
        self.cancelled = False
        self.process: NativeProcess | None = None

    @property
    def state(self) -> Any:
        return self._bridge.state

    @state.setter
    def state(self, value: Any) -> None:
        self._bridge.state = value

    async def emit(self, messages: Iterable[Message]) -> None:
        await self._bridge.emit(list(messages))

    async def run(
        self, argv: Sequence[str], *, stdin: Any = None, cwd: str | None = None, keep_stdin: bool = False
    ) -> RunResult:
        """Start `argv`, write `stdin` (then close it unless `keep_stdin`), feed each output
        line to `translate_inbound`, and return once it has exited."""
        bridge = self._bridge
        if self.cancelled:
            return RunResult(None, True, f"{bridge.adapter.title} was cancelled before it started", started=False)
        try:
            proc = await bridge.start_native(argv, cwd=cwd)
        except NativeStartError as error:
            return RunResult(None, False, str(error), started=False)
        self.process = proc
        bridge.one_shots[proc] = None
        try:
            if stdin is not None:
                with contextlib.suppress(ConnectionError, OSError):
                    await proc.write(stdin)
            if not keep_stdin:
                proc.close_stdin()
            if self.cancelled:
                bridge.spawn(proc.stop())
            async for line in proc.lines():
                await bridge.inbound(line, proc)
            await proc.finished()
            if proc.returncode is None:  # closed its output but lingers
                await proc.stop()
        except asyncio.CancelledError:
            await proc.stop()
            raise
        finally:
            bridge.one_shots.pop(proc, None)
        return RunResult(proc.returncode, self.cancelled, proc.describe_exit())

    def cancel(self) -> None:
        """Stop the running process's group (now, without waiting)."""
        self.cancelled = True
        if self.process is not None and self.process.returncode is None:
            self._bridge.spawn(self.process.stop())
