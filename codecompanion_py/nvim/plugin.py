"""The remote-plugin class: two entry points that hand work to the engine and return.

`CodeCompanionPyNotify(method, payload)` is asynchronous (a notification from Lua);
`CodeCompanionPyRequest(method, payload)` answers synchronously (health, adapter lists).
"""

from __future__ import annotations

from typing import Any

import pynvim

from ..engine import Engine
from ..scrubber import scrub_logs
from .channel import NvimChannel


@pynvim.plugin
class CodeCompanionPlugin:
    def __init__(self, nvim: pynvim.Nvim) -> None:
        self._nvim = nvim
        self._engine: Engine | None = None

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            scrub_logs()
            self._engine = Engine(NvimChannel(self._nvim), loop=self._nvim.loop)
        return self._engine

    @pynvim.function("CodeCompanionPyNotify", sync=False)
    def notify(self, args: list[Any]) -> None:
        method, payload = args[0], (args[1] if len(args) > 1 else {})
        self.engine.dispatch(method, payload)

    @pynvim.function("CodeCompanionPyRequest", sync=True)
    def request(self, args: list[Any]) -> Any:
        method, payload = args[0], (args[1] if len(args) > 1 else {})
        return self.engine.request(method, payload)

    @pynvim.shutdown_hook
    def shutdown(self) -> None:
        if self._engine is not None:
            self._engine.shutdown()
