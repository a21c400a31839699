"""A chat's title, written by an LLM in the background after its first turn (CodeCompanion's
`interactions.background` with its `chat_make_title` action). Without it, or when the
request fails, the title is the first line of the chat's first message (history.title_of).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..adapters.base import HTTPAdapter
from ..client import HttpClient
from ..editor_port import Editor
from ..messages import Message
from . import background
from .history import TITLE_LENGTH

INSTRUCTION = (
    "Write a pithy title, 8 words or fewer, for the conversation below: its main topic. "
    "Answer with the title alone, no quotes, no punctuation at the end."
)
_CONVERSATION_CHARS = 6000


def conversation(messages: Sequence[Message]) -> str:
    """What the title is written from: the user's and the LLM's words, not the shared context."""
    turns = [f"## {m.role}\n{m.text}" for m in messages if m.role in ("user", "assistant") and not m.context_id]
    return "\n\n".join(t for t in turns if t.strip())[:_CONVERSATION_CHARS]


def clean(answer: str) -> str | None:
    text = answer.strip()
    try:  # some models answer {"title": "..."} whatever they are told
        decoded = json.loads(text)
        text = decoded.get("title", "") if isinstance(decoded, dict) else text
    except ValueError:
        pass
    line = next((part for part in str(text).splitlines() if part.strip()), "")
    line = line.strip().strip("\"'`*#").strip().rstrip(".")
    if not line:
        return None
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1] + "…"


async def make_title(
    adapter: HTTPAdapter, client: HttpClient, messages: Sequence[Message], editor: Editor | None = None
) -> str | None:
    """The LLM's title for the chat, or None when it gave none."""
    prompt = [Message.of("system", INSTRUCTION), Message.of("user", conversation(messages) or "(empty)")]
    answer = await background.ask(adapter, client, prompt, editor)
    return clean(answer) if answer else None
