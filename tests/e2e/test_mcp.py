"""MCP servers in real Neovim chats against a local LLM server: the reference server
(`@modelcontextprotocol/server-everything`, installed from npm by `make test`) over stdio and
over streamable HTTP, its tool called with approval and its result in the next request; a
server of the tests' own with every content kind, an error, and a crash after which it
starts again without breaking the chat."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread
from tests.acp.real_agents import installed
from tests.e2e.test_tools import RECORD_UI, text_reply, tool_call_reply, tool_messages

pytestmark = pytest.mark.nvim

HERE = Path(__file__).parents[1] / "mcp"
FAKE = str(HERE / "fake_server.py")


def everything() -> str:
    command = installed("mcp-server-everything")
    if command is None:
        pytest.skip("the reference MCP server is not installed (make agents; it needs npm)")
    return command


def setup(editor, url: str, servers_lua: str, answers=(), extra: str = "") -> None:
    editor.lua(RECORD_UI)
    editor.lua("_G.cc_answers = ...", list(answers))
    editor.setup(f"""{{
      adapters = {{ http = {{ testllm = function()
        return require("codecompanion_py.adapters").extend("openai_compatible", {{
          env = {{ url = "{url}" }}, schema = {{ model = {{ default = "test-model" }} }},
        }})
      end }} }},
      interactions = {{ chat = {{ adapter = "testllm" }} }},
      mcp = {{ servers = {{ {servers_lua} }} {extra} }},
    }}""")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def http_everything():
    """The reference server's streamable HTTP transport on a free port of 127.0.0.1."""
    command, port = everything(), free_port()
    env = {**os.environ, "PORT": str(port), "NODE_OPTIONS": f"--require {HERE / 'bind_localhost.cjs'}"}
    proc = subprocess.Popen(
        [command, "streamableHttp"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(10)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_real_mcp_servers_tool_runs_with_approval(editor, transport, request):
    if transport == "stdio":
        server_lua = f'everything = {{ cmd = {{ "{everything()}", "stdio" }} }}'
    else:
        server_lua = f'everything = {{ url = "{request.getfixturevalue("http_everything")}" }}'
    replies = [tool_call_reply(("m1", "everything_echo", {"message": "hello over " + transport})), text_reply("Done.")]
    with ServerThread(ScriptedServer.sequence(replies)) as llm:
        setup(editor, llm.url, server_lua, answers=["Accept"])
        editor.nvim.command("CodeCompanionChat Say hello with @{mcp:everything}")
        done = editor.wait_event("CodeCompanionChatDone", timeout=60)
        assert done["data"]["status"] == "success", editor.text()
        first = llm.requests[0].json()
        offered = {t["function"]["name"]: t["function"] for t in first["tools"]}
        assert "everything_echo" in offered
        assert (
            offered["everything_echo"]["parameters"]["properties"]["message"]["type"] == "string"
        )  # as the server has it
        assert any(
            "tools from the MCP server `everything`" in m["content"] for m in first["messages"] if m["role"] == "system"
        )
        [result] = tool_messages(llm.requests[1])
        assert result["content"] == f"Echo: hello over {transport}"
        [asked] = editor.lua("return _G.cc_prompts")
        assert "everything's MCP tool `echo`" in asked["prompt"]
        names = editor.event_names()
        for event in ("MCPServerStart", "ToolApprovalRequested", "ToolFinished"):
            assert "CodeCompanion" + event in names
        # CodeCompanion's names, order and data: ready, then the tools as the LLM calls them
        mcp = [e for e in editor.events() if e["event"].startswith("CodeCompanionMCPServer")]
        assert [e["event"] for e in mcp[:3]] == [  # again each time the server says its tools changed
            "CodeCompanionMCPServerStart",
            "CodeCompanionMCPServerReady",
            "CodeCompanionMCPServerToolsLoaded",
        ]
        assert mcp[1]["data"]["server"] == "everything"
        assert mcp[2]["data"]["server"] == "everything"
        assert "everything_echo" in mcp[2]["data"]["tools"]


def test_content_kinds_an_error_and_a_crash_that_the_chat_survives(editor):
    replies = [
        tool_call_reply(("a", "fake_shapes", {}), ("b", "fake_fail", {})),
        tool_call_reply(("c", "fake_crash", {})),
        tool_call_reply(("d", "fake_echo", {"text": "still here"})),
        text_reply("All done."),
    ]
    server_lua = f'fake = {{ cmd = {{ "{sys.executable}", "{FAKE}" }}, tool_defaults = {{ opts = {{ require_approval_before = false }} }} }}'
    with ServerThread(ScriptedServer.sequence(replies)) as llm:
        setup(editor, llm.url, server_lua, extra=', opts = { default_servers = { "fake" } }')
        editor.nvim.command("CodeCompanionChat Try the fake server")
        done = editor.wait_event("CodeCompanionChatDone", timeout=60)
        assert done["data"]["status"] == "success", editor.text()
        shapes, fail = tool_messages(llm.requests[1])
        assert "[image image/png, 8 bytes]" in shapes["content"]
        assert "[resource link file:///notes.txt: notes]" in shapes["content"]
        assert "[resource file:///a.txt]\nalpha" in shapes["content"]
        assert '"count": 3' in shapes["content"]
        assert "the fake tool failed" in fail["content"]
        [crashed] = tool_messages(llm.requests[2])
        assert "MCP server fake exited with code 3" in crashed["content"]
        assert "boom: the fake server crashed" in crashed["content"]
        assert "starts again with the next call" in crashed["content"]
        [echoed] = tool_messages(llm.requests[3])
        assert echoed["content"] == "echo: still here"  # started again
        assert editor.event_names().count("CodeCompanionMCPServerStart") == 2


def test_an_agent_gets_the_configured_servers_in_its_session(editor, tmp_path):
    from tests.e2e.test_acp import FAKE_AGENT

    log = tmp_path / "agent.log"
    editor.nvim.command(f"cd {tmp_path}")
    editor.setup(f"""{{
      adapters = {{ acp = {{ fake = {{
        formatted_name = "Fake Agent",
        commands = {{ default = {{ "{sys.executable}", "{FAKE_AGENT}" }} }},
        defaults = {{ timeout = 10000 }}, env = {{ FAKE_AGENT_LOG = "{log}" }},
      }} }} }},
      interactions = {{ chat = {{ adapter = "fake" }} }},
      mcp = {{ servers = {{
        fake = {{ cmd = {{ "{sys.executable}", "{FAKE}" }}, env = {{ TOKEN = "cmd:echo from-a-command" }} }},
        web = {{ url = "http://127.0.0.1:9/mcp" }},
      }} }},
    }}""")
    editor.nvim.command("CodeCompanionChat hello")
    editor.wait_event("CodeCompanionChatDone", timeout=30)
    sent = [json.loads(line) for line in log.read_text().splitlines()]
    [new] = [m["params"] for m in sent if m.get("method") == "session/new"]
    # the fake agent takes no HTTP servers (no mcpCapabilities.http): only the stdio one
    assert new["mcpServers"] == [
        {
            "name": "fake",
            "command": sys.executable,
            "args": [FAKE],
            "env": [{"name": "TOKEN", "value": "from-a-command"}],
        }
    ]
    pre = editor.wait_event("CodeCompanionACPSessionPre")
    assert [s["name"] for s in pre["data"]["mcp_servers"]] == ["fake"]


def test_acp_session_pre_handlers_change_the_servers_an_agent_gets(editor, tmp_path):
    from tests.e2e.test_acp import FAKE_AGENT

    log = tmp_path / "agent.log"
    editor.nvim.command(f"cd {tmp_path}")
    editor.lua("""vim.api.nvim_create_autocmd("User", { pattern = "CodeCompanionACPSessionPre", callback = function(ev)
      local pending = require("codecompanion").session_pre
      table.insert(pending.mcp_servers, { name = "added", command = "added-server", args = {}, env = {} })
    end })""")
    editor.setup(f"""{{
      adapters = {{ acp = {{ fake = {{
        commands = {{ default = {{ "{sys.executable}", "{FAKE_AGENT}" }} }},
        defaults = {{ timeout = 10000 }}, env = {{ FAKE_AGENT_LOG = "{log}" }},
      }} }} }},
      interactions = {{ chat = {{ adapter = "fake" }} }},
      mcp = {{ servers = {{ fake = {{ cmd = {{ "{sys.executable}", "{FAKE}" }} }} }} }},
    }}""")
    editor.nvim.command("CodeCompanionChat hello")
    editor.wait_event("CodeCompanionChatDone", timeout=30)
    sent = [json.loads(line) for line in log.read_text().splitlines()]
    [new] = [m["params"] for m in sent if m.get("method") == "session/new"]
    assert [s["name"] for s in new["mcpServers"]] == ["fake", "added"]


def test_slash_mcp_starts_a_server_whose_prompt_and_resource_go_into_the_chat(editor):
    from tests.e2e.test_context import context_sent

    server_lua = f'fake = {{ cmd = {{ "{sys.executable}", "{FAKE}" }} }}'
    with ServerThread(ScriptedServer.sequence([text_reply("Reviewed.")])) as llm:
        setup(editor, llm.url, server_lua)
        editor.lua("""_G.cc_notes = {}; vim.notify = function(msg) table.insert(_G.cc_notes, msg) end
          vim.ui.select = function(items, opts, on_choice) on_choice(items[1], 1) end
          vim.ui.input = function(opts, on_done) _G.cc_asked = opts.prompt; on_done('lua') end""")
        editor.nvim.command("CodeCompanionChat")
        chat = editor.nvim.current.buffer.number
        editor.lua(
            "require('codecompanion_py.chat.slash').run(require('codecompanion_py.chat').chats[...], 'mcp')", chat
        )
        editor.wait_for(
            lambda: any("MCP server fake runs: 6 tools" in n for n in editor.lua("return _G.cc_notes")),
            what="the server started",
        )
        words = editor.lua(
            "return vim.tbl_map(function(i) return i.word end, require('codecompanion_py.chat').omnifunc(0, '/mcp'))"
        )
        assert words == ["/mcp", "/mcp:fake:review"]
        editor.nvim.command("normal! G")
        editor.lua(
            "require('codecompanion_py.chat.slash').run(require('codecompanion_py.chat').chats[...], 'mcp:fake:review')",
            chat,
        )
        editor.wait_for(lambda: editor.lines()[-1] == "Review this lua code carefully.", what="the prompt inserted")
        assert editor.lua("return _G.cc_asked") == "language: "
        editor.type_prompt(" #{mcp:fake:file:///guide.md}")
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone", timeout=30)
        assert context_sent(llm, 0) == ["Context: fake resource file:///guide.md\n```\n# Guide\nUse tabs.\n```"]
        body = llm.requests[0].json()
        assert any(t["function"]["name"] == "fake_echo" for t in body["tools"])  # started by /mcp: its tools joined
        editor.nvim.command("checkhealth codecompanion_py")
        assert "fake (stdio): running, 6 tools, 1 prompt, 1 resource" in editor.text()


def test_a_changed_tool_list_is_read_again_and_a_slow_call_shows_progress_until_q_cancels_it(editor, tmp_path):
    log = tmp_path / "mcp.log"
    replies = [
        tool_call_reply(("g", "fake_grow", {})),
        text_reply("It grew."),
        tool_call_reply(("s", "fake_slow", {})),
    ]
    server_lua = (
        f'fake = {{ cmd = {{ "{sys.executable}", "{FAKE}" }}, env = {{ FAKE_MCP_LOG = "{log}" }},'
        " tool_defaults = { opts = { require_approval_before = false } } }"
    )
    with ServerThread(ScriptedServer.sequence(replies)) as llm:
        setup(editor, llm.url, server_lua, extra=', opts = { default_servers = { "fake" } }')
        editor.nvim.command("CodeCompanionChat Grow")
        editor.wait_event("CodeCompanionChatDone", timeout=30)
        assert "fake_extra" not in {t["function"]["name"] for t in llm.requests[0].json()["tools"]}
        editor.type_prompt("Now the slow one")
        editor.nvim.input("<CR>")
        editor.wait_for(lambda: len(llm.requests) == 3, what="the third request")
        assert "fake_extra" in {t["function"]["name"] for t in llm.requests[2].json()["tools"]}  # listed again
        editor.wait_for(lambda: "fake 1/4: indexing" in editor.text(), what="the progress in the chat")
        editor.nvim.input("q")
        stopped = editor.wait_event("CodeCompanionChatStopped", timeout=30)
        assert stopped["data"]["status"] == "stopped"
        messages = [json.loads(line) for line in log.read_text().splitlines()]
        [slow] = [m for m in messages if m.get("method") == "tools/call" and m["params"]["name"] == "slow"]
        cancelled = editor.wait_for(
            lambda: (
                [
                    m["params"]
                    for m in (json.loads(line) for line in log.read_text().splitlines())
                    if m.get("method") == "notifications/cancelled"
                ]
                or None
            ),
            what="the cancellation at the server",
        )
        assert cancelled == [{"requestId": slow["id"], "reason": "the user stopped it"}]
