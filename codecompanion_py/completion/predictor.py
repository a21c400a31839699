"""One prediction at a time: a new request cancels the one before it (its connection closes,
so the server sees it stop; the kept-alive connections stay for the next), and failures go
quiet: after each one (no key, the server down, a 429) the predictor waits longer before
asking again, and `:checkhealth` tells the last error instead of the editor at every
keystroke."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import msgspec

from ..adapters.base import HTTPAdapter, prepare
from ..client import HttpClient, read_at_most
from ..editor_port import Editor
from ..errors import CodeCompanionError, ProviderError
from ..events import ErrorEvent, FinalEvent
from ..stream.iterators import HttpStreamIterator
from ..ui.ops import Suggestions
from . import fim, prompt
from .candidates import candidates
from .context import CompletionContext

log = logging.getLogger("codecompanion_py.completion")

MAX_REPLY_BYTES = 256 * 1024
QUIET_FIRST = 2.0  # seconds without requests after a failure, doubled at each one after it
QUIET_MAX = 120.0
REQUEST_TIMEOUT = 5.0  # seconds for the provider's answer: a server that hangs is a failure (minuet's too)


@dataclass
class Target:
    """Where predictions go, for :checkhealth."""

    adapter: str
    model: str | None
    kind: fim.Kind
    host: str


@dataclass
class Quiet:
    """What the predictors learned of the provider: where it is, and its failures (shared by
    the ghost text's predictor and the menus', so one failure quiets both)."""

    failures: int = 0
    quiet_until: float = 0.0  # time.monotonic()
    last_error: str | None = None
    last_error_at: float | None = None  # time.time()
    target: Target | None = None

    def failed(self, error: str) -> None:
        self.failures += 1
        wait = min(QUIET_FIRST * 2 ** (self.failures - 1), QUIET_MAX)
        self.quiet_until = time.monotonic() + wait
        self.last_error, self.last_error_at = error, time.time()
        log.warning("completion: %s (quiet for %.0f s)", error, wait)


class Predictor:
    """One lane of requests (the ghost text's, or the menus'): each cancels the one before."""

    def __init__(
        self,
        send: Callable[[Suggestions], None],
        client: Callable[[], HttpClient],
        editor: Editor | None = None,
        quiet: Quiet | None = None,
    ) -> None:
        self._send = send
        self._client = client
        self._editor = editor  # what the adapter's Lua functions (a key, a model) are called through
        self._task: asyncio.Task[Any] | None = None
        self._id: int | None = None
        self._chat_adapter: HTTPAdapter | None = None  # the adapter last found to have no FIM endpoint
        self.quiet = quiet or Quiet()

    def cancel(self, request_id: int | None = None) -> None:
        """Stop the request in flight (`request_id`'s, or whichever)."""
        if self._task is not None and not self._task.done() and request_id in (None, self._id):
            self._task.cancel()

    async def predict(
        self, request_id: int, adapter: HTTPAdapter, context: CompletionContext, n: int, budget: int
    ) -> None:
        """Run in the call's own task: the previous one is cancelled first."""
        self.cancel()
        quiet = self.quiet
        if time.monotonic() < quiet.quiet_until:
            self._send(Suggestions(id=request_id, error=quiet.last_error))
            return
        self._task, self._id = asyncio.current_task(), request_id
        context = context.fitted(budget)
        try:
            items = await self._ask(adapter, context, n)
        except CodeCompanionError as error:
            quiet.failed(str(error))
            self._send(Suggestions(id=request_id, error=str(error)))
            return
        finally:
            if self._task is asyncio.current_task():  # not a newer request's
                self._task = None
        quiet.failures = 0
        self._send(Suggestions(id=request_id, items=items))

    async def _ask(self, adapter: HTTPAdapter, context: CompletionContext, n: int) -> list[str]:
        client = self._client()
        if self._chat_adapter is not adapter:  # its kind is known once its URL is (prepared)
            ready = await prepare(adapter, client=client, editor=self._editor)
            kind = fim.kind_of(ready)
            self.quiet.target = Target(ready.name, ready.model, kind, urlsplit(ready.url).hostname or ready.url)
            # a chat request prepares the adapter itself: its key (a `cmd:`...) is not resolved twice next time
            self._chat_adapter = adapter if kind == "chat" else None
        if self._chat_adapter is adapter:
            chats = asyncio.gather(*(self._chat(adapter, client, context) for _ in range(n)))
            answers = await _in_time(adapter.name, chats)
            return candidates(answers, context.line_before, context.suffix, chat=True)[:n]
        shape = fim.SHAPES[kind]
        request = fim.request_for(ready, shape, context, n if shape.takes_n else 1)
        fetches = asyncio.gather(*(self._fetch(client, request) for _ in range(1 if shape.takes_n else n)))
        replies = await _in_time(request.provider, fetches)
        answers = [answer for reply in replies for answer in shape.answers(reply)]
        return candidates(answers, context.line_before, context.suffix)[:n]

    async def _fetch(self, client: HttpClient, request: Any) -> Any:
        async with client.open(request) as response:
            body = await read_at_most(response, MAX_REPLY_BYTES, request=request)
        try:
            return msgspec.json.decode(body)
        except (msgspec.DecodeError, UnicodeDecodeError):
            raise ProviderError(f"{request.provider}: the completion's answer is not JSON") from None

    async def _chat(self, adapter: HTTPAdapter, client: HttpClient, context: CompletionContext) -> str:
        stream = HttpStreamIterator(
            adapter, prompt.messages(context), client=client, settings={}, tools=None, editor=self._editor
        )
        answer = ""
        try:
            async for event in stream:
                if isinstance(event, FinalEvent):
                    answer = event.message.text
                elif isinstance(event, ErrorEvent):
                    raise CodeCompanionError(event.message)
        finally:
            await stream.close()
        return answer


async def _in_time(provider: str, answers: Awaitable[list[Any]]) -> list[Any]:
    """`answers` within REQUEST_TIMEOUT, else a failure (the requests stop)."""
    try:
        return await asyncio.wait_for(answers, REQUEST_TIMEOUT)
    except asyncio.TimeoutError:
        raise ProviderError(f"{provider}: no answer in {REQUEST_TIMEOUT:g} s") from None
