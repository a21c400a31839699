"""OpenAI Responses API (`POST /v1/responses`), streamed or not.

Streamed frames are typed events: `response.output_text.delta`, `response.output_item.added`
and `.done`, `response.function_call_arguments.delta`, `response.reasoning_summary_text.delta`,
`response.completed` / `.incomplete` / `.failed`, and `error`. The first two end the stream
(`.failed` and `error` end it as errors); a body that ends before any of them was cut off,
and its tool calls are not run. Tool calls are keyed by
`output_index`; their id for the canonical model is the `call_id` (what a
`function_call_output` must name), not the item's own `fc_...` id. With `store: false`
reasoning items come back with `encrypted_content`, kept with the item id in
`provider_data["openai_responses"]` and sent back verbatim on later turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ...messages import ImagePart, Message, ReasoningPart, TextPart, ToolCall, ToolResultPart, ToolSpec
from .openai import MODELS_URL, ChatUsage, TokenDetails, openai_account, usage_from
from .openai import build_tools as _openai_tools
from .wire import frame_decoder, handler_table, provider_opts, setting, setup_stream_flag, whole_response

PROVIDER_KEY = "openai_responses"
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


class _Summary(msgspec.Struct):
    text: str = ""


class _Content(msgspec.Struct):
    type: str = ""
    text: str | None = None


class _Item(msgspec.Struct):
    type: str = ""
    id: str | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    content: list[_Content] | None = None
    summary: list[_Summary] | None = None
    encrypted_content: str | None = None


class _Usage(ChatUsage):
    """The Responses API's usage, read into Chat Completions' fields for `usage_from`."""

    prompt_tokens: int = msgspec.field(default=0, name="input_tokens")
    completion_tokens: int = msgspec.field(default=0, name="output_tokens")
    prompt_tokens_details: TokenDetails | None = msgspec.field(default=None, name="input_tokens_details")
    completion_tokens_details: TokenDetails | None = msgspec.field(default=None, name="output_tokens_details")


class _Error(msgspec.Struct):
    message: str = ""
    code: str | None = None


class _Incomplete(msgspec.Struct):
    reason: str | None = None


class _Response(msgspec.Struct):
    status: str | None = None
    output: list[_Item] | None = None
    usage: _Usage | None = None
    error: _Error | None = None
    incomplete_details: _Incomplete | None = None


class _Event(msgspec.Struct):
    type: str = ""
    output_index: int = 0
    delta: str | None = None
    item: _Item | None = None
    response: _Response | None = None
    error: _Error | None = None
    message: str | None = None  # `error` events put it at the top level in the SDK's type
    code: str | None = None
    # a non-streamed body is a response object at the top level
    object: str | None = None
    status: str | None = None
    output: list[_Item] | None = None
    usage: _Usage | None = None
    incomplete_details: _Incomplete | None = None


decode = frame_decoder(_Event)


# --- request --------------------------------------------------------------------------


def build_parameters(self: Any, params: dict[str, Any], messages: Sequence[Message]) -> dict[str, Any]:
    params = dict(params)
    params["store"] = False
    params["include"] = ["reasoning.encrypted_content"]
    effort = params.pop("reasoning_effort", None)
    if effort:
        params["reasoning"] = {"effort": effort, "summary": "auto"}
    if "max_tokens" in params:
        params["max_output_tokens"] = params.pop("max_tokens")
    return params


def build_messages(self: Any, messages: Sequence[Message]) -> dict[str, Any]:
    instructions = "\n\n".join(m.text for m in messages if m.role == "system" and m.text)
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        items.extend(_items(message))
    body: dict[str, Any] = {"input": items}
    if instructions:
        body["instructions"] = instructions
    return body


def _items(message: Message) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for result in message.tool_results:
        items.append(format_response(None, result, result.content))
    if message.role == "assistant":
        for part in message.parts:
            if not isinstance(part, ReasoningPart):
                continue
            data = (part.provider_data or {}).get(PROVIDER_KEY)
            if data and data.get("encrypted_content"):  # only our own reasoning can go back
                items.append(
                    {
                        "type": "reasoning",
                        "id": data["id"],
                        "encrypted_content": data["encrypted_content"],
                        "summary": [{"type": "summary_text", "text": part.text}] if part.text else [],
                    }
                )
        if message.text:
            items.append({"role": "assistant", "content": [{"type": "output_text", "text": message.text}]})
        items.extend(format_calls(None, message.tool_calls))
    elif message.role == "user":
        content = [_user_content(p) for p in message.parts if isinstance(p, (TextPart, ImagePart))]
        if content:
            items.append({"role": "user", "content": content})
    return items


def _user_content(part: TextPart | ImagePart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "input_text", "text": part.text}
    return {"type": "input_image", "image_url": part.url or f"data:{part.media_type};base64,{part.data}"}


def build_tools(self: Any, tools: Sequence[ToolSpec | dict[str, Any]] | None) -> dict[str, Any] | None:
    wire = _openai_tools(self, tools)
    if not wire:
        return None
    return {"tools": [{"type": "function", **tool["function"]} for tool in wire["tools"]]}


def format_calls(self: Any, tool_calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function_call",
            "call_id": c.id,
            "name": c.name,
            "arguments": msgspec.json.encode(c.arguments).decode(),
        }
        for c in tool_calls
    ]


def format_response(self: Any, tool_call: ToolCall | ToolResultPart, output: str) -> dict[str, Any]:
    call_id = tool_call.tool_call_id if isinstance(tool_call, ToolResultPart) else tool_call.id
    return {"type": "function_call_output", "call_id": call_id, "output": output}


# --- response -------------------------------------------------------------------------


def parse_chat(self: Any, data: Any, tools: Any = None) -> dict[str, Any] | None:
    event = decode(data)
    kind = event.type
    output: dict[str, Any] = {"role": "assistant", "content": None, "reasoning": None}
    result: dict[str, Any] = {"status": "success", "output": output}
    if kind == "response.output_text.delta" or kind == "response.refusal.delta":
        output["content"] = event.delta
    elif kind == "response.reasoning_summary_text.delta":
        output["reasoning"] = event.delta
    elif kind == "response.function_call_arguments.delta":
        if tools is not None:
            tools.add(event.output_index, arguments=event.delta)
    elif kind == "response.output_item.added" and event.item is not None:
        if event.item.type == "function_call" and tools is not None:
            tools.add(event.output_index, id=event.item.call_id, name=event.item.name)
    elif kind == "response.output_item.done" and event.item is not None:
        if event.item.type == "reasoning":
            result["reasoning_end"] = _reasoning_data(event.item)
    elif kind in ("response.completed", "response.incomplete", "response.failed"):
        response = event.response or _Response()
        if kind == "response.failed":
            error = response.error or _Error(message="the response failed")
            return {"status": "error", "output": error.message}
        result["finish_reason"] = _finish(response)
        result["done"] = True  # the stream's end marker
        result["usage"] = usage_from(response.usage) if response.usage else None
    elif kind == "error":
        error = event.error or _Error(message=event.message or "", code=event.code)
        return {"status": "error", "output": error.message or error.code or "unknown error"}
    elif event.object == "response":
        return _whole_response(event, tools)
    else:
        return None  # created, in_progress, content_part.*, *.done and event types added later
    return result


def _reasoning_data(item: _Item) -> dict[str, Any]:
    return {PROVIDER_KEY: {"id": item.id, "encrypted_content": item.encrypted_content}}


def _finish(response: _Response | _Event) -> str:
    if response.status == "incomplete" and response.incomplete_details:
        return _INCOMPLETE.get(response.incomplete_details.reason or "", "length")
    return "stop"


def _whole_response(event: _Event, tools: Any) -> dict[str, Any]:
    text: list[str] = []
    reasoning: list[str] = []
    reasoning_end = None
    for index, item in enumerate(event.output or ()):
        if item.type == "message":
            text += [c.text or "" for c in item.content or () if c.type in ("output_text", "refusal")]
        elif item.type == "reasoning":
            reasoning += [s.text for s in item.summary or ()]
            reasoning_end = _reasoning_data(item)
        elif item.type == "function_call" and tools is not None:
            tools.add(index, id=item.call_id, name=item.name, arguments=item.arguments)
    return whole_response(
        text,
        reasoning,
        finish_reason=_finish(event),
        usage=usage_from(event.usage) if event.usage else None,
        reasoning_end=reasoning_end,
    )


def parse_tokens(self: Any, data: Any) -> int | None:
    event = decode(data)
    usage = event.usage or (event.response.usage if event.response else None)
    return usage_from(usage).total_tokens if usage else None


ADAPTER: dict[str, Any] = {
    "name": "openai_responses",
    "formatted_name": "OpenAI Responses",
    "url": "https://api.openai.com/v1/responses",
    **openai_account(),
    "opts": provider_opts(required_env=["api_key"], models_url=MODELS_URL),
    "features": {"text": True, "tokens": True},
    "schema": {
        "model": setting(
            1, "enum", "gpt-5-mini", choices=["gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-4.1", "o3", "o4-mini"]
        ),
        "reasoning_effort": setting(2, "string", "medium", optional=True, choices=["minimal", "low", "medium", "high"]),
        "max_tokens": setting(3, "integer", optional=True),
    },
    "handlers": handler_table(globals(), setup=setup_stream_flag),
}
