"""What the ACP tests share: a ClientHandler that records (`Recorder`) and the clients a
test starts (`Clients`), each checked at the end to have left no process behind."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from codecompanion_py.acp.client import AcpClient
from codecompanion_py.adapters.acp import AcpAdapter
from codecompanion_py.processes import group_alive
from codecompanion_py.sandbox import Launch


class Recorder:
    """A ClientHandler that records updates and answers as told."""

    def __init__(self, choose: str | None = "allow") -> None:
        self.updates: list[dict[str, Any]] = []
        self.permissions: list[dict[str, Any]] = []
        self.writes: list[dict[str, Any]] = []
        self.choose = choose
        self.files: dict[str, str] = {}

    async def session_update(self, params: dict[str, Any]) -> None:
        self.updates.append(params["update"])

    async def request_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        self.permissions.append(params)
        if self.choose is None:
            await asyncio.Event().wait()  # the user never answers
        return {"outcome": {"outcome": "selected", "optionId": self.choose}}

    async def read_text_file(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"content": self.files.get(params["path"], "")}

    async def write_text_file(self, params: dict[str, Any]) -> dict[str, Any]:
        self.writes.append(params)
        Path(params["path"]).write_text(params["content"])
        return {}

    async def changes_allowed(self) -> None:
        pass

    async def terminal_launch(self, argv: list[str], cwd: str, env: dict[str, str]) -> Launch:
        return Launch(argv, env, None, "none")  # the client's own tests: the chat's sandbox is tested apart

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u["content"]["text"] for u in self.updates if u["sessionUpdate"] == kind)


class Clients:
    """AcpClients started in `cwd`; `close_all` closes them and fails the test if one
    left its process group running (`what` names the process in that failure)."""

    def __init__(self, cwd: Path, what: str) -> None:
        self.cwd = str(cwd)
        self.what = what
        self.started: list[AcpClient] = []

    async def start(self, adapter: AcpAdapter, handler: Recorder | None = None) -> AcpClient:
        client = AcpClient(adapter, handler or Recorder(), cwd=self.cwd)
        self.started.append(client)
        await client.start()
        return client

    async def close_all(self) -> None:
        for client in self.started:
            await client.close()
            assert client.process is None or not group_alive(client.process.pgid), f"{self.what} left running"
