"""JSON-RPC 2.0 over newline-delimited JSON, both directions at once, as ACP uses it.

One `Connection` serves either side: the chat talking to an agent, or the bridge talking
to a client. Requests from the peer run as their own tasks, so a slow one (an approval
the user is thinking about) never stops the reading. Real agents are loose, so this is
lenient where it costs nothing: ids may be `0` or strings (answered with the id exactly
as sent), unknown fields are kept, bytes that are not UTF-8 become U+FFFD, and a line
that is not a JSON-RPC object is logged and skipped. Notifications are handled in order,
inline, so a reply never overtakes the updates sent before it. When the peer goes away
every outstanding request fails with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import msgspec

from ..errors import CodeCompanionError, ConnectionClosed, RpcError
from ..logfile import TRACE, loggable

log = logging.getLogger("codecompanion_py.acp")

MAX_LINE = 64 * 1024 * 1024
"""The longest line read (a file's whole text can travel in one message)."""
MAX_SERVING = 64
"""The peer's requests answered at once; past it, reading waits until one is answered."""

PROTOCOL_VERSION = 1
"""The ACP version spoken: by the client to agents, by the bridge to clients."""

# JSON-RPC error codes, and ACP's own.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002
REQUEST_CANCELLED = -32800

Handler = Callable[[str, Any], Awaitable[Any]]

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()


def _decode(line: bytes) -> Any:
    """One line as JSON. Bytes that are not UTF-8 in it (msgspec raises UnicodeDecodeError
    for them) are read as U+FFFD, as in the HTTP streams: one bad byte in a message is no
    reason to lose the message, nor, escaping the reader, the whole connection."""
    try:
        return _decoder.decode(line)
    except UnicodeDecodeError:
        return _decoder.decode(line.decode("utf-8", "replace").encode())


# --- messages -------------------------------------------------------------------------------

Message = dict[str, Any]


def request(request_id: Any, method: str, params: Any = None) -> Message:
    """A request; `params` left out when None."""
    return {"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params is not None else {})}


def notification(method: str, params: Any = None) -> Message:
    """A notification; `params` left out when None."""
    return {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}


def response(request_id: Any, result: Any) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: Any, message: str, code: int = INTERNAL_ERROR, data: Any = None) -> Message:
    return rpc_error_response(request_id, RpcError(code, message, data))


def rpc_error_response(request_id: Any, error: RpcError) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_wire()}


def settle(future: asyncio.Future[Any], answer: Mapping[str, Any]) -> None:
    """Resolve `future` with a response: its result, or an RpcError made from its error
    (whatever shape the peer gave that error)."""
    error = answer.get("error")
    if error is None:
        future.set_result(answer.get("result"))
    elif isinstance(error, Mapping):
        code = error.get("code")
        message = str(error.get("message") or "error")
        future.set_exception(RpcError(code if isinstance(code, int) else INTERNAL_ERROR, message, error.get("data")))
    else:
        future.set_exception(RpcError(INTERNAL_ERROR, str(error)))


# --- the connection -------------------------------------------------------------------------


