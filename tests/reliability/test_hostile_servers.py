"""Hostile MCP servers, web pages and providers against the doors and the secret scrubber:
no key they echo or hold reaches the chat, the LLM, a saved chat or a hint, and no server
can grow the engine without bound or hold a chat up."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import sys
import textwrap

import pytest

from codecompanion_py import config, outbound, web
from codecompanion_py.acp.jsonrpc import MAX_SERVING, Connection
from codecompanion_py.adapters import extend
from codecompanion_py.adapters.models import clear_cache, list_models
from codecompanion_py.adapters.request import build_request
from codecompanion_py.chat.debug import debug_text
from codecompanion_py.client import HttpClient
from codecompanion_py.demo.server import Reply, ScriptedServer
from codecompanion_py.errors import ConfigError
from codecompanion_py.events import FinalEvent
from codecompanion_py.mcp.client import McpServer
from codecompanion_py.mcp.servers import McpServers
from codecompanion_py.messages import Message, TextPart, ToolCall
from codecompanion_py.stream.iterators import HttpStreamIterator
from codecompanion_py.ui import ops
from codecompanion_py.ui.ops import AdapterInfo
from codecompanion_py.ui.view import EventView
from tests.waiting import async_wait_until

from .fault_server import FaultServer, sse, status, stream
from .test_mcp_door import KEY, TOKEN, http_mcp, json_answer, run_tool, secret_free
from .test_secrets import openai_at

# A stdio MCP server with tools, prompts and resources, which echoes its env's API_TOKEN in
# its lists; its tool `poke` says its prompts changed before it answers.
LISTING_SERVER = textwrap.dedent(
    """
    import json, os, sys

    token = os.environ["API_TOKEN"]
    listed = 0

    def send(message):
        sys.stdout.write(json.dumps(message) + "\\n")
        sys.stdout.flush()

    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            continue
        if method == "initialize":
            capabilities = {"tools": {}, "prompts": {"listChanged": True}, "resources": {}}
            send({"jsonrpc": "2.0", "id": ident, "result": {"protocolVersion": "2025-11-25", "capabilities": capabilities}})
        elif method == "tools/list":
            schema = {"type": "object", "properties": {"auth": {"type": "string", "default": token}}}
            tools = [
                {"name": "poke", "description": "pokes", "inputSchema": schema},
                {"name": "use_" + token, "description": "x", "inputSchema": {"type": "object"}},
            ]
            send({"jsonrpc": "2.0", "id": ident, "result": {"tools": tools}})
        elif method == "prompts/list":
            listed += 1
            prompt = {"name": f"p{listed}", "description": f"signed in with {token}"}
            send({"jsonrpc": "2.0", "id": ident, "result": {"prompts": [prompt]}})
        elif method == "resources/list":
            resource = {"uri": "file:///notes", "name": f"notes of {token}"}
            send({"jsonrpc": "2.0", "id": ident, "result": {"resources": [resource]}})
        elif method == "tools/call":
            send({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"})
            send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "poked"}]}})
        else:
            send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no"}})
    """
)


def listing_server(tmp_path, timeout_ms: int = 15_000) -> dict:
    script = tmp_path / "listing_server.py"
    script.write_text(LISTING_SERVER)
    return {"cmd": [sys.executable, str(script)], "env": {"API_TOKEN": TOKEN}, "timeout": timeout_ms}


# --- MCP servers ---------------------------------------------------------------------------


async def test_a_list_changed_notice_over_stdio_does_not_stall_the_server(tmp_path):
    """The notice was handled on the task that reads the server's output, and the listing it
    asked for waited for an answer only that task could read: every call stalled until the
    server's timeout, and a server that kept saying so stalled for good."""
    servers = McpServers({"servers": {"lists": listing_server(tmp_path, timeout_ms=4_000)}})
    try:
        result = await run_tool(servers, "lists", "poke", tmp_path)
        assert result.status == "success" and result.content == "poked", result.content
        server = servers.running["lists"]
        await server._relisting["prompts"]
        prompts = [p["name"] for p in server.status()["prompts"]]
    finally:
        await servers.close()
    assert prompts == ["p2"]  # listed again once the notice came


