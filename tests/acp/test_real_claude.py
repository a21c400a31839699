"""The ACP client against the real Claude Code agent (`@zed-industries/claude-agent-acp`
from npm), its LLM played by our scripted server speaking the Messages API: a file
written through a permission request. Skipped where npm could not install it."""

from __future__ import annotations

import pytest

from codecompanion_py.acp.client import AcpClient
from codecompanion_py.adapters.acp import AcpAdapter
from codecompanion_py.demo.server import ScriptedServer
from codecompanion_py.processes import group_alive

from .real_agents import claude_agent_acp, claude_env, claude_llm
from .test_real_codex import AllowOnce

pytestmark = pytest.mark.skipif(
    claude_agent_acp() is None, reason="claude-agent-acp is not installed: `make agents` needs npm"
)


async def test_claude_writes_a_file_through_a_permission_request(tmp_path, monkeypatch):
    monkeypatch.delenv("IS_SANDBOX", raising=False)  # see real_agents.py
    project = tmp_path / "proj"
    project.mkdir()
    target = project / "made_by_claude.txt"
    server = ScriptedServer(
        claude_llm("Write", {"file_path": str(target), "content": "hello from claude\n"}, "Wrote it.")
    )
    await server.start()
    handler = AllowOnce()
    adapter = AcpAdapter(
        name="claude_code",
        formatted_name="Claude Code",
        commands={"default": [str(claude_agent_acp())]},
        env=claude_env(tmp_path, server.url),
        defaults={"timeout": 30000, "prompt_timeout": 60000},
    )
    client = AcpClient(adapter, handler, cwd=str(project))
    try:
        await client.start()
        session = await client.new_session()
        result = await client.prompt(session["sessionId"], [{"type": "text", "text": "RUNTOOL write the file"}])
        assert result["stopReason"] == "end_turn"
        [permission] = handler.permissions
        assert permission["toolCall"]["kind"] == "edit"
        assert permission["toolCall"]["content"][0]["newText"] == "hello from claude\n"
        assert target.read_text() == "hello from claude\n"
        assert handler.text().strip() == "Wrote it."
        statuses = [u.get("status") for u in handler.updates if u.get("toolCallId") == "toolu_1"]
        assert statuses[-1] == "completed"
    finally:
        await client.close()
        await server.close()
    assert not group_alive(client.process.pgid)
