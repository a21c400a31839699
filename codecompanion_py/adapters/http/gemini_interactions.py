"""Google's Interactions API (`POST /v1beta/interactions`), streamed (`?alt=sse`) or not.

The request is stateless (`store: false`): the whole conversation goes as typed steps in
`input` (`user_input`, `model_output`, `thought`, `function_call`, `function_result`), the
system prompt as `system_instruction`, sampling and thinking settings in `generation_config`.

A streamed reply is SSE frames tagged by `event_type`: `step.start` opens step `index`
(a thought, a model_output or a function_call, sometimes with its first content), `step.delta`
adds to it (`text`, `thought_summary`, `thought_signature`, `arguments_delta`), and
`interaction.completed` ends the stream with the usage; an `error` frame ends it as an error.
A body that ends before `interaction.completed` was cut off, and its tool calls are not run.
A whole body is the Interaction itself, its `steps` holding the same steps complete.

Signatures must go back verbatim on later turns: a thought's is kept in its reasoning part's
`provider_data["gemini_interactions"]`, a function call's in the call's. Reasoning from
another provider has no signature this API would accept and is not sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeGuard

import msgspec

from ...messages import ImagePart, Message, ReasoningPart, TextPart, ToolCall, ToolResultPart, ToolSpec
from ..handlers import bound_handler
from .gemini import UsageMetadata, function_declarations, usage_from
from .wire import frame_decoder, handler_table, provider_opts, setting, setup_stream_flag, whole_response

PROVIDER_KEY = "gemini_interactions"
# schema settings that the API reads from `generation_config`, not the top level
_GENERATION = (
    "temperature",
    "top_p",
    "top_k",
    "max_output_tokens",
    "thinking_level",
    "thinking_summaries",
    "presence_penalty",
    "frequency_penalty",
)
_STATUS_FINISH = {"completed": "stop", "requires_action": "tool_calls", "incomplete": "length"}


class _Block(msgspec.Struct):
    type: str = ""
    text: str | None = None


class _Step(msgspec.Struct):
    type: str = ""
    id: str | None = None
    name: str | None = None
    arguments: Any = None
    signature: str | None = None
    content: list[_Block] | None = None
    summary: list[_Block] | None = None


class _Delta(msgspec.Struct):
    type: str = ""
    text: str | None = None
    signature: str | None = None
    arguments: Any = None
    content: _Block | None = None


class _Usage(UsageMetadata):
    """The Interactions API's usage, read into generateContent's fields for `usage_from`."""

    prompt_token_count: int = msgspec.field(default=0, name="total_input_tokens")
    candidates_token_count: int = msgspec.field(default=0, name="total_output_tokens")
    thoughts_token_count: int | None = msgspec.field(default=None, name="total_thought_tokens")
    cached_content_token_count: int | None = msgspec.field(default=None, name="total_cached_tokens")
    total_token_count: int = msgspec.field(default=0, name="total_tokens")


class _Error(msgspec.Struct):
    message: str = ""
    code: Any = None


class _Interaction(msgspec.Struct):
    status: str | None = None
    steps: list[_Step] | None = None
    usage: _Usage | None = None
    error: _Error | None = None


class _Frame(_Interaction):
    """A streamed event, or (with no `event_type`) a whole non-streamed Interaction."""

    event_type: str | None = None
    index: int = 0
    step: _Step | None = None
    delta: _Delta | None = None
    interaction: _Interaction | None = None


decode = frame_decoder(_Frame)


# --- request --------------------------------------------------------------------------


def _stream_query(self: Any) -> str:
    return "?alt=sse" if self.opts.get("stream", True) else ""


def build_parameters(self: Any, params: dict[str, Any], messages: Sequence[Message]) -> dict[str, Any]:
    params = dict(params)
    config = {key: params.pop(key) for key in _GENERATION if key in params}
    if config:
        params["generation_config"] = config
    params["store"] = False  # stateless: every request carries the whole conversation
    return params


def build_messages(self: Any, messages: Sequence[Message]) -> dict[str, Any]:
    system = "\n\n".join(m.text for m in messages if m.role == "system" and m.text)
    format_response, format_calls = bound_handler(self, "format_response"), bound_handler(self, "format_calls")
    steps: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            steps.extend(_model_steps(message, format_calls))
        elif message.role != "system":
            steps.extend(format_response(r, r.content) for r in message.tool_results)
            content = [_user_content(p) for p in message.parts if isinstance(p, ImagePart) or _has_text(p)]
            if content:
                steps.append({"type": "user_input", "content": content})
    body: dict[str, Any] = {"input": steps}
    if system:
        body["system_instruction"] = system
    return body


def _has_text(part: Any) -> TypeGuard[TextPart]:
    return isinstance(part, TextPart) and bool(part.text)


def _model_steps(message: Message, format_calls: Callable[..., Any]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ReasoningPart):
            signature = ((part.provider_data or {}).get(PROVIDER_KEY) or {}).get("signature")
            if signature:
                step: dict[str, Any] = {"type": "thought", "signature": signature}
                if part.text:
                    step["summary"] = [{"type": "text", "text": part.text}]
                steps.append(step)
        elif _has_text(part):
            steps.append({"type": "model_output", "content": [{"type": "text", "text": part.text}]})
        elif isinstance(part, ToolCall):
            steps.extend(format_calls([part]))
    return steps


def _user_content(part: TextPart | ImagePart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if part.data:
        return {"type": "image", "data": part.data, "mime_type": part.media_type}
    return {"type": "image", "uri": part.url, "mime_type": part.media_type}


def build_tools(self: Any, tools: Sequence[ToolSpec | dict[str, Any]] | None) -> dict[str, Any] | None:
    declarations = function_declarations(self, tools)
    return {"tools": [{"type": "function", **d} for d in declarations]} if declarations else None


def format_calls(self: Any, tool_calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    steps = []
    for call in tool_calls:
        step: dict[str, Any] = {"type": "function_call", "id": call.id, "name": call.name, "arguments": call.arguments}
        signature = ((call.provider_data or {}).get(PROVIDER_KEY) or {}).get("signature")
        if signature:
            step["signature"] = signature
        steps.append(step)
    return steps


def format_response(self: Any, tool_call: ToolCall | ToolResultPart, output: str) -> dict[str, Any]:
    call_id = tool_call.tool_call_id if isinstance(tool_call, ToolResultPart) else tool_call.id
    return {
        "type": "function_result",
        "name": tool_call.name,
        "call_id": call_id,
        "result": [{"type": "text", "text": output}],
    }


# --- response -------------------------------------------------------------------------


def parse_chat(self: Any, data: Any, tools: Any = None) -> dict[str, Any] | None:
    frame = decode(data)
    kind = frame.event_type
    if kind is None:
        return _whole(frame, tools)
    output: dict[str, Any] = {"role": "assistant", "content": None, "reasoning": None}
    result: dict[str, Any] = {"status": "success", "output": output}
    if kind == "step.delta" and frame.delta is not None:
        delta = frame.delta
        if delta.type == "text":
            output["content"] = delta.text
        elif delta.type == "thought_summary":
            output["reasoning"] = delta.content.text if delta.content else delta.text
        elif delta.type == "thought_signature":
            if delta.signature:
                result["reasoning_end"] = {PROVIDER_KEY: {"signature": delta.signature}}
        elif delta.type == "arguments_delta" and tools is not None:
            tools.add(frame.index, arguments=_arguments_text(delta.arguments))
    elif kind == "step.start" and frame.step is not None:
        _read_step(frame.step, frame.index, output, result, tools)
    elif kind == "interaction.completed":
        interaction = frame.interaction or _Interaction()
        if interaction.status == "failed":
            return _error(interaction.error or _Error(message="the interaction failed"))
        result["finish_reason"] = _STATUS_FINISH.get(interaction.status or "", "stop")
        result["done"] = True  # the stream's end marker
        result["usage"] = usage_from(interaction.usage) if interaction.usage else None
    elif kind == "error":
        return _error(frame.error or _Error(message="unknown error"))
    else:
        return None  # interaction.created, status updates, step.stop and event types added later
    return result


def _read_step(step: _Step, index: int, output: dict[str, Any], result: dict[str, Any], tools: Any) -> None:
    """One step's content (whole, or the first of it at `step.start`) into `output`."""
    if step.type == "thought":
        output["reasoning"] = _joined(step.summary)
        if step.signature:
            result["reasoning_end"] = {PROVIDER_KEY: {"signature": step.signature}}
    elif step.type == "model_output":
        output["content"] = _joined(step.content)
    elif step.type == "function_call" and tools is not None:
        # at step.start `arguments` is an empty placeholder; the text follows in deltas
        tools.add(index, id=step.id or None, name=step.name, arguments=_arguments_text(step.arguments))
        if step.signature:
            tools.set_provider_data(index, {PROVIDER_KEY: {"signature": step.signature}})


