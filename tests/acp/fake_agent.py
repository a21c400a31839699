"""A scripted ACP agent for tests: plain blocking stdio, no code shared with the client.

The first word of a prompt picks the scenario (`stream`, `permission`, `read`, `terminal`,
`plan`, `crash`, `slow`, `junk`, `write_outside`, `many`, `script PATH`, `replay NAME`); anything else is
echoed. `replay NAME` sends the updates recorded from a real agent in
`recordings/NAME.jsonl`, one `update` object a line, with `{cwd}` replaced.
Environment: FAKE_AGENT_HANG=initialize|prompt makes it never answer that method;
FAKE_AGENT_LOG=<path> appends every line it receives (for assertions on the wire);
FAKE_AGENT_STUBBORN=1 makes it behave like the worst real agents: it starts a child
process, ignores SIGTERM and stays alive after its input closes.
Its requests to the client use the ids real agents use: 0 first, then strings.
"""

from __future__ import annotations

import json
import os
import select
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository, for tests.acp.json_lines
from tests.acp.json_lines import read as read_line  # noqa: E402
from tests.acp.json_lines import send  # noqa: E402

SESSION = "sess-1"
HANG = os.environ.get("FAKE_AGENT_HANG", "")
LOG = os.environ.get("FAKE_AGENT_LOG")
_next_id = [0]
_cancelled = [False]
_backlog: list[dict] = []


def read() -> dict | None:
    return read_line(_backlog, stubborn=bool(os.environ.get("FAKE_AGENT_STUBBORN")), record=_record)


def _record(line: str) -> None:
    if LOG:
        with open(LOG, "a") as handle:
            handle.write(line)


def poll_cancel(timeout: float) -> bool:
    """Whether a session/cancel arrived within `timeout` (other messages are kept)."""
    ready, _, _ = select.select([sys.stdin], [], [], timeout)
    if ready:
        message = read()
        if message and message.get("method") == "session/cancel":
            _cancelled[0] = True
        elif message:
            _backlog.append(message)
    return _cancelled[0]


def update(update_kind: str, **fields) -> None:
    send(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": SESSION, "update": {"sessionUpdate": update_kind, **fields}},
        }
    )


def say(text: str, kind: str = "agent_message_chunk") -> None:
    update(kind, content={"type": "text", "text": text})


def ask(method: str, params: dict) -> dict:
    """A request to the client; returns the whole answer (result or error)."""
    request_id = 0 if _next_id[0] == 0 else str(uuid.uuid4())
    _next_id[0] += 1
    send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    while True:
        message = read()
        if message is None:
            continue
        if message.get("id") == request_id and "method" not in message:
            return message
        if "method" not in message:  # the answer to a request a script sent: nobody waits for it
            continue
        if message.get("method") == "session/cancel":
            _cancelled[0] = True
        else:
            _backlog.append(message)


def text_of(prompt: list) -> str:
    parts = []
    for block in prompt:
        if block.get("type") == "text":
            parts.append(block["text"])
        elif block.get("type") == "resource":
            parts.append("[resource " + block["resource"].get("uri", "") + "]")
        elif block.get("type") == "image":
            parts.append(f"[image {block['mimeType']} {len(block['data'])} base64 chars]")
        elif block.get("type") == "resource_link":
            parts.append("[link " + block.get("uri", "") + "]")
    return " ".join(parts)


def tool_call(call_id: str, title: str, kind: str, **fields) -> None:
    update("tool_call", toolCallId=call_id, title=title, kind=kind, status="pending", **fields)


PERMISSION_OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
    {"optionId": "never", "name": "Never allow", "kind": "reject_always"},
]


def scenario_permission(cwd: str, rest: str) -> str:
    path = os.path.join(cwd, rest.split()[0] if rest.split() else "hello.txt")
    content = "hello from the agent\n"
    tool_call("call-1", f"Write {os.path.basename(path)}", "edit", locations=[{"path": path}], rawInput={"path": path})
    answer = ask(
        "session/request_permission",
        {
            "sessionId": SESSION,
            "options": PERMISSION_OPTIONS,
            "toolCall": {
                "toolCallId": "call-1",
                "title": f"Write {os.path.basename(path)}",
                "kind": "edit",
                "content": [{"type": "diff", "path": path, "oldText": None, "newText": content}],
            },
        },
    )
    outcome = (answer.get("result") or {}).get("outcome") or {}
    if outcome.get("outcome") == "cancelled" or _cancelled[0]:
        update("tool_call_update", toolCallId="call-1", status="failed")
        return "cancelled"
    if outcome.get("optionId") not in ("allow", "always"):
        update("tool_call_update", toolCallId="call-1", status="failed")
        say("The user rejected the write.")
        return "end_turn"
    update("tool_call_update", toolCallId="call-1", status="in_progress")
    written = ask("fs/write_text_file", {"sessionId": SESSION, "path": path, "content": content})
    if "error" in written:
        update(
            "tool_call_update",
            toolCallId="call-1",
            status="failed",
            content=[{"type": "content", "content": {"type": "text", "text": written["error"]["message"]}}],
        )
        say("Write failed: " + written["error"]["message"])
        return "end_turn"
    update(
        "tool_call_update",
        toolCallId="call-1",
        status="completed",
        content=[{"type": "diff", "path": path, "oldText": None, "newText": content}],
    )
    say(f"Wrote {os.path.basename(path)}.")
    return "end_turn"


