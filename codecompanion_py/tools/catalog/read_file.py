"""read_file: a range of lines of a file (the buffer's text when it is open)."""

from __future__ import annotations

from typing import Any

from ...errors import ToolError
from ...words import count
from ..contract import ToolRun
from ..lines import split_lines
from . import documents
from .schema import FILEPATH, catalog_tool, widened


def setup(self: ToolRun, tools: Any) -> None:
    self.target = documents.resolve(self, self.args.get("filepath"))


async def read(self: ToolRun, args: dict[str, Any], input: Any, output_handler: Any) -> dict[str, Any]:
    document = await documents.open_document(self, self.target)
    lines = split_lines(document.text)
    start = _line(args, "start_line_number_base_zero", 0)
    end = _line(args, "end_line_number_base_zero", -1)
    end = len(lines) - 1 if end < 0 else min(end, len(lines) - 1)
    if start < 0 or (lines and start > end):
        raise ToolError(
            f"invalid line range {start}-{end}: {document.target.relative} has {count(len(lines), 'line')} "
            "(numbered from 0; use -1 for the end of the file)"
        )
    documents.remember_read(self, document)
    body = "\n".join(lines[start : end + 1])
    fence = "````" if "```" in body else "```"
    span = f"lines {start}-{end} of {len(lines)} (0-based)" if lines else "empty (0 lines)"
    header = f"{document.target.relative}, {span}:"
    self.summary = f"Read {document.target.relative}, {_span_for_people(start, end, len(lines))}"
    return {"status": "success", "data": f"{header}\n{fence}\n{body}\n{fence}"}


def _line(args: dict[str, Any], name: str, default: int) -> int:
    """A line number as a `number` (2, 2.0 or "2"); missing or null: `default`."""
    value = args.get(name)
    if value is None:
        return default
    try:
        if isinstance(value, bool) or float(value) != int(float(value)):
            raise ValueError
        return int(float(value))
    except (TypeError, ValueError, OverflowError):
        raise ToolError(f"`{name}` must be a whole line number, not {str(value)[:40]!r}") from None


def _span_for_people(start: int, end: int, total: int) -> str:
    """0-based `start`..`end` of `total` lines as a person counts them: "lines 1-6 of 6"."""
    if not total:
        return "empty"
    return f"line {start + 1} of {total}" if start == end else f"lines {start + 1}-{end + 1} of {total}"


def success(self: ToolRun, tools: Any, cmd: Any, stdout: list[Any]) -> None:
    tools.chat.add_tool_output(self, stdout[-1], self.summary)


TOOL = widened(
    catalog_tool(
        "read_file",
        "Read lines of a file in the project. Lines are numbered from 0; end -1 means the end of the file.",
        {
            "filepath": FILEPATH,
            # `number` and all three required, as CodeCompanion's schema (models are tuned on it);
            # a call without the line numbers still reads the whole file
            "start_line_number_base_zero": {"type": "number", "description": "First line to read, from 0"},
            "end_line_number_base_zero": {
                "type": "number",
                "description": "Last line to read, inclusive, from 0; -1 for the end of the file",
            },
        },
        ["filepath", "start_line_number_base_zero", "end_line_number_base_zero"],
        cmds=[read],
        handlers={"setup": setup},
        output={"success": success, "prompt": lambda self, tools: f"Read {self.target.relative}?"},
        opts={"requires_approval": False},
    ),
    ["filepath"],  # without the line numbers: the whole file, as before
)
