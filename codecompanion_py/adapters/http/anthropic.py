"""Anthropic Messages (`POST /v1/messages`), streamed or not.

Streamed frames carry their type in the JSON (`message_start`, `content_block_start`,
`content_block_delta`, `content_block_stop`, `message_delta`, `message_stop`, `ping`,
`error`); the `event:` line is redundant and ignored. Deltas describe themselves
(`text_delta`, `thinking_delta`, `signature_delta`, `input_json_delta`), so parsing needs
no state but the tool-call assembler. The stream's end marker is `message_stop` (or the
`message_delta` with the stop reason before it): a body that ends without either was cut
off, and its tool calls are not run. Thinking blocks keep their signature (and redacted
blocks their data) in `provider_data["anthropic"]`: Anthropic requires them back,
unchanged, on later turns when tools are used; other providers never see them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from ...messages import ImagePart, Message, ReasoningPart, TextPart, ToolCall, ToolResultPart, ToolSpec, Usage
from ..handlers import bound_handler
from .openai import build_tools as _openai_tools
from .wire import (
    alternating_turns,
    frame_decoder,
    handler_table,
    provider_opts,
    setting,
    setup_stream_flag,
    whole_response,
)

PROVIDER_KEY = "anthropic"
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
_CACHE = {"type": "ephemeral"}


# --- wire types ----------------------------------------------------------------------


class _Usage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None


class _Content(msgspec.Struct, kw_only=True):
    """What a content block and a delta to one both carry: text, or thinking and its signature."""

    text: str | None = None
    thinking: str | None = None
    signature: str | None = None


class _Block(_Content, kw_only=True):
    type: str
    data: str | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None


class _Delta(_Content, kw_only=True):
    type: str | None = None
    partial_json: str | None = None
    stop_reason: str | None = None


class _Error(msgspec.Struct):
    type: str = "error"
    message: str = ""


class _Message(msgspec.Struct):
    content: list[_Block] = []
    stop_reason: str | None = None
    usage: _Usage | None = None


class _Frame(msgspec.Struct):
    type: str
    index: int = 0
    message: _Message | None = None
    content_block: _Block | None = None
    delta: _Delta | None = None
    usage: _Usage | None = None
    error: _Error | None = None
    # a non-streamed body is a message at the top level
    content: list[_Block] | None = None
    stop_reason: str | None = None


decode = frame_decoder(_Frame)
_decode_frame = msgspec.json.Decoder(_Frame).decode


def _usage(raw: _Usage) -> Usage:
    cached = raw.cache_read_input_tokens
    prompt = (raw.input_tokens or 0) + (raw.cache_creation_input_tokens or 0) + (cached or 0)
    output = raw.output_tokens or 0
    return Usage(prompt_tokens=prompt, completion_tokens=output, total_tokens=prompt + output, cached_tokens=cached)


# --- request handlers ---------------------------------------------------------------


def build_parameters(self: Any, params: dict[str, Any], messages: Sequence[Message]) -> dict[str, Any]:
    params = dict(params)
    thinking = params.pop("extended_thinking", False)
    budget = params.pop("thinking_budget", None)
    if thinking:
        budget = int(budget or 4096)
        params["thinking"] = {"type": "enabled", "budget_tokens": budget}
        params["max_tokens"] = max(int(params.get("max_tokens") or 0), budget + 1024)
        params.pop("temperature", None)  # thinking requires the default temperature
    return params


def build_messages(self: Any, messages: Sequence[Message]) -> dict[str, Any]:
    system = [{"type": "text", "text": m.text} for m in messages if m.role == "system" and m.text]
    format_response, format_calls = bound_handler(self, "format_response"), bound_handler(self, "format_calls")
    parts_of = functools.partial(_blocks, format_response, format_calls)  # positional: the cheapest call
    turns = alternating_turns(messages, "assistant", "content", parts_of)
    if self.opts.get("cache_prompt", True):
        _mark_cache_points(system, turns)
    body: dict[str, Any] = {"messages": turns}
    if system:
        body["system"] = system
    return body


def _blocks(
    format_response: Callable[..., Any], format_calls: Callable[..., Any], message: Message
) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    calls = [p for p in message.parts if isinstance(p, ToolCall)]
    for part in message.parts:
        if isinstance(part, ReasoningPart):
            blocks.extend(_reasoning_block(part))
        elif isinstance(part, TextPart) and part.text:
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            source = (
                {"type": "url", "url": part.url}
                if part.url
                else {"type": "base64", "media_type": part.media_type, "data": part.data}
            )
            blocks.append({"type": "image", "source": source})
        elif isinstance(part, ToolResultPart):
            blocks.append(format_response(part, part.content))
    if calls:
        blocks.extend(format_calls(calls))
    return blocks


def _reasoning_block(part: ReasoningPart) -> list[dict[str, Any]]:
    data = (part.provider_data or {}).get(PROVIDER_KEY) or {}
    if data.get("redacted"):
        return [{"type": "redacted_thinking", "data": data["redacted"]}]
    if data.get("signature"):
        return [{"type": "thinking", "thinking": part.text, "signature": data["signature"]}]
    # Another provider's reasoning has no signature Anthropic would accept: keep it readable.
    return [{"type": "text", "text": part.text}] if part.text else []


def _mark_cache_points(system: list[dict[str, Any]], turns: list[dict[str, Any]]) -> None:
    """Prompt caching: the system prompt and the last two user turns (4 breakpoints at most)."""
    if system:
        system[-1]["cache_control"] = _CACHE
    users = [t for t in turns if t["role"] == "user"][-2:]
    for turn in users:
        turn["content"][-1]["cache_control"] = _CACHE


def build_tools(self: Any, tools: Sequence[ToolSpec | dict[str, Any]] | None) -> dict[str, Any] | None:
    wire = _openai_tools(self, tools)  # validates names, schemas and duplicates once
    if not wire:
        return None
    return {
        "tools": [
            {
                "name": f["function"]["name"],
                "description": f["function"]["description"],
                "input_schema": f["function"]["parameters"],
            }
            for f in wire["tools"]
        ]
    }


def format_calls(self: Any, tool_calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in tool_calls]


def format_response(self: Any, tool_call: ToolCall | ToolResultPart, output: str) -> dict[str, Any]:
    call_id = tool_call.tool_call_id if isinstance(tool_call, ToolResultPart) else tool_call.id
    content: Any = output
    if isinstance(tool_call, ToolResultPart) and tool_call.images:  # Anthropic takes images in a tool result
        content = [{"type": "text", "text": output}] + [
            {"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.data}}
            for image in tool_call.images
            if image.data
        ]
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    if isinstance(tool_call, ToolResultPart) and tool_call.status != "success":
        block["is_error"] = True
    return block


# --- response handlers ----------------------------------------------------------------


def parse_chat(self: Any, data: Any, tools: Any = None) -> dict[str, Any] | None:
    frame = decode(data)
    kind = frame.type
    if kind == "error":
        error = frame.error or _Error()
        return {"status": "error", "output": f"{error.message} ({error.type})" if error.message else error.type}
    if kind == "message":  # a whole, non-streamed response
        return _whole_message(frame, tools)
    result: dict[str, Any] = {"status": "success", "output": {"role": "assistant", "content": None, "reasoning": None}}
    if kind == "content_block_delta" and frame.delta is not None:
        delta = frame.delta
        if delta.type == "text_delta":
            result["output"]["content"] = delta.text
        elif delta.type == "thinking_delta":
            result["output"]["reasoning"] = delta.thinking
        elif delta.type == "signature_delta":
            result["reasoning_end"] = {PROVIDER_KEY: {"signature": delta.signature}}
        elif delta.type == "input_json_delta" and tools is not None:
            tools.add(frame.index, arguments=delta.partial_json)
    elif kind == "content_block_start" and frame.content_block is not None:
        block = frame.content_block
        if block.type == "tool_use" and tools is not None:
            tools.add(frame.index, id=block.id, name=block.name)  # `input` is a `{}` placeholder here
        elif block.type == "redacted_thinking":
            result["reasoning_end"] = {PROVIDER_KEY: {"redacted": block.data}}
        elif block.type == "text" and block.text:
            result["output"]["content"] = block.text
    elif kind == "message_start" and frame.message is not None and frame.message.usage is not None:
        result["usage"] = _usage(frame.message.usage)
    elif kind == "message_delta":
        if frame.delta is not None and frame.delta.stop_reason:
            result["finish_reason"] = _STOP_REASONS.get(frame.delta.stop_reason, frame.delta.stop_reason)
            result["done"] = True
        if frame.usage is not None:
            result["usage"] = _usage(frame.usage)
    elif kind == "message_stop":
        result["done"] = True  # the stream's end marker
    else:
        return None  # ping, content_block_stop, and event types added later
    return result


def text_only(data: Any) -> str | None:
    """The text of a `text_delta` frame that reports no usage, or None for any other frame
    or one that does not decode: the normalizer takes such a frame without calling
    `parse_chat` (and, as it reports no usage, `parse_tokens`), as this runs once per token."""
    try:
        frame = _decode_frame(data)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, TypeError):
        return None
    delta = frame.delta
    if frame.type != "content_block_delta" or delta is None or delta.type != "text_delta":
        return None
    if frame.usage is not None or frame.message is not None:
        return None
    return delta.text or ""


parse_chat.text_only = text_only  # type: ignore[attr-defined]


def _whole_message(frame: _Frame, tools: Any) -> dict[str, Any]:
    text: list[str] = []
    reasoning: list[str] = []
    signature: dict[str, Any] | None = None
    for index, block in enumerate(frame.content or ()):
        if block.type == "text" and block.text:
            text.append(block.text)
        elif block.type == "thinking":
            reasoning.append(block.thinking or "")
            signature = {PROVIDER_KEY: {"signature": block.signature}}
        elif block.type == "tool_use" and tools is not None:
            arguments = msgspec.json.encode(block.input if block.input is not None else {}).decode()
            tools.add(index, id=block.id, name=block.name, arguments=arguments)
    return whole_response(
        text,
        reasoning,
        finish_reason=_STOP_REASONS.get(frame.stop_reason or "", frame.stop_reason),
        usage=_usage(frame.usage) if frame.usage else None,
        reasoning_end=signature,
    )


def parse_tokens(self: Any, data: Any) -> int | None:
    frame = decode(data)
    usage = frame.usage or (frame.message.usage if frame.message else None)
    return _usage(usage).total_tokens or None if usage else None


ADAPTER: dict[str, Any] = {
    "name": "anthropic",
    "formatted_name": "Anthropic",
    "url": "https://api.anthropic.com/v1/messages",
    "env": {"api_key": "ANTHROPIC_API_KEY"},
    "headers": {"content-type": "application/json", "x-api-key": "${api_key}", "anthropic-version": "2023-06-01"},
    "opts": provider_opts(
        cache_prompt=True, required_env=["api_key"], models_url="https://api.anthropic.com/v1/models"
    ),
    "features": {"text": True, "tokens": True},
    "schema": {
        "model": setting(
            1,
            "enum",
            "claude-sonnet-4-5",
            choices=["claude-opus-4-1", "claude-sonnet-4-5", "claude-haiku-4-5", "claude-3-7-sonnet-latest"],
        ),
        "max_tokens": setting(2, "integer", 8192),
        "temperature": setting(3, "number", optional=True),
        "extended_thinking": setting(
            4, "boolean", False, desc="Let the model think before it answers (shown as reasoning)."
        ),
        "thinking_budget": setting(5, "integer", 4096),
    },
    "handlers": handler_table(globals(), setup=setup_stream_flag),
}
