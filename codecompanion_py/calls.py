"""Calls from Lua into the engine, decoded once, at the engine's entry, into typed structs.

Each call Lua makes (`rpc.notify(method, payload)`, `rpc.request(method, payload)`) has a
frozen struct here (`CALLS`: calls of the same shape share one, such as the many that name
only their chat); the engine's handlers read its fields, never a raw table. The way out is
`ui/ops.py`.

Adding a call: its struct here (or one of the same shape), its name in `CALLS`, and one line
in the engine's table of notifications or requests (`engine.py`).

Lua's empty table `{}` arrives as an empty list: a field typed as a map takes it as absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from .chat.context import ContextItem
from .errors import ConfigError

ChatId = int | str
"""A chat's buffer number, or the id of an inline run (`inline-3`)."""

AdapterSpec = str | dict[str, Any]
"""An adapter's name, or a table with its name (and model, or settings of its own)."""


class Call(msgspec.Struct, frozen=True, kw_only=True):
    """A call from Lua; one with nothing to say but its name (`health`, `tools`) is this."""

    @classmethod
    def decode(cls, payload: Mapping[str, Any]) -> Call:
        return msgspec.convert(_without_empty_maps(cls, payload), type=cls, strict=False)


class ChatCall(Call, frozen=True, kw_only=True):
    """A call about one chat (or inline run); one that names it and no more is this."""

    chat_id: ChatId | None = None


# --- notifications: Engine.dispatch --------------------------------------------------------


class ConfigSet(Call, frozen=True, kw_only=True):
    """The user's config, as rpc.lua's `payload_for_config` flattens it: read by `config.load`."""

    data: dict[str, Any] = {}

    @classmethod
    def decode(cls, payload: Mapping[str, Any]) -> Call:
        return cls(data=dict(payload))


class ChatOpen(ChatCall, frozen=True, kw_only=True):
    adapter: AdapterSpec | None = None
    model: str | None = None
    command: str | None = None  # `command=`: which of an agent's `commands` starts it
    cwd: str | None = None
    fork_of: ChatId | None = None  # `/fork`: the chat whose conversation this one copies
    hooks: list[str] = []  # Lua callbacks the engine calls: "on_tool_output"
    history_id: str | None = None  # a saved chat the user picked
    resume_id: str | None = None  # the saved chat it wrote to in an engine that stopped
    # a library prompt's chat
    system_prompts: list[Any] = []
    ignore_system_prompt: bool = False
    tools: list[str] | None = None
    mcp_servers: list[str] | str | None = None  # its MCP servers ("none": not even the defaults)


class ChatSubmit(ChatCall, frozen=True, kw_only=True):
    text: str = ""
    typed: str = ""  # what the user typed, when `prompt_decorator` made `text` of it: the title's source
    settings: dict[str, Any] | None = None  # the settings header
    context: list[ContextItem] = []
    removed: list[str] = []
    hooks: list[str] | None = None  # the chat's Lua callbacks the engine calls, as they are now
    header: int = 0  # which `## Me` of the buffer (from the top) the message was written under


class ChatRewind(ChatCall, frozen=True, kw_only=True):
    """`gz`, `/rewind`, `rewind()`: back to before the turn sent under the `header`th `## Me`."""

    header: int = 0
    restore: Literal["all", "files", "conversation"] = "all"
    dirty: list[str] = []  # files open with unsaved changes: never overwritten unasked


class ChatRemoveContext(ChatCall, frozen=True, kw_only=True):
    ids: list[str] = []


class ChatFollowUp(ChatCall, frozen=True, kw_only=True):
    text: str = ""


class ChatRename(ChatCall, frozen=True, kw_only=True):
    title: str = ""


class ChatSetAdapter(ChatCall, frozen=True, kw_only=True):
    adapter: str | None = None
    model: str | None = None


class ChatModels(ChatCall, frozen=True, kw_only=True):
    adapter: str | None = None


class ChatSetOption(ChatCall, frozen=True, kw_only=True):
    id: str = ""
    value: Any = None


class ChatResume(ChatCall, frozen=True, kw_only=True):
    session_id: str = ""


class ChatShare(ChatCall, frozen=True, kw_only=True):
    """`/share`: the chat's text and where it goes (`chat/share.py`)."""

    text: str = ""
    token: str = ""
    description: str = ""
    filename: str = ""
    url: str = ""


class InlineRun(ChatCall, frozen=True, kw_only=True):
    prompt: str = ""
    adapter: AdapterSpec | None = None
    model: str | None = None
    placement: str | None = None
    filetype: str = ""
    path: str = ""
    lines: tuple[int, int] | None = None
    selection: str | None = None
    context: list[Any] = []  # `#{buffer}` and the like: tables, as the inline prompt reads them
    chat: ChatId | None = None  # `#{chat}`: the last chat


class CmdRun(ChatCall, frozen=True, kw_only=True):
    prompt: str = ""
    adapter: AdapterSpec | None = None
    model: str | None = None


