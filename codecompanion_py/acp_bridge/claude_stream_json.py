"""Claude Code over its stream-json mode, as an ACP agent.

    claude -p --output-format stream-json --input-format stream-json --verbose
           --permission-prompt-tool stdio [--include-partial-messages] [--model M]
           [--permission-mode P] [extra args]

One persistent process serves one session (it is not restarted if it dies). A prompt is
one `user` line on its stdin; the turn ends with its `result` line. Mapping:

    stream_event text_delta / thinking_delta    agent_message_chunk / agent_thought_chunk
    assistant text / thinking blocks            the same, unless that message was streamed
    assistant tool_use                          tool_call (TodoWrite: a plan instead)
    user tool_result                            tool_call_update (completed or failed, output)
    control_request can_use_tool                session/request_permission; the answer goes
                                                back as a control_response allow / deny
    result                                      the prompt's answer: stopReason and usage,
                                                or a JSON-RPC error when it is an error
    system init                                 available_commands_update (slash commands)
    session/cancel                              control_request interrupt; the turn's
                                                answer is then `cancelled`
    session/set_mode                            control_request set_permission_mode

Messages from subagents (parent_tool_use_id set) show their tool calls, not their text.
Options: executable (argv list or a command string), model, permission_mode,
partial_messages (default true), extra_args.
"""

from __future__ import annotations

import json
import shlex
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..acp.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND
from .contract import LATER, BridgeAdapter, Failure, NativeExited, Reaction
from .environment import executable_argv
from .messages import error_response, json_object, outcome_of, request, response, session_update, text_chunk, usage_from

MODES = [
    {"id": "default", "name": "Default", "description": "Ask before edits and commands"},
    {"id": "acceptEdits", "name": "Accept edits", "description": "Edit files without asking"},
    {"id": "plan", "name": "Plan", "description": "Plan only, change nothing"},
    {"id": "bypassPermissions", "name": "Bypass permissions", "description": "Never ask"},
]
MODE_IDS = frozenset(m["id"] for m in MODES)

PERMISSION_OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]

_KINDS = {
    "Bash": "execute",
    "BashOutput": "execute",
    "KillShell": "execute",
    "Read": "read",
    "Edit": "edit",
    "MultiEdit": "edit",
    "Write": "edit",
    "NotebookEdit": "edit",
    "Glob": "search",
    "Grep": "search",
    "LS": "search",
    "WebFetch": "fetch",
    "WebSearch": "fetch",
    "Task": "think",
    "ExitPlanMode": "switch_mode",
}

_STOP_REASONS = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "end_turn",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
}


@dataclass(frozen=True)
class ClaudeState:
    argv: tuple[str, ...]
    session_id: str
    mode: str = "default"
    initial_mode: str = "default"
    started: bool = False
    cli_session_id: str | None = None
    prompt_id: Any = None
    prompt_session: str | None = None
    cancelling: bool = False
    counter: int = 0
    stream_message: str = ""
    """The id of the message being streamed ("" when the stream gives none)."""
    streamed: frozenset[str] = frozenset()
    """Messages whose text or thinking already went out as deltas."""
    tools: Mapping[str, tuple[str, Any]] = field(default_factory=dict)
    """tool_use id -> (tool name, input)."""
    permissions: Mapping[str, tuple[Any, Any, Any]] = field(default_factory=dict)
    """our session/request_permission id -> (control request_id as Claude sent it, tool input,
    suggestions)."""


def _line(message: Mapping[str, Any]) -> str:
    return json.dumps(message, ensure_ascii=False) + "\n"


def tool_title(name: str, data: Any) -> str:
    args = data if isinstance(data, dict) else {}
    path = args.get("file_path") or args.get("notebook_path") or args.get("path")
    if name == "Bash" and args.get("command"):
        return f"`{args['command']}`"
    if name in ("Read", "Edit", "MultiEdit", "Write", "NotebookEdit") and path:
        return f"{name} {path}"
    if name in ("Glob", "Grep") and args.get("pattern"):
        return f"{name} {args['pattern']}" + (f" in {path}" if path else "")
    if name == "WebFetch" and args.get("url"):
        return f"Fetch {args['url']}"
    if name == "WebSearch" and args.get("query"):
        return f"Search the web: {args['query']}"
    if name == "Task" and args.get("description"):
        return f"Task: {args['description']}"
    return name or "tool"


