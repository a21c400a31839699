"""get_changed_files: the project's git changes (staged, unstaged, merge conflicts)."""

from __future__ import annotations

from typing import Any

from ..contract import ToolRun
from ..search import changed_files
from .schema import catalog_tool

STATES = ["staged", "unstaged", "merge-conflicts"]


async def changes(self: ToolRun, args: dict[str, Any], input: Any, output_handler: Any) -> dict[str, Any]:
    states = args.get("source_control_state") or STATES
    text = await changed_files(self.context.workspace.root, states, max_lines=int(self.opts.get("max_lines", 1000)))
    return {"status": "success", "data": text}


TOOL = catalog_tool(
    "get_changed_files",
    "Show the git diffs of the project: staged, unstaged and files with merge conflicts.",
    {"source_control_state": {"type": "array", "items": {"type": "string", "enum": STATES}}},
    [],
    cmds=[changes],
)
