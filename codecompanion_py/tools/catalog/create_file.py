"""create_file: a new file with the given content (never overwrites)."""

from __future__ import annotations

from typing import Any

from ...errors import ToolError
from ..contract import ToolRun
from ..edits import unified_diff
from . import documents
from .schema import FILEPATH, catalog_tool


def setup(self: ToolRun, tools: Any) -> None:
    self.target = documents.resolve(self, self.args.get("filepath"))
    if self.target.exists:
        raise ToolError(f"{self.target.relative} already exists; use insert_edit_into_file to change it")
    # a new file gets "\n" line endings even when the LLM sends "\r\n" (some models do)
    self.content = self.args["content"].replace("\r\n", "\n")
    self.approval_detail = "\n".join(
        filter(None, [self.approval_detail, unified_diff(self.target.relative, "", self.content)])
    )


async def create(self: ToolRun, args: dict[str, Any], input: Any, output_handler: Any) -> dict[str, Any]:
    written = self.context.workspace.create_text(self.target, self.content)
    self.context.reads[str(self.target.real)] = written.sha256
    self.context.fire(
        "FileEdited", {"path": str(self.target.real), "relative": self.target.relative, "tool": "create_file"}
    )
    return {"status": "success", "data": f"Created {self.target.relative}."}


TOOL = catalog_tool(
    "create_file",
    "Create a new file in the project with the given content. Parent folders are created.",
    {"filepath": FILEPATH, "content": {"type": "string", "description": "The whole content of the file"}},
    ["filepath", "content"],
    strict=True,
    cmds=[create],
    handlers={"setup": setup},
    output={"prompt": lambda self, tools: f"Create {self.target.relative}?"},
    # CodeCompanion 19's defaults: no question before, the diff to confirm (asked once).
    opts={"require_approval_before": False, "require_confirmation_after": True},
    previews=True,
)
