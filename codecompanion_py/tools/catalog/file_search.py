"""file_search: files of the project matching a glob (.gitignore respected), matched in a
worker process stopped after `opts.timeout` milliseconds (10 s)."""

from __future__ import annotations

from typing import Any

from ...words import count
from ..contract import ToolRun
from ..search import DEFAULT_SEARCH_TIMEOUT, find_files
from .schema import catalog_tool

DEFAULT_TIMEOUT_MS = int(DEFAULT_SEARCH_TIMEOUT * 1000)


async def search(self: ToolRun, args: dict[str, Any], input: Any, output_handler: Any) -> dict[str, Any]:
    limit = max(1, int(args.get("max_results") or self.opts.get("max_results", 500)))
    timeout = float(self.opts.get("timeout", DEFAULT_TIMEOUT_MS)) / 1000
    found, truncated = await find_files(self.context.workspace.root, args["query"], max_results=limit, timeout=timeout)
    if not found:
        return {"status": "success", "data": f"No files match `{args['query']}`."}
    # when truncated, `found` is only the first `limit` of the matches: do not call that the count
    head = f"More than {count(limit, 'file')} matching" if truncated else f"{count(len(found), 'file')} matching"
    more = f"\n(only the first {limit} are listed)" if truncated else ""
    return {"status": "success", "data": f"{head} `{args['query']}`:\n" + "\n".join(found) + more}


TOOL = catalog_tool(
    "file_search",
    "Find files in the project by glob pattern, e.g. `**/*.py` or `src/**/test_*.lua`.",
    {
        "query": {"type": "string", "description": "A glob pattern"},
        "max_results": {"type": "integer", "description": "At most this many results"},
    },
    ["query"],
    cmds=[search],
    opts={"timeout": DEFAULT_TIMEOUT_MS},
)
