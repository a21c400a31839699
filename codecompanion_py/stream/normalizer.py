"""Turns an adapter's raw response (streamed bytes or a whole body) into canonical events.

The normalizer owns the framing (SSE or NDJSON, from `adapter.opts.stream_format`) and
calls the adapter's `parse_chat` handler once per frame. Handlers return CodeCompanion's
`{status, output = {role, content, reasoning}}` table, optionally with `finish_reason`,
`usage` (merged field by field across frames: providers report input and output counts
in different frames) and `reasoning_end` (opaque data that closes the current reasoning
block, such as a thinking signature, kept in that part's `provider_data`). Tool-call
fragments go into the `ToolCallAssembler` passed as `tools`. Streaming and
non-streaming responses take the same path.

The end of a stream. A streamed response is whole only once the provider has said so: a
`[DONE]` frame, a result with a `finish_reason` (OpenAI's finishing choice, Anthropic's
`message_delta`, Gemini's candidate with a finishReason, Ollama's `"done": true`, the
Responses API's `response.completed` / `.incomplete`), or a result with `"done": True`
(Anthropic's `message_stop`). A body that ends before that was cut off (a proxy, a reset
connection, a crash): `finish()` raises `IncompleteResponse` ("the response was cut off
after N bytes"), so its tool calls are never run and its text is not shown as complete;
`partial_message()` keeps the text, marked. An adapter whose server sends no end marker
at all sets `opts.require_stream_end = false`.

Limits: `max_line` caps one SSE/NDJSON line or event and `max_response` the whole body
(bytes; `ResponseTooLarge` past either). A frame that is not valid UTF-8 is decoded with
replacement characters rather than failing.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..adapters import lua
from ..adapters.handlers import get_handler
from ..client import provider_message
from ..errors import AdapterError, CodeCompanionError, IncompleteResponse, ResponseTooLarge, StreamError
from ..events import FinalEvent, ReasoningEvent, StreamEvent, TokenEvent, ToolCallEvent, UsageEvent
from ..messages import Message, ReasoningPart, TextPart, Usage, valid_utf8
from ..outbound import ClientSettings
from .assembler import ToolCallAssembler
from .lines import size_text
from .ndjson import NDJSONDecoder
from .sse import ServerSentEvent, SSEDecoder

_DONE = b"[DONE]"
_TOOL_REASONS = frozenset(("tool_calls", "function_call", "tool_use"))


def _payload(frame: ServerSentEvent | bytes) -> bytes:
    """A frame's data: the `data` lines of an SSE event, an NDJSON line as it is."""
    return frame.data if isinstance(frame, ServerSentEvent) else frame


