"""A stand-in for `claude -p --input-format stream-json --output-format stream-json`:
plain blocking stdio, no code shared with the bridge. Its lines follow the shapes of the
transcripts captured from Claude Code 2.1.83 (research notes §3.1).

The first word of a user message picks the scenario: `tool` (a Bash tool_use, then a
can_use_tool control_request; it waits for the control_response), `slow` (text deltas
until a control_request interrupt arrives), `crash` (exit 3 mid-turn), `junk` (lines
that are not stream-json), `fail` (a result with is_error), `todo` (a TodoWrite); anything
else gets a streamed greeting. stream_event lines only with --include-partial-messages.
FAKE_CLI_LOG=<path>: appends {"pid", "argv", "env"} at start and every stdin line.
FAKE_CLI_STUBBORN=1: like the worst real CLIs, it ignores SIGTERM, stays alive after its
input closes, and keeps a child process in its group.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository, for tests.acp.json_lines
from tests.acp.json_lines import read as read_line  # noqa: E402
from tests.acp.json_lines import send  # noqa: E402

LOG = os.environ.get("FAKE_CLI_LOG")
STUBBORN = bool(os.environ.get("FAKE_CLI_STUBBORN"))
PARTIAL = "--include-partial-messages" in sys.argv
SESSION = "682c0d6e-fake-session"
_backlog: list[dict] = []
_turn = [0]


def log(entry: dict) -> None:
    if LOG:
        with open(LOG, "a") as handle:
            handle.write(json.dumps(entry) + "\n")


def read() -> dict | None:
    return read_line(_backlog, stubborn=STUBBORN, record=lambda line: log({"stdin": line.rstrip("\n")}))


def stream(event: dict) -> None:
    if PARTIAL:
        send(
            {
                "type": "stream_event",
                "event": event,
                "session_id": SESSION,
                "parent_tool_use_id": None,
                "uuid": str(uuid.uuid4()),
            }
        )


def assistant(message_id: str, content: list, parent: str | None = None) -> None:
    send(
        {
            "type": "assistant",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "content": content,
                "stop_reason": None,
                "usage": {"input_tokens": 3, "output_tokens": 1},
            },
            "parent_tool_use_id": parent,
            "session_id": SESSION,
            "uuid": str(uuid.uuid4()),
        }
    )


def say(message_id: str, words: list[str], thinking: str | None = None) -> None:
    stream(
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "claude-sonnet-4-6",
            },
        }
    )
    content = []
    if thinking:
        stream({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}})
        stream({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": thinking}})
        content.append({"type": "thinking", "thinking": thinking, "signature": "sig"})
    index = len(content)
    stream({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
    for word in words:
        stream({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": word}})
    stream({"type": "content_block_stop", "index": index})
    content.append({"type": "text", "text": "".join(words)})
    assistant(message_id, content)
    stream({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}})
    stream({"type": "message_stop"})


def result(text: str, *, subtype: str = "success", is_error: bool = False, turns: int = 1) -> None:
    send(
        {
            "type": "result",
            "subtype": subtype,
            "is_error": is_error,
            "duration_ms": 238,
            "duration_api_ms": 200,
            "num_turns": turns,
            "result": text,
            "stop_reason": "end_turn",
            "session_id": SESSION,
            "total_cost_usd": 0.000105,
            "usage": {
                "input_tokens": 12,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 4,
                "output_tokens": 5,
            },
            "modelUsage": {},
            "permission_denials": [],
            "uuid": str(uuid.uuid4()),
        }
    )


def tool_result(tool_use_id: str, content: str, *, is_error: bool, tool_use_result: object) -> None:
    """The user message that carries a tool's result back to the model."""
    send(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {"tool_use_id": tool_use_id, "type": "tool_result", "content": content, "is_error": is_error}
                ],
            },
            "parent_tool_use_id": None,
            "session_id": SESSION,
            "uuid": str(uuid.uuid4()),
            "tool_use_result": tool_use_result,
        }
    )


def control_answer(request_id: str) -> dict:
    """Read until the control_response to `request_id`; other lines are kept."""
    while True:
        message = read()
        if message is None:
            continue
        if (
            message.get("type") == "control_response"
            and (message.get("response") or {}).get("request_id") == request_id
        ):
            return message["response"]
        _backlog.append(message)