async def test_secrets_in_a_servers_lists_reach_neither_the_llm_nor_mcp_status(tmp_path):
    """A server's tool schemas, tool names, prompt descriptions and resource names went to
    the LLM with every request and to `/mcp` as the server sent them, its env's token too."""
    servers = McpServers({"servers": {"lists": listing_server(tmp_path)}})
    try:
        definitions, prompt = await servers.tools("lists", cwd=str(tmp_path), notice=lambda event, data: None)
        status = servers.status()
    finally:
        await servers.close()
    sent = json.dumps([d.schema for d in definitions]) + prompt
    assert secret_free(sent, TOKEN), sent
    assert secret_free(json.dumps(status), TOKEN), status
    assert "***" in sent and "***" in json.dumps(status)


# --- providers -----------------------------------------------------------------------------

PASSWORD = "pw-DoNotShowMe-24680"


async def test_a_password_in_the_adapters_url_is_in_no_error_hint_nor_the_debug_view(monkeypatch):
    """`https://user:password@host` (basic auth in front of a self-hosted model) was shown
    whole in the 404 hint ("check the URL ..."), the HTML-page hint and the debug view, and
    a provider echoing it had it shown too."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    http = HttpClient(read_timeout=5, connect_timeout=2, retries=0)
    try:
        async with FaultServer.sequence(status(404, f"unknown user me:{PASSWORD}")) as server:
            adapter = openai_at(server.url.replace("http://", f"http://me:{PASSWORD}@"))
            iterator = HttpStreamIterator(adapter, [Message.of("user", "hi")], client=http)
            got = [event async for event in iterator]
    finally:
        await http.aclose()
    assert got[-1].kind == "HTTPStatusError" and "check the model name" in got[-1].message, got[-1].message
    assert secret_free(got[-1].message, PASSWORD), got[-1].message
    request = iterator._request
    assert request is not None
    shown = debug_text(AdapterInfo(name="openai", formatted_name="OpenAI"), details={}, history=[], request=request)
    assert secret_free(shown, PASSWORD), shown


async def test_a_password_in_an_mcp_servers_url_is_scrubbed_from_what_it_answers(tmp_path):
    """An HTTP server's URL with `user:password@`: the password (and the Basic credential
    made of it) echoed in a result or an error reached the chat and the LLM."""

    def on_call(request, message):
        echoed = f"you are me:{PASSWORD}, sent as {request.headers.get('authorization')}"
        if message["params"]["arguments"].get("fail"):
            return Reply(status=500, headers={"content-type": "text/plain"}, chunks=[echoed.encode()])
        return json_answer(message["id"], {"content": [{"type": "text", "text": echoed}]})

    local = http_mcp(on_call)
    await local.start()
    url = local.url.replace("http://", f"http://me:{PASSWORD}@") + "/mcp"
    servers = McpServers({"servers": {"web": {"url": url}}})
    try:
        answered = await run_tool(servers, "web", "t", tmp_path)
        failed = await run_tool(servers, "web", "t", tmp_path, fail=True)
    finally:
        await servers.close()
        await local.close()
    basic = base64.b64encode(f"me:{PASSWORD}".encode()).decode()
    assert answered.status == "success" and "sent as Basic ***" in answered.content, answered.content
    assert failed.status == "error" and "HTTP 500" in failed.content, failed.content
    for text in (answered.content, failed.content):
        assert secret_free(text, PASSWORD) and secret_free(text, basic), text


async def test_a_server_that_floods_its_stderr_is_reported_in_a_few_lines(tmp_path):
    """Each of the 20 stderr lines kept for the exit report could be 64 MiB: a server that
    wrote a few huge lines and exited had them all put in the error the editor shows (and
    `/mcp`, `:checkhealth`), hundreds of megabytes of it."""
    script = tmp_path / "noisy.py"
    script.write_text(
        "import sys\nfor n in range(5):\n    sys.stderr.write(str(n) + 'e' * (4 << 20) + '\\n')\nsys.exit(3)\n"
    )
    servers = McpServers({"servers": {"noisy": {"cmd": [sys.executable, str(script)], "timeout": 15_000}}})
    try:
        with pytest.raises(ConfigError) as raised:
            await servers.tools("noisy", cwd=str(tmp_path), notice=lambda event, data: None)
        status = servers.status()
    finally:
        await servers.close()
    message = str(raised.value)
    assert "exited with code 3" in message and "\n4eeee" in message, message[:300]
    assert len(message) < 50_000 and len(json.dumps(status)) < 50_000, len(message)


async def test_a_provider_echoing_the_key_in_its_reply_has_it_in_no_history_nor_next_request(monkeypatch):
    """A provider (or a relay in front of one) whose reply text carries the key: the reply
    went into the history as it came, so to the saved chat on disk and, with every later
    request, to whichever provider the chat talks to next; its tool-call arguments too."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    frames = [
        {"choices": [{"index": 0, "delta": {"content": f"your key is {KEY[:10]}"}}]},
        {"choices": [{"index": 0, "delta": {"content": f"{KEY[10:]}, keep it"}, "finish_reason": "stop"}]},
    ]
    http = HttpClient(read_timeout=5, connect_timeout=2, retries=0)
    try:
        async with FaultServer.sequence(stream(sse(*frames))) as server:
            got = [e async for e in HttpStreamIterator(openai_at(server.url), [Message.of("user", "hi")], client=http)]
    finally:
        await http.aclose()
    [final] = [event for event in got if isinstance(event, FinalEvent)]
    assert final.message.text == "your key is ***, keep it", final.message.text

    earlier = Message(
        role="assistant",
        parts=(TextPart(text=f"it was {KEY}"), ToolCall(id="c1", name="grep", arguments={"q": KEY})),
    )
    _ready, request = await build_request(openai_at("http://127.0.0.1:9"), [Message.of("user", "hi"), earlier])
    assert secret_free(request.body.decode(), KEY), request.body


