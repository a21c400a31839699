"""Which tools exist, how the user configured them, and which ones a chat has enabled.

The config shape is CodeCompanion's `interactions.chat.tools` (or `strategies.chat.tools`):

    tools = {
      calculator = { description = "...", name = ..., cmds = {...}, schema = ..., ... },  -- inline
      mine = { path = "user.tools.mine" },                  -- or callback = table / function
      beads = { extends = "cmd_tool", schema = ..., build_cmd = function(args) ... end },
      weather = { callback = "my_pkg.tools:weather" },      -- a Python tool
      read_file = { opts = { require_approval_before = true } },  -- a built-in's options
      groups = { mine = { description = "...", tools = { "calculator", "read_file" } } },
      opts = { default_tools = { "files" }, max_rounds = 25 },
    }

tools.lua resolves a Lua tool in Neovim and sends a description of it (`__lua_tool`): its
functions stay there and become `LuaFunction` references called back by the orchestrator.
A tool that failed to resolve arrives as `__lua_error`, said when the tool is used.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..adapters.lua import LuaFunction
from ..errors import ConfigError
from ..sandbox import SandboxPolicy
from .catalog import run_command
from .contract import ToolDefinition, load_python_tool

CATALOG: dict[str, str] = {
    "ask_questions": "ask_questions",
    "read_file": "read_file",
    "create_file": "create_file",
    "insert_edit_into_file": "insert_edit_into_file",
    "delete_file": "delete_file",
    "file_search": "file_search",
    "grep_search": "grep_search",
    "get_changed_files": "get_changed_files",
    "get_diagnostics": "get_diagnostics",
    "run_command": "run_command",
    "fetch_webpage": "fetch_webpage",
    "memory": "memory",
    "web_search": "web_search",
}
ALIASES = {"cmd_runner": "run_command"}  # CodeCompanion's name for the command tool

# The meaning of CodeCompanion's agent prompt, in our words.
AGENT_PROMPT = """<instructions>
You are a coding agent, expert in many languages and frameworks, working in the user's project through tools.
The user asks a question or sets a task: gather context with the tools and act; don't assume.
Keep the kind of project in mind. When a feature names no files, split it into parts and think which files each needs.
If you are unsure which tool helps, call several. Keep calling tools until the task is done;
stop only when it truly cannot be.
Explore the project to make a complete fix. After a tool call, carry on from where you were without repeating yourself.
Don't show terminal commands in a code block unless asked. Don't read again a file already in the context.
</instructions>
<toolUseInstructions>
Follow each tool's JSON schema exactly, with every required property, as valid JSON.
Act with the tools instead of asking the user to do it by hand; when you say you will do something, do it.
Don't name tools to the user: say "I'll edit the file", not the tool's name.
Call tools in parallel when you can. Use the file paths the user or the tools gave you.
</toolUseInstructions>
<outputFormatting>
Write Markdown; put file names and symbols in backticks. Code examples go in blocks of four backticks with the language.
Make code changes with insert_edit_into_file when you have it, not as code blocks.
</outputFormatting>"""

_FILE_TOOLS = [
    "create_file",
    "delete_file",
    "file_search",
    "get_changed_files",
    "grep_search",
    "insert_edit_into_file",
    "read_file",
]
DEFAULT_GROUPS: dict[str, dict[str, Any]] = {
    "agent": {
        "description": "Agent: read, search, edit and create files, run commands",
        "tools": ["ask_questions", *_FILE_TOOLS, "get_diagnostics", "run_command"],
        "system_prompt": AGENT_PROMPT,
    },
    "files": {
        "description": "Read, search, create, edit and delete files in the project",
        "tools": _FILE_TOOLS,
        "system_prompt": "You can read, search, create, edit and delete files in the user's project with the "
        "tools given. Paths are relative to the project root.",
    },
}
DEFAULT_MAX_ROUNDS = 25

_MENTION = re.compile(r"@\{([A-Za-z0-9_.-]+)\}")


@dataclass
class ToolSettings:
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    groups: dict[str, dict[str, Any]] = field(default_factory=lambda: dict(DEFAULT_GROUPS))
    default_tools: list[str] = field(default_factory=list)
    max_rounds: int = DEFAULT_MAX_ROUNDS
    # `opts.tool_replacement_message` ("the ${tool} tool"); None: the name in backticks
    replacement: str | None = None
    disabled: set[str] = field(default_factory=set)  # `enabled = false` entries
    # interactions.shared.sandbox: every command tool's and agent terminal's, under their own opts.sandbox
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)
    problems: list[str] = field(default_factory=list)  # names left out, said to the user
    _cache: dict[str, ToolDefinition] = field(default_factory=dict, repr=False)

    @classmethod
    def from_config(cls, raw: Mapping[str, Any] | None) -> ToolSettings:
        settings = cls()
        for name, entry in (raw or {}).items():
            if name == "groups":
                for group, spec in _table(entry, "tools.groups").items():
                    settings.groups[str(group)] = dict(_table(spec, f"tools.groups.{group}"))
            elif name == "opts":
                opts = _table(entry, "tools.opts")
                settings.default_tools = [str(t) for t in opts.get("default_tools") or []]
                settings.max_rounds = int(opts.get("max_rounds", DEFAULT_MAX_ROUNDS))
                if isinstance(opts.get("tool_replacement_message"), str):
                    settings.replacement = opts["tool_replacement_message"]
            else:
                table = dict(_table(entry, f"tools.{name}"))
                if table.get("enabled") is False:
                    settings.disabled.add(ALIASES.get(str(name), str(name)))
                else:
                    settings.entries[str(name)] = table
        for group_name, group_spec in settings.groups.items():  # as in CodeCompanion, groups leave disabled tools out
            members = [t for t in group_spec.get("tools") or [] if ALIASES.get(str(t), str(t)) not in settings.disabled]
            settings.groups[group_name] = {**group_spec, "tools": members}
        # An unknown name is left out and said, not fatal: the rest of the config still applies.
        mentioned = [*settings.default_tools, *(t for g in settings.groups.values() for t in g.get("tools") or [])]
        unknown = sorted({str(name) for name in mentioned if not settings.known(str(name))})
        for name in unknown:
            settings.problems.append(f"tools: unknown tool or group {name!r}; it was left out")
        if unknown:
            settings.default_tools = [t for t in settings.default_tools if t not in unknown]
            for group_name, group_spec in settings.groups.items():
                members = [t for t in group_spec.get("tools") or [] if str(t) not in unknown]
                settings.groups[group_name] = {**group_spec, "tools": members}
        return settings

    def known(self, name: str) -> bool:
        name = ALIASES.get(name, name)
        return self._is_tool(name) or name in self.groups

    def _is_tool(self, name: str) -> bool:
        return name in self.entries or (name in CATALOG and name not in self.disabled)

    def names(self) -> list[str]:
        """Every tool and group a user can mention, for completion."""
        return sorted({*(set(CATALOG) - self.disabled), *self.entries, *self.groups})

    def mentionable(self) -> list[dict[str, str]]:
        """`names()` with what each is, for `@{...}` completion: a group's or a configured
        tool's description when it has one."""
        out: list[dict[str, str]] = []
        for name in self.names():
            spec = self.groups.get(name) or self.entries.get(name) or {}
            description = spec.get("description")
            out.append(
                {
                    "name": name,
                    "kind": "group" if name in self.groups else "tool",
                    "description": description if isinstance(description, str) else "",
                }
            )
        return out

    def expand(self, name: str) -> list[str]:
        """A tool's name, or a group's tools; [] for unknown names."""
        name = ALIASES.get(name, name)
        if self._is_tool(name):
            return [name]
        group = self.groups.get(name)
        return [ALIASES.get(str(t), str(t)) for t in group.get("tools") or []] if group else []

    def definition(self, name: str) -> ToolDefinition:
        name = ALIASES.get(name, name)
        if name not in self._cache:
            self._cache[name] = self._load(name)
        return self._cache[name]

    def config_of(self, name: str) -> dict[str, Any]:
        """The user's entry for a tool (what a tool's callables see as `self.tool`), Lua
        functions as references."""
        entry = dict(self.entries.get(ALIASES.get(name, name), {}))
        if "opts" in entry:
            entry["opts"] = _lua_refs(name, "config.opts", entry["opts"])
        return entry

    def _load(self, name: str) -> ToolDefinition:
        entry = self.entries.get(name)
        if entry is None or entry.get("callback") is None:
            if name not in CATALOG:
                raise ConfigError(f"tool {name!r} has no callback")
            module = importlib.import_module(f"{__package__}.catalog.{CATALOG[name]}")
            definition: ToolDefinition = dataclasses.replace(module.TOOL)
        else:
            callback = entry["callback"]
            if isinstance(callback, str):
                definition = load_python_tool(name, callback)
            elif isinstance(callback, Mapping) and callback.get("__lua_error"):
                raise ConfigError(f"tool {name!r}: {callback['__lua_error']}")
            elif isinstance(callback, Mapping) and callback.get("__lua_tool"):
                definition = _lua_definition(name, callback)
            elif isinstance(callback, Mapping):
                definition = ToolDefinition.from_table(name, callback)
            else:
                raise ConfigError(f"tools.{name}.callback must be a table or a 'module:attribute' string")
        if entry and entry.get("description"):
            definition.description = str(entry["description"])
        return definition


