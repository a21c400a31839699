"""Deterministic, non-streaming generation for scripts.

    from codecompanion_py import generate
    reply = generate("openai", [Message.of("user", "2+2?")])
    reply.text, reply.tool_calls

`temperature` is 0 unless given; `messages` and `stream` cannot be overridden; parameters
the adapter's schema knows are mapped through it, others go into the body as they are.
A malformed response raises `AdapterError`; HTTP failures raise their `ProviderError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from .adapters import Definition, resolve
from .client import HttpClient
from .errors import AdapterError
from .events import FinalEvent
from .messages import Message, ToolSpec
from .stream.iterators import HttpStreamIterator

_RESERVED = frozenset(("messages", "stream"))


async def agenerate(
    adapter: Definition,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec | dict[str, Any]] | None = None,
    /,
    *,
    client: HttpClient | None = None,
    **params: Any,
) -> Message:
    reserved = sorted(_RESERVED & set(params))
    if reserved:
        raise AdapterError(f"generate() sets {', '.join(reserved)} itself; it cannot be overridden")
    if not messages:
        raise AdapterError("generate() needs at least one message")
    params.setdefault("temperature", 0)
    ready = resolve(adapter)
    ready.opts["stream"] = False
    settings = {k: v for k, v in params.items() if k in ready.schema}
    ready.body.update({k: v for k, v in params.items() if k not in ready.schema})
    own_client = client is None
    http = client or HttpClient()
    try:
        stream = HttpStreamIterator(ready, list(messages), client=http, tools=tools, settings=settings)
        async for event in stream:
            if isinstance(event, FinalEvent):
                return event.message
        raise stream.error or AdapterError("the response ended without a message")
    finally:
        if own_client:
            await http.aclose()


def generate(
    adapter: Definition,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec | dict[str, Any]] | None = None,
    /,
    **params: Any,
) -> Message:
    """The blocking form of `agenerate`, for scripts with no event loop."""
    return asyncio.run(agenerate(adapter, messages, tools, **params))
