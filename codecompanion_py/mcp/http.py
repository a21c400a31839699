"""MCP's streamable HTTP transport: each message the client sends is a POST to the server's
one URL; the answer comes as a JSON body or as an SSE stream that may carry the server's own
requests and notifications before the reply. The `Mcp-Session-Id` the server gives at
initialization goes with every later request, with `MCP-Protocol-Version`.

`HttpConnection` offers what `acp.jsonrpc.Connection` offers over stdio (`request`,
`notify`, `close`), so a server is driven the same way over either transport.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx

from ..errors import ConnectionClosed, RpcError

Handler = Callable[[str, Any], Awaitable[Any]]
_NOT_YET = object()


class HttpConnection:
    def __init__(
        self, url: str, headers: Mapping[str, str], *, on_request: Handler, on_notification: Handler, name: str
    ) -> None:
        self.url = url
        self.headers = dict(headers)
        self.name = name
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._on_request = on_request
        self._on_notification = on_notification
        self._ids = itertools.count(1)
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None))
        self._closed: str | None = None

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

    async def close(self) -> None:
        if self._closed is None:
            self._closed = "closed"
            if self.session_id:  # the spec's way to end a session; a server may refuse it
                try:
                    await self._http.delete(self.url, headers=self._headers())
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
                    body = (await response.aread()).decode(errors="replace")[:300]
                    raise ConnectionClosed(f"{self.name}: HTTP {response.status_code} from {self.url}: {body}")
                session = response.headers.get("mcp-session-id")
                if session:
                    self.session_id = session
                if want is None:
                    return None
                if response.headers.get("content-type", "").startswith("text/event-stream"):
                    async for data in _sse_data(response):
                        if not data.strip():  # a priming event (an id to resume from, no message)
                            continue
                        found = await self._receive(json.loads(data), want)
                        if found is not _NOT_YET:
                            return found
                else:
                    body = json.loads(await response.aread())
                    for item in body if isinstance(body, list) else [body]:
                        found = await self._receive(item, want)
                        if found is not _NOT_YET:
                            return found
        except httpx.HTTPError as error:
            raise ConnectionClosed(f"{self.name}: {type(error).__name__}: {error} ({self.url})") from None
        except ValueError as error:
            raise ConnectionClosed(f"{self.name}: the server sent what is not JSON: {error}") from None
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


async def _sse_data(response: httpx.Response) -> Any:
    """The `data` of each server-sent event."""
    data: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
    if data:
        yield "\n".join(data)
