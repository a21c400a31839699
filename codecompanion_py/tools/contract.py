"""CodeCompanion's tool contract in Python, and one run of a tool.

A tool is a table: `name`, `schema` (OpenAI function format), `cmds`, `system_prompt`,
`opts`, `env`, `handlers` (`setup`, `prompt_condition`, `on_exit`) and `output`
(`prompt`, `success`, `error`, `rejected`, `cancelled`). `cmds` holds argv lists (with
`${name}` placeholders filled from `env(self)`) and/or functions
`(self, args, input, output_handler)` that return `{status, data}` or hand it to
`output_handler` once.

The catalog and Python user tools hold Python callables; a Lua-defined tool holds
`LuaFunction.of_tool` references (adapters/lua.py) that the orchestrator calls back in Neovim, where tools.lua
calls each with the arguments of the tool's generation (CodeCompanion 19's `meta` tables,
or the older lists). Callables may be plain or async: the orchestrator awaits whatever is
awaitable.

A `ToolRun` is the `self` every callable receives: the definition's fields plus `args`
(the LLM's arguments), `tool` (the user's config entry), `function_call` and what the run
has produced so far.
"""

from __future__ import annotations

import copy
import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..adapters.lua import LuaFunction
from ..errors import ConfigError, ToolError
from ..messages import ToolCall, ToolSpec

if TYPE_CHECKING:
    from ..sandbox import Sandbox
    from .catalog.documents import Document
    from .workspace import Target

Outcome = Literal["success", "error", "rejected", "cancelled"]


@dataclass
class ToolDefinition:
    name: str
    schema: dict[str, Any]
    cmds: list[Any] = field(default_factory=list)
    system_prompt: str | Callable[[dict[str, Any]], str] | None = None
    opts: dict[str, Any] = field(default_factory=dict)
    env: Callable[..., Any] | LuaFunction | None = None
    handlers: dict[str, Any] = field(default_factory=dict)
    output: dict[str, Any] = field(default_factory=dict)
    # `gates.judge_context(self, meta)`: the action, in words, for the tools judge to vet.
    gates: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    lua: bool = False
    # Shows the change it will make (a diff) in its approval: `require_confirmation_after`
    # asks there too, as CodeCompanion's edit tools confirm their preview.
    previews: bool = False
    # The parameters checked before a run when they are wider than the schema the model sees:
    # a built-in whose schema became CodeCompanion's still takes the older forms.
    accepts: dict[str, Any] | None = None
    # A Lua `build_cmd(args)` of a tool that extends run_command.
    build_cmd: Any = None

    @classmethod
    def from_table(cls, name: str, table: Mapping[str, Any] | Any) -> ToolDefinition:
        """A tool from CodeCompanion's table shape (a dict, or a module/object with attributes)."""
        get = table.get if isinstance(table, Mapping) else lambda key, default=None: getattr(table, key, default)
        schema = get("schema")
        if not isinstance(schema, Mapping):
            raise ConfigError(f"tool {name}: `schema` must be an OpenAI function schema table")
        return cls(
            name=str(get("name") or name),
            schema=dict(schema),
            cmds=list(get("cmds") or []),
            system_prompt=get("system_prompt"),
            opts=dict(get("opts") or {}),
            env=get("env"),
            handlers=dict(get("handlers") or {}),
            output=dict(get("output") or {}),
            gates=dict(get("gates") or {}),
        )

    @property
    def function(self) -> dict[str, Any]:
        """The function object of the schema; a bare `{name, parameters}` is accepted too."""
        inner = self.schema.get("function")
        return dict(inner) if isinstance(inner, Mapping) else self.schema

    def spec(self) -> ToolSpec:
        function = self.function
        parameters = function.get("parameters") or {"type": "object", "properties": {}}
        return ToolSpec(
            name=self.name,
            description=str(function.get("description") or self.description),
            parameters=_plain(parameters),
            strict=bool(function.get("strict", False)),
        )

    def prompt_text(self) -> str | None:
        prompt = self.system_prompt
        if callable(prompt):
            prompt = prompt(self.schema)
        return prompt or None


