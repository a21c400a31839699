"""The ACP client: start an agent, talk to it, stop it.

`AcpClient` owns the agent process and the JSON-RPC connection. What the agent asks of
the editor (permissions, files, session updates) goes to a `ClientHandler`, which the
chat implements; terminals are run here. A crash, an exit or silence past a timeout
becomes an `AgentError` naming what happened (with the end of the agent's stderr), and
the process group is gone afterwards, whatever happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from .. import __version__
from ..adapters.acp import AcpAdapter
from ..errors import AgentError, ConnectionClosed, RpcError
from ..sandbox import Launch
from .agent_process import AgentProcess
from .jsonrpc import METHOD_NOT_FOUND, PROTOCOL_VERSION, Connection, params_of
from .terminals import Terminals

log = logging.getLogger("codecompanion_py.acp")

CLIENT_INFO = {"name": "codecompanion-py", "title": "CodeCompanion (Python)", "version": __version__}
CANCELLED = {"outcome": {"outcome": "cancelled"}}


class ClientHandler(Protocol):
    async def session_update(self, params: dict[str, Any]) -> None: ...
    async def request_permission(self, params: dict[str, Any]) -> dict[str, Any]: ...
    async def read_text_file(self, params: dict[str, Any]) -> dict[str, Any]: ...
    async def write_text_file(self, params: dict[str, Any]) -> dict[str, Any]: ...
    async def changes_allowed(self) -> None:
        """Returns once the agent may change files (the turn's checkpoint is taken)."""
        ...

    async def terminal_launch(self, argv: list[str], cwd: str, env: dict[str, str]) -> Launch:
        """How a terminal's command starts: sandboxed, or unconfined once the user said so."""
        ...


class AcpClient:
    def __init__(self, adapter: AcpAdapter, handler: ClientHandler, *, cwd: str, yolo: bool = False) -> None:
        self.adapter = adapter
        self.handler = handler
        self.cwd = cwd
        self.yolo = yolo
        self.terminals = Terminals(cwd, handler.terminal_launch)
        self.process: AgentProcess | None = None
        self.connection: Connection | None = None
        self.capabilities: dict[str, Any] = {}
        self.agent_info: dict[str, Any] = {}
        self.auth_methods: list[Any] = []
        self._permissions: set[asyncio.Future[Any]] = set()
        self._asking = asyncio.Lock()  # one permission question open in the editor at a time
        self.in_turn = False  # a prompt (or a session load) is running: its updates belong to it
        self.mcp_servers: list[dict[str, Any]] = []  # the editor's MCP servers, passed to each session

    # --- lifecycle --------------------------------------------------------------------

    async def start(self) -> dict[str, Any]:
        """Start the agent, `initialize` it and authenticate where the adapter says how."""
        env = await self.adapter.environment()
        self.process = await AgentProcess.start(
            self.adapter.formatted_name,
            self.adapter.command(self.yolo),
            cwd=self.cwd,
            env=env,
            install_hint=self.adapter.install,
        )
        self.connection = Connection(
            self.process.stdout,
            self.process.stdin,
            on_request=self._on_request,
            on_notification=self._on_notification,
            name=self.adapter.formatted_name,
        )
        self.connection.start()
        try:
            result = await self._call(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True},
                    "clientInfo": CLIENT_INFO,
                },
                timeout=self.adapter.timeout,
            )
            result = result if isinstance(result, dict) else {}
            self.capabilities = result.get("agentCapabilities") or {}
            self.agent_info = result.get("agentInfo") or {}
            self.auth_methods = result.get("authMethods") or []
            version = result.get("protocolVersion")
            if isinstance(version, int) and version != PROTOCOL_VERSION:
                log.warning(
                    "%s speaks ACP version %s; this client speaks %d", self.adapter.name, version, PROTOCOL_VERSION
                )
            method = self.adapter.auth_method(self.auth_methods, env)
            if method:
                await self._call("authenticate", {"methodId": method}, timeout=self.adapter.timeout)
            return result
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        self._cancel_permissions()
        await self.terminals.close()
        if self.connection is not None:
            await self.connection.close()
        if self.process is not None:
            await self.process.stop()

    def kill_now(self) -> None:
        self.terminals.kill_now()
        if self.process is not None:
            self.process.kill_now()

    @property
    def alive(self) -> bool:
        return (
            self.process is not None
            and self.process.returncode is None
            and self.connection is not None
            and not self.connection.closed
        )

    # --- sessions ---------------------------------------------------------------------

    def supports(self, *path: str) -> bool:
        """Whether the agent advertised a capability (`supports("loadSession")`,
        `supports("sessionCapabilities", "list")`); present and not false means yes."""
        value: Any = self.capabilities
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        return value is not None and value is not False

    async def new_session(self) -> dict[str, Any]:
        result = await self._call(
            "session/new", {"cwd": self.cwd, "mcpServers": self._mcp_servers()}, timeout=self.adapter.timeout
        )
        if not isinstance(result, dict) or not isinstance(result.get("sessionId"), str):
            raise AgentError(f"{self.adapter.formatted_name} answered session/new without a session id")
        return result

    async def load_session(self, session_id: str) -> dict[str, Any]:
        if not self.supports("loadSession"):
            raise AgentError(f"{self.adapter.formatted_name} cannot load earlier sessions")
        result = await self._turn(
            "session/load",
            {"sessionId": session_id, "cwd": self.cwd, "mcpServers": self._mcp_servers()},
            idle=self.adapter.timeout,
        )
        return result if isinstance(result, dict) else {}

    async def list_sessions(self) -> list[dict[str, Any]]:
        if not self.supports("sessionCapabilities", "list"):
            raise AgentError(f"{self.adapter.formatted_name} does not list its sessions")
        result = await self._call("session/list", {"cwd": self.cwd}, timeout=self.adapter.timeout)
        sessions = result.get("sessions") if isinstance(result, dict) else None
        return [s for s in sessions or [] if isinstance(s, dict) and isinstance(s.get("sessionId"), str)]

    async def prompt(self, session_id: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
        """One turn. Waits as long as the agent keeps talking (or waits on the user), and
        gives up after `prompt_timeout` seconds of silence."""
        result = await self._turn(
            "session/prompt", {"sessionId": session_id, "prompt": blocks}, idle=self.adapter.prompt_timeout
        )
        return result if isinstance(result, dict) else {}

    async def _turn(self, method: str, params: dict[str, Any], *, idle: float) -> Any:
        """A request whose updates belong to it: `in_turn` is true from the request until the
        moment its answer is read, so updates the agent sends later can be told apart."""

        def answered() -> None:
            self.in_turn = False

        self.in_turn = True
        try:
            return await self._call(method, params, idle=idle, on_answer=answered)
        finally:
            self.in_turn = False

    async def cancel(self, session_id: str) -> None:
        """Ask the agent to stop the turn; pending permission questions are answered
        `cancelled`, as the protocol requires."""
        self._cancel_permissions()
        if self.connection is not None:
            try:
                await self.connection.notify("session/cancel", {"sessionId": session_id})
            except ConnectionClosed:
                pass

    async def set_mode(self, session_id: str, mode_id: str) -> None:
        await self._call("session/set_mode", {"sessionId": session_id, "modeId": mode_id}, timeout=self.adapter.timeout)

    async def set_config_option(self, session_id: str, config_id: str, value: Any) -> dict[str, Any]:
        result = await self._call(
            "session/set_config_option",
            {"sessionId": session_id, "configId": config_id, "value": value},
            timeout=self.adapter.timeout,
        )
        return result if isinstance(result, dict) else {}

    def _mcp_servers(self) -> list[Any]:
        """The adapter's own `defaults.mcpServers`, then the editor's (mcp.servers) not named there."""
        servers = self.adapter.defaults.get("mcpServers")
        own = list(servers) if isinstance(servers, list) else []
        named = {s.get("name") for s in own if isinstance(s, dict)}
        return own + [s for s in self.mcp_servers if s.get("name") not in named]

    # --- calls and their failures -----------------------------------------------------

    async def _call(
        self,
        method: str,
        params: dict[str, Any],
        *,
        timeout: float | None = None,
        idle: float | None = None,
        on_answer: Callable[[], None] | None = None,
    ) -> Any:
        """A request that fails with an AgentError when the agent errs, exits, takes longer
        than `timeout`, or is silent for `idle` seconds (not counting time the editor
        spends answering the agent, such as an approval the user is reading)."""
        if self.connection is None or self.process is None:
            raise AgentError(f"{self.adapter.formatted_name} is not running")
        name = self.adapter.formatted_name
        loop = asyncio.get_running_loop()
        started = loop.time()
        request = asyncio.ensure_future(self.connection.request(method, params, on_answer=on_answer))
        try:
            while True:
                done, _ = await asyncio.wait([request], timeout=0.2)
                if done:
                    return request.result()
                now = loop.time()
                if self.process.returncode is not None:
                    await asyncio.wait([request], timeout=0.5)  # the last lines may still be in the pipe
                    if request.done():
                        return request.result()
                    raise ConnectionClosed("exited")
                if timeout is not None and now - started > timeout:
                    raise AgentError(f"{name} did not answer {method} within {timeout:g} s")
                quiet = now - max(started, self.connection.last_activity)
                if idle is not None and self.connection.serving == 0 and quiet > idle:
                    raise AgentError(f"{name} said nothing for {idle:g} s during {method}; it seems to hang")
        except ConnectionClosed:
            with contextlib.suppress(asyncio.TimeoutError):  # its exit status, for the message
                await asyncio.wait_for(asyncio.shield(self.process.proc.wait()), timeout=1.0)
            raise AgentError(self.process.describe_exit()) from None
        except RpcError as error:
            raise AgentError(f"{name}: {method} failed: {error.message} (code {error.code})", code=error.code) from None
        finally:
            if not request.done():
                request.cancel()

    # --- the agent's requests ---------------------------------------------------------

    async def _on_notification(self, method: str, params: Any) -> None:
        if method == "session/update":
            await self.handler.session_update(params_of(params))
        else:
            log.debug("%s: ignored notification %s", self.adapter.name, method)

    async def _on_request(self, method: str, params: Any) -> Any:
        args = params_of(params)
        if method in ("session/request_permission", "fs/write_text_file", "terminal/create"):
            await self.handler.changes_allowed()  # what may change a file waits for the checkpoint
        if method == "session/request_permission":
            return await self._permission(args)
        if method == "fs/read_text_file":
            return await self.handler.read_text_file(args)
        if method == "fs/write_text_file":
            return await self.handler.write_text_file(args)
        if method.startswith("terminal/"):
            return await self._terminal(method, args)
        raise RpcError(METHOD_NOT_FOUND, f"method not found: {method}")

    async def _permission(self, params: dict[str, Any]) -> dict[str, Any]:
        """The user's answer, one question at a time: an agent sending many at once would
        stack as many prompts in the editor, which a stop could not take back; waiting here,
        a stop answers them `cancelled`."""
        question = asyncio.ensure_future(self._asked_alone(params))
        self._permissions.add(question)
        try:
            await asyncio.wait([question])
        finally:
            self._permissions.discard(question)
        if question.cancelled():
            return CANCELLED
        return question.result()

    async def _asked_alone(self, params: dict[str, Any]) -> dict[str, Any]:
        async with self._asking:
            return await self.handler.request_permission(params)

    def _cancel_permissions(self) -> None:
        for question in list(self._permissions):
            question.cancel()

    async def _terminal(self, method: str, params: dict[str, Any]) -> Any:
        if method == "terminal/create":
            terminal = await self.terminals.create(params)
            return {"terminalId": terminal.id}
        terminal = self.terminals.get(params)
        if method == "terminal/output":
            result: dict[str, Any] = {"output": terminal.text(), "truncated": terminal.truncated}
            status = terminal.exit_status()
            if status is not None:
                result["exitStatus"] = status
            return result
        if method == "terminal/wait_for_exit":
            return await self.terminals.wait(terminal)
        if method == "terminal/kill":
            await self.terminals.kill(terminal)
            return {}
        if method == "terminal/release":
            await self.terminals.release(terminal)
            return {}
        raise RpcError(METHOD_NOT_FOUND, f"method not found: {method}")
