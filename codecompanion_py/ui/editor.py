"""Questions the engine asks the editor, answered later by an `editor.reply` notification.

The questions are the methods of `lua/codecompanion_py/editor.lua` (its `methods` table);
`editor_port.EditorMethod` lists them, and a test holds the two lists equal.

A question travels as a `call` op through the chat's render sink (so it arrives after
everything rendered before it); Lua answers with `{id, result}` or `{id, error}`. If the
turn is stopped while waiting, the question is forgotten and a late answer is ignored.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping
from typing import Any

import msgspec

from ..editor_port import EditorMethod
from ..errors import ToolError
from .ops import Call
from .sink import Sink


class CallArgs(msgspec.Struct, frozen=True, kw_only=True):
    """A method's arguments as the engine builds them; `args()` is the table Lua gets."""

    def args(self) -> dict[str, Any]:
        built: dict[str, Any] = msgspec.to_builtins(self)
        return built


class ApprovalOption(msgspec.Struct, frozen=True, kw_only=True):
    label: str
    choice: str


class Approval(CallArgs, frozen=True, kw_only=True):
    """`approve`: may this go on? An agent offers its own `options`; without them the user
    picks Accept, `always` (when it is offered) or Reject. Cancel is always there."""

    prompt: str
    detail: str | None = None
    must_ask: str | None = None  # why it is asked even in YOLO mode
    options: list[ApprovalOption] = []


class SessionPre(CallArgs, frozen=True, kw_only=True):
    """`acp.session_pre`: the MCP servers an agent is about to get, for the user's handlers
    of `User CodeCompanionACPSessionPre` to change."""

    id: Any
    agent_capabilities: dict[str, Any] | None = None
    mcp_servers: list[dict[str, Any]] = []


class BufferReload(CallArgs, frozen=True, kw_only=True):
    """`buffer.reload`: files an agent changed on disk."""

    paths: list[str]


class PendingCalls:
    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._waiting: dict[float, asyncio.Future[Any]] = {}

    def open(self) -> tuple[int, asyncio.Future[Any]]:
        call_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[call_id] = future
        future.add_done_callback(lambda _: self._waiting.pop(call_id, None))
        return call_id, future

    def settle(self, call_id: Any, result: Any = None, error: Any = None) -> None:
        """Lua's answer to call `call_id`: whatever id it sent back (one not ours finds nothing)."""
        future = self._waiting.pop(call_id, None) if isinstance(call_id, (int, float)) else None
        if future is None or future.done():
            return
        if error:
            future.set_exception(ToolError(str(error)))
        else:
            future.set_result(result)


class SinkEditor:
    """The orchestrator's `Editor`, for a chat in Neovim."""

    reviews_edits = True  # Neovim reviews a written edit (lua/codecompanion_py/diff.lua)

    def __init__(self, sink: Sink, pending: PendingCalls) -> None:
        self._sink = sink
        self._pending = pending

    async def call(self, method: EditorMethod, args: Mapping[str, Any]) -> Any:
        call_id, future = self._pending.open()
        self._sink.push(Call(id=call_id, method=method, args=dict(args)))
        return await future
