"""MCP servers for the editor: `/mcp` (start, stop, restart a server for a chat) and the
requests for its pickers (status, prompts, resources)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from . import calls
from .chat.factory import workspace_of
from .chat.protocol import Session
from .mcp.client import McpServer
from .mcp.servers import McpServers
from .ui import ops
from .ui.sink import Channel
from .words import count


class McpCalls:
    def __init__(self, *, channel: Channel, servers: Callable[[], McpServers], chats: Mapping[Any, Session]) -> None:
        self._channel = channel
        self._servers = servers  # the engine's: a config change replaces them
        self._chats = chats

    def _server(self, name: str, cwd: str | None) -> McpServer:
        return self._servers().server(name, cwd=str(workspace_of(cwd).root), notice=self._said)

    def _said(self, event: str, data: Mapping[str, Any]) -> None:
        """A server's events when no chat asked for it (/mcp): as User autocmds of no chat."""
        if event != "MCPProgress":
            self._channel.render(None, [ops.fire(event, data)])

    async def control(self, call: calls.McpControl) -> None:
        """`/mcp`: start (its tools join the chat), stop or restart a server."""
        name, action = call.server, call.action
        session = self._chats.get(call.chat_id)
        server = self._server(name, call.cwd)
        if action in ("stop", "restart"):
            await server.stop()
            if session is not None:
                session.detach_mcp(name)
        if action in ("start", "restart"):
            await server.ensure()
            if session is not None:
                session.attach_mcp(name)  # its tools load with the next message
            self._channel.notify(f"CodeCompanion: MCP server {name} runs: {count(len(server.tools), 'tool')}", "INFO")
        elif action == "stop":
            self._channel.notify(f"CodeCompanion: MCP server {name} stopped", "INFO")

    async def status(self, call: calls.McpServerCall) -> Any:
        return self._servers().status()

    async def prompt(self, call: calls.McpPrompt) -> Any:
        given = {str(k): str(v) for k, v in call.arguments.items()}
        return await self._server(call.server, call.cwd).get_prompt(call.name, given)

    async def resource(self, call: calls.McpResource) -> Any:
        return await self._server(call.server, call.cwd).read_resource(call.uri)

    async def resources(self, call: calls.McpServerCall) -> Any:
        server = self._server(call.server, call.cwd)
        await server.ensure()
        return server.status()["resources"]
