"""The HTTP client: one httpx.AsyncClient, streaming, timeouts, retries, size caps, and
errors mapped at one boundary.

Cancelling the task that reads a stream closes the response, and with it the connection,
at once. HTTP error statuses become `HTTPStatusError`s carrying the provider's own message;
connection failures and timeouts become `TransportError`s.

Retries. A request that failed before any of its response reached the user is sent again,
at most `retries` times (default 2), when another try may help: HTTP 408, 409, 429, 500,
502, 503, 504 and 529, and a connection that failed before a response (refused, reset,
closed without an answer; a read timeout is not retried). Never 400, 401, 403, 404 or 422.
The server's `x-should-retry: false` forbids a retry; `true` allows one for any other
status (never those five). The wait is the server's `retry-after-ms` (milliseconds) or
`retry-after` (seconds or an HTTP date) when it is at most `retry_max_wait` (default 60 s);
a longer one fails at once (429: a RateLimitError that says so). Without one: exponential
backoff, 0.5 s, 1 s, 2 s... at most 8 s, less up to 25 % jitter. `open()` (and so
`fetch_json()`) retries by itself; the stream iterator drives `attempt()` itself, so the
chat shows each retry ("retrying in 2 s, 1 of 2") before its wait. `sleep` and `jitter`
are injectable: tests never wait.

Limits. `max_line_bytes` (default 16 MiB) caps one SSE/NDJSON line or event and
`max_response_bytes` (default 256 MiB) a whole response (the stream normalizer enforces
both, as `fetch_json` does the second); going over is a `ResponseTooLarge` error. An error
status's body is read up to 256 KiB.

Settings. `setup({adapters = {http = {opts = {...}}}})` (config.py) sets `retries`,
`retry_max_wait`, `max_line_bytes` and `max_response_bytes` (beside `connect_timeout` and
`read_timeout`) in the `Config` that `config.load()` returns; the engine builds its client
with them (`settings=`), and a client given none takes `ClientSettings()`'s defaults
(outbound.py). Constructor arguments override them, and an adapter's `opts.retries`
overrides `retries` for its requests. The httpx client itself, with the
user's `proxy` and `allow_insecure`, comes from the one outbound door (outbound.py).

Secrets. Every error text made here, and every one the stream iterator shows, goes through
`scrub()`: each secret the request carries (the values of credential headers, and
`HttpRequest.secrets`, the adapter's resolved env values) is replaced with `***`, and so is
what is left of one cut elsewhere (its first 8 characters or more) and any bearer token. An
error body is scrubbed whole before any part of it is cut to size. `scrub_secrets` is the
one scrubber (MCP servers use it with their own header and env values). A header value
holding CR, LF or NUL is refused before sending, naming the header, never the value.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import msgspec

from .errors import (
    AdapterError,
    AuthenticationError,
    ConfigError,
    HTTPStatusError,
    ProviderError,
    RateLimitError,
    RequestTimeout,
    ResponseTooLarge,
    TransportError,
)
from .logfile import loggable
from .outbound import ClientSettings, environment_proxies, http_client
from .scrubber import scrub_secrets, secrets_in

__all__ = ["ClientSettings", "HttpClient", "HttpRequest", "environment_proxies"]

log = logging.getLogger("codecompanion_py.http")

DEFAULT_READ_TIMEOUT = 120.0
ERROR_BODY_LIMIT = 256 * 1024  # what is read of an error status's body
RETRY_STATUSES = frozenset((408, 409, 429, 500, 502, 503, 504, 529))
NEVER_RETRY = frozenset((400, 401, 403, 404, 422))
BACKOFF_FIRST = 0.5  # seconds before the first retry without a retry-after
BACKOFF_MAX = 8.0
JITTER = 0.25  # a backoff is shortened by up to this fraction, at random


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
    # Values that must never be shown (the adapter's resolved keys and tokens): replaced by
    # `***` in every error text about this request. Credential headers count on their own.
    secrets: tuple[str, ...] = ()
    retries: int | None = None  # None: the client's

    def __repr__(self) -> str:  # headers hold credentials
        return f"HttpRequest({self.method} {self.url}, stream={self.stream})"


class Retrying(Exception):
    """Raised by `HttpClient.attempt()`: this try failed, and try number `attempt` (of
    `retries`) may follow after `delay` seconds. Not an error for the user: `open()` and
    the stream iterator catch it; `notice` is what the chat shows."""

    def __init__(self, error: ProviderError, *, reason: str, delay: float, attempt: int, retries: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.reason = reason
        self.delay = delay
        self.attempt = attempt
        self.retries = retries

    @property
    def notice(self) -> str:
        wait = f"{self.delay:.0f}" if self.delay >= 1 else f"{self.delay:.1f}"
        return f"{self.reason}: retrying in {wait} s, {self.attempt} of {self.retries}"


class HttpClient:
    def __init__(
        self,
        *,
        connect_timeout: float | None = None,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
        retries: int | None = None,
        retry_max_wait: float | None = None,
        max_line_bytes: int | None = None,
        max_response_bytes: int | None = None,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
        jitter: Callable[[], float] | None = None,
        settings: ClientSettings | None = None,
    ) -> None:
        settings = settings or ClientSettings()
        self.settings = settings
        self.read_timeout = read_timeout
        self.retries = settings.retries if retries is None else retries
        self.retry_max_wait = settings.retry_max_wait if retry_max_wait is None else retry_max_wait
        self.max_line_bytes = settings.max_line_bytes if max_line_bytes is None else max_line_bytes
        self.max_response_bytes = settings.max_response_bytes if max_response_bytes is None else max_response_bytes
        self.sleep: Callable[[float], Awaitable[Any]] = sleep or asyncio.sleep
        self.jitter: Callable[[], float] = jitter or random.random
        connect = settings.connect_timeout if connect_timeout is None else connect_timeout
        self._timeout = httpx.Timeout(read_timeout, connect=connect)
        self._transport = transport
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:  # the one door's client (outbound.py): proxy, TLS check
            self._client = http_client(
                read_timeout=self.read_timeout,
                connect_timeout=self._timeout.connect,
                transport=self._transport,
                settings=self.settings,
            )
        return self._client

    @asynccontextmanager
    async def open(
        self, request: HttpRequest, *, on_retry: Callable[[Retrying], None] | None = None
    ) -> AsyncIterator[httpx.Response]:
        """The response with a success status, body not yet read; failed tries are retried
        (see the module docstring), each first reported to `on_retry`."""
        attempt = 0
        while True:
            try:
                async with self.attempt(request, attempt) as response:
                    yield response
                return
            except Retrying as retry:
                if on_retry is not None:
                    on_retry(retry)
                await self.sleep(retry.delay)
                attempt = retry.attempt

    @asynccontextmanager
    async def attempt(self, request: HttpRequest, attempt: int = 0) -> AsyncIterator[httpx.Response]:
        """One try at `request` after `attempt` failed ones: the response with a success
        status, body not yet read. A failure that another try may fix raises `Retrying`
        while tries are left; any other failure raises its error."""
        check_headers(request)
        _log_request(request, attempt)
        opened = False
        try:
            async with self._http().stream(
                request.method,
                request.url,
                content=request.body,
                headers=request.headers,
                timeout=self._timeout_for(request),
            ) as response:
                log.info("%s %s: status %s", request.method, where(request.url), response.status_code)
                if response.status_code >= 400:
                    body = await read_at_most(response, ERROR_BODY_LIMIT)
                    error = error_for_status(response.status_code, body, request, headers=response.headers)
                    log.info("%s: %s", where(request.url), scrub(str(error), request))  # the caller reports it
                    raise self._retry_or(error, request, attempt, response.status_code, response.headers)
                opened = True
                yield response
        except httpx.HTTPError as exc:
            failure = self.map_error(request, exc)
            if opened or not _retryable_failure(exc):
                raise failure from None
            raise self._retry_or(failure, request, attempt, None, None) from None

    def _retry_or(
        self,
        error: ProviderError,
        request: HttpRequest,
        attempt: int,
        status: int | None,
        headers: Mapping[str, str] | None,
    ) -> Exception:
        """`Retrying` when `error` deserves another try and one is left, else the error."""
        retries = self.retries if request.retries is None else request.retries
        if attempt >= retries or (status is not None and not retryable_status(status, headers)):
            return error
        wait = retry_after(headers)
        if wait is not None and wait > self.retry_max_wait:
            if isinstance(error, RateLimitError):
                return RateLimitError(
                    f"{error}, longer than the {self.retry_max_wait:g} s a retry may wait "
                    "(adapters.http.opts.retry_max_wait): try again later",
                    status=error.status,
                    provider=error.provider,
                )
            return error
        delay = wait if wait is not None else self.backoff(attempt)
        return Retrying(
            error, reason=_reason(error, request, status), delay=delay, attempt=attempt + 1, retries=retries
        )

    def backoff(self, attempt: int) -> float:
        """The wait before try `attempt + 1` when the server names none."""
        return min(BACKOFF_FIRST * 2.0**attempt, BACKOFF_MAX) * (1 - JITTER * self.jitter())

    async def fetch_json(self, request: HttpRequest) -> Any:
        """The decoded body of a plain (not streamed) request whose answer is JSON: a token
        exchange, a models list. Error statuses, connection failures, timeouts, retries and
        cancellation behave as with `open()`; a body that is not JSON raises AdapterError."""
        async with self.open(request) as response:
            body = await read_at_most(response, self.max_response_bytes, request=request)
        try:
            return msgspec.json.decode(body)
        except (msgspec.DecodeError, UnicodeDecodeError):
            raise AdapterError(f"{request.provider or 'request'}: the answer is not JSON") from None

    def _timeout_for(self, request: HttpRequest) -> httpx.Timeout:
        if request.read_timeout is None:
            return self._timeout
        return httpx.Timeout(request.read_timeout, connect=self._timeout.connect)

    def map_error(self, request: HttpRequest, exc: httpx.HTTPError) -> TransportError:
        if isinstance(exc, httpx.TimeoutException):
            read_timeout = self.read_timeout if request.read_timeout is None else request.read_timeout
            return RequestTimeout(_timeout_message(request, exc, read_timeout))
        return TransportError(scrub(f"{request.provider or 'request'}: {_describe(exc)}", request))

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _log_request(request: HttpRequest, attempt: int) -> None:
    """INFO: what is asked of whom; DEBUG: the body too (cut, and without the request's keys)."""
    if not log.isEnabledFor(logging.INFO):
        return
    again = f", try {attempt + 1}" if attempt else ""
    log.info(
        "%s %s (%s, model %s, %d bytes%s)",
        request.method, where(request.url), request.provider or "?", request.model or "?", len(request.body), again,
    )  # fmt: skip
    if request.body and log.isEnabledFor(logging.DEBUG):
        log.debug("request body: %s", loggable(request.body, secrets_of(request)))


def retryable_status(status: int, headers: Mapping[str, str] | None) -> bool:
    if status in NEVER_RETRY:
        return False
    should = ((headers or {}).get("x-should-retry") or "").strip().lower()
    if should in ("true", "false"):
        return should == "true"
    return status in RETRY_STATUSES


def _retryable_failure(exc: httpx.HTTPError) -> bool:
    """A connection that failed before any response: nothing of it reached anyone."""
    if isinstance(exc, httpx.TimeoutException):
        return isinstance(exc, httpx.ConnectTimeout)
    return isinstance(exc, (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError))


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """The server's wait in seconds (`retry-after-ms`, `retry-after` as seconds or an HTTP
    date); None without a usable one."""
    if not headers:
        return None
    millis = (headers.get("retry-after-ms") or "").strip()
    if millis:
        try:
            wait = float(millis) / 1000
        except ValueError:
            wait = -1.0
        if wait >= 0:
            return wait
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        wait = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        wait = when.timestamp() - time.time()
        return max(wait, 0.0)
    return wait if wait >= 0 else None


def _reason(error: ProviderError, request: HttpRequest, status: int | None) -> str:
    """The failure in a few words, for the retry notice."""
    provider = request.provider or "provider"
    if status is None:
        return str(error)
    label = "rate limited" if status == 429 else _LABELS.get(status) or ("overloaded" if status == 529 else "")
    if not label and status >= 500:
        label = "server error"
    return f"{provider}: {label} (HTTP {status})" if label else f"{provider}: HTTP {status}"


async def read_at_most(
    response: httpx.Response,
    limit: int,
    *,
    request: HttpRequest | None = None,
    limit_name: str = "adapters.http.opts.max_response_bytes",
) -> bytes:
    """The body, at most `limit` bytes of it: cut there, or (given the `request`) a
    ResponseTooLarge error past it that names where the limit comes from."""
    pieces: list[bytes] = []
    size = 0
    async for piece in response.aiter_bytes():
        pieces.append(piece)
        size += len(piece)
        if limit and size > limit:
            if request is not None:
                raise ResponseTooLarge(
                    f"{request.provider or 'request'}: the response is larger than {limit} bytes ({limit_name})"
                )
            break
    body = b"".join(pieces)
    return body[:limit] if limit else body


_BAD_HEADER = re.compile(r"[\r\n\x00]")


def check_headers(request: HttpRequest) -> None:
    """Refuse a header value with CR, LF or NUL (httpx would put the value in its error)."""
    for name, value in request.headers.items():
        if _BAD_HEADER.search(value):
            raise ConfigError(
                f"{request.provider or 'request'}: the {name} header would contain a line break or a NUL "
                "character: check where its value comes from (a key is one line)"
            )


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
    except (msgspec.DecodeError, UnicodeDecodeError):
        text = body.decode(errors="replace").strip()
        return html_title(text) or text[:300] or "(empty response)"
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


def html_title(text: str) -> str | None:
    """A proxy's or gateway's HTML error page as its title, not 300 characters of markup;
    None when `text` is no HTML page."""
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


def error_for_status(
    status: int, body: bytes, request: HttpRequest, headers: Mapping[str, str] | None = None
) -> HTTPStatusError:
    """The error for an HTTP error status: the provider's name, what the status means, the
    provider's own message, and what to check. Never contains a credential the request sent."""
    provider = request.provider or "provider"
    # scrubbed whole before any part of it is cut to size; a body read up to its limit may
    # end in the first part of a key
    cleaned = scrub(body.decode("utf-8", "replace"), request, cut=len(body) >= ERROR_BODY_LIMIT)
    detail = scrub(provider_message(cleaned.encode()), request)
    if status in (401, 403) or (status == 400 and _BAD_KEY.search(detail)):
        what = "refused access" if status == 403 else "rejected the API key"
        message = f"{provider} {what} (HTTP {status}): {_with_hint(detail, _auth_hint(status, request))}"
        return AuthenticationError(scrub(message, request), status=status, provider=provider)
    if status == 429:
        return RateLimitError(
            scrub(f"{provider}: rate limited (HTTP 429): {_with_hint(detail, _retry_after(headers))}", request),
            status=status,
            provider=provider,
        )
    label = _LABELS.get(status)
    if label is None and status >= 500:
        label = "overloaded" if status == 529 else "server error"
    prefix = f"{provider}: {label} (HTTP {status})" if label else f"{provider}: HTTP {status}"
    message = f"{prefix}: {_with_hint(detail, _status_hint(status, provider, request))}"
    return HTTPStatusError(scrub(message, request), status=status, provider=provider)


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
        return f"check {model}the URL {where(request.url)}"
    if status == 413:
        return "the conversation or its attachments are too large: remove some context or start a new chat"
    if status == 402:
        return f"check the credits or balance of the {provider} account"
    if status >= 500:
        return "this is on the provider's side: try again later"
    return None


def where(url: str) -> str:
    """The url without its query string and its `user:password@`, which may carry a credential."""
    parsed = httpx.URL(url)
    return str(parsed.copy_with(query=None, fragment=None, userinfo=b"")) if parsed.host else url.split("?", 1)[0]


def not_the_api(request: HttpRequest, first_bytes: bytes = b"") -> ProviderError:
    """The error for an HTML page where the provider's API should have answered (a login
    portal, a proxy's page, a wrong URL), with its title when `first_bytes` has one."""
    title = html_title(first_bytes.decode("utf-8", "replace")) or ""
    page = f" ({title.removeprefix('an HTML page: ')})" if title.startswith("an HTML page: ") else ""
    return ProviderError(
        scrub(
            f"{request.provider or 'provider'}: the server answered with an HTML page{page}, not the provider's "
            f"API: check the URL {where(request.url)}",
            request,
        )
    )


def looks_like_html(first_bytes: bytes) -> bool:
    return first_bytes.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html", b"<head"))


def _retry_after(headers: Mapping[str, str] | None) -> str | None:
    value = ((headers or {}).get("retry-after") or "").strip()
    if not value:
        return None
    return f"retry after {int(value)}s" if value.isdigit() else f"retry after {value}"


def secrets_of(request: HttpRequest) -> list[str]:
    """Every secret `request` carries, longest first (`secrets_in`)."""
    return secrets_in(request.headers, request.secrets)


def scrub(text: str, request: HttpRequest | None, *, cut: bool = False) -> str:
    """`text` without any secret the request carried (some servers echo the key back)."""
    if request is None or not text:
        return text
    return scrub_secrets(text, secrets_of(request), cut=cut)


def scrub_error(error: Exception, request: HttpRequest | None) -> None:
    """Scrub `error`'s message in place (its `str()` is what the user is shown)."""
    if request is None or len(error.args) != 1 or not isinstance(error.args[0], str):
        return
    cleaned = scrub(error.args[0], request)
    if cleaned != error.args[0]:
        error.args = (cleaned,)
