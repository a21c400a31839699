"""fetch_webpage: the readable text of a web page (http/https only), after approval.

Approval is on by default: a fetch sends data out of the machine (the URL itself can carry
what the LLM read). HTML is reduced to text with the standard library's parser: scripts,
styles and other non-content elements dropped, block elements on their own lines.
"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlsplit

import httpx

from ...errors import ToolError
from ..contract import ToolDefinition, ToolRun
from .schema import function_schema

MAX_BYTES = 2_000_000
MAX_CHARS = 100_000
_SKIP = {"script", "style", "noscript", "template", "svg", "head", "iframe"}
_BLOCK = {
    "p",
    "div",
    "br",
    "li",
    "tr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "section",
    "article",
    "header",
    "footer",
    "table",
    "ul",
    "ol",
    "blockquote",
}


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


async def fetch(self: ToolRun, args: dict[str, Any], input: Any, output_handler: Any) -> dict[str, Any]:
    url = args["url"]
    if urlsplit(url).scheme not in ("http", "https"):
        raise ToolError(f"only http and https URLs can be fetched, not {url!r}")
    try:
        async with httpx.AsyncClient(follow_redirects=True, timeout=30.0) as client:
            async with client.stream("GET", url, headers={"User-Agent": "codecompanion-py"}) as response:
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body.extend(chunk)
                    if len(body) > MAX_BYTES:
                        break
    except httpx.HTTPError as error:
        raise ToolError(f"could not fetch {url}: {type(error).__name__}: {error}") from None
    if response.status_code >= 400:
        raise ToolError(f"{url} answered HTTP {response.status_code}")
    text = bytes(body[:MAX_BYTES]).decode(response.encoding or "utf-8", errors="replace")
    if "html" in response.headers.get("content-type", "html"):
        text = html_to_text(text)
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS] + f"\n[... cut at {MAX_CHARS} characters ...]"
    return {"status": "success", "data": f"Content of {url}:\n\n{text}"}


TOOL = ToolDefinition(
    name="fetch_webpage",
    schema=function_schema(
        "fetch_webpage",
        "Fetch a web page and return its text.",
        {"url": {"type": "string", "description": "An http(s) URL"}},
        ["url"],
        strict=True,
    ),
    cmds=[fetch],
    output={"prompt": lambda self, tools: f"Fetch {self.args['url']}?"},
    opts={"requires_approval": True},
)
