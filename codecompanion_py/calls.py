"""Calls from Lua into the engine, decoded once, at the engine's entry, into typed structs.

Each call Lua makes (`rpc.notify(method, payload)`, `rpc.request(method, payload)`) has one
frozen struct here, tagged with its method name; the engine routes on the struct's type and
its handlers read fields, never a raw table. The way out is `ui/ops.py`.

Adding a call: one struct here (`class FooBar(Call, tag="foo.bar")`) and one line in the
engine's table of notifications or requests (`engine.py`).

Lua's empty table `{}` arrives as an empty list: a field typed as a map takes it as absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from .chat.context import ContextItem
from .errors import ConfigError

ChatId = int | str
"""A chat's buffer number, or the id of an inline run (`inline-3`)."""

AdapterSpec = str | dict[str, Any]
"""An adapter's name, or a table with its name (and model, or settings of its own)."""


class Call(msgspec.Struct, frozen=True, kw_only=True, tag_field="method"):
    """A call from Lua; `method` (its tag) is the name Lua sends."""

    @classmethod
    def decode(cls, payload: Mapping[str, Any]) -> Call:
        return msgspec.convert(_without_empty_maps(cls, payload), type=cls, strict=False)


class ChatCall(Call, frozen=True, kw_only=True):
    chat_id: ChatId | None = None


def method_of(cls: type[Call]) -> str:
    return str(cls.__struct_config__.tag)


# --- notifications: Engine.dispatch --------------------------------------------------------


class ConfigSet(Call, tag="config.set", frozen=True, kw_only=True):
    """The user's config, as rpc.lua's `payload_for_config` flattens it: read by `config.load`."""

    data: dict[str, Any] = {}

    @classmethod
    def decode(cls, payload: Mapping[str, Any]) -> Call:
        return cls(data=dict(payload))


class ChatOpen(ChatCall, tag="chat.open", frozen=True, kw_only=True):
    adapter: AdapterSpec | None = None
    model: str | None = None
    cwd: str | None = None
    history_id: str | None = None  # a saved chat the user picked
    resume_id: str | None = None  # the saved chat it wrote to in an engine that stopped
    # a library prompt's chat
    system_prompts: list[Any] = []
    ignore_system_prompt: bool = False
    tools: list[str] | None = None


class ChatSubmit(ChatCall, tag="chat.submit", frozen=True, kw_only=True):
    text: str = ""
    settings: dict[str, Any] | None = None  # the settings header
    context: list[ContextItem] = []
    removed: list[str] = []


class ChatStop(ChatCall, tag="chat.stop", frozen=True, kw_only=True):
    pass


class ChatClose(ChatCall, tag="chat.close", frozen=True, kw_only=True):
    pass


class ChatRemoveContext(ChatCall, tag="chat.remove_context", frozen=True, kw_only=True):
    ids: list[str] = []


class ChatCompact(ChatCall, tag="chat.compact", frozen=True, kw_only=True):
    pass


class ChatSetAdapter(ChatCall, tag="chat.set_adapter", frozen=True, kw_only=True):
    adapter: str | None = None
    model: str | None = None


class ChatModels(ChatCall, tag="chat.models", frozen=True, kw_only=True):
    adapter: str | None = None


class ChatYolo(ChatCall, tag="chat.yolo", frozen=True, kw_only=True):
    pass


class ChatClearApprovals(ChatCall, tag="chat.clear_approvals", frozen=True, kw_only=True):
    pass


class ChatAgentOptions(ChatCall, tag="chat.agent_options", frozen=True, kw_only=True):
    pass


class ChatSetOption(ChatCall, tag="chat.set_option", frozen=True, kw_only=True):
    id: str = ""
    value: Any = None


class ChatSessions(ChatCall, tag="chat.sessions", frozen=True, kw_only=True):
    pass


class ChatResume(ChatCall, tag="chat.resume", frozen=True, kw_only=True):
    session_id: str = ""


class ChatSystemPrompt(ChatCall, tag="chat.system_prompt", frozen=True, kw_only=True):
    pass


class ChatClear(ChatCall, tag="chat.clear", frozen=True, kw_only=True):
    pass


class ChatRegenerate(ChatCall, tag="chat.regenerate", frozen=True, kw_only=True):
    pass


class ChatDebug(ChatCall, tag="chat.debug", frozen=True, kw_only=True):
    pass


class InlineRun(ChatCall, tag="inline.run", frozen=True, kw_only=True):
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


class InlineStop(ChatCall, tag="inline.stop", frozen=True, kw_only=True):
    pass


class CmdRun(ChatCall, tag="cmd.run", frozen=True, kw_only=True):
    prompt: str = ""
    adapter: AdapterSpec | None = None
    model: str | None = None


class McpControl(ChatCall, tag="mcp.control", frozen=True, kw_only=True):
    server: str = ""
    action: str = ""
    cwd: str | None = None


class EditorReply(Call, tag="editor.reply", frozen=True, kw_only=True):
    """Lua's answer to a `call` op (ui/editor.py)."""

    id: Any = None  # ours when it is an int we gave; anything else finds nothing
    result: Any = None
    error: Any = None


# --- requests: Engine.request, answered ----------------------------------------------------


class Health(Call, tag="health", frozen=True, kw_only=True):
    pass


class Tools(Call, tag="tools", frozen=True, kw_only=True):
    """For `@` completion in the chat."""


class Adapters(Call, tag="adapters", frozen=True, kw_only=True):
    pass


class KillAgents(Call, tag="kill_agents", frozen=True, kw_only=True):
    """Neovim is exiting."""


class RulesRead(Call, tag="rules.read", frozen=True, kw_only=True):
    cwd: str = ""
    home: str | None = None
    allowed: list[Any] = []
    files: list[Any] = []  # [{path, parser, named}], checked by repository.py


class FilesRead(Call, tag="files.read", frozen=True, kw_only=True):
    cwd: str | None = None
    home: str | None = None
    paths: list[Any] = []


class HistoryCall(Call, frozen=True, kw_only=True):
    dir: str | None = None  # the editor says where: a request can come before the config


class HistoryList(HistoryCall, tag="history.list", frozen=True, kw_only=True):
    pass


class HistoryLoad(HistoryCall, tag="history.load", frozen=True, kw_only=True):
    id: str = ""


class HistoryRename(HistoryCall, tag="history.rename", frozen=True, kw_only=True):
    id: str = ""
    title: str = ""


class HistoryDelete(HistoryCall, tag="history.delete", frozen=True, kw_only=True):
    id: str = ""


class McpStatus(Call, tag="mcp.status", frozen=True, kw_only=True):
    cwd: str | None = None


class McpServerCall(Call, frozen=True, kw_only=True):
    server: str = ""
    cwd: str | None = None


class McpPrompt(McpServerCall, tag="mcp.prompt", frozen=True, kw_only=True):
    name: str = ""
    arguments: dict[str, Any] = {}


class McpResource(McpServerCall, tag="mcp.resource", frozen=True, kw_only=True):
    uri: str = ""


class McpResources(McpServerCall, tag="mcp.resources", frozen=True, kw_only=True):
    pass


def _leaves(cls: type[Call]) -> list[type[Call]]:
    """The calls themselves, under their bases (`ChatCall`, `HistoryCall` ...)."""
    subs = cls.__subclasses__()
    return [leaf for sub in subs for leaf in _leaves(sub)] if subs else [cls]


CALLS: dict[str, type[Call]] = {method_of(cls): cls for cls in _leaves(Call)}
"""Every call Lua can make, by method name."""


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
