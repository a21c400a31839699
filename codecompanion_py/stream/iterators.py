"""Async iterators of canonical events: over HTTP, from canned scenarios, and replay helpers.

`BaseStreamIterator` asks its subclass for raw chunks (`_get_next_chunk()`, None when the
source is exhausted), awaits the normalizer's `normalize_chunk()`, and hands out events
one by one (`async for`) or a chunk's at once (`next_batch()`). It always ends with
exactly one `FinalEvent` or `ErrorEvent`, then closes: engine errors become an
`ErrorEvent`, never an exception in the consumer.
Cancellation (`asyncio.CancelledError`) propagates; `close()` releases the connection.

`HttpStreamIterator` tries the request itself (`HttpClient.attempt`): a failure the client
says is worth retrying becomes a `NoticeEvent` ("...: retrying in 2 s, 1 of 2"), handed
out before the wait, and the next event comes from the next try. Once the first byte of a
response is in, nothing is retried. Every error and notice it reports is scrubbed of the
request's secrets. A body that ends before the stream's end marker is an
`IncompleteResponse` error (see the normalizer); a connection reset or closed mid-body
says after how many bytes; an HTML page where the API should answer says to check the URL.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any

import httpx
import msgspec

from ..adapters.base import HTTPAdapter
from ..adapters.handlers import call_handler
from ..adapters.lua import run_sync
from ..client import HttpClient, HttpRequest, Retrying, looks_like_html, not_the_api, scrub, scrub_error, secrets_of
from ..editor_port import Editor
from ..errors import AdapterError, CodeCompanionError, IncompleteResponse, TransportError
from ..events import ErrorEvent, FinalEvent, NoticeEvent, StreamEvent, TokenEvent, ToolCallEvent, ToolResultEvent
from ..logfile import TRACE, loggable
from ..messages import Message, TextPart, ToolCall, ToolSpec, cleaned
from ..scrubber import KNOWN
from .normalizer import StreamNormalizer

_TERMINAL = (FinalEvent, ErrorEvent)
log = logging.getLogger(__name__)


class BaseStreamIterator:
    normalizer: Any

    def __init__(self, normalizer: Any = None) -> None:
        self.normalizer = normalizer
        self._queue: deque[StreamEvent] = deque()
        self._exhausted = False
        self._closed = False
        self.error: CodeCompanionError | None = None  # what ended the stream, if it failed

    async def _get_next_chunk(self) -> Any | None:
        raise NotImplementedError

    async def close(self) -> None:
        self._closed = True

    def _fail(self, error: CodeCompanionError) -> None:
        self._exhausted = True
        self.error = error
        self._queue.append(error_event(error))

    def __aiter__(self) -> BaseStreamIterator:
        return self

    async def __aenter__(self) -> BaseStreamIterator:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _fill(self) -> None:
        """Queue the events of the next chunk (or the stream's end, or its failure)."""
        queue = self._queue
        try:
            chunk = await self._get_next_chunk()
            if chunk is None:
                self._exhausted = True
                queue.extend(await self.normalizer.finish_async())
            elif chunk.__class__ is NoticeEvent:  # said beside the stream (a retry), not parsed
                queue.append(chunk)
            else:
                queue.extend(await self.normalizer.normalize_chunk(chunk))
                failure = getattr(self.normalizer, "failure", None)
                if failure is not None:
                    raise failure
        except CodeCompanionError as error:
            self._fail(error)
        except Exception as error:  # a bug in a handler (often the user's): report, don't crash
            log.exception("stream handler failed")
            self._fail(AdapterError(f"the adapter failed: {type(error).__name__}: {error}"))

    async def __anext__(self) -> StreamEvent:
        queue = self._queue
        while not queue:
            if self._exhausted:
                raise StopAsyncIteration
            await self._fill()
        event = queue.popleft()
        if isinstance(event, _TERMINAL):
            self._exhausted = True
            queue.clear()
            await self.close()
        return event

    async def next_batch(self) -> list[StreamEvent]:
        """The events of the next chunk at once (at least one), [] after the last: what
        `__anext__` hands out one by one, for a consumer that shows a chunk's tokens
        together. A 200-token reply often comes as one chunk; one await per token would
        cost more than decoding them."""
        queue = self._queue
        while not queue:
            if self._exhausted:
                return []
            await self._fill()
        batch = list(queue)
        queue.clear()
        for at, event in enumerate(batch):
            if isinstance(event, _TERMINAL):
                self._exhausted = True
                del batch[at + 1 :]
                await self.close()
                break
        return batch


def joined_tokens(events: list[StreamEvent]) -> list[StreamEvent]:
    """`events` with each run of consecutive `TokenEvent`s as one (with the run's first
    index): the same text, shown with one op for the run instead of one per token."""
    out: list[StreamEvent] = []
    run: list[str] = []
    first: TokenEvent | None = None
    for event in events:
        if isinstance(event, TokenEvent):
            if first is None:
                first = event
            run.append(event.content)
            continue
        if first is not None:
            out.append(_run_of(first, run))
            first, run = None, []
        out.append(event)
    if first is not None:
        out.append(_run_of(first, run))
    return out


def _run_of(first: TokenEvent, texts: list[str]) -> TokenEvent:
    return first if len(texts) == 1 else TokenEvent(content="".join(texts), index=first.index)


def error_event(error: CodeCompanionError) -> ErrorEvent:
    return ErrorEvent(message=str(error), kind=type(error).__name__, status=getattr(error, "status", None))


class HttpStreamIterator(BaseStreamIterator):
    """One request to an HTTP adapter, streamed or not, as canonical events."""

    def __init__(
        self,
        adapter: HTTPAdapter,
        messages: Sequence[Message],
        *,
        client: HttpClient,
        tools: Sequence[ToolSpec | dict[str, Any]] | None = None,
        settings: Mapping[str, Any] | None = None,
        editor: Editor | None = None,
    ) -> None:
        super().__init__(None)
        self.adapter = adapter
        self.editor = editor  # what the adapter's Lua functions are called through
        self.messages = messages
        self.tools = tools
        self.settings = settings
        self.client = client
        self._stack = AsyncExitStack()
        self._chunks: AsyncIterator[bytes] | None = None
        self._request: HttpRequest | None = None
        self.ready: HTTPAdapter | None = None
        self._attempt = 0  # failed tries so far
        self._wait: float | None = None  # seconds to wait before the next try
        self._html = False  # the response says it is an HTML page
        self._first = True  # no body chunk yet
        self._secrets: list[str] = []  # the request's own keys, kept out of the log

    async def _prepare(self) -> HttpRequest:
        # Imported here: building a request needs the adapter machinery, not every consumer does.
        from ..adapters.request import build_request

        self.ready, request = await build_request(
            self.adapter,
            self.messages,
            tools=self.tools,
            settings=self.settings,
            client=self.client,
            editor=self.editor,
        )
        self._request = request
        self._secrets = secrets_of(request)
        self.normalizer = StreamNormalizer(
            self.ready,
            streaming=request.stream,
            max_line=self.client.max_line_bytes,
            max_response=self.client.max_response_bytes,
        )
        return request

    async def _open(self) -> AsyncIterator[bytes] | NoticeEvent:
        """The response's bytes, or the notice of a retry (after which the next call waits
        and tries again)."""
        request = self._request or await self._prepare()
        if self._wait is not None:
            wait, self._wait = self._wait, None
            await self.client.sleep(wait)
        try:
            response = await self._stack.enter_async_context(self.client.attempt(request, self._attempt))
        except Retrying as retry:
            self._attempt = retry.attempt
            self._wait = retry.delay
            return NoticeEvent(text=scrub(retry.notice, request), until_reply=True)
        self._html = "text/html" in response.headers.get("content-type", "").lower()
        if response.headers.get("content-encoding", "identity").lower() != "identity":
            return response.aiter_bytes()  # a compressed stream (a proxy's gzip): httpx inflates it
        # The transport stream itself: aiter_raw() adds generator layers per chunk that
        # only count bytes.
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)  # the response of an AsyncClient
        return stream.__aiter__()

    async def _get_next_chunk(self) -> bytes | NoticeEvent | None:
        if self._chunks is None:
            opened = await self._open()
            if isinstance(opened, NoticeEvent):
                return opened
            self._chunks = opened
        # A plain try, not a context manager: this runs once per network chunk.
        try:
            chunk = await self._chunks.__anext__()
        except StopAsyncIteration:
            return None
        except httpx.HTTPError as exc:
            raise self._broken(exc) from None
        if log.isEnabledFor(TRACE):
            log.log(TRACE, "chunk: %s", loggable(chunk.rstrip(), self._secrets))
        if self._first:
            self._first = False
            # An HTML page, said to be one or looking like one (an SSE stream mislabelled
            # text/html starts with `data:` or `:` and is parsed as usual).
            if looks_like_html(chunk) or (self._html and chunk.lstrip()[:1] == b"<"):
                assert self._request is not None
                raise not_the_api(self._request, chunk)
        return chunk

    def _broken(self, exc: httpx.HTTPError) -> TransportError:
        """The error for a body that failed after it began."""
        request = self._request
        assert request is not None
        received = getattr(self.normalizer, "received", 0)
        provider = request.provider or "provider"
        if isinstance(exc, httpx.ReadError):
            return IncompleteResponse(f"{provider}: the connection was reset by the server after {received} bytes")
        if isinstance(exc, httpx.RemoteProtocolError):
            return IncompleteResponse(
                f"{provider}: the server closed the connection in the middle of the response, after {received} bytes"
            )
        return self.client.map_error(request, exc)

    def _fail(self, error: CodeCompanionError) -> None:
        scrub_error(error, self._request)
        super()._fail(error)

    def partial_message(self) -> Message | None:
        """The text that arrived before the stream failed or was stopped, marked incomplete."""
        if self.normalizer is None:
            return None
        message: Message | None = self.normalizer.partial_message(str(self.error) if self.error else None)
        return None if message is None else self._without_secrets(message)

    async def _fill(self) -> None:
        await super()._fill()
        queue = self._queue
        if queue and queue[-1].__class__ is FinalEvent:  # the reply as the history keeps it
            final = queue[-1]
            assert isinstance(final, FinalEvent)
            message = self._without_secrets(final.message)
            if message is not final.message:
                queue[-1] = msgspec.structs.replace(final, message=message)
            if log.isEnabledFor(logging.DEBUG):
                log.debug("reply (%s): %s", final.finish_reason, loggable(msgspec.json.encode(message), self._secrets))

    def _without_secrets(self, message: Message) -> Message:
        """`message` without a credential the engine knows (`scrubber.KNOWN`: the request's
        own key among them): a provider may echo the key, and the history goes to disk and
        to the next provider. Only credentials: a reply is prose, and words stay."""
        return cleaned(message, KNOWN.without_known)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._stack.aclose()
        if self.ready is not None:
            status = "error" if self.error else "success" if self._exhausted else "cancelled"
            await run_sync(self.ready.lua_editor, _exit_handlers, self.ready, status)


