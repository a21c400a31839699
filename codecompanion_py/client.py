"""The HTTP client: one httpx.AsyncClient, streaming, timeouts, and errors mapped at one boundary.

Cancelling the task that reads a stream closes the response, and with it the connection,
at once. HTTP error statuses become `HTTPStatusError`s carrying the provider's own message;
connection failures and timeouts become `TransportError`s.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import msgspec

from .errors import AdapterError, AuthenticationError, HTTPStatusError, RateLimitError, RequestTimeout, TransportError

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
    # What to check when the key is refused, e.g. "the OPENAI_API_KEY environment variable";
    # named in 401/403 messages, never the key's value.
    auth_hint: str | None = None
    model: str | None = None  # named in 404 messages
    # Seconds without data before giving up, for this request only (a token exchange that
    # should not wait as long as a reasoning model's stream); None: the client's.
    read_timeout: float | None = None

    def __repr__(self) -> str:  # headers hold credentials
        return f"HttpRequest({self.method} {self.url}, stream={self.stream})"


class HttpClient:
    def __init__(
        self,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
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
            async with self._http().stream(
                request.method,
                request.url,
                content=request.body,
                headers=request.headers,
                timeout=self._timeout_for(request),
            ) as response:
                if response.status_code >= 400:
                    body = await response.aread()
                    raise error_for_status(response.status_code, body, request, headers=response.headers)
                yield response
        except httpx.HTTPError as exc:
            raise self.map_error(request, exc) from None

    async def fetch_json(self, request: HttpRequest) -> Any:
        """The decoded body of a plain (not streamed) request whose answer is JSON: a token
        exchange, a models list. Error statuses, connection failures, timeouts and
        cancellation behave as with `open()`; a body that is not JSON raises AdapterError."""
        async with self.open(request) as response:
            body = await response.aread()
        try:
            return msgspec.json.decode(body)
        except msgspec.DecodeError:
            raise AdapterError(f"{request.provider or 'request'}: the answer is not JSON") from None

    def _timeout_for(self, request: HttpRequest) -> httpx.Timeout:
        if request.read_timeout is None:
            return self._timeout
        return httpx.Timeout(request.read_timeout, connect=self._timeout.connect)

    def map_error(self, request: HttpRequest, exc: httpx.HTTPError) -> TransportError:
        if isinstance(exc, httpx.TimeoutException):
            read_timeout = self.read_timeout if request.read_timeout is None else request.read_timeout
            return RequestTimeout(_timeout_message(request, exc, read_timeout))
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
    """The human part of an error body: `error.message`, `message`, `error`, `detail`
    (FastAPI-style validation lists as `field: problem`), with OpenRouter's upstream
    `metadata.raw` and Google's `ErrorInfo.reason` and `RetryInfo.retryDelay` appended;
    HTML pages as their title; else the text."""
    try:
        data: Any = msgspec.json.decode(body)
    except msgspec.DecodeError:
        text = body.decode(errors="replace").strip()
        return _html_title(text) or text[:300] or "(empty response)"
    if isinstance(data, list) and data:
        data = data[0]
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and error.get("message"):
            return _readable(error["message"]) + _error_extras(error)
        if isinstance(error, str) and error:
            return error
        for key in ("message", "detail"):
            if data.get(key):
                return _readable(data[key])
        if isinstance(error, dict) and (error.get("code") or error.get("type")):
            return str(error.get("code") or error.get("type"))
    return body.decode(errors="replace")[:300]


def _readable(value: Any) -> str:
    """A message that may be a string, a FastAPI `{"detail": [...]}` or a list of problems."""
    if isinstance(value, dict) and "detail" in value:
        value = value["detail"]
    if isinstance(value, list):
        problems = []
        for item in value:
            if isinstance(item, dict) and item.get("msg"):
                where = ".".join(str(p) for p in item.get("loc") or () if p != "body")
                problems.append(f"{where}: {item['msg']}" if where else str(item["msg"]))
            else:
                problems.append(str(item))
        return "; ".join(problems)[:500] or "(no details)"
    return str(value)


def _error_extras(error: dict[str, Any]) -> str:
    extras = []
    metadata = error.get("metadata")
    if isinstance(metadata, dict):  # OpenRouter: the upstream provider's own error
        raw = metadata.get("raw")
        upstream = metadata.get("provider_name")
        if raw:
            raw_text = raw if isinstance(raw, str) else msgspec.json.encode(raw).decode()
            extras.append(f"{upstream}: {raw_text[:300]}" if upstream else raw_text[:300])
        elif upstream:
            extras.append(f"from {upstream}")
    details = [d for d in error.get("details") or () if isinstance(d, dict)]
    reason = next((d["reason"] for d in details if d.get("reason")), None)  # Google: ErrorInfo.reason
    if reason:
        extras.append(str(reason))
    delay = next((d["retryDelay"] for d in details if d.get("retryDelay")), None)  # Google: RetryInfo
    if delay:
        extras.append(f"retry in {delay}")
    return f" ({'; '.join(extras)})" if extras else ""


def _html_title(text: str) -> str | None:
    """A proxy's or gateway's HTML error page as its title, not 300 characters of markup."""
    if not text.lstrip()[:15].lower().startswith(("<!doctype html", "<html", "<head")):
        return None
    match = re.search(r"<title[^>]*>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
    title = " ".join(match.group(1).split()) if match else ""
    return f"an HTML page: {title}" if title else "an HTML page (not an API response)"


# Some providers answer a bad key with 400, not 401: Gemini (`API_KEY_INVALID`), xAI
# ("Incorrect API key provided"), the old Hugging Face API ("the token seems invalid").
_BAD_KEY = re.compile(
    r"API_KEY_INVALID|API key not valid|incorrect API key|invalid API key|token seems invalid", re.IGNORECASE
)
_LABELS = {
    400: "bad request",
    402: "payment required",
    404: "not found",
    408: "request timeout",
    409: "conflict",
    413: "request too large",
    422: "invalid parameters",
}
_SECRET_HEADER = re.compile(r"authorization|key|token|secret", re.IGNORECASE)


def error_for_status(
    status: int, body: bytes, request: HttpRequest, headers: Mapping[str, str] | None = None
) -> HTTPStatusError:
    """The error for an HTTP error status: the provider's name, what the status means, the
    provider's own message, and what to check. Never contains a credential the request sent."""
    provider = request.provider or "provider"
    detail = _scrub(provider_message(body), request)
    if status in (401, 403) or (status == 400 and _BAD_KEY.search(detail)):
        what = "refused access" if status == 403 else "rejected the API key"
        message = f"{provider} {what} (HTTP {status}): {_with_hint(detail, _auth_hint(status, request))}"
        return AuthenticationError(message, status=status, provider=provider)
    if status == 429:
        return RateLimitError(
            f"{provider}: rate limited (HTTP 429): {_with_hint(detail, _retry_after(headers))}",
            status=status,
            provider=provider,
        )
    label = _LABELS.get(status)
    if label is None and status >= 500:
        label = "overloaded" if status == 529 else "server error"
    prefix = f"{provider}: {label} (HTTP {status})" if label else f"{provider}: HTTP {status}"
    return HTTPStatusError(
        f"{prefix}: {_with_hint(detail, _status_hint(status, provider, request))}", status=status, provider=provider
    )


