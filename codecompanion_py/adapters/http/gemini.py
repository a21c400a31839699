"""Google Gemini (`models/{model}:streamGenerateContent?alt=sse`, or `:generateContent`).

Each SSE frame (CRLF-framed) is a whole `GenerateContentResponse`; the stream's end marker
is a candidate with a `finishReason` (a body that ends before one was cut off, and its
function calls are not run). Function calls come as
complete `functionCall` parts with no id (one is made up) and end with finishReason
`STOP`, so the reason is inferred from the parts. `{"text": ..., "thought": true}` parts
are reasoning. A `thoughtSignature` on a function-call part must go back on that same
part in the next request; it is kept in the call's `provider_data["gemini"]`. The last
frame's `usageMetadata` is the total (earlier ones are running values, not increments).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from ...errors import AdapterError
from ...messages import ImagePart, Message, ReasoningPart, TextPart, ToolCall, ToolResultPart, ToolSpec, Usage
from ..handlers import bound_handler
from .openai import build_tools as _openai_tools
from .wire import alternating_turns, handler_table, provider_opts, setting

PROVIDER_KEY = "gemini"
_FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "BLOCKLIST": "content_filter",
    "SPII": "content_filter",
}
_ESCAPES = re.compile(r"\\([nrt\"'\\])")
_UNESCAPED = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "'": "'", "\\": "\\"}


class _FunctionCall(msgspec.Struct):
    name: str = ""
    args: dict[str, Any] | None = None
    id: str | None = None


class _Part(msgspec.Struct, rename="camel"):
    text: str | None = None
    thought: bool = False
    thought_signature: str | None = None
    function_call: _FunctionCall | None = None


class _Content(msgspec.Struct):
    parts: list[_Part] = []


class _Candidate(msgspec.Struct, rename="camel"):
    content: _Content | None = None
    finish_reason: str | None = None


class UsageMetadata(msgspec.Struct, rename="camel"):
    prompt_token_count: int = 0
    candidates_token_count: int = 0
    thoughts_token_count: int | None = None
    cached_content_token_count: int | None = None
    total_token_count: int = 0


class _PromptFeedback(msgspec.Struct, rename="camel"):
    block_reason: str | None = None


class _Error(msgspec.Struct):
    message: str = ""
    status: str | None = None


class _Response(msgspec.Struct, rename="camel"):
    candidates: list[_Candidate] | None = None
    usage_metadata: UsageMetadata | None = None
    prompt_feedback: _PromptFeedback | None = None
    error: _Error | None = None


_decode = msgspec.json.Decoder(_Response).decode


def decode(data: Any) -> _Response:
    try:
        if isinstance(data, (bytes, str)):
            if data.lstrip()[:1] in (b"[", "["):  # without alt=sse the API answers with a JSON array
                items = msgspec.json.decode(data)
                return msgspec.convert(items[-1] if items else {}, _Response) if len(items) <= 1 else _merged(items)
            return _decode(data)
        return msgspec.convert(data, _Response)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise AdapterError(f"malformed response: {exc}") from None


def _merged(items: list[dict[str, Any]]) -> _Response:
    parts = [
        p for item in items for c in item.get("candidates") or [] for p in (c.get("content") or {}).get("parts", [])
    ]
    last = dict(items[-1])
    candidate = dict((last.get("candidates") or [{}])[0])
    candidate["content"] = {"parts": parts}
    last["candidates"] = [candidate]
    return msgspec.convert(last, _Response)


def unescape_gemini_content(text: str) -> str:
    """Undo Gemini's occasional double escaping (literal `\\n`, `\\"` in a string that has
    no real line breaks), which would otherwise write backslashes into the user's files."""
    if "\\" not in text or "\n" in text:
        return text
    return _ESCAPES.sub(lambda m: _UNESCAPED[m.group(1)], text)


