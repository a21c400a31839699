"""The configured MCP servers (CodeCompanion's `mcp` table) and their tools as the chat's.

    mcp = { servers = { name = { cmd = {...}, env = {...}, roots = ..., timeout = ms,
                                 tool_defaults = { opts = ... }, tool_overrides = { tool = { opts = ... } } }
                        | { url = "http://...", headers = {...} } },
            opts = { default_servers = { "name" } } }

Each server's tools become tools named `<server>_<tool>` (CodeCompanion's names, in the
providers' set `[A-Za-z0-9_-]{1,64}`) in a group `mcp:<server>` whose prompt tells the LLM
about them (with the server's instructions); they run through the same orchestrator,
approvals and events as the built-in ones, asking before each call unless the config says
otherwise. A name that is taken (a built-in tool, another server's tool) gets a short hash:
built-in tools always win. The server's JSON schema goes to the LLM as it is. Results of
every content kind become text the LLM reads (images and audio described, a resource's text
included, `structuredContent` as JSON), scrubbed of the server's secrets and capped
(`door.py`); `isError` makes the call an error.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

from ..adapters.base import DEFAULT_CMD_TIMEOUT
from ..adapters.lua import LuaFunction
from ..errors import CodeCompanionError, ConfigError
from ..messages import ImagePart
from ..outbound import ClientSettings
from ..tools.contract import ToolDefinition, ToolRun
from .client import McpServer, Notice
from .door import (
    MAX_IMAGE_BYTES,
    MAX_IMAGES,
    MAX_SCHEMA_DEPTH,
    MAX_TOOLS,
    MAX_TOOLS_BYTES,
    description,
    result_capped,
    shown,
    tool_names,
)

PREFIX = "mcp:"


def result_text(result: Mapping[str, Any]) -> str:
    """An MCP tool result as the text the LLM reads."""
    parts: list[str] = []
    for item in result.get("content") or ():
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind == "text":
            parts.append(str(item.get("text", "")))
        elif kind in ("image", "audio"):
            data = str(item.get("data", ""))
            size = len(data) * 3 // 4 - (len(data) - len(data.rstrip("=")))  # base64: the bytes it holds
            parts.append(f"[{kind} {item.get('mimeType', '?')}, {size:,} bytes]")
        elif kind == "resource_link":
            described = f" ({item['description']})" if item.get("description") else ""
            parts.append(f"[resource link {item.get('uri')}: {item.get('name', '')}{described}]")
        elif kind == "resource":
            resource = _table(item.get("resource"))
            if "text" in resource:
                parts.append(f"[resource {resource.get('uri')}]\n{resource['text']}")
            else:
                parts.append(f"[resource {resource.get('uri')}: {resource.get('mimeType', 'binary')}]")
        else:
            parts.append(json.dumps(item))
    if result.get("structuredContent") is not None:
        parts.append("Structured content:\n" + json.dumps(result["structuredContent"], indent=2))
    return "\n\n".join(parts) or "(the tool returned nothing)"


def images_of(result: Mapping[str, Any]) -> list[ImagePart]:
    """The images of an MCP tool result, for providers that take images in tool results: the
    first MAX_IMAGES of at most MAX_IMAGE_BYTES each (the others are only described)."""
    found: list[ImagePart] = []
    for item in result.get("content") or ():
        if isinstance(item, Mapping) and item.get("type") == "image" and item.get("data"):
            data = str(item["data"])
            if len(data) <= MAX_IMAGE_BYTES and len(found) < MAX_IMAGES:
                found.append(ImagePart(data=data, media_type=shown(item.get("mimeType") or "image/png", 100)))
    return found


class McpServers:
    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        cmd_timeout: float = DEFAULT_CMD_TIMEOUT,
        http: ClientSettings | None = None,
    ) -> None:
        config = config if isinstance(config, Mapping) else {}
        self.cmd_timeout = cmd_timeout  # for the servers started from now on
        self.http = http or ClientSettings()  # the config's proxy and TLS check, likewise
        self.config = dict(config)
        servers = config.get("servers") if isinstance(config.get("servers"), Mapping) else {}
        self.specs: dict[str, Any] = dict(servers or {})
        opts = config.get("opts") if isinstance(config.get("opts"), Mapping) else {}
        defaults = opts.get("default_servers") if isinstance(opts, Mapping) else None
        self.default_servers = [str(n) for n in defaults or () if str(n) in self.specs]
        self.timeout_ms = opts.get("timeout") if isinstance(opts, Mapping) else None
        self.running: dict[str, McpServer] = {}

    def mentionable(self) -> list[dict[str, str]]:
        """The `@{mcp:<server>}` groups, for completion."""
        return [
            {"name": PREFIX + name, "kind": "group", "description": f"Tools from the MCP server {name}"}
            for name in self.specs
        ]

    def server(self, name: str, *, cwd: str, notice: Notice, editor: Any = None) -> McpServer:
        if name not in self.specs:
            raise ConfigError(f"there is no MCP server {name!r} in mcp.servers")
        server = self.running.get(name)
        if server is None:
            spec = self.specs[name]
            if not isinstance(spec, Mapping):
                raise ConfigError(f"mcp.servers.{name} must be a table with `cmd` or `url`")
            spec = dict(spec)
            if self.timeout_ms is not None and "timeout" not in spec:
                spec["timeout"] = self.timeout_ms
            server = self.running[name] = McpServer(
                name, spec, cwd=cwd, notice=notice, editor=editor, cmd_timeout=self.cmd_timeout, http=self.http
            )
        server.notice, server.editor = notice, editor or server.editor  # the chat that asks now hears it
        return server

    async def tools(
        self, name: str, *, cwd: str, notice: Notice, editor: Any = None, taken: Collection[str] = ()
    ) -> tuple[list[ToolDefinition], str]:
        """Server `name`'s tools (started if need be) and its group's prompt; a tool whose
        name is `taken` (built-in tools, other servers' tools) is renamed, and said so
        (`MCPToolRenamed`)."""
        spec = self.specs.get(name)
        if isinstance(spec, LuaFunction):  # CodeCompanion's deferred config: called when first needed
            self.specs[name] = await spec.call_async(editor)
        server = self.server(name, cwd=cwd, notice=notice, editor=editor)
        await server.ensure()
        spec = server.spec
        defaults = _table(spec.get("tool_defaults"))
        overrides = _table(spec.get("tool_overrides"))
        offered = [
            tool
            for tool in server.tools
            if _table(tool.get("execution")).get("taskSupport") != "required"  # tasks are not offered here
            and _table(overrides.get(tool["name"])).get("enabled") is not False
        ]
        names = tool_names(name, [str(tool["name"]) for tool in offered], taken)
        definitions = []
        for tool in offered:
            chat_name = names[tool["name"]]
            if chat_name != tool_names(name, [tool["name"]])[tool["name"]]:
                said = f"{name}'s tool `{shown(tool['name'])}` is `{chat_name}` here: its name is taken"
                notice("MCPToolRenamed", {"server": name, "tool": shown(tool["name"]), "name": chat_name, "text": said})
            override = _table(overrides.get(tool["name"]))
            definitions.append(_definition(server, tool, chat_name, {**defaults, **override}))
        if server.left_out:
            said = (
                f"{name}: {server.left_out} of its tools are left out: a chat takes at most {MAX_TOOLS} "
                f"of a server's tools, {MAX_TOOLS_BYTES >> 20} MiB of them, schemas nested at most "
                f"{MAX_SCHEMA_DEPTH} deep"
            )
            notice("MCPToolsLeftOut", {"server": name, "count": server.left_out, "text": said})
        listed = ", ".join(d.name for d in definitions)
        prompt = f"I'm giving you access to tools from the MCP server `{name}`: {listed}."
        if server.instructions:
            prompt += f"\nThe server's instructions:\n{server.instructions}"
        return definitions, prompt

    async def for_agent(self, *, http: bool, editor: Any = None) -> list[dict[str, Any]]:
        """The servers as ACP's session/new takes them (`mcp.opts.acp_enabled`, on by default):
        stdio ones always, HTTP ones when the agent says it takes them; env and header values
        resolved as for the editor's own use."""
        opts = _table(self.config.get("opts"))
        if opts.get("acp_enabled") is False:
            return []
        out: list[dict[str, Any]] = []
        for name in self.specs:
            spec = self.specs[name]
            if isinstance(spec, LuaFunction):
                spec = self.specs[name] = await spec.call_async(editor)
            server = self.server(name, cwd=".", notice=lambda event, data: None, editor=editor)
            if spec.get("url"):
                if http:
                    headers = [
                        {"name": k, "value": str(await server.value(k, v))}
                        for k, v in _table(spec.get("headers")).items()
                    ]
                    out.append({"type": "http", "name": name, "url": str(spec["url"]), "headers": headers})
                continue
            argv = [str(part) for part in spec.get("cmd") or ()]
            if argv:
                env = [{"name": k, "value": str(await server.value(k, v))} for k, v in _table(spec.get("env")).items()]
                out.append({"name": name, "command": argv[0], "args": argv[1:], "env": env})
        return out

    def status(self) -> list[dict[str, Any]]:
        """Each configured server: running or not, its tools, prompts and resources when known."""
        out = []
        for name in self.specs:
            server = self.running.get(name)
            if server is not None:
                out.append(server.status())
            else:
                spec = _table(self.specs[name])
                out.append(
                    {
                        "name": name,
                        "transport": "http" if spec.get("url") else "stdio",
                        "running": False,
                        "tools": [],
                        "prompts": [],
                        "resources": [],
                        "last_exit": None,
                    }
                )
        return out

    async def close(self) -> None:
        for server in list(self.running.values()):
            await server.stop()
        self.running.clear()

    def kill_now(self) -> None:
        for server in self.running.values():
            server.kill_now()


async def _pairs(server: McpServer, table: Any) -> list[dict[str, str]]:
    """`{ KEY = value }` as ACP's [{name, value}], each value resolved."""
    pairs = []
    for key, value in _table(table).items():
        resolved = await server.value(str(key), value)
        if resolved is not None:
            pairs.append({"name": str(key), "value": str(resolved)})
    return pairs


def _table(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _definition(server: McpServer, tool: Mapping[str, Any], name: str, config: Mapping[str, Any]) -> ToolDefinition:
    schema = dict(_table(tool.get("inputSchema"))) or {"type": "object"}
    opts = {"require_approval_before": True, **_table(config.get("opts"))}

    async def call(self: ToolRun, args: dict[str, Any], input: Any, output_handler: Any) -> dict[str, Any]:
        try:
            result = await server.call_tool(str(tool["name"]), args)
        except CodeCompanionError as error:
            return {"status": "error", "data": result_capped(server.clean(str(error)))}
        self.images.extend(images_of(result))
        text = result_capped(server.clean(result_text(result)))  # scrubbed whole, then cut
        return {"status": "error" if result.get("isError") else "success", "data": text}

    about = description(server.clean(str(tool.get("description") or tool.get("title") or tool["name"])))
    prompt = f"Run {shown(server.name)}'s MCP tool `{shown(tool['name'])}` with"
    return ToolDefinition(
        name=name,
        schema={"type": "function", "function": {"name": name, "description": about, "parameters": schema}},
        cmds=[call],
        opts=opts,
        system_prompt=config.get("system_prompt") if isinstance(config.get("system_prompt"), str) else None,
        output={"prompt": lambda self, tools: f"{prompt} {json.dumps(self.args)}?"},
        description=about,
    )
