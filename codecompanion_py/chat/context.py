"""Editor context (`#{buffer}`, `#{diagnostics}`...) as it goes to the LLM: Lua reads each
item from the editor when the user sends (lua/codecompanion_py/chat/context.lua); here each
becomes a block after the user's words, headed with what it is, its text fenced so that
nothing in it can close the fence early. The `#{...}` words stay in the message, so the LLM
reads what the user pointed at."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_BACKTICKS = re.compile(r"`{3,}")


def fenced(content: str, language: str = "") -> str:
    longest = max((len(run) for run in _BACKTICKS.findall(content)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{language}\n{content}\n{fence}"


def block(item: Mapping[str, Any]) -> str | None:
    content = item.get("content")
    if not isinstance(content, str):
        return None
    label = str(item.get("label") or item.get("kind") or "context")
    language = item.get("filetype") if isinstance(item.get("filetype"), str) else ""
    return f"Context: {label}\n{fenced(content.rstrip(), language or '')}"


def with_context(text: str, items: Sequence[Mapping[str, Any]] | None) -> str:
    """The user's message with the editor context it named, in the order named."""
    blocks = [b for b in (block(item) for item in items or () if isinstance(item, Mapping)) if b]
    return "\n\n".join([text, *blocks]) if blocks else text
