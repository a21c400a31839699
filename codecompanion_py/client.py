"""The HTTP client: one httpx.AsyncClient, streaming, timeouts, and errors mapped at one boundary.

Cancelling the task that reads a stream closes the response, and with it the connection,
at once. HTTP error statuses become `HTTPStatusError`s carrying the provider's own message;
connection failures and timeouts become `TransportError`s.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import msgspec

from .errors import AuthenticationError, HTTPStatusError, RateLimitError, RequestTimeout, TransportError

DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_READ_TIMEOUT = 120.0


@dataclass
class HttpRequest:
    url: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    method: str = "POST"
    stream: bool = True
    provider: str = ""
    auth_hint: str | None = None  # e.g. "OPENAI_API_KEY"; named in 401/403 messages, never its value

    def __repr__(self) -> str:  # headers hold credentials
        return f"HttpRequest({self.method} {self.url}, stream={self.stream})"


class HttpClient:
    def __init__(self, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                 read_timeout: float = DEFAULT_READ_TIMEOUT,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.read_timeout = read_timeout
        self._timeout = httpx.Timeout(read_timeout, connect=connect_timeout)
        self._transport = transport
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self._timeout, transport=self._transport)
        return self._client

    @asynccontextmanager
    async def open(self, request: HttpRequest) -> AsyncIterator[httpx.Response]:
        """The response with a success status, body not yet read."""
        try:
            async with self._http().stream(request.method, request.url, content=request.body,
                                           headers=request.headers) as response:
                if response.status_code >= 400:
                    body = await response.aread()
                    raise error_for_status(response.status_code, body, request)
                yield response
        except httpx.HTTPError as exc:
            raise self.map_error(request, exc) from None

    def map_error(self, request: HttpRequest, exc: httpx.HTTPError) -> TransportError:
        if isinstance(exc, httpx.TimeoutException):
            return RequestTimeout(_timeout_message(request, exc, self.read_timeout))
        return TransportError(f"{request.provider or 'request'}: {_describe(exc)}")

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _describe(exc: httpx.HTTPError) -> str:
    if isinstance(exc, httpx.ConnectError):
        url = exc.request.url if exc.request else None
        where = f"{url.scheme}://{url.host}:{url.port or ''}" if url else "the server"
        return f"cannot connect to {where} ({exc})"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _timeout_message(request: HttpRequest, exc: httpx.TimeoutException, read_timeout: float) -> str:
    provider = request.provider or "request"
    if isinstance(exc, httpx.ConnectTimeout):
        return f"{provider}: timed out connecting to {httpx.URL(request.url).host}"
    return f"{provider}: no data from the server for {read_timeout:g}s"


def provider_message(body: bytes) -> str:
    """The human part of an error body: `error.message`, `message`, `error`, or the text."""
    try:
        data: Any = msgspec.json.decode(body)
    except msgspec.DecodeError:
        text = body.decode(errors="replace").strip()
        return text[:300] or "(empty response)"
    if isinstance(data, list) and data:
        data = data[0]
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
        for key in ("message", "detail"):
            if data.get(key):
                return str(data[key])
    return body.decode(errors="replace")[:300]


def error_for_status(status: int, body: bytes, request: HttpRequest) -> HTTPStatusError:
    provider = request.provider or "provider"
    detail = provider_message(body)
    if status in (401, 403):
        hint = f"; check {request.auth_hint}" if request.auth_hint else ""
        word = "rejected the API key" if status == 401 else "refused access"
        return AuthenticationError(f"{provider} {word} (HTTP {status}): {detail}{hint}",
                                   status=status, provider=provider)
    if status == 429:
        return RateLimitError(f"{provider}: rate limited (HTTP 429): {detail}", status=status, provider=provider)
    label = {400: "bad request", 404: "not found", 413: "request too large"}.get(status)
    if label is None and status >= 500:
        label = "server error"
    prefix = f"{provider}: {label} (HTTP {status})" if label else f"{provider}: HTTP {status}"
    return HTTPStatusError(f"{prefix}: {detail}", status=status, provider=provider)
