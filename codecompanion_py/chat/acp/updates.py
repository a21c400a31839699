"""An agent's `session/update` notifications, translated into canonical events.

Message chunks become `TokenEvent`, thoughts `ReasoningEvent`, each tool call a
`ToolProgressEvent` sent again on every update (and, once it completed or failed, a
`ToolResultEvent` with what it produced: a diff, terminal output, text), plans a
`PlanEvent`, replayed user messages a `NoticeEvent`. Updates that change the session
rather than the reply (commands, modes, options, title, usage) go into `AgentState`, and
the `Translation` says what changed so the session can tell the editor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...events import (
    NoticeEvent,
    PlanEntry,
    PlanEvent,
    ReasoningEvent,
    StreamEvent,
    TokenEvent,
    ToolLocation,
    ToolProgress,
    ToolProgressEvent,
    ToolResultEvent,
)
from ...tools.edits import unified_diff
from .state import AgentState

# Updates that belong to a turn's reply; sent outside a turn they are dropped.
REPLY_UPDATES = frozenset(
    ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk", "tool_call", "tool_call_update", "plan")
)
_STATUSES = frozenset(("pending", "in_progress", "completed", "failed"))


@dataclass
class Translation:
    events: list[StreamEvent] = field(default_factory=list)
    text: str = ""
    """Reply text in this update, for the canonical history."""
    commands_changed: bool = False
    options_changed: bool = False
    edited_paths: tuple[str, ...] = ()
    """Files an agent's completed edit touched: loaded buffers must be re-read."""


class AgentUpdates:
    def __init__(
        self, state: AgentState, *, relative: Callable[[str], str], terminal_output: Callable[[str], str | None]
    ) -> None:
        self.state = state
        self._relative = relative
        self._terminal_output = terminal_output
        self.tool_calls: dict[str, dict[str, Any]] = {}  # merged updates by toolCallId
        self.shown: dict[str, str] = {}  # content already shown, for an approval, by toolCallId
        self._finished: set[str] = set()

    def translate(self, update: Mapping[str, Any]) -> Translation:
        kind = update.get("sessionUpdate")
        out = Translation()
        if kind == "agent_message_chunk":
            out.text = content_text(update.get("content"))
            out.events.append(TokenEvent(content=out.text))
        elif kind == "agent_thought_chunk":
            out.events.append(ReasoningEvent(content=content_text(update.get("content"))))
        elif kind == "user_message_chunk":  # the history replayed by session/load
            out.events.append(NoticeEvent(title="**Earlier, you wrote**", text=content_text(update.get("content"))))
        elif kind in ("tool_call", "tool_call_update"):
            self._tool_call(update, created=kind == "tool_call", out=out)
        elif kind == "plan":
            entries = [e for e in update.get("entries") or [] if isinstance(e, Mapping)]
            out.events.append(
                PlanEvent(
                    entries=tuple(
                        PlanEntry(content=str(e.get("content", "")), status=str(e.get("status") or "pending"))
                        for e in entries
                    )
                )
            )
        elif kind == "available_commands_update":
            self.state.set_commands(update.get("availableCommands"))
            out.commands_changed = True
        elif kind == "current_mode_update":
            self.state.modes["currentModeId"] = update.get("currentModeId")
        elif kind == "config_option_update":
            out.options_changed = self.state.set_config_options(update.get("configOptions"))
        elif kind == "session_info_update":
            if isinstance(update.get("title"), str):
                self.state.title = update["title"]
        elif kind == "usage_update":
            self.state.usage = {k: v for k, v in update.items() if k != "sessionUpdate"}
        return out

    def _tool_call(self, update: Mapping[str, Any], *, created: bool, out: Translation) -> None:
        call_id = str(update.get("toolCallId") or "")
        call = self.tool_calls.setdefault(call_id, {"toolCallId": call_id})
        if created:
            call.clear()
            call["toolCallId"] = call_id
        # a partial update: fields present replace; `content` replaces the whole list
        call.update({k: v for k, v in update.items() if k != "sessionUpdate" and v is not None})
        status: ToolProgress = call["status"] if call.get("status") in _STATUSES else "pending"
        out.events.append(
            ToolProgressEvent(
                id=call_id,
                title=str(call.get("title") or call.get("kind") or "tool"),
                status=status,
                kind=str(call["kind"]) if call.get("kind") else None,
                locations=_locations(call),
            )
        )
        if status in ("completed", "failed") and call_id not in self._finished:
            self._finished.add(call_id)
            content = self.tool_content(call)
            if content == self.shown.get(call_id):  # the diff the user approved: once is enough
                content = ""
            out.events.append(
                ToolResultEvent(
                    tool_call_id=call_id, name=str(call.get("title") or "tool"), content=content, status=status
                )
            )
            if status == "completed" and call.get("kind") in ("edit", "delete", "move"):
                out.edited_paths = _paths(call)

    def title_of(self, tool: Mapping[str, Any]) -> str:
        known = self.tool_calls.get(str(tool.get("toolCallId")), {})
        return str(tool.get("title") or known.get("title") or "use a tool")

    def tool_content(self, call: Mapping[str, Any]) -> str:
        """What a tool call shows: its diffs, terminal output and text, one after another."""
        parts: list[str] = []
        for item in call.get("content") or []:
            if not isinstance(item, Mapping):
                continue
            if item.get("type") == "diff":
                parts.append(
                    unified_diff(
                        self._relative(str(item.get("path", ""))), item.get("oldText") or "", item.get("newText") or ""
                    )
                )
            elif item.get("type") == "terminal":
                parts.append(self._terminal_output(str(item.get("terminalId"))) or "")
            elif item.get("type") == "content":
                parts.append(content_text(item.get("content")))
        return "\n".join(p.rstrip("\n") for p in parts if p)


def _locations(call: Mapping[str, Any]) -> tuple[ToolLocation, ...]:
    return tuple(
        ToolLocation(path=str(loc["path"]), line=loc["line"] if isinstance(loc.get("line"), int) else None)
        for loc in call.get("locations") or []
        if isinstance(loc, Mapping) and loc.get("path")
    )


def _paths(call: Mapping[str, Any]) -> tuple[str, ...]:
    paths = {loc.get("path") for loc in call.get("locations") or [] if isinstance(loc, Mapping)}
    paths |= {c.get("path") for c in call.get("content") or [] if isinstance(c, Mapping)}
    return tuple(sorted(p for p in paths if isinstance(p, str)))


def content_text(content: Any) -> str:
    """The text of a content block; other kinds shown by what they are."""
    if not isinstance(content, Mapping):
        return ""
    kind = content.get("type")
    if kind == "text":
        return str(content.get("text") or "")
    if kind == "resource_link":
        return f"[{content.get('name') or content.get('uri')}]({content.get('uri')})"
    if kind == "resource":
        resource = content.get("resource")
        if not isinstance(resource, Mapping):
            return "[resource]"
        return str(resource.get("text") or f"[{resource.get('uri', 'resource')}]")
    if kind in ("image", "audio"):
        return f"[{kind}]"
    return ""
