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

What the bridge hands back to an adapter is typed here as Protocols (`BridgeHandle`,
`OneShotContext`, `AdapterProcess`), so this module depends on no other part of the
bridge; `one_shot.py` and `managed.py` implement them. Message builders are in
`messages.py`, the child's environment and command line in `environment.py`.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Union

from ..acp.jsonrpc import INTERNAL_ERROR, METHOD_NOT_FOUND, Message


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
    """The answer will come later: a response message the adapter emits with the request's
    id, from any callback."""

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
    """Emit `messages`, then answer the request with `result` (updates that must reach the
    client before the answer, such as a session's available commands)."""

    messages: Sequence[Message]
    result: Any
    state: Any


@dataclass(frozen=True)
class MessagesAndWrite:
    """Emit `messages`, then write `data` to the native process."""

    messages: Sequence[Message]
    data: Data
    state: Any


@dataclass(frozen=True)
class ReplyAndWrite:
    """Answer the request with `result` now and write `data` to the native process (a
    mode change the CLI takes on its input while the client goes on)."""

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
    """The line was kept for later (a part of something longer); nothing complete yet."""

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


# --- what the bridge hands the adapter ------------------------------------------------------


class AdapterProcess(Protocol):
    """A process an ADAPTER_MANAGED adapter started (`BridgeHandle.start_process`)."""

    name: str
    tag: Any
    """Whatever the adapter passed to start_process: which of its sessions this is."""

    @property
    def pgid(self) -> int | None: ...

    def write(self, data: Data) -> None:
        """Write now, or once the process is up."""

    def stop(self) -> None:
        """Stop its process group (now, without waiting)."""


@dataclass(frozen=True)
class ProcessOutput:
    """A line an AdapterProcess printed, for `handle_adapter_message`."""

    process: AdapterProcess
    line: str


@dataclass(frozen=True)
class ProcessExited:
    """An AdapterProcess ended (or never started: code None), for `handle_adapter_message`."""

    process: AdapterProcess
    code: int | None
    description: str


class BridgeHandle(Protocol):
    """The adapter's way back into the bridge (`adapter.bridge`)."""

    @property
    def cwd(self) -> str: ...

    def start_process(
        self, argv: Sequence[str], *, name: str | None = None, cwd: str | None = None, tag: Any = None
    ) -> AdapterProcess: ...

    def deliver(self, message: Any) -> None:
        """Hand `message` to `handle_adapter_message` (callable from any thread)."""


@dataclass(frozen=True)
class RunResult:
    """How a `OneShotContext.run` ended."""

    code: int | None
    """The exit code; negative for a signal; None when it never started."""
    cancelled: bool
    description: str
    """"<name> exited with code N; its last output: ..." (or why it did not start)."""
    started: bool = True

    @property
    def ok(self) -> bool:
        return self.started and self.code == 0 and not self.cancelled


class OneShotContext(Protocol):
    """What a `OneShot` function gets: run processes whose lines go through
    `translate_inbound`, read and replace the adapter's state, emit messages, cancel."""

    request_id: Any
    """The bridge's id of the request answered with OneShot (None for a notification)."""
    method: str
    cancelled: bool
    state: Any

    async def emit(self, messages: Iterable[Message]) -> None: ...

    async def run(
        self, argv: Sequence[str], *, stdin: Any = None, cwd: str | None = None, keep_stdin: bool = False
    ) -> RunResult:
        """Start `argv`, write `stdin` (then close it unless `keep_stdin`), feed each output
        line to `translate_inbound`, and return once it has exited."""
        ...

    def cancel(self) -> None:
        """Stop the running process's group (now, without waiting)."""


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
