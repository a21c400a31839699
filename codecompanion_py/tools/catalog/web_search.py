"""web_search: CodeCompanion's web search tool, with its backends Tavily (its default) and
Jina, chosen by `opts.adapter`; Tavily's settings in `opts.opts` as CodeCompanion names them.

The key is CodeCompanion's environment variable (`TAVILY_API_KEY`, `JINA_API_KEY`), or
`opts.api_key` written as any adapter `env` value (`cmd:...`, `file:...`, a variable's
name). The request goes through the page door (`web.api_json`); the results are web content:
each is wrapped so it cannot close its own tag, and the whole is scrubbed and capped like a
page. Approval is asked by default, as for fetch_webpage: the query leaves the machine.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from ... import web
from ...adapters.base import resolve_env_string
from ...errors import CodeCompanionError, ToolError
from ..contract import ToolRun
from .schema import catalog_tool

BACKENDS: dict[str, dict[str, str]] = {
    "tavily": {"url": "https://api.tavily.com/search", "key": "TAVILY_API_KEY"},
    "jina": {"url": "https://s.jina.ai/", "key": "JINA_API_KEY"},
}
MAX_RESULTS = 20


def _table(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _backend(opts: Mapping[str, Any]) -> str:
    name = opts.get("adapter") or "tavily"
    if name not in BACKENDS:
        raise ToolError(f"web_search: opts.adapter is {str(name)[:40]!r}; it can be {' or '.join(BACKENDS)}")
    return str(name)


async def _key(backend: str, opts: Mapping[str, Any]) -> str | None:
    env = _table(opts.get("env"))
    spec = opts.get("api_key") or env.get("api_key") or BACKENDS[backend]["key"]
    try:
        value = await resolve_env_string(backend, "api_key", str(spec))
    except CodeCompanionError as error:
        raise ToolError(str(error)) from None
    return str(value) if value else None


def tavily_request(query: str, domains: list[str], opts: Mapping[str, Any]) -> dict[str, Any]:
    """Tavily's search body, CodeCompanion's defaults where `opts` says nothing."""
    body: dict[str, Any] = {
        "query": query,
        "topic": opts.get("topic") or "general",
        "search_depth": opts.get("search_depth") or "advanced",
        "chunks_per_source": opts.get("chunks_per_source") or 3,
        "max_results": min(int(opts.get("max_results") or 3), MAX_RESULTS),
        "include_answer": bool(opts.get("include_answer")),
        "include_raw_content": bool(opts.get("include_raw_content")),
    }
    if opts.get("time_range"):
        body["time_range"] = opts["time_range"]
    if domains:
        body["include_domains"] = domains
    if body["topic"] == "news":
        body["days"] = opts.get("days") or 7
    return body


def results_of(backend: str, answer: Any) -> list[dict[str, str]]:
    """[{url, title, content}] from Tavily's `results` or Jina's `data`."""
    items = answer.get("results" if backend == "tavily" else "data") if isinstance(answer, Mapping) else None
    found = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, Mapping):
            content = item.get("content") or item.get("description") or ""
            found.append(
                {
                    k: str(v)[: web.MAX_CHARS]
                    for k, v in (
                        ("url", item.get("url") or ""),
                        ("title", item.get("title") or ""),
                        ("content", content),
                    )
                }
            )
    return found[:MAX_RESULTS]


def attachment(result: Mapping[str, str]) -> str:
    """One result as CodeCompanion gives it to the model; a page cannot end its own tag."""
    url, title = html.escape(result["url"], quote=True), html.escape(result["title"], quote=True)
    content = result["content"].replace("</attachment", "&lt;/attachment")
    return f'<attachment url="{url}" title="{title}">{content}</attachment>'


async def search(self: ToolRun, args: dict[str, Any], input: Any, output_handler: Any) -> dict[str, Any]:
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolError("web_search needs a `query`")
    domains = [d for d in args.get("domains") or [] if isinstance(d, str) and d.strip()]
    backend = _backend(self.opts)
    key = await _key(backend, self.opts)
    settings = _table(self.opts.get("opts"))
    url = str(self.opts.get("url") or BACKENDS[backend]["url"])
    headers = {"Accept": "application/json"} | ({"Authorization": f"Bearer {key}"} if key else {})
    try:
        if backend == "tavily":
            if not key:
                raise ToolError("web_search with Tavily needs a key: set TAVILY_API_KEY (or opts.api_key)")
            answer = await web.api_json(
                "POST",
                url,
                settings=self.context.http,
                headers=headers,
                body=tavily_request(query, domains, settings),
                secrets=[key],
            )
        else:
            if len(domains) == 1:
                headers["X-Site"] = domains[0]
            elif domains:
                query += " (" + " OR ".join(f"site:{d}" for d in domains) + ")"
            answer = await web.api_json(
                "GET",
                url,
                settings=self.context.http,
                headers=headers,
                params={"q": query},
                secrets=[key] if key else [],
            )
    except CodeCompanionError as error:
        raise ToolError(f"error searching for {query[:200]!r}: {error}") from None
    found = results_of(backend, answer)
    if not found:
        raise ToolError(f"no results for {query[:200]!r}")
    self.summary = f"Searched for `{query[:200]}`, {len(found)} result(s)"
    return {"status": "success", "data": web.capped("\n".join(map(attachment, found)), secrets=[key] if key else [])}


def success(self: ToolRun, tools: Any, cmd: Any, stdout: list[Any]) -> None:
    tools.chat.add_tool_output(self, stdout[-1], self.summary)


TOOL = catalog_tool(
    "web_search",
    "Search the web for a query and return the results.",
    {
        "query": {"type": "string", "description": "What to search the web for"},
        "domains": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Domains to search within; empty for the whole web",
        },
    },
    ["query", "domains"],
    cmds=[search],
    output={"success": success, "prompt": lambda self, tools: f"Search the web for {self.args.get('query')!r}?"},
    opts={"require_approval_before": True, "adapter": "tavily"},
)
