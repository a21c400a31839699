"""Coalesces a chat's UI ops into batches, so Neovim gets one RPC per frame, not per token.

Text and reasoning ops are merged while they arrive and flushed at most every `interval`
seconds. A flood (more than FLOOD_CHARS in one frame: a replay, a model far faster than
anyone reads) stretches that frame to FLOOD_INTERVAL: each batch costs Neovim a redraw and
a tree-sitter re-parse that grow with the chat (and with the line, for a reply on one long
line), so at 30 a second they would take the editor's time from the user. A model streaming
at a few thousand tokens a second stays under FLOOD_CHARS and is drawn at 30 frames a
second. Any other op (a header, an autocmd, the end of a turn) is sent, after the text
before it so order is kept, as soon as the engine's loop has finished its current step: the
ops of one step (the reply's last text, RequestFinished and the end of the turn; a chat's
adapter, settings and events) reach Neovim as one batch, applied before it redraws.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from .ops import Op, Reasoning, Text

FRAME_INTERVAL = 1 / 30
FLOOD_INTERVAL = 0.1
FLOOD_CHARS = 2_000


class Channel(Protocol):
    """The editor as the engine reaches it, from the engine's loop, without waiting
    (`nvim.channel.NvimChannel` in Neovim, a recorder in tests)."""

    def render(self, chat_id: Any, batch: list[Op]) -> None: ...
    def notify(self, message: str, level: str = "ERROR") -> None: ...


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
        self._frame_start = 0.0  # when the frame's first text came
        self._frame_chars = 0  # text merged in this frame
        self._soon = False  # a flush is scheduled for the end of this loop step

    def push(self, op: Op) -> None:
        if isinstance(op, (Text, Reasoning)):
            kind = type(op)
            if kind is not self._kind:
                self._close_piece()
                self._kind = kind
            self._pieces.append(op.text)
            before, self._frame_chars = self._frame_chars, self._frame_chars + len(op.text)
            if self._timer is None:
                self._frame_start = self._loop.time()
                self._timer = self._loop.call_at(self._frame_start + self._interval, self.flush)
            if before <= FLOOD_CHARS < self._frame_chars and self._interval < FLOOD_INTERVAL:
                self._timer.cancel()
                self._timer = self._loop.call_at(self._frame_start + FLOOD_INTERVAL, self.flush)
            return
        self._close_piece()
        self._ops.append(op)
        if not self._soon:
            self._soon = True
            self._loop.call_soon(self._end_of_step)

    def _end_of_step(self) -> None:
        """The ops go; text that came after the last of them goes too, unless its frame is a
        flood: then it keeps to the flood's pace (its first frame included)."""
        self._soon = False
        if self._kind is not None and self._frame_chars > FLOOD_CHARS:
            if self._ops:
                ops, self._ops = self._ops, []
                self._send(ops)
            return
        self.flush()

    def _close_piece(self) -> None:
        if self._kind is not None:
            self._ops.append(self._kind(text="".join(self._pieces)))
            self._pieces = []
            self._kind = None

    def flush(self) -> None:
        self._soon = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._frame_chars = 0
        self._close_piece()
        if self._ops:
            ops, self._ops = self._ops, []
            self._send(ops)
