"""The ACP client against a scripted agent subprocess: handshake, streaming, permissions,
files, terminals, crashes, hangs and junk, and no process left behind."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from codecompanion_py.acp.client import AcpClient
from codecompanion_py.adapters import BUILTIN, Adapters
from codecompanion_py.adapters.acp import AcpAdapter
from codecompanion_py.errors import AgentError, ConfigError
from codecompanion_py.processes import group_alive
from tests.waiting import async_wait_until

from .clients import Clients, Recorder

FAKE_AGENT = str(Path(__file__).with_name("fake_agent.py"))


def fake_adapter(**defaults: Any) -> AcpAdapter:
    return AcpAdapter(
        name="fake",
        formatted_name="Fake Agent",
        commands={"default": [sys.executable, FAKE_AGENT]},
        defaults={"timeout": 5000, "prompt_timeout": 5000, **defaults},
    )


@pytest.fixture
async def started(tmp_path):
    clients = Clients(tmp_path, "agent")

    async def start(handler: Recorder | None = None, **defaults: Any) -> AcpClient:
        return await clients.start(fake_adapter(**defaults), handler)

    yield start
    await clients.close_all()


async def test_handshake_and_streamed_reply(started):
    handler = Recorder()
    client = await started(handler, auth_method="fake-key")
    assert client.agent_info["name"] == "fake-agent"
    assert client.supports("loadSession") and client.supports("sessionCapabilities", "list")
    session = await client.new_session()
    assert session["sessionId"] == "sess-1" and session["modes"]["currentModeId"] == "ask"
    result = await client.prompt("sess-1", [{"type": "text", "text": "stream please"}])
    assert result["stopReason"] == "end_turn"
    assert handler.text().startswith("Hello from the fake agent.")
    assert handler.text("agent_thought_chunk") == "Let me think."
    # updates the agent sends after its reply still arrive, outside the turn
    await async_wait_until(lambda: handler.text().endswith("a late word"), message="the late word")
    assert any(u["sessionUpdate"] == "usage_update" and u["used"] == 1234 for u in handler.updates)
    assert not client.in_turn


async def test_authenticate_is_sent_only_with_a_method_the_agent_offers(started, tmp_path, monkeypatch):
    log = tmp_path / "wire.log"
    monkeypatch.setenv("FAKE_AGENT_LOG", str(log))
    await started(auth_method="fake-key")
    await started(auth_method="not-offered")
    assert log.read_text().count('"authenticate"') == 1


async def test_permission_then_write(started, tmp_path):
    handler = Recorder(choose="allow")
    client = await started(handler)
    await client.new_session()
    result = await client.prompt("sess-1", [{"type": "text", "text": "permission"}])
    assert result["stopReason"] == "end_turn"
    assert [o["kind"] for o in handler.permissions[0]["options"]] == [
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    assert (tmp_path / "hello.txt").read_text() == "hello from the agent\n"
    statuses = [u.get("status") for u in handler.updates if u.get("toolCallId") == "call-1"]
    assert statuses == ["pending", "in_progress", "completed"]


async def test_what_may_change_a_file_waits_until_changes_are_allowed(started, tmp_path):
    """The turn's checkpoint is taken while the prompt goes out: the agent's permission
    requests, writes and terminals wait for it (`changes_allowed`), its messages do not."""
    allowed = asyncio.Event()

    class Checkpointing(Recorder):
        async def changes_allowed(self) -> None:
            await allowed.wait()

    handler = Checkpointing(choose="allow")
    client = await started(handler)
    await client.new_session()
    turn = asyncio.ensure_future(client.prompt("sess-1", [{"type": "text", "text": "permission"}]))
    await async_wait_until(lambda: any(u.get("toolCallId") == "call-1" for u in handler.updates), message="the call")
    await asyncio.sleep(0.2)
    assert handler.permissions == [] and not (tmp_path / "hello.txt").exists() and not turn.done()
    allowed.set()
    assert (await turn)["stopReason"] == "end_turn"
    assert (tmp_path / "hello.txt").read_text() == "hello from the agent\n"


async def test_rejected_permission_writes_nothing(started, tmp_path):
    handler = Recorder(choose="reject")
    client = await started(handler)
    await client.new_session()
    await client.prompt("sess-1", [{"type": "text", "text": "permission"}])
    assert not (tmp_path / "hello.txt").exists()
    assert "rejected" in handler.text()


async def test_cancel_answers_a_pending_permission_cancelled(started, tmp_path):
    handler = Recorder(choose=None)
    client = await started(handler)
    await client.new_session()
    turn = asyncio.ensure_future(client.prompt("sess-1", [{"type": "text", "text": "permission"}]))
    await async_wait_until(lambda: handler.permissions, message="the permission request")
    await client.cancel("sess-1")
    result = await asyncio.wait_for(turn, 15)
    assert result["stopReason"] == "cancelled"
    assert not (tmp_path / "hello.txt").exists()


async def test_cancel_stops_a_streaming_turn(started):
    handler = Recorder()
    client = await started(handler)
    await client.new_session()
    turn = asyncio.ensure_future(client.prompt("sess-1", [{"type": "text", "text": "slow"}]))
    await async_wait_until(lambda: "chunk3" in handler.text(), message=lambda: f"chunk3; got {handler.text()!r}")
    await client.cancel("sess-1")
    assert (await asyncio.wait_for(turn, 15))["stopReason"] == "cancelled"
    assert "chunk399" not in handler.text()


async def test_terminal_runs_a_real_process(started):
    handler = Recorder()
    client = await started(handler)
    await client.new_session()
    await client.prompt("sess-1", [{"type": "text", "text": "terminal"}])
    assert handler.text() == "exit=0 truncated=False output=terminal says hi"
    assert "terminal says hi" in client.terminals.output_of("term-1")


async def test_terminal_output_keeps_the_end_within_the_byte_limit(started):
    handler = Recorder()
    client = await started(handler)
    await client.new_session()
    await client.prompt("sess-1", [{"type": "text", "text": "terminal print('é' * 2000 + 'END')"}])
    text = handler.text()
    assert "truncated=True" in text and text.endswith("END")
    output = text.split("output=", 1)[1]
    assert len(output.encode()) <= 1000 and "\ufffd" not in output  # cut at a character boundary


async def test_crash_mid_turn_is_a_clear_error_and_no_process_remains(started):
    handler = Recorder()
    client = await started(handler)
    await client.new_session()
    with pytest.raises(AgentError) as raised:
        await client.prompt("sess-1", [{"type": "text", "text": "crash"}])
    message = str(raised.value)
    assert "exited with code 3" in message and "the fake agent fell over" in message
    assert handler.text() == "about to crash"
    assert not client.alive


async def test_an_agent_that_never_answers_initialize_times_out(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_AGENT_HANG", "initialize")
    client = AcpClient(fake_adapter(timeout=500), Recorder(), cwd=str(tmp_path))
    with pytest.raises(AgentError, match="did not answer initialize within 0.5 s"):
        await client.start()
    assert client.process is not None and not group_alive(client.process.pgid)


async def test_a_silent_prompt_is_reported_as_hanging(started, monkeypatch):
    monkeypatch.setenv("FAKE_AGENT_HANG", "session/prompt")
    client = await started(prompt_timeout=600)
    await client.new_session()
    with pytest.raises(AgentError, match="said nothing for 0.6 s"):
        await client.prompt("sess-1", [{"type": "text", "text": "hi"}])


async def test_waiting_on_the_user_is_not_a_hang(started):
    class SlowUser(Recorder):
        async def request_permission(self, params: dict[str, Any]) -> dict[str, Any]:
            await asyncio.sleep(2.0)  # longer than the prompt timeout
            return {"outcome": {"outcome": "selected", "optionId": "reject"}}

    # the agent itself must answer within the prompt timeout: 1 s, not less, on a busy machine
    client = await started(SlowUser(), prompt_timeout=1000)
    await client.new_session()
    assert (await client.prompt("sess-1", [{"type": "text", "text": "permission"}]))["stopReason"] == "end_turn"


async def test_junk_lines_and_unknown_updates_are_skipped(started):
    handler = Recorder()
    client = await started(handler)
    await client.new_session()
    assert (await client.prompt("sess-1", [{"type": "text", "text": "junk"}]))["stopReason"] == "end_turn"
    assert handler.text() == "still fine"
    assert any(u["sessionUpdate"] == "some_future_update_kind" for u in handler.updates)


async def test_sessions_list_load_modes_and_config_options(started):
    handler = Recorder()
    client = await started(handler)
    assert [s["title"] for s in await client.list_sessions()] == ["Earlier work"]
    await client.load_session("old-1")
    assert handler.text("user_message_chunk") == "earlier question"
    assert handler.text() == "earlier answer"
    await client.set_mode("sess-1", "code")
    options = await client.set_config_option("sess-1", "model", "fake-2")
    assert options["configOptions"][0]["currentValue"] == "fake-2"
    await async_wait_until(
        lambda: {"sessionUpdate": "current_mode_update", "currentModeId": "code"} in handler.updates,
        message=lambda: f"the mode update; got {handler.updates}",
    )


async def test_an_error_answer_names_the_method(started):
    client = await started()
    with pytest.raises(AgentError, match="session/resume failed: no session/resume"):
        await client._call("session/resume", {}, timeout=5)


async def test_a_missing_command_says_how_to_install_it(tmp_path):
    adapter = BUILTIN.agent("codex")
    adapter.commands["default"] = ["definitely-not-installed-acp-agent"]
    client = AcpClient(adapter, Recorder(), cwd=str(tmp_path))
    with pytest.raises(ConfigError, match="not found on PATH; npm install -g @zed-industries/codex-acp"):
        await client.start()


def test_builtin_adapters_are_data_with_commands():
    for name in (
        "claude_code",
        "codex",
        "gemini_cli",
        "goose",
        "opencode",
        "cursor_cli",
        "copilot_acp",
        "kimi_cli",
        "auggie_cli",
        "cline_cli",
        "cagent",
        "kilocode",
        "kiro",
        "mistral_vibe",
    ):
        adapter = BUILTIN.agent(name)
        assert adapter.command() and all(isinstance(part, str) for part in adapter.command())
    assert BUILTIN.agent("gemini_cli").command() == ["gemini", "--acp"]  # --experimental-acp is deprecated
    assert "--yolo" in BUILTIN.agent("gemini_cli").command(yolo=True)
    assert BUILTIN.agent("codex_cli").command()[-2:] == ["acp-bridge", "codex"]
    assert BUILTIN.agent("claude_code_cli").command()[-2:] == ["acp-bridge", "claude"]
    # as CodeCompanion starts them; none is asked to authenticate unless its config says how
    assert {name: BUILTIN.agent(name).command() for name in ("cagent", "kilocode", "kiro", "mistral_vibe")} == {
        "cagent": ["cagent", "acp", "basic_agent.yaml"],
        "kilocode": ["kilo", "acp"],
        "kiro": ["kiro-cli", "acp"],
        "mistral_vibe": ["vibe-acp"],
    }
    assert BUILTIN.agent("kiro").auth_method([{"id": "kiro-login"}], {}) is None
    assert BUILTIN.agent("kilocode").formatted_name == "Kilo Code" and BUILTIN.agent("kilocode").timeout == 20


def test_user_tables_merge_over_builtins_and_define_new_agents():
    # cagent as CodeCompanion's docs set it up: the user's own agent file
    cagent = Adapters(acp={"cagent": {"commands": {"default": ["cagent", "acp", "reviewer.yaml"]}}}).agent("cagent")
    assert cagent.command() == ["cagent", "acp", "reviewer.yaml"] and cagent.formatted_name == "Cagent"
    registry = Adapters(
        acp={
            "codex": {"commands": {"default": ["/opt/codex-acp"]}},
            "mine": {"extends": "codex", "formatted_name": "My Codex"},
        }
    )
    assert registry.agent("codex").command() == ["/opt/codex-acp"]
    mine = registry.agent("mine")
    assert mine.formatted_name == "My Codex" and mine.command() == ["/opt/codex-acp"]


def test_auth_method_follows_the_environment():
    gemini = BUILTIN.agent("gemini_cli")
    offered = [{"id": "oauth-personal"}, {"id": "gemini-api-key"}]
    assert gemini.auth_method(offered, {"GEMINI_API_KEY": "k"}) == "gemini-api-key"
    assert gemini.auth_method(offered, {}) == "oauth-personal"
    assert BUILTIN.agent("codex").auth_method([{"id": "chatgpt"}], {"OPENAI_API_KEY": "k"}) is None


async def test_adapter_env_is_resolved_for_the_agent(monkeypatch):
    monkeypatch.setenv("MY_SECRET_SOURCE", "s3cret")
    adapter = fake_adapter()
    adapter.env = {"AGENT_KEY": "MY_SECRET_SOURCE", "LITERAL": "some value", "UNSET": "NOT_SET_ANYWHERE_X"}
    env = await adapter.environment()
    assert env["AGENT_KEY"] == "s3cret" and env["LITERAL"] == "some value" and "UNSET" not in env
    assert env["PATH"] == os.environ["PATH"]