def mentions(text: str, settings: ToolSettings) -> tuple[list[str], list[str], str]:
    """`@{tool}` and `@{group}` in a message: (tools, groups, text with each mention
    replaced by the name in backticks). Unknown names are left as they are."""
    tools: list[str] = []
    groups: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        expanded = settings.expand(name)
        if not expanded:
            return match.group(0)
        tools.extend(t for t in expanded if t not in tools)
        group = settings.groups.get(ALIASES.get(name, name))
        if group is not None and not settings._is_tool(ALIASES.get(name, name)):
            groups.append(name)
            if isinstance(group.get("prompt"), str):  # CodeCompanion's group `prompt`, ${tools} filled in
                return group["prompt"].replace("${tools}", ", ".join(expanded) + " tools")
        elif settings.replacement is not None:
            return settings.replacement.replace("${tool}", name)
        return f"`{name}`"

    return tools, groups, _MENTION.sub(replace, text)


def _lua_definition(name: str, description: Mapping[str, Any]) -> ToolDefinition:
    """A tool whose functions stay in Lua: each becomes a reference Neovim resolves."""
    if description.get("extends"):
        return _extension(name, description)
    cmds: list[Any] = []
    for index, cmd in enumerate(_list(description.get("cmds")), start=1):
        cmds.append(LuaFunction.of_tool(name, f"cmds.{index}") if cmd == "function" else cmd)
    schema = description.get("schema")
    if not isinstance(schema, Mapping):
        raise ConfigError(f"tool {name}: `schema` must be an OpenAI function schema table")
    return ToolDefinition(
        name=str(description.get("name") or name),
        schema=dict(schema),
        cmds=cmds,
        system_prompt=description.get("system_prompt") or None,
        opts=_lua_refs(name, "opts", description.get("opts") or {}),
        env=LuaFunction.of_tool(name, "env") if description.get("env") else None,
        handlers={h: LuaFunction.of_tool(name, f"handlers.{h}") for h in _list(description.get("handlers"))},
        output={o: LuaFunction.of_tool(name, f"output.{o}") for o in _list(description.get("output"))},
        gates={g: LuaFunction.of_tool(name, f"gates.{g}") for g in _list(description.get("gates"))},
        lua=True,
    )