def _unescape_args(value: Any) -> Any:
    if isinstance(value, str):
        return unescape_gemini_content(value)
    if isinstance(value, dict):
        return {k: _unescape_args(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unescape_args(v) for v in value]
    return value


def _method(self: Any) -> str:
    return "streamGenerateContent?alt=sse" if self.opts.get("stream", True) else "generateContent"


# --- request ------------------------------------------------------------------------


def build_parameters(self: Any, params: dict[str, Any], messages: Sequence[Message]) -> dict[str, Any]:
    params = dict(params)
    config = {
        wire: params.pop(key)
        for key, wire in (("temperature", "temperature"), ("top_p", "topP"), ("max_tokens", "maxOutputTokens"))
        if key in params
    }
    budget = params.pop("thinking_budget", None)
    if params.pop("show_thoughts", True):
        config["thinkingConfig"] = {"includeThoughts": True}
        if budget is not None:
            config["thinkingConfig"]["thinkingBudget"] = budget
    if config:
        params["generationConfig"] = config
    return params


def build_messages(self: Any, messages: Sequence[Message]) -> dict[str, Any]:
    system = [{"text": m.text} for m in messages if m.role == "system" and m.text]
    calls_by_id = {c.id: c for m in messages for c in m.tool_calls}
    format_response, format_calls = bound_handler(self, "format_response"), bound_handler(self, "format_calls")

    def parts_of(message: Message) -> list[dict[str, Any]]:
        return [p for part in message.parts for p in _to_parts(part, calls_by_id, format_response, format_calls)]

    contents = alternating_turns(messages, "model", "parts", parts_of)
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": system}
    return body


def _to_parts(
    part: Any, calls_by_id: dict[str, ToolCall], format_response: Callable[..., Any], format_calls: Callable[..., Any]
) -> list[dict[str, Any]]:
    if isinstance(part, TextPart):
        return [{"text": part.text}] if part.text else []
    if isinstance(part, ReasoningPart):
        return []  # thought summaries are for the reader; Gemini wants only signatures back
    if isinstance(part, ImagePart):
        if part.data:
            return [{"inlineData": {"mimeType": part.media_type, "data": part.data}}]
        return [{"fileData": {"mimeType": part.media_type, "fileUri": part.url}}]
    if isinstance(part, ToolCall):
        return format_calls([part])
    if isinstance(part, ToolResultPart):
        return [format_response(calls_by_id.get(part.tool_call_id, part), part.content)]
    return []


def build_tools(self: Any, tools: Sequence[ToolSpec | dict[str, Any]] | None) -> dict[str, Any] | None:
    declarations = function_declarations(self, tools)
    return {"tools": [{"functionDeclarations": declarations}]} if declarations else None


def function_declarations(self: Any, tools: Sequence[ToolSpec | dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Each tool's name, description and parameters, as Google's APIs declare a function."""
    declarations = []
    for tool in (_openai_tools(self, tools) or {}).get("tools", ()):
        fn = tool["function"]
        declaration = {"name": fn["name"], "description": fn["description"]}
        if fn["parameters"].get("properties"):  # Gemini rejects an object schema with no properties
            declaration["parameters"] = fn["parameters"]
        declarations.append(declaration)
    return declarations


def format_calls(self: Any, tool_calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    parts = []
    for call in tool_calls:
        part: dict[str, Any] = {"functionCall": {"name": call.name, "args": call.arguments}}
        data = (call.provider_data or {}).get(PROVIDER_KEY) or {}
        if data.get("thought_signature"):
            part["thoughtSignature"] = data["thought_signature"]
        if data.get("id"):
            part["functionCall"]["id"] = data["id"]
        parts.append(part)
    return parts


def format_response(self: Any, tool_call: ToolCall | ToolResultPart, output: str) -> dict[str, Any]:
    response: dict[str, Any] = {"name": tool_call.name, "response": {"result": output}}
    data = (tool_call.provider_data or {}).get(PROVIDER_KEY) or {} if isinstance(tool_call, ToolCall) else {}
    if data.get("id"):
        response["id"] = data["id"]
    return {"functionResponse": response}


# --- response -------------------------------------------------------------------------


def parse_chat(self: Any, data: Any, tools: Any = None) -> dict[str, Any] | None:
    response = decode(data)
    if response.error is not None:
        status = f" ({response.error.status})" if response.error.status else ""
        return {"status": "error", "output": f"{response.error.message}{status}"}
    if not response.candidates and response.prompt_feedback and response.prompt_feedback.block_reason:
        return {"status": "error", "output": f"the prompt was blocked ({response.prompt_feedback.block_reason})"}
    text: list[str] = []
    reasoning: list[str] = []
    finish = None
    for candidate in response.candidates or ():
        for part in candidate.content.parts if candidate.content else ():
            if part.function_call is not None:
                if tools is not None:
                    _add_call(tools, part.function_call, part.thought_signature)
            elif part.text:
                (reasoning if part.thought else text).append(part.text)
        if candidate.finish_reason:
            finish = _FINISH.get(candidate.finish_reason, candidate.finish_reason.lower())
    usage = response.usage_metadata
    result: dict[str, Any] = {
        "status": "success",
        "output": {"role": "assistant", "content": "".join(text) or None, "reasoning": "".join(reasoning) or None},
        "finish_reason": finish,
        "usage": usage_from(usage) if usage else None,
    }
    if finish:
        result["done"] = True  # the stream's end marker
    return result


def _add_call(tools: Any, call: _FunctionCall, thought_signature: str | None) -> None:
    key = len(tools)
    data: dict[str, Any] = {}
    if thought_signature:
        data["thought_signature"] = thought_signature
    if call.id:
        data["id"] = call.id
    arguments = msgspec.json.encode(_unescape_args(call.args or {})).decode()
    tools.add(key, id=call.id or None, name=call.name, arguments=arguments)
    if data:
        tools.set_provider_data(key, {PROVIDER_KEY: data})


def usage_from(raw: UsageMetadata) -> Usage:
    """Google's usage: thought tokens are output tokens too."""
    output = raw.candidates_token_count + (raw.thoughts_token_count or 0)
    return Usage(
        prompt_tokens=raw.prompt_token_count,
        completion_tokens=output,
        total_tokens=raw.total_token_count or raw.prompt_token_count + output,
        reasoning_tokens=raw.thoughts_token_count,
        cached_tokens=raw.cached_content_token_count,
    )


def parse_tokens(self: Any, data: Any) -> int | None:
    usage = decode(data).usage_metadata
    return usage_from(usage).total_tokens if usage else None


ADAPTER: dict[str, Any] = {
    "name": "gemini",
    "formatted_name": "Gemini",
    "url": "https://generativelanguage.googleapis.com/v1beta/models/${model}:${method}",
    "env": {"api_key": "GEMINI_API_KEY", "model": "schema.model.default", "method": _method},
    "headers": {"Content-Type": "application/json", "x-goog-api-key": "${api_key}"},
    "opts": provider_opts(
        required_env=["api_key"], models_url="https://generativelanguage.googleapis.com/v1beta/models?pageSize=200"
    ),
    "features": {"text": True, "tokens": True},
    "schema": {
        # the model is part of the url, not the body
        "model": setting(
            1,
            "enum",
            "gemini-2.5-flash",
            mapping=None,
            choices=["gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-3-pro-preview"],
        ),
        "temperature": setting(2, "number", optional=True),
        "max_tokens": setting(3, "integer", optional=True),
        "show_thoughts": setting(4, "boolean", True, desc="Ask for thought summaries, shown as reasoning."),
        "thinking_budget": setting(5, "integer", optional=True),
    },
    "handlers": handler_table(globals()),
}