# A stdio MCP server that, once initialized, sends the client 20,000 requests without reading
# a single answer.
ASKING_SERVER = textwrap.dedent(
    """
    import json, sys

    def send(message):
        sys.stdout.write(json.dumps(message) + "\\n")
        sys.stdout.flush()

    for line in sys.stdin:
        message = json.loads(line)
        if message.get("method") == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {}}
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif message.get("method") == "notifications/initialized":
            for n in range(20_000):
                send({"jsonrpc": "2.0", "id": n, "method": "sampling/createMessage", "params": {"n": n}})
    """
)


async def test_a_server_asking_without_reading_the_answers_is_answered_a_bounded_number_at_once(tmp_path):
    """Each request a server sends is answered by a task of its own; a server that never
    read the answers had its requests read on and on, one stuck task each: memory without
    bound. Past MAX_SERVING at once, reading waits, so the server waits too."""
    script = tmp_path / "asking.py"
    script.write_text(ASKING_SERVER)
    spec = {"cmd": [sys.executable, str(script)], "timeout": 15_000}
    server = McpServer("asking", spec, cwd=str(tmp_path), notice=lambda event, data: None)
    try:
        await server.ensure()
        conn = server._conn
        assert isinstance(conn, Connection)
        answering = lambda: sum(not task.done() for task in conn._tasks)  # noqa: E731
        with contextlib.suppress(AssertionError):  # never, once reading waits for a free slot
            await async_wait_until(lambda: answering() > MAX_SERVING, timeout=3)
        in_flight = answering()
    finally:
        await server.stop()
    assert in_flight <= MAX_SERVING, in_flight


async def test_an_http_server_that_never_answers_the_end_of_its_session_does_not_hold_up_closing(tmp_path):
    """Stopping an HTTP server ends its session with a DELETE, which had no time limit: a
    server that never answered it held up whatever stopped it (closing, a restart) for good."""

    async def never_answered(request):
        await asyncio.Event().wait()

    local = http_mcp(None, session="s-1", on_delete=never_answered)
    await local.start()
    servers = McpServers({"servers": {"web": {"url": f"{local.url}/mcp"}}})
    try:
        definitions, _prompt = await servers.tools("web", cwd=str(tmp_path), notice=lambda event, data: None)
        assert [d.name for d in definitions] == ["web_t"]
        await asyncio.wait_for(servers.close(), 60)  # a bound for the test, far past the DELETE's own
    finally:
        await local.close()


