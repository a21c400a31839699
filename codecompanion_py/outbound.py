"""The one door for HTTP that leaves the machine: every outbound httpx client is made here.

The providers' client (client.py), web pages (web.py) and MCP servers over HTTP
(mcp/http.py) all get theirs from `http_client()`, so the user's `adapters.http.opts` apply
to each alike: `proxy` (else a proxy from the environment, as httpx reads it),
`allow_insecure` (no TLS check) and `connect_timeout`. Without a proxy the client speaks
through our own HTTP/1.1 transport (http1.py); with one, through httpx's.

`connect_guard` (web pages) checks each address a name resolves to before connecting, and
connects to the address it checked: a name that resolves to a link-local address is refused
even when it answered otherwise a moment before (netguard.py). Behind a proxy the proxy
resolves names, and the caller checks what this machine can resolve before each request
(web.py).
"""

from __future__ import annotations

import urllib.request
from dataclasses import dataclass

import httpx

from .http1 import ConnectGuard, Http1Transport


@dataclass(frozen=True)
class ClientSettings:
    """What `setup()` may set for every request (`adapters.http.opts`)."""

    retries: int = 2
    retry_max_wait: float = 60.0  # seconds: the longest retry-after honoured
    max_line_bytes: int = 16 << 20
    max_response_bytes: int = 256 << 20
    proxy: str | None = None  # CodeCompanion's `proxy`: [protocol://]host[:port]
    verify: bool = True  # False: CodeCompanion's `allow_insecure = true`
    connect_timeout: float = 10.0  # seconds


def environment_proxies() -> bool:
    """A proxy set in the environment (`HTTPS_PROXY`, `ALL_PROXY`...), which httpx honours."""
    return any(scheme in ("http", "https", "all") for scheme in urllib.request.getproxies())


def proxied(settings: ClientSettings) -> bool:
    """Whether requests go through a proxy (which then resolves names itself)."""
    return bool(settings.proxy) or environment_proxies()


def http_client(
    *,
    read_timeout: float | None,
    connect_timeout: float | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    connect_guard: ConnectGuard | None = None,
    settings: ClientSettings,
) -> httpx.AsyncClient:
    """A client with the user's proxy, TLS check and connect timeout (`connect_timeout`
    overrides the last; `settings` are the config's, `Config.http`); `read_timeout` None
    waits for data as long as it takes."""
    connect = settings.connect_timeout if connect_timeout is None else connect_timeout
    if transport is None and not proxied(settings):
        transport = Http1Transport(verify=settings.verify, connect_guard=connect_guard)
    return httpx.AsyncClient(
        timeout=httpx.Timeout(30.0 if read_timeout is None else read_timeout, connect=connect, read=read_timeout),
        transport=transport,
        proxy=settings.proxy,
        verify=settings.verify,
    )