def scenario_read(cwd: str, rest: str) -> str:
    words = rest.split()
    path = os.path.join(cwd, words[0] if words else "notes.txt")
    params = {"sessionId": SESSION, "path": path}
    if len(words) >= 3:
        params.update(line=int(words[1]), limit=int(words[2]))
    tool_call("read-1", f"Read {os.path.basename(path)}", "read", locations=[{"path": path, "line": 1}])
    answer = ask("fs/read_text_file", params)
    if "error" in answer:
        update("tool_call_update", toolCallId="read-1", status="failed")
        say("Read failed: " + answer["error"]["message"])
    else:
        update("tool_call_update", toolCallId="read-1", status="completed")
        say("CONTENT<" + answer["result"]["content"] + ">")
    return "end_turn"


def scenario_write_outside(cwd: str, rest: str) -> str:
    target = rest.split()[0] if rest.split() else "/tmp/outside-the-project.txt"
    answer = ask("fs/write_text_file", {"sessionId": SESSION, "path": target, "content": "x"})
    say("Write failed: " + answer["error"]["message"] if "error" in answer else "Write succeeded")
    return "end_turn"


def scenario_terminal(cwd: str, rest: str) -> str:
    code = rest or "print('terminal says hi')"
    created = ask(
        "terminal/create",
        {"sessionId": SESSION, "command": sys.executable, "args": ["-c", code], "outputByteLimit": 1000},
    )
    if "error" in created:
        say("Terminal refused: " + created["error"]["message"])
        return "end_turn"
    terminal_id = created["result"]["terminalId"]
    tool_call("term-call", "Run python", "execute", content=[{"type": "terminal", "terminalId": terminal_id}])
    exited = ask("terminal/wait_for_exit", {"sessionId": SESSION, "terminalId": terminal_id})["result"]
    output = ask("terminal/output", {"sessionId": SESSION, "terminalId": terminal_id})["result"]
    ask("terminal/release", {"sessionId": SESSION, "terminalId": terminal_id})
    update("tool_call_update", toolCallId="term-call", status="completed")
    say(f"exit={exited.get('exitCode')} truncated={output['truncated']} output={output['output'].strip()}")
    return "end_turn"


def scenario_plan(cwd: str, rest: str) -> str:
    entries = [
        {"content": "Read the code", "priority": "high", "status": "in_progress"},
        {"content": "Write the fix", "priority": "medium", "status": "pending"},
    ]
    update("plan", entries=entries)
    entries[0]["status"], entries[1]["status"] = "completed", "in_progress"
    update("plan", entries=entries)
    say("Planned.")
    return "end_turn"


def scenario_stream(cwd: str, rest: str) -> str:
    say("Let me think.", "agent_thought_chunk")
    for word in ["Hello", " from", " the", " fake", " agent."]:
        say(word)
    update("usage_update", used=None, size=200000)
    update("session_info_update", title="A fake session")
    return "end_turn"


def scenario_many(cwd: str, rest: str) -> str:
    """`many N`: N message chunks as fast as the pipe takes them (for the benchmark)."""
    for index in range(int(rest or "1000")):
        say(f"word{index} ")
    return "end_turn"


def scenario_slow(cwd: str, rest: str) -> str:
    for index in range(400):
        say(f"chunk{index} ")
        if poll_cancel(0.05):
            return "cancelled"
    return "end_turn"


def scenario_pause(cwd: str, rest: str) -> str:
    """`pause S`: S seconds (1.5 by default) before a short reply, for what is typed meanwhile."""
    if poll_cancel(float(rest or "1.5")):
        return "cancelled"
    say("paused")
    return "end_turn"


def scenario_crash(cwd: str, rest: str) -> str:
    say("about to crash")
    sys.stderr.write("fatal: the fake agent fell over\n")
    sys.stderr.flush()
    os._exit(3)


def scenario_junk(cwd: str, rest: str) -> str:
    sys.stdout.write('this is not json\n[1, 2, 3]\n{"jsonrpc": "2.0"}\n\n')
    update("some_future_update_kind", whatever=True)
    send(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": SESSION,
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "still fine"},
                    "unknownField": {"nested": 1},
                },
            },
        }
    )
    return "end_turn"


