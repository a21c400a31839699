"""Ollama's native chat API (`POST ${url}/api/chat`): NDJSON, one JSON object per line.

Text arrives in `message.content`, reasoning in `message.thinking` (with `"think": true`),
tool calls whole (arguments an object, no id) in `message.tool_calls`; the last line has
`done: true` (the stream's end marker: a body that ends before it was cut off, and its
tool calls are not run), `done_reason` and the counts `prompt_eval_count` / `eval_count`. A failure
mid-stream is a line `{"error": "..."}`. Images go as raw base64 in `message.images`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import msgspec

from ...messages import ImagePart, Message, ToolCall, ToolResultPart, Usage
from ..handlers import bound_handler
from .openai import build_tools as openai_tools
from .wire import frame_decoder, handler_table, provider_opts, setting

DEFAULT_HOST = "http://localhost:11434"


class _Function(msgspec.Struct):
    name: str | None = None
    arguments: Any = None


class _ToolCall(msgspec.Struct):
    function: _Function | None = None


class _Message(msgspec.Struct):
    content: str | None = None
    thinking: str | None = None
    tool_calls: list[_ToolCall] | None = None


class _Line(msgspec.Struct):
    message: _Message | None = None
    done: bool = False
    done_reason: str | None = None
    prompt_eval_count: int | None = None
    eval_count: int | None = None
    error: Any = None


decode = frame_decoder(_Line)


def host(self: Any = None) -> str:
    """OLLAMA_HOST as Ollama reads it: `host:port` without a scheme is allowed."""
    value = os.environ.get("OLLAMA_HOST") or DEFAULT_HOST
    if "://" not in value:
        value = f"http://{value}"
    return value.rstrip("/").replace("://0.0.0.0", "://127.0.0.1")


def setup(self: Any) -> bool:
    self.parameters["stream"] = bool(self.opts.get("stream", True))
    return True


def build_parameters(self: Any, params: dict[str, Any], messages: Sequence[Message]) -> dict[str, Any]:
    params = dict(params)
    options = {key: params.pop(key) for key in ("temperature", "top_p", "num_ctx", "seed") if key in params}
    if options:
        params["options"] = options
    return params


def build_messages(self: Any, messages: Sequence[Message]) -> dict[str, Any]:
    wire: list[dict[str, Any]] = []
    format_response, format_calls = bound_handler(self, "format_response"), bound_handler(self, "format_calls")
    for message in messages:
        for result in message.tool_results:
            wire.append(format_response(result, result.content))
        if message.role == "tool":
            continue
        entry: dict[str, Any] = {"role": message.role, "content": message.text}
        images = [p.data for p in message.parts if isinstance(p, ImagePart) and p.data]
        if images:
            entry["images"] = images
        if message.tool_calls:
            entry["tool_calls"] = format_calls(list(message.tool_calls))
        if entry["content"] or len(entry) > 2:
            wire.append(entry)
    return {"messages": wire}


def format_calls(self: Any, tool_calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    return [{"function": {"name": c.name, "arguments": c.arguments}} for c in tool_calls]


def format_response(self: Any, tool_call: ToolCall | ToolResultPart, output: str) -> dict[str, Any]:
    return {"role": "tool", "content": output, "tool_name": tool_call.name}


def parse_chat(self: Any, data: Any, tools: Any = None) -> dict[str, Any] | None:
    line = decode(data)
    if line.error is not None:
        return {"status": "error", "output": str(line.error)}
    message = line.message or _Message()
    if message.tool_calls and tools is not None:
        for call in message.tool_calls:
            fn = call.function or _Function()
            arguments = msgspec.json.encode(fn.arguments if fn.arguments is not None else {}).decode()
            tools.add(len(tools), name=fn.name, arguments=arguments)  # each call arrives whole
    result: dict[str, Any] = {
        "status": "success",
        "output": {"role": "assistant", "content": message.content or None, "reasoning": message.thinking or None},
        "usage": None,
    }
    if line.done:
        result["done"] = True  # the stream's end marker
        result["finish_reason"] = line.done_reason or "stop"
        prompt, output = line.prompt_eval_count or 0, line.eval_count or 0
        result["usage"] = Usage(prompt_tokens=prompt, completion_tokens=output, total_tokens=prompt + output)
    return result


def parse_tokens(self: Any, data: Any) -> int | None:
    line = decode(data)
    return (line.prompt_eval_count or 0) + (line.eval_count or 0) if line.done else None


ADAPTER: dict[str, Any] = {
    "name": "ollama",
    "formatted_name": "Ollama",
    "url": "${url}/api/chat",
    "env": {"url": host},
    "headers": {"Content-Type": "application/json"},
    "opts": provider_opts(stream_format="ndjson", models_url="${url}/api/tags"),
    "features": {"text": True, "tokens": True},
    "schema": {
        "model": setting(1, "enum", "llama3.1", choices=[]),
        "temperature": setting(2, "number", optional=True),
        "num_ctx": setting(3, "integer", optional=True),
        "think": setting(4, "boolean", optional=True, desc="Ask a thinking model to show its reasoning."),
    },
    "handlers": handler_table(globals(), build_tools=openai_tools),
}
