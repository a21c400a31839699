"""A web page as text, for the `fetch_webpage` tool and the `/fetch` slash command.

Only http and https. At most MAX_BYTES are read; HTML is reduced to text with the standard
library's parser (scripts, styles and other non-content elements dropped, block elements on
their own lines) and cut at MAX_CHARS. For /fetch, a page read in the last CACHE_SECONDS is
not fetched again (CodeCompanion's /fetch caches too); the tool always reads it afresh.
"""

from __future__ import annotations

import time
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlsplit

import httpx

from .errors import ConfigError

MAX_BYTES = 2_000_000
MAX_CHARS = 100_000
CACHE_SECONDS = 30 * 60
_SKIP = {"script", "style", "noscript", "template", "svg", "head", "iframe"}
_BLOCK = {
    "p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "section",
    "article", "header", "footer", "table", "ul", "ol", "blockquote",
}  # fmt: skip
_cache: dict[str, tuple[float, str]] = {}


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.pieces: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in _SKIP:
            self._skipping += 1
        elif tag in _BLOCK:
            self.pieces.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skipping = max(0, self._skipping - 1)
        elif tag in _BLOCK:
            self.pieces.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.pieces.append(data)


def html_to_text(html: str) -> str:
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.pieces).split("\n"))
    return "\n".join(line for line in lines if line)


async def page_text(url: str, *, cached: bool = False) -> str:
    """The readable text of `url`; a `ConfigError` that says why when it cannot be had."""
    if urlsplit(url).scheme not in ("http", "https"):
        raise ConfigError(f"only http and https URLs can be fetched, not {url!r}")
    kept = _cache.get(url) if cached else None
    if kept is not None and time.monotonic() - kept[0] < CACHE_SECONDS:
        return kept[1]
    try:
        async with httpx.AsyncClient(follow_redirects=True, timeout=30.0) as client:
            async with client.stream("GET", url, headers={"User-Agent": "codecompanion-py"}) as response:
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body.extend(chunk)
                    if len(body) > MAX_BYTES:
                        break
    except httpx.HTTPError as error:
        raise ConfigError(f"could not fetch {url}: {type(error).__name__}: {error}") from None
    if response.status_code >= 400:
        raise ConfigError(f"{url} answered HTTP {response.status_code}")
    text = bytes(body[:MAX_BYTES]).decode(response.encoding or "utf-8", errors="replace")
    if "html" in response.headers.get("content-type", "html"):
        text = html_to_text(text)
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS] + f"\n[... cut at {MAX_CHARS} characters ...]"
    _cache[url] = (time.monotonic(), text)
    return text