class StreamNormalizer:
    def __init__(
        self,
        adapter: Any,
        *,
        streaming: bool = True,
        max_line: int | None = None,
        max_response: int | None = None,
    ) -> None:
        self.adapter = adapter
        self.streaming = streaming
        self._body: list[bytes] = []
        self.provider = getattr(adapter, "formatted_name", "") or getattr(adapter, "name", "")
        parse_chat = get_handler(adapter, "parse_chat")
        if parse_chat is None:
            raise AdapterError(f"{self.provider}: the adapter has no parse_chat handler")
        opts = getattr(adapter, "opts", {})
        ndjson = opts.get("stream_format") == "ndjson"
        if isinstance(parse_chat, lua.LuaFunction):  # given what CodeCompanion's handlers get
            parse_chat = lua.chunk_parser(parse_chat, streaming=streaming, sse=not ndjson)
        self._parse_chat = parse_chat
        # A built-in parse_chat may come with a shortcut for frames that hold only text
        # (`text_only`, see openai.py); not with a `parse_meta` handler, which sees each frame.
        self._text_only = getattr(parse_chat, "text_only", None)
        if get_handler(adapter, "parse_meta") is not None:
            self._text_only = None
        self._parse_tokens = get_handler(adapter, "parse_tokens")
        # A Lua handler is called per frame: each chunk is parsed where it can be (see lua.py).
        self._lua = lua.has_lua_handlers(adapter)
        settings = ClientSettings()  # what a caller does not give: the defaults
        self.max_line = settings.max_line_bytes if max_line is None else max_line
        self.max_response = settings.max_response_bytes if max_response is None else max_response
        self._decoder: SSEDecoder | NDJSONDecoder = (
            NDJSONDecoder(self.max_line) if ndjson else SSEDecoder(self.max_line)
        )
        self.require_end = opts.get("require_stream_end", True) is not False
        self.ended = False  # the provider said the response is complete
        self.received = 0  # bytes of body so far
        self.frames = 0  # frames parsed so far
        self._head = b""  # the body's first bytes, to say what it was when it was no stream
        self.tools = ToolCallAssembler()
        self._text: list[str] = []
        self._reasoning: list[str] = []  # the open reasoning block
        self._reasoning_parts: list[ReasoningPart] = []  # closed blocks
        self._token_index = 0
        self._reasoning_index = 0
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.done = False
        self.failure: CodeCompanionError | None = None  # an error frame, after the events before it

    # --- input ---------------------------------------------------------------------------

    async def normalize_chunk(self, chunk: bytes) -> list[StreamEvent]:
        """`feed_bytes` as a coroutine, for callers that await each chunk."""
        if self._lua:
            return await lua.run_sync(getattr(self.adapter, "editor", None), self.feed_bytes, chunk)  # type: ignore[no-any-return]
        return self.feed_bytes(chunk)

    async def finish_async(self) -> list[StreamEvent]:
        """`finish` as a coroutine (the last frames may go to a Lua handler)."""
        if self._lua:
            return await lua.run_sync(getattr(self.adapter, "editor", None), self.finish)  # type: ignore[no-any-return]
        return self.finish()

    def feed_bytes(self, chunk: bytes) -> list[StreamEvent]:
        """A piece of the response body, split anywhere. An error frame sets `failure` and
        stops there, so the events before it in the same chunk are still returned."""
        if self.failure is not None:
            raise self.failure
        if not self.received:
            self._head = chunk[:512]
        self.received += len(chunk)
        if self.max_response and self.received > self.max_response:
            raise ResponseTooLarge(
                f"{self.provider}: the response is larger than {size_text(self.max_response)} "
                f"(adapters.http.opts.max_response_bytes); reading stopped after {self.received} bytes"
            )
        if not self.streaming:
            self._body.append(chunk)
            return []
        events: list[StreamEvent] = []
        try:
            frames = self._decoder.feed(chunk)
        except ResponseTooLarge as error:
            raise self._too_long(error) from None
        try:
            if self._text_only is None:
                for frame in frames:
                    events.extend(self.feed_frame(_payload(frame)))
            else:
                self._feed_text_first(frames, events)
        except CodeCompanionError as error:
            self.failure = error
        return events

    def _feed_text_first(self, frames: list[Any], events: list[StreamEvent]) -> None:
        """`feed_frame` for each frame, a text-only frame (the adapter's `text_only`) taken
        without parse_chat's result table: the same events, at half the cost."""
        text_only = self._text_only
        assert text_only is not None
        for frame in frames:
            data = _payload(frame)
            text = None if self.done else text_only(data)
            if text is None:
                events.extend(self.feed_frame(data))
                continue
            self.frames += 1
            if text:
                self._text.append(text)
                events.append(TokenEvent(content=text, index=self._token_index))
                self._token_index += 1

    def feed_frame(self, data: Any) -> list[StreamEvent]:
        """One frame's payload (or a whole non-streamed body)."""
        if self.done:
            return []
        self.frames += 1
        if data == _DONE:
            self.done = self.ended = True
            return []
        try:
            result = self._parse_chat(self.adapter, data, self.tools)
        except UnicodeDecodeError:  # msgspec's answer to invalid UTF-8: decode it leniently
            if not isinstance(data, (bytes, bytearray)) or (repaired := valid_utf8(bytes(data))) == data:
                raise
            result = self._parse_chat(self.adapter, repaired, self.tools)
        events: list[StreamEvent] = []
        if result is not None:
            if result.get("status") == "error":
                raise StreamError(str(result.get("output") or "unknown error"), provider=self.provider)
            if result.get("finish_reason") or result.get("done"):
                self.ended = True
            output = result.get("output") or {}
            reasoning = output.get("reasoning")
            if reasoning:
                self._reasoning.append(reasoning)
                events.append(ReasoningEvent(content=reasoning, index=self._reasoning_index))
                self._reasoning_index += 1
            content = output.get("content")
            if content:
                self._text.append(content)
                events.append(TokenEvent(content=content, index=self._token_index))
                self._token_index += 1
            if result.get("finish_reason"):
                self.finish_reason = result["finish_reason"]
            if result.get("reasoning_end") is not None:
                self._close_reasoning(result["reasoning_end"])
            if "usage" in result:
                usage = result["usage"]
            else:
                usage = self._tokens_from_handler(data)
            if usage is not None:  # reported once, at the end: some providers repeat it in every frame
                complete = usage.prompt_tokens and usage.completion_tokens
                self.usage = usage if complete else merge_usage(self.usage, usage)
        if self.tools.events:
            events.extend(self.tools.drain())
        return events

    def _close_reasoning(self, provider_data: dict[str, Any]) -> None:
        self._reasoning_parts.append(ReasoningPart(text="".join(self._reasoning), provider_data=provider_data or None))
        self._reasoning = []

    def _reasoning_so_far(self) -> list[ReasoningPart]:
        parts = list(self._reasoning_parts)
        if self._reasoning:
            parts.append(ReasoningPart(text="".join(self._reasoning)))
        return parts

    def _tokens_from_handler(self, data: Any) -> Usage | None:
        # Only adapters whose parse_chat does not report usage pay for a second decode.
        if self._parse_tokens is None:
            return None
        total = self._parse_tokens(self.adapter, data)
        return Usage(total_tokens=int(total)) if total else None

    def parse_body(self, body: bytes) -> list[StreamEvent]:
        """A whole response: a JSON body, or a recorded stream when `streaming`."""
        events = self.feed_bytes(body)
        if self.failure is not None:
            raise self.failure
        return [*events, *self.finish()]

    # --- output --------------------------------------------------------------------------

    def finish(self) -> list[StreamEvent]:
        """End of input: the final tool-call events and the `FinalEvent`."""
        if self.failure is not None:
            raise self.failure
        events: list[StreamEvent] = []
        if not self.streaming:
            events.extend(self.feed_frame(b"".join(self._body)))
        elif not self.done:
            try:
                items = self._decoder.flush()
            except ResponseTooLarge as error:
                raise self._too_long(error) from None
            for item in items:
                events.extend(self.feed_frame(_payload(item)))
        if self.streaming and self.require_end and not self.ended:
            raise IncompleteResponse(self._cut_off())
        calls = self.tools.finish()
        events.extend(
            ToolCallEvent(id=c.id, name=c.name, is_final=True, arguments=c.arguments, index=n)
            for n, c in enumerate(calls)
        )
        parts: list[Any] = self._reasoning_so_far()
        # Reasoning with no text after it (a thinking model that answered nothing) is an
        # empty answer, not a failure; a response with nothing at all is one.
        if not (self._text or calls or any(p.text or p.provider_data for p in parts)):
            reason = f" (finish reason: {self.finish_reason})" if self.finish_reason else ""
            raise AdapterError(f"{self.provider}: the response had no content{reason}")
        if self._text:
            parts.append(TextPart(text="".join(self._text)))
        parts.extend(calls)
        reason = self.finish_reason or "stop"
        if calls or reason in _TOOL_REASONS:
            reason = "tool_calls" if calls else "stop"
        message = Message(role="assistant", parts=tuple(parts))
        if self.usage is not None:
            events.append(UsageEvent(usage=self.usage))
        events.append(FinalEvent(message=message, finish_reason=reason, usage=self.usage))
        return events

    def _too_long(self, error: ResponseTooLarge) -> ResponseTooLarge:
        return ResponseTooLarge(
            f"{self.provider}: {error} (adapters.http.opts.max_line_bytes); reading stopped after {self.received} bytes"
        )

    def _cut_off(self) -> str:
        """What `IncompleteResponse` says: how much came, and what it was when no frame did."""
        if not self.received:
            return f"{self.provider}: the response was empty (0 bytes): it ended before the provider said anything"
        if not self.frames and self._head.lstrip()[:1] in (b"{", b"[", b"<"):  # JSON or HTML, not SSE
            return (
                f"{self.provider}: the answer is not an event stream ({self.received} bytes): "
                f"{provider_message(self._head)}"
            )
        unrun = "; its tool calls were not run" if self.tools else ""
        return (
            f"{self.provider}: the response was cut off after {self.received} bytes, before the provider "
            f"marked it complete: what arrived is not the whole reply{unrun}"
        )

    def partial_message(self, error: str | None = None) -> Message | None:
        """What has arrived so far as text and reasoning (tool calls need the whole stream),
        marked incomplete (`provider_data = {"incomplete": True, "error": ...}`)."""
        if not self._text:
            return None
        mark: dict[str, Any] = {"incomplete": True}
        if error:
            mark["error"] = error
        text = TextPart(text="".join(self._text), provider_data=mark)
        return Message(role="assistant", parts=(*self._reasoning_so_far(), text))


def merge_usage(old: Usage | None, new: Usage) -> Usage:
    """Each count from `new` where it reports one, else from `old`; the total follows."""
    if old is None:
        merged = new
    else:
        merged = Usage(
            prompt_tokens=new.prompt_tokens or old.prompt_tokens,
            completion_tokens=new.completion_tokens or old.completion_tokens,
            total_tokens=0,
            reasoning_tokens=new.reasoning_tokens if new.reasoning_tokens is not None else old.reasoning_tokens,
            cached_tokens=new.cached_tokens if new.cached_tokens is not None else old.cached_tokens,
        )
    if old is not None or not merged.total_tokens:
        total = max(new.total_tokens, merged.prompt_tokens + merged.completion_tokens)
        merged = msgspec.structs.replace(merged, total_tokens=total)
    return merged
