"""Adapter-managed processes (`ADAPTER_MANAGED`): the adapter starts them through its
`BridgeHandle`, and their lines and exits come back to it as ProcessOutput and
ProcessExited."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import NativeStartError
from .contract import ProcessExited, ProcessOutput
from .native import NativeProcess, to_bytes

if TYPE_CHECKING:
    from .server import Bridge

log = logging.getLogger("codecompanion_py.acp_bridge")


class ManagedProcess:
    """A process an ADAPTER_MANAGED adapter owns. It starts in the background; writes made
    before it is up are kept and sent once it is. Its lines and its exit reach the adapter
    as ProcessOutput and ProcessExited through `handle_adapter_message`."""

    def __init__(self, bridge: Bridge, name: str, argv: Sequence[str], cwd: str, tag: Any) -> None:
        self._bridge = bridge
        self.name = name
        self.argv = list(argv)
        self.cwd = cwd
        self.tag = tag
        self.native: NativeProcess | None = None
        self._early: list[bytes] = []
        self._closed = False
        bridge.managed.add(self)
        bridge.spawn(self._run())

    @property
    def pgid(self) -> int | None:
        return self.native.pgid if self.native is not None else None

    def write(self, data: Any) -> None:
        payload = to_bytes(data)
        if self.native is None:
            self._early.append(payload)
            return
        stdin = self.native.proc.stdin
        if stdin is None or stdin.is_closing():
            log.warning("%s: write to a process whose input is closed", self.name)
            return
        stdin.write(payload)

    def stop(self) -> None:
        self._closed = True
        if self.native is not None:
            self._bridge.spawn(self.native.stop())

    async def _run(self) -> None:
        bridge = self._bridge
        try:
            self.native = await bridge.start_native(self.argv, name=self.name, cwd=self.cwd)
        except NativeStartError as error:
            bridge.managed.discard(self)
            await bridge.adapter_message(ProcessExited(self, None, str(error)))
            return
        for payload in self._early:
            self.write(payload)
        self._early.clear()
        if self._closed:
            await self.native.stop()
        async for line in self.native.lines():
            await bridge.adapter_message(ProcessOutput(self, line))
        await self.native.finished()
        bridge.managed.discard(self)
        if not bridge.closing:
            await bridge.adapter_message(ProcessExited(self, self.native.returncode, self.native.describe_exit()))


class AdapterHandle:
    """The bridge's side of `BridgeHandle` (`adapter.bridge`)."""

    def __init__(self, bridge: Bridge) -> None:
        self._bridge = bridge
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def cwd(self) -> str:
        return self._bridge.cwd

    def start_process(
        self, argv: Sequence[str], *, name: str | None = None, cwd: str | None = None, tag: Any = None
    ) -> ManagedProcess:
        return ManagedProcess(self._bridge, name or self._bridge.adapter.title, argv, cwd or self._bridge.cwd, tag)

    def deliver(self, message: Any) -> None:
        """Hand `message` to `handle_adapter_message` (callable from any thread)."""
        loop = self._bridge.loop
        if loop is None:
            raise RuntimeError("the bridge is not running")
        loop.call_soon_threadsafe(self._bridge.spawn, self._bridge.adapter_message(message))
