"""Python to Lua: fire-and-forget calls from the engine, which runs on pynvim's own loop.

pynvim is not thread-safe, so the engine shares its loop (`Engine(channel, loop=nvim.loop)`)
and each call here goes out on Neovim's channel at once, as a notification
(`exec_lua(..., async_=True)`): the engine never waits for Neovim, and no thread hop
delays a render.
"""

from __future__ import annotations

from typing import Any

from ..ui.ops import Op, encode

_APPLY = 'require("codecompanion_py.chat").apply(...)'
_NOTIFY = (
    'vim.notify(select(1, ...), vim.log.levels[select(2, ...)] or vim.log.levels.ERROR, {title = "CodeCompanion"})'
)


class NvimChannel:
    def __init__(self, nvim: Any) -> None:
        self._nvim = nvim

    def render(self, chat_id: Any, batch: list[Op]) -> None:
        self._nvim.exec_lua(_APPLY, chat_id, encode(batch), async_=True)

    def notify(self, message: str, level: str = "ERROR") -> None:
        self._nvim.exec_lua(_NOTIFY, message, level, async_=True)
