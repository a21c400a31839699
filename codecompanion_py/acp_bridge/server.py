"""The bridge: ACP on our own stdin/stdout, a native CLI agent behind it.

`initialize` is answered here from the adapter's static answers; session/list and
session/fork go to the adapter's `list_sessions`/`fork_session` when it has them; every
other client message goes through `translate_outbound`, with a bridge-made id (the
client's own id stays with the JSON-RPC layer, which answers it). What the adapter emits
is sent on: notifications as they are, responses to the waiting request, and requests
(session/request_permission) to the client, whose answers go back through
`translate_outbound` as responses.

The native process is started at the first write it is needed for (in the cwd of the
last session set up), in its own process group; each stdout line goes to
`translate_inbound`, stderr to the log. When it dies, the requests waiting on it fail
with its exit status and the end of its stderr, and it is not restarted: the bridge
answers later requests with the same error. One-shot adapters run a process per
prompt (a Reaction's `run`). On end of input, SIGTERM, SIGINT or SIGHUP every native
process group is stopped before the bridge exits.

Around it: `answers.py` (what it answers from the adapter's static answers),
`one_shot.py` (a Reaction's run), `managed.py` (ADAPTER_MANAGED processes and the
adapter's handle), `native.py` (a native process), `stdio.py` (serving on our own stdin and
stdout). What the adapter returns is a `Reaction` (`contract.py`), read part by part.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ..acp.jsonrpc import (
    INTERNAL_ERROR,
    Connection,
    error_response,
    notification,
    request,
    response,
    rpc_error_response,
    settle,
)
from ..errors import ConnectionClosed, NativeStartError, RpcError
from . import answers, contract
from .environment import child_environment
from .managed import AdapterHandle, ManagedProcess
from .native import NativeProcess
from .one_shot import OneShotRun

log = logging.getLogger("codecompanion_py.acp_bridge")


class Bridge:
    """One adapter served to one ACP client: the adapter's state, its native processes,
    and the client's requests waiting on what the adapter emits."""

    def __init__(
        self,
        adapter: contract.BridgeAdapter,
        opts: Mapping[str, Any],
        reader: asyncio.StreamReader,
        writer: Any,
        *,
        base_env: Mapping[str, str] | None = None,
    ) -> None:
        self.adapter = adapter
        self.opts = dict(opts)
        self.base_env = dict(os.environ if base_env is None else base_env)
        self.cwd = os.getcwd()
        self.loop: asyncio.AbstractEventLoop | None = None
        adapter.bridge = AdapterHandle(self)
        self.state = adapter.init(self.opts)
        launch = adapter.command(self.opts)
        if isinstance(launch, contract.Launch):
            self.launch: contract.Launch | None = launch
            self.argv: list[str] = []
        else:
            self.launch = None
            self.argv = [str(part) for part in launch]
        self.connection = Connection(
            reader, writer, on_request=self._on_request, on_notification=self._on_notification, name="the ACP client"
        )
        self.native: NativeProcess | None = None
        self.native_gone: str | None = None
        self.one_shots: dict[NativeProcess, None] = {}  # insertion-ordered: the newest last
        self.managed: set[ManagedProcess] = set()
        self.closing = False
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._runs: set[asyncio.Task[Any]] = set()
        self._start_lock = asyncio.Lock()

    # --- lifecycle --------------------------------------------------------------------

    async def serve(self, *, handle_signals: bool = True) -> int:
        """Serve until the client closes its end or a signal asks us to stop."""
        self.loop = asyncio.get_running_loop()
        self.connection.start()
        stop = asyncio.Event()
        signals = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP) if handle_signals else ()
        for sig in signals:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                self.loop.add_signal_handler(sig, stop.set)
        closed = asyncio.ensure_future(self.connection.wait_closed())
        stopped = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait([closed, stopped], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (closed, stopped):
                task.cancel()
            await self.close()
            for sig in signals:
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    self.loop.remove_signal_handler(sig)
        return 0

    async def close(self) -> None:
        if self.closing:
            return
        self.closing = True
        for task in list(self._runs):
            task.cancel()
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(RpcError(INTERNAL_ERROR, "the bridge is closing"))
        processes = [p for p in (self.native, *self.one_shots, *(m.native for m in self.managed)) if p is not None]
        await asyncio.gather(*(p.stop() for p in processes), return_exceptions=True)
        if self._runs:
            await asyncio.wait(list(self._runs), timeout=1.0)
        try:
            self.state = self.adapter.shutdown(self.state)
        except Exception:
            log.exception("%s: shutdown failed", self.adapter.name)
        await self.connection.close()
        for task in list(self._tasks):
            task.cancel()

    def spawn(self, coroutine: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(_log_failure)
        return task

    async def start_native(
        self, argv: Sequence[str], *, name: str | None = None, cwd: str | None = None
    ) -> NativeProcess:
        """Start a native process of the adapter's (NativeStartError when it cannot)."""
        return await NativeProcess.start(
            name or self.adapter.title,
            argv,
            cwd=cwd or self.cwd,
            env=child_environment(self.adapter, self.opts, self.base_env),
            install_hint=self.adapter.install,
        )

    # --- the client's messages --------------------------------------------------------

    async def _on_request(self, method: str, params: Any) -> Any:
        if method == "initialize":
            return answers.initialize(self.adapter, self.opts)
        if method == "session/list" and contract.overrides(self.adapter, "list_sessions"):
            return self._sessions_call("list_sessions", method, params)
        if method == "session/fork" and contract.overrides(self.adapter, "fork_session"):
            self._note_cwd(method, params)
            return self._sessions_call("fork_session", method, params)
        self._note_cwd(method, params)
        request_id = next(self._ids)
        message = request(request_id, method, params)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        try:
            outcome = self._outbound(message)
            return await self._answer(method, request_id, outcome, future)
        finally:
            self._waiting.pop(request_id, None)
            if future.done() and not future.cancelled():
                future.exception()  # retrieved, whoever set it

    async def _on_notification(self, method: str, params: Any) -> None:
        try:
            outcome = self._outbound(notification(method, params))
        except RpcError as error:
            log.warning("%s: %s: %s", self.adapter.name, method, error.message)
            return
        await self._side_effects(outcome, method)

    def _sessions_call(self, callback: str, method: str, params: Any) -> Any:
        args = params if isinstance(params, dict) else {}
        try:
            outcome = getattr(self.adapter, callback)(args, self.state)
        except Exception as error:
            log.exception("%s: %s failed", self.adapter.name, callback)
            raise RpcError(INTERNAL_ERROR, f"{type(error).__name__}: {error}") from None
        unfit = _unfit(outcome, frozenset({"reply"}))
        if unfit is None and (outcome.reply is None or outcome.reply is contract.LATER):
            unfit = "an outcome without a reply"
        if unfit is not None:
            raise RpcError(INTERNAL_ERROR, f"{self.adapter.name}: {callback} returned {unfit}")
        self.state = outcome.state
        value = outcome.reply
        if isinstance(value, contract.Failure):
            raise RpcError(value.code, str(value.reason))
        if method == "session/list":
            return {"sessions": list(value)} if isinstance(value, (list, tuple)) else value
        return answers.with_extras(self.adapter, method, value)

    def _note_cwd(self, method: str, params: Any) -> None:
        if method in answers.SESSION_SETUP and isinstance(params, dict):
            cwd = params.get("cwd")
            if isinstance(cwd, str) and os.path.isabs(cwd) and os.path.isdir(cwd):
                self.cwd = cwd

    def _outbound(self, message: contract.Message) -> contract.Reaction:
        """translate_outbound, its state kept; its failures become RpcErrors."""
        try:
            outcome = self.adapter.translate_outbound(message, self.state)
        except Exception as error:
            log.exception("%s: translate_outbound failed on %s", self.adapter.name, message.get("method", "a response"))
            raise RpcError(INTERNAL_ERROR, f"{type(error).__name__}: {error}") from None
        if not isinstance(outcome, contract.Reaction):
            raise RpcError(INTERNAL_ERROR, f"{self.adapter.name}: translate_outbound returned {type(outcome).__name__}")
        self.state = outcome.state
        return outcome

    async def _answer(
        self, method: str, request_id: int, outcome: contract.Reaction, future: asyncio.Future[Any]
    ) -> Any:
        """A client's request: the outcome's messages, write and run, then its reply."""
        later = outcome.reply is contract.LATER
        await self.emit(outcome.messages)
        if outcome.write is not None:
            await self._write(outcome.write)
        if outcome.run is not None:
            self._start_run(outcome.run, request_id if later else None, method, future if later else None)
        if later:
            return await future  # answered by a response message, or by the run
        if isinstance(outcome.reply, contract.Failure):
            raise RpcError(outcome.reply.code, str(outcome.reply.reason))
        result = outcome.reply
        if result is None:  # the bridge's own answer
            result = {"sessionId": f"session-{uuid.uuid4().hex}"} if method == "session/new" else {}
        return answers.with_extras(self.adapter, method, result)

    async def _side_effects(self, outcome: contract.Reaction, what: str) -> None:
        """A translated notification or answer: no reply to make, only its effects."""
        try:
            await self.emit(outcome.messages)
            if outcome.write is not None:
                await self._write(outcome.write)
            if outcome.run is not None:
                self._start_run(outcome.run, None, what, None)
            if isinstance(outcome.reply, contract.Failure):
                log.warning("%s: %s: %s", self.adapter.name, what, outcome.reply.reason)
        except RpcError as error:
            log.warning("%s: %s: %s", self.adapter.name, what, error.message)

    # --- emitting what the adapter produced -------------------------------------------

    async def emit(self, messages: Sequence[contract.Message]) -> None:
        for message in messages:
            if not isinstance(message, dict):
                log.warning("%s: emitted something that is not a message: %.200r", self.adapter.name, message)
                continue
            method = message.get("method")
            if isinstance(method, str):
                if message.get("id") is not None:
                    self.spawn(self._ask_client(message["id"], method, message.get("params")))
                else:
                    with contextlib.suppress(ConnectionClosed):
                        await self.connection.notify(method, message.get("params"))
            elif "id" in message:
                self._settle(message)
            else:
                log.warning("%s: emitted a message with neither method nor id: %.200r", self.adapter.name, message)

    def _settle(self, message: contract.Message) -> None:
        future = self._waiting.get(message["id"])
        if future is None or future.done():
            log.debug("%s: a response to no waiting request: id %r", self.adapter.name, message["id"])
            return
        settle(future, message)

    async def _ask_client(self, adapter_id: Any, method: str, params: Any) -> None:
        try:
            answer: contract.Message = response(adapter_id, await self.connection.request(method, params))
        except RpcError as error:
            answer = rpc_error_response(adapter_id, error)
        except ConnectionClosed as error:
            answer = error_response(adapter_id, str(error))
        if self.closing:
            return
        try:
            outcome = self._outbound(answer)
        except RpcError as error:
            log.warning("%s: the answer to %s: %s", self.adapter.name, method, error.message)
            return
        await self._side_effects(outcome, f"the answer to {method}")

    async def adapter_message(self, message: Any) -> None:
        try:
            outcome = self.adapter.handle_adapter_message(message, self.state)
        except Exception:
            log.exception("%s: handle_adapter_message failed", self.adapter.name)
            return
        if self._kept(outcome, "handle_adapter_message", frozenset({"messages"})):
            await self.emit(outcome.messages)

    def _kept(self, outcome: Any, callback: str, takes: frozenset[str]) -> bool:
        """Whether a callback's outcome is usable where no request waits on it (its state is
        then kept); an unusable one is logged and dropped."""
        unfit = _unfit(outcome, takes)
        if unfit is not None:
            log.error("%s: %s returned %s", self.adapter.name, callback, unfit)
            return False
        self.state = outcome.state
        return True

    # --- the native side --------------------------------------------------------------

    async def inbound(self, line: str, source: NativeProcess) -> None:
        """One line of native output through translate_inbound, its results applied."""
        try:
            outcome = self.adapter.translate_inbound(line, self.state)
        except Exception:
            log.exception("%s: translate_inbound failed on %.200r", self.adapter.name, line)
            return
        if not self._kept(outcome, "translate_inbound", frozenset({"messages", "write"})):
            return
        await self.emit(outcome.messages)
        if outcome.write is not None:
            try:
                await source.write(outcome.write)
            except (ConnectionError, OSError) as error:
                log.warning("%s: could not write back: %s", self.adapter.name, error)

    async def _write(self, data: Any) -> None:
        if self.launch is contract.ADAPTER_MANAGED:
            raise RpcError(
                INTERNAL_ERROR,
                f"{self.adapter.name}: an adapter-managed adapter writes to its processes itself (no Reaction.write)",
            )
        if self.launch is contract.ONE_SHOT:
            running = [p for p in self.one_shots if p.returncode is None]
            if not running:
                log.warning("%s: nothing is running to write to", self.adapter.name)
                return
            target = running[-1]
        else:
            target = await self._ensure_native()
        try:
            await target.write(data)
        except (ConnectionError, OSError):
            await target.finished(timeout=1.0)
            raise RpcError(INTERNAL_ERROR, target.describe_exit()) from None

    async def _ensure_native(self) -> NativeProcess:
        async with self._start_lock:
            if self.native is not None:
                if self.native_gone is None and self.native.returncode is None:
                    return self.native
                raise RpcError(INTERNAL_ERROR, self.native_gone or self.native.describe_exit())
            if self.closing:
                raise RpcError(INTERNAL_ERROR, "the bridge is closing")
            try:
                native = await self.start_native(self.argv)
            except NativeStartError as error:
                raise RpcError(INTERNAL_ERROR, str(error)) from None
            self.native = native
            self.spawn(self._read_native(native))
            try:
                outcome = self.adapter.post_connect(self.state)
            except Exception:
                log.exception("%s: post_connect failed", self.adapter.name)
                return native
            if self._kept(outcome, "post_connect", frozenset({"write"})) and outcome.write is not None:
                with contextlib.suppress(ConnectionError, OSError):
                    await native.write(outcome.write)
            return native

    async def _read_native(self, native: NativeProcess) -> None:
        async for line in native.lines():
            await self.inbound(line, native)
        await native.finished()
        if native.stopping or self.closing:
            return
        reason = native.describe_exit()
        self.native_gone = reason
        log.warning("%s", reason)
        await self.adapter_message(contract.NativeExited(native.returncode, reason))
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(RpcError(INTERNAL_ERROR, reason))

    def _start_run(
        self,
        fn: Callable[[contract.OneShotContext], Awaitable[Any]],
        request_id: Any,
        method: str,
        future: asyncio.Future[Any] | None,
    ) -> None:
        context = OneShotRun(self, request_id, method)

        async def run() -> None:
            try:
                await fn(context)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.exception("%s: the one-shot run for %s failed", self.adapter.name, method)
                if future is not None and not future.done():
                    future.set_exception(RpcError(INTERNAL_ERROR, f"{type(error).__name__}: {error}"))
            finally:
                if future is not None and not future.done():
                    future.set_exception(
                        RpcError(INTERNAL_ERROR, f"{self.adapter.title} ended without answering {method}")
                    )

        task = self.spawn(run())
        self._runs.add(task)
        task.add_done_callback(self._runs.discard)


def _unfit(outcome: Any, takes: frozenset[str]) -> str | None:
    """Why `outcome` does not fit a callback that takes only the parts `takes` (None: it does)."""
    if not isinstance(outcome, contract.Reaction):
        return type(outcome).__name__
    extra = sorted(outcome.parts() - takes)
    return f"an outcome with {' and '.join(extra)}, which it cannot have" if extra else None


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("bridge task failed", exc_info=task.exception())
