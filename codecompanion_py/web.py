"""A web page as text, for the `fetch_webpage` tool and `#{fetch:url}` (the `/fetch` slash
command): the one door for web pages.

What is fetched: an http or https URL of at most MAX_URL characters, without a user name or
password (they would go to the chat and the LLM), from an address netguard.py allows
(never link-local or cloud metadata; the addresses a name resolves to are checked, and the
connection goes to one of those). Through the one outbound door (outbound.py), so the
user's proxy and TLS settings apply.

Redirects are followed by hand, at most MAX_REDIRECTS. The LLM's fetches stay within the
origin its approval named (scheme, host, port; http to https on the same host is an origin
too): a redirect elsewhere is not followed, and the error names the new URL, so the LLM can
ask for it and that fetch is approved with the URL it really reads. A URL the user typed
(`#{fetch}`) follows a site that moved. Every hop's address is checked; https to http is
refused.

The whole fetch (redirects, every byte) has DEADLINE seconds. Only text is read (text/*,
JSON, XML; a body without a type that holds NUL bytes is binary), at most MAX_BYTES of it,
decompressed by us within that cap. Bytes that are not valid in the page's charset are
replaced. HTML is reduced to text in one pass over it (`html_to_text`), and the result is cut
at MAX_CHARS, saying so. For `#{fetch}`, a page read in the last CACHE_SECONDS is not fetched
again (CodeCompanion's /fetch caches too), at most CACHE_PAGES of them; the tool always
reads it afresh.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import re
import socket
import time
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import httpx

from . import netguard, outbound
from .errors import ConfigError
from .scrubber import clip, scrub_secrets

MAX_URL = 4096  # characters
MAX_REDIRECTS = 5
DEADLINE = 30.0  # seconds for a whole fetch
MAX_BYTES = 5 << 20  # of a body, decompressed
MAX_CHARS = 100_000  # of the text given to the chat and the LLM
CACHE_SECONDS = 30 * 60
CACHE_PAGES = 16
_HEADERS = {"User-Agent": "codecompanion-py", "Accept-Encoding": "gzip, deflate"}
_REDIRECTS = frozenset((301, 302, 303, 307, 308))
_TEXT_TYPES = frozenset(("application/json", "application/xml", "application/javascript", "application/x-yaml"))
_DEFAULT_PORTS = {"http": 80, "https": 443}
_cache: OrderedDict[str, tuple[float, str]] = OrderedDict()


def checked_url(url: object) -> httpx.URL:
    """`url` if it may be fetched; a `ConfigError` that says why not (never repeating a
    password it holds)."""
    if not isinstance(url, str) or len(url) > MAX_URL:
        size = f"{len(url)} characters" if isinstance(url, str) else type(url).__name__
        raise ConfigError(f"a URL to fetch is a string of at most {MAX_URL} characters, not {size}")
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as error:
        raise ConfigError(f"not a URL that can be fetched: {error}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigError(f"only http and https URLs can be fetched, not {shown(parsed)!r}")
    if parsed.userinfo:
        raise ConfigError(f"{shown(parsed)}: a URL with a user name or password is not fetched")
    try:
        netguard.check_host(parsed.host)
    except netguard.Forbidden as error:
        raise ConfigError(f"{shown(parsed)}: {error}") from None
    return parsed


def shown(url: httpx.URL) -> str:
    """`url` as messages name it: without the user name and password it may carry."""
    return str(url.copy_with(userinfo=b"")) if url.userinfo else str(url)


async def page_text(
    url: str, *, settings: outbound.ClientSettings, cached: bool = False, elsewhere: bool = False
) -> str:
    """The readable text of `url`; a `ConfigError` that says why when it cannot be had.
    `elsewhere`: redirects to other sites are followed too (a URL the user typed, whose
    site moved: `github.com` to `raw.githubusercontent.com`); every hop's address is still
    checked. The LLM's fetches stay on the site its approval named. `settings`: the
    config's (`Config.http`: proxy, TLS check, connect timeout)."""
    target = checked_url(url)
    key = str(target)
    kept = _cache.get(key) if cached else None
    if kept is not None and time.monotonic() - kept[0] < CACHE_SECONDS:
        return kept[1]
    try:
        text = await asyncio.wait_for(_fetch(target, elsewhere, settings), DEADLINE)
    except asyncio.TimeoutError:
        raise ConfigError(f"could not fetch {key}: no whole page within {DEADLINE:g} s") from None
    _cache[key] = (time.monotonic(), text)
    _cache.move_to_end(key)
    while len(_cache) > CACHE_PAGES:
        _cache.popitem(last=False)
    return text


