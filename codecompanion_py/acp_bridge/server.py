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
prompt (`OneShot`). On end of input, SIGTERM, SIGINT or SIGHUP every native process group
is stopped before the bridge exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import logging
import os
import signal
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import __version__
from ..acp.jsonrpc import INTERNAL_ERROR, MAX_LINE, Connection
from ..errors import ConnectionClosed, NativeStartError, RpcError
from .contract import (
    ADAPTER_MANAGED,
    ONE_SHOT,
    BridgeAdapter,
    Error,
    Launch,
    Message,
    Messages,
    MessagesAndReply,
    MessagesAndWrite,
    NativeExited,
    Ok,
    OneShot,
    Partial,
    Pending,
    Reply,
    ReplyAndWrite,
    Skip,
    SkipAndWrite,
    Write,
    child_environment,
    error_response,
    overrides,
    response,
)
from .native import NativeProcess, to_bytes

log = logging.getLogger("codecompanion_py.acp_bridge")

PROTOCOL_VERSION = 1
SESSION_SETUP = frozenset({"session/new", "session/load", "session/resume", "session/fork"})
_OUTBOUND = (Write, Skip, Pending, Reply, Messages, MessagesAndReply, MessagesAndWrite, ReplyAndWrite, Error, OneShot)
_INBOUND = (Messages, MessagesAndWrite, SkipAndWrite, Partial, Skip)


# --- one-shot runs ------------------------------------------------------------------------


@dataclass(frozen=True)
class RunResult:
    code: int | None
    """The exit code; negative for a signal; None when it never started."""
    cancelled: bool
    description: str
    """"<name> exited with code N; its last output: ..." (or why it did not start)."""
    started: bool = True

    @property
    def ok(self) -> bool:
        return self.started and self.code == 0 and not self.cancelled


class OneShotContext:
    """What a `OneShot` function gets: run processes whose lines go through
    `translate_inbound`, read and replace the adapter's state, emit messages, cancel."""

    def __init__(self, bridge: Bridge, request_id: Any, method: str) -> None:
        self._bridge = bridge
        self.request_id = request_id
        self.method = method
        self.cancelled = False
        self.process: NativeProcess | None = None

    @property
    def state(self) -> Any:
        return self._bridge.state

    @state.setter
    def state(self, value: Any) -> None:
        self._bridge.state = value

    async def emit(self, messages: Iterable[Message]) -> None:
        await self._bridge.emit(list(messages))

    async def run(
        self, argv: Sequence[str], *, stdin: Any = None, cwd: str | None = None, keep_stdin: bool = False
    ) -> RunResult:
        """Start `argv`, write `stdin` (then close it unless `keep_stdin`), feed each output
        line to `translate_inbound`, and return once it has exited."""
        bridge = self._bridge
        if self.cancelled:
            return RunResult(None, True, f"{bridge.adapter.title} was cancelled before it started", started=False)
        try:
            proc = await NativeProcess.start(
                bridge.adapter.title,
                argv,
                cwd=cwd or bridge.cwd,
                env=bridge.child_env(),
                install_hint=bridge.adapter.install,
            )
        except NativeStartError as error:
            return RunResult(None, False, str(error), started=False)
        self.process = proc
        bridge.one_shots[proc] = None
        try:
            if stdin is not None:
                with contextlib.suppress(ConnectionError, OSError):
                    await proc.write(stdin)
            if not keep_stdin:
                proc.close_stdin()
            if self.cancelled:
                bridge.spawn(proc.stop())
            async for line in proc.lines():
                await bridge.inbound(line, proc)
            await proc.finished()
            if proc.returncode is None:  # closed its output but lingers
                await proc.stop()
        except asyncio.CancelledError:
            await proc.stop()
            raise
        finally:
            bridge.one_shots.pop(proc, None)
        return RunResult(proc.returncode, self.cancelled, proc.describe_exit())

    def cancel(self) -> None:
        """Stop the running process's group (now, without waiting)."""
        self.cancelled = True
        if self.process is not None and self.process.returncode is None:
            self._bridge.spawn(self.process.stop())


# --- adapter-managed processes ------------------------------------------------------------


@dataclass(frozen=True)
class ProcessOutput:
    process: ManagedProcess
    line: str


@dataclass(frozen=True)
class ProcessExited:
    process: ManagedProcess
    code: int | None
    description: str


