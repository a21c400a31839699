"""The door every repository file the editor shows or sends comes through: rules files and
their `@path` imports (Lua's `rules.lua` asks with `rules.read`; rules.py finds the files a
group names), and the files the user names: a `#{file:}` (`files.read`, Lua's `files.lua`),
the prompt library's markdown files (prompt_library.py).

It sits beside the engine, not under `tools/`, because the LLM plays no part here: the
editor reads the files for the user. It reuses the file tools' workspace for what a
project file is (real paths, protected names) and how one is read without blocking.

* Only regular files are read, opened with `O_NONBLOCK` after an `lstat`: a FIFO, a device
  (`/dev/zero`) or a socket is refused without waiting on it.
* At most `MAX_FILE_BYTES` per file and `MAX_TOTAL_BYTES` per load; a larger file is left
  out whole (never cut), and said.
* Text is UTF-8, invalid bytes replaced; a file with NUL bytes is no text and is left out.
* A file is judged by its real path (a symlink by its target). A repository file, and what
  it imports, must stay inside the project root and off its protected files (.env, keys,
  .git), unless an allowed path (`rules.opts.allowed_paths`) holds it. Files the user
  names outside the project (`~/.claude/CLAUDE.md`, absolute paths in their config) are read,
  and so are their own imports: the user wrote them.
* Imports go `MAX_DEPTH` deep; a file met twice is read once, so a loop ends.
* A file the user names is read wherever it is, but a name inside the project must lead
  inside it: `docs/notes.md` linking to `~/.ssh/id_rsa` is refused (name that file itself).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec

from .errors import FileTooLarge, PathRefused
from .rules import RuleEntry, RuleFile, expand, rule_files
from .tools.workspace import BINARY_SNIFF_BYTES, protected_reason, read_regular

MAX_FILE_BYTES = 1_000_000
MAX_TOTAL_BYTES = 2_000_000
MAX_DEPTH = 5
MAX_FILES = 200
MAX_IMPORTS = 1000  # `@path` lines followed per load
MAX_PROBLEMS = 20  # sentences said; the rest are counted
ALLOW_OPTION = "rules.opts.allowed_paths"


@dataclass(frozen=True)
class Door:
    """What may be read: the project root, plus the paths the user allowed (real paths)."""

    root: Path
    allowed: tuple[Path, ...] = ()
    home: Path = field(default_factory=Path.home)

    @classmethod
    def of(cls, root: str, allowed: Iterable[str] = (), home: str | None = None) -> Door:
        home_path = Path(home) if home else Path.home()
        real = tuple(
            Path(os.path.realpath(expand(raw, str(home_path)))) for raw in allowed if isinstance(raw, str) and raw
        )
        return cls(Path(os.path.realpath(root or os.getcwd())), real, home_path)

    def inside(self, real: Path) -> bool:
        return real.is_relative_to(self.root)

    def allows(self, real: Path) -> bool:
        return any(real.is_relative_to(path) for path in self.allowed)

    def refusal(self, real: Path) -> str | None:
        """Why a repository file may not read `real`, or None when it may."""
        if self.allows(real) or self.personal_instructions(real):
            return None
        if not self.inside(real):
            return "outside the project"
        return protected_reason(PurePosixPath(real.relative_to(self.root)))

    def personal_instructions(self, real: Path) -> bool:
        """A markdown file in `~/.claude/`: where a CLAUDE.md imports the user's own notes
        from, as Claude Code documents (`@~/.claude/my-instructions.md`). Only markdown:
        the folder also holds Claude Code's credentials and transcripts."""
        claude = Path(os.path.realpath(self.home / ".claude"))
        return real.suffix.lower() == ".md" and real.is_relative_to(claude)

    def show(self, path: Path) -> str:
        """`path` as messages name it: from the project root, else from `~`, else whole."""
        if path.is_relative_to(self.root) and path != self.root:
            return path.relative_to(self.root).as_posix()
        if path.is_relative_to(self.home):
            return "~/" + path.relative_to(self.home).as_posix()
        return str(path)

    def read(self, real: Path, limit: int = MAX_FILE_BYTES) -> str:
        """A regular file's text (at most `limit` bytes), invalid UTF-8 replaced; `PathRefused`
        says why not (`FileTooLarge` above the limit)."""
        shown = self.show(real)
        data = read_regular(real, shown, limit)
        if b"\0" in data[:BINARY_SNIFF_BYTES]:
            raise PathRefused(f"{shown} is not a text file (it holds NUL bytes)")
        return data.decode("utf-8", errors="replace")