async def _fetch(url: httpx.URL, elsewhere: bool, settings: outbound.ClientSettings) -> str:
    # The guard resolves each name at connect time and connects only to what it checked.
    async with outbound.http_client(
        read_timeout=DEADLINE, connect_guard=netguard.checked_addresses, settings=settings
    ) as client:
        for _ in range(MAX_REDIRECTS + 1):
            await _check_destination(url, settings)
            try:
                async with client.stream("GET", url, headers=_HEADERS) as response:
                    location = response.headers.get("location")
                    if response.status_code in _REDIRECTS and location:
                        url = _redirect(url, location, elsewhere)
                        continue
                    if response.status_code >= 400:
                        raise ConfigError(f"{url} answered HTTP {response.status_code}")
                    kind = _text_type(url, response)
                    body, cut = await _read_body(url, response)
            except httpx.HTTPError as error:
                detail = str(error) if isinstance(error, httpx.ConnectError) else f"{type(error).__name__}: {error}"
                raise ConfigError(f"could not fetch {url}: {detail}") from None
            if not kind and b"\x00" in body[:4096]:
                raise ConfigError(f"{url} is binary, not text: not read")
            text = _decode(body, response.charset_encoding)
            if "html" in (kind or "html"):
                text = await asyncio.to_thread(html_to_text, text)
            return capped(text, cut)
    raise ConfigError(f"could not fetch {url}: more than {MAX_REDIRECTS} redirects")


async def api_json(
    method: str,
    url: str,
    *,
    settings: outbound.ClientSettings,
    headers: dict[str, str],
    params: dict[str, str] | None = None,
    body: Any = None,
    secrets: Sequence[str] = (),
) -> Any:
    """The JSON answer of a web API (a search backend), through the same door as pages: a
    checked URL and address, the deadline, MAX_BYTES; no redirects. Errors name the status
    and a scrubbed start of the answer; what the answer holds stays untrusted (`capped`)."""
    target = checked_url(url)

    async def ask() -> tuple[int, bytes]:
        async with outbound.http_client(
            read_timeout=DEADLINE, connect_guard=netguard.checked_addresses, settings=settings
        ) as client:
            await _check_destination(target, settings)
            async with client.stream(
                method, target, headers={**_HEADERS, **headers}, params=params, json=body
            ) as response:
                return response.status_code, (await _read_body(target, response))[0]

    try:
        status, raw = await asyncio.wait_for(ask(), DEADLINE)
    except asyncio.TimeoutError:
        raise ConfigError(f"{target.host}: no answer within {DEADLINE:g} s") from None
    except httpx.HTTPError as error:
        raise ConfigError(f"could not reach {target.host}: {type(error).__name__}: {error}") from None
    text = raw.decode("utf-8", "replace")
    if status >= 400:
        raise ConfigError(f"{target.host} answered HTTP {status}: {scrub_secrets(text[:300], secrets)}")
    try:
        return json.loads(text)
    except ValueError:
        raise ConfigError(f"{target.host} answered with something that is not JSON") from None


def capped(text: str, cut: bool = False, secrets: Sequence[str] = ()) -> str:
    """`text` scrubbed of the secrets the engine knows (a page that echoes your key), then
    at most MAX_CHARS of it, and a last line that says what was left out."""
    text = scrub_secrets(text, secrets, cut=cut)
    notes = []
    if len(text) > MAX_CHARS:
        text = clip(text, MAX_CHARS, marker="")
        notes.append(f"cut at {MAX_CHARS} characters")
    if cut:
        notes.append(f"the page is larger than {MAX_BYTES >> 20} MiB: the rest was not read")
    return text + f"\n[... {'; '.join(notes)} ...]" if notes else text


async def _check_destination(url: httpx.URL, settings: outbound.ClientSettings) -> None:
    """Behind a proxy, which resolves names itself, the name is checked here as far as this
    machine can resolve it; without one, the transport's guard checks at connect time."""
    if not outbound.proxied(settings):
        return
    with contextlib.suppress(socket.gaierror):
        try:
            await netguard.checked_addresses(url.host, url.port or _DEFAULT_PORTS[url.scheme])
        except netguard.Forbidden as error:
            raise ConfigError(f"could not fetch {url}: {error}") from None


def _origin(url: httpx.URL) -> tuple[str, str, int]:
    return url.scheme, url.host, url.port or _DEFAULT_PORTS.get(url.scheme, 0)