def _whole(interaction: _Frame, tools: Any) -> dict[str, Any]:
    if interaction.status == "failed" or (interaction.error and not interaction.steps):
        return _error(interaction.error or _Error(message="the interaction failed"))
    text: list[str] = []
    reasoning: list[str] = []
    reasoning_end = None
    for index, step in enumerate(interaction.steps or ()):
        output: dict[str, Any] = {}
        result: dict[str, Any] = {}
        _read_step(step, index, output, result, tools)  # user_input echoed back is skipped
        text.append(output.get("content") or "")
        reasoning.append(output.get("reasoning") or "")
        reasoning_end = result.get("reasoning_end", reasoning_end)
    return whole_response(
        text,
        reasoning,
        finish_reason=_STATUS_FINISH.get(interaction.status or "", "stop"),
        usage=usage_from(interaction.usage) if interaction.usage else None,
        reasoning_end=reasoning_end,
    )


def _joined(blocks: list[_Block] | None) -> str | None:
    return "".join(b.text or "" for b in blocks or () if b.type == "text") or None


def _arguments_text(arguments: Any) -> str | None:
    if isinstance(arguments, str):
        return arguments or None
    return msgspec.json.encode(arguments).decode() if arguments else None


def _error(error: _Error) -> dict[str, Any]:
    code = f" ({error.code})" if isinstance(error.code, str) and error.code else ""
    return {"status": "error", "output": f"{error.message or 'unknown error'}{code}"}


