"""Every operation the engine sends to the chat buffer's Lua side, defined once.

An op is a frozen msgspec Struct tagged by `op`; `encode` turns a batch into the plain
tables `require("codecompanion_py.chat").apply(chat_id, ops)` receives, and
`lua/codecompanion_py/chat/render.lua` has one renderer per tag (the tests check
that the two lists agree, and Lua reports an op it does not know).

Absent values are absent: every optional field defaults to None or empty and is left
out of the encoded table (`omit_defaults`), so Lua sees `nil`, never `vim.NIL`. Free-form
autocmd data (`Fire.data`) is cleaned the same way by `fire()`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Union, get_args

import msgspec

from ..events import PlanEntry, ToolLocation, ToolProgress
from ..messages import nests_within

LUA_DEPTH = 24
"""How deep a batch may nest when it reaches Lua. Neovim closes a channel whose message
nests past 32 levels (the RPC frame takes 4), so anything deeper, always model data (tool
arguments, an agent's raw input), goes as its JSON text from this level down."""


class _Op(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", omit_defaults=True):
    pass


# --- values carried by ops ------------------------------------------------------------


class AdapterInfo(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Which backend a chat talks to, as the chat header and `User` events show it."""

    name: str
    formatted_name: str
    model: str | None = None
    """None when the backend has not said (an agent before its session starts)."""
    type: Literal["http", "acp"] = "http"
    vision: bool = True
    """Whether it reads images (an adapter's `opts.vision`): `/image` is offered only then."""


_request_ids = itertools.count(1)


def request_info(adapter: AdapterInfo, interaction: Literal["chat", "inline", "cmd"]) -> dict[str, Any]:
    """The data of CodeCompanion's RequestStarted, RequestStreaming and RequestFinished events
    (Finished adds `status`), the `id` unique among every chat, inline and cmd request."""
    return {"id": next(_request_ids), "adapter": adapter, "interaction": interaction}


class OptionValue(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    value: Any
    name: str


class AgentOption(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A setting an agent offers (mode, model, reasoning level...) and its choices."""

    id: str
    name: str
    current: Any = None
    values: tuple[OptionValue, ...] = ()


class AgentCommand(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    name: str
    description: str = ""


class AgentSession(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    id: str
    title: str
    updated: str | None = None


# --- the ops ---------------------------------------------------------------------------


class Ready(_Op, tag="ready", frozen=True):
    """The engine has the chat; `adapter` is what it talks to now (sent again on a change)."""

    adapter: AdapterInfo
    saved_id: str | None = None
    """The saved chat it writes to: a new engine (after a crash) reopens the chat from it."""


class Begin(_Op, tag="begin", frozen=True):
    """A reply starts: the `## CodeCompanion (...)` header, or a gap when `continued` (the
    LLM goes on after tool results within the same reply)."""

    adapter: AdapterInfo
    continued: bool = False


class Text(_Op, tag="text", frozen=True):
    """Reply text to append; consecutive ones are merged before they are sent."""

    text: str


class Reasoning(_Op, tag="reasoning", frozen=True):
    """Reasoning text to append under `### Reasoning`; merged like `Text`."""

    text: str


class Show(_Op, tag="show", frozen=True):
    """A block of text (fenced unless it is fenced already), under `title` if given."""

    text: str
    title: str | None = None


class Pending(_Op, tag="pending", frozen=True):
    """One line of what the reply waits for (a retry), in place of the last; without `text`
    the reply has started and the line goes."""

    text: str | None = None


class ShowToolCall(_Op, tag="tool_call", frozen=True):
    """A tool call of the LLM, shown as one line with its arguments."""

    id: str
    name: str
    arguments: dict[str, Any] | None = None


class ToolOutput(_Op, tag="tool_output", frozen=True):
    """What one of our tool calls produced, under a `**Tool** name status` line."""

    id: str
    name: str
    status: str
    text: str = ""


class AgentTool(_Op, tag="agent_tool", frozen=True):
    """An agent's tool call: one block updated in place, found again by `id`."""

    id: str
    title: str
    status: ToolProgress = "pending"
    locations: tuple[ToolLocation, ...] = ()


class Plan(_Op, tag="plan", frozen=True):
    """The agent's plan as a checklist, updated in place."""

    entries: tuple[PlanEntry, ...] = ()


class Call(_Op, tag="call", frozen=True):
    """A question to the editor (approval, buffer access, a Lua tool); Lua answers with an
    `editor.reply` notification carrying `id`."""

    id: int
    method: str
    args: dict[str, Any] = {}


class Fire(_Op, tag="fire", frozen=True):
    """`User CodeCompanion<event>` with `data` (Lua adds `bufnr`). Build it with `fire()`."""

    event: str
    data: dict[str, Any] = {}


class Placement(_Op, tag="placement", frozen=True):
    """Inline: where the code that follows goes (replace, add, before, new or chat)."""

    placement: str


class Error(_Op, tag="error", frozen=True):
    """An error to notify; it unlocks the chat when no reply had started."""

    message: str


class FollowUp(_Op, tag="follow_up", frozen=True):
    """What the user sent with `gm` while the reply streamed, given to the LLM now: shown as
    their message before the reply goes on."""

    text: str


class Done(_Op, tag="done", frozen=True):
    """The turn is over: `status` is success, error, stopped or empty; the buffer unlocks."""

    status: Literal["success", "error", "stopped", "empty"]
    tokens: int | None = None
    message: str | None = None


class ChooseModel(_Op, tag="choose_model", frozen=True):
    """Offer `models` of `adapter`; the choice comes back as `chat.set_adapter`."""

    adapter: str
    models: tuple[str, ...] = ()


class ChooseOption(_Op, tag="choose_option", frozen=True):
    """Offer an agent's options; the choice comes back as `chat.set_option`."""

    options: tuple[AgentOption, ...] = ()


class ChooseSession(_Op, tag="choose_session", frozen=True):
    """Offer an agent's earlier sessions; the choice comes back as `chat.resume`."""

    sessions: tuple[AgentSession, ...] = ()


class Commands(_Op, tag="commands", frozen=True):
    """The agent's slash commands, for completion after `\\` in the chat."""

    commands: tuple[AgentCommand, ...] = ()


class SettingEntry(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One line of the settings header: a schema key and its value now (None: unset)."""

    key: str
    value: Any = None


class Settings(_Op, tag="settings", frozen=True):
    """The adapter's schema parameters for the YAML header at the top of the chat
    (shown when `display.chat.show_settings` is on); no entries removes the header."""

    entries: tuple[SettingEntry, ...] = ()


class Cleared(_Op, tag="cleared", frozen=True):
    """The conversation is gone (`gx`): the buffer becomes a fresh chat."""


class Rewind(_Op, tag="rewind", frozen=True):
    """`gr`: the last reply leaves the buffer, which locks for the new one that follows."""


class RestoredFile(msgspec.Struct, frozen=True):
    path: str
    relative: str
    action: Literal["restored", "removed", "kept"]  # kept: the user chose their own version


class Rewound(_Op, tag="rewound", frozen=True):
    """`gz`: the chat went back to before the turn sent under its `header`th `## Me`. With
    `conversation`, the buffer loses that message and all after it (the message comes back as
    the draft); `files` were put back (open buffers reload), and the chat says so."""

    header: int
    conversation: bool
    files: tuple[RestoredFile, ...] = ()


class Suggestions(_Op, tag="suggestions", frozen=True):
    """Edit predictions for the completion request `id` (sent as chat id "completion"):
    cleaned candidates to show as ghost text, none after an `error` (which :checkhealth
    tells; the editor stays quiet)."""

    id: int
    items: list[str] = []
    error: str | None = None


class Debug(_Op, tag="debug", frozen=True):
    """`gd`: what the engine holds for this chat, as Markdown for a read-only window (`gS`:
    the Copilot account's usage, under its `title`)."""

    text: str
    title: str | None = None


Op = Union[
    Placement,
    Ready,
    Begin,
    Text,
    Reasoning,
    ShowToolCall,
    ToolOutput,
    AgentTool,
    Plan,
    Show,
    Pending,
    Call,
    Fire,
    Error,
    FollowUp,
    Done,
    ChooseModel,
    ChooseOption,
    ChooseSession,
    Commands,
    Settings,
    Cleared,
    Rewind,
    Rewound,
    Debug,
    Suggestions,
]

OP_NAMES: tuple[str, ...] = tuple(str(kind.__struct_config__.tag) for kind in get_args(Op))


def fire(event: str, data: Mapping[str, Any] | None = None) -> Fire:
    """A `Fire` op whose data has no None values (absent keys read as nil in Lua)."""
    return Fire(event=event, data=_without_none(data or {}))


def _without_none(data: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: _without_none(value) if isinstance(value, Mapping) else value
        for key, value in data.items()
        if value is not None
    }


def encode(ops: Sequence[Op]) -> list[Any]:
    """The batch as Lua receives it: plain tables, absent fields left out, nested no deeper
    than `LUA_DEPTH`."""
    return for_lua(msgspec.to_builtins(ops))  # type: ignore[no-any-return]  # to_builtins is typed Any


def for_lua(value: Any) -> Any:
    """`value` as Neovim's channel can carry it: nested no deeper than `LUA_DEPTH` (below
    that, its tables go as JSON text) and its integers within msgpack's 64 bits (wider ones,
    a model's 2**70, go as their decimal text: one would fail the whole batch)."""
    return value if _fits(value) else _cut(value, LUA_DEPTH)


def _fits(value: Any) -> bool:
    """Whether `value` nests at most `LUA_DEPTH` levels and has no integer msgpack refuses
    (this runs for every batch)."""
    return nests_within(value, LUA_DEPTH, kinds=(dict, list), leaf=_int_fits, leaf_kinds=(int,))


def _int_fits(value: int) -> bool:
    return _INT_MIN <= value <= _INT_MAX


_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def _cut(value: Any, levels: int) -> Any:
    """`value` with its lists and tables below `levels` levels turned into JSON text, and its
    integers past 64 bits into decimal text."""
    if isinstance(value, int) and not isinstance(value, bool) and not _INT_MIN <= value <= _INT_MAX:
        return str(value)
    if not isinstance(value, (dict, list)):
        return value
    if levels <= 1:
        try:
            return msgspec.json.encode(value).decode()
        except RecursionError:
            return "(nested too deep to show)"
    if isinstance(value, dict):
        return {key: _cut(item, levels - 1) for key, item in value.items()}
    return [_cut(item, levels - 1) for item in value]
