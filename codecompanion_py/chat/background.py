"""One request of the background interaction (a chat's title, the tools judge): the LLM's
whole answer to a few messages, without tools, or None when the request failed."""

from __future__ import annotations

from collections.abc import Sequence

from ..adapters.base import HTTPAdapter
from ..client import HttpClient
from ..editor_port import Editor
from ..events import ErrorEvent, FinalEvent
from ..messages import Message
from ..stream.iterators import HttpStreamIterator


async def ask(
    adapter: HTTPAdapter, client: HttpClient, messages: Sequence[Message], editor: Editor | None = None
) -> str | None:
    stream = HttpStreamIterator(adapter, list(messages), client=client, settings={}, tools=None, editor=editor)
    answer: str | None = None
    try:
        async for event in stream:
            if isinstance(event, FinalEvent):
                answer = event.message.text
            elif isinstance(event, ErrorEvent):
                return None
    finally:
        await stream.close()
    return answer
