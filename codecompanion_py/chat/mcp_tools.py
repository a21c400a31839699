"""The MCP servers one HTTP chat uses and the tools they lend it: named by `@{mcp:name}`,
`mcp.opts.default_servers` or `/mcp start`, loaded (and their lists refreshed) when a turn
starts. An agent's chat gets the editor's servers another way (its session's `mcpServers`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from ..editor_port import Editor
from ..errors import CodeCompanionError
from ..events import NoticeEvent, ToolProgress, ToolProgressEvent
from ..mcp.servers import PREFIX, McpServers
from ..tools.registry import CATALOG
from ..ui.view import EventView

_MENTION = re.compile(r"@\{mcp:([\w.-]+)\}")


class ChatMcpTools:
    def __init__(self, servers: McpServers | None, view: EventView, chat_id: Any) -> None:
        self._servers = servers
        self._view = view
        self._chat_id = chat_id
        self.names: list[str] = list(servers.default_servers) if servers else []
        self._owner: dict[str, str] = {}  # tool name -> the MCP server it came from
        self._said: set[str] = set()  # what MCP servers' tools needed said, said once

    def attach(self, name: str) -> None:
        if name not in self.names:
            self.names.append(name)

    def detach(self, name: str) -> None:
        if name in self.names:
            self.names.remove(name)

    def mentions(self, text: str) -> str:
        """`@{mcp:name}`: that server's tools join the chat (loaded when the turn starts)."""

        def mention(match: re.Match[str]) -> str:
            name = match.group(1)
            if self._servers is None or name not in self._servers.specs:
                return match.group(0)
            self.attach(name)
            return f"`{PREFIX}{name}`"

        return _MENTION.sub(mention, text)

    async def load(
        self,
        tools: MutableMapping[str, Any],
        *,
        configured: set[str],
        cwd: str,
        editor: Editor | None,
        add_prompt: Callable[[str, Any], None],
    ) -> None:
        """Put the servers' tools into the chat's `tools`, starting the servers if need be and
        listing their tools afresh when a server said they changed. Built-in tools, the
        `configured` ones and other servers' tools keep their names."""
        if self._servers is None:
            return
        for name in list(self.names):
            taken = {*CATALOG, *configured, *(n for n in tools if self._owner.get(n) != name)}
            try:
                definitions, prompt = await self._servers.tools(
                    name, cwd=cwd, notice=self._notice, editor=editor, taken=taken
                )
            except CodeCompanionError:
                self.names.remove(name)  # said once; mention it again to retry
                raise
            listed = {d.name for d in definitions}
            for old in [n for n, owner in self._owner.items() if owner == name and n not in listed]:
                del self._owner[old]
                tools.pop(old, None)
            for definition in definitions:
                self._owner[definition.name] = name
                if definition.name not in tools:
                    for event in ("ChatToolAdded", "ToolAdded"):
                        self._view.fire(event, {"id": self._chat_id, "tool": definition.name})
                tools[definition.name] = definition
            add_prompt(f"{PREFIX}{name}", prompt)

    def _notice(self, event: str, data: Mapping[str, Any]) -> None:
        if event == "MCPProgress":  # one line per call, updated in place
            status: ToolProgress = data["status"] if data.get("status") in ("completed", "failed") else "in_progress"
            title = f"MCP {data.get('server')} {data.get('text')}"
            self._view.show(ToolProgressEvent(id=f"mcp-progress:{data.get('token')}", title=title, status=status))
        elif event in ("MCPToolRenamed", "MCPToolsLeftOut"):
            if data["text"] not in self._said:  # once a chat
                self._said.add(data["text"])
                self._view.show(NoticeEvent(title="**MCP**", text=data["text"]))
                self._view.fire(event, dict(data))
        else:
            self._view.fire(event, dict(data))
