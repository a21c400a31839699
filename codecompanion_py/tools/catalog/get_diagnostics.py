"""get_diagnostics: the editor's diagnostics (LSP, linters) for a file open in Neovim."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..contract import ToolRun
from . import documents
from .schema import FILEPATH, catalog_tool, widened

SEVERITIES = ["ERROR", "WARNING", "INFORMATION", "HINT"]  # CodeCompanion's schema names
# Neovim's names, most severe first; the schema's names and Neovim's both accepted
_RANK = {"ERROR": 0, "WARN": 1, "INFO": 2, "HINT": 3}
_NEOVIM = {"WARNING": "WARN", "INFORMATION": "INFO"}


def _rank(name: Any) -> int:
    name = str(name or "HINT").upper()
    return _RANK.get(_NEOVIM.get(name, name), 3)


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
    least = _rank(args.get("severity"))  # as in CodeCompanion, a minimum: WARNING includes errors
    items = [d for d in reply.get("items") or [] if _rank(d.get("severity")) <= least]
    if not items:
        return {"status": "success", "data": f"No diagnostics in {target.relative}."}
    lines = [
        f"{target.relative}:{d['line']}:{d['col']}: {d['severity']}: {d['message']}"
        + (f" [{d['source']}]" if d.get("source") else "")
        + f"\n    {str(d.get('code', '')).strip()}"
        for d in items
    ]
    return {"status": "success", "data": "\n".join(lines)}


TOOL = widened(
    catalog_tool(
        "get_diagnostics",
        "Get the editor's diagnostics (errors, warnings, information, hints) for a file, each with its "
        "line of code. Use it to see what is wrong in a file before fixing it.",
        {
            "filepath": FILEPATH,
            "severity": {
                "type": "string",
                "enum": SEVERITIES,
                "description": "The least severe level to include; HINT (the default) includes all",
            },
        },
        ["filepath"],
        cmds=[diagnostics],
        handlers={"setup": setup},
    ),
    ["filepath"],
    severity={"type": "string", "enum": [*SEVERITIES, "WARN", "INFO"]},  # Neovim's names, sent before
)
