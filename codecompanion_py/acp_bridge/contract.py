"""The adapter contract: what a native CLI agent must tell the bridge so it speaks ACP.

A `BridgeAdapter` translates, the bridge (`server.py`) does everything else: it serves ACP
on stdio, answers `initialize` from the adapter's static answers, starts and stops the
native process and moves lines both ways. Callbacks are plain synchronous functions that
take the adapter's state and return one of the small frozen results below, each carrying
the new state; the bridge keeps that state and hands it to the next callback.

Required:
    init(opts) -> state
    command(opts) -> argv list | ONE_SHOT | ADAPTER_MANAGED
    translate_outbound(message, state) -> Write | Skip | Pending | Reply | Messages |
        MessagesAndReply | MessagesAndWrite | ReplyAndWrite | Error | OneShot
    translate_inbound(line, state) -> Messages | MessagesAndWrite | SkipAndWrite | Partial | Skip

Optional (defaults in brackets):
    capabilities() [{}]                   agentCapabilities for initialize
    auth_methods(opts) [[]]               authMethods for initialize
    modes() [[]]                          added to session setup answers as `modes`
    config_options() [[]]                 added to session setup and config answers
    env(opts) [{}]                        the child's extra environment (see below)
    post_connect(state) [Skip]            runs right after the native process started,
                                          before the write that needed it; Write to send a handshake
    handle_adapter_message(msg, state)    output and exits of ADAPTER_MANAGED processes, and
                                          NativeExited when the persistent process dies [Skip]
    shutdown(state) [state]               the bridge is closing
    list_sessions(params, state)          Ok(sessions) | Error; advertised only when overridden
    fork_session(params, state)           Ok(result) | Error; advertised only when overridden

Messages are ACP JSON-RPC objects (dicts). The id of a client request the adapter sees
is the bridge's own (unique for the bridge's life); a response the adapter emits with
that id answers the request, whenever it is emitted. A request the adapter emits (it has
a `method` and an `id` of the adapter's choosing, such as `session/request_permission`)
goes to the client, and the client's answer comes back through `translate_outbound` as a
response message with that same id.

Data written to the native process is bytes or str (or a list of them); nothing is added,
so line-based CLIs need their own newline.

The child's environment is the bridge's, less `SESSION_SECRETS` (variables through which a
running Claude Code or Codex session marks or authorises its own children), then
`env(opts)`, then `opts["env"]`; a value of None unsets a name. User API keys
(ANTHROPIC_API_KEY, OPENAI_API_KEY, CODEX_API_KEY, CLAUDE_CODE_OAUTH_TOKEN) and config dirs
(CODEX_HOME, CLAUDE_CONFIG_DIR) are kept: the native CLI needs them to log in.
"""

from __future__ import annotations

import enum
import shlex
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from ..acp.jsonrpc import INTERNAL_ERROR, METHOD_NOT_FOUND

if TYPE_CHECKING:
    from .server import BridgeHandle, OneShotContext


class Launch(enum.Enum):
    ONE_SHOT = "one_shot"
    """No persistent process: the adapter answers a prompt with `OneShot(fn)`, and `fn`
    runs one process per prompt through its `OneShotContext`."""
    ADAPTER_MANAGED = "adapter_managed"
    """The adapter starts its own processes (`self.bridge.start_process`), whose lines
    and exits reach it through `handle_adapter_message`."""


ONE_SHOT = Launch.ONE_SHOT
ADAPTER_MANAGED = Launch.ADAPTER_MANAGED

Data = Union[bytes, str, Sequence[Union[bytes, str]]]
Message = dict[str, Any]


# --- results (state last, always) ---------------------------------------------------------


@dataclass(frozen=True)
class Write:
    """Write `data` to the native process (started first if need be)."""

    data: Data
    state: Any


@dataclass(frozen=True)
class Skip:
    """Nothing to send. A request answered with Skip gets `{}` (session/new: a fresh
    session id), plus modes and config options where those belong."""

    state: Any


@dataclass(frozen=True)
class Pending:
    """The answer will come later, as a response message the adapter emits."""

    state: Any


@dataclass(frozen=True)
class Reply:
    """The request's result, now."""

    result: Any
    state: Any


@dataclass(frozen=True)
class Messages:
    """ACP messages to emit (notifications, responses, requests to the client)."""

    messages: Sequence[Message]
    state: Any


