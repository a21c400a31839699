"""Back ends of file_search, grep_search and get_changed_files.

* `list_project_files`: the project's files, .gitignore respected: `git ls-files` inside a
  work tree, else a walk of the tree that reads .gitignore files itself.
* `find_files`: those files matching a glob.
* `grep`: matching lines as `path:line: text`, by ripgrep when it is installed (on PATH,
  or next to the running Python: a virtualenv's bin), else in Python.
* `changed_files`: `git diff` of the staged and unstaged changes and the conflicted files.

What the LLM sends (a regex, a glob) is never matched on the engine: ripgrep, or a Python
worker process (`tools.scan`) for the fallback and for globs, does it, and is killed at
the search's deadline (`DEFAULT_SEARCH_TIMEOUT`); the call then says the search took too
long. `re` holds the GIL while it matches, so a catastrophic pattern in a thread of ours
would freeze the engine and the editor's `q` and `:qa!` with it.

git and rg run with fixed options only: what the LLM sends is always an option's value
or follows `-e`, never an option itself. git runs without pager, fsmonitor, external diff
drivers or textconv filters, and without taking optional locks.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import stat
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ToolError
from ..processes.commands import safe_env
from ..processes.run import ProcessResult, run_process_raw
from ..words import count
from .scan import WORKER, format_hit, normalize_glob, translate_glob

GIT_TIMEOUT = 60.0
DEFAULT_SEARCH_TIMEOUT = 10.0
"""Seconds a search (listing the files included) may take before it is stopped."""

STATES = ("staged", "unstaged", "merge-conflicts")


def _which(name: str) -> str | None:
    """The program `name` on PATH, else next to the running Python: `pip install ripgrep`
    puts rg in the virtualenv's bin, which need not be on PATH. (Tests replace this to hide
    git or rg.)"""
    found = shutil.which(name)
    if found is None and sys.executable:
        found = shutil.which(name, path=os.path.dirname(sys.executable))
    return found


_GIT_LOCATION_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_PREFIX",
    "GIT_NAMESPACE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
)


# --- .gitignore for the walking fallback ------------------------------------------------


@dataclass(frozen=True)
class _Rule:
    base: str  # the .gitignore's directory relative to the root, "" or "a/b/"
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    anchored: bool


def _parse_ignore(text: str, base: str) -> list[_Rule]:
    rules = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        stripped = line.rstrip(" \t")
        if stripped.endswith("\\") and len(stripped) < len(line):  # "foo\ " keeps its space
            stripped = stripped[:-1] + " "
        line = stripped
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        elif line.startswith(("\\!", "\\#")):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        try:
            regex = re.compile(translate_glob(line, braces=False), re.DOTALL)
        except re.error:
            continue
        rules.append(_Rule(base, regex, negate, dir_only, anchored))
    return rules


def _ignored(rules: Sequence[_Rule], rel: str, is_dir: bool) -> bool:
    ignored = False
    for rule in rules:  # later (deeper) rules win
        if rule.dir_only and not is_dir:
            continue
        if not rel.startswith(rule.base):
            continue
        sub = rel[len(rule.base) :]
        if rule.regex.fullmatch(sub if rule.anchored else sub.rpartition("/")[2]):
            ignored = not rule.negate
    return ignored


def _read_ignore_file(path: str, base: str) -> list[_Rule]:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return []
        with open(path, encoding="utf-8", errors="replace") as handle:
            return _parse_ignore(handle.read(), base)
    except OSError:
        return []


def _inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _walk(root: str) -> list[str]:
    root_real = os.path.realpath(root)
    found: list[str] = []
    base_rules = _read_ignore_file(os.path.join(root, ".git", "info", "exclude"), "")
    stack: list[tuple[str, str, list[_Rule]]] = [(root, "", base_rules)]
    while stack:
        directory, prefix, rules = stack.pop()
        rules = rules + _read_ignore_file(os.path.join(directory, ".gitignore"), prefix)
        try:
            with os.scandir(directory) as it:
                entries = list(it)
        except OSError:
            continue
        subdirs = []
        for entry in entries:
            if entry.name == ".git":
                continue
            rel = prefix + entry.name
            try:
                if entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    if not _inside(target, root_real) or not os.path.isfile(target):
                        continue  # outside the root, dangling, or a directory: never followed
                    is_dir = False
                elif entry.is_dir(follow_symlinks=False):
                    is_dir = True
                elif entry.is_file(follow_symlinks=False):
                    is_dir = False
                else:  # FIFO, socket, device
                    continue
            except OSError:
                continue
            if _ignored(rules, rel, is_dir):
                continue
            if is_dir:
                subdirs.append((entry.path, rel + "/", rules))
            else:
                found.append(rel)
        stack.extend(subdirs)
    return sorted(found)


def _regular_files(root: str, names: Iterable[str]) -> list[str]:
    """The names that are regular files, or symlinks to regular files inside the root."""
    root_real = os.path.realpath(root)
    kept = []
    for name in names:
        path = os.path.join(root, name)
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue  # tracked but deleted
        if stat.S_ISREG(mode):
            kept.append(name)
        elif stat.S_ISLNK(mode):
            target = os.path.realpath(path)
            if _inside(target, root_real) and os.path.isfile(target):
                kept.append(name)
    return sorted(kept)


# --- git --------------------------------------------------------------------------------


def _git_env() -> dict[str, str]:
    env = safe_env()
    for name in _GIT_LOCATION_VARS:
        env.pop(name, None)
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat")
    return env


def _git_argv(git: str, *args: str) -> list[str]:
    return [
        git,
        "--no-pager",
        "-c",
        "core.pager=cat",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.quotePath=false",
        "-c",
        "color.ui=false",
        *args,
    ]


async def _git(root: Path, git: str, *args: str, max_output: int = 32 * 1024 * 1024) -> ProcessResult[bytes]:
    return await run_process_raw(
        _git_argv(git, *args),
        cwd=root,
        timeout=GIT_TIMEOUT,
        max_output=max_output,
        env=_git_env(),
        merge_stderr=False,
        keep_tail=False,
    )


# --- public -----------------------------------------------------------------------------


async def list_project_files(root: Path) -> list[str]:
    """Relative '/'-separated paths of the regular files under `root`, sorted, without
    what .gitignore excludes, .git/, symlinked directories and symlinks leading outside."""
    root = Path(root)
    if not root.is_dir():
        raise ToolError(f"not a directory: {root}")
    git = _which("git")
    if git:
        result = await _git(
            root, git, "ls-files", "--cached", "--others", "--exclude-standard", "-z", max_output=256 * 1024 * 1024
        )
        if result.ok and not result.truncated:
            names = dict.fromkeys(os.fsdecode(name) for name in result.output.split(b"\0") if name)
            return await asyncio.to_thread(_regular_files, str(root), names)
    return await asyncio.to_thread(_walk, str(root))


async def find_files(
    root: Path, pattern: str, *, max_results: int = 500, timeout: float = DEFAULT_SEARCH_TIMEOUT
) -> tuple[list[str], bool]:
    """Project files matching the glob `pattern`: `*.md` (a file name at any depth),
    `**/*.py`, `src/**/test_*.py`, `docs/*.{md,txt}`. Returns (sorted matches, truncated).
    The glob is matched in a worker process, stopped after `timeout` seconds."""
    if not normalize_glob(pattern):
        raise ToolError("empty glob pattern")

    async def search() -> tuple[list[str], bool]:
        files = await list_project_files(root)
        request = {"root": str(root), "files": files, "include": pattern, "max_results": max(0, max_results)}
        return await _in_worker(Path(root), request, timeout)

    return await _deadline(search(), timeout)


async def _deadline(search: Any, timeout: float) -> tuple[list[str], bool]:
    """`search` (a coroutine), stopped after `timeout` seconds, the listing of the project
    included: its process groups are killed (and a walking thread is left to end)."""
    try:
        result: tuple[list[str], bool] = await asyncio.wait_for(search, timeout)
    except asyncio.TimeoutError:
        raise _too_long(timeout) from None
    return result


def _too_long(timeout: float) -> ToolError:
    return ToolError(
        f"the search took too long (more than {timeout:g} s) and was stopped: simplify the pattern, "
        "or narrow the files with include_pattern"
    )


async def _in_worker(root: Path, request: dict[str, Any], timeout: float) -> tuple[list[str], bool]:
    """`scan.search(request)` in a Python worker process, stopped at `timeout` seconds."""
    if not sys.executable:
        raise ToolError("cannot search: no Python interpreter to run the search in")
    budget = 1024 * 1024 + (int(request.get("max_results", 100)) + 1) * 32 * 1024
    result = await run_process_raw(
        [sys.executable, "-I", "-S", "-c", WORKER],
        cwd=root,
        timeout=timeout,
        max_output=budget,
        env=safe_env(),
        stdin=json.dumps(request, ensure_ascii=True).encode("ascii"),
        merge_stderr=False,
        keep_tail=False,
    )
    if result.timed_out:
        raise _too_long(timeout)
    try:
        answer = json.loads(result.output) if result.exit_code == 0 else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        lines = result.stderr.decode("utf-8", errors="replace").strip().splitlines()
        raise ToolError(f"the search failed: {lines[-1] if lines else f'exit code {result.exit_code}'}")
    if "error" in answer:
        raise ToolError(str(answer["error"]))
    return [str(hit) for hit in answer["hits"]], bool(answer["truncated"])


async def _grep_python(
    root: Path, query: str, is_regexp: bool, include_pattern: str | None, max_results: int, timeout: float
) -> tuple[list[str], bool]:
    files = await list_project_files(root)
    request = {
        "root": str(root),
        "files": files,
        "include": include_pattern,
        "query": query,
        "is_regexp": is_regexp,
        "max_results": max_results,
    }
    return await _in_worker(root, request, timeout)


_RG_OPTIONS = (
    "--no-config",
    "--line-number",
    "--no-heading",
    "--with-filename",
    "--null",
    "--color",
    "never",
    "--no-messages",
    "--hidden",
    "--no-require-git",
    "--max-filesize",
    "2M",
    "--sort",
    "path",
    "--glob=!.git",
)


async def _grep_rg(
    rg: str, root: Path, query: str, is_regexp: bool, include_pattern: str | None, max_results: int, timeout: float
) -> tuple[list[str], bool]:
    argv = [rg, *_RG_OPTIONS]
    include = (include_pattern or "").strip()
    if include:
        negate = include.startswith("!")
        argv.append(f"--glob={'!' if negate else ''}{normalize_glob(include[1:] if negate else include)}")
    if not is_regexp:
        argv.append("--fixed-strings")
    argv += ["-e", query, "--", "."]
    # a hit is a few hundred bytes once cut, but its line may be long before that
    budget = max(1024 * 1024, (max_results + 1) * 64 * 1024)
    search = run_process_raw(
        argv, cwd=root, timeout=timeout, max_output=budget, env=safe_env(), merge_stderr=False, keep_tail=False
    )
    project: set[str] | None = None
    if include:  # ripgrep's --glob overrides .gitignore: drop the files the project ignores
        result, files = await asyncio.gather(search, list_project_files(root))
        project = set(files)
    else:
        result = await search
    if result.timed_out:
        raise _too_long(timeout)
    hits: list[str] = []
    for raw in result.output.split(b"\n"):  # a line cut by the cap is only shorter
        path, sep, rest = raw.partition(b"\0")
        number, colon, text = rest.partition(b":")
        if not sep or not colon or not number.isdigit():
            continue
        rel = os.fsdecode(path)
        while rel.startswith("./"):
            rel = rel[2:]
        if project is not None and rel not in project:
            continue
        hits.append(format_hit(rel, int(number), text.decode("utf-8", errors="replace")))
    if not hits and result.exit_code not in (0, 1):
        message = result.stderr.decode("utf-8", errors="replace").strip() or f"exit code {result.exit_code}"
        if is_regexp and "regex" in message.lower():
            raise ToolError(f"invalid regular expression {query!r}: {message}")
        raise ToolError(f"ripgrep failed: {message}")
    if len(hits) > max_results:
        return hits[:max_results], True
    return hits, result.truncated


async def grep(
    root: Path,
    query: str,
    *,
    is_regexp: bool = False,
    include_pattern: str | None = None,
    max_results: int = 100,
    timeout: float = DEFAULT_SEARCH_TIMEOUT,
) -> tuple[list[str], bool]:
    """Lines of the project's text files that contain `query` (a regular expression when
    `is_regexp`), as `path:line: text`, in path order; `include_pattern` is a glob that
    limits the files. Returns (lines, truncated). Past `timeout` seconds the search is
    stopped, and ToolError says it took too long."""
    root = Path(root)
    if not query:
        raise ToolError("empty search query")
    if not root.is_dir():
        raise ToolError(f"not a directory: {root}")
    max_results = max(0, max_results)
    rg = _which("rg")
    if rg:
        return await _deadline(_grep_rg(rg, root, query, is_regexp, include_pattern, max_results, timeout), timeout)
    return await _deadline(_grep_python(root, query, is_regexp, include_pattern, max_results, timeout), timeout)


_SECTIONS = {
    "staged": (
        "Staged changes",
        ("diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv"),
        "diff",
        "(no staged changes)",
    ),
    "unstaged": (
        "Unstaged changes",
        ("diff", "--no-color", "--no-ext-diff", "--no-textconv"),
        "diff",
        "(no unstaged changes)",
    ),
    "merge-conflicts": (
        "Merge conflicts",
        ("diff", "--name-only", "--diff-filter=U", "--no-color"),
        "",
        "(no files with merge conflicts)",
    ),
}


def _fence_for(lines: Sequence[str]) -> str:
    """A code fence longer than any backtick run that could close it (a diff's context line
    is indented by one space)."""
    longest = 0
    for line in lines:
        text = line[:3].lstrip(" ") + line[3:]
        longest = max(longest, len(text) - len(text.lstrip("`")))
    return "`" * max(3, longest + 1)


async def changed_files(root: Path, states: Sequence[str] = STATES, *, max_lines: int = 1000) -> str:
    """The git changes of the project as text: a heading per state, each with the output
    of its git command (`git diff --cached`, `git diff`, `git diff --name-only
    --diff-filter=U`); at most `max_lines` lines of it in all."""
    root = Path(root)
    if isinstance(states, str):
        states = [states]
    wanted = list(dict.fromkeys(states or STATES))
    unknown = [state for state in wanted if state not in _SECTIONS]
    if unknown:
        raise ToolError(f"unknown state(s): {', '.join(map(str, unknown))}; valid states are {', '.join(STATES)}")
    git = _which("git")
    if not git:
        raise ToolError("git is not installed")
    check = await _git(root, git, "rev-parse", "--is-inside-work-tree")
    if not check.ok or check.output.strip() != b"true":
        raise ToolError(f"not a git repository: {root}")

    budget = max(0, max_lines)
    parts: list[str] = []
    for state in wanted:
        title, args, language, empty = _SECTIONS[state]
        result = await _git(root, git, *args)
        if not result.ok:
            message = result.stderr.decode("utf-8", errors="replace").strip()
            raise ToolError(f"git {' '.join(args)} failed: {message or f'exit code {result.exit_code}'}")
        lines = result.output.decode("utf-8", errors="replace").splitlines()
        parts.append(f"## {title} (`git {' '.join(a for a in args if not a.startswith('--no-'))}`)")
        if not lines:
            parts.append(empty)
            continue
        shown, omitted = lines[:budget], len(lines) - min(len(lines), budget)
        budget -= len(shown)
        if shown:
            fence = _fence_for(shown)
            parts += [fence + language, *shown, fence]
        if omitted or result.truncated:
            more = count(omitted, "more line") if omitted else "more output"
            parts.append(f"[... {more} not shown (max_lines={max_lines}) ...]")
    return "\n".join(parts) + "\n"


__all__ = ["STATES", "changed_files", "find_files", "grep", "list_project_files"]