def tool_fields(name: str, data: Any) -> dict[str, Any]:
    """title, kind, locations and (for edits) diff content of a Claude tool call."""
    args = data if isinstance(data, dict) else {}
    fields: dict[str, Any] = {"title": tool_title(name, args), "kind": _KINDS.get(name, "other"), "rawInput": args}
    path = args.get("file_path") or args.get("notebook_path")
    if isinstance(path, str):
        fields["locations"] = [{"path": path}]
        if name == "Edit" and isinstance(args.get("new_string"), str):
            fields["content"] = [
                {"type": "diff", "path": path, "oldText": args.get("old_string"), "newText": args["new_string"]}
            ]
        elif name == "Write" and isinstance(args.get("content"), str):
            fields["content"] = [{"type": "diff", "path": path, "oldText": None, "newText": args["content"]}]
    return fields


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return "" if content is None else json.dumps(content)


def _plan(todos: Any) -> list[dict[str, Any]]:
    entries = []
    for todo in todos if isinstance(todos, list) else []:
        if isinstance(todo, dict) and todo.get("content"):
            status = todo.get("status")
            entries.append(
                {
                    "content": str(todo["content"]),
                    "priority": "medium",
                    "status": status if status in ("pending", "in_progress", "completed") else "pending",
                }
            )
    return entries


USAGE = {
    "inputTokens": "input_tokens",
    "outputTokens": "output_tokens",
    "cachedReadTokens": "cache_read_input_tokens",
    "cachedWriteTokens": "cache_creation_input_tokens",
}
"""ACP's usage fields and Claude's; its cache reads and writes count in the total."""


def user_content(blocks: Any) -> list[dict[str, Any]]:
    """ACP prompt blocks as the content of a Claude user message."""
    content: list[dict[str, Any]] = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            content.append({"type": "text", "text": str(block.get("text", ""))})
        elif kind == "image" and block.get("data"):
            content.append(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": block.get("mimeType"), "data": block["data"]},
                }
            )
        elif kind == "resource_link":
            content.append({"type": "text", "text": "@" + str(block.get("uri", ""))})
        elif kind == "resource" and isinstance(block.get("resource"), dict):
            resource = block["resource"]
            if isinstance(resource.get("text"), str):
                content.append(
                    {
                        "type": "text",
                        "text": f'<context ref="{resource.get("uri", "")}">\n{resource["text"]}\n</context>',
                    }
                )
            else:
                content.append({"type": "text", "text": "@" + str(resource.get("uri", ""))})
    return content


