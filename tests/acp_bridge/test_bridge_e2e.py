"""`codecompanion-py acp-bridge` as a subprocess, driven by our real AcpClient, with fake
`claude` and `codex` CLIs behind it (fake_cli_claude.py, fake_cli_codex.py): handshake,
streamed text, permissions, tool calls, plans, cancel, crashes, and no process left."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from codecompanion_py.acp.client import AcpClient
from codecompanion_py.adapters.acp import AcpAdapter
from codecompanion_py.errors import AgentError
from codecompanion_py.processes import group_alive
from tests.acp.clients import Clients, Recorder
from tests.waiting import async_wait_until

HERE = Path(__file__).parent
ROOT = str(HERE.parents[1])
FAKE_CLAUDE = str(HERE / "fake_cli_claude.py")
FAKE_CODEX = str(HERE / "fake_cli_codex.py")
BRIDGE = [sys.executable, "-m", "codecompanion_py.cli", "acp-bridge"]


def bridge_command(name: str, fake: str | None, *args: str) -> list[str]:
    executable = ["--executable", shlex.join([sys.executable, fake])] if fake else []
    return [*BRIDGE, name, *executable, *args]


def native_log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def native_pids(path: Path) -> list[int]:
    return [entry["pid"] for entry in native_log(path) if "pid" in entry]


@pytest.fixture
def wire_log(tmp_path, monkeypatch) -> Path:
    log = tmp_path / "native.log"
    monkeypatch.setenv("FAKE_CLI_LOG", str(log))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    return log


@pytest.fixture
async def bridged(tmp_path, wire_log):
    clients = Clients(tmp_path, "bridge")

    async def start(command: list[str], handler: Recorder | None = None, **defaults: Any) -> AcpClient:
        adapter = AcpAdapter(
            name="bridge",
            formatted_name="Bridge",
            commands={"default": command},
            defaults={"timeout": 10000, "prompt_timeout": 10000, **defaults},
        )
        return await clients.start(adapter, handler)

    yield start
    await clients.close_all()
    for pid in native_pids(wire_log):
        assert not group_alive(pid), f"native process group {pid} left running"


# --- Claude Code stream-json --------------------------------------------------------------


async def test_claude_streams_text_and_thoughts_once(bridged, wire_log, tmp_path, monkeypatch):
    for name, value in (
        ("CLAUDECODE", "1"),
        ("CLAUDE_CODE_SESSION_ACCESS_TOKEN", "sekrit"),
        ("CODEX_SANDBOX", "seatbelt"),
        ("ANTHROPIC_API_KEY", "sk-ant-fake"),
    ):
        monkeypatch.setenv(name, value)
    handler = Recorder()
    client = await bridged(bridge_command("claude", FAKE_CLAUDE, "--model", "sonnet"), handler)
    assert client.agent_info["name"] == "claude-stream-json"
    assert client.capabilities["promptCapabilities"]["image"] is True
    assert not client.supports("sessionCapabilities", "list")
    project = tmp_path / "project"
    project.mkdir()
    client.cwd = str(project)  # the session's directory, not the bridge's
    session = await client.new_session()
    assert session["modes"]["currentModeId"] == "default"
    result = await client.prompt(session["sessionId"], [{"type": "text", "text": "hello there"}])
    assert result["stopReason"] == "end_turn"
    assert result["usage"] == {
        "inputTokens": 12,
        "outputTokens": 5,
        "cachedReadTokens": 4,
        "cachedWriteTokens": 0,
        "totalTokens": 21,
    }
    assert handler.text() == "Hello from the fake Claude."  # the deltas, not the whole message again
    assert handler.text("agent_thought_chunk") == "Let me think."
    assert any(u["sessionUpdate"] == "available_commands_update" for u in handler.updates)

    started = native_log(wire_log)[0]
    assert started["cwd"] == str(project)
    assert "--include-partial-messages" in started["argv"] and started["argv"][-2:] == ["--model", "sonnet"]
    env = started["env"]
    assert "CLAUDECODE" not in env and "CLAUDE_CODE_SESSION_ACCESS_TOKEN" not in env and "CODEX_SANDBOX" not in env
    assert env["ANTHROPIC_API_KEY"] == "sk-ant-fake"
    user_line = json.loads(native_log(wire_log)[1]["stdin"])
    assert user_line["message"]["content"] == [{"type": "text", "text": "hello there"}]

    again = await client.prompt(session["sessionId"], [{"type": "text", "text": "hello again"}])
    assert again["stopReason"] == "end_turn" and len(native_pids(wire_log)) == 1  # one persistent process


async def test_claude_without_partial_messages_sends_whole_messages(bridged, wire_log):
    handler = Recorder()
    client = await bridged(bridge_command("claude", FAKE_CLAUDE, "--opt", "partial_messages=false"), handler)
    session = await client.new_session()
    await client.prompt(session["sessionId"], [{"type": "text", "text": "hello"}])
    assert "--include-partial-messages" not in native_log(wire_log)[0]["argv"]
    assert handler.text() == "Hello from the fake Claude."


@pytest.mark.parametrize(
    "choice, said, status, behavior",
    [
        ("allow", "Created the file.", "completed", "allow"),
        ("reject", "The user said no.", "failed", "deny"),
    ],
)
async def test_claude_permission_goes_to_the_client_and_back(bridged, wire_log, choice, said, status, behavior):
    handler = Recorder(choose=choice)
    client = await bridged(bridge_command("claude", FAKE_CLAUDE), handler)
    session = await client.new_session()
    result = await client.prompt(session["sessionId"], [{"type": "text", "text": "tool please"}])
    assert result["stopReason"] == "end_turn"
    asked = handler.permissions[0]
    assert asked["sessionId"] == session["sessionId"]
    assert asked["toolCall"]["toolCallId"] == "toolu_1" and asked["toolCall"]["kind"] == "execute"
    assert [o["kind"] for o in asked["options"]] == ["allow_once", "allow_always", "reject_once"]
    statuses = [u["status"] for u in handler.updates if u.get("toolCallId") == "toolu_1"]
    assert statuses == ["pending", status]
    assert handler.text() == said
    replies = [json.loads(e["stdin"]) for e in native_log(wire_log) if "control_response" in e.get("stdin", "")]
    assert replies[0]["response"]["request_id"] == "req-perm-1"
    assert replies[0]["response"]["response"]["behavior"] == behavior


async def test_claude_cancel_interrupts_the_turn(bridged, wire_log):
    handler = Recorder()
    client = await bridged(bridge_command("claude", FAKE_CLAUDE), handler)
    session = await client.new_session()
    turn = asyncio.ensure_future(client.prompt(session["sessionId"], [{"type": "text", "text": "slow"}]))
    await async_wait_until(lambda: "chunk3" in handler.text(), message=lambda: f"chunk3; got {handler.text()!r}")
    await client.cancel(session["sessionId"])
    assert (await asyncio.wait_for(turn, 15))["stopReason"] == "cancelled"
    assert "chunk399" not in handler.text()
    interrupts = [json.loads(e["stdin"]) for e in native_log(wire_log) if '"interrupt"' in e.get("stdin", "")]
    assert interrupts and interrupts[0]["type"] == "control_request"
    after = await client.prompt(session["sessionId"], [{"type": "text", "text": "hello"}])
    assert after["stopReason"] == "end_turn"  # the same process goes on


async def test_claude_crash_is_an_agent_error_with_its_stderr(bridged, wire_log):
    handler = Recorder()
    client = await bridged(bridge_command("claude", FAKE_CLAUDE), handler)
    session = await client.new_session()
    with pytest.raises(AgentError) as raised:
        await client.prompt(session["sessionId"], [{"type": "text", "text": "crash"}])
    message = str(raised.value)
    assert "Claude Code exited with code 3" in message and "the fake claude fell over" in message
    assert handler.text() == "about to crash"
    assert not group_alive(native_pids(wire_log)[0])
    assert client.alive  # the bridge itself stays up and says what happened
    with pytest.raises(AgentError, match="exited with code 3"):
        await client.prompt(session["sessionId"], [{"type": "text", "text": "hello"}])


async def test_claude_error_result_and_junk(bridged):
    handler = Recorder()
    client = await bridged(bridge_command("claude", FAKE_CLAUDE), handler)
    session = await client.new_session()
    with pytest.raises(AgentError, match="Invalid API key"):
        await client.prompt(session["sessionId"], [{"type": "text", "text": "fail"}])
    result = await client.prompt(session["sessionId"], [{"type": "text", "text": "junk"}])
    assert result["stopReason"] == "end_turn" and handler.text() == "still fine"


async def test_claude_todo_write_becomes_a_plan_and_modes_reach_the_cli(bridged, wire_log):
    handler = Recorder()
    client = await bridged(bridge_command("claude", FAKE_CLAUDE), handler)
    session = await client.new_session()
    await client.set_mode(session["sessionId"], "plan")  # before the process exists: sent when it starts
    await client.prompt(session["sessionId"], [{"type": "text", "text": "todo"}])
    plans = [u for u in handler.updates if u["sessionUpdate"] == "plan"]
    assert [e["status"] for e in plans[0]["entries"]] == ["completed", "in_progress"]
    await client.set_mode(session["sessionId"], "acceptEdits")
    await async_wait_until(
        lambda: sum('"set_permission_mode"' in e.get("stdin", "") for e in native_log(wire_log)) == 2,
        message="the second set_permission_mode to reach the CLI",
    )
    modes = [
        json.loads(e["stdin"])["request"]["mode"]
        for e in native_log(wire_log)
        if '"set_permission_mode"' in e.get("stdin", "")
    ]
    assert modes == ["plan", "acceptEdits"]
    with pytest.raises(AgentError, match="unknown mode"):
        await client.set_mode(session["sessionId"], "yolo")


async def test_closing_mid_turn_stops_the_native_group(bridged, wire_log, monkeypatch):
    monkeypatch.setenv("FAKE_CLI_STUBBORN", "1")  # ignores SIGTERM and end of input, has a child
    handler = Recorder()
    client = await bridged(bridge_command("claude", FAKE_CLAUDE), handler)
    session = await client.new_session()
    turn = asyncio.ensure_future(client.prompt(session["sessionId"], [{"type": "text", "text": "slow"}]))
    await async_wait_until(lambda: "chunk2" in handler.text(), message=lambda: f"chunk2; got {handler.text()!r}")
    pid = native_pids(wire_log)[0]
    await client.close()
    with pytest.raises(AgentError):
        await turn
    await async_wait_until(lambda: not group_alive(pid), message=f"the native group {pid} to end")


# --- Codex exec (one shot) ----------------------------------------------------------------


async def test_codex_turn_and_resume(bridged, wire_log, tmp_path):
    handler = Recorder()
    client = await bridged(bridge_command("codex", FAKE_CODEX), handler)
    assert client.agent_info["name"] == "codex-exec"
    (tmp_path / "project").mkdir()
    client.cwd = str(tmp_path / "project")
    session = await client.new_session()
    sid = session["sessionId"]
    result = await client.prompt(sid, [{"type": "text", "text": "make a file"}])
    assert result == {
        "stopReason": "end_turn",
        "usage": {
            "inputTokens": 20,
            "outputTokens": 10,
            "cachedReadTokens": 4,
            "cachedWriteTokens": 0,
            "thoughtTokens": 3,
            "totalTokens": 30,
        },
    }
    kinds = [u["sessionUpdate"] for u in handler.updates]
    assert kinds.count("tool_call") == 2 and kinds.count("plan") == 2
    command = [u for u in handler.updates if u.get("toolCallId") == "item_1"]
    assert [(u["sessionUpdate"], u["status"]) for u in command] == [
        ("tool_call", "in_progress"),
        ("tool_call_update", "completed"),
    ]
    assert command[0]["kind"] == "execute" and "done" in command[1]["content"][0]["content"]["text"]
    edit = next(u for u in handler.updates if u.get("toolCallId") == "item_2")
    assert edit["kind"] == "edit" and edit["locations"] == [{"path": str(tmp_path / "project" / "notes.txt")}]
    assert "**Planning** the work" in handler.text("agent_thought_chunk")
    first = native_log(wire_log)[0]
    assert first["argv"] == ["exec", "--json", "--skip-git-repo-check", "make a file"]
    thread = handler.text().split("thread ")[1].rstrip(").")

    (tmp_path / "other").mkdir()
    client.cwd = str(tmp_path / "other")
    other = (await client.new_session())["sessionId"]  # the latest session is elsewhere
    await client.prompt(sid, [{"type": "text", "text": "and again"}])
    second = native_log(wire_log)[1]
    assert second["argv"][-3:] == ["resume", thread, "and again"]
    assert first["cwd"] == second["cwd"] == str(tmp_path / "project")  # each session runs in its own cwd
    assert handler.text().endswith(f"(thread {thread}).")
    await client.prompt(other, [{"type": "text", "text": "elsewhere"}])
    third = native_log(wire_log)[2]
    assert "resume" not in third["argv"] and third["cwd"] == str(tmp_path / "other")
    assert len({first["pid"], second["pid"], third["pid"]}) == 3  # one process per prompt


async def test_codex_cancel_kills_the_run_and_answers_cancelled(bridged, wire_log):
    handler = Recorder()
    client = await bridged(bridge_command("codex", FAKE_CODEX), handler)
    sid = (await client.new_session())["sessionId"]
    turn = asyncio.ensure_future(client.prompt(sid, [{"type": "text", "text": "slow"}]))
    await async_wait_until(
        lambda: any(u.get("toolCallId") == "item_1" for u in handler.updates), message="the item_1 tool call"
    )
    pid = native_pids(wire_log)[0]
    assert group_alive(pid)
    await client.cancel(sid)
    assert (await asyncio.wait_for(turn, 15))["stopReason"] == "cancelled"
    # the command's child went with it
    await async_wait_until(lambda: not group_alive(pid), message=f"the native group {pid} to end")
    result = await client.prompt(sid, [{"type": "text", "text": "hello"}])
    assert result["stopReason"] == "end_turn"


@pytest.mark.parametrize(
    "prompt, expected",
    [
        ("fail", "401 Unauthorized"),
        ("crash", "Codex exited with code 2; its last output:\nthread 'main' panicked: the fake codex fell over"),
        ("quiet", "Codex ended without finishing the turn"),
    ],
)
async def test_codex_failures_are_agent_errors(bridged, prompt, expected):
    client = await bridged(bridge_command("codex", FAKE_CODEX))
    sid = (await client.new_session())["sessionId"]
    with pytest.raises(AgentError) as raised:
        await client.prompt(sid, [{"type": "text", "text": prompt}])
    assert expected in str(raised.value)
    assert (await client.prompt(sid, [{"type": "text", "text": "hello"}]))["stopReason"] == "end_turn"


async def test_codex_mode_picks_the_sandbox_and_a_missing_codex_says_so(bridged, wire_log, tmp_path):
    client = await bridged(bridge_command("codex", FAKE_CODEX))
    sid = (await client.new_session())["sessionId"]
    await client.set_mode(sid, "read-only")
    await client.prompt(sid, [{"type": "text", "text": "hello"}])
    argv = native_log(wire_log)[0]["argv"]
    assert argv[argv.index("--sandbox") + 1] == "read-only"

    missing = await bridged([*BRIDGE, "codex", "--executable", str(tmp_path / "no-codex")])
    sid = (await missing.new_session())["sessionId"]
    with pytest.raises(AgentError, match="was not found on PATH; npm install -g @openai/codex"):
        await missing.prompt(sid, [{"type": "text", "text": "hello"}])


# --- user adapters by module path ---------------------------------------------------------


async def test_user_adapter_by_module_path(bridged, monkeypatch):
    monkeypatch.setenv("CLAUDECODE", "from-the-parent")
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ACCESS_TOKEN", "sekrit")
    handler = Recorder()
    client = await bridged(
        [*BRIDGE, "tests.acp_bridge.user_adapters:EchoAdapter", "--env", "ECHO_OPT=from-option"], handler
    )
    assert client.supports("sessionCapabilities", "list") and client.supports("sessionCapabilities", "resume")
    assert [s["title"] for s in await client.list_sessions()] == ["An earlier echo"]
    session = await client.new_session()
    assert session["configOptions"][0]["id"] == "shout"
    sid = session["sessionId"]
    for words in (
        "quiet words",
        "env CLAUDECODE",
        "env CLAUDE_CODE_SESSION_ACCESS_TOKEN",
        "env ECHO_MARK",
        "env ECHO_OPT",
    ):
        assert (await client.prompt(sid, [{"type": "text", "text": words}]))["stopReason"] == "end_turn"
    chunks = [u["content"]["text"] for u in handler.updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert chunks == ["QUIET WORDS", "set-by-adapter-env", "<unset>", "from-env", "from-option"]


async def test_adapter_managed_processes(bridged):
    handler = Recorder()
    client = await bridged([*BRIDGE, "tests.acp_bridge.user_adapters:ManagedEcho"], handler)
    first = (await client.new_session())["sessionId"]
    second = (await client.new_session())["sessionId"]
    assert (await client.prompt(first, [{"type": "text", "text": "one"}]))["stopReason"] == "end_turn"
    assert (await client.prompt(second, [{"type": "text", "text": "two"}]))["stopReason"] == "end_turn"
    assert handler.text() == "ONETWO"
    with pytest.raises(AgentError, match="exited with code 5; its last output:\necho child: told to die"):
        await client.prompt(first, [{"type": "text", "text": "die"}])
    assert (await client.prompt(second, [{"type": "text", "text": "still here"}]))["stopReason"] == "end_turn"


# --- the bridge's own lifecycle, without the client ---------------------------------------


async def raw_bridge(command: list[str], cwd: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *command,
        cwd=cwd,
        start_new_session=True,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )


async def raw_turn_until_streaming(proc: asyncio.subprocess.Process, cwd: Path) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    for message in (
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(cwd), "mcpServers": []}},
    ):
        proc.stdin.write(json.dumps(message).encode() + b"\n")
    await proc.stdin.drain()
    answer = await read_line_until(proc, lambda line: json.loads(line).get("id") == 1, "the session/new answer")
    session = json.loads(answer)["result"]["sessionId"]
    proc.stdin.write(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "session/prompt",
                "params": {"sessionId": session, "prompt": [{"type": "text", "text": "slow"}]},
            }
        ).encode()
        + b"\n"
    )
    await proc.stdin.drain()
    await read_line_until(proc, lambda line: b"chunk2" in line, "chunk2")


async def read_line_until(proc: asyncio.subprocess.Process, predicate: Any, what: str, timeout: float = 20.0) -> bytes:
    """The first line of the bridge's output that `predicate` accepts; fails, never loops or
    hangs, when the output ends or `timeout` seconds pass first."""
    assert proc.stdout is not None
    stdout = proc.stdout

    async def scan() -> bytes:
        while line := await stdout.readline():
            if predicate(line):
                return line
        raise AssertionError(f"the bridge's output ended before {what}")

    try:
        return await asyncio.wait_for(scan(), timeout)
    except asyncio.TimeoutError:
        raise AssertionError(f"timed out after {timeout:g}s waiting for {what}") from None


async def test_end_of_input_alone_stops_the_bridge_and_its_native_group(wire_log, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_CLI_STUBBORN", "1")
    proc = await raw_bridge(bridge_command("claude", FAKE_CLAUDE), tmp_path)
    try:
        await raw_turn_until_streaming(proc, tmp_path)
        pid = native_pids(wire_log)[0]
        assert proc.stdin is not None
        proc.stdin.close()
        assert await asyncio.wait_for(proc.wait(), 15) == 0
        await async_wait_until(lambda: not group_alive(pid), message=f"the native group {pid} to end")
    finally:
        if proc.returncode is None:
            os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()


def process_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux only")
async def test_a_killed_bridge_takes_its_native_process_along(wire_log, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_CLI_STUBBORN", "1")  # only SIGKILL ends it
    proc = await raw_bridge(bridge_command("claude", FAKE_CLAUDE), tmp_path)
    pid = None
    try:
        await raw_turn_until_streaming(proc, tmp_path)
        pid = native_pids(wire_log)[0]
        os.killpg(proc.pid, signal.SIGKILL)  # the bridge gets no chance to clean up
        await proc.wait()
        await async_wait_until(lambda: not process_alive(pid), message=f"the native process {pid} to end")
    finally:
        if proc.returncode is None:
            os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
        if pid is not None:  # its child (in its group) is not covered by the parent-death signal
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