def read_named(payload: Mapping[str, Any]) -> list[dict[str, str]]:
    """`files.read` {cwd, home, paths}: for each path (absolute) {content}, or {error} saying why not."""
    cwd = str(payload.get("cwd") or os.getcwd())
    door = Door.of(cwd, (), payload.get("home") or None)
    paths = payload.get("paths")
    out: list[dict[str, str]] = []
    for path in paths if isinstance(paths, list) else ():
        if len(out) >= MAX_FILES:
            out.append({"error": f"left out: at most {MAX_FILES} files are read at once"})
            continue
        try:
            named = Path(os.path.normpath(os.path.join(cwd, str(path))))  # from the editor's cwd, not ours
            out.append({"content": _named(door, named, Path(os.path.normpath(cwd)))})
        except PathRefused as refused:
            out.append({"error": str(refused)})
    return out


def _named(door: Door, path: Path, cwd: Path) -> str:
    real = Path(os.path.realpath(path))
    named_inside = path.is_relative_to(cwd) or path.is_relative_to(door.root)
    # Neovim started in the home folder: that is no cloned project, and its links (dotfiles,
    # a Nix store) are the user's own.
    at_home = door.root == Path(os.path.realpath(door.home))
    if named_inside and not at_home and not door.inside(real):
        shown = door.show(path) if path.is_relative_to(door.root) else str(path.relative_to(cwd))
        raise PathRefused(
            f"{shown} is a link to {door.show(real)}, outside the project; to share that file, name it itself"
        )
    if not real.exists():
        raise PathRefused(f"{door.show(path)} does not exist")
    return door.read(real)


def imports(text: str) -> list[str]:
    """The `@path` lines of a rules file, outside fenced code; one pass over the lines."""
    found, fenced = [], False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and stripped.startswith("@") and len(stripped) > 1 and not any(c.isspace() for c in stripped):
            found.append(stripped[1:])
    return found


def system_prompt_section(text: str) -> tuple[str, str]:
    """A `codecompanion` rules file split as CodeCompanion's parser splits it: its `## System
    Prompt` section (up to the next `#` or `##` heading, its `@` lines left out) and the rest."""
    prompt: list[str] = []
    rest: list[str] = []
    inside = fenced = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and _SECTION.match(stripped):
            inside = stripped.startswith("## ") and stripped[3:].strip().lower() == "system prompt"
            if inside:
                continue
        if not inside:
            rest.append(line)
        elif not stripped.startswith("@"):
            prompt.append(line)
    return "\n".join(prompt).strip(), "\n".join(rest)


_SECTION = re.compile(r"#{1,2}\s")


