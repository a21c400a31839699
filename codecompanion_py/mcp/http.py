"""MCP's streamable HTTP transport: each message the client sends is a POST to the server's
one URL; the answer comes as a JSON body or as an SSE stream that may carry the server's own
requests and notifications before the reply. The `Mcp-Session-Id` the server gives at
initialization goes with every later request, with `MCP-Protocol-Version`.

Once initialized, `listen()` opens the GET stream a server may offer for what it sends on
its own (notifications such as tools/list_changed, its requests); when that stream drops it
is opened again with `Last-Event-ID`, so nothing sent in between is lost. A server that does
not offer it answers 405 and is not asked again.

`HttpConnection` offers what `acp.jsonrpc.Connection` offers over stdio (`request`,
`notify`, `close`), so a server is driven the same way over either transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import httpx

from ..acp.jsonrpc import PARSE_ERROR
from ..acp.jsonrpc import _decode as decode  # one JSON reading for both transports
from ..client import ERROR_BODY_LIMIT, html_title, read_at_most, where
from ..errors import ConnectionClosed, ResponseTooLarge, RpcError
from ..outbound import ClientSettings, http_client
from ..scrubber import clip, scrub_secrets, secrets_in, url_credentials
from ..stream.lines import size_text
from ..stream.sse import SSEDecoder
from .door import MAX_MESSAGE_BYTES

Handler = Callable[[str, Any], Awaitable[Any]]
END_TIMEOUT = 5.0  # seconds for the server to answer the end of its session: closing waits no longer
_NOT_YET = object()


class HttpConnection:
    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        *,
        on_request: Handler,
        on_notification: Handler,
        name: str,
        settings: ClientSettings,
    ) -> None:
        self.url = url
        self.headers = dict(headers)
        self.secrets = secrets_in(self.headers, url_credentials(url))  # none is ever shown
        self.name = name
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._on_request = on_request
        self._on_notification = on_notification
        self._ids = itertools.count(1)
        self._http = http_client(read_timeout=None, settings=settings)  # the user's proxy and TLS check
        self._closed: str | None = None
        self._listening: asyncio.Task[None] | None = None
        self.last_event_id: str | None = None

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def new_id(self) -> int:
        return next(self._ids)

    async def request(self, method: str, params: Any = None, *, request_id: int | None = None) -> Any:
        request_id = next(self._ids) if request_id is None else request_id
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params else {})}
        return await self._post(message, request_id)

    async def notify(self, method: str, params: Any = None) -> None:
        await self._post({"jsonrpc": "2.0", "method": method, **({"params": params} if params else {})}, None)

    def listen(self, retries: int = 5, pause: float = 1.0) -> None:
        """Open the server's own stream (GET), again after it drops, `retries` times in a row."""
        self._listening = asyncio.get_running_loop().create_task(self._listen(retries, pause))

    async def _listen(self, retries: int, pause: float) -> None:
        failures = 0
        while self._closed is None and failures <= retries:
            headers = {**self._headers(), "Accept": "text/event-stream"}
            if self.last_event_id is not None:
                headers["Last-Event-ID"] = self.last_event_id
            try:
                async with self._http.stream("GET", self.url, headers=headers) as response:
                    if response.status_code in (404, 405) or response.status_code >= 400:
                        return  # not offered (405), or not for this session
                    failures = 0
                    async for event_id, data in _sse_events(response):
                        if event_id is not None:
                            self.last_event_id = event_id
                        if data.strip():
                            await self._receive(decode(data), None)
            except (httpx.HTTPError, ValueError, RecursionError, ConnectionClosed, ResponseTooLarge):
                pass
            failures += 1
            await asyncio.sleep(pause)

    async def close(self) -> None:
        if self._listening is not None:
            self._listening.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listening
        if self._closed is None:
            self._closed = "closed"
            if self.session_id:  # the spec's way to end a session; a server may refuse it
                try:
                    await self._http.delete(self.url, headers=self._headers(), timeout=END_TIMEOUT)
                except httpx.HTTPError:
                    pass
            await self._http.aclose()

    def _headers(self) -> dict[str, str]:
        headers = {**self.headers, "Accept": "application/json, text/event-stream"}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    async def _post(self, message: Mapping[str, Any], want: Any) -> Any:
        if self._closed is not None:
            raise ConnectionClosed(f"{self.name}: {self._closed}")
        try:
            async with self._http.stream("POST", self.url, json=message, headers=self._headers()) as response:
                if response.status_code == 404 and self.session_id:
                    self._closed = "the server ended the session"
                    raise ConnectionClosed(f"{self.name}: the server ended the session (HTTP 404)")
                if response.status_code >= 400:
                    body = await read_at_most(response, ERROR_BODY_LIMIT)
                    text = scrub_secrets(
                        body.decode("utf-8", "replace"), self.secrets, cut=len(body) >= ERROR_BODY_LIMIT
                    )
                    detail = clip(html_title(text) or text.strip(), 300)
                    raise ConnectionClosed(f"{self.name}: HTTP {response.status_code} from {where(self.url)}: {detail}")
                session = response.headers.get("mcp-session-id")
                if session:
                    self.session_id = session
                if want is None:
                    return None
                if response.headers.get("content-type", "").startswith("text/event-stream"):
                    async for _event_id, data in _sse_events(response):
                        if not data.strip():  # a priming event (an id to resume from, no message)
                            continue
                        found = await self._receive(decode(data), want)
                        if found is not _NOT_YET:
                            return found
                else:
                    body = await read_at_most(response, MAX_MESSAGE_BYTES + 1)
                    if len(body) > MAX_MESSAGE_BYTES:
                        raise ResponseTooLarge(f"it is longer than {size_text(MAX_MESSAGE_BYTES)}")
                    body = decode(body)
                    for item in body if isinstance(body, list) else [body]:
                        found = await self._receive(item, want)
                        if found is not _NOT_YET:
                            return found
        except httpx.HTTPError as error:
            detail = scrub_secrets(f"{type(error).__name__}: {error}", self.secrets)
            raise ConnectionClosed(f"{self.name}: {detail} ({where(self.url)})") from None
        except ResponseTooLarge as error:
            raise RpcError(PARSE_ERROR, f"{self.name}: the server's answer was dropped: {error}") from None
        except RecursionError:  # msgspec's answer to nesting too deep
            raise RpcError(PARSE_ERROR, f"{self.name}: the server sent JSON nested too deep to read") from None
        except ValueError as error:
            raise RpcError(PARSE_ERROR, f"{self.name}: the server sent what is not JSON: {error}") from None
        raise ConnectionClosed(f"{self.name}: the server's answer ended without a reply to {message.get('method')}")

    async def _receive(self, message: Any, want: Any) -> Any:
        if not isinstance(message, Mapping):
            return _NOT_YET
        if "method" not in message:
            if message.get("id") == want:
                if "error" in message:
                    error = message["error"] if isinstance(message["error"], Mapping) else {}
                    raise RpcError(
                        int(error.get("code", -32603)), str(error.get("message", "error")), error.get("data")
                    )
                return message.get("result")
            return _NOT_YET
        if "id" in message:  # the server asks something (roots/list, ping): answered by a POST of its own
            try:
                result = await self._on_request(str(message["method"]), message.get("params"))
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            except RpcError as error:
                reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": error.code, "message": str(error)}}
            await self._post(reply, None)
        else:
            await self._on_notification(str(message["method"]), message.get("params"))
        return _NOT_YET


async def _sse_events(response: httpx.Response) -> AsyncIterator[tuple[str | None, bytes]]:
    """(last event id, data) of each server-sent event with data, each at most
    MAX_MESSAGE_BYTES (ResponseTooLarge past it)."""
    decoder = SSEDecoder(MAX_MESSAGE_BYTES)
    async for chunk in response.aiter_bytes():
        for event in decoder.feed(chunk):
            yield event.id, event.data
    for event in decoder.flush():
        yield event.id, event.data
