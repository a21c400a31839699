"""Codex CLI's one-shot `codex exec --json`, as an ACP agent.

Each prompt runs

    codex exec --json --skip-git-repo-check [--model M] [--sandbox S] [extra args]
               [resume THREAD_ID] PROMPT            (PROMPT is `-`, on stdin, when long)

in the session's directory; the thread id from the first run's `thread.started` makes the
next prompt of that session a `resume`. Mapping of its JSON lines:

    thread.started                      remember the thread id
    item.started / item.completed:
      command_execution                 tool_call (execute, in_progress) / tool_call_update
                                        (completed or failed, with the output)
      file_change                       tool_call (edit) with locations
      mcp_tool_call, web_search         tool_call (other, fetch) / tool_call_update
      agent_message                     agent_message_chunk
      reasoning                         agent_thought_chunk
      todo_list (also item.updated)     plan
      error                             agent_thought_chunk (a warning; the turn goes on)
    turn.completed                      the prompt's answer: end_turn, with usage
    turn.failed                         a JSON-RPC error with its message
    error                               kept; the error of a run that then ends without
                                        turn.completed
    exit without turn.completed         a JSON-RPC error with the end of its stderr

session/cancel stops the run's process group and answers the prompt `cancelled`.
`codex exec` never asks for approvals (its sandbox and approval settings decide), so
this adapter never sends session/request_permission. Modes pick the sandbox.
Options: executable (argv list or command string), model, sandbox, extra_args.
"""

from __future__ import annotations

import json
import shlex
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..acp.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND
from .contract import LATER, ONE_SHOT, BridgeAdapter, Failure, Launch, OneShotContext, Reaction
from .environment import executable_argv
from .messages import error_response, json_object, prompt_text, response, session_update, text_chunk, usage_from

ARG_LIMIT = 100_000
"""Prompts longer than this (bytes) go on stdin: one argument may not exceed 128 KiB."""

SANDBOXES = {"read-only": "Read only", "workspace-write": "Workspace write", "danger-full-access": "Full access"}
"""`--sandbox` values and their names: a mode each, besides `default` (no --sandbox)."""
MODES = [
    {"id": "default", "name": "Default", "description": "As configured in config.toml"},
    *({"id": sandbox, "name": name, "description": f"--sandbox {sandbox}"} for sandbox, name in SANDBOXES.items()),
]
MODE_IDS = frozenset(m["id"] for m in MODES)


@dataclass(frozen=True)
class CodexSession:
    cwd: str | None
    thread_id: str | None = None
    mode: str = "default"


@dataclass(frozen=True)
class CodexState:
    base: tuple[str, ...]
    model: str | None = None
    extra: tuple[str, ...] = ()
    default_mode: str = "default"
    sessions: Mapping[str, CodexSession] = field(default_factory=dict)
    prompt_id: Any = None
    prompt_session: str | None = None
    running: Any = None  # the OneShotContext of the run in progress
    cancelling: bool = False
    last_error: str | None = None
    open_items: frozenset[str] = frozenset()
    """Items announced with item.started whose tool_call is out."""


