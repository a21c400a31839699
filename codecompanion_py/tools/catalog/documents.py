"""A file as the file tools see it: the editor's buffer when it is loaded, else the disk.

Reading through the buffer means the LLM sees the user's unsaved text; writing through it
makes the edit one undo step that never clobbers that text. A clean buffer is saved after
the edit, so commands the LLM runs next see the change; a buffer with unsaved changes is
left unsaved, and the LLM is told. Files not loaded are written atomically by the
workspace, refused if they changed since the LLM read them (content hash, not mtime).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import PathRefused, ToolError
from ..context import ToolsContext
from ..contract import ToolRun
from ..edits import keep_line_endings
from ..lines import split_lines
from ..workspace import FileText, Target, sha256_of

_BUFFER = "buffer:"


@dataclass(frozen=True)
class Document:
    target: Target
    text: str  # "\n" line endings; ends with "\n" when the file does (disk and buffer alike)
    version: str  # disk: sha256 of the bytes; buffer: "buffer:" + sha256 of the text
    newline: str = "\n"
    final_newline: bool = True
    buffer: Mapping[str, Any] | None = None  # bufnr, changedtick, modified
    raw: str | None = None  # disk: the exact text, each line with its own ending (CRLF, LF)


def resolve(run: ToolRun, raw: Any, *, kind: str = "file") -> Target:
    """Resolve the LLM's path; a protected path makes this call always ask."""
    if not isinstance(raw, str):
        raise ToolError(f"`filepath` must be a string path relative to the project root, got {raw!r}")
    target = run.context.workspace.resolve(raw)
    if target.protected:
        run.must_ask = f"{target.relative} is {target.protected}"
    if target.real != run.context.workspace.root / target.relative:
        run.approval_detail = f"{target.relative} resolves to {target.real}"
    return target


async def open_document(run: ToolRun, target: Target, *, exact: bool = False) -> Document:
    return await load(run.context, target, exact=exact)


async def load(context: ToolsContext, target: Target, *, exact: bool = False) -> Document:
    """The file as the user sees it: the loaded buffer (unsaved text included), else disk.
    `exact`, for a document that will be written: from disk, its exact text too."""
    buffer = await context.editor.call("buffer.get", {"path": str(target.real)}) if target.exists else None
    if isinstance(buffer, Mapping) and isinstance(buffer.get("lines"), list):
        eol = buffer.get("eol", True) is not False
        text = "\n".join(buffer["lines"]) + ("\n" if eol and buffer["lines"] else "")
        return Document(target, text, _buffer_version(text), final_newline=eol, buffer=buffer)
    if not target.exists:
        raise PathRefused(f"{target.relative} does not exist; use create_file to make a new file")
    disk: FileText = context.workspace.read_text(target)
    raw = _raw(context, target, disk) if exact else None
    return Document(target, disk.text, disk.sha256, disk.newline, disk.final_newline, raw=raw)


def _raw(context: ToolsContext, target: Target, disk: FileText) -> str | None:
    """The file's exact text, line endings as they are (the text above has "\\n" alone), or
    None if it changed in between (then the write refuses anyway)."""
    data, _ = context.workspace.read_bytes(target)
    try:
        return data.decode("utf-8") if sha256_of(data) == disk.sha256 else None
    except UnicodeDecodeError:  # text read with its bad bytes replaced: no exact text to keep
        return None


def remember_read(run: ToolRun, document: Document) -> None:
    run.context.reads[str(document.target.real)] = document.version


def check_not_stale(run: ToolRun, document: Document) -> None:
    """Refuse to edit a file that changed since the LLM last read it."""
    seen = run.context.reads.get(str(document.target.real))
    if (
        seen is not None
        and seen != document.version
        and seen.startswith(_BUFFER) == document.version.startswith(_BUFFER)
    ):
        raise ToolError(f"{document.target.relative} changed since you last read it; read it again before editing")


async def save(run: ToolRun, document: Document, text: str) -> str:
    return await store(run.context, document, text, tool=run.name)


async def store(context: ToolsContext, document: Document, text: str, *, tool: str) -> str:
    """Write `text` where the document came from, fire `FileEdited` (with what made the
    change: `tool`, a tool's or an agent's name, as CodeCompanion sends it); returns a sentence
    for the LLM saying where the edit went."""
    relative = document.target.relative
    if document.buffer is not None:
        reply = await context.editor.call(
            "buffer.set",
            {
                "bufnr": document.buffer["bufnr"],
                "changedtick": document.buffer["changedtick"],
                "lines": _buffer_lines(text),
                "save": True,
            },
        )
        context.reads[str(document.target.real)] = _buffer_version(text)
        saved = isinstance(reply, Mapping) and reply.get("saved")
        where = (
            "in the open buffer and saved"
            if saved
            else "in the open buffer, which has unsaved changes of the user, so it was not saved to disk"
        )
    else:
        if document.raw is not None:  # a CRLF or mixed file: each untouched line keeps its ending
            text = keep_line_endings(document.raw, _final_newline(text, document.final_newline), document.newline)
        written = context.workspace.write_text(
            document.target,
            text,
            expected_sha256=document.version,
            newline="\n" if document.raw is not None else document.newline,
            final_newline=None if document.raw is not None else document.final_newline,
        )
        context.reads[str(document.target.real)] = written.sha256
        where = "on disk"
    context.fire("FileEdited", {"path": str(document.target.real), "relative": relative, "tool": tool})
    return f"{relative} was edited {where}."


def _final_newline(text: str, wanted: bool) -> str:
    """`text` ending with a line feed exactly when the file did."""
    if wanted != text.endswith("\n"):
        return text + "\n" if wanted else text[:-1]
    return text


def _buffer_lines(text: str) -> list[str]:
    """A buffer's lines for `text`; its final line feed is the buffer's 'eol', not a line,
    and a buffer always has one line, if empty."""
    return split_lines(text) or [""]


def _buffer_version(text: str) -> str:
    return _BUFFER + hashlib.sha256(text.encode()).hexdigest()
