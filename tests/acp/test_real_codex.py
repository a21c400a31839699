"""The ACP client against the real Codex agent (`@zed-industries/codex-acp` from npm), its
LLM played by our scripted server: a file created through a permission request, and a
turn cancelled while the model is still answering. Skipped where npm could not install it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from codecompanion_py.acp.client import AcpClient
from codecompanion_py.adapters.acp import AcpAdapter
from codecompanion_py.demo.server import Reply, ScriptedServer
from codecompanion_py.processes import group_alive

from .clients import Recorder
from .real_agents import codex_acp, codex_home, codex_llm

pytestmark = pytest.mark.skipif(codex_acp() is None, reason="codex-acp is not installed: `make agents` needs npm")

ADD_FILE = "\n".join(
    [
        "apply_patch <<'PATCH'",
        "*** Begin Patch",
        "*** Add File: made_by_codex.txt",
        "+hello from codex",
        "*** End Patch",
        "PATCH",
        "",
    ]
)


def codex(tmp_path, url: str) -> AcpAdapter:
    env = codex_home(tmp_path, url, approval="untrusted", sandbox="danger-full-access")
    return AcpAdapter(
        name="codex",
        formatted_name="Codex",
        commands={"default": [str(codex_acp())]},
        env=env,
        defaults={"timeout": 30000, "prompt_timeout": 60000},
    )


class AllowOnce(Recorder):
    async def request_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        self.permissions.append(params)
        option = next(o for o in params["options"] if o["kind"] == "allow_once")
        return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}


async def test_codex_creates_a_file_through_a_permission_request(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    server = ScriptedServer(codex_llm(ADD_FILE, "Created it."))
    await server.start()
    handler = AllowOnce()
    client = AcpClient(codex(tmp_path, server.url), handler, cwd=str(project))
    try:
        await client.start()
        assert client.agent_info["name"] == "codex-acp"
        session = await client.new_session()
        result = await client.prompt(session["sessionId"], [{"type": "text", "text": "RUNTOOL make the file"}])
        assert result["stopReason"] == "end_turn"
        [permission] = handler.permissions
        assert permission["toolCall"]["kind"] == "edit"
        assert {o["kind"] for o in permission["options"]} >= {"allow_once", "reject_once"}
        assert (project / "made_by_codex.txt").read_text() == "hello from codex\n"
        assert "Created it." in handler.text()
    finally:
        await client.close()
        await server.close()
    assert not group_alive(client.process.pgid)


async def test_cancel_while_codex_waits_on_its_model(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    started = asyncio.Event()

    def hang(request) -> Reply:
        started.set()
        return Reply(headers={"content-type": "text/event-stream"}, chunks=[], hang=True)

    server = ScriptedServer(hang)
    await server.start()
    client = AcpClient(codex(tmp_path, server.url), Recorder(), cwd=str(project))
    try:
        await client.start()
        session = await client.new_session()
        turn = asyncio.ensure_future(client.prompt(session["sessionId"], [{"type": "text", "text": "hi"}]))
        await asyncio.wait_for(started.wait(), 30)
        await client.cancel(session["sessionId"])
        result = await asyncio.wait_for(turn, 30)
        assert result["stopReason"] == "cancelled"
    finally:
        await client.close()
        await server.close()
    assert not group_alive(client.process.pgid)
