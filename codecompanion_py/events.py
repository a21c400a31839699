"""The canonical stream events: the one vocabulary between backends and the UI.

HTTP adapters and ACP agents both produce these; the chat and the renderer consume only
these. Each is a frozen msgspec Struct tagged by `type`, so `msgspec.json.encode(event)`
is the NDJSON line the command line prints.
"""

from __future__ import annotations

from typing import Any, Union

import msgspec

from .messages import Message, Usage


class _Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", omit_defaults=True):
    pass


class TokenEvent(_Event, tag="token"):
    """A piece of the assistant's visible text; `index` counts text events in order."""

    content: str
    index: int = 0


class ReasoningEvent(_Event, tag="reasoning"):
    """A piece of the model's visible reasoning."""

    content: str
    index: int = 0


class ToolCallEvent(_Event, tag="tool_call"):
    """A tool call as it streams. Fragments have `is_final=False` and carry `args_fragment`;
    the last event for a call has `is_final=True` and the parsed `arguments`."""

    id: str
    name: str
    args_fragment: str = ""
    is_final: bool = False
    arguments: dict[str, Any] | None = None
    index: int = 0


class ToolResultEvent(_Event, tag="tool_result"):
    tool_call_id: str
    name: str
    content: str
    status: str = "success"


class UsageEvent(_Event, tag="usage"):
    usage: Usage


class FinalEvent(_Event, tag="final"):
    """The stream is over; `message` is the whole assistant message."""

    message: Message
    finish_reason: str = "stop"
    usage: Usage | None = None

    @property
    def total_tokens(self) -> int | None:
        return self.usage.total_tokens if self.usage else None


class ErrorEvent(_Event, tag="error"):
    """The stream failed; `message` is what the user is shown."""

    message: str
    kind: str = "error"
    status: int | None = None


StreamEvent = Union[TokenEvent, ReasoningEvent, ToolCallEvent, ToolResultEvent, UsageEvent, FinalEvent, ErrorEvent]

__all__ = [
    "ErrorEvent",
    "FinalEvent",
    "ReasoningEvent",
    "StreamEvent",
    "TokenEvent",
    "ToolCallEvent",
    "ToolResultEvent",
    "UsageEvent",
]