def scenario_script(cwd: str, rest: str) -> str:
    """`script PATH`: each line of PATH is a JSON step, `{"send": message}` (written as is),
    `{"raw": text}` (written as is, not JSON) or `{"ask": [method, params]}`; the answers to
    the asks are said back, one JSON line each, as `ANSWER<...>`."""
    with open(rest) as handle:
        steps = [json.loads(line.replace("{cwd}", cwd)) for line in handle if line.strip()]
    for step in steps:
        if "send" in step:
            send(step["send"])
        elif "raw" in step:
            sys.stdout.write(step["raw"])
            sys.stdout.flush()
        else:
            method, params = step["ask"]
            say("ANSWER<" + json.dumps(ask(method, {"sessionId": SESSION, **params})) + ">")
    return "end_turn"


def scenario_replay(cwd: str, rest: str) -> str:
    recording = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recordings", rest + ".jsonl")
    with open(recording) as handle:
        for line in handle:
            if line.strip():
                fields = json.loads(line.replace("{cwd}", cwd))
                update(fields.pop("sessionUpdate"), **fields)
    return "end_turn"


def scenario_files(cwd: str, rest: str) -> str:
    """`files {json}`: writes through the editor (`editor`: path -> text), writes and removals
    of the agent's own, as a command it ran would make them (`direct`, `remove`)."""
    spec = json.loads(rest)
    for relative, content in spec.get("editor", {}).items():
        ask("fs/write_text_file", {"sessionId": SESSION, "path": os.path.join(cwd, relative), "content": content})
    for relative, content in spec.get("direct", {}).items():
        path = os.path.join(cwd, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(content.encode("latin-1"))
    for relative in spec.get("remove", []):
        os.remove(os.path.join(cwd, relative))
    say("Files done.")
    return "end_turn"


SCENARIOS = {
    "replay": scenario_replay,
    "permission": scenario_permission,
    "read": scenario_read,
    "terminal": scenario_terminal,
    "plan": scenario_plan,
    "stream": scenario_stream,
    "slow": scenario_slow,
    "pause": scenario_pause,
    "crash": scenario_crash,
    "junk": scenario_junk,
    "write_outside": scenario_write_outside,
    "many": scenario_many,
    "script": scenario_script,
    "files": scenario_files,
}

MODES = {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]}
CONFIG = [
    {
        "id": "model",
        "name": "Model",
        "category": "model",
        "type": "select",
        "currentValue": "fake-1",
        "options": [{"value": "fake-1", "name": "Fake 1"}, {"value": "fake-2", "name": "Fake 2"}],
    }
]


def main() -> None:
    cwd = os.getcwd()
    if os.environ.get("FAKE_AGENT_STUBBORN"):
        import signal
        import subprocess

        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)", "fake_agent.py-child"], stdin=subprocess.DEVNULL
        )
    while True:
        message = read()
        if not message or "method" not in message:
            continue
        method, params, request_id = message["method"], message.get("params") or {}, message.get("id")
        if request_id is None:
            if method == "session/cancel":
                _cancelled[0] = True
            continue
        if HANG and method == HANG:
            continue
        result: dict | None = None
        if method == "initialize":
            result = {
                "protocolVersion": 1,
                "agentInfo": {"name": "fake-agent", "version": "1.0"},
                "agentCapabilities": {
                    "loadSession": True,
                    "promptCapabilities": {"embeddedContext": True, "image": True},
                    "sessionCapabilities": {"list": {}},
                },
                "authMethods": [{"id": "fake-key", "name": "Fake key"}],
            }
        elif method == "authenticate":
            result = {}
        elif method in ("session/new", "session/load"):
            cwd = params.get("cwd") or cwd
            if method == "session/load":
                update("user_message_chunk", content={"type": "text", "text": "earlier question"})
                say("earlier answer")
            result = {"sessionId": SESSION, "modes": MODES, "configOptions": CONFIG}
            if method == "session/load":
                del result["sessionId"]
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
            update("available_commands_update", availableCommands=[{"name": "review", "description": "Review"}])
            continue
        elif method == "session/list":
            result = {"sessions": [{"sessionId": "old-1", "cwd": cwd, "title": "Earlier work"}]}
        elif method == "session/set_mode":
            update("current_mode_update", currentModeId=params.get("modeId"))
            result = {}
        elif method == "session/set_config_option":
            CONFIG[0]["currentValue"] = params.get("value")
            result = {"configOptions": CONFIG}
        elif method == "session/prompt":
            _cancelled[0] = False
            text = text_of(params.get("prompt") or [])
            word, _, rest = text.strip().partition(" ")
            scenario = SCENARIOS.get(word)
            if scenario is None:
                say("echo: " + text)
                stop = "end_turn"
            else:
                stop = scenario(cwd, rest.strip())
            send({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": stop}})
            if word == "stream":  # real agents send updates after the reply too
                update("usage_update", used=1234, size=200000)
                say("a late word")
            continue
        if result is None:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no {method}"}})
        else:
            send({"jsonrpc": "2.0", "id": request_id, "result": result})


if __name__ == "__main__":
    main()
