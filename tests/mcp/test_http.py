"""The streamable HTTP transport against a local server speaking it: the session id carried
after initialization, and the server's own stream (GET) opened again after it drops, with
the id of the last event it got, so a notification sent on it is read."""

from __future__ import annotations

import asyncio
import json

from codecompanion_py.demo.server import Reply, ScriptedServer
from codecompanion_py.mcp.client import McpServer


def json_answer(message_id, result, **headers) -> Reply:
    body = json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}).encode()
    return Reply(headers={"content-type": "application/json", **headers}, chunks=[body])


async def test_the_session_id_goes_along_and_the_servers_stream_resumes():
    gets = []

    def respond(request):
        if request.method == "GET":
            gets.append(dict(request.headers))
            if len(gets) == 1:  # one event, then the stream drops
                event = b'id: 7\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n'
                return Reply(headers={"content-type": "text/event-stream"}, chunks=[event])
            return Reply(status=405)
        message = request.json()
        if "id" not in message:
            return Reply(status=202)
        if message["method"] == "initialize":
            capabilities = {"tools": {"listChanged": True}}
            return json_answer(
                message["id"],
                {"protocolVersion": "2025-11-25", "capabilities": capabilities},
                **{"mcp-session-id": "session-1"},
            )
        assert request.headers.get("mcp-session-id") == "session-1"
        assert request.headers.get("mcp-protocol-version") == "2025-11-25"
        return json_answer(message["id"], {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]})

    local = ScriptedServer(respond)
    await local.start()
    server = McpServer("web", {"url": f"{local.url}/mcp"}, cwd=".", notice=lambda event, data: None)
    try:
        await server.ensure()
        for _ in range(100):
            if len(gets) >= 2:
                break
            await asyncio.sleep(0.05)
        assert gets[0].get("mcp-session-id") == "session-1" and "last-event-id" not in gets[0]
        assert gets[1].get("last-event-id") == "7"  # resumed where it stopped
        assert server._tools_changed  # the notification of the dropped stream was read
    finally:
        await server.stop()
        await local.close()
