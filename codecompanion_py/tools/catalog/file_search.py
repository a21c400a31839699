"""file_search: files of the project matching a glob (.gitignore respected)."""

from __future__ import annotations

from typing import Any

from ..contract import ToolDefinition, ToolRun
from ..search import find_files
from .schema import function_schema


async def search(self: ToolRun, args: dict[str, Any], input: Any, output_handler: Any) -> dict[str, Any]:
    limit = int(args.get("max_results") or self.opts.get("max_results", 500))
    found, truncated = await find_files(self.context.workspace.root, args["query"], max_results=limit)
    if not found:
        return {"status": "success", "data": f"No files match `{args['query']}`."}
    more = f"\n(only the first {limit} are listed)" if truncated else ""
    return {"status": "success", "data": f"{len(found)} files match `{args['query']}`:\n" + "\n".join(found) + more}


TOOL = ToolDefinition(
    name="file_search",
    schema=function_schema(
        "file_search", "Find files in the project by glob pattern, e.g. `**/*.py` or `src/**/test_*.lua`.",
        {"query": {"type": "string", "description": "A glob pattern"},
         "max_results": {"type": "integer", "description": "At most this many results"}},
        ["query"]),
    cmds=[search],
)