class ManagedProcess:
    """A process an ADAPTER_MANAGED adapter owns. It starts in the background; writes made
    before it is up are kept and sent once it is. Its lines and its exit reach the adapter
    as ProcessOutput and ProcessExited through `handle_adapter_message`."""

    def __init__(self, bridge: Bridge, name: str, argv: Sequence[str], cwd: str, tag: Any) -> None:
        self._bridge = bridge
        self.name = name
        self.argv = list(argv)
        self.cwd = cwd
        self.tag = tag
        self.native: NativeProcess | None = None
        self._early: list[bytes] = []
        self._closed = False
        bridge.managed.add(self)
        bridge.spawn(self._run())

    @property
    def pgid(self) -> int | None:
        return self.native.pgid if self.native is not None else None

    def write(self, data: Any) -> None:
        payload = to_bytes(data)
        if self.native is None:
            self._early.append(payload)
            return
        stdin = self.native.proc.stdin
        if stdin is None or stdin.is_closing():
            log.warning("%s: write to a process whose input is closed", self.name)
            return
        stdin.write(payload)

    def stop(self) -> None:
        self._closed = True
        if self.native is not None:
            self._bridge.spawn(self.native.stop())

    async def _run(self) -> None:
        bridge = self._bridge
        try:
            self.native = await NativeProcess.start(
                self.name, self.argv, cwd=self.cwd, env=bridge.child_env(), install_hint=bridge.adapter.install
            )
        except NativeStartError as error:
            bridge.managed.discard(self)
            await bridge.adapter_message(ProcessExited(self, None, str(error)))
            return
        for payload in self._early:
            self.write(payload)
        self._early.clear()
        if self._closed:
            await self.native.stop()
        async for line in self.native.lines():
            await bridge.adapter_message(ProcessOutput(self, line))
        await self.native.finished()
        bridge.managed.discard(self)
        if not bridge.closing:
            await bridge.adapter_message(ProcessExited(self, self.native.returncode, self.native.describe_exit()))


class BridgeHandle:
    """The adapter's way back into the bridge (`adapter.bridge`)."""

    def __init__(self, bridge: Bridge) -> None:
        self._bridge = bridge
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def cwd(self) -> str:
        return self._bridge.cwd

    def start_process(
        self, argv: Sequence[str], *, name: str | None = None, cwd: str | None = None, tag: Any = None
    ) -> ManagedProcess:
        return ManagedProcess(self._bridge, name or self._bridge.adapter.title, argv, cwd or self._bridge.cwd, tag)

    def deliver(self, message: Any) -> None:
        """Hand `message` to `handle_adapter_message` (callable from any thread)."""
        loop = self._bridge.loop
        if loop is None:
            raise RuntimeError("the bridge is not running")
        loop.call_soon_threadsafe(self._bridge.spawn, self._bridge.adapter_message(message))


# --- the bridge ---------------------------------------------------------------------------