class RecentSnippet(msgspec.Struct, frozen=True, kw_only=True):
    path: str = ""
    text: str = ""


class CompletionRequest(Call, frozen=True, kw_only=True):
    """Lua's debounce fired: predict the text at the cursor for request `id`."""

    id: int = 0
    prefix: str = ""  # the buffer before the cursor (a bounded number of lines)
    suffix: str = ""  # and after it
    filetype: str = ""
    path: str = ""
    recent: list[RecentSnippet] = []  # other buffers edited lately, around their last change
    menu: bool = False  # for a completion menu's source, not the ghost text


class HealthCall(Call, frozen=True, kw_only=True):
    """:checkhealth; `completion`: whether the editor has predictions on (:CodeCompanionCompletion
    turns them on and off; the config only says how they start)."""

    completion: bool | None = None


class CompletionCancel(Call, frozen=True, kw_only=True):
    """The suggestion `id` is dismissed (another key, insert mode left): its request stops."""

    id: int | None = None


class McpControl(ChatCall, frozen=True, kw_only=True):
    server: str = ""
    action: str = ""
    cwd: str | None = None


class EditorReply(Call, frozen=True, kw_only=True):
    """Lua's answer to a `call` op (ui/editor.py)."""

    id: Any = None  # ours when it is an int we gave; anything else finds nothing
    result: Any = None
    error: Any = None


class LogRecord(Call, frozen=True, kw_only=True):
    """A record of an extension's `require("codecompanion.utils.log")`, for the log file."""

    level: str = "ERROR"
    message: str = ""


# --- requests: Engine.request, answered ----------------------------------------------------


class RulesRead(Call, frozen=True, kw_only=True):
    cwd: str = ""
    home: str | None = None
    allowed: list[Any] = []
    files: list[Any] = []  # [{path, parser, named}], checked by repository.py
    entries: list[Any] = []  # a group's entries, as Lua flattens them (rules.RuleEntry)


class PromptsRead(Call, frozen=True, kw_only=True):
    """`prompts.read`: the folders to read, and the aliases the config's own prompts hold."""

    cwd: str
    home: str | None = None
    trust_file: str = ""  # where the trust answers are kept (prompt_trust.py)
    builtins: str | None = None  # this plugin's folder, unless the palette hides the presets
    dirs: list[str] = []  # `prompt_library.markdown.dirs`, as the config names them
    config_aliases: dict[str, str] = {}  # alias -> the config prompt's name


class PromptsTrust(Call, frozen=True, kw_only=True):
    """`prompts.trust`: the user's answer on a project's own prompts."""

    file: str
    root: str
    trusted: bool = False


class FilesRead(Call, frozen=True, kw_only=True):
    cwd: str | None = None
    home: str | None = None
    paths: list[Any] = []


class FilesList(Call, frozen=True, kw_only=True):
    """`files.list`: the project's files under the editor's cwd, for /file's picker."""

    cwd: str


class HistoryCall(Call, frozen=True, kw_only=True):
    """`history.list`; the others name a saved chat (`SavedChatCall`)."""

    dir: str | None = None  # the editor says where: a request can come before the config


class SavedChatCall(HistoryCall, frozen=True, kw_only=True):
    """`history.load`, `history.delete`, and `history.rename` with its `title`."""

    id: str = ""
    title: str = ""


class McpServerCall(Call, frozen=True, kw_only=True):
    """`mcp.status` (no server), `mcp.resources`; the bases of the two below."""

    server: str = ""
    cwd: str | None = None


class McpPrompt(McpServerCall, frozen=True, kw_only=True):
    name: str = ""
    arguments: dict[str, Any] = {}


class McpResource(McpServerCall, frozen=True, kw_only=True):
    uri: str = ""


class CliPrepare(Call, frozen=True, kw_only=True):
    """`cli.prepare`: one `:CodeCompanionCLI` (its `words`) or `cli()` call (its `prompt` and
    options), with `interactions.cli` and the editor context Lua captured (terminal_agents.py)."""

    cli: dict[str, Any] = {}
    words: list[str] | None = None
    prompt: str | None = None
    agent: str | None = None
    submit: bool = False
    ask: bool = False
    visual: bool = False
    send_code: bool = True
    cwd: str = "."
    context: dict[str, Any] = {}


class ReviewCall(Call, frozen=True, kw_only=True):
    """The code review's calls (review_calls.py): the editor's folder and
    `interactions.code_review.opts.storage_dir`; `review.open` with its `scope`, `review.share`
    and the others that say no more."""

    cwd: str = "."
    dir: str = ""
    scope: str = "agent"  # or "all"
    limit: int = 100_000  # `review.pending`: the characters a context item may have (max_context_chars)


class ReviewAt(ReviewCall, frozen=True, kw_only=True):
    """`review.accept`, `review.ignore`, `review.track`, `review.baseline_text`: a file (and a line of it)."""

    path: str = ""
    line: int = 1


