"""Python to Lua: fire-and-forget calls made safely from the engine thread.

pynvim is not thread-safe; `nvim.async_call` is the one door from another thread. Each
call schedules a notification (`exec_lua(..., async_=True)`), so the engine never waits
for Neovim.
"""

from __future__ import annotations

from typing import Any

from ..ui.ops import Op, encode

_APPLY = 'require("codecompanion_py.chat").apply(...)'
_NOTIFY = (
    'vim.notify(select(1, ...), vim.log.levels[select(2, ...)] or vim.log.levels.ERROR, {title = "CodeCompanion"})'
)


class NvimBridge:
    def __init__(self, nvim: Any) -> None:
        self._nvim = nvim

    def render(self, chat_id: Any, batch: list[Op]) -> None:
        self._nvim.async_call(self._exec, _APPLY, chat_id, encode(batch))

    def notify(self, message: str, level: str = "ERROR") -> None:
        self._nvim.async_call(self._exec, _NOTIFY, message, level)

    def _exec(self, code: str, *args: Any) -> None:
        self._nvim.exec_lua(code, *args, async_=True)