class Bridge:
    def __init__(
        self,
        adapter: BridgeAdapter,
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
        adapter.bridge = BridgeHandle(self)
        self.state = adapter.init(self.opts)
        launch = adapter.command(self.opts)
        if isinstance(launch, Launch):
            self.launch: Launch | None = launch
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

    def child_env(self) -> dict[str, str]:
        return child_environment(self.adapter, self.opts, self.base_env)

    # --- the client's messages --------------------------------------------------------

    async def _on_request(self, method: str, params: Any) -> Any:
        if method == "initialize":
            return self._initialize()
        if method == "session/list" and overrides(self.adapter, "list_sessions"):
            return self._sessions_call("list_sessions", method, params)
        if method == "session/fork" and overrides(self.adapter, "fork_session"):
            self._note_cwd(method, params)
            return self._sessions_call("fork_session", method, params)
        self._note_cwd(method, params)
        request_id = next(self._ids)
        message: Message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        try:
            result = self._outbound(message)
            return await self._answer(method, request_id, result, future)
        finally:
            self._waiting.pop(request_id, None)
            if future.done() and not future.cancelled():
                future.exception()  # retrieved, whoever set it

    async def _on_notification(self, method: str, params: Any) -> None:
        message: Message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        try:
            result = self._outbound(message)
        except RpcError as error:
            log.warning("%s: %s: %s", self.adapter.name, method, error.message)
            return
        await self._side_effects(result, method)

    def _initialize(self) -> dict[str, Any]:
        capabilities = copy.deepcopy(self.adapter.capabilities() or {})
        sessions = dict(capabilities.get("sessionCapabilities") or {})
        for key, callback in (("list", "list_sessions"), ("fork", "fork_session")):
            if overrides(self.adapter, callback):
                sessions[key] = {}
            else:
                sessions.pop(key, None)
        if sessions:
            capabilities["sessionCapabilities"] = sessions
        else:
            capabilities.pop("sessionCapabilities", None)
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": capabilities,
            "authMethods": list(self.adapter.auth_methods(self.opts) or []),
            "agentInfo": {"name": self.adapter.name, "title": self.adapter.title, "version": __version__},
        }

    def _sessions_call(self, callback: str, method: str, params: Any) -> Any:
        args = params if isinstance(params, dict) else {}
        try:
            result = getattr(self.adapter, callback)(args, self.state)
        except Exception as error:
            log.exception("%s: %s failed", self.adapter.name, callback)
            raise RpcError(INTERNAL_ERROR, f"{type(error).__name__}: {error}") from None
        if isinstance(result, Error):
            self.state = result.state
            raise RpcError(result.code, str(result.reason))
        if not isinstance(result, Ok):
            raise RpcError(INTERNAL_ERROR, f"{self.adapter.name}: {callback} returned {type(result).__name__}")
        self.state = result.state
        if method == "session/list":
            value = result.value
            return {"sessions": list(value)} if isinstance(value, (list, tuple)) else value
        return self._with_extras(method, result.value)

    def _note_cwd(self, method: str, params: Any) -> None:
        if method in SESSION_SETUP and isinstance(params, dict):
            cwd = params.get("cwd")
            if isinstance(cwd, str) and os.path.isabs(cwd) and os.path.isdir(cwd):
                self.cwd = cwd

    def _outbound(self, message: Message) -> Any:
        """translate_outbound, its state kept; its failures become RpcErrors."""
        try:
            result = self.adapter.translate_outbound(message, self.state)
        except Exception as error:
            log.exception("%s: translate_outbound failed on %s", self.adapter.name, message.get("method", "a response"))
            raise RpcError(INTERNAL_ERROR, f"{type(error).__name__}: {error}") from None
        if not isinstance(result, _OUTBOUND):
            raise RpcError(INTERNAL_ERROR, f"{self.adapter.name}: translate_outbound returned {type(result).__name__}")
        self.state = result.state
        return result

    async def _answer(self, method: str, request_id: int, result: Any, future: asyncio.Future[Any]) -> Any:
        if isinstance(result, Error):
            raise RpcError(result.code, str(result.reason))
        if isinstance(result, Skip):
            return self._with_extras(
                method, {"sessionId": f"session-{uuid.uuid4().hex}"} if method == "session/new" else {}
            )
        if isinstance(result, Reply):
            return self._with_extras(method, result.result)
        if isinstance(result, MessagesAndReply):
            await self.emit(result.messages)
            return self._with_extras(method, result.result)
        if isinstance(result, ReplyAndWrite):
            await self._write(result.data)
            return self._with_extras(method, result.result)
        if isinstance(result, OneShot):
            self._start_run(result.fn, request_id, method, future)
        elif isinstance(result, Messages):
            await self.emit(result.messages)
        elif isinstance(result, MessagesAndWrite):
            await self.emit(result.messages)
            await self._write(result.data)
        elif isinstance(result, Write):
            await self._write(result.data)
        return await future  # Pending, and everything answered by a message later

    async def _side_effects(self, result: Any, what: str) -> None:
        """A translated notification or answer: no reply to make, only its effects."""
        try:
            if isinstance(result, (Messages, MessagesAndReply, MessagesAndWrite)):
                await self.emit(result.messages)
            if isinstance(result, (Write, MessagesAndWrite, ReplyAndWrite)):
                await self._write(result.data)
            elif isinstance(result, OneShot):
                self._start_run(result.fn, None, what, None)
            elif isinstance(result, Error):
                log.warning("%s: %s: %s", self.adapter.name, what, result.reason)
        except RpcError as error:
            log.warning("%s: %s: %s", self.adapter.name, what, error.message)

    def _with_extras(self, method: str, result: Any) -> Any:
        """Session setup answers carry the adapter's modes and config options (its own
        values win); config answers carry the config options."""
        if not isinstance(result, dict):
            return result
        extras: dict[str, Any] = {}
        if method in SESSION_SETUP:
            modes = [m for m in self.adapter.modes() or [] if isinstance(m, dict)]
            if modes:
                extras["modes"] = {"currentModeId": modes[0].get("id"), "availableModes": modes}
        if method in SESSION_SETUP or method == "session/set_config_option":
            options = self.adapter.config_options() or []
            if options:
                extras["configOptions"] = list(options)
        return {**extras, **result}

    # --- emitting what the adapter produced -------------------------------------------

    async def emit(self, messages: Sequence[Message]) -> None:
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

    def _settle(self, message: Message) -> None:
        future = self._waiting.get(message["id"])
        if future is None or future.done():
            log.debug("%s: a response to no waiting request: id %r", self.adapter.name, message["id"])
            return
        error = message.get("error")
        if error is None:
            future.set_result(message.get("result"))
        elif isinstance(error, dict):
            code = error.get("code")
            future.set_exception(
                RpcError(
                    code if isinstance(code, int) else INTERNAL_ERROR,
                    str(error.get("message") or "error"),
                    error.get("data"),
                )
            )
        else:
            future.set_exception(RpcError(INTERNAL_ERROR, str(error)))

    async def _ask_client(self, adapter_id: Any, method: str, params: Any) -> None:
        try:
            answer: Message = response(adapter_id, await self.connection.request(method, params))
        except RpcError as error:
            answer = {"jsonrpc": "2.0", "id": adapter_id, "error": error.to_wire()}
        except ConnectionClosed as error:
            answer = error_response(adapter_id, str(error))
        if self.closing:
            return
        try:
            result = self._outbound(answer)
        except RpcError as error:
            log.warning("%s: the answer to %s: %s", self.adapter.name, method, error.message)
            return
        await self._side_effects(result, f"the answer to {method}")

    async def adapter_message(self, message: Any) -> None:
        try:
            result = self.adapter.handle_adapter_message(message, self.state)
        except Exception:
            log.exception("%s: handle_adapter_message failed", self.adapter.name)
            return
        if not isinstance(result, (Messages, Partial, Skip)):
            log.error("%s: handle_adapter_message returned %s", self.adapter.name, type(result).__name__)
            return
        self.state = result.state
        if isinstance(result, Messages):
            await self.emit(result.messages)

    # --- the native side --------------------------------------------------------------

    async def inbound(self, line: str, source: NativeProcess) -> None:
        """One line of native output through translate_inbound, its results applied."""
        try:
            result = self.adapter.translate_inbound(line, self.state)
        except Exception:
            log.exception("%s: translate_inbound failed on %.200r", self.adapter.name, line)
            return
        if not isinstance(result, _INBOUND):
            log.error("%s: translate_inbound returned %s", self.adapter.name, type(result).__name__)
            return
        self.state = result.state
        if isinstance(result, (Messages, MessagesAndWrite)):
            await self.emit(result.messages)
        if isinstance(result, (MessagesAndWrite, SkipAndWrite)):
            try:
                await source.write(result.data)
            except (ConnectionError, OSError) as error:
                log.warning("%s: could not write back: %s", self.adapter.name, error)

    async def _write(self, data: Any) -> None:
        if self.launch is ADAPTER_MANAGED:
            raise RpcError(
                INTERNAL_ERROR,
                f"{self.adapter.name}: an adapter-managed adapter writes to its own processes, not through Write",
            )
        if self.launch is ONE_SHOT:
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
                native = await NativeProcess.start(
                    self.adapter.title, self.argv, cwd=self.cwd, env=self.child_env(), install_hint=self.adapter.install
                )
            except NativeStartError as error:
                raise RpcError(INTERNAL_ERROR, str(error)) from None
            self.native = native
            self.spawn(self._read_native(native))
            try:
                result = self.adapter.post_connect(self.state)
            except Exception:
                log.exception("%s: post_connect failed", self.adapter.name)
                result = None
            if isinstance(result, (Write, Skip)):
                self.state = result.state
                if isinstance(result, Write):
                    with contextlib.suppress(ConnectionError, OSError):
                        await native.write(result.data)
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
        await self.adapter_message(NativeExited(native.returncode, reason))
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(RpcError(INTERNAL_ERROR, reason))

    def _start_run(self, fn: Any, request_id: Any, method: str, future: asyncio.Future[Any] | None) -> None:
        context = OneShotContext(self, request_id, method)

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


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("bridge task failed", exc_info=task.exception())