class ReviewComment(ReviewAt, frozen=True, kw_only=True):
    """`review.comment`: the lines `line`..`end_line` of `path`, their `code`; empty `text` deletes."""

    end_line: int = 1
    code: str = ""
    filetype: str = ""
    text: str = ""


class ReviewText(ReviewCall, frozen=True, kw_only=True):
    """`review.save_comments`: the comments file as the user edited it; `review.consume`: the `ids` sent."""

    text: str = ""
    ids: list[str] = []


_CHAT_ONLY = (
    "stop close compact yolo clear_approvals agent_options sessions system_prompt clear regenerate debug copilot_stats"
)
CALLS: dict[str, type[Call]] = {
    "config.set": ConfigSet,
    "chat.open": ChatOpen,
    "chat.submit": ChatSubmit,
    "chat.remove_context": ChatRemoveContext,
    "chat.set_adapter": ChatSetAdapter,
    "chat.follow_up": ChatFollowUp,
    "chat.rename": ChatRename,
    "chat.models": ChatModels,
    "chat.set_option": ChatSetOption,
    "chat.resume": ChatResume,
    "chat.share": ChatShare,
    "chat.rewind": ChatRewind,
    **{f"chat.{name}": ChatCall for name in _CHAT_ONLY.split()},
    "inline.run": InlineRun,
    "inline.stop": ChatCall,
    "cmd.run": CmdRun,
    "mcp.control": McpControl,
    "completion.request": CompletionRequest,
    "completion.cancel": CompletionCancel,
    "editor.reply": EditorReply,
    "log": LogRecord,
    # requests
    "health": HealthCall,
    **dict.fromkeys(("tools", "adapters", "kill_agents"), Call),
    "rules.read": RulesRead,
    "files.read": FilesRead,
    "files.list": FilesList,
    "prompts.read": PromptsRead,
    "prompts.trust": PromptsTrust,
    "history.list": HistoryCall,
    **dict.fromkeys(("history.load", "history.rename", "history.delete"), SavedChatCall),
    **dict.fromkeys(("chat.agent_commands", "chat.checkpoints"), ChatCall),
    **dict.fromkeys(("mcp.status", "mcp.resources"), McpServerCall),
    "mcp.prompt": McpPrompt,
    "mcp.resource": McpResource,
    "cli.prepare": CliPrepare,
    **dict.fromkeys(("review.open", "review.approve", "review.share", "review.comments"), ReviewCall),
    **dict.fromkeys(("review.pending", "review.baseline"), ReviewCall),
    **dict.fromkeys(("review.accept", "review.ignore", "review.track", "review.baseline_text"), ReviewAt),
    "review.comment": ReviewComment,
    **dict.fromkeys(("review.save_comments", "review.consume"), ReviewText),
}
"""Every call Lua can make, by method name: the struct its payload decodes to."""


def decode(method: str, payload: Any) -> Call:
    """The call `method` with `payload`, typed; a `ConfigError` of one line when Lua sent
    a method or a payload the engine does not know."""
    cls = CALLS.get(method)
    if cls is None:
        raise ConfigError(f"unknown method {method!r}")
    if not payload:  # nil, or `{}` sent as an empty list
        payload = {}
    elif not isinstance(payload, Mapping):
        raise ConfigError(f"the editor sent {method} a {type(payload).__name__}, not a table")
    try:
        return cls.decode(payload)
    except msgspec.ValidationError as error:
        raise ConfigError(f"the editor sent {method} a payload the engine cannot read: {error}") from None


def chat_of(payload: Any) -> Any:
    """The chat a raw payload names, to report a call that did not decode in it."""
    return payload.get("chat_id") if isinstance(payload, Mapping) else None


_MAP_FIELDS: dict[type[Call], tuple[str, ...]] = {}


def _without_empty_maps(cls: type[Call], payload: Mapping[str, Any]) -> Mapping[str, Any]:
    names = _MAP_FIELDS.get(cls)
    if names is None:
        names = _MAP_FIELDS[cls] = _map_fields(cls)
    empty = [name for name in names if payload.get(name) == []]
    if not empty:
        return payload
    return {key: value for key, value in payload.items() if key not in empty}


def _map_fields(cls: type[Call]) -> tuple[str, ...]:
    """The fields typed as a map and never as a list: an empty list there is Lua's `{}`."""
    info = msgspec.inspect.type_info(cls)
    assert isinstance(info, msgspec.inspect.StructType)
    names = []
    for field in info.fields:
        kinds = field.type.types if isinstance(field.type, msgspec.inspect.UnionType) else (field.type,)
        maps = any(isinstance(kind, msgspec.inspect.DictType) for kind in kinds)
        lists = any(isinstance(kind, (msgspec.inspect.ListType, msgspec.inspect.AnyType)) for kind in kinds)
        if maps and not lists:
            names.append(field.name)
    return tuple(names)
