"""Questions the engine asks the editor, answered later by an `editor.reply` notification.

A question travels as a `call` op through the chat's render sink (so it arrives after
everything rendered before it); Lua answers with `{id, result}` or `{id, error}`. If the
turn is stopped while waiting, the question is forgotten and a late answer is ignored.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping
from typing import Any

from ..errors import ToolError
from .ops import Call
from .sink import Sink


class PendingCalls:
    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}

    def open(self) -> tuple[int, asyncio.Future[Any]]:
        call_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[call_id] = future
        future.add_done_callback(lambda _: self._waiting.pop(call_id, None))
        return call_id, future

    def settle(self, reply: Mapping[str, Any]) -> None:
        # the id is whatever Lua sent back: one that is not ours finds nothing
        future = self._waiting.pop(reply.get("id"), None)  # type: ignore[arg-type]
        if future is None or future.done():
            return
        if reply.get("error"):
            future.set_exception(ToolError(str(reply["error"])))
        else:
            future.set_result(reply.get("result"))


class SinkEditor:
    """The orchestrator's `Editor`, for a chat in Neovim."""

    reviews_edits = True  # Neovim reviews a written edit (lua/codecompanion_py/diff.lua)

    def __init__(self, sink: Sink, pending: PendingCalls) -> None:
        self._sink = sink
        self._pending = pending

    async def call(self, method: str, args: Mapping[str, Any]) -> Any:
        call_id, future = self._pending.open()
        self._sink.push(Call(id=call_id, method=method, args=dict(args)))
        return await future
