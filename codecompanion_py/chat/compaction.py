"""Keeping a chat inside its model's context window (CodeCompanion's
`interactions.chat.opts.context_management`).

Before each request the chat's size is taken: the provider's last count of tokens, or an
estimate from the characters (about four a token) when that is larger. Past the `editing`
trigger (default 65% of the window), the outputs of tool calls older than the last
`keep_cycles` rounds are cut to a line that says so (tools in `exclude_tools` keep theirs).
Past the `compaction` trigger (85%), the turns before the last `KEEP_TURNS` are summarised
by an LLM (the `compaction.adapter`, else the chat's) into one message, when that saves at
least `min_token_savings`. A trigger below 1 is a share of the window, 1 or more a number of
tokens. `/compact` summarises on demand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..adapters.base import HTTPAdapter
from ..client import HttpClient
from ..editor_port import Editor
from ..errors import ProviderError
from ..events import ErrorEvent, FinalEvent
from ..messages import Message, Part, ReasoningPart, TextPart, ToolCall, ToolResultPart
from ..stream.iterators import HttpStreamIterator

KEEP_TURNS = 2  # the last user messages (and what followed them) are never summarised
CHARS_PER_TOKEN = 4
SUMMARY_ID = "<summary>earlier turns</summary>"
_SUMMARY_INPUT_CHARS = 200_000
_MARK = "[output removed"
_TRIMMED = _MARK + " to keep the chat within the model's context window: {} characters]"
IMAGE_TOKENS = 1500  # about what providers count for an image
SUMMARISE = (
    "You summarise a conversation between a user and an AI coding assistant so that the "
    "assistant can carry on from the summary alone. Keep: the user's goals and decisions, "
    "what was done (files read, changed or created, commands run, with their outcome), "
    "facts found, open questions and the next steps. Write it in concise Markdown."
)

# Context windows of the built-in adapters' models, by prefix (a model choice's
# `meta.context_window` in the user's config wins).
KNOWN_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("claude", 200_000),
    ("gemini", 1_048_576),
)


@dataclass
class Settings:
    enabled: bool = True
    editing_trigger: float = 0.65
    exclude_tools: tuple[str, ...] = ("memory",)
    keep_cycles: int = 3
    compaction_trigger: float = 0.85
    min_token_savings: int = 10_000
    adapter: Any = None  # None: the chat's own
    problems: list[str] = field(default_factory=list)

    @classmethod
    def from_config(cls, raw: Any) -> Settings:
        settings = cls()
        if raw is False:
            settings.enabled = False
        if not isinstance(raw, Mapping):
            return settings
        settings.enabled = raw.get("enabled", True) is not False
        editing = _section(raw, "editing")
        compaction = _section(raw, "compaction")
        settings.editing_trigger = _number(editing, "trigger", settings.editing_trigger, settings)
        settings.keep_cycles = int(_number(editing, "keep_cycles", settings.keep_cycles, settings))
        excluded = editing.get("exclude_tools", list(settings.exclude_tools))
        settings.exclude_tools = tuple(str(t) for t in excluded) if isinstance(excluded, list) else ()
        settings.compaction_trigger = _number(compaction, "trigger", settings.compaction_trigger, settings)
        settings.min_token_savings = int(_number(compaction, "min_token_savings", settings.min_token_savings, settings))
        settings.adapter = compaction.get("adapter") or None
        return settings


def _section(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = raw.get(key)
    return value if isinstance(value, Mapping) else {}


def _number(table: Mapping[str, Any], key: str, default: float, settings: Settings) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        settings.problems.append(f"context_management: {key} must be a number >= 0, not {value!r}")
        return default
    return float(value)


def context_window(adapter: HTTPAdapter) -> int | None:
    """The adapter's model's window: its choice's `meta.context_window`, else a known model's."""
    model = adapter.model or ""
    choices = adapter.schema.get("model", {}).get("choices")
    if isinstance(choices, Mapping):
        meta = (choices.get(model) or {}).get("meta") if isinstance(choices.get(model), Mapping) else None
        if isinstance(meta, Mapping) and isinstance(meta.get("context_window"), (int, float)):
            return int(meta["context_window"])
    return next((size for prefix, size in KNOWN_WINDOWS if model.startswith(prefix)), None)


def threshold(trigger: float, window: int | None) -> int | None:
    """Tokens past which a step runs (None: never, a share of an unknown window)."""
    if trigger >= 1:
        return int(trigger)
    return int(trigger * window) if window and trigger > 0 else None


def _chars(part: Part) -> int:
    if isinstance(part, (TextPart, ReasoningPart)):
        return len(part.text)
    if isinstance(part, ToolResultPart):
        return len(part.content)
    if isinstance(part, ToolCall):
        return len(part.name) + len(msgspec.json.encode(part.arguments))
    return IMAGE_TOKENS * CHARS_PER_TOKEN


def estimate(messages: Sequence[Message]) -> int:
    return sum(_chars(part) for m in messages for part in m.parts) // CHARS_PER_TOKEN


def trim_tool_outputs(history: list[Message], keep_cycles: int, excluded: Sequence[str]) -> int:
    """Cut the outputs of the tool rounds before the last `keep_cycles`; the characters removed."""
    rounds = [i for i, m in enumerate(history) if m.role == "tool"]
    removed = 0
    for index in rounds[: max(0, len(rounds) - keep_cycles)]:
        parts: list[Part] = []
        for part in history[index].parts:
            if isinstance(part, ToolResultPart) and part.name not in excluded and not part.content.startswith(_MARK):
                removed += len(part.content)
                part = msgspec.structs.replace(part, content=_TRIMMED.format(len(part.content)))
            parts.append(part)
        history[index] = msgspec.structs.replace(history[index], parts=tuple(parts))
    return removed


def split_for_summary(history: Sequence[Message]) -> tuple[list[Message], list[Message], list[Message]]:
    """(system messages, the turns to summarise, the last turns kept as they are)."""
    system = [m for m in history if m.role == "system"]
    rest = [m for m in history if m.role != "system"]
    starts = [i for i, m in enumerate(rest) if m.role == "user" and not m.context_id and not m.tool_results]
    cut = starts[-KEEP_TURNS] if len(starts) >= KEEP_TURNS else 0
    while cut > 0 and rest[cut - 1].context_id:  # the context shared with a kept turn stays with it
        cut -= 1
    return system, rest[:cut], rest[cut:]


def transcript(messages: Sequence[Message]) -> str:
    lines = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart) and part.text.strip():
                lines.append(f"## {message.role}\n{part.text}")
            elif isinstance(part, ToolResultPart):
                lines.append(f"## tool result ({part.name})\n{part.content[:4000]}")
            elif isinstance(part, ToolCall):
                lines.append(f"## tool call\n{part.name}({msgspec.json.encode(part.arguments).decode()[:1000]})")
    return "\n\n".join(lines)[-_SUMMARY_INPUT_CHARS:]


async def summarise(
    adapter: HTTPAdapter, client: HttpClient, messages: Sequence[Message], editor: Editor | None = None
) -> str:
    """The LLM's summary of `messages`; a ProviderError when it gives none."""
    prompt = [Message.of("system", SUMMARISE), Message.of("user", transcript(messages) or "(nothing)")]
    stream = HttpStreamIterator(adapter, prompt, client=client, settings={}, tools=None, editor=editor)
    try:
        async for event in stream:
            if isinstance(event, FinalEvent) and event.message.text.strip():
                return event.message.text.strip()
            if isinstance(event, ErrorEvent):
                raise ProviderError(f"the summary request failed: {event.message}")
    finally:
        await stream.close()
    raise ProviderError("the summary request returned no text")


def summary_message(text: str, count: int) -> Message:
    return Message(
        role="user",
        parts=(TextPart(text=f"Summary of the {count} earlier messages of this conversation:\n\n{text}"),),
        context_id=SUMMARY_ID,
    )
