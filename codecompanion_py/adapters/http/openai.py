"""OpenAI Chat Completions (`POST /v1/chat/completions`), streamed or not.

Streamed frames are `data: {chat.completion.chunk}` ending with `data: [DONE]`; the chunk
with a `finish_reason` or `[DONE]` is the stream's end marker (a body that ends before
either was cut off, and its tool calls are not run). Tool calls
stream as fragments keyed by `index`: the first carries `id` and `function.name`, the rest
only pieces of `function.arguments`. With `stream_options.include_usage` an extra last
chunk has `"choices": []` and the `usage`. A top-level `error` object inside a 200 stream
is an error (as the official SDK treats it). Many providers speak this wire format; they
are `extend()`s of this adapter.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from ...messages import (
    ImagePart,
    Message,
    TextPart,
    ToolCall,
    ToolResultPart,
    ToolSpec,
    Usage,
    validate_tool_specs,
)
from ..handlers import bound_handler, get_handler
from .wire import frame_decoder, handler_table, provider_opts, setting, setup_stream_flag

# --- wire types: only the fields we read --------------------------------------------


class _Function(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class _ToolCallDelta(msgspec.Struct):
    index: int | None = None
    id: str | None = None
    function: _Function | None = None


class _Delta(msgspec.Struct):
    # Mistral's reasoning models send a list of typed parts instead of a string.
    content: str | list[dict[str, Any]] | None = None
    reasoning_content: str | None = None  # DeepSeek, Kimi
    reasoning: str | None = None  # OpenRouter, Groq
    reasoning_text: str | None = None  # Copilot
    refusal: str | None = None
    tool_calls: list[_ToolCallDelta] | None = None


class TokenDetails(msgspec.Struct):
    """Usage details of either OpenAI API (Chat Completions, Responses)."""

    cached_tokens: int | None = None
    reasoning_tokens: int | None = None


class ChatUsage(msgspec.Struct):
    """Usage as Chat Completions names it (the Responses API's is read into these fields)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    prompt_tokens_details: TokenDetails | None = None
    completion_tokens_details: TokenDetails | None = None


class _Error(msgspec.Struct):
    message: Any = ""  # a string, except from some proxies: only ever shown
    type: str | None = None
    code: str | int | None = None


class _Choice(msgspec.Struct):
    delta: _Delta | None = None
    message: _Delta | None = None
    finish_reason: str | None = None
    usage: ChatUsage | None = None  # Kimi (Moonshot) reports usage in the last choice
    error: _Error | str | None = None  # OpenRouter: an upstream failure, with finish_reason "error"


class _Chunk(msgspec.Struct):
    choices: list[_Choice] | None = None
    usage: ChatUsage | None = None
    error: _Error | str | None = None


decode = frame_decoder(_Chunk)
_decode_chunk = msgspec.json.Decoder(_Chunk).decode


def usage_from(raw: ChatUsage) -> Usage:
    prompt_details = raw.prompt_tokens_details
    completion_details = raw.completion_tokens_details
    return Usage(
        prompt_tokens=raw.prompt_tokens,
        completion_tokens=raw.completion_tokens,
        total_tokens=raw.total_tokens or raw.prompt_tokens + raw.completion_tokens,
        cached_tokens=prompt_details.cached_tokens if prompt_details else None,
        reasoning_tokens=completion_details.reasoning_tokens if completion_details else None,
    )


# --- handlers -------------------------------------------------------------------------


def setup(self: Any) -> bool:
    setup_stream_flag(self)
    if self.opts.get("stream", True):
        self.parameters["stream_options"] = {"include_usage": True}  # else no usage in streams
    else:
        self.parameters.pop("stream_options", None)
    return True


# Reasoning models (o1, o3, o4-mini, gpt-5...) take no sampling parameters and count output
# as max_completion_tokens; the first o1 releases accept no system (or developer) role.
_REASONING_MODEL = re.compile(r"^(o\d|gpt-5)")
_NO_SYSTEM_ROLE = re.compile(r"^o1-(mini|preview)")


def build_parameters(self: Any, params: dict[str, Any], messages: Sequence[Message]) -> dict[str, Any]:
    model = str(params.get("model") or "")
    if _REASONING_MODEL.match(model):
        params = {k: v for k, v in params.items() if k not in ("temperature", "top_p")}
        if "max_tokens" in params:
            params["max_completion_tokens"] = params.pop("max_tokens")
    return params


def build_messages(self: Any, messages: Sequence[Message]) -> dict[str, Any]:
    wire: list[dict[str, Any]] = []
    format_response, format_calls = bound_handler(self, "format_response"), bound_handler(self, "format_calls")
    for message in messages:
        wire.extend(_message_to_wire(self, message, format_response, format_calls))
    model = str(self.model or "")
    if _REASONING_MODEL.match(model):
        wire = _without_system_role(wire, merge=bool(_NO_SYSTEM_ROLE.match(model)))
    return {"messages": wire}


def _without_system_role(wire: list[dict[str, Any]], *, merge: bool) -> list[dict[str, Any]]:
    """System messages as `developer`, or (`merge`) prepended to the first user message."""
    if not merge:
        return [{**m, "role": "developer"} if m["role"] == "system" else m for m in wire]
    system = "\n\n".join(m["content"] for m in wire if m["role"] == "system")
    rest = [m for m in wire if m["role"] != "system"]
    for index, message in enumerate(rest):
        if message["role"] == "user" and isinstance(message["content"], str) and system:
            rest[index] = {**message, "content": f"{system}\n\n{message['content']}"}
            break
    return rest


def _message_to_wire(
    self: Any, message: Message, format_response: Callable[..., Any], format_calls: Callable[..., Any]
) -> list[dict[str, Any]]:
    role = message.role
    if role == "system":
        return [{"role": "system", "content": message.text}]
    # one pass over the parts: this runs for every message of the history on every request
    wire: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    content: list[TextPart | ImagePart] = []
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            wire.append(format_response(part, part.content))
        elif isinstance(part, ToolCall):
            calls.append(part)
        elif isinstance(part, (TextPart, ImagePart)):
            content.append(part)
    if role == "tool":
        return wire
    if role == "assistant":
        # content may be null only beside tool calls: a reasoning-only answer goes back as ""
        entry: dict[str, Any] = {"role": "assistant", "content": message.text or (None if calls else "")}
        if self.opts.get("send_reasoning"):
            # DeepSeek's and Kimi's thinking modes require their reasoning back on assistant turns.
            entry["reasoning_content"] = message.reasoning or " "
        if calls:
            entry["tool_calls"] = format_calls(calls)
        wire.append(entry)
    elif content:
        if all(isinstance(p, TextPart) for p in content):
            wire.append({"role": "user", "content": message.text})
        else:
            wire.append({"role": "user", "content": [_content_part(p) for p in content]})
    return wire


def _content_part(part: TextPart | ImagePart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    url = part.url or f"data:{part.media_type};base64,{part.data}"
    return {"type": "image_url", "image_url": {"url": url}}


def build_tools(self: Any, tools: Sequence[ToolSpec | dict[str, Any]] | None) -> dict[str, Any] | None:
    if not tools:
        return None
    specs = validate_tool_specs(_as_spec(tool) for tool in tools)
    return {"tools": [_tool_to_wire(spec) for spec in specs]}


def _as_spec(tool: ToolSpec | dict[str, Any]) -> ToolSpec:
    if isinstance(tool, ToolSpec):
        return tool
    function = tool.get("function", tool)  # the OpenAI `{type, function}` shape or a bare function
    return ToolSpec(
        name=function.get("name", ""),
        description=function.get("description", ""),
        parameters=function.get("parameters") or {"type": "object", "properties": {}},
        strict=bool(function.get("strict", False)),
    )


def _tool_to_wire(spec: ToolSpec) -> dict[str, Any]:
    function: dict[str, Any] = {"name": spec.name, "description": spec.description, "parameters": spec.parameters}
    if spec.strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def build_body(self: Any, data: dict[str, Any]) -> dict[str, Any] | None:
    return None


def parse_chat(self: Any, data: Any, tools: Any = None) -> dict[str, Any] | None:
    """One streamed frame (or a whole non-streamed body) to `{status, output, ...}`.

    Text and reasoning go in `output`; tool-call fragments go to `tools`, a
    `ToolCallAssembler`, keyed by the fragment's `index` (by position in a body)."""
    chunk = decode(data)
    if chunk.error is not None:
        return {"status": "error", "output": _error_text(chunk.error)}
    content: str | None = None
    reasoning: str | None = None
    finish_reason: str | None = None
    usage = chunk.usage
    for choice in chunk.choices or ():
        if choice.error is not None or choice.finish_reason == "error":  # a failure, never a finished answer
            return {
                "status": "error",
                "output": _error_text(choice.error)
                if choice.error is not None
                else 'the stream ended with finish_reason "error"',
            }
        usage = usage or choice.usage
        delta = choice.delta or choice.message
        if delta is not None:
            text = delta.content
            if text.__class__ is str and not (delta.reasoning_content or delta.reasoning or delta.reasoning_text):
                thought = None  # the common case, kept cheap: it runs once per streamed token
            else:
                text, thought = _content_and_reasoning(delta)
            if text:
                content = text if content is None else content + text
            if thought:
                reasoning = thought if reasoning is None else reasoning + thought
            if delta.tool_calls and tools is not None:
                streamed = choice.delta is not None
                for position, call in enumerate(delta.tool_calls):
                    key = call.index if streamed and call.index is not None else position
                    fn = call.function
                    tools.add(key, id=call.id, name=fn.name if fn else None, arguments=fn.arguments if fn else None)
        if choice.finish_reason:
            finish_reason = choice.finish_reason
    result: dict[str, Any] = {
        "status": "success",
        "output": {"role": "assistant", "content": content, "reasoning": reasoning},
        "finish_reason": finish_reason,
        "usage": usage_from(usage) if usage else None,
    }
    if finish_reason:
        result["done"] = True  # the stream's end marker ([DONE], which may follow, is another)
    meta = _parse_meta_of(self)
    if meta is not None:
        result = _with_meta(self, meta, result, data)
    return result


def text_only(data: Any) -> str | None:
    """The text of a streamed frame that holds nothing else, or None for any other frame or
    one that does not decode: parse_chat's common case (one choice whose delta's content is
    a string; no reasoning, refusal, tool call, finish, usage or error), which the normalizer
    takes without calling `parse_chat` and making its result table, as this runs once per
    token (tests/adapters/test_text_only.py holds the two to the same events)."""
    try:
        chunk = _decode_chunk(data)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, TypeError):
        return None
    choices = chunk.choices
    if not choices or len(choices) != 1 or chunk.usage is not None or chunk.error is not None:
        return None
    choice = choices[0]
    delta = choice.delta
    if delta is None or choice.finish_reason or choice.usage is not None or choice.error is not None:
        return None
    text = delta.content
    if not isinstance(text, str) or delta.tool_calls or delta.refusal:
        return None
    if delta.reasoning_content or delta.reasoning or delta.reasoning_text:
        return None
    return text


parse_chat.text_only = text_only  # type: ignore[attr-defined]


def _parse_meta_of(adapter: Any) -> Any:
    """The adapter's `parse_meta` handler, looked up once per handlers table: parse_chat
    runs per streamed frame, where a handler lookup in each is a measurable cost."""
    handlers = getattr(adapter, "handlers", None)
    cache = getattr(adapter, "__dict__", None)
    cached = cache.get("_parse_meta") if cache is not None else None
    if cached is not None and cached[0] is handlers:
        return cached[1]
    meta = get_handler(adapter, "parse_meta")
    if cache is not None:
        cache["_parse_meta"] = (handlers, meta)
    return meta


_STANDARD_DELTA = frozenset(("role", "content", "tool_calls", "refusal", "function_call"))


def _with_meta(self: Any, meta: Any, result: dict[str, Any], data: Any) -> dict[str, Any]:
    """CodeCompanion's `parse_meta`: the result plus the delta's non-standard fields as
    `extra` (DeepSeek's `reasoning_content`...); reasoning may come back as `{content = ...}`."""
    try:
        raw = msgspec.json.decode(data)
        choice = (raw.get("choices") or [{}])[0]
        delta = choice.get("delta") or choice.get("message") or {}
    except (msgspec.DecodeError, AttributeError, IndexError, TypeError):
        return result
    extra = {k: v for k, v in delta.items() if k not in _STANDARD_DELTA} if isinstance(delta, dict) else {}
    answer = meta(self, {"status": result["status"], "output": dict(result["output"]), "extra": extra})
    if not isinstance(answer, dict):
        return result
    output = answer.get("output")
    if isinstance(output, dict):
        reasoning = output.get("reasoning")
        if isinstance(reasoning, dict):
            output = {**output, "reasoning": reasoning.get("content")}
        result = {**result, "output": {**result["output"], **output}}
    return result


def _error_text(error: _Error | str) -> str:
    if isinstance(error, str):
        return error
    return str(error.message or "") or (f"error {error.code}" if error.code is not None else "unknown error")


def _content_and_reasoning(delta: _Delta) -> tuple[str | None, str | None]:
    reasoning = delta.reasoning_content or delta.reasoning or delta.reasoning_text
    content = delta.content
    if isinstance(content, list):
        texts, thoughts = [], []
        for item in content:
            if item.get("type") == "thinking":
                thoughts += [t.get("text", "") for t in item.get("thinking") or () if isinstance(t, dict)]
            elif item.get("type") == "text":
                texts.append(item.get("text") or "")
        content = "".join(texts) or None
        reasoning = (reasoning or "") + "".join(thoughts) or None
    return content or delta.refusal, reasoning


def parse_tokens(self: Any, data: Any) -> int | None:
    chunk = decode(data)
    return usage_from(chunk.usage).total_tokens if chunk.usage else None


def format_calls(self: Any, tool_calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    return [
        {
            "id": wire_id(self, call.id),
            "type": "function",
            "function": {"name": call.name, "arguments": msgspec.json.encode(call.arguments).decode()},
        }
        for call in tool_calls
    ]


def format_response(self: Any, tool_call: ToolCall | ToolResultPart, output: str) -> dict[str, Any]:
    call_id = tool_call.tool_call_id if isinstance(tool_call, ToolResultPart) else tool_call.id
    return {"role": "tool", "tool_call_id": wire_id(self, call_id), "content": output}


_ALNUM = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def wire_id(self: Any, call_id: str) -> str:
    """The tool-call id as this provider accepts it. With `opts.tool_id_chars = N` (Mistral:
    9), ids in another format (from another provider) are mapped to N alphanumerics,
    the same way for the call and its result, so the pair still matches."""
    length = self.opts.get("tool_id_chars")
    if not length or (len(call_id) == length and call_id.isalnum() and call_id.isascii()):
        return call_id
    number = int.from_bytes(hashlib.sha256(call_id.encode()).digest()[:8], "big")
    chars = []
    for _ in range(length):
        number, digit = divmod(number, len(_ALNUM))
        chars.append(_ALNUM[digit])
    return "".join(chars)


_MODELS = ["gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-4o", "gpt-4o-mini", "o3", "o4-mini", "gpt-5", "gpt-5-mini"]

MODELS_URL = "https://api.openai.com/v1/models"


def openai_account() -> dict[str, Any]:
    """The `env` and `headers` of a request to api.openai.com with the user's OpenAI key,
    whichever of its APIs."""
    return {
        "env": {"api_key": "OPENAI_API_KEY"},
        "headers": {"Content-Type": "application/json", "Authorization": "Bearer ${api_key}"},
    }


ADAPTER: dict[str, Any] = {
    "name": "openai",
    "formatted_name": "OpenAI",
    "url": "https://api.openai.com/v1/chat/completions",
    **openai_account(),
    "opts": provider_opts(stream_format="sse", required_env=["api_key"], models_url=MODELS_URL),
    "features": {"text": True, "tokens": True},
    "schema": {
        "model": setting(1, "enum", "gpt-4.1", choices=_MODELS, desc="ID of the model to use."),
        "temperature": setting(2, "number", optional=True, desc="Sampling temperature, 0 to 2."),
        "top_p": setting(3, "number", optional=True),
        "max_tokens": setting(4, "integer", optional=True),
        "reasoning_effort": setting(5, "string", optional=True, choices=["minimal", "low", "medium", "high"]),
    },
    "handlers": handler_table(globals()),
}