def _exit_handlers(ready: HTTPAdapter, status: str) -> None:
    call_handler(ready, "on_exit", {"status": status})
    call_handler(ready, "teardown")


class _PassThrough:
    """The normalizer of an iterator whose chunks already are canonical events."""

    async def normalize_chunk(self, chunk: StreamEvent) -> list[StreamEvent]:
        return [chunk]

    def finish(self) -> list[StreamEvent]:
        return []

    async def finish_async(self) -> list[StreamEvent]:
        return []


def _make_events(scenario: str) -> list[StreamEvent]:
    if scenario == "simple":
        message = Message(role="assistant", parts=(TextPart(text="Hello, world"),))
        return [
            TokenEvent(content="Hello", index=0),
            TokenEvent(content=", world", index=1),
            FinalEvent(message=message, finish_reason="stop"),
        ]
    if scenario == "tool_call":
        call = ToolCall(id="call_1", name="calculator", arguments={"a": 2, "b": 2})
        final = Message(role="assistant", parts=(TextPart(text="Sum is 4"),))
        return [
            TokenEvent(content="Calling calculator", index=0),
            ToolCallEvent(id=call.id, name=call.name, args_fragment='{"a": 2, ', index=0),
            ToolCallEvent(id=call.id, name=call.name, args_fragment='"b": 2}', index=0),
            ToolCallEvent(id=call.id, name=call.name, is_final=True, arguments=call.arguments, index=0),
            ToolResultEvent(tool_call_id=call.id, name=call.name, content="4"),
            FinalEvent(message=final, finish_reason="stop"),
        ]
    raise ValueError(f"unknown scenario {scenario!r}: expected 'simple' or 'tool_call'")