def _with_hint(detail: str, hint: str | None) -> str:
    return f"{detail.rstrip().removesuffix('.')}; {hint}" if hint else detail


def _auth_hint(status: int, request: HttpRequest) -> str:
    if status == 403:
        return (
            f"check {request.auth_hint} and that it may use this model"
            if request.auth_hint
            else "the key may not be allowed to use this model"
        )
    return f"check {request.auth_hint}" if request.auth_hint else "the adapter sends no API key"


def _status_hint(status: int, provider: str, request: HttpRequest) -> str | None:
    if status == 404:
        model = f"the model name {request.model!r} and " if request.model else ""
        return f"check {model}the URL {_where(request.url)}"
    if status == 413:
        return "the conversation or its attachments are too large: remove some context or start a new chat"
    if status == 402:
        return f"check the credits or balance of the {provider} account"
    if status >= 500:
        return "this is on the provider's side: try again later"
    return None


def _where(url: str) -> str:
    """The url without its query string, which may carry a credential."""
    parsed = httpx.URL(url)
    return str(parsed.copy_with(query=None, fragment=None)) if parsed.host else url.split("?", 1)[0]


def _retry_after(headers: Mapping[str, str] | None) -> str | None:
    value = ((headers or {}).get("retry-after") or "").strip()
    if not value:
        return None
    return f"retry after {int(value)}s" if value.isdigit() else f"retry after {value}"


def _scrub(text: str, request: HttpRequest) -> str:
    """`text` without any credential the request carried (some servers echo the key back)."""
    for name, value in request.headers.items():
        if not value or not _SECRET_HEADER.search(name):
            continue
        secret = value.split(" ", 1)[1] if value.lower().startswith(("bearer ", "basic ")) else value
        if len(secret) >= 8 and secret in text:
            text = text.replace(secret, "***")
    return text
