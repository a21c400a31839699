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
from .schema import FILEPATH, catalog_tool, widened

MODES = ("append", "overwrite", "edit")  # "edit": our older name for append


async def setup(self: ToolRun, tools: Any) -> None:
    self.target = documents.resolve(self, self.args.get("filepath"))
    self.document = await documents.open_document(self, self.target, exact=True)
    documents.check_not_stale(self, self.document)
    mode, content = _mode_and_content(self.args)
    if content is None:
        raw_edits = self.args.get("edits")
        if not isinstance(raw_edits, list) or not raw_edits:
            raise ToolError(
                "`edits` must be a non-empty list of {oldText, newText, replaceAll} objects "
                '(mode "overwrite" replaces the whole file with the first edit\'s newText)'
            )
        edits = [Edit.from_args(_unix_edit(raw), i) for i, raw in enumerate(raw_edits, 1)]
        outcome = apply_edits(self.document.text, edits)
    else:
        outcome = apply_mode(self.document.text, mode, _unix(content))
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


def _mode_and_content(args: Mapping[str, Any]) -> tuple[str, str | None]:
    """CodeCompanion's modes: "append" applies the edits, "overwrite" makes the first edit's
    newText the whole file. Our older form is still taken: `content` with mode append (added
    at the end) or overwrite, and mode "edit". (mode, None) means: apply the edits."""
    mode = args.get("mode") or "append"
    if mode not in MODES:
        raise ToolError(f"`mode` must be one of {', '.join(map(repr, MODES))}, not {str(mode)[:40]!r}")
    content = args.get("content")
    if isinstance(content, str) and mode in ("append", "overwrite"):
        return mode, content
    if mode == "overwrite":
        edits = args.get("edits")
        first = edits[0] if isinstance(edits, list) and edits else None
        if not isinstance(first, Mapping) or not isinstance(first.get("newText"), str):
            raise ToolError('mode "overwrite" needs the new file text as `newText` of the first edit')
        return mode, first["newText"]
    return "edit", None


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


TOOL = widened(
    catalog_tool(
        "insert_edit_into_file",
        "Edit a file in the project. Each edit replaces oldText, copied exactly from the file with enough "
        "surrounding lines (a function's signature, names) to be unique, by newText; replaceAll replaces "
        "every occurrence. Never use placeholders like '... existing code ...'. mode append applies the "
        "edits; mode overwrite replaces the whole file with the first edit's newText.",
        {
            "filepath": FILEPATH,
            "edits": {
                "type": "array",
                "description": "The edits, applied in order",
                "items": {
                    "type": "object",
                    "properties": {
                        "oldText": {"type": "string", "description": "Exact text to find, unique in the file"},
                        "newText": {"type": "string", "description": "The text that replaces it"},
                        "replaceAll": {
                            "type": "boolean",
                            "default": False,
                            "description": "Replace every occurrence of oldText, not one",
                        },
                    },
                    "required": ["oldText", "newText", "replaceAll"],
                    "additionalProperties": False,
                },
            },
            "mode": {
                "type": "string",
                "enum": ["append", "overwrite"],
                "default": "append",
                "description": "append: apply the edits; overwrite: the first edit's newText becomes the file",
            },
            "explanation": {"type": "string", "description": "Briefly, what the edits do"},
        },
        ["filepath", "edits", "explanation", "mode"],
        strict=True,
        cmds=[write],
        handlers={"setup": setup, "prompt_condition": prompt_condition},
        output={"prompt": prompt},
        # CodeCompanion 19's defaults: no question before, the diff to confirm (asked once).
        opts={"require_approval_before": False, "require_confirmation_after": True},
        previews=True,
    ),
    ["filepath"],  # our older forms: mode edit, `content` for append/overwrite, replaceAll left out
    edits={"type": "array", "items": {"type": "object"}},  # each edit is checked by Edit.from_args
    mode={"type": "string", "enum": list(MODES)},
    content={"type": "string"},
)