async def test_an_http_server_that_never_answers_the_initialized_notice_fails_to_start_in_time(tmp_path):
    """`notifications/initialized` was sent with no time limit: a server that answered
    `initialize` and then never answered that POST held the chat's turn for good."""

    async def respond(request):
        message = request.json() if request.method == "POST" else {}
        if "id" not in message:
            await asyncio.Event().wait()  # the notice (or the GET stream): never answered
        if message["method"] == "initialize":
            return json_answer(message["id"], {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}})
        return json_answer(message["id"], {"tools": []})

    local = ScriptedServer(respond)
    await local.start()
    servers = McpServers({"servers": {"web": {"url": f"{local.url}/mcp", "timeout": 2_000}}})
    try:
        with pytest.raises(ConfigError) as raised:
            await asyncio.wait_for(servers.tools("web", cwd=str(tmp_path), notice=lambda event, data: None), 60)
    finally:
        await servers.close()
        await local.close()
    assert "did not start" in str(raised.value), raised.value


# A stdio MCP server with two tools: `flat`, and `deep`, whose schema nests 800 levels.
DEEP_SCHEMA_SERVER = textwrap.dedent(
    """
    import json, sys

    deep = {"type": "string"}
    for _ in range(400):
        deep = {"type": "object", "properties": {"a": deep}}
    tools = [
        {"name": "flat", "inputSchema": {"type": "object"}},
        {"name": "deep", "inputSchema": {"type": "object", "properties": {"x": deep}}},
    ]
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("id") is None:
            continue
        if message["method"] == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}}
        else:
            result = {"tools": tools}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\\n")
        sys.stdout.flush()
    """
)


async def test_a_tool_schema_nested_past_what_a_request_can_check_is_left_out_and_said(tmp_path):
    """A schema nested 800 levels (well under the 1 MiB of tools) came through, and every
    request's check of its tools overflowed Python's stack on it: a RecursionError out of
    each turn of the chat that used the server."""
    script = tmp_path / "deep.py"
    script.write_text(DEEP_SCHEMA_SERVER)
    said = []
    servers = McpServers({"servers": {"deep": {"cmd": [sys.executable, str(script)], "timeout": 15_000}}})
    try:
        definitions, _prompt = await servers.tools("deep", cwd=str(tmp_path), notice=lambda e, d: said.append((e, d)))
    finally:
        await servers.close()
    specs = [definition.spec() for definition in definitions]  # what each request does
    assert [spec.name for spec in specs] == ["deep_flat"]
    assert [d["count"] for e, d in said if e == "MCPToolsLeftOut"] == [1]


async def test_the_password_of_a_url_in_the_environment_is_scrubbed_from_a_page(monkeypatch):
    """`DATABASE_URL=postgres://app:password@db/app` (or a proxy's URL with its password):
    only variables named like a credential were known, so a page, a file or a command's
    output holding that password took it to the LLM."""
    monkeypatch.setenv("DATABASE_URL", f"postgres://app:{PASSWORD}@db.internal:5432/app")
    monkeypatch.setenv("HTTP_PROXY_FOR_TOOLS", f"http://me:{PASSWORD}x@proxy.internal:3128")
    page = ScriptedServer(
        lambda request: Reply(
            headers={"content-type": "text/plain"},
            chunks=[f"db at postgres://app:{PASSWORD}@db; proxy me:{PASSWORD}x".encode()],
        )
    )
    await page.start()
    try:
        text = await web.page_text(f"{page.url}/config", settings=outbound.ClientSettings())
    finally:
        await page.close()
    assert text == "db at postgres://app:***@db; proxy me:***", text


