"""A chat: its history and its turns, independent of Neovim.

A turn sends the history through the adapter and turns the canonical events into UI ops
on a `ChatSink`: `begin`, `text`, `reasoning`, `tool_call`, `fire` (a `User` autocmd),
`done`. Stopping a turn keeps what streamed so far in the history; an error leaves the
chat usable. The sink decides how ops reach the user (batched RPC in Neovim, a list in
tests, stdout on the command line).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping
from typing import Any, Protocol

from ..adapters.base import HTTPAdapter
from ..client import HttpClient
from ..events import ErrorEvent, FinalEvent, ReasoningEvent, TokenEvent, ToolCallEvent
from ..messages import Message
from ..stream.iterators import HttpStreamIterator

DEFAULT_SYSTEM_PROMPT = (
    "You are an AI programming assistant working inside the Neovim text editor. "
    "Answer concisely, use Markdown, and put code in fenced code blocks with the language name."
)

_request_ids = itertools.count(1)


class ChatSink(Protocol):
    def push(self, op: dict[str, Any]) -> None: ...


class ChatSession:
    def __init__(self, chat_id: Any, adapter: HTTPAdapter, *, client: HttpClient, sink: ChatSink,
                 system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
                 settings: Mapping[str, Any] | None = None) -> None:
        self.chat_id = chat_id
        self.adapter = adapter
        self.client = client
        self.sink = sink
        self.settings = dict(settings or {})
        self.history: list[Message] = []
        if system_prompt:
            self.history.append(Message.of("system", system_prompt))
        self.task: asyncio.Task[None] | None = None

    @property
    def busy(self) -> bool:
        return self.task is not None and not self.task.done()

    def adapter_info(self) -> dict[str, Any]:
        return {"name": self.adapter.name, "formatted_name": self.adapter.formatted_name,
                "model": self.adapter.model}

    def submit(self, text: str) -> asyncio.Task[None] | None:
        """Start a turn for the user's `text`; refused (with an error op) while one runs."""
        if self.busy:
            self.sink.push({"op": "error", "message": "a request is already running; press q to stop it"})
            return None
        if not text.strip():
            self.sink.push({"op": "done", "status": "empty"})
            return None
        self.history.append(Message.of("user", text))
        self.task = asyncio.get_running_loop().create_task(self._turn())
        return self.task

    def stop(self) -> bool:
        if not self.busy:
            return False
        assert self.task is not None
        self.task.cancel()
        return True

    async def _turn(self) -> None:
        info = {"id": next(_request_ids), "adapter": self.adapter_info(), "interaction": "chat"}
        push = self.sink.push
        push({"op": "begin", "adapter": info["adapter"]})
        push({"op": "fire", "event": "RequestStarted", "data": info})
        stream = HttpStreamIterator(self.adapter, list(self.history), client=self.client, settings=self.settings)
        status, message, usage = "success", None, None
        streaming = False
        try:
            async for event in stream:
                if not streaming:
                    streaming = True
                    push({"op": "fire", "event": "RequestStreaming", "data": info})
                if isinstance(event, TokenEvent):
                    push({"op": "text", "text": event.content})
                elif isinstance(event, ReasoningEvent):
                    push({"op": "reasoning", "text": event.content})
                elif isinstance(event, ToolCallEvent) and event.is_final:
                    push({"op": "tool_call", "id": event.id, "name": event.name, "arguments": event.arguments})
                elif isinstance(event, FinalEvent):
                    self.history.append(event.message)
                    usage = event.usage
                elif isinstance(event, ErrorEvent):
                    status, message = "error", event.message
                    self._keep_partial(stream)
        except asyncio.CancelledError:
            status = "stopped"
            self._keep_partial(stream)
        finally:
            await stream.close()
            push({"op": "fire", "event": "RequestFinished", "data": {**info, "status": status}})
            done: dict[str, Any] = {"op": "done", "status": status}
            if usage is not None:
                done["tokens"] = usage.total_tokens
            if message:
                done["message"] = message
            push(done)

    def _keep_partial(self, stream: HttpStreamIterator) -> None:
        partial = stream.partial_message()
        if partial is not None:
            self.history.append(partial)
