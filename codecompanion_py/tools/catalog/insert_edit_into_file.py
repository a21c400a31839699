"""insert_edit_into_file: search/replace edits, or append/overwrite, reviewed as a diff.

The edit is computed in setup. With CodeCompanion's defaults it is written, then reviewed in
the buffer (require_confirmation_after: the editor's diff review, the LLM told what was
rejected); with require_approval_before (`true`, or CodeCompanion's `{ buffer = ..., file = ... }`
for a file open in a buffer or not) the approval shows the exact diff first. The write
refuses if the file or buffer changed in between. Placeholders such as
`... existing code ...` are refused (they would replace real code); an edit that deletes
most of a file always asks, even in YOLO mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import ToolError
from ..contract import APPROVAL, ToolRun
from ..edits import Edit, apply_edits, apply_mode, unified_diff
from . import documents
from .schema import FILEPATH, catalog_tool

MODES = ("edit", "append", "overwrite")


async def setup(self: ToolRun, tools: Any) -> None:
    self.target = documents.resolve(self, self.args.get("filepath"))
    self.document = await documents.open_document(self, self.target, exact=True)
    documents.check_not_stale(self, self.document)
    mode = self.args.get("mode") or "edit"
    if mode == "edit":
        raw_edits = self.args.get("edits")
        if not isinstance(raw_edits, list) or not raw_edits:
            raise ToolError(
                "`edits` must be a non-empty list of {oldText, newText, replaceAll} objects "
                "(or use mode append/overwrite with `content`)"
            )
        edits = [Edit.from_args(_unix_edit(raw), i) for i, raw in enumerate(raw_edits, 1)]
        outcome = apply_edits(self.document.text, edits)
    else:
        if not isinstance(self.args.get("content"), str):
            raise ToolError(f"mode {mode} needs `content`: the text to {mode}")
        outcome = apply_mode(self.document.text, mode, _unix(self.args["content"]))
    placeholders = [w for w in outcome.warnings if "placeholder" in w.lower()]
    if placeholders:
        raise ToolError("; ".join(placeholders) + ". Write out the real code: placeholders would replace it.")
    if outcome.warnings:
        self.must_ask = "; ".join(outcome.warnings)
    self.new_text = outcome.text
    self.notes = outcome.notes
    diff = unified_diff(self.target.relative, self.document.text, self.new_text)
    self.approval_detail = "\n".join(filter(None, [self.approval_detail, diff]))
    # reviewed after it is written, in the buffer (require_confirmation_after): the orchestrator
    # hands this to the editor's diff review
    self.review = {"path": str(self.target.real), "relative": self.target.relative, "before": self.document.text}
    if self.document.raw is not None:  # written on disk: a rejection puts back these exact bytes
        self.review["original"] = self.document.raw


def _unix(text: str) -> str:
    """The LLM's text with CRLF line endings as LF, like the document's text: the write gives
    the file its own line endings back (without this a CRLF file would get CR CR LF)."""
    return text.replace("\r\n", "\n")


def _unix_edit(raw: Any) -> Any:
    if not isinstance(raw, dict):
        return raw  # Edit.from_args explains what is wrong with it
    return {
        key: _unix(value) if key in ("oldText", "newText") and isinstance(value, str) else value
        for key, value in raw.items()
    }


async def write(self: ToolRun, args: dict[str, Any], input: Any, output_handler: Any) -> dict[str, Any]:
    message = await documents.save(self, self.document, self.new_text)
    notes = "".join(f"\n- {note}" for note in self.notes)
    return {"status": "success", "data": message + notes}


def prompt_condition(self: ToolRun, tools: Any, opts: Any) -> bool:
    """CodeCompanion's table form of `require_approval_before`: `buffer` decides for a file
    open in a buffer, `file` for one that is not (a plain `true` asks for both)."""
    rule = self.opts.get(APPROVAL)
    if not isinstance(rule, Mapping):
        return bool(rule)
    return bool(rule.get("buffer" if self.document.buffer is not None else "file"))


def prompt(self: ToolRun, tools: Any) -> str:
    explanation = self.args.get("explanation")
    return f"Apply this edit to {self.target.relative}?" + (f" ({explanation})" if explanation else "")


TOOL = catalog_tool(
    "insert_edit_into_file",
    "Edit a file in the project. Each edit replaces oldText, copied exactly from the file with enough "
    "surrounding lines to be unique, by newText. Never use placeholders like '... existing code ...'. "
    "mode append adds `content` at the end; mode overwrite replaces the whole file with `content`.",
    {
        "filepath": FILEPATH,
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "oldText": {"type": "string"},
                    "newText": {"type": "string"},
                    "replaceAll": {"type": "boolean"},
                },
                "required": ["oldText", "newText"],
            },
        },
        "mode": {"type": "string", "enum": list(MODES)},
        "content": {"type": "string", "description": "For mode append or overwrite"},
        "explanation": {"type": "string", "description": "One sentence: why this edit"},
    },
    ["filepath"],
    cmds=[write],
    handlers={"setup": setup, "prompt_condition": prompt_condition},
    output={"prompt": prompt},
    # CodeCompanion 19's defaults: no question before, the diff to confirm (asked once).
    opts={"require_approval_before": False, "require_confirmation_after": True},
    previews=True,
)
