"""memory: CodeCompanion's memory directory, `/memories` (the project's `memories/` folder),
plus the folders the user mounts with `opts.whitelist = { { path = "/abs", as = "/alias" } }`.

Paths come from the model: each must start with a mount's prefix, may not hold `..`, and is
resolved by a `Workspace` rooted at the mount, so a symlink that leads out is refused like
any other path out of a project. Writes and reads are size-capped.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import CodeCompanionError, ToolError
from ..contract import ToolRun
from ..workspace import Target, Workspace
from .schema import catalog_tool

MEMORY_DIR = "memories"
MAX_FILE_BYTES = 1_000_000  # what one memory file may hold
MAX_VIEW_CHARS = 16_000  # as the schema tells the model
MAX_LISTED = 500
COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")


@dataclass(frozen=True)
class Mount:
    prefix: str  # "/memories", or a whitelist entry's `as`
    root: Path


def mounts(project: Path, whitelist: Any) -> list[Mount]:
    """The memory directory and the user's whitelist, longest prefix first (so "/memories"
    never takes "/memoriesbackup")."""
    found = [Mount(f"/{MEMORY_DIR}", project / MEMORY_DIR)]
    for entry in whitelist if isinstance(whitelist, list) else []:
        if isinstance(entry, Mapping) and isinstance(entry.get("path"), str) and isinstance(entry.get("as"), str):
            if entry["path"] and entry["as"]:
                alias = "/" + entry["as"].strip("/")
                found.append(Mount(alias, Path(os.path.expanduser(entry["path"]))))
    return sorted(found, key=lambda m: len(m.prefix), reverse=True)


@dataclass
class Place:
    """A memory path resolved inside its mount."""

    shown: str
    mount: Mount
    relative: str  # "" for the mount's own folder

    def workspace(self, *, create: bool = False) -> Workspace:
        root = self.mount.root
        if create and not os.path.lexists(root):
            root.mkdir(parents=True)
        if os.path.islink(root) or not root.is_dir():
            raise ToolError(f"{self.mount.prefix} is not a folder (or is a symlink); nothing was done")
        return Workspace(root)

    def target(self, ws: Workspace) -> Target:
        try:
            return ws.resolve(self.relative)
        except CodeCompanionError as error:
            raise ToolError(f"{self.shown}: {error}") from None


def place(raw: Any, all_mounts: list[Mount]) -> Place:
    if not isinstance(raw, str) or not raw.strip():
        raise ToolError("`path` must be a non-empty path under /memories")
    path = raw.strip()
    if "\0" in path:
        raise ToolError("the path contains a NUL character")
    for mount in all_mounts:
        rest = path[len(mount.prefix) :] if path.startswith(mount.prefix) else None
        if rest is None or (rest and not rest.startswith("/")):
            continue
        parts = [p for p in rest.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise ToolError(f"{path}: '..' is not allowed in memory paths")
        return Place(path[:200], mount, "/".join(parts))
    prefixes = ", ".join(m.prefix for m in all_mounts)
    raise ToolError(f"{path[:200]}: memory paths start with one of {prefixes}")


def _is_dir(ws: Workspace, where: Place) -> bool:
    if not where.relative:
        return True
    target = where.target(ws)
    st = os.lstat(target.real) if target.exists else None
    return st is not None and stat.S_ISDIR(st.st_mode)


def _listing(root: Path, depth: int = 2) -> Iterator[str]:
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        if entry.name.startswith(".") or entry.name == "node_modules":
            continue
        folder = entry.is_dir(follow_symlinks=False)
        yield entry.name + ("/" if folder else "")
        if folder and depth > 1:
            yield from (f"{entry.name}/{name}" for name in _listing(Path(entry.path), depth - 1))


def view(where: Place, view_range: Any) -> str:
    if not os.path.isdir(where.mount.root) and not where.relative:
        return f"Directory: {where.shown}\n(empty)"
    ws = where.workspace()
    if _is_dir(ws, where):
        root = where.target(ws).real if where.relative else ws.root
        names = [n for _, n in zip(range(MAX_LISTED + 1), _listing(root), strict=False)]
        more = "\n- ... (more left out)" if len(names) > MAX_LISTED else ""
        body = "\n".join(f"- {n}" for n in names[:MAX_LISTED]) or "(empty)"
        return f"Directory: {where.shown}\n{body}{more}"
    lines = _read(ws, where).splitlines()
    first, last = 1, len(lines)
    if isinstance(view_range, list) and len(view_range) == 2 and all(isinstance(n, int) for n in view_range):
        first, last = max(1, view_range[0]), (len(lines) if view_range[1] == -1 else min(view_range[1], len(lines)))
        if first > last:
            raise ToolError(f"view_range {view_range}: the first line is after the last ({len(lines)} lines)")
    text = "\n".join(f"{n:6}\t{line}" for n, line in enumerate(lines[first - 1 : last], start=first))
    if len(text) > MAX_VIEW_CHARS:
        text = text[:MAX_VIEW_CHARS] + "\n... (cut at 16,000 characters; view a smaller range)"
    return text


def _read(ws: Workspace, where: Place) -> str:
    target = where.target(ws)
    if not target.exists:
        raise ToolError(f"{where.shown} does not exist")
    try:
        return ws.read_text(target, max_bytes=MAX_FILE_BYTES).text
    except CodeCompanionError as error:
        raise ToolError(f"{where.shown}: {error}") from None


def _write(ws: Workspace, where: Place, text: str) -> None:
    if len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        raise ToolError(f"{where.shown}: a memory file holds at most {MAX_FILE_BYTES:,} bytes; nothing was written")
    try:
        target = where.target(ws)
        if target.exists:
            ws.write_text(target, text)
        else:
            ws.create_text(target, text)
    except CodeCompanionError as error:
        raise ToolError(f"{where.shown}: {error}") from None


def create(where: Place, text: Any) -> str:
    if not where.relative:
        raise ToolError(f"{where.shown} is the memory folder itself; give a file path under it")
    ws = where.workspace(create=True)
    parts = where.relative.split("/")
    for depth in range(1, len(parts)):  # parent folders, each confined before it is made
        folder = Place(where.shown, where.mount, "/".join(parts[:depth])).target(ws)
        if not folder.exists:
            os.mkdir(folder.real)
    _write(ws, where, text if isinstance(text, str) else "")
    return f"Created file at {where.shown}"


def str_replace(where: Place, old: Any, new: Any) -> str:
    if not isinstance(old, str) or not old:
        raise ToolError("str_replace needs `old_str`, the exact text to replace")
    ws = where.workspace()
    text = _read(ws, where)
    found = text.count(old)
    if found != 1:
        raise ToolError(
            f"old_str is {'not in' if not found else f'{found} times in'} {where.shown}; it must be there once"
        )
    _write(ws, where, text.replace(old, new if isinstance(new, str) else "", 1))
    return f"Replaced text in {where.shown}"


def insert(where: Place, line: Any, text: Any) -> str:
    if not isinstance(line, int) or isinstance(line, bool) or not isinstance(text, str):
        raise ToolError("insert needs `insert_line` (a line number) and `insert_text`")
    ws = where.workspace()
    lines = _read(ws, where).splitlines(keepends=True)
    if not 0 <= line <= len(lines):
        raise ToolError(f"insert_line {line} is outside {where.shown} (0 to {len(lines)})")
    if lines and line == len(lines) and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    lines.insert(line, text)
    _write(ws, where, "".join(lines))
    return f"Inserted text at line {line} in {where.shown}"


def delete(where: Place) -> str:
    if not where.relative:
        raise ToolError(f"{where.shown} is a memory root; only what is in it can be deleted")
    ws = where.workspace()
    target = where.target(ws)
    if not target.exists:
        raise ToolError(f"{where.shown} does not exist")
    try:
        if _is_dir(ws, where):
            os.rmdir(target.real)  # only an empty folder: its files are deleted one by one
        else:
            ws.delete(target)
    except OSError:
        raise ToolError(f"{where.shown} is a folder that is not empty; delete its files first") from None
    except CodeCompanionError as error:
        raise ToolError(f"{where.shown}: {error}") from None
    return f"Deleted {where.shown}"


def rename(old: Place, new: Place) -> str:
    if not old.relative or not new.relative:
        raise ToolError("a memory root cannot be renamed, nor anything renamed to one")
    if old.mount != new.mount:
        raise ToolError("rename within one memory folder; create the file in the other and delete this one")
    ws = old.workspace()
    source, destination = old.target(ws), new.target(ws)
    if not source.exists:
        raise ToolError(f"{old.shown} does not exist")
    if destination.exists:
        raise ToolError(f"{new.shown} already exists; nothing was renamed")
    if source.link is not None:
        raise ToolError(f"{old.shown} is a symlink; only files and folders are renamed")
    os.rename(source.real, destination.real)
    return f"Renamed {old.shown} to {new.shown}"


async def run(self: ToolRun, args: dict[str, Any], input: Any, output_handler: Any) -> dict[str, Any]:
    command = args.get("command")
    all_mounts = mounts(self.context.workspace.root, self.opts.get("whitelist"))
    try:
        if command == "view":
            where = place(args.get("path"), all_mounts)
            body = view(where, args.get("view_range"))
            return {"status": "success", "data": f'<memoryTool filepath="{where.shown}">{body}</memoryTool>'}
        if command == "rename":
            said = rename(place(args.get("old_path"), all_mounts), place(args.get("new_path"), all_mounts))
        elif command == "create":
            said = create(place(args.get("path"), all_mounts), args.get("file_text"))
        elif command == "str_replace":
            said = str_replace(place(args.get("path"), all_mounts), args.get("old_str"), args.get("new_str"))
        elif command == "insert":
            said = insert(place(args.get("path"), all_mounts), args.get("insert_line"), args.get("insert_text"))
        elif command == "delete":
            said = delete(place(args.get("path"), all_mounts))
        else:
            raise ToolError(f"unknown command {str(command)[:40]!r}; use one of {', '.join(COMMANDS)}")
    except OSError as error:
        raise ToolError(f"memory {command}: {error.strerror or error}") from None
    return {"status": "success", "data": f"<memoryTool>{said}</memoryTool>"}


def prompt(self: ToolRun, tools: Any) -> str:
    args = self.args
    if args.get("command") == "rename":
        return f"Rename the memory {args.get('old_path')} to {args.get('new_path')}?"
    return f"Memory: {args.get('command')} {args.get('path')}?"


_STRING = {"type": "string"}
TOOL = catalog_tool(
    "memory",
    "Read, write and organise your own memory: files under /memories, kept between conversations "
    "and empty at first. Structure it as you like.\n"
    "* view: a folder lists its files two levels deep (hidden ones and node_modules left out); a "
    "file shows numbered lines, cut at 16000 characters.\n"
    "* create: creates or overwrites a text file with file_text.\n"
    "* str_replace: replaces old_str, which must appear exactly once, by new_str (none: deletes it).\n"
    "* insert: inserts insert_text after line insert_line (0: at the start).\n"
    "* delete: deletes a file or an empty folder. rename: moves old_path to new_path.\n"
    "* Only paths under /memories (and folders the user added) can be used; /memories itself "
    "cannot be deleted or renamed. Keep the memory current and tidy; prefer updating files to "
    "adding new ones.",
    {
        "command": {"type": "string", "enum": list(COMMANDS), "description": "The operation"},
        "path": {**_STRING, "description": "For view, create, str_replace, insert, delete: a path under /memories"},
        "view_range": {
            "type": "array",
            "items": {"type": "integer"},
            "description": "For view of a file: [first_line, last_line] from 1; -1 as last means the end",
        },
        "file_text": {**_STRING, "description": "For create: the whole text of the file"},
        "old_str": {**_STRING, "description": "For str_replace: the exact text, found once"},
        "new_str": {**_STRING, "description": "For str_replace: its replacement"},
        "insert_line": {"type": "integer", "description": "For insert: the line the text goes after, 0 for the start"},
        "insert_text": {**_STRING, "description": "For insert: the text, ending in a newline"},
        "old_path": {**_STRING, "description": "For rename: the current path"},
        "new_path": {**_STRING, "description": "For rename: the new path"},
    },
    ["command"],
    cmds=[run],
    output={"prompt": prompt},
    system_prompt=(
        "- Before answering about earlier conversations, look in your memory (the memory tool).\n"
        "- Save important decisions, summaries and insights there as the conversation goes.\n"
        "- When the context is unclear, look for related topics in memory first.\n"
        "- Update existing memory files rather than adding new ones, unless the topic is new.\n"
        "- Say when you use something from memory; if nothing relevant is there, tell the user and "
        "ask whether to start a new topic or save this one."
    ),
    opts={"require_approval_before": True, "whitelist": []},
)