class ClaudeStreamJsonAdapter(BridgeAdapter):
    name = "claude-stream-json"
    title = "Claude Code"
    install = "npm install -g @anthropic-ai/claude-code"

    def init(self, opts: Mapping[str, Any]) -> ClaudeState:
        mode = str(opts.get("permission_mode") or "default")
        return ClaudeState(argv=tuple(self.command(opts)), session_id=str(uuid.uuid4()), mode=mode, initial_mode=mode)

    def command(self, opts: Mapping[str, Any]) -> list[str]:
        argv = [
            *executable_argv(opts, "claude"),
            "-p",
            "--output-format",
            "stream-json",
            "--input-format",
            "stream-json",
            "--verbose",
            "--permission-prompt-tool",
            "stdio",
        ]
        if opts.get("partial_messages", True) not in (False, "false", "0", 0):
            argv.append("--include-partial-messages")
        if opts.get("model"):
            argv += ["--model", str(opts["model"])]
        if opts.get("permission_mode"):
            argv += ["--permission-mode", str(opts["permission_mode"])]
        extra = opts.get("extra_args")
        if isinstance(extra, str):
            argv += shlex.split(extra)
        elif isinstance(extra, (list, tuple)):
            argv += [str(part) for part in extra]
        return argv

    def capabilities(self) -> dict[str, Any]:
        return {"loadSession": False, "promptCapabilities": {"image": True, "embeddedContext": True}}

    def modes(self) -> list[dict[str, Any]]:
        return MODES

    def post_connect(self, state: ClaudeState) -> Reaction:
        state = replace(state, started=True)
        if state.mode != state.initial_mode:  # chosen before the process was up
            data, state = self._control(state, {"subtype": "set_permission_mode", "mode": state.mode})
            return Reaction(state, write=data)
        return Reaction(state)

    def handle_adapter_message(self, message: Any, state: ClaudeState) -> Reaction:
        if not isinstance(message, NativeExited):
            return Reaction(state)
        answers = [error_response(state.prompt_id, message.description)] if state.prompt_id is not None else []
        state = replace(state, prompt_id=None, cancelling=False, permissions={}, streamed=frozenset())
        return Reaction(state, messages=answers)

    # --- ACP -> Claude ----------------------------------------------------------------

    def translate_outbound(self, message: dict[str, Any], state: ClaudeState) -> Reaction:
        method = message.get("method")
        params = json_object(message.get("params"))
        if method is None:
            return self._answered(message, state)
        if method == "session/new":
            return Reaction(
                state,
                reply={
                    "sessionId": state.session_id,
                    "modes": {"currentModeId": state.mode, "availableModes": MODES},
                    "_meta": {"claudeCode": {"argv": list(state.argv)}},
                },
            )
        if method == "session/prompt":
            if state.prompt_id is not None:
                return Reaction(state, reply=Failure("a prompt is already running in this session", INVALID_PARAMS))
            content = user_content(params.get("prompt"))
            if not content:
                return Reaction(state, reply=Failure("the prompt is empty", INVALID_PARAMS))
            line = _line(
                {
                    "type": "user",
                    "message": {"role": "user", "content": content},
                    "parent_tool_use_id": None,
                    "session_id": state.cli_session_id or "default",
                }
            )
            return Reaction(
                replace(
                    state,
                    prompt_id=message["id"],
                    cancelling=False,
                    prompt_session=str(params.get("sessionId") or state.session_id),
                ),
                write=line,
                reply=LATER,
            )
        if method == "session/cancel":
            if state.prompt_id is None or state.cancelling:
                return Reaction(state)
            data, state = self._control(state, {"subtype": "interrupt"})
            return Reaction(replace(state, cancelling=True), write=data)
        if method == "session/set_mode":
            mode = params.get("modeId")
            if mode not in MODE_IDS:
                return Reaction(state, reply=Failure(f"unknown mode {mode!r}", INVALID_PARAMS))
            state = replace(state, mode=mode)
            if not state.started:
                return Reaction(state, reply={})  # post_connect sends it
            data, state = self._control(state, {"subtype": "set_permission_mode", "mode": mode})
            return Reaction(state, reply={}, write=data)
        if method in ("session/close", "session/delete"):
            return Reaction(state, reply={})
        if "id" in message:
            return Reaction(state, reply=Failure(f"method not found: {method}", METHOD_NOT_FOUND))
        return Reaction(state)  # other notifications

    def _answered(self, message: dict[str, Any], state: ClaudeState) -> Reaction:
        """The client answered one of our permission requests."""
        ask_id = message.get("id")
        pending = state.permissions.get(ask_id) if isinstance(ask_id, str) else None
        if pending is None:
            return Reaction(state)
        control_id, tool_input, suggestions = pending
        permissions = {k: v for k, v in state.permissions.items() if k != ask_id}
        state = replace(state, permissions=permissions)
        outcome = outcome_of(message)
        option = outcome.get("optionId") if outcome.get("outcome") == "selected" else None
        if option in ("allow", "allow_always"):
            decision: dict[str, Any] = {"behavior": "allow", "updatedInput": tool_input}
            if option == "allow_always" and suggestions:
                decision["updatedPermissions"] = suggestions
        elif option is None:
            decision = {"behavior": "deny", "message": "The user cancelled the turn.", "interrupt": True}
        else:
            decision = {"behavior": "deny", "message": "The user rejected this tool use."}
        reply = {
            "type": "control_response",
            "response": {"subtype": "success", "request_id": control_id, "response": decision},
        }
        return Reaction(state, write=_line(reply))

    def _control(self, state: ClaudeState, body: dict[str, Any]) -> tuple[str, ClaudeState]:
        state = replace(state, counter=state.counter + 1)
        return _line({"type": "control_request", "request_id": f"ccpy-{state.counter}", "request": body}), state

    # --- Claude -> ACP ----------------------------------------------------------------

    def translate_inbound(self, line: str, state: ClaudeState) -> Reaction:
        try:
            event = json.loads(line)
        except ValueError:
            return Reaction(state)
        if not isinstance(event, dict):
            return Reaction(state)
        kind = event.get("type")
        if not isinstance(kind, str):
            return Reaction(state)
        handler = {
            "stream_event": self._stream_event,
            "assistant": self._assistant,
            "user": self._user,
            "result": self._result,
            "system": self._system,
            "control_request": self._control_request,
        }.get(kind)
        return handler(event, state) if handler else Reaction(state)

    def _sid(self, state: ClaudeState) -> str:
        return state.prompt_session or state.session_id

    def _stream_event(self, event: dict[str, Any], state: ClaudeState) -> Reaction:
        inner = event.get("event")
        if not isinstance(inner, dict) or state.prompt_id is None:
            return Reaction(state)
        if inner.get("type") == "message_start":
            message = inner.get("message")
            ident = message.get("id") if isinstance(message, dict) else None
            return Reaction(replace(state, stream_message=str(ident or "")))
        if inner.get("type") != "content_block_delta" or event.get("parent_tool_use_id") or state.cancelling:
            return Reaction(state)
        delta = json_object(inner.get("delta"))
        if delta.get("type") == "text_delta" and delta.get("text"):
            chunk = text_chunk(self._sid(state), str(delta["text"]))
        elif delta.get("type") == "thinking_delta" and delta.get("thinking"):
            chunk = text_chunk(self._sid(state), str(delta["thinking"]), "agent_thought_chunk")
        else:
            return Reaction(state)
        return Reaction(replace(state, streamed=state.streamed | {state.stream_message}), messages=[chunk])

    def _assistant(self, event: dict[str, Any], state: ClaudeState) -> Reaction:
        message = json_object(event.get("message"))
        blocks = message.get("content")
        streamed = str(message.get("id") or "") in state.streamed
        nested = bool(event.get("parent_tool_use_id"))
        sid = self._sid(state)
        out: list[dict[str, Any]] = []
        tools = dict(state.tools)
        for block in blocks if isinstance(blocks, list) else []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind in ("text", "thinking") and not streamed and not nested and not state.cancelling:
                text = block.get("text") if kind == "text" else block.get("thinking")
                if text:
                    out.append(
                        text_chunk(sid, str(text), "agent_message_chunk" if kind == "text" else "agent_thought_chunk")
                    )
            elif kind == "tool_use" and block.get("id"):
                name, args = str(block.get("name") or ""), block.get("input")
                tools[str(block["id"])] = (name, args)
                if name == "TodoWrite" and isinstance(args, dict):
                    out.append(session_update(sid, "plan", entries=_plan(args.get("todos"))))
                else:
                    out.append(
                        session_update(
                            sid, "tool_call", toolCallId=str(block["id"]), status="pending", **tool_fields(name, args)
                        )
                    )
        state = replace(state, tools=tools)
        return Reaction(state, messages=out)

    def _user(self, event: dict[str, Any], state: ClaudeState) -> Reaction:
        message = json_object(event.get("message"))
        blocks = message.get("content")
        out = []
        for block in blocks if isinstance(blocks, list) else []:
            if not isinstance(block, dict) or block.get("type") != "tool_result" or not block.get("tool_use_id"):
                continue
            call_id = str(block["tool_use_id"])
            if state.tools.get(call_id, ("", None))[0] == "TodoWrite":
                continue
            text = _result_text(block.get("content"))
            status = "failed" if block.get("is_error") else "completed"
            update: dict[str, Any] = {"toolCallId": call_id, "status": status}
            if text:
                update["content"] = [{"type": "content", "content": {"type": "text", "text": text}}]
            if "tool_use_result" in event:
                update["rawOutput"] = event["tool_use_result"]
            out.append(session_update(self._sid(state), "tool_call_update", **update))
        return Reaction(state, messages=out)

    def _result(self, event: dict[str, Any], state: ClaudeState) -> Reaction:
        if state.prompt_id is None:
            return Reaction(state)
        prompt_id = state.prompt_id
        cancelling = state.cancelling
        state = replace(
            state,
            prompt_id=None,
            cancelling=False,
            streamed=frozenset(),
            stream_message="",
            cli_session_id=event.get("session_id") or state.cli_session_id,
        )
        subtype = event.get("subtype")
        if cancelling:
            result: dict[str, Any] = {"stopReason": "cancelled"}
        elif subtype == "error_max_turns":
            result = {"stopReason": "max_turn_requests"}
        elif event.get("is_error") or subtype != "success":
            detail = event.get("result") or ", ".join(map(str, event.get("errors") or [])) or subtype
            return Reaction(state, messages=[error_response(prompt_id, f"Claude Code: {detail}")])
        else:
            result = {"stopReason": _STOP_REASONS.get(str(event.get("stop_reason") or "end_turn"), "end_turn")}
        usage = usage_from(event.get("usage"), USAGE, total_of=("cachedReadTokens", "cachedWriteTokens"))
        if usage:
            result["usage"] = usage
        if isinstance(event.get("total_cost_usd"), (int, float)):
            result["_meta"] = {"claudeCode": {"costUsd": event["total_cost_usd"], "sessionId": state.cli_session_id}}
        return Reaction(state, messages=[response(prompt_id, result)])

    def _system(self, event: dict[str, Any], state: ClaudeState) -> Reaction:
        if event.get("subtype") != "init":
            return Reaction(state)
        state = replace(state, cli_session_id=str(event.get("session_id") or "") or state.cli_session_id)
        commands = [
            {"name": str(c).lstrip("/"), "description": ""}
            for c in event.get("slash_commands") or []
            if isinstance(c, str) and c
        ]
        if not commands:
            return Reaction(state)
        return Reaction(
            state, messages=[session_update(self._sid(state), "available_commands_update", availableCommands=commands)]
        )

    def _control_request(self, event: dict[str, Any], state: ClaudeState) -> Reaction:
        control_id = event.get("request_id")
        body = json_object(event.get("request"))
        if body.get("subtype") != "can_use_tool":
            reply = {
                "type": "control_response",
                "response": {
                    "subtype": "error",
                    "request_id": control_id,
                    "error": f"unsupported control request {body.get('subtype')!r}",
                },
            }
            return Reaction(state, write=_line(reply))
        name, args = str(body.get("tool_name") or ""), body.get("input")
        call_id = str(body.get("tool_use_id") or f"permission-{control_id}")
        state = replace(state, counter=state.counter + 1)
        ask_id = f"ccpy-permission-{state.counter}"
        tool_call = {"toolCallId": call_id, "status": "pending", **tool_fields(name, args)}
        permissions = {**state.permissions, ask_id: (control_id, args, body.get("permission_suggestions"))}
        state = replace(state, permissions=permissions)
        ask = request(
            ask_id,
            "session/request_permission",
            {"sessionId": self._sid(state), "toolCall": tool_call, "options": PERMISSION_OPTIONS},
        )
        return Reaction(state, messages=[ask])
