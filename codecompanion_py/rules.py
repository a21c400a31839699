"""Which files a rules group names (CodeCompanion's `rules`), before the repository door
reads them (repository.py). Lua flattens a group into entries (it runs the `enabled`
functions a config may hold); here each entry becomes files, as CodeCompanion reads it:

* a file (left out when it is not there);
* a directory: every file under it;
* a glob ("docs/**/*.md"): its matches, a matched directory's files too, searched from the
  glob's last folder without a wildcard;
* `{ path = ".", files = { "*.md" } }`: the files under the directory whose names match.

Searches skip .git and node_modules, follow no linked folder, look at `MAX_VISITS` entries
at most (`~` or `/` as an entry must not hang the editor) and bring `MAX_FILES` files each.
Globs are Neovim's (vim.glob, LSP's syntax), translated to a regular expression once.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache

import msgspec

MAX_FILES = 100  # the most files one entry (a directory, a glob) brings
MAX_VISITS = 20_000  # the most entries one entry's search looks at
SKIPPED = frozenset({".git", "node_modules"})
WILDCARD = re.compile(r"[*?\[{]")


class RuleEntry(msgspec.Struct, frozen=True):
    """One entry of a group, as Lua flattens it: a path, its parser, its name patterns."""

    path: str
    parser: str | None = None
    files: str | list[str] | None = None


@dataclass(frozen=True)
class RuleFile:
    path: str  # absolute
    parser: str | None = None
    named: bool = False  # the user's config names it itself: an absolute, `~` or `../` path


def expand(raw: str, home: str) -> str:
    """`~` and `$VAR` expanded (unset ones left as they are), as the editor expands a path."""
    if raw == "~" or raw.startswith("~/"):
        raw = home + raw[1:]
    return os.path.expandvars(raw)


def rule_files(entries: list[RuleEntry], cwd: str, home: str) -> tuple[list[RuleFile], list[str]]:
    """The files `entries` name, in order, and what is wrong with them (one sentence each)."""
    files: list[RuleFile] = []
    problems: list[str] = []
    for entry in entries:
        paths, problem = _entry_paths(entry, cwd, home)
        if problem:
            problems.append(problem)
        if len(paths) > MAX_FILES:
            problems.append(f"{entry.path} names {len(paths)} files: the first {MAX_FILES} were read")
        files += (RuleFile(path, entry.parser, _named(entry.path)) for path in paths[:MAX_FILES])
    return files, problems


def _entry_paths(entry: RuleEntry, cwd: str, home: str) -> tuple[list[str], str | None]:
    raw = expand(entry.path, home) if "~" in entry.path or "$" in entry.path else entry.path
    path = os.path.normpath(os.path.join(cwd, raw))
    if WILDCARD.search(path) and entry.files is None:
        paths, stopped = _glob(path)
    elif os.path.isdir(path):
        paths, stopped = _scan(path, entry.files)
    elif entry.files is not None:
        return [], f"{entry.path} (a rule entry with `files`) is not a directory"
    else:
        return ([path] if os.path.exists(path) else []), None  # a file that is not there is left out
    if stopped:
        return paths, f"{entry.path}: the search stopped after {MAX_VISITS} files and folders"
    return paths, None


def _named(path: str) -> bool:
    """Whether the config names `path` itself (absolute, `~`, `$VAR`, `../`): the user's own
    file, read wherever it is. Any other entry is a repository file and stays in the project."""
    normal = os.path.normpath(path)
    return path.startswith(("/", "~", "$")) or normal == ".." or normal.startswith("../")


def _walk(folder: str, wanted: re.Pattern[str], basename: bool) -> tuple[list[str], bool]:
    """The files (and links) under `folder` whose path from it (with `basename`, whose name)
    `wanted` matches, sorted; and True when the search stopped after MAX_VISITS entries."""
    found: list[str] = []
    visits = 0
    pending = [""]
    while pending:
        relative = pending.pop()
        try:
            entries = list(os.scandir(os.path.join(folder, relative)))
        except OSError:
            continue
        for entry in entries:
            visits += 1
            if visits > MAX_VISITS:
                return sorted(found), True
            name = f"{relative}/{entry.name}" if relative else entry.name
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIPPED:
                    pending.append(name)
            elif entry.is_file(follow_symlinks=False) or entry.is_symlink():
                if wanted.fullmatch(entry.name if basename else name):
                    found.append(os.path.join(folder, name))
    return sorted(found), False


def _scan(folder: str, patterns: str | list[str] | None) -> tuple[list[str], bool]:
    """The files under `folder` whose names match one of `patterns` (every file when None)."""
    if patterns is None:
        return _walk(folder, re.compile(r".*", re.DOTALL), basename=True)
    names = [patterns] if isinstance(patterns, str) else patterns
    wanted = "|".join(f"(?:{glob_regex(name)})" for name in names) or "(?!)"
    return _walk(folder, re.compile(wanted, re.DOTALL), basename=True)


def _glob(path: str) -> tuple[list[str], bool]:
    """A glob's files: searched from its last folder without a wildcard."""
    found = WILDCARD.search(path)
    assert found is not None
    root, _, _ = path[: found.start()].rpartition("/")
    rest = path[len(root) + 1 :]
    root = root or "/"
    if not os.path.isdir(root):
        return [], False
    # the file, or a folder it is in: one expression, not one per folder
    return _walk(root, re.compile(f"(?:{glob_regex(rest)})(?:/.*)?", re.DOTALL), basename=False)


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> str:
    """A regular expression that matches what Neovim's vim.glob.to_lpeg(pattern) matches: `*`
    one or more characters of a name, `**` (a whole segment) any path, `?` one character of a
    name, `[a-z]` / `[!a-z]` ranges, `{a,b}` alternatives; anything else literally."""
    out, i = [], 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**", i) and (i == 0 or pattern[i - 1] == "/") and pattern[i + 2 : i + 3] in ("", "/"):
            out.append(".*")
            i += 3
        elif char == "*":
            stars = len(pattern[i:]) - len(pattern[i:].lstrip("*"))
            out.append(f"[^/]{{{stars},}}")
            i += stars
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif (found := _class(pattern, i)) is not None:
            out.append(found[0])
            i = found[1]
        elif char == "{" and (found := _alternatives(pattern, i)) is not None:
            out.append(found[0])
            i = found[1]
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


