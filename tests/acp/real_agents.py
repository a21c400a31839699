"""Real ACP agents installed from npm (by `make agents`, which `make test` runs when npm
is present), pointed at our scripted server playing their LLM.

Codex (`@zed-industries/codex-acp`) reads its model provider from `config.toml` in an
isolated CODEX_HOME; it speaks the OpenAI Responses API. With approval policy
`untrusted` it asks the client before applying a patch.

Claude Code (`@zed-industries/claude-agent-acp`) takes `ANTHROPIC_BASE_URL` and speaks
the Messages API (after a `HEAD /` probe). As root it must not see `IS_SANDBOX`, or it
asks Claude Code to skip permissions, which Claude Code refuses to do as root.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from codecompanion_py.demo.server import Reply, Request

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ROOT / ".venv" / "agents" / "node_modules" / ".bin"


def installed(command: str) -> str | None:
    """An agent command from `.venv/agents` (or PATH), or None when it is not installed."""
    candidate = str(AGENTS / command)
    if os.access(candidate, os.X_OK):
        return candidate
    return shutil.which(command)


def codex_acp() -> str | None:
    return installed("codex-acp")


def claude_agent_acp() -> str | None:
    return installed("claude-agent-acp")


def claude_env(tmp: Path, url: str) -> dict[str, str]:
    home = tmp / "claude-home"
    home.mkdir(parents=True, exist_ok=True)
    return {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "HOME": str(home),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
    }


def _anthropic(message_id: str, block: dict[str, Any], delta: dict[str, Any], stop: str) -> Reply:
    def frame(kind: str, **fields: Any) -> bytes:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()

    start = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    return Reply(
        headers={"content-type": "text/event-stream"},
        chunks=[
            frame("message_start", message=start),
            frame("content_block_start", index=0, content_block=block),
            frame("content_block_delta", index=0, delta=delta),
            frame("content_block_stop", index=0),
            frame("message_delta", delta={"stop_reason": stop}, usage={"output_tokens": 5}),
            frame("message_stop"),
        ],
    )


def claude_llm(tool: str, arguments: dict[str, Any], final_text: str):
    """A responder for Claude Code: a last user message mentioning RUNTOOL gets the tool
    call; its result (or any other message) gets the text."""

    def respond(request: Request) -> Reply:
        if request.method != "POST":
            return Reply(status=200)
        if "/v1/messages" not in request.path:
            return Reply(status=404)
        last = json.dumps((request.json() or {}).get("messages", [])[-1:])
        if "RUNTOOL" in last and "tool_result" not in last:
            return _anthropic(
                "msg_tool",
                {"type": "tool_use", "id": "toolu_1", "name": tool, "input": {}},
                {"type": "input_json_delta", "partial_json": json.dumps(arguments)},
                "tool_use",
            )
        return _anthropic(
            "msg_text", {"type": "text", "text": ""}, {"type": "text_delta", "text": final_text}, "end_turn"
        )

    return respond


def codex_home(
    tmp: Path, url: str, *, approval: str = "on-request", sandbox: str = "workspace-write"
) -> dict[str, str]:
    """An isolated CODEX_HOME (and HOME) whose model provider is our server; the
    environment to start codex-acp with."""
    home = tmp / "codex-home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f"""\
model = "fake-model"
model_provider = "fake"
approval_policy = "{approval}"
sandbox_mode = "{sandbox}"

[model_providers.fake]
name = "Fake local"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"
request_max_retries = 0
stream_max_retries = 0
""")
    return {"CODEX_HOME": str(home), "HOME": str(home), "FAKE_API_KEY": "fake-key"}


def _event(kind: str, **fields: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


def responses_text(text: str, *, response_id: str = "resp_text") -> Reply:
    """A streamed Responses API reply with one message."""
    item = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    frames = [
        _event("response.created", response={"id": response_id, "status": "in_progress", "output": []}),
        _event("response.output_item.added", output_index=0, item={**item, "status": "in_progress", "content": []}),
    ]
    for word in text.split(" "):
        frames.append(
            _event("response.output_text.delta", item_id="msg_1", output_index=0, content_index=0, delta=word + " ")
        )
    frames += [
        _event("response.output_item.done", output_index=0, item=item),
        _event(
            "response.completed",
            response={
                "id": response_id,
                "status": "completed",
                "output": [item],
                "usage": {"input_tokens": 20, "output_tokens": 10, "total_tokens": 30},
            },
        ),
    ]
    return Reply(headers={"content-type": "text/event-stream"}, chunks=frames)


def responses_shell_call(command: str, *, call_id: str = "call_1", escalate: bool = False) -> Reply:
    """A Responses API reply that calls codex's `exec_command`; with `escalate` it asks to
    leave the sandbox, which makes codex (approval policy on-request) ask the client."""
    fields = {"sandbox_permissions": "require_escalated", "justification": "The user asked for this."}
    arguments = json.dumps({"cmd": command, **(fields if escalate else {})})
    item = {
        "id": "fc_1",
        "type": "function_call",
        "status": "completed",
        "call_id": call_id,
        "name": "exec_command",
        "arguments": arguments,
    }
    frames = [
        _event("response.created", response={"id": "resp_call", "status": "in_progress", "output": []}),
        _event("response.output_item.added", output_index=0, item={**item, "status": "in_progress"}),
        _event("response.output_item.done", output_index=0, item=item),
        _event(
            "response.completed",
            response={
                "id": "resp_call",
                "status": "completed",
                "output": [item],
                "usage": {"input_tokens": 20, "output_tokens": 5, "total_tokens": 25},
            },
        ),
    ]
    return Reply(headers={"content-type": "text/event-stream"}, chunks=frames)


def codex_llm(command: str, final_text: str, *, escalate: bool = False):
    """A responder for codex's model requests: a conversation that mentions RUNTOOL gets
    the shell call first; once the call's output is in it (or without RUNTOOL) the text."""

    def respond(request: Request) -> Reply:
        if request.method != "POST" or not request.path.endswith("/responses"):
            return Reply(status=404)
        body = request.json() or {}
        items = body.get("input") or []
        answered = any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in items)
        asked = "RUNTOOL" in json.dumps(items)
        if asked and not answered:
            return responses_shell_call(command, escalate=escalate)
        return responses_text(final_text)

    return respond
