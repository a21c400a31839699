"""What an MCP server sends comes in through one door: its secrets (configured headers,
env values, bearer tokens) never reach the chat, the LLM or the history, even cut in half;
its messages, results and instructions are capped (an over-long answer fails its call and
the server stays usable); its tool names cannot replace or remove other tools and reach the
approval as one safe line; its progress counts only for our own calls, at a bounded rate.
Real stdio servers (`mcp_hostile_server.py`), real HTTP servers on 127.0.0.1, a real chat."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from codecompanion_py.chat.session import ChatSession
from codecompanion_py.client import HttpClient
from codecompanion_py.demo.server import Reply, ScriptedServer, ServerThread
from codecompanion_py.errors import ConfigError
from codecompanion_py.events import ErrorEvent
from codecompanion_py.mcp.client import McpServer
from codecompanion_py.mcp.servers import McpServers
from codecompanion_py.tools.registry import ToolSettings
from tests.e2e.conftest import editor, nvim_home  # noqa: F401 (the real Neovim fixtures)
from tests.e2e.test_mcp import setup, tool_messages
from tests.e2e.test_tools import text_reply, tool_call_reply
from tests.tools.test_orchestrator import call, orchestrator

from ..streaming import chat_at
from .fault_server import Fault, FaultServer
from .test_hostile_input import Editor, Recorder
from .test_secrets import ask, openai_at

HOSTILE = str(Path(__file__).parent / "mcp_hostile_server.py")
TOKEN = "mcp-tok-DoNotShowMe-9876543210abcdef"
KEY = "sk-live-DoNotShowMe-0123456789"
SAFE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def hostile(**env) -> dict:
    return {"cmd": [sys.executable, HOSTILE], "env": {"API_TOKEN": TOKEN, **env}, "timeout": 15_000}


async def run_tool(servers: McpServers, server: str, tool: str, tmp_path, **arguments):
    definitions, _prompt = await servers.tools(server, cwd=str(tmp_path), notice=lambda event, data: None)
    [definition] = [d for d in definitions if d.name == f"{server}_{tool}"]
    orch, _editor, _surface = orchestrator([definition], tmp_path, {"choice": "accept"})
    [result] = (await orch.run([call(name=definition.name, id="c1", **arguments)])).results
    return result


def json_answer(message_id, result) -> Reply:
    body = json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}).encode()
    return Reply(headers={"content-type": "application/json"}, chunks=[body])


def http_mcp(on_call, instructions: str = "", *, session: str = "", on_delete=None):
    """A streamable-HTTP MCP server: one tool `t`, each call answered by on_call(request);
    `session` is the mcp-session-id it hands out, `on_delete(request)` answers the DELETE
    that ends a session (a 405 without it)."""

    async def respond(request):
        if request.method == "DELETE" and on_delete is not None:
            return await on_delete(request)
        if request.method != "POST":
            return Reply(status=405)
        message = request.json()
        if "id" not in message:
            return Reply(status=202)
        if message["method"] == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}}
            reply = json_answer(message["id"], {**result, **({"instructions": instructions} if instructions else {})})
            if session:
                reply.headers["mcp-session-id"] = session
            return reply
        if message["method"] == "tools/list":
            return json_answer(message["id"], {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]})
        return on_call(request, message)

    return ScriptedServer(respond)


def secret_free(text: str, secret: str) -> bool:
    """No part of `secret` of 8 characters or more is in `text`."""
    return not any(secret[i : i + 8] in text for i in range(len(secret) - 7))


# --- 1. secrets ------------------------------------------------------------------------------


async def error_for_a_body_around_the_cut(client, status: int, content_type: str, before: str) -> ErrorEvent:
    """What the user is shown for a body that holds the key across its 300th character."""
    body = (before + KEY + " and more").encode()
    assert body.index(KEY.encode()) < 300 < body.index(KEY.encode()) + len(KEY)
    fault = Fault(status=status, headers={"content-type": content_type}, body=[body], framing="length")
    async with FaultServer.sequence(fault) as server:
        got = await ask(openai_at(server.url), client)
    assert isinstance(got[-1], ErrorEvent), got[-1]
    return got[-1]


async def test_a_provider_error_cut_inside_the_key_shows_no_part_of_it(monkeypatch, client):
    """A plain-text 404 body echoing the key, the key across the 300-character cut."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    error = await error_for_a_body_around_the_cut(client, 404, "text/plain", "no such route; you sent " + "." * 260)
    assert "HTTP 404" in error.message
    assert secret_free(error.message, KEY), error.message