class MockStreamIterator(BaseStreamIterator):
    """Replays a canned scenario (`"simple"` or `"tool_call"`) with no network."""

    def __init__(self, scenario: str = "simple") -> None:
        super().__init__(_PassThrough())
        self._events = deque(_make_events(scenario))

    async def _get_next_chunk(self) -> StreamEvent | None:
        await asyncio.sleep(0)
        return self._events.popleft() if self._events else None


async def replay_stream(iterator: BaseStreamIterator) -> list[StreamEvent]:
    """Every event of `iterator`, in order."""
    return [event async for event in iterator]


def replay_body(adapter: HTTPAdapter, body: bytes) -> list[StreamEvent]:
    """Parse a recorded raw response (SSE, NDJSON or one JSON body) with `adapter`."""
    normalizer = StreamNormalizer(adapter, streaming=looks_streamed(adapter, body))
    events = normalizer.feed_bytes(body)
    try:
        if normalizer.failure is not None:
            raise normalizer.failure
        events.extend(normalizer.finish())
    except CodeCompanionError as error:
        events.append(error_event(error))
    return events


def looks_streamed(adapter: HTTPAdapter, body: bytes) -> bool:
    head = body.lstrip()[:64]
    if head.startswith((b"data:", b"event:", b":", b"id:")):
        return True
    if adapter.opts.get("stream_format") != "ndjson" or b"\n" not in body.strip():
        return False
    # Several lines are a stream only if they are not one JSON document (an indented body).
    try:
        msgspec.json.decode(body)
    except msgspec.DecodeError:
        return True
    return False
