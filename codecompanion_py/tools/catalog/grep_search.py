"""grep_search: lines of project files matching text or a regex (ripgrep when present)."""

from __future__ import annotations

from typing import Any

from ..contract import ToolDefinition, ToolRun
from ..search import grep
from .schema import function_schema


async def search(self: ToolRun, args: dict[str, Any], input: Any, output_handler: Any) -> dict[str, Any]:
    limit = int(self.opts.get("max_results", 100))
    lines, truncated = await grep(self.context.workspace.root, args["query"], is_regexp=bool(args.get("is_regexp")),
                                  include_pattern=args.get("include_pattern") or None, max_results=limit)
    if not lines:
        return {"status": "success", "data": f"No matches for `{args['query']}`."}
    more = f"\n(only the first {limit} matches are listed)" if truncated else ""
    return {"status": "success", "data": "\n".join(lines) + more}


TOOL = ToolDefinition(
    name="grep_search",
    schema=function_schema(
        "grep_search", "Search the project's files for text (or a regular expression); returns path:line: text.",
        {"query": {"type": "string"},
         "is_regexp": {"type": "boolean", "description": "Treat the query as a regular expression"},
         "include_pattern": {"type": "string", "description": "Only search files matching this glob"}},
        ["query"]),
    cmds=[search],
)