def _plain(value: Any) -> Any:
    """Lua sends an empty table as a list; JSON schema wants `properties: {}` there."""
    if isinstance(value, Mapping):
        return {k: ({} if k == "properties" and v == [] else _plain(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def load_python_tool(name: str, target: str) -> ToolDefinition:
    """`"package.module:attribute"` (or a module exposing the table at top level)."""
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
        table = getattr(module, attribute) if attribute else module
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"tool {name}: cannot load {target!r}: {error}") from None
    if callable(table) and not isinstance(table, Mapping) and not inspect.ismodule(table):
        table = table()
    return ToolDefinition.from_table(name, table)


@dataclass
class ToolOutput:
    for_llm: str
    for_user: str | None = None


class ToolState:
    """What a tool's setup works out and keeps on its run for its cmds and outputs, as
    CodeCompanion's tools keep their state on `self`. Declared here for the type checker
    only: these are not dataclass fields, so each is unset (reading it is an AttributeError)
    until the tool sets it. These are the built-in file tools'; a Python user tool may set
    attributes of its own the same way."""

    target: Target
    """The file the call is about (every file tool's setup)."""
    document: Document
    """The file as it was read for the edit (insert_edit_into_file)."""
    new_text: str
    """The file's text after the edit (insert_edit_into_file)."""
    notes: tuple[str, ...]
    """What the LLM is told about how its edits matched (insert_edit_into_file)."""
    content: str
    """The new file's text (create_file)."""
    command: str
    """The command line to run, as the approval shows it (run_command and its extensions)."""
    sandbox: Sandbox
    """Where that command runs: its policy and mechanism (run_command and its extensions)."""
    url: str
    """The page to fetch, as it will be requested and as the approval shows it (fetch_webpage)."""
    summary: str
    """The result's line in the chat, in a person's words where the LLM's differ (read_file:
    lines counted from 1 for the user, from 0 as the tool's parameters count them)."""


@dataclass
class ToolRun(ToolState):
    """One call of a tool: the `self` its functions receive."""

    definition: ToolDefinition
    function_call: ToolCall
    tool: dict[str, Any] = field(default_factory=dict)
    args: dict[str, Any] = field(default_factory=dict)
    cmds: list[Any] = field(default_factory=list)
    opts: dict[str, Any] = field(default_factory=dict)
    outputs: list[ToolOutput] = field(default_factory=list)
    # Set by a tool's setup when this call can never skip the user (a protected path):
    # the reason is shown in the prompt, and neither YOLO nor "always accept" applies.
    must_ask: str | None = None
    # Extra text shown with the approval prompt (a diff, a resolved path).
    approval_detail: str | None = None
    # Set by an edit's setup: {path, relative, before}. With require_confirmation_after (and
    # no approval before) the edit is written, then reviewed in the editor's diff review.
    review: dict[str, Any] | None = None
    reviewed_after: bool = False
    # images a cmd returned (an MCP tool's), kept with the result for providers that take them
    images: list[Any] = field(default_factory=list)
    run_id: int = 0
    # Whether Neovim keeps state for this run (a function of it was called there).
    in_lua: bool = False
    # The batch's ToolsContext (tools/context.py), for Python tools whose cmds need the workspace or
    # the editor (cmds get `(self, args, input, output_handler)`, not `tools`).
    context: Any = None

    @classmethod
    def start(cls, definition: ToolDefinition, call: ToolCall, config: Mapping[str, Any], run_id: int) -> ToolRun:
        opts = merge_opts(definition.opts, config.get("opts") or {})
        return cls(
            definition=definition,
            function_call=call,
            tool=dict(config),
            args=dict(call.arguments),
            cmds=copy.copy(definition.cmds),
            opts=opts,
            run_id=run_id,
        )

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def schema(self) -> dict[str, Any]:
        return self.definition.schema

    def add_output(self, for_llm: Any, for_user: Any = None) -> None:
        self.outputs.append(ToolOutput(_text(for_llm), None if for_user is None else _text(for_user)))


APPROVAL = "require_approval_before"
CONFIRMATION = "require_confirmation_after"
_OLD_NAMES = {"requires_approval": APPROVAL, "user_confirmation": CONFIRMATION}


def merge_opts(tool_opts: Mapping[str, Any], config_opts: Mapping[str, Any]) -> dict[str, Any]:
    """A tool's own opts with the user's config entry's on top, under CodeCompanion 19's
    names: `requires_approval` and `user_confirmation` (the names before v18) count as
    `require_approval_before` and `require_confirmation_after`, and whichever spelling the
    user wrote overrides the tool's. The old names stay readable with the merged values.

    Before v18 one question covered a previewing tool; a user who sets only the old
    `requires_approval` keeps that meaning, for both questions."""
    merged = {**_renamed(tool_opts), **_renamed(config_opts)}
    if "requires_approval" in config_opts and not {CONFIRMATION, "user_confirmation"} & set(config_opts):
        merged[CONFIRMATION] = config_opts["requires_approval"]
    for old, new in _OLD_NAMES.items():
        if new in merged:
            merged[old] = merged[new]
    return merged


def env_allow(opts: Mapping[str, Any]) -> list[str]:
    """The tool option `env_allow`: environment variables (names, or patterns such as
    `NPM_CONFIG_*`) the user lets this tool's commands see beyond the safe ones. A Lua
    list arrives as a list; a single name is accepted too."""
    value = opts.get("env_allow")
    if value is None or value == {}:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(name, str) for name in value):
        raise ToolError("the tool option `env_allow` must be a list of environment variable names")
    return list(value)


def _renamed(opts: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in opts.items() if k not in _OLD_NAMES}
    for old, new in _OLD_NAMES.items():
        if old in opts and new not in opts:
            out[new] = opts[old]
    return out


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
