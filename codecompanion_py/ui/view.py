"""The one mapping from canonical events to UI ops, shared by every kind of chat.

An HTTP chat and an agent chat both hand their events here, so a token, a tool result or
a plan looks the same in the buffer whichever backend produced it. Events that only end
or account for a stream (usage, final, error) are the session's business and show
nothing here.
"""

from __future__ import annotations

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
from . import ops
from .sink import Sink


def assert_never(value: NoReturn) -> NoReturn:  # typing.assert_never is 3.11+
    raise AssertionError(f"unhandled event {value!r}")


class EventView:
    """Shows a chat's events on its sink; also the door for autocmds (`fire`)."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self._agent_tools: set[str] = set()  # ids of tool calls an agent runs itself

    def show(self, event: StreamEvent) -> None:
        push = self.sink.push
        if isinstance(event, TokenEvent):
            push(ops.Text(text=event.content))
        elif isinstance(event, ReasoningEvent):
            push(ops.Reasoning(text=event.content))
        elif isinstance(event, ToolCallEvent):
            if event.is_final:  # fragments are not worth a redraw: the call shows whole
                push(ops.ToolCall(id=event.id, name=event.name, arguments=event.arguments))
        elif isinstance(event, ToolResultEvent):
            if event.tool_call_id in self._agent_tools:  # the agent's tool line says the status
                if event.content:
                    push(ops.Show(text=event.content))
            else:
                push(ops.ToolOutput(id=event.tool_call_id, name=event.name, status=event.status, text=event.content))
        elif isinstance(event, ToolProgressEvent):
            self._agent_tools.add(event.id)
            push(ops.AgentTool(id=event.id, title=event.title, status=event.status, locations=event.locations))
        elif isinstance(event, PlanEvent):
            push(ops.Plan(entries=event.entries))
        elif isinstance(event, NoticeEvent):
            push(ops.Show(text=event.text, title=event.title))
        elif isinstance(event, (UsageEvent, FinalEvent, ErrorEvent)):
            pass
        else:
            assert_never(event)

    def fire(self, event: str, data: Mapping[str, Any] | None = None) -> None:
        """`User CodeCompanion<event>` in the editor, in order with what was shown."""
        self.sink.push(ops.fire(event, data))

    def push(self, op: ops.Op) -> None:
        self.sink.push(op)
