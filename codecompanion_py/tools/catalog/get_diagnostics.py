"""get_diagnostics: the editor's diagnostics (LSP, linters) for a file open in Neovim."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..contract import ToolRun
from . import documents
from .schema import FILEPATH, catalog_tool

SEVERITIES = ["ERROR", "WARN", "INFO", "HINT"]


def setup(self: ToolRun, tools: Any) -> None:
    # before the approval step, so a protected file (its lines are quoted) asks the user
    self.target = documents.resolve(self, self.args.get("filepath"))


async def diagnostics(self: ToolRun, args: dict[str, Any], input: Any, output_handler: Any) -> dict[str, Any]:
    target = self.target
    reply = await self.context.editor.call("diagnostics", {"path": str(target.real)})
    reply = reply if isinstance(reply, Mapping) else {}
    if not reply.get("loaded"):
        return {
            "status": "success",
            "data": f"{target.relative} is not open in the editor, so it has no "
            "diagnostics; read it or run the project's checks instead.",
        }
    wanted = args.get("severity")
    items = [d for d in reply.get("items") or [] if not wanted or d.get("severity") == wanted]
    if not items:
        return {"status": "success", "data": f"No diagnostics in {target.relative}."}
    lines = [
        f"{target.relative}:{d['line']}:{d['col']}: {d['severity']}: {d['message']}"
        + (f" [{d['source']}]" if d.get("source") else "")
        + f"\n    {str(d.get('code', '')).strip()}"
        for d in items
    ]
    return {"status": "success", "data": "\n".join(lines)}


TOOL = catalog_tool(
    "get_diagnostics",
    "Get the editor's diagnostics (errors, warnings) for a file.",
    {"filepath": FILEPATH, "severity": {"type": "string", "enum": SEVERITIES}},
    ["filepath"],
    cmds=[diagnostics],
    handlers={"setup": setup},
)