def _extension(name: str, description: Mapping[str, Any]) -> ToolDefinition:
    """`extends = "cmd_tool"` (CodeCompanion's name) or `"run_command"` (ours)."""
    base = description.get("extends")
    if base not in ("cmd_tool", "run_command"):
        raise ConfigError(f'tool {name}: cannot extend {base!r}; tools can extend "cmd_tool" (run_command)')
    if not description.get("build_cmd"):
        raise ConfigError(f"tool {name}: a tool that extends {base} needs `build_cmd = function(args) ... end`")
    spec = description.get("schema")
    spec = spec if isinstance(spec, Mapping) else {}
    tool_name = str(description.get("name") or name)
    schema = {
        "type": "function",
        "function": {
            "name": tool_name,
            "description": str(description.get("description") or ""),
            "parameters": {
                "type": "object",
                "properties": spec.get("properties") or {},
                "required": list(spec.get("required") or []),
                "additionalProperties": spec.get("additionalProperties") or False,
            },
            "strict": True,
        },
    }
    return run_command.extension(
        tool_name,
        schema=schema,
        build_cmd=LuaFunction.of_tool(name, "build_cmd"),
        handlers={h: LuaFunction.of_tool(name, f"handlers.{h}") for h in _list(description.get("handlers"))},
        output={o: LuaFunction.of_tool(name, f"output.{o}") for o in _list(description.get("output"))},
        opts=_lua_refs(name, "opts", description.get("opts") or {}),
        system_prompt=description.get("system_prompt") or None,
    )


def _lua_refs(name: str, prefix: str, opts: Mapping[str, Any] | list[Any]) -> dict[str, Any]:
    """Option values that were Lua functions arrive as `{__lua = true}` markers."""
    if not isinstance(opts, Mapping):
        return {}
    return {
        key: LuaFunction.of_tool(name, f"{prefix}.{key}")
        if isinstance(value, Mapping) and value.get("__lua")
        else value
        for key, value in opts.items()
    }


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _table(value: Any, where: str) -> Mapping[str, Any]:
    if value is None or value == []:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must be a table")
    return value


def enabled_definitions(settings: ToolSettings, names: Iterable[str]) -> dict[str, ToolDefinition]:
    return {name: settings.definition(name) for name in names}