@dataclass
class RulesLoad:
    """One `rules.read`: the files read ({path, content}) and one sentence per problem."""

    door: Door
    items: list[dict[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seen: set[Path] = field(default_factory=set)
    left: int = MAX_TOTAL_BYTES
    imports: int = 0
    unsaid: int = 0
    capped: list[str] = field(default_factory=list)  # files left out for the load's caps

    def say(self, problem: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)
        else:
            self.unsaid += 1

    def summary(self) -> list[str]:
        """The problems, with the files the caps left out and the rest counted in one line each."""
        out = list(self.problems)
        if self.capped:
            names = ", ".join(self.capped[:5]) + (f" and {len(self.capped) - 5} more" if len(self.capped) > 5 else "")
            out.append(
                f"{names} left out: the rules read at most {MAX_FILES} files and {_size(MAX_TOTAL_BYTES)} in all"
            )
        if self.unsaid:
            out.append(f"and {self.unsaid} more problems")
        return out

    def add(
        self, path: str, parser: str | None, *, trusted: bool, depth: int = 0, importer: str = "", written: str = ""
    ) -> None:
        """Read `path` and what it imports; `importer` and `written`: the file that imports it, as it names it."""
        door = self.door
        real = Path(os.path.realpath(path))
        if not os.path.lexists(path) or not real.exists():
            if importer:
                self.say(f"{importer} imports {door.show(Path(path))}, which does not exist")
            return
        if real in self.seen:
            if importer:
                self.say(f"{importer} imports {door.show(real)} again (an import loop?): it is sent once")
            return
        why = None if trusted else door.refusal(real)
        if why is not None:
            named = written or door.show(Path(path))
            link = f" (a link to {door.show(real)})" if Path(path) != real and named != door.show(real) else ""
            what = f"{importer} imports {named}{link}" if importer else f"{named}{link}"
            self.say(f"{what}, which is {why}: not read (to allow it, add it to {ALLOW_OPTION})")
            return
        if len(self.seen) >= MAX_FILES:
            self.capped.append(door.show(real))
            return
        self.seen.add(real)
        try:
            text = door.read(real, min(MAX_FILE_BYTES, self.left))
        except FileTooLarge as large:
            if large.limit < MAX_FILE_BYTES:
                self.capped.append(door.show(real))
            else:
                self.say(f"{door.show(real)} is larger than {_size(MAX_FILE_BYTES)}, the most a rules file may hold")
            return
        except PathRefused as refused:
            self.say(f"{importer} imports {door.show(real)}: {refused}" if importer else str(refused))
            return
        self.left -= len(text.encode("utf-8", errors="replace"))
        item = {"path": str(real), "content": text} | ({"parser": parser} if parser else {})
        if parser == "codecompanion":
            prompt, item["content"] = system_prompt_section(text)
            if prompt:
                item["system_prompt"] = prompt
        self.items.append(item)
        if parser not in ("claude", "codecompanion"):
            return
        label = door.show(real)
        # A file of the user's own outside the project may import what it likes.
        trusted_imports = trusted and not door.inside(real)
        for name in imports(text):
            self.imports += 1
            if self.imports > MAX_IMPORTS:
                self.say(f"{label}: @{name} and the imports after it were left out ({MAX_IMPORTS} at most)")
                return
            if depth >= MAX_DEPTH:
                self.say(f"{label}: @{name} is deeper than {MAX_DEPTH} imports and was left out")
            else:
                self.add(
                    self.locate(name, real.parent),
                    parser,
                    trusted=trusted_imports,
                    depth=depth + 1,
                    importer=label,
                    written=name,
                )

    def locate(self, name: str, beside: Path) -> str:
        """An import's path: `~`, `$VAR` and absolute as they are; else beside the file, then in the root."""
        raw = expand(name, str(self.door.home))
        if raw.startswith("/"):
            return os.path.normpath(raw)
        near = os.path.normpath(beside / raw)
        return near if os.path.lexists(near) else os.path.normpath(self.door.root / raw)


def load_rules(payload: Mapping[str, Any]) -> dict[str, list[Any]]:
    """`rules.read` {cwd, home, allowed, entries: [RuleEntry], files: [{path, parser, named}]}:
    {items, problems}. The entries (a group's, as Lua flattens it) name files (rules.py); the
    files are named already."""
    cwd = str(payload.get("cwd") or os.getcwd())
    door = Door.of(cwd, payload.get("allowed") or (), payload.get("home") or None)
    load = RulesLoad(door)
    entries = msgspec.convert(payload.get("entries") or [], list[RuleEntry])
    found, problems = rule_files(entries, cwd, str(door.home))
    for problem in problems:
        load.say(problem)
    for file in _rule_files(payload.get("files")) + found:
        load.add(os.path.join(cwd, file.path), file.parser, trusted=file.named)
    return {"items": load.items, "problems": load.summary()}


def _rule_files(entries: Any) -> list[RuleFile]:
    files = []
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, Mapping) and isinstance(entry.get("path"), str):
            parser = entry.get("parser")
            named = entry.get("named") is True
            files.append(RuleFile(entry["path"], parser if isinstance(parser, str) else None, named))
    return files


def _size(count: int) -> str:
    return f"{count / 1_000_000:g} MB" if count >= 1_000_000 else f"{count / 1000:.0f} KB"


__all__ = ["Door", "RulesLoad", "imports", "load_rules", "read_named", "system_prompt_section"]