def strip_shell(command: str) -> str:
    """`/bin/bash -lc 'ls -la'` -> `ls -la` (Codex wraps every command in a login shell)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    if len(words) == 3 and words[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") and words[1] in ("-lc", "-c"):
        return words[2]
    return command


USAGE = {
    "inputTokens": "input_tokens",
    "outputTokens": "output_tokens",
    "cachedReadTokens": "cached_input_tokens",
    "cachedWriteTokens": "cache_write_input_tokens",
    "thoughtTokens": "reasoning_output_tokens",
}
"""ACP's usage fields and Codex's; the total is input and output."""


class CodexExecAdapter(BridgeAdapter):
    name = "codex-exec"
    title = "Codex"
    install = "npm install -g @openai/codex"

    def init(self, opts: Mapping[str, Any]) -> CodexState:
        extra = opts.get("extra_args")
        extra_args = shlex.split(extra) if isinstance(extra, str) else [str(p) for p in extra or []]
        sandbox = str(opts.get("sandbox") or "default")
        model = str(opts["model"]) if opts.get("model") else None
        return CodexState(
            base=tuple(executable_argv(opts, "codex")),
            model=model,
            extra=tuple(extra_args),
            default_mode=sandbox if sandbox in MODE_IDS else "default",
        )

    def command(self, opts: Mapping[str, Any]) -> Launch:
        return ONE_SHOT

    def capabilities(self) -> dict[str, Any]:
        return {"loadSession": False, "promptCapabilities": {"embeddedContext": True}}

    def modes(self) -> list[dict[str, Any]]:
        return MODES

    def argv(self, state: CodexState, session: CodexSession, prompt: str) -> tuple[list[str], bytes | None]:
        argv = [*state.base, "exec", "--json", "--skip-git-repo-check"]
        if state.model:
            argv += ["--model", state.model]
        if session.mode != "default":
            argv += ["--sandbox", session.mode]
        argv += list(state.extra)
        if session.thread_id:
            argv += ["resume", session.thread_id]
        if len(prompt.encode()) > ARG_LIMIT:
            return [*argv, "-"], prompt.encode()
        return [*argv, prompt], None

    # --- ACP -> codex -----------------------------------------------------------------

    def translate_outbound(self, message: dict[str, Any], state: CodexState) -> Reaction:
        method = message.get("method")
        params = json_object(message.get("params"))
        if method is None:
            return Reaction(state)  # we never ask the client anything
        if method == "session/new":
            session_id = f"codex-{uuid.uuid4().hex}"
            cwd = params.get("cwd") if isinstance(params.get("cwd"), str) else None
            sessions = {**state.sessions, session_id: CodexSession(cwd, mode=state.default_mode)}
            return Reaction(
                replace(state, sessions=sessions),
                reply={
                    "sessionId": session_id,
                    "modes": {"currentModeId": state.default_mode, "availableModes": MODES},
                },
            )
        if method == "session/set_mode":
            target, mode = params.get("sessionId"), params.get("modeId")
            if not isinstance(target, str) or target not in state.sessions:
                return Reaction(state, reply=Failure(f"unknown session {target!r}", INVALID_PARAMS))
            if mode not in MODE_IDS:
                return Reaction(state, reply=Failure(f"unknown mode {mode!r}", INVALID_PARAMS))
            sessions = {**state.sessions, target: replace(state.sessions[target], mode=mode)}
            return Reaction(replace(state, sessions=sessions), reply={})
        if method == "session/prompt":
            return self._prompt(message, params, state)
        if method == "session/cancel":
            if state.prompt_id is None or state.cancelling:
                return Reaction(state)
            if state.running is not None:
                state.running.cancel()
            return Reaction(replace(state, cancelling=True))
        if method in ("session/close", "session/delete"):
            sessions = {k: v for k, v in state.sessions.items() if k != params.get("sessionId")}
            return Reaction(replace(state, sessions=sessions), reply={})
        if "id" in message:
            return Reaction(state, reply=Failure(f"method not found: {method}", METHOD_NOT_FOUND))
        return Reaction(state)

    def _prompt(self, message: dict[str, Any], params: Mapping[str, Any], state: CodexState) -> Reaction:
        session_id = params.get("sessionId")
        session = state.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            return Reaction(state, reply=Failure(f"unknown session {session_id!r}", INVALID_PARAMS))
        if state.prompt_id is not None:
            return Reaction(state, reply=Failure("a prompt is already running", INVALID_PARAMS))
        text = prompt_text(params.get("prompt"))
        if not text.strip():
            return Reaction(state, reply=Failure("the prompt is empty", INVALID_PARAMS))
        argv, stdin = self.argv(state, session, text)
        request_id = message["id"]
        turn = replace(
            state,
            prompt_id=request_id,
            prompt_session=session_id,
            cancelling=False,
            last_error=None,
            open_items=frozenset(),
        )

        async def run(context: OneShotContext) -> None:
            context.state = replace(context.state, running=context)
            outcome = await context.run(argv, stdin=stdin, cwd=session.cwd)
            current: CodexState = context.state
            messages = []
            if current.prompt_id == request_id:  # no turn.completed / turn.failed answered it
                if outcome.cancelled or current.cancelling:
                    messages.append(response(request_id, {"stopReason": "cancelled"}))
                else:
                    detail = outcome.description
                    if current.last_error:
                        detail = f"{current.last_error}\n{detail}"
                    elif outcome.code == 0:
                        detail = f"Codex ended without finishing the turn; {detail}"
                    messages.append(error_response(request_id, detail))
                current = replace(current, prompt_id=None, prompt_session=None, cancelling=False)
            if current.running is context:
                current = replace(current, running=None, last_error=None, open_items=frozenset())
            context.state = current
            await context.emit(messages)

        return Reaction(turn, run=run, reply=LATER)

    # --- codex -> ACP -----------------------------------------------------------------

    def translate_inbound(self, line: str, state: CodexState) -> Reaction:
        try:
            event = json.loads(line)
        except ValueError:
            return Reaction(state)
        if not isinstance(event, dict) or state.prompt_session is None:
            return Reaction(state)
        kind = event.get("type")
        sid = state.prompt_session
        if kind == "thread.started" and isinstance(event.get("thread_id"), str):
            session = state.sessions.get(sid)
            if session is None:
                return Reaction(state)
            sessions = {**state.sessions, sid: replace(session, thread_id=event["thread_id"])}
            return Reaction(replace(state, sessions=sessions))
        if kind == "turn.completed":
            return self._finish(
                state,
                {"stopReason": "cancelled" if state.cancelling else "end_turn"},
                usage_from(event.get("usage"), USAGE),
            )
        if kind == "turn.failed":
            error = event.get("error")
            detail = error.get("message") if isinstance(error, dict) else error
            return self._fail(state, f"Codex: {detail or state.last_error or 'the turn failed'}")
        if kind == "error":
            return Reaction(replace(state, last_error=f"Codex: {event.get('message') or 'error'}"))
        if kind in ("item.started", "item.updated", "item.completed") and isinstance(event.get("item"), dict):
            if state.cancelling:
                return Reaction(state)
            return self._item(kind, event["item"], sid, state)
        return Reaction(state)

    def _finish(self, state: CodexState, result: dict[str, Any], usage: dict[str, int] | None) -> Reaction:
        if state.prompt_id is None:
            return Reaction(state)
        if usage and result["stopReason"] != "cancelled":
            result["usage"] = usage
        return Reaction(replace(state, prompt_id=None, cancelling=False), messages=[response(state.prompt_id, result)])

    def _fail(self, state: CodexState, detail: str) -> Reaction:
        if state.prompt_id is None:
            return Reaction(state)
        if state.cancelling:
            return self._finish(state, {"stopReason": "cancelled"}, None)
        return Reaction(replace(state, prompt_id=None), messages=[error_response(state.prompt_id, detail)])

    def _item(self, kind: str, item: dict[str, Any], sid: str, state: CodexState) -> Reaction:
        item_type = item.get("type")
        item_id = str(item.get("id") or "")
        done = kind == "item.completed"
        if item_type == "agent_message":
            return self._chunk(state, sid, item.get("text"), "agent_message_chunk") if done else Reaction(state)
        if item_type == "reasoning":
            return self._chunk(state, sid, item.get("text"), "agent_thought_chunk") if done else Reaction(state)
        if item_type == "error":
            return (
                self._chunk(state, sid, f"Warning: {item.get('message')}", "agent_thought_chunk")
                if done
                else Reaction(state)
            )
        if item_type == "todo_list":
            entries = [
                {
                    "content": str(t.get("text", "")),
                    "priority": "medium",
                    "status": "completed" if t.get("completed") else "pending",
                }
                for t in item.get("items") or []
                if isinstance(t, dict)
            ]
            return Reaction(state, messages=[session_update(sid, "plan", entries=entries)])
        fields = self._tool_fields(item_type, item)
        if fields is None or not item_id:
            return Reaction(state)
        if item_id not in state.open_items:
            if not done:
                return Reaction(
                    replace(state, open_items=state.open_items | {item_id}),
                    messages=[session_update(sid, "tool_call", toolCallId=item_id, status="in_progress", **fields)],
                )
            update, after = "tool_call", state  # finished as it was first seen: the whole call at once
        elif not done:
            return Reaction(state)
        else:
            update, after, fields = "tool_call_update", replace(state, open_items=state.open_items - {item_id}), {}
        status = self._status(item_type, item)
        output = self._output(item_type, item)
        return Reaction(
            after, messages=[session_update(sid, update, toolCallId=item_id, status=status, **fields, **output)]
        )

    def _chunk(self, state: CodexState, sid: str, text: Any, kind: str) -> Reaction:
        if not isinstance(text, str) or not text:
            return Reaction(state)
        return Reaction(state, messages=[text_chunk(sid, text, kind)])

    @staticmethod
    def _status(item_type: Any, item: dict[str, Any]) -> str:
        status = item.get("status")
        if item_type == "command_execution":
            return "completed" if status == "completed" and item.get("exit_code") in (0, None) else "failed"
        return "failed" if status == "failed" or item.get("error") else "completed"

    @staticmethod
    def _tool_fields(item_type: Any, item: dict[str, Any]) -> dict[str, Any] | None:
        if item_type == "command_execution":
            command = str(item.get("command") or "")
            return {"title": f"`{strip_shell(command)}`", "kind": "execute", "rawInput": {"command": command}}
        if item_type == "file_change":
            changes = [c for c in item.get("changes") or [] if isinstance(c, dict) and c.get("path")]
            paths = [str(c["path"]) for c in changes]
            return {
                "title": "Edit " + ", ".join(paths) if paths else "Edit files",
                "kind": "edit",
                "locations": [{"path": p} for p in paths],
                "rawInput": {"changes": changes},
            }
        if item_type == "mcp_tool_call":
            return {
                "title": f"{item.get('server', 'mcp')}.{item.get('tool', 'tool')}",
                "kind": "other",
                "rawInput": item.get("arguments"),
            }
        if item_type == "web_search":
            return {
                "title": f"Search the web: {item.get('query', '')}",
                "kind": "fetch",
                "rawInput": {"query": item.get("query")},
            }
        return None

    @staticmethod
    def _output(item_type: Any, item: dict[str, Any]) -> dict[str, Any]:
        text = ""
        raw: Any = None
        if item_type == "command_execution":
            text = str(item.get("aggregated_output") or "")
            raw = {"exit_code": item.get("exit_code"), "output": text}
            text = f"```\n{text.rstrip()}\n```" if text.strip() else ""
        elif item_type == "file_change":
            text = "\n".join(
                f"{c.get('kind', 'update')} {c.get('path')}" for c in item.get("changes") or [] if isinstance(c, dict)
            )
        elif item_type == "mcp_tool_call":
            raw = item.get("result") or item.get("error")
            text = json.dumps(raw) if raw is not None else ""
        result: dict[str, Any] = {}
        if text:
            result["content"] = [{"type": "content", "content": {"type": "text", "text": text}}]
        if raw is not None:
            result["rawOutput"] = raw
        return result
