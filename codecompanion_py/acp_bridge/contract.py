"""The adapter contract: what a native CLI agent must tell the bridge so it speaks ACP.

A `BridgeAdapter` translates, the bridge (`server.py`) does everything else: it serves ACP
on stdio, answers `initialize` from the adapter's static answers, starts and stops the
native process and moves lines both ways. Callbacks are plain synchronous functions that
take the adapter's state and return a `Reaction`: the new state, and the messages to emit,
the reply to the request, the data to write and the run to start, each when given. The
bridge keeps that state and hands it to the next callback.

Required:
    init(opts) -> state
    command(opts) -> argv list | ONE_SHOT | ADAPTER_MANAGED
    translate_outbound(message, state) -> Reaction      any part; a reply only for a request
    translate_inbound(line, state) -> Reaction          messages, write (to the line's process)

Optional (defaults in brackets):
    capabilities() [{}]                   agentCapabilities for initialize
    auth_methods(opts) [[]]               authMethods for initialize
    modes() [[]]                          added to session setup answers as `modes`
    config_options() [[]]                 added to session setup and config answers
    env(opts) [{}]                        the child's extra environment (see below)
    post_connect(state) [Reaction(state)]  runs right after the native process started,
                                          before the write that needed it; write to send a handshake
    handle_adapter_message(msg, state)    output and exits of ADAPTER_MANAGED processes, and
                                          NativeExited when the persistent process dies:
                                          messages [Reaction(state)]
    shutdown(state) [state]               the bridge is closing
    list_sessions(params, state)          Reaction with reply sessions | Failure; advertised only when overridden
    fork_session(params, state)           Reaction with reply result | Failure; advertised only when overridden

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
    """No persistent process: the adapter answers a prompt with a Reaction whose `run`
    runs one process per prompt through its `OneShotContext`."""
    ADAPTER_MANAGED = "adapter_managed"
    """The adapter starts its own processes (`self.bridge.start_process`), whose lines
    and exits reach it through `handle_adapter_message`."""


ONE_SHOT = Launch.ONE_SHOT
ADAPTER_MANAGED = Launch.ADAPTER_MANAGED

Data = Union[bytes, str, Sequence[Union[bytes, str]]]


# --- what a callback returns ------------------------------------------------------------


class Later(enum.Enum):
    LATER = "later"


LATER = Later.LATER
"""`Reaction.reply` for a request answered afterwards: by a response message the adapter
emits with the request's id, from any callback, or by the reaction's `run`."""


@dataclass(frozen=True)
class Failure:
    """`Reaction.reply` for a request that cannot be honoured: the client gets a JSON-RPC
    error. Anywhere else it is only logged."""

    reason: Any
    code: int = INTERNAL_ERROR


@dataclass(frozen=True)
class Reaction:
    """What a callback returns: the adapter's new `state` and what the bridge does for it,
    in this order: emit `messages`, write `write`, start `run`, then answer the request
    with `reply`. `Reaction(state)` does nothing; a line kept for later (part of something
    longer) is just that.

    `messages`: ACP messages to emit (notifications, responses, requests to the client).
    `write`: data for the native process (started first if need be): the persistent one,
        for a line from translate_inbound the process it came from, for a ONE_SHOT adapter
        the newest running one.
    `run`: `await run(context)` (one native process per prompt, see OneShotContext). When
        it answers the request (reply LATER) and returns with the request still
        unanswered, the bridge answers it with an error.
    `reply`, for a client's request: None for the bridge's own answer (`{}`; session/new: a
        fresh session id), a result, a `Failure`, or LATER; session setup and config
        answers get the adapter's modes and config options. list_sessions and
        fork_session reply with their result or a Failure. Elsewhere there is no request
        to answer: reply stays None (a Failure is logged for a client's notification or
        answer).

    Not every callback takes every part (see the module's docstring); a reaction with a
    part its callback cannot take is logged and dropped, its state with it."""

    state: Any
    messages: Sequence[Message] = ()
    reply: Any = None
    write: Data | None = None
    run: Callable[[OneShotContext], Awaitable[Any]] | None = None

    def parts(self) -> frozenset[str]:
        """The names of the parts given, beside state."""
        given = {"messages": bool(self.messages), "reply": self.reply is not None}
        given |= {"write": self.write is not None, "run": self.run is not None}
        return frozenset(name for name, present in given.items() if present)


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
    """What a Reaction's `run` gets: run processes whose lines go through
    `translate_inbound`, read and replace the adapter's state, emit messages, cancel."""

    request_id: Any
    """The bridge's id of the request the run answers (reply LATER); None when it answers
    none (a notification, a client's answer, or a request already replied to)."""
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

    def translate_outbound(self, message: Message, state: Any) -> Reaction:
        raise NotImplementedError

    def translate_inbound(self, line: str, state: Any) -> Reaction:
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

    def post_connect(self, state: Any) -> Reaction:
        return Reaction(state)

    def handle_adapter_message(self, message: Any, state: Any) -> Reaction:
        return Reaction(state)

    def shutdown(self, state: Any) -> Any:
        return state

    def list_sessions(self, params: dict[str, Any], state: Any) -> Reaction:
        return Reaction(state, reply=Failure("session/list is not supported", METHOD_NOT_FOUND))

    def fork_session(self, params: dict[str, Any], state: Any) -> Reaction:
        return Reaction(state, reply=Failure("session/fork is not supported", METHOD_NOT_FOUND))


def overrides(adapter: BridgeAdapter, method: str) -> bool:
    """Whether the adapter's class implements `method` itself (not the default)."""
    return getattr(type(adapter), method, None) is not getattr(BridgeAdapter, method)