def parse_tokens(self: Any, data: Any) -> int | None:
    frame = decode(data)
    usage = frame.interaction.usage if frame.interaction else frame.usage
    return usage_from(usage).total_tokens if usage else None


_MODELS = [
    "gemini-3.1-pro-preview",
    "gemini-3.5-flash",
    "gemini-3.1-flash-lite-preview",
    "gemini-3-flash-preview",
    "gemini-2.5-pro",
    "gemini-2.5-flash",
    "gemini-2.5-flash-lite",
]

ADAPTER: dict[str, Any] = {
    "name": "gemini_interactions",
    "formatted_name": "Gemini Interactions",
    "url": "https://generativelanguage.googleapis.com/v1beta/interactions${stream}",
    "env": {"api_key": "GEMINI_API_KEY", "stream": _stream_query},
    "headers": {"Content-Type": "application/json", "x-goog-api-key": "${api_key}"},
    "opts": provider_opts(
        required_env=["api_key"], models_url="https://generativelanguage.googleapis.com/v1beta/models?pageSize=200"
    ),
    "features": {"text": True, "tokens": True},
    "schema": {
        "model": setting(1, "enum", _MODELS[0], choices=_MODELS),
        "max_output_tokens": setting(2, "integer", optional=True),
        "temperature": setting(3, "number", optional=True),
        "top_p": setting(4, "number", optional=True),
        "top_k": setting(5, "integer", optional=True),
        "thinking_level": setting(6, "string", "high", optional=True, choices=["high", "medium", "low", "none"]),
        "thinking_summaries": setting(7, "string", "auto", optional=True),
        "presence_penalty": setting(8, "number", optional=True),
        "frequency_penalty": setting(9, "number", optional=True),
    },
    "handlers": handler_table(globals(), setup=setup_stream_flag),
}
