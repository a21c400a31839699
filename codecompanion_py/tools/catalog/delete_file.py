"""delete_file: remove one file; always asks, even in YOLO mode."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import ToolError
from ..contract import ToolRun
from . import documents
from .schema import FILEPATH, catalog_tool


def setup(self: ToolRun, tools: Any) -> None:
    self.target = documents.resolve(self, self.args.get("filepath"))
    if not self.target.exists:
        raise ToolError(f"{self.target.relative} does not exist")


async def delete(self: ToolRun, args: dict[str, Any], input: Any, output_handler: Any) -> dict[str, Any]:
    buffer = await self.context.editor.call("buffer.get", {"path": str(self.target.real)})
    if isinstance(buffer, Mapping) and buffer.get("modified"):
        raise ToolError(f"{self.target.relative} has unsaved changes in the editor; not deleted")
    self.context.workspace.delete(self.target)
    return {"status": "success", "data": f"Deleted {self.target.relative}."}


TOOL = catalog_tool(
    "delete_file",
    "Delete a file in the project.",
    {"filepath": FILEPATH},
    ["filepath"],
    strict=True,
    cmds=[delete],
    handlers={"setup": setup},
    output={"prompt": lambda self, tools: f"Delete {self.target.relative}?"},
    gates={"judge_context": lambda self, tools: f"Delete the file: {self.target.relative}"},
    opts={
        "requires_approval": True,
        "require_cmd_approval": True,
        "allowed_in_yolo_mode": False,
        "judge_in_yolo_mode": False,
    },
)