# --- stdio --------------------------------------------------------------------------------


class _BlockingWriter:
    """stdout that is a regular file: plain blocking writes."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


async def open_stdio() -> tuple[asyncio.StreamReader, Any]:
    """Our stdin and stdout as a stream pair. File descriptor 1 is pointed at stderr
    afterwards, so a stray print (ours or an adapter's) cannot corrupt the protocol."""
    loop = asyncio.get_running_loop()
    out_fd = os.dup(1)
    os.dup2(2, 1)
    reader = asyncio.StreamReader(limit=MAX_LINE)
    stdin = os.fdopen(os.dup(0), "rb", buffering=0)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    except ValueError:  # a regular file: read it in a thread

        def pump() -> None:
            with stdin:
                for chunk in iter(lambda: stdin.read(65536), b""):
                    loop.call_soon_threadsafe(reader.feed_data, chunk)
            loop.call_soon_threadsafe(reader.feed_eof)

        threading.Thread(target=pump, name="bridge-stdin", daemon=True).start()
    out = os.fdopen(out_fd, "wb", buffering=0)
    try:
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out)
    except ValueError:
        return reader, _BlockingWriter(out_fd)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


async def serve_stdio(adapter: BridgeAdapter, opts: Mapping[str, Any]) -> int:
    reader, writer = await open_stdio()
    return await Bridge(adapter, opts, reader, writer).serve()
