"""grep_search: lines of project files matching text or a regex (ripgrep when present).

The search runs in another process (ripgrep, or a Python worker) and is stopped after
`opts.timeout` milliseconds (10 s): a pattern that backtracks for ever gets an answer
that says so, and the engine keeps running meanwhile."""

from __future__ import annotations

import re
from typing import Any

from ...errors import PathRefused
from ...words import count
from ..contract import ToolRun
from ..search import DEFAULT_SEARCH_TIMEOUT, grep
from .schema import catalog_tool

DEFAULT_TIMEOUT_MS = int(DEFAULT_SEARCH_TIMEOUT * 1000)


async def search(self: ToolRun, args: dict[str, Any], input: Any, output_handler: Any) -> dict[str, Any]:
    limit = int(self.opts.get("max_results", 100))
    lines, truncated = await grep(
        self.context.workspace.root,
        args["query"],
        is_regexp=bool(args.get("is_regexp")),
        include_pattern=args.get("include_pattern") or None,
        max_results=limit,
        timeout=float(self.opts.get("timeout", DEFAULT_TIMEOUT_MS)) / 1000,
    )
    lines, hidden = _without_protected(self, lines)
    note = (
        (
            f"\n({count(hidden, 'matching line')} in protected files (.env*, keys, credentials, editor and hook "
            "settings) left out; read_file can open such a file after the user agrees)"
        )
        if hidden
        else ""
    )
    if not lines:
        return {"status": "success", "data": f"No matches for `{args['query']}`." + note}
    more = f"\n(only the first {limit} matches are listed)" if truncated else ""
    return {"status": "success", "data": "\n".join(lines) + more + note}


_LOCATION = re.compile(r"(.+?):\d+:")


def _without_protected(self: ToolRun, lines: list[str]) -> tuple[list[str], int]:
    """Matches from protected files are left out: reading those always asks the user, and
    a search must not be a way around that."""
    protected: dict[str, bool] = {}
    kept: list[str] = []
    for line in lines:
        match = _LOCATION.match(line)
        path = match.group(1) if match else ""
        if path not in protected:
            try:
                protected[path] = bool(path) and self.context.workspace.resolve(path).protected is not None
            except PathRefused:
                protected[path] = True
        if not protected[path]:
            kept.append(line)
    return kept, len(lines) - len(kept)


TOOL = catalog_tool(
    "grep_search",
    "Search the project's files for text (or a regular expression); returns path:line: text.",
    {
        "query": {"type": "string"},
        "is_regexp": {"type": "boolean", "description": "Treat the query as a regular expression"},
        "include_pattern": {"type": "string", "description": "Only search files matching this glob"},
    },
    ["query"],
    cmds=[search],
    opts={"timeout": DEFAULT_TIMEOUT_MS},
)
