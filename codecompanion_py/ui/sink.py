"""Coalesces a chat's UI ops into batches, so Neovim gets one RPC per frame, not per token.

Text and reasoning ops are merged while they arrive and flushed at most every `interval`
seconds; any other op (a header, an autocmd, the end of a turn) flushes at once, after
the text before it, so order is kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from .ops import Op, Reasoning, Text

FRAME_INTERVAL = 1 / 30


class Sink(Protocol):
    """Where a chat's ops go: a `RenderSink` in the editor, a list in tests."""

    def push(self, op: Op) -> None: ...


class RenderSink:
    def __init__(
        self, send: Callable[[list[Op]], None], loop: asyncio.AbstractEventLoop, *, interval: float = FRAME_INTERVAL
    ) -> None:
        self._send = send
        self._loop = loop
        self._interval = interval
        self._ops: list[Op] = []
        self._pieces: list[str] = []  # text of the trailing mergeable op, joined on flush
        self._kind: type[Text] | type[Reasoning] | None = None
        self._timer: asyncio.TimerHandle | None = None

    def push(self, op: Op) -> None:
        if isinstance(op, (Text, Reasoning)):
            kind = type(op)
            if kind is not self._kind:
                self._close_piece()
                self._kind = kind
            self._pieces.append(op.text)
            if self._timer is None:
                self._timer = self._loop.call_later(self._interval, self.flush)
            return
        self._close_piece()
        self._ops.append(op)
        self.flush()

    def _close_piece(self) -> None:
        if self._kind is not None:
            self._ops.append(self._kind(text="".join(self._pieces)))
            self._pieces = []
            self._kind = None

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._close_piece()
        if self._ops:
            ops, self._ops = self._ops, []
            self._send(ops)