async def test_keys_written_in_the_config_are_known_before_their_adapter_is_first_used():
    """A key written in the config (an adapter's `env.api_key`, an agent's env, an MCP
    server's header) was known only once a request had used it: until then a file that held
    it (the config itself, in a dotfiles project) or a page went to the LLM with it."""
    literal, agent, header = "sk-written-Literal-13579", "sk-ant-Written-24680", "mcp-written-Header-11223"
    config.load(
        {
            "adapters": {
                "http": {"mine": {"__extends": "openai", "env": {"api_key": literal}}},
                "acp": {"agent": {"__extends": "claude_code", "env": {"ANTHROPIC_API_KEY": agent}}},
            },
            "mcp": {
                "servers": {"gh": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": f"Bearer {header}"}}}
            },
        }
    )
    page = ScriptedServer(
        lambda request: Reply(
            headers={"content-type": "text/plain"}, chunks=[f"keys: {literal} {agent} {header}".encode()]
        )
    )
    await page.start()
    try:
        text = await web.page_text(f"{page.url}/init.lua", settings=outbound.ClientSettings())
    finally:
        await page.close()
    assert text == "keys: *** *** ***", text


# A stdio MCP server whose tool list never ends: each page one tool with a 2 MB description,
# and a cursor to the next; it counts the pages it was asked for in the file named by argv[1].
ENDLESS_LIST_SERVER = textwrap.dedent(
    """
    import json, pathlib, sys

    asked = 0
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("id") is None:
            continue
        if message["method"] == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}}
        else:
            asked += 1
            pathlib.Path(sys.argv[1]).write_text(str(asked))
            tool = {"name": f"t{asked}", "description": "d" * 2_000_000, "inputSchema": {"type": "object"}}
            result = {"tools": [tool], "nextCursor": str(asked)}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\\n")
        sys.stdout.flush()
    """
)


async def test_a_list_that_never_ends_is_read_to_a_bounded_size(tmp_path):
    """Pages were read while fewer than 1,000 items had come, up to 50 of them of up to
    64 MiB each, all kept: gigabytes in the engine from one server's tool list."""
    script, asked = tmp_path / "endless.py", tmp_path / "asked"
    script.write_text(ENDLESS_LIST_SERVER)
    servers = McpServers({"servers": {"endless": {"cmd": [sys.executable, str(script), str(asked)]}}})
    try:
        await servers.tools("endless", cwd=str(tmp_path), notice=lambda event, data: None)
    finally:
        await servers.close()
    assert int(asked.read_text()) <= 5, asked.read_text()  # 8 MiB of pages of 2 MB


async def test_a_hostile_models_list_is_read_to_a_bounded_size_and_shows_printable_names():
    """The models endpoint's answer (the model picker) was read whole, however large, and
    every name in it went to the editor's picker: line breaks, escapes and a million of them."""
    names = [f"m{n}" for n in range(3_000)] + ["evil\nAccept", "bell\x07", "rtl\u202eevil", "x" * 5_000]
    listed = json.dumps({"data": [{"id": name} for name in reversed(names)]}).encode()
    huge = b'{"data": [' + b",".join([b'{"id": "big-model-name"}'] * 2_500_000) + b"]}"  # 62 MB
    server = ScriptedServer.sequence(
        [Reply(headers={"content-type": "application/json"}, chunks=[listed]), Reply(chunks=[huge])]
    )
    await server.start()
    http = HttpClient(retries=0)
    try:
        first = await list_models(extend("openai_compatible", {"env": {"url": server.url}}), http)
        clear_cache()
        second = await list_models(extend("openai_compatible", {"env": {"url": server.url}}), http)
    finally:
        await http.aclose()
        await server.close()
    assert len(first) <= 1_001 and all(name.isprintable() and len(name) <= 200 for name in first), first[:5]
    assert "big-model-name" not in second  # too large to be a list: the schema's names


class Shown(list):
    """A sink that keeps the ops (`ui.sink.Sink`)."""

    def push(self, op) -> None:
        self.append(op)


async def test_a_key_a_provider_echoes_in_one_piece_is_not_drawn_in_the_chat(monkeypatch):
    """The reply is drawn as it streams: a key echoed in one frame was drawn in the chat
    (and stayed there) even though the history it went into was scrubbed."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    frame = {"choices": [{"index": 0, "delta": {"content": f"your key {KEY} is valid"}, "finish_reason": "stop"}]}
    http = HttpClient(read_timeout=5, connect_timeout=2, retries=0)
    try:
        async with FaultServer.sequence(stream(sse(frame))) as server:
            got = [e async for e in HttpStreamIterator(openai_at(server.url), [Message.of("user", "hi")], client=http)]
    finally:
        await http.aclose()
    shown = Shown()
    view = EventView(shown)
    for event in got:
        view.show(event)
    drawn = "".join(op.text for op in shown if isinstance(op, ops.Text))
    assert drawn == "your key *** is valid", drawn