@dataclass(frozen=True)
class MessagesAndReply:
    messages: Sequence[Message]
    result: Any
    state: Any


@dataclass(frozen=True)
class MessagesAndWrite:
    messages: Sequence[Message]
    data: Data
    state: Any


@dataclass(frozen=True)
class ReplyAndWrite:
    result: Any
    data: Data
    state: Any


@dataclass(frozen=True)
class Error:
    """The request cannot be honoured: the client gets a JSON-RPC error."""

    reason: Any
    state: Any
    code: int = INTERNAL_ERROR


@dataclass(frozen=True)
class OneShot:
    """Run `await fn(context)` for this request (one native process per prompt). If the
    request is still unanswered when `fn` returns, the bridge answers it with an error."""

    fn: Callable[[OneShotContext], Awaitable[Any]]
    state: Any


@dataclass(frozen=True)
class SkipAndWrite:
    """No ACP messages, but write `data` back to the native process (a control reply)."""

    data: Data
    state: Any


@dataclass(frozen=True)
class Partial:
    """The line was kept for later; nothing complete yet."""

    state: Any


@dataclass(frozen=True)
class Ok:
    """list_sessions / fork_session succeeded with `value`."""

    value: Any
    state: Any


Outbound = Union[
    Write, Skip, Pending, Reply, Messages, MessagesAndReply, MessagesAndWrite, ReplyAndWrite, Error, OneShot
]
Inbound = Union[Messages, MessagesAndWrite, SkipAndWrite, Partial, Skip]


@dataclass(frozen=True)
class NativeExited:
    """Given to `handle_adapter_message` when the persistent native process has died (not
    when the bridge stopped it). Requests still waiting afterwards fail with `description`."""

    code: int | None
    description: str


# --- secrets kept from children -----------------------------------------------------------

SESSION_SECRETS: frozenset[str] = frozenset(
    {
        # A running Claude Code marks its children (a nested `claude` refuses to start or
        # attaches to the parent's IDE and session) and passes session credentials to them.
        "CLAUDECODE",
        "CLAUDE_CODE_ENTRYPOINT",
        "CLAUDE_CODE_SSE_PORT",
        "CLAUDE_CODE_SESSION_ID",
        "CLAUDE_SESSION_ID",
        "CLAUDE_CODE_CHILD_SESSION",
        "CLAUDE_CODE_EXECPATH",
        "CLAUDE_CODE_SESSION_KIND",
        "CLAUDE_CODE_SESSION_ACCESS_TOKEN",
        "CLAUDE_SESSION_INGRESS_TOKEN_FILE",
        "CLAUDE_CODE_WEBSOCKET_AUTH_FILE_DESCRIPTOR",
        "CLAUDE_CODE_OAUTH_TOKEN_FILE_DESCRIPTOR",
        "CLAUDE_CODE_API_KEY_FILE_DESCRIPTOR",
        "CLAUDE_CODE_MESSAGING_SOCKET",
        "CLAUDE_CODE_MESSAGING_TOKEN",
        # A running Codex marks the commands it runs (sandbox flags, its thread).
        "CODEX_SANDBOX",
        "CODEX_SANDBOX_NETWORK_DISABLED",
        "CODEX_THREAD_ID",
        "CODEX_SESSION_ID",
        "CODEX_CI",
    }
)


# --- the base class -----------------------------------------------------------------------


