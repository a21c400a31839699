"""The one mapping from canonical events to UI ops, shared by every kind of chat.

An HTTP chat and an agent chat both hand their events here, so a token, a tool result or
a plan looks the same in the buffer whichever backend produced it. Tool output, agent tool
titles and notices are shown `printable()`, without terminal escapes or control characters
(and an agent's tool title on one line: Lua rewrites that block line by line). Events
that only end or account for a stream (usage, final, error) are the session's business
and show nothing here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NoReturn

from ..events import (
    ErrorEvent,
    FinalEvent,
    NoticeEvent,
    PlanEvent,
    ReasoningEvent,
    StreamEvent,
    TokenEvent,
    ToolCallEvent,
    ToolProgressEvent,
    ToolResultEvent,
    UsageEvent,
)
from ..processes import strip_ansi
from ..scrubber import KNOWN
from . import ops
from .sink import Sink

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Text from outside (a tool's output, a file's lines, an agent's words) as the chat
    shows it: without terminal escapes (colours, titles, clipboard writes, cursor moves)
    and other control characters, which a buffer would show as `^[[31m` noise; a carriage
    return ends a line."""
    if _CONTROLS.search(text) is None:
        return text
    return _CONTROLS.sub("", strip_ansi(text).replace("\r\n", "\n").replace("\r", "\n"))


def assert_never(value: NoReturn) -> NoReturn:  # typing.assert_never is 3.11+
    raise AssertionError(f"unhandled event {value!r}")


class EventView:
    """Shows a chat's events on its sink; also the door for autocmds (`fire`)."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self._agent_tools: set[str] = set()  # ids of tool calls an agent runs itself
        self._pending = False  # a retry's line is shown, which the reply takes away

    def show(self, event: StreamEvent) -> None:
        push = self.sink.push
        if self._pending and event.__class__ is not NoticeEvent:
            self._pending = False
            if event.__class__ is not ErrorEvent:  # the last retry stays beside the error it ended in
                push(ops.Pending())
        if isinstance(event, TokenEvent):  # a key the provider echoes, when it comes in one piece
            push(ops.Text(text=KNOWN.without_known(event.content)))
        elif isinstance(event, ReasoningEvent):
            push(ops.Reasoning(text=KNOWN.without_known(event.content)))
        elif isinstance(event, ToolCallEvent):
            if event.is_final:  # fragments are not worth a redraw: the call shows whole
                push(ops.ShowToolCall(id=event.id, name=event.name, arguments=event.arguments))
        elif isinstance(event, ToolResultEvent):
            text = printable(event.content)
            if event.tool_call_id in self._agent_tools:  # the agent's tool line says the status
                if text:
                    push(ops.Show(text=text))
            else:
                push(ops.ToolOutput(id=event.tool_call_id, name=event.name, status=event.status, text=text))
        elif isinstance(event, ToolProgressEvent):
            self._agent_tools.add(event.id)
            title = printable(event.title).replace("\n", " ")
            push(ops.AgentTool(id=event.id, title=title, status=event.status, locations=event.locations))
        elif isinstance(event, PlanEvent):
            push(ops.Plan(entries=event.entries))
        elif isinstance(event, NoticeEvent):
            if event.until_reply:
                self._pending = True
                push(ops.Pending(text=printable(event.text).replace("\n", " ")))
            else:
                push(ops.Show(text=printable(event.text), title=event.title))
        elif isinstance(event, (UsageEvent, FinalEvent, ErrorEvent)):
            pass
        else:
            assert_never(event)

    def fire(self, event: str, data: Mapping[str, Any] | None = None) -> None:
        """`User CodeCompanion<event>` in the editor, in order with what was shown."""
        self.sink.push(ops.fire(event, data))

    def push(self, op: ops.Op) -> None:
        self.sink.push(op)