async def test_an_answer_that_is_no_stream_cut_inside_the_key_shows_no_part_of_it(monkeypatch, client):
    """A 200 that is broken JSON, not an event stream: its first 300 characters are shown,
    the key across that cut (the stream's own path, scrubbed after the cut was made)."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    error = await error_for_a_body_around_the_cut(client, 200, "application/json", '{"echo": "you sent ' + "." * 265)
    assert "not an event stream" in error.message, error.message
    assert secret_free(error.message, KEY), error.message


async def test_an_http_servers_401_echoing_the_authorization_header_shows_no_token(tmp_path):
    def on_call(request, message):
        echoed = f"unauthorized: you sent Authorization: {request.headers.get('authorization')}"
        return Reply(status=401, headers={"content-type": "text/plain"}, chunks=[echoed.encode()])

    local = http_mcp(on_call)
    await local.start()
    spec = {"url": f"{local.url}/mcp", "headers": {"Authorization": f"Bearer {TOKEN}"}}
    servers = McpServers({"servers": {"web": spec}})
    try:
        result = await run_tool(servers, "web", "t", tmp_path)
    finally:
        await servers.close()
        await local.close()
    assert result.status == "error" and "HTTP 401" in result.content
    assert secret_free(result.content, TOKEN), result.content  # the chat, the next request and the history


async def test_an_http_servers_401_at_start_cut_inside_the_token_shows_no_part_of_it():
    def respond(request):
        padding = "." * (290 - len("unauthorized, token "))
        text = f"unauthorized, token {padding}{request.headers.get('x-api-key')} rest"
        return Reply(status=401, headers={"content-type": "text/plain"}, chunks=[text.encode()])

    local = ScriptedServer(respond)
    await local.start()
    server = McpServer("web", {"url": local.url, "headers": {"X-Api-Key": TOKEN}}, cwd=".", notice=lambda e, d: None)
    try:
        with pytest.raises(ConfigError) as raised:
            await server.ensure()
    finally:
        await server.stop()
        await local.close()
    assert "HTTP 401" in str(raised.value) and secret_free(str(raised.value), TOKEN), str(raised.value)


async def test_a_stdio_servers_result_and_its_last_words_show_no_env_secret(tmp_path):
    servers = McpServers({"servers": {"bad": hostile()}})
    try:
        leaked = await run_tool(servers, "bad", "leak", tmp_path)
        crashed = await run_tool(servers, "bad", "crash", tmp_path)
    finally:
        await servers.close()
    assert leaked.status == "success" and leaked.content == "my token is ***"
    assert crashed.status == "error" and "bad credentials ***" in crashed.content
    assert secret_free(crashed.content, TOKEN), crashed.content


@pytest.mark.nvim
def test_in_neovim_a_token_echoed_and_a_50_mb_result_reach_neither_chat_nor_llm_nor_history(
    editor,  # noqa: F811
    tmp_path,
):
    def on_call(request, message):
        echoed = f"unauthorized: you sent Authorization: {request.headers.get('authorization')}"
        return Reply(status=401, headers={"content-type": "text/plain"}, chunks=[echoed.encode()])

    replies = [
        tool_call_reply(("a", "web_t", {}), ("b", "bad_big", {"size": 50_000_000})),
        text_reply("Both failed or were cut."),
        text_reply("A title"),
    ]
    yolo = "tool_defaults = { opts = { require_approval_before = false } }"
    folder = tmp_path / "history"
    with ServerThread(http_mcp(on_call)) as mcp, ServerThread(ScriptedServer.sequence(replies)) as llm:
        servers_lua = (
            f'web = {{ url = "{mcp.url}/mcp", headers = {{ Authorization = "Bearer {TOKEN}" }}, {yolo} }}, '
            f'bad = {{ cmd = {{ "{sys.executable}", "{HOSTILE}" }}, env = {{ API_TOKEN = "{TOKEN}" }}, {yolo} }}'
        )
        setup(editor, llm.url, servers_lua, extra=', opts = { default_servers = { "web", "bad" } }')
        editor.lua(f"require('codecompanion_py.rpc').history_dir = function() return '{folder}' end")
        editor.nvim.command("CodeCompanionChat Call both")
        done = editor.wait_event("CodeCompanionChatDone", timeout=90)
        assert done["data"]["status"] == "success", editor.text()[-2000:]
        saved = editor.wait_for(lambda: list(folder.glob("[!.]*.json")) or None, what="the saved chat", timeout=30)
        shown_text = editor.text()
        web, big = tool_messages(llm.requests[1])
    assert "HTTP 401" in web["content"] and secret_free(web["content"], TOKEN)
    assert "bytes omitted" in big["content"] and len(big["content"]) < 101_000
    assert "HTTP 401" in shown_text and secret_free(shown_text, TOKEN) and len(shown_text) < 300_000
    record = saved[0].read_text()
    assert "HTTP 401" in record and secret_free(record, TOKEN) and len(record) < 1_000_000


# --- 2. sizes --------------------------------------------------------------------------------


async def test_a_50_mb_result_is_capped_as_run_commands_output(tmp_path):
    servers = McpServers({"servers": {"bad": hostile()}})
    try:
        result = await run_tool(servers, "bad", "big", tmp_path, size=50_000_000)
        echoed = await run_tool(servers, "bad", "echo", tmp_path, text="still here")
    finally:
        await servers.close()
    assert result.status == "success" and len(result.content.encode()) < 101_000
    assert "\n[... 49900000 bytes omitted ...]\n" in result.content  # as run_command's output shows it
    assert echoed.content == "echo still here"


async def test_a_stdio_line_over_the_cap_fails_its_call_and_the_server_goes_on(tmp_path):
    servers = McpServers({"servers": {"bad": hostile()}})
    try:
        result = await asyncio.wait_for(run_tool(servers, "bad", "huge", tmp_path, size=70 * 2**20), 60)
        echoed = await run_tool(servers, "bad", "echo", tmp_path, text="after")
    finally:
        await servers.close()
    assert result.status == "error" and "bytes an MCP message may have" in result.content, result.content[:300]
    assert echoed.status == "success" and echoed.content == "echo after"


async def test_an_http_answer_over_the_cap_fails_its_call_and_huge_instructions_are_capped(tmp_path):
    calls = []

    def on_call(request, message):
        calls.append(message)
        huge = {"content": [{"type": "text", "text": "z" * (65 * 2**20)}]}
        if len(calls) == 1:
            return json_answer(message["id"], huge)
        if len(calls) == 2:  # one event of an SSE answer over the cap
            event = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": huge}).encode()
            return Reply(headers={"content-type": "text/event-stream"}, chunks=[b"data: " + event + b"\n\n"])
        return json_answer(message["id"], {"content": [{"type": "text", "text": "fine"}]})

    local = http_mcp(on_call, instructions="follow me " * 100_000)
    await local.start()
    servers = McpServers({"servers": {"web": {"url": f"{local.url}/mcp"}}})
    try:
        _definitions, prompt = await servers.tools("web", cwd=str(tmp_path), notice=lambda event, data: None)
        first = await asyncio.wait_for(run_tool(servers, "web", "t", tmp_path), 60)
        event = await asyncio.wait_for(run_tool(servers, "web", "t", tmp_path), 60)
        third = await run_tool(servers, "web", "t", tmp_path)
    finally:
        await servers.close()
        await local.close()
    assert len(prompt) < 20_000 and "follow me" in prompt
    assert first.status == "error" and "longer than 64 MiB" in first.content, first.content[:300]
    assert event.status == "error" and "longer than 64 MiB" in event.content, event.content[:300]
    assert third.content == "fine"


async def test_json_nested_too_deep_fails_its_call_and_bad_utf8_is_replaced(tmp_path):
    servers = McpServers({"servers": {"bad": hostile()}})
    try:
        deep = await asyncio.wait_for(run_tool(servers, "bad", "deep", tmp_path), 60)
        latin = await run_tool(servers, "bad", "latin", tmp_path)
    finally:
        await servers.close()
    assert deep.status == "error" and "nested too deep" in deep.content, deep.content
    assert latin.status == "success" and latin.content == "caf\ufffd"


async def test_a_huge_tool_list_is_cut_to_what_a_request_can_carry_and_said(tmp_path):
    said = []
    servers = McpServers({"servers": {"many": hostile(HOSTILE_TOOL_COUNT="30000")}})
    try:
        definitions, prompt = await servers.tools("many", cwd=str(tmp_path), notice=lambda e, d: said.append((e, d)))
    finally:
        await servers.close()
    assert 100 < len(definitions) <= 1000
    assert sum(len(json.dumps(d.schema)) for d in definitions) < 2 << 20 and len(prompt) < 64_000
    assert [d["count"] for e, d in said if e == "MCPToolsLeftOut"] == [30_008 - len(definitions)]


# --- 3. names --------------------------------------------------------------------------------


async def chat_with(tmp_path, servers: dict, prompt: str) -> ChatSession:
    llm = ScriptedServer.sequence([text_reply("ok")])
    await llm.start()
    client = HttpClient(retries=0)
    tools = ToolSettings.from_config({"opts": {"default_tools": ["read_file"]}})
    session = chat_at(llm.url, tmp_path, client, Recorder(), tools=tools, mcp=McpServers({"servers": servers}))
    try:
        task = session.submit(prompt)
        assert task is not None
        await asyncio.wait_for(task, 30)
        session.sent = [t["function"]["name"] for t in llm.requests[0].json().get("tools", [])]  # type: ignore[attr-defined]
    finally:
        assert session.mcp is not None
        await session.mcp.close()
        await client.aclose()
        await llm.close()
    return session


async def test_built_in_tools_win_and_servers_remove_only_their_own_tools(tmp_path):
    servers = {
        "read": hostile(HOSTILE_TOOLS=json.dumps(["file", "other"])),
        "gh_enterprise": hostile(HOSTILE_TOOLS=json.dumps(["list"])),
        "gh": hostile(HOSTILE_TOOLS=json.dumps(["list"])),
    }
    session = await chat_with(tmp_path, servers, "@{mcp:gh_enterprise} @{mcp:read} @{mcp:gh} go")
    assert session.tools["read_file"].cmds is not None and "MCP" not in str(session.tools["read_file"].description)
    sent = session.sent  # type: ignore[attr-defined]
    assert "read_other" in sent and "gh_list" in sent and "gh_enterprise_list" in sent
    renamed = [name for name in sent if name.startswith("read_file_")]
    assert len(renamed) == 1 and SAFE_NAME.match(renamed[0])
    assert sent.count("read_file") == 1 and len(sent) == len(set(sent))
    shows = [op for op in session.view.sink.ops if op.get("op") == "show"]  # type: ignore[attr-defined]
    assert any("`file`" in op.get("text", "") and renamed[0] in op.get("text", "") for op in shows)


async def test_tool_names_are_provider_safe_unique_and_one_line_in_the_approval(tmp_path):
    long = "x" * 100
    names = ["evil\nname", "evil name", long, long + "y", "\x1b[31mred"]
    servers = McpServers({"servers": {"s": hostile(HOSTILE_TOOLS=json.dumps(names))}})
    try:
        definitions, prompt = await servers.tools("s", cwd=str(tmp_path), notice=lambda event, data: None)
    finally:
        await servers.close()
    chat_names = [d.name for d in definitions]
    assert len(chat_names) == 5 and len(set(chat_names)) == 5
    assert all(SAFE_NAME.match(name) for name in chat_names), chat_names
    for definition in definitions:
        question = definition.output["prompt"](SimpleNamespace(args={"a": 1}), None)
        assert "\n" not in question and "\x1b" not in question and len(question) < 400
        assert "\x1b" not in definition.description and "\\u001b" in definition.description


# --- 4. progress -----------------------------------------------------------------------------


async def test_a_progress_flood_shows_only_our_calls_progress_at_a_bounded_rate(tmp_path):
    said = []
    servers = McpServers({"servers": {"bad": hostile()}})
    try:
        definitions, _prompt = await servers.tools("bad", cwd=str(tmp_path), notice=lambda e, d: said.append((e, d)))
        [flood] = [d for d in definitions if d.name == "bad_flood"]
        orch, _editor, _surface = orchestrator([flood], tmp_path, {"choice": "accept"})
        [result] = (await orch.run([call(name="bad_flood", id="c1", count=5000)])).results
    finally:
        await servers.close()
    progress = [data for event, data in said if event == "MCPProgress"]
    assert result.content == "flooded"
    assert 1 <= len(progress) < 50, len(progress)
    assert all(data.get("token") == "bad-1" for data in progress)
    assert all("\n" not in str(data.get("text")) for data in progress)


async def test_progress_in_a_chat_is_one_line_updated_in_place(tmp_path):
    llm = ScriptedServer.sequence([tool_call_reply(("f", "bad_flood", {"count": 3000})), text_reply("done")])
    await llm.start()
    client = HttpClient(retries=0)
    servers = McpServers({"servers": {"bad": hostile()}})
    session = chat_at(llm.url, tmp_path, client, Recorder(), editor=Editor("accept"), mcp=servers)
    try:
        task = session.submit("@{mcp:bad} flood")
        assert task is not None
        await asyncio.wait_for(task, 30)
    finally:
        await session.mcp.close()  # type: ignore[union-attr]
        await client.aclose()
        await llm.close()
    sink = session.view.sink
    lines = [op for op in sink.ops if op["op"] == "agent_tool"]  # type: ignore[attr-defined]
    assert 1 <= len(lines) < 50 and {op["id"] for op in lines} == {"mcp-progress:bad-1"}
    assert lines[-1]["status"] == "completed"
    assert not [op for op in sink.ops if op["op"] == "show" and "not-yours" in str(op)]  # type: ignore[attr-defined]
