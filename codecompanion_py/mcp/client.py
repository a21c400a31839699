"""One MCP server (protocol 2025-11-25): started when a chat first needs it, over stdio (its
own process group, killed when it stops) or streamable HTTP (http.py); initialized with
capability negotiation; its tools listed page by page and listed again when it says they
changed; a call that outlives `timeout` is cancelled (`notifications/cancelled`). A server
that exits is reported with the reason and its last stderr lines, and starts again with the
next call. Roots are offered only when the config gives them (as CodeCompanion).

What the server sends comes in through `door.py`: each message capped (a longer one fails
the call it answers), its configured header and env values scrubbed from whatever of it is
shown or sent on, its instructions and lists bounded, and its progress shown only for the
calls in flight here, one line per call updated at most every 100 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import msgspec

from .. import __version__
from ..acp.agent_process import AgentProcess
from ..acp.jsonrpc import METHOD_NOT_FOUND, Connection
from ..adapters.base import DEFAULT_CMD_TIMEOUT, resolve_env_string
from ..adapters.lua import LuaFunction
from ..errors import CodeCompanionError, ConfigError, ConnectionClosed, RpcError
from ..messages import nests_within
from ..outbound import ClientSettings
from ..processes import safe_env
from ..scrubber import KNOWN, clip, credential_values, scrub_secrets, secrets_in, url_credentials
from .door import (
    MAX_INSTRUCTIONS,
    MAX_LIST_BYTES,
    MAX_MESSAGE_BYTES,
    MAX_SCHEMA_DEPTH,
    MAX_SHOWN,
    MAX_TOOLS,
    MAX_TOOLS_BYTES,
    CappedLines,
    result_capped,
    shown,
    tool_names,
)
from .http import HttpConnection

log = logging.getLogger("codecompanion_py.mcp")

PROTOCOL_VERSION = "2025-11-25"
DEFAULT_TIMEOUT = 30.0  # seconds, CodeCompanion's mcp.opts.timeout (30e3 ms)
_MAX_PAGES = 50
PROGRESS_EVERY = 0.1  # seconds: at most one progress update of a call is shown in this time
MAX_READ = 1_000_000  # bytes of a prompt's or a resource's text put in the chat


@dataclass
class _Call:
    """A tool call in flight, known by the progressToken it was given."""

    shown_at: float = -1.0  # when its progress was last shown (loop time); -1: never
    last: Mapping[str, Any] | None = None  # its last progress notification


Notice = Callable[[str, Mapping[str, Any]], None]


class McpProcess(AgentProcess):
    """A stdio server's process: AgentProcess's start, stderr tail and group kill."""


class McpServer:
    def __init__(
        self,
        name: str,
        spec: Mapping[str, Any],
        *,
        cwd: str,
        notice: Notice,
        editor: Any = None,
        cmd_timeout: float = DEFAULT_CMD_TIMEOUT,
        http: ClientSettings | None = None,
    ) -> None:
        self.name = name
        self.cmd_timeout = cmd_timeout  # seconds a `cmd:` value may take (adapters.opts.cmd_timeout)
        self.http = http or ClientSettings()  # over HTTP: the config's proxy and TLS check
        self.spec = spec
        self.cwd = cwd
        self.notice = notice  # (event, data): ready, closed, tools changed, progress
        self.editor = editor  # for Lua functions in env, headers and roots
        self.timeout = float(spec.get("timeout", DEFAULT_TIMEOUT * 1000)) / 1000
        self.tools: list[dict[str, Any]] = []
        self.prompts: list[dict[str, Any]] = []  # [{name, description, arguments}]
        self.resources: list[dict[str, Any]] = []  # [{uri, name, mimeType}]
        self.instructions = ""
        self.capabilities: dict[str, Any] = {}
        self._process: McpProcess | None = None
        self._conn: Connection | HttpConnection | None = None
        self._starting: asyncio.Task[None] | None = None
        self._tools_changed = False
        self._stale: set[str] = set()  # "prompts", "resources": the server said they changed
        self._relisting: dict[str, asyncio.Task[None]] = {}
        self._progress = 0
        self._calls: dict[str, _Call] = {}  # by progressToken
        self.left_out = 0  # tools past MAX_TOOLS_BYTES
        self.secrets: list[str] = []  # the configured header and env values: never shown
        self.last_exit: str | None = None

    @property
    def alive(self) -> bool:
        if self._conn is None or self._conn.closed:
            return False
        return self._process is None or self._process.returncode is None

    async def ensure(self) -> None:
        """Started and initialized (once, however many chats ask at the same time)."""
        if self.alive:
            if self._tools_changed:
                await self._list_tools()
                self._tools_loaded()
            return
        if self._starting is None or self._starting.done():
            self._starting = asyncio.get_running_loop().create_task(self._start())
        await asyncio.shield(self._starting)

    async def _start(self) -> None:
        await self.stop()
        self.notice("MCPServerStart", {"server": self.name})
        if self.spec.get("url"):
            headers = {k: str(await self.value(k, v)) for k, v in (self.spec.get("headers") or {}).items()}
            in_url = url_credentials(str(self.spec["url"]))
            self.secrets = secrets_in(headers, in_url)
            KNOWN.remember_headers(headers)
            KNOWN.remember(in_url)
            self._conn = HttpConnection(
                str(self.spec["url"]),
                headers,
                on_request=self._on_request,
                on_notification=self._on_notification,
                name=self.name,
                settings=self.http,
            )
        else:
            argv = [str(part) for part in self.spec.get("cmd") or ()]
            if not argv:
                raise ConfigError(f"MCP server {self.name}: give it `cmd` (a command) or `url`")
            env = {**safe_env(os.environ)}
            configured: dict[str, str] = {}
            for key, value in (self.spec.get("env") or {}).items():
                resolved = await self.value(key, value)
                if resolved is not None:
                    env[str(key)] = configured[str(key)] = str(resolved)
            self.secrets = secrets_in({}, credential_values(configured))
            KNOWN.remember_environment(configured)
            self._process = await McpProcess.start(f"MCP server {self.name}", argv, cwd=self.cwd, env=env)
            lines = CappedLines(self._process.stdout, MAX_MESSAGE_BYTES, self.name)
            conn = Connection(
                cast(asyncio.StreamReader, lines),  # Connection only calls readline()
                self._process.stdin,
                on_request=self._on_request,
                on_notification=self._on_notification,
                name=f"MCP server {self.name}",
            )
            conn.start()
            self._conn = conn
        capabilities: dict[str, Any] = {}
        if self.spec.get("roots") is not None:
            capabilities["roots"] = {"listChanged": False}
        try:
            result = await asyncio.wait_for(self._initialize(self._conn, capabilities), self.timeout)
        except (asyncio.TimeoutError, ConnectionClosed, RpcError) as error:
            if isinstance(error, ConnectionClosed):
                await self._reaped()  # its exit code and last words say why
            why = self._exit_reason() or str(error) or "no answer in time"
            await self.stop()
            raise ConfigError(self.clean(f"MCP server {self.name} did not start: {why}")) from None
        self.capabilities = dict(result.get("capabilities") or {})
        self.instructions = clip(str(result.get("instructions") or ""), MAX_INSTRUCTIONS, self.secrets)
        if isinstance(self._conn, HttpConnection):
            self._conn.listen()
        await self._list_tools()
        self.prompts = (await self._list("prompts"))[:MAX_TOOLS] if "prompts" in self.capabilities else []
        self.resources = (await self._list("resources"))[:MAX_TOOLS] if "resources" in self.capabilities else []
        self.notice("MCPServerReady", {"server": self.name})
        self._tools_loaded()

    async def _initialize(self, conn: Connection | HttpConnection, capabilities: dict[str, Any]) -> Mapping[str, Any]:
        """The handshake (`initialize`, then `notifications/initialized`): the server's answer."""
        info = {"name": "codecompanion-py", "version": __version__}
        params = {"protocolVersion": PROTOCOL_VERSION, "capabilities": capabilities, "clientInfo": info}
        result = await conn.request("initialize", params)
        result = result if isinstance(result, Mapping) else {}
        if isinstance(conn, HttpConnection):
            conn.protocol_version = str(result.get("protocolVersion") or PROTOCOL_VERSION)
        await conn.notify("notifications/initialized")
        return result

    async def _list_tools(self) -> None:
        self._tools_changed = False
        listed = await self._list("tools") if "tools" in self.capabilities else []
        self.tools, size = [], 0  # what goes with every request is bounded: MAX_TOOLS_BYTES
        for tool in listed:
            if not nests_within(tool.get("inputSchema"), MAX_SCHEMA_DEPTH):
                continue  # left out too
            size += len(msgspec.json.encode(tool))
            if size > MAX_TOOLS_BYTES or len(self.tools) == MAX_TOOLS:
                break
            self.tools.append(tool)
        self.left_out = len(listed) - len(self.tools)

    def _tools_loaded(self) -> None:
        """CodeCompanion's event once the server's tools are listed (after it is ready), with
        the names the LLM calls them by."""
        names = tool_names(self.name, [str(t["name"]) for t in self.tools]).values()
        self.notice("MCPServerToolsLoaded", {"server": self.name, "tools": list(names)})

    async def _list(self, kind: str) -> list[dict[str, Any]]:
        """`<kind>/list`, page after page (none asked for past MAX_TOOLS items or
        MAX_LIST_BYTES of them)."""
        found: list[dict[str, Any]] = []
        cursor = None
        size = 0
        for _ in range(_MAX_PAGES):
            page = await self.request(f"{kind}/list", {"cursor": cursor} if cursor else None)
            text = msgspec.json.encode(page).decode()
            size += len(text)
            page = self._cleaned(page, text)
            page = page if isinstance(page, Mapping) else {}
            found.extend(dict(item) for item in page.get(kind) or () if isinstance(item, Mapping))
            cursor = page.get("nextCursor")
            if not cursor or len(found) >= MAX_TOOLS or size > MAX_LIST_BYTES:
                break
        key = "uri" if kind == "resources" else "name"
        return [item for item in found if item.get(key) and isinstance(item[key], str)]

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> str:
        """A prompt's messages as text for the chat (`prompts/get`)."""
        await self.ensure()
        result = await self.request("prompts/get", {"name": name, "arguments": dict(arguments)})
        texts = []
        for message in (result or {}).get("messages") or ():
            content = message.get("content") if isinstance(message, Mapping) else None
            if isinstance(content, Mapping) and content.get("type") == "text":
                texts.append(str(content.get("text", "")))
            elif isinstance(content, Mapping) and content.get("type") == "resource":
                resource = content.get("resource")
                if isinstance(resource, Mapping):
                    texts.append(str(resource.get("text", f"[resource {resource.get('uri')}]")))
        return self.read_text("\n\n".join(texts))

    async def read_resource(self, uri: str) -> str:
        """A resource's text (`resources/read`); binary parts are described."""
        await self.ensure()
        result = await self.request("resources/read", {"uri": uri})
        parts = []
        for item in (result or {}).get("contents") or ():
            if isinstance(item, Mapping):
                if "text" in item:
                    parts.append(str(item["text"]))
                else:
                    parts.append(f"[{item.get('mimeType', 'binary')} content of {item.get('uri', uri)}]")
        return self.read_text("\n\n".join(parts))

    def clean(self, text: str) -> str:
        """`text` from or about the server without the values of its configured headers
        and env (a server's errors and logs may echo them)."""
        return scrub_secrets(text, self.secrets)

    def _cleaned(self, value: Any, text: str) -> Any:
        """`value` (JSON the server sent, `text` as JSON) with its secrets scrubbed from every
        string of it: names, descriptions and schemas go to the LLM, the chat and `/mcp`."""
        cleaned = self.clean(text)
        if cleaned == text:
            return value
        try:
            return msgspec.json.decode(cleaned)
        except msgspec.DecodeError:  # a secret that held JSON's quoting: nothing of it is kept
            return None

    def read_text(self, text: str) -> str:
        """A prompt's or resource's text for the chat: scrubbed, then capped."""
        return result_capped(self.clean(text), MAX_READ)

    def status(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "transport": "http" if self.spec.get("url") else "stdio",
            "running": self.alive,
            "tools": [shown(t["name"]) for t in self.tools],
            "prompts": [
                {
                    "name": p["name"],
                    "description": shown(p.get("description") or ""),
                    "arguments": [
                        {"name": shown(a.get("name")), "required": bool(a.get("required"))}
                        for a in p.get("arguments") or ()
                        if isinstance(a, Mapping) and a.get("name")
                    ],
                }
                for p in self.prompts
                if shown(p["name"]) == p["name"]  # a name the editor can show and send back as it is
            ],
            "resources": [
                {"uri": r["uri"], "name": shown(r.get("name") or r["uri"])}
                for r in self.resources
                if len(r["uri"]) <= 4 * MAX_SHOWN
            ],
            "last_exit": self.clean(self.last_exit) if self.last_exit else None,
        }

    async def request(self, method: str, params: Any = None, timeout: float | None = None) -> Any:
        """`method`, answered within `timeout`; a request given up on (the time ran out, or
        the user stopped the turn) is cancelled at the server too."""
        conn = self._conn
        if conn is None:
            raise ConfigError(f"MCP server {self.name} is not running")
        limit = timeout or self.timeout
        request_id = conn.new_id()
        try:
            return await asyncio.wait_for(conn.request(method, params, request_id=request_id), limit)
        except ConnectionClosed as error:
            await self._reaped()
            raise ConfigError(
                self.clean(f"{self._exit_reason() or error}; it starts again with the next call")
            ) from None
        except RpcError as error:  # the server's own words may echo what it was given
            raise RpcError(error.code, self.clean(error.message)) from None
        except asyncio.TimeoutError:
            await self._cancel(conn, request_id, f"no answer within {limit:g} s")
            raise ConfigError(f"MCP server {self.name} did not answer {method} within {limit:g} s") from None
        except asyncio.CancelledError:
            await self._cancel(conn, request_id, "the user stopped it")
            raise

    async def _cancel(self, conn: Connection | HttpConnection, request_id: int, reason: str) -> None:
        with contextlib.suppress(Exception):
            message = {"requestId": request_id, "reason": reason}
            await asyncio.wait_for(conn.notify("notifications/cancelled", message), 2.0)

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        await self.ensure()
        self._progress += 1  # the progress notifications of this call name its token
        token = f"{self.name}-{self._progress}"
        params = {"name": name, "arguments": dict(arguments), "_meta": {"progressToken": token}}
        call = self._calls[token] = _Call()
        ended = "failed"
        try:
            result = await self.request("tools/call", params)
            ended = "completed"
        finally:
            del self._calls[token]
            if call.last is not None:  # its progress line, updated a last time
                self._show_progress(token, call.last, ended)
        return dict(result) if isinstance(result, Mapping) else {}

    async def stop(self) -> None:
        for task in self._relisting.values():
            task.cancel()
        self._relisting.clear()
        conn, self._conn = self._conn, None
        process, self._process = self._process, None
        if conn is not None:
            await conn.close()
        if process is not None:
            await process.stop()
            self.notice("MCPServerClosed", {"server": self.name})

    def kill_now(self) -> None:
        if self._process is not None:
            self._process.kill_now()

    async def _reaped(self) -> None:
        """A stdio server that closed its output: its exit code and last stderr lines, once
        it is gone (a moment at most)."""
        if self._process is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._process.proc.wait()), 1.0)
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._process._stderr), 0.5)

    def _exit_reason(self) -> str | None:
        if self._process is not None and self._process.returncode is not None:
            self.last_exit = self._process.describe_exit()
            return self.last_exit
        return None

    async def value(self, key: str, value: Any) -> Any:
        if isinstance(value, LuaFunction):
            return await value.call_async(self.editor)
        if isinstance(value, str):
            return await resolve_env_string(f"MCP server {self.name}", key, value, self.cmd_timeout)
        return value

    # --- what the server asks and tells ------------------------------------------------------

    async def _on_request(self, method: str, params: Any) -> Any:
        if method == "ping":
            return {}
        if method == "roots/list" and self.spec.get("roots") is not None:
            roots = await self.value("roots", self.spec["roots"])
            return {"roots": list(roots or [])}
        raise RpcError(METHOD_NOT_FOUND, f"codecompanion-py does not offer {method}")

    async def _on_notification(self, method: str, params: Any) -> None:
        if method == "notifications/tools/list_changed":
            self._tools_changed = True
        elif method in ("notifications/prompts/list_changed", "notifications/resources/list_changed"):
            self._relist(method.split("/")[1])
        elif method == "notifications/progress" and isinstance(params, Mapping):
            self._progressed(params)
        elif method == "notifications/message" and isinstance(params, Mapping) and log.isEnabledFor(logging.INFO):
            log.info("MCP server %s: %s", self.name, shown(self.clean(str(params.get("data"))), 2000))

    def _relist(self, kind: str) -> None:
        """List `kind` again, off the task that reads the server's messages (the answer comes
        through it): one listing at a time, and one more for all the notices during it."""
        self._stale.add(kind)
        task = self._relisting.get(kind)
        if task is None or task.done():
            self._relisting[kind] = asyncio.get_running_loop().create_task(self._read_again(kind))

    async def _read_again(self, kind: str) -> None:
        while kind in self._stale:
            self._stale.discard(kind)
            try:
                setattr(self, kind, (await self._list(kind))[:MAX_TOOLS])
            except CodeCompanionError as error:
                log.info("MCP server %s: %s were not listed again: %s", self.name, kind, error)
                return

    def _progressed(self, params: Mapping[str, Any]) -> None:
        """Progress of a call in flight, by the token this client gave it; at most one
        update shown per PROGRESS_EVERY, each replacing the last."""
        token = params.get("progressToken")
        call = self._calls.get(token) if isinstance(token, str) else None
        if call is None or not isinstance(token, str):
            return  # a token this client never gave, or of a call that is over
        call.last = params
        now = asyncio.get_running_loop().time()
        if call.shown_at >= 0 and now - call.shown_at < PROGRESS_EVERY:
            return
        call.shown_at = now
        self._show_progress(token, params, "in_progress")

    def _show_progress(self, token: str, params: Mapping[str, Any], status: str) -> None:
        done, total = params.get("progress"), params.get("total")
        amount = f"{shown(done, 20)}/{shown(total, 20)}" if total is not None else shown(done, 20)
        message = f": {shown(self.clean(str(params['message'])))}" if params.get("message") else ""
        self.notice("MCPProgress", {"server": self.name, "token": token, "text": amount + message, "status": status})
