"""fetch_webpage: the readable text of a web page (http/https only), after approval.

Approval is on by default: a fetch sends data out of the machine (the URL itself can carry
what the LLM read). A URL that could never be fetched (another scheme, a password in it,
too long, a link-local or metadata address) is refused before anyone is asked, and the
approval shows the URL as it will be requested (control and bidi characters escaped). The page is
read as `#{fetch}` reads it (web.py): a redirect to another site is not followed, and the
result names it, so the LLM can ask for that URL, which is approved on its own.
"""

from __future__ import annotations

from typing import Any

from ... import web
from ...errors import CodeCompanionError, ToolError
from ..contract import ToolRun
from .schema import catalog_tool


def setup(self: ToolRun, tools: Any) -> None:
    try:
        self.url = str(web.checked_url(self.args.get("url")))
    except CodeCompanionError as error:
        raise ToolError(str(error)) from None


async def fetch(self: ToolRun, args: dict[str, Any], input: Any, output_handler: Any) -> dict[str, Any]:
    url = self.url
    try:
        text = await web.page_text(url, settings=self.context.http)
    except CodeCompanionError as error:
        raise ToolError(str(error)) from None
    return {"status": "success", "data": f"Content of {url}:\n\n{text}"}


TOOL = catalog_tool(
    "fetch_webpage",
    "Fetch a web page and return its text.",
    {"url": {"type": "string", "description": "An http(s) URL"}},
    ["url"],
    strict=True,
    cmds=[fetch],
    handlers={"setup": setup},
    output={"prompt": lambda self, tools: f"Fetch {self.url}?"},
    opts={"requires_approval": True},
)