def _redirect(current: httpx.URL, location: str, elsewhere: bool = False) -> httpx.URL:
    """The URL a redirect leads to, if it is followed; else a `ConfigError` that names it."""
    try:
        target = current.join(location)
    except (httpx.InvalidURL, ValueError):
        raise ConfigError(f"{current} redirected to a malformed URL: not followed") from None
    if current.scheme == "https" and target.scheme == "http":
        raise ConfigError(f"{current} redirected from https to plain http ({shown(target)}): not followed")
    upgrade = (current.scheme, target.scheme) == ("http", "https") and current.host == target.host
    same = _origin(target) == _origin(current) or (upgrade and current.port is None and target.port is None)
    if (not same and not elsewhere) or target.userinfo or len(str(target)) > MAX_URL:
        raise ConfigError(f"{current} redirected to {shown(target)}: not followed; fetch that URL if you want it")
    return target


def _text_type(url: httpx.URL, response: httpx.Response) -> str:
    """The response's media type if it is text ("" when it names none); a `ConfigError` if
    it is not."""
    kind = str(response.headers.get("content-type", "")).split(";", 1)[0].strip().lower()
    if not kind or kind.startswith("text/") or kind in _TEXT_TYPES or kind.endswith(("+xml", "+json")):
        return kind
    raise ConfigError(f"{url} is {kind}, not text: not read")


async def _read_body(url: httpx.URL, response: httpx.Response) -> tuple[bytes, bool]:
    """At most MAX_BYTES of the body, decompressed here so that a small compressed body
    cannot grow past the cap; and whether there was more."""
    coding = response.headers.get("content-encoding", "").strip().lower()
    if coding in ("gzip", "x-gzip", "deflate"):
        inflate = zlib.decompressobj(wbits=47)  # 32 + 15: a gzip or a zlib header
    elif coding in ("", "identity"):
        inflate = None
    else:
        raise ConfigError(f"{url} came {coding}-encoded, which was not asked for: not read")
    body = bytearray()
    async for raw in response.aiter_raw():
        try:
            body += raw if inflate is None else inflate.decompress(raw, MAX_BYTES + 1 - len(body))
        except zlib.error:
            raise ConfigError(f"{url}: its {coding} body is corrupt") from None
        if len(body) > MAX_BYTES:
            return bytes(body[:MAX_BYTES]), True
    return bytes(body), False


def _decode(body: bytes, charset: str | None) -> str:
    """The body as text in its charset (UTF-8 when it names none or one Python lacks),
    anything invalid replaced."""
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


# --- HTML to text, in one pass ------------------------------------------------------------

_SKIP = {"script", "style", "noscript", "template", "svg", "head", "iframe"}  # their text is no content
# Their content is not markup: it ends at their end tag, in any case.
_RAW = {name: re.compile(f"</{name}", re.IGNORECASE) for name in ("script", "style")}
_BLOCK = {
    "p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "section",
    "article", "header", "footer", "table", "ul", "ol", "blockquote",
}  # fmt: skip
_START = re.compile(r"<(?:/?[A-Za-z]|!|\?)")
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:-]{0,63})")


def html_to_text(page: str) -> str:
    """The text of an HTML page: non-content elements dropped, block elements on lines of
    their own, character references resolved. Each step finds what ends the construct at
    hand and moves past it, or stops at the end of the page: time linear in its length
    (the standard library's HTMLParser rescans unclosed constructs: minutes on 1 MB)."""
    pieces: list[str] = []
    skipping = 0
    pos = 0
    end = len(page)
    while pos < end:
        start = _START.search(page, pos)  # a "<" that is no markup is text
        lt = end if start is None else start.start()
        if lt > pos and not skipping:
            pieces.append(html.unescape(page[pos:lt]))
        if lt == end:
            break
        if page.startswith(("<!", "<?"), lt):  # a comment, a doctype, a declaration, an instruction
            comment = page.startswith("<!--", lt)
            close = page.find("-->", lt + 4) if comment else page.find(">", lt)
            pos = end if close < 0 else close + (3 if comment else 1)
            continue
        tag = _TAG.match(page, lt)
        assert tag is not None  # what _START found
        close = page.find(">", tag.end())
        if close < 0:
            break
        pos = close + 1
        name = tag.group(2).lower()
        if name in _BLOCK:
            pieces.append("\n")
        elif name in _SKIP and page[close - 1] != "/":  # <svg/> opens and closes at once
            if tag.group(1):
                skipping = max(0, skipping - 1)
            else:
                skipping += 1
                if name in _RAW:  # its end tag is read next
                    stop = _RAW[name].search(page, pos)
                    pos = end if stop is None else stop.start()
    lines = (" ".join(line.split()) for line in "".join(pieces).split("\n"))
    return "\n".join(line for line in lines if line)