class Connection:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: Any,
        *,
        on_request: Handler,
        on_notification: Handler,
        name: str = "peer",
    ) -> None:
        self._reader = reader
        self._writer = writer  # asyncio.StreamWriter or anything with write()/drain()/close()
        self._on_request = on_request
        self._on_notification = on_notification
        self.name = name
        self._ids = itertools.count(1)
        self._pending: dict[Any, asyncio.Future[Any]] = {}
        self._on_answer: dict[Any, Callable[[], None]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._reading: asyncio.Task[None] | None = None
        self._closed_reason: str | None = None
        self.last_activity = 0.0
        self.serving = 0  # requests from the peer being answered right now
        self._slots = asyncio.Semaphore(MAX_SERVING)  # a peer that never reads its answers waits too

    def start(self) -> None:
        self.last_activity = asyncio.get_running_loop().time()
        self._reading = asyncio.get_running_loop().create_task(self._read_loop())

    @property
    def closed(self) -> bool:
        return self._closed_reason is not None

    async def wait_closed(self) -> None:
        if self._reading is not None:
            await asyncio.shield(self._reading)

    # --- sending ----------------------------------------------------------------------

    def new_id(self) -> int:
        """An id for a request the caller must be able to name later (to cancel it)."""
        return next(self._ids)

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        on_answer: Callable[[], None] | None = None,
        request_id: int | None = None,
    ) -> Any:
        """Send a request and wait for its answer; RpcError when the peer answers with one.
        `on_answer` runs the moment the answer is read, before any line after it."""
        if self._closed_reason is not None:
            raise ConnectionClosed(self._closed_reason)
        request_id = next(self._ids) if request_id is None else request_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        if on_answer is not None:
            self._on_answer[request_id] = on_answer
        try:
            await self._send(request(request_id, method, params))
            return await future
        finally:
            self._pending.pop(request_id, None)
            self._on_answer.pop(request_id, None)

    async def notify(self, method: str, params: Any = None) -> None:
        if self._closed_reason is None:
            await self._send(notification(method, params))

    async def _send(self, message: Mapping[str, Any]) -> None:
        data = _encoder.encode(message)
        if log.isEnabledFor(logging.DEBUG):  # what is asked of an agent or a server; what comes back is TRACE
            log.debug("%s <- %s", self.name, loggable(_encoder.encode(_without_server_secrets(message))))
        try:
            self._writer.write(data + b"\n")
            await self._writer.drain()
        except (BrokenPipeError, ConnectionResetError, RuntimeError) as error:
            self._close(f"{self.name} stopped reading: {error}")
            raise ConnectionClosed(self._closed_reason or "closed") from None

    # --- receiving --------------------------------------------------------------------

    async def _read_loop(self) -> None:
        reason = f"{self.name} closed the connection"
        try:
            while True:
                try:
                    line = await self._reader.readline()
                except ValueError:  # longer than the reader's limit: dropped, reading goes on
                    log.warning("%s: skipped a line longer than the limit", self.name)
                    continue
                if not line:
                    break
                self.last_activity = asyncio.get_running_loop().time()
                if line.strip():
                    await self._receive(line)
        except (ConnectionError, OSError) as error:
            reason = f"{self.name}: {error}"
        finally:
            self._close(reason)

    async def _receive(self, line: bytes) -> None:
        if log.isEnabledFor(TRACE):
            log.log(TRACE, "%s -> %s", self.name, loggable(line.rstrip()))
        try:
            message = _decode(line)
        except (msgspec.DecodeError, RecursionError):  # msgspec's answer to nesting too deep
            log.warning("%s: skipped a line that is not JSON: %.200r", self.name, line)
            return
        if not isinstance(message, dict):
            log.warning("%s: skipped a JSON line that is not an object: %.200r", self.name, line)
            return
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message and message["id"] is not None:
                await self._slots.acquire()  # released when it is answered
                self._spawn(self._answer(message["id"], method, message.get("params")))
            else:  # in order, before anything read after it (a reply must not overtake updates)
                await self._notified(method, message.get("params"))
        elif "id" in message:
            self._settle(message)
        else:
            log.warning("%s: skipped a message with neither method nor id: %.200r", self.name, line)

    def _settle(self, message: dict[str, Any]) -> None:
        raw = message["id"]
        key = int(raw) if isinstance(raw, str) and raw.isdigit() else raw  # our int id echoed as a string
        future = self._pending.get(key)
        if future is None or future.done():
            log.debug("%s: an answer to no request we are waiting for: id %r", self.name, raw)
            return
        on_answer = self._on_answer.pop(key, None)
        if on_answer is not None:
            on_answer()
        settle(future, message)

    def _spawn(self, coroutine: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, request_id: Any, method: str, params: Any) -> None:
        self.serving += 1
        try:
            try:
                reply = response(request_id, await self._on_request(method, params))
            except RpcError as error:
                reply = rpc_error_response(request_id, error)
            except asyncio.CancelledError:
                reply = error_response(request_id, "request cancelled", REQUEST_CANCELLED)
            except CodeCompanionError as error:
                reply = error_response(request_id, str(error))
            except Exception as error:  # a bug of ours: the peer gets an answer, the log the trace
                log.exception("%s: %s failed", self.name, method)
                reply = error_response(request_id, f"{type(error).__name__}: {error}")
        finally:
            self.serving -= 1
            self.last_activity = asyncio.get_running_loop().time()
        try:
            with contextlib.suppress(ConnectionClosed):
                await self._send(reply)
        finally:
            self._slots.release()

    async def _notified(self, method: str, params: Any) -> None:
        try:
            await self._on_notification(method, params)
        except Exception:
            log.exception("%s: notification %s failed", self.name, method)

    def _close(self, reason: str) -> None:
        if self._closed_reason is not None:
            return
        self._closed_reason = reason
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionClosed(reason))
        self._pending.clear()

    async def close(self) -> None:
        """Stop reading and answering; outstanding requests fail."""
        self._close(f"{self.name}: connection closed")
        if self._reading is not None:
            self._reading.cancel()
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            self._writer.close()


def params_of(params: Any) -> dict[str, Any]:
    """A request's params as a dict; anything else is the peer's mistake."""
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "params must be an object")
    return params


def _without_server_secrets(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """`message` as the log may hold it: the MCP servers handed to an agent (`session/new`,
    `session/load`) carry their variables' and headers' values, passwords of any shape."""
    params = message.get("params")
    servers = params.get("mcpServers") if isinstance(params, Mapping) else None
    if not isinstance(params, Mapping) or not isinstance(servers, list):
        return message

    def masked(server: Any) -> Any:
        if not isinstance(server, Mapping):
            return server
        pairs = {key: server[key] for key in ("env", "headers") if isinstance(server.get(key), list)}
        return {
            **server,
            **{key: [{**p, "value": "***"} if isinstance(p, Mapping) else p for p in v] for key, v in pairs.items()},
        }

    return {**message, "params": {**params, "mcpServers": [masked(server) for server in servers]}}