def scenario_tool(text: str) -> None:
    command = "touch created_by_tool.txt"
    assistant(
        "msg_tool_1",
        [
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "Bash",
                "input": {"command": command, "description": "Create a file"},
            }
        ],
    )
    send(
        {
            "type": "control_request",
            "request_id": "req-perm-1",
            "request": {
                "subtype": "can_use_tool",
                "tool_name": "Bash",
                "input": {"command": command, "description": "Create a file"},
                "tool_use_id": "toolu_1",
                "permission_suggestions": [
                    {"type": "addRules", "rules": [{"toolName": "Bash"}], "behavior": "allow", "destination": "session"}
                ],
            },
        }
    )
    answer = control_answer("req-perm-1")
    decision = answer.get("response") or {}
    if decision.get("behavior") == "allow":
        empty_output = {"stdout": "", "stderr": "", "interrupted": False}
        tool_result("toolu_1", "(Bash completed with no output)", is_error=False, tool_use_result=empty_output)
        say("msg_tool_2", ["Created ", "the file."])
    else:
        tool_result("toolu_1", decision.get("message", "denied"), is_error=True, tool_use_result="Error: denied")
        say("msg_tool_2", ["The user ", "said no."])
    result("done", turns=2)


def scenario_slow(text: str) -> None:
    stream({"type": "message_start", "message": {"id": "msg_slow", "content": []}})
    for index in range(400):
        stream({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": f"chunk{index} "}})
        if not PARTIAL and index % 10 == 0:
            assistant(f"msg_slow_{index}", [{"type": "text", "text": f"chunk{index} "}])
        ready, _, _ = select.select([sys.stdin], [], [], 0.05)
        if ready:
            message = read()
            if (
                message
                and message.get("type") == "control_request"
                and message["request"].get("subtype") == "interrupt"
            ):
                send(
                    {
                        "type": "control_response",
                        "response": {"subtype": "success", "request_id": message["request_id"], "response": {}},
                    }
                )
                result("", subtype="error_during_execution", is_error=True)
                return
            if message:
                _backlog.append(message)
    result("too slow")


def scenario_crash(text: str) -> None:
    say("msg_crash", ["about ", "to crash"])
    sys.stderr.write("fatal: the fake claude fell over\n")
    sys.stderr.flush()
    os._exit(3)


def scenario_junk(text: str) -> None:
    sys.stdout.write('this is not json\n[1, 2]\n{"type": "keep_alive"}\n{"type": "mystery", "x": 1}\n\n')
    send({"type": "control_request", "request_id": "req-hook", "request": {"subtype": "hook_callback"}})
    say("msg_junk", ["still ", "fine"])
    result("still fine")


def scenario_fail(text: str) -> None:
    result("Invalid API key · Please run /login", is_error=True)


def scenario_todo(text: str) -> None:
    todos = [
        {"content": "Read the code", "status": "completed", "activeForm": "Reading"},
        {"content": "Write the fix", "status": "in_progress", "activeForm": "Writing"},
    ]
    assistant("msg_todo", [{"type": "tool_use", "id": "toolu_todo", "name": "TodoWrite", "input": {"todos": todos}}])
    send(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"tool_use_id": "toolu_todo", "type": "tool_result", "content": "Todos updated"}],
            },
            "session_id": SESSION,
        }
    )
    say("msg_todo_2", ["Planned."])
    result("Planned.")


SCENARIOS = {
    "tool": scenario_tool,
    "slow": scenario_slow,
    "crash": scenario_crash,
    "junk": scenario_junk,
    "fail": scenario_fail,
    "todo": scenario_todo,
}


def main() -> None:
    if STUBBORN:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)", "fake_cli_claude-child"], stdin=subprocess.DEVNULL
        )
    log({"pid": os.getpid(), "argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)})
    while True:
        message = read()
        if not message:
            continue
        if message.get("type") == "control_request":  # outside a turn: acknowledge
            send(
                {
                    "type": "control_response",
                    "response": {"subtype": "success", "request_id": message.get("request_id"), "response": {}},
                }
            )
            continue
        if message.get("type") != "user":
            continue
        _turn[0] += 1
        if _turn[0] == 1:
            send(
                {
                    "type": "system",
                    "subtype": "init",
                    "cwd": os.getcwd(),
                    "session_id": SESSION,
                    "tools": ["Task", "Bash", "Edit", "Read"],
                    "mcp_servers": [],
                    "model": "claude-sonnet-4-6",
                    "permissionMode": "default",
                    "slash_commands": ["compact", "review"],
                    "apiKeySource": "ANTHROPIC_API_KEY",
                    "claude_code_version": "2.1.83",
                    "uuid": str(uuid.uuid4()),
                }
            )
        content = message["message"]["content"]
        text = (
            content
            if isinstance(content, str)
            else " ".join(b.get("text", "") for b in content if b.get("type") == "text")
        )
        word = text.strip().split(" ", 1)[0]
        scenario = SCENARIOS.get(word)
        if scenario is not None:
            scenario(text)
        else:
            say(f"msg_{_turn[0]}", ["Hello ", "from ", "the fake ", "Claude."], thinking="Let me think.")
            result("Hello from the fake Claude.")


if __name__ == "__main__":
    main()
