"""Helpers for tests that stream a reply through the whole path: HTTP, the decoders, an
adapter's handlers and the normalizer's events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codecompanion_py.adapters import extend
from codecompanion_py.chat.session import ChatSession
from codecompanion_py.client import HttpClient
from codecompanion_py.demo.server import Reply
from codecompanion_py.events import FinalEvent
from codecompanion_py.messages import Message
from codecompanion_py.stream.iterators import HttpStreamIterator, replay_stream
from codecompanion_py.tools.workspace import Workspace


async def ask(adapter: Any, client: Any, text: str = "hi") -> list[Any]:
    """The events of one request with the user message `text`."""
    return await replay_stream(HttpStreamIterator(adapter, [Message.of("user", text)], client=client))


def final_of(events: list[Any]) -> FinalEvent:
    assert isinstance(events[-1], FinalEvent), events[-1]
    return events[-1]


def in_pieces(body: bytes, size: int, content_type: str = "text/event-stream", **reply: Any) -> Reply:
    """`body` in network chunks of `size` bytes, which split frames, lines and UTF-8
    sequences anywhere; `reply` sets the Reply's other fields (status, headers...)."""
    headers = {"content-type": content_type, **reply.pop("headers", {})}
    return Reply(headers=headers, chunks=[body[i : i + size] for i in range(0, len(body), size)], **reply)


def chat_at(url: str, tmp_path: Path, client: HttpClient, sink: Any, **options: Any) -> ChatSession:
    """Chat 1 with `openai_compatible` at `url`, working in `tmp_path`, without a system
    prompt; `options` as ChatSession takes them (tools, editor, mcp...)."""
    adapter = extend("openai_compatible", {"env": {"url": url}})
    return ChatSession(
        1, adapter, client=client, sink=sink, system_prompt=None, workspace=Workspace(tmp_path), **options
    )