class BridgeAdapter:
    """Subclass and implement the four required methods; see the module's docstring."""

    name: str = "bridge"
    title: str = "Bridged agent"
    install: str = ""
    """A hint shown when the native command is not found."""

    bridge: BridgeHandle | None = None
    """Set by the bridge before `init`: starts adapter-managed processes."""

    # required

    def init(self, opts: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    def command(self, opts: Mapping[str, Any]) -> list[str] | Launch:
        raise NotImplementedError

    def translate_outbound(self, message: Message, state: Any) -> Outbound:
        raise NotImplementedError

    def translate_inbound(self, line: str, state: Any) -> Inbound:
        raise NotImplementedError

    # optional

    def capabilities(self) -> dict[str, Any]:
        return {}

    def auth_methods(self, opts: Mapping[str, Any]) -> list[dict[str, Any]]:
        return []

    def modes(self) -> list[dict[str, Any]]:
        return []

    def config_options(self) -> list[dict[str, Any]]:
        return []

    def env(self, opts: Mapping[str, Any]) -> Mapping[str, str | None]:
        return {}

    def post_connect(self, state: Any) -> Write | Skip:
        return Skip(state)

    def handle_adapter_message(self, message: Any, state: Any) -> Messages | Partial | Skip:
        return Skip(state)

    def shutdown(self, state: Any) -> Any:
        return state

    def list_sessions(self, params: dict[str, Any], state: Any) -> Ok | Error:
        return Error("session/list is not supported", state, METHOD_NOT_FOUND)

    def fork_session(self, params: dict[str, Any], state: Any) -> Ok | Error:
        return Error("session/fork is not supported", state, METHOD_NOT_FOUND)


def overrides(adapter: BridgeAdapter, method: str) -> bool:
    """Whether the adapter's class implements `method` itself (not the default)."""
    return getattr(type(adapter), method, None) is not getattr(BridgeAdapter, method)


def child_environment(adapter: BridgeAdapter, opts: Mapping[str, Any], base: Mapping[str, str]) -> dict[str, str]:
    """The native process's environment: `base` less SESSION_SECRETS, then the adapter's
    `env(opts)`, then `opts["env"]` (explicit options win); None unsets a name."""
    env = {name: value for name, value in base.items() if name not in SESSION_SECRETS}
    extra = opts.get("env")
    for layer in (adapter.env(opts) or {}, extra if isinstance(extra, Mapping) else {}):
        for name, value in layer.items():
            if value is None:
                env.pop(str(name), None)
            else:
                env[str(name)] = str(value)
    return env


def executable_argv(opts: Mapping[str, Any], default: str) -> list[str]:
    """`opts["executable"]` (an argv list, or a command string split like a shell would)
    as the start of a command line; `[default]` without it."""
    value = opts.get("executable")
    if isinstance(value, (list, tuple)) and value:
        return [str(part) for part in value]
    if isinstance(value, str) and value.strip():
        return shlex.split(value)
    return [default]


# --- message builders for adapters --------------------------------------------------------


def response(request_id: Any, result: Any) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: Any, message: str, code: int = INTERNAL_ERROR, data: Any = None) -> Message:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def request(request_id: Any, method: str, params: Any) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def notification(method: str, params: Any) -> Message:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def session_update(session_id: str, update: str, /, **fields: Any) -> Message:
    """A session/update notification; `fields` are the update's own (kind, title, ...)."""
    return notification("session/update", {"sessionId": session_id, "update": {"sessionUpdate": update, **fields}})


def text_chunk(session_id: str, text: str, kind: str = "agent_message_chunk") -> Message:
    return session_update(session_id, kind, content={"type": "text", "text": text})


def is_response(message: Any, request_id: Any = None) -> bool:
    """A response message (to `request_id`, when given)."""
    return (
        isinstance(message, dict)
        and "method" not in message
        and "id" in message
        and (request_id is None or message["id"] == request_id)
    )


def json_object(value: Any) -> Mapping[str, Any]:
    """`value` when it is a JSON object, else an empty one: for the fields of messages
    whose shape nobody promised."""
    return value if isinstance(value, dict) else {}


def outcome_of(message: Message) -> dict[str, Any]:
    """The `outcome` of the client's answer to session/request_permission; an error or
    anything malformed counts as cancelled."""
    result = message.get("result")
    outcome = result.get("outcome") if isinstance(result, dict) else None
    return outcome if isinstance(outcome, dict) else {"outcome": "cancelled"}


def prompt_text(blocks: Any, *, embed_resources: bool = True) -> str:
    """An ACP prompt as plain text: text blocks as they are, links as `@uri`, embedded
    text resources wrapped in a <context> element."""
    parts: list[str] = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "resource_link":
            parts.append("@" + str(block.get("uri", "")))
        elif kind == "resource" and isinstance(block.get("resource"), dict):
            resource = block["resource"]
            uri = str(resource.get("uri", ""))
            if embed_resources and isinstance(resource.get("text"), str):
                parts.append(f'<context ref="{uri}">\n{resource["text"]}\n</context>')
            else:
                parts.append("@" + uri)
    return "\n".join(parts)