_CLASS = re.compile(r"\[(!?)((?:.-[^\]])+)\]", re.DOTALL)


def _class(pattern: str, i: int) -> tuple[str, int] | None:
    """`[a-z]` or `[!a-z]` at `i` (ranges only, as vim.glob has them) and the index after it."""
    found = _CLASS.match(pattern, i) if pattern.startswith("[", i) else None
    if not found:
        return None
    spans = [(r[0], r[2]) for r in re.findall(r".-.", found[2], re.DOTALL) if r[0] <= r[2]]
    if not spans:  # only empty ranges ("[z-a]"): nothing, or anything at all
        return ("(?s:.)" if found[1] else "(?!)"), found.end()
    ranges = "".join(f"{re.escape(low)}-{re.escape(high)}" for low, high in spans)
    return f"[{'^' if found[1] else ''}{ranges}]", found.end()


def _alternatives(pattern: str, i: int) -> tuple[str, int] | None:
    """`{a,b}` at `i` (each alternative of `?`, ranges and plain characters) and the index after it."""
    end = pattern.find("}", i)
    if end < 0:
        return None
    choices = []
    for choice in pattern[i + 1 : end].split(","):
        parts, j = [], 0
        while j < len(choice):
            found = _class(choice, j)
            if found:
                parts.append(found[0])
                j = found[1]
            else:
                parts.append("[^/]" if choice[j] == "?" else re.escape(choice[j]))
                j += 1
        choices.append("".join(parts))
    return "(?:" + "|".join(choices) + ")", end + 1


__all__ = ["MAX_FILES", "MAX_VISITS", "RuleEntry", "RuleFile", "expand", "glob_regex", "rule_files"]
