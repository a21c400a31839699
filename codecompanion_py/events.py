"""The canonical stream events: the one vocabulary between backends and the UI.

HTTP adapters (through the stream normalizer), the tool orchestrator and ACP agents
(through `chat.acp.updates`) all produce these; the chat turns them into UI ops with one
mapper (`ui.view.EventView`), so the chat buffer never knows which backend ran. Each is a
frozen msgspec Struct tagged by `type`, so `msgspec.json.encode(event)` is the NDJSON line
the command line prints.

Who emits what:

- `TokenEvent`, `ReasoningEvent`: the reply as it streams (providers and agents).
- `ToolCallEvent`: a tool call the LLM asks us to run (providers).
- `ToolResultEvent`: what a tool call produced, shown under it (our orchestrator, and an
  agent's own tool call once it completed or failed).
- `ToolProgressEvent`: a tool call an agent runs itself, reported as it goes.
- `PlanEvent`: an agent's plan, the whole list each time.
- `NoticeEvent`: something said beside the reply (a restarted agent, a replayed message).
- `UsageEvent`, `FinalEvent`, `ErrorEvent`: accounting and the end of a stream.
"""

from __future__ import annotations

from typing import Any, Literal, Union

import msgspec

from .messages import Message, Usage


class _Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", omit_defaults=True):
    pass


class TokenEvent(_Event, tag="token", frozen=True):
    """A piece of the assistant's visible text; `index` counts text events in order."""

    content: str
    index: int = 0


class ReasoningEvent(_Event, tag="reasoning", frozen=True):
    """A piece of the model's visible reasoning."""

    content: str
    index: int = 0


class ToolCallEvent(_Event, tag="tool_call", frozen=True):
    """A tool call as it streams. Fragments have `is_final=False` and carry `args_fragment`;
    the last event for a call has `is_final=True` and the parsed `arguments`."""

    id: str
    name: str
    args_fragment: str = ""
    is_final: bool = False
    arguments: dict[str, Any] | None = None
    index: int = 0


class ToolResultEvent(_Event, tag="tool_result", frozen=True):
    """The output of a tool call, as the user is shown it."""

    tool_call_id: str
    name: str
    content: str
    status: str = "success"
    """success, error, rejected or cancelled (ours); completed or failed (an agent's)."""


ToolProgress = Literal["pending", "in_progress", "completed", "failed"]


class ToolLocation(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A file an agent's tool call touches."""

    path: str
    line: int | None = None


class ToolProgressEvent(_Event, tag="tool_progress", frozen=True):
    """A tool call that the backend runs itself (an ACP agent), sent again on every change:
    the same `id` updates the same line in the chat."""

    id: str
    title: str
    status: ToolProgress = "pending"
    kind: str | None = None
    """The agent's category (read, edit, delete, move, search, execute, fetch, think...)."""
    locations: tuple[ToolLocation, ...] = ()


class PlanEntry(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    content: str
    status: str = "pending"
    """pending, in_progress or completed."""


class PlanEvent(_Event, tag="plan", frozen=True):
    """The backend's plan for the turn; each event replaces the whole plan."""

    entries: tuple[PlanEntry, ...] = ()


class NoticeEvent(_Event, tag="notice", frozen=True):
    """Something to show beside the reply, not part of it."""

    text: str
    title: str | None = None
    until_reply: bool = False
    """Shown only until the reply starts (a retry's wait), each in place of the one before."""


class UsageEvent(_Event, tag="usage", frozen=True):
    usage: Usage


class FinalEvent(_Event, tag="final", frozen=True):
    """The stream is over; `message` is the whole assistant message."""

    message: Message
    finish_reason: str = "stop"
    usage: Usage | None = None

    @property
    def total_tokens(self) -> int | None:
        return self.usage.total_tokens if self.usage else None


class ErrorEvent(_Event, tag="error", frozen=True):
    """The stream failed; `message` is what the user is shown."""

    message: str
    kind: str = "error"
    status: int | None = None


StreamEvent = Union[
    TokenEvent,
    ReasoningEvent,
    ToolCallEvent,
    ToolResultEvent,
    ToolProgressEvent,
    PlanEvent,
    NoticeEvent,
    UsageEvent,
    FinalEvent,
    ErrorEvent,
]

__all__ = [
    "ErrorEvent",
    "FinalEvent",
    "NoticeEvent",
    "PlanEntry",
    "PlanEvent",
    "ReasoningEvent",
    "StreamEvent",
    "TokenEvent",
    "ToolCallEvent",
    "ToolLocation",
    "ToolProgress",
    "ToolProgressEvent",
    "ToolResultEvent",
    "UsageEvent",
]
