"""Back ends of file_search, grep_search and get_changed_files.

* `list_project_files`: the project's files, .gitignore respected: `git ls-files` inside a
  work tree, else a walk of the tree that reads .gitignore files itself.
* `find_files`: those files matching a glob.
* `grep`: matching lines as `path:line: text`, by ripgrep when it is installed, else in
  Python (in a worker thread, so the event loop keeps running).
* `changed_files`: `git diff` of the staged and unstaged changes and the conflicted files.

git and rg run with fixed options only: what the LLM sends is always an option's value
or follows `-e`, never an option itself. git runs without pager, fsmonitor, external diff
drivers or textconv filters, and without taking optional locks.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import stat
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ToolError
from ..processes import RawProcessResult, run_process_raw, safe_env

MAX_GREP_FILE_SIZE = 2 * 1024 * 1024
"""Files larger than this are not searched."""
BINARY_SNIFF = 8 * 1024
"""A NUL byte in this many first bytes makes a file binary (not searched)."""
MAX_LINE_CHARS = 300
"""A matching line is cut to this many characters."""
GIT_TIMEOUT = 60.0

STATES = ("staged", "unstaged", "merge-conflicts")

_which = shutil.which  # tests replace this to hide git or rg

_GIT_LOCATION_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_PREFIX",
    "GIT_NAMESPACE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
)


# --- globs ------------------------------------------------------------------------------


def _translate_glob(pattern: str, *, braces: bool) -> str:
    """A regex (for fullmatch) for a '/'-separated glob: `*` and `?` stay within a path
    segment, `**` as a whole segment spans any number of them (none included), `[...]` is a
    character class (`[!...]` negated) and, with `braces`, `{a,b}` is an alternative."""
    out: list[str] = []
    depth = 0
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            whole_segment = (i == 0 or pattern[i - 1] == "/") and (j == n or pattern[j] == "/")
            if j - i >= 2 and whole_segment:
                if j < n:  # "**/": any directories, or none
                    out.append("(?:.*/)?")
                    j += 1
                else:  # trailing "**": anything below
                    out.append(".*")
            else:
                out.append("[^/]*")
            i = j
            continue
        if char == "?":
            out.append("[^/]")
        elif char == "[":
            j = i + 1
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(char))
            else:
                body = pattern[i + 1 : j]
                negate = body[:1] in ("!", "^")
                if negate:
                    body = body[1:]
                body = "".join("\\" + c if c in "\\[]^&~|" else c for c in body)
                out.append(f"[^/{body}]" if negate else f"[{body}]")
                i = j
        elif char == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 1
        elif braces and char == "{":
            depth += 1
            out.append("(?:")
        elif braces and char == "}" and depth:
            depth -= 1
            out.append(")")
        elif braces and char == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(char))
        i += 1
    if depth:  # unbalanced braces are literal
        return _translate_glob(pattern, braces=False)
    return "".join(out)


def _normalize_glob(pattern: str) -> str:
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = pattern.lstrip("/")
    if pattern.endswith("/"):
        pattern += "**"
    return pattern


def _glob_matcher(pattern: str) -> Callable[[str], bool]:
    """A test of relative paths for a user's glob. A pattern without '/' matches the file
    name at any depth (`*.md`); one with '/' matches the whole path from the root."""
    pattern = _normalize_glob(pattern)
    if not pattern:
        raise ToolError("empty glob pattern")
    try:
        regex = re.compile(_translate_glob(pattern, braces=True), re.DOTALL)
    except re.error as error:
        raise ToolError(f"invalid glob pattern {pattern!r}: {error}") from None
    if "/" in pattern:
        return lambda path: regex.fullmatch(path) is not None
    return lambda path: regex.fullmatch(path.rpartition("/")[2]) is not None


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
            regex = re.compile(_translate_glob(line, braces=False), re.DOTALL)
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


async def _git(root: Path, git: str, *args: str, max_output: int = 32 * 1024 * 1024) -> RawProcessResult:
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


async def find_files(root: Path, pattern: str, *, max_results: int = 500) -> tuple[list[str], bool]:
    """Project files matching the glob `pattern`: `*.md` (a file name at any depth),
    `**/*.py`, `src/**/test_*.py`, `docs/*.{md,txt}`. Returns (sorted matches, truncated)."""
    matches = _glob_matcher(pattern)
    found = [path for path in await list_project_files(root) if matches(path)]
    limit = max(0, max_results)
    return found[:limit], len(found) > limit


def _format_hit(path: str, lineno: int, text: str) -> str:
    return f"{path}:{lineno}: {text.rstrip(chr(13) + chr(10))[:MAX_LINE_CHARS]}"


def _scan(
    root: str, files: Sequence[str], query: str, regex: re.Pattern[str] | None, max_results: int, stop: threading.Event
) -> tuple[list[str], bool]:
    hits: list[str] = []
    for rel in files:
        if stop.is_set():
            break
        try:
            # no symlinks (ripgrep does not follow them either; their targets are listed
            # themselves), and never block on a FIFO that replaced a file
            fd = os.open(
                os.path.join(root, rel), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
            )
        except OSError:
            continue
        try:
            with os.fdopen(fd, "rb") as handle:
                info = os.fstat(handle.fileno())
                if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_GREP_FILE_SIZE:
                    continue
                data = handle.read(MAX_GREP_FILE_SIZE + 1)
        except OSError:
            continue
        if len(data) > MAX_GREP_FILE_SIZE or b"\0" in data[:BINARY_SNIFF]:
            continue
        text = data.decode("utf-8", errors="replace")
        if regex is None and query not in text:
            continue
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for lineno, line in enumerate(lines, 1):
            if regex.search(line) if regex is not None else query in line:
                hits.append(_format_hit(rel, lineno, line))
                if len(hits) > max_results:
                    return hits[:max_results], True
    return hits, False


async def _grep_python(
    root: Path, query: str, is_regexp: bool, include_pattern: str | None, max_results: int, timeout: float
) -> tuple[list[str], bool]:
    regex = None
    if is_regexp:
        try:
            regex = re.compile(query)
        except re.error as error:
            raise ToolError(f"invalid regular expression {query!r}: {error}") from None
    files = await list_project_files(root)
    if include_pattern and include_pattern.strip():
        files = _filter_include(files, include_pattern)
    files.sort(key=lambda path: path.split("/"))  # ripgrep's --sort path: directory by directory
    stop = threading.Event()
    work = asyncio.ensure_future(asyncio.to_thread(_scan, str(root), files, query, regex, max_results, stop))
    try:
        done, _ = await asyncio.wait([work], timeout=timeout)
    finally:
        if not work.done():
            stop.set()  # the thread ends at the next file
    if not done:
        raise ToolError(f"search timed out after {timeout:g} s; narrow it with include_pattern")
    return work.result()


def _filter_include(files: list[str], include_pattern: str) -> list[str]:
    pattern = include_pattern.strip()
    if pattern.startswith("!"):  # as ripgrep's --glob: an exclusion
        excluded = _glob_matcher(pattern[1:])
        return [path for path in files if not excluded(path)]
    included = _glob_matcher(pattern)
    return [path for path in files if included(path)]


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
        argv.append(f"--glob={'!' if negate else ''}{_normalize_glob(include[1:] if negate else include)}")
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
        raise ToolError(f"search timed out after {timeout:g} s; narrow it with include_pattern")
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
        hits.append(_format_hit(rel, int(number), text.decode("utf-8", errors="replace")))
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
    timeout: float = 30.0,
) -> tuple[list[str], bool]:
    """Lines of the project's text files that contain `query` (a regular expression when
    `is_regexp`), as `path:line: text`, in path order; `include_pattern` is a glob that
    limits the files. Returns (lines, truncated)."""
    root = Path(root)
    if not query:
        raise ToolError("empty search query")
    if not root.is_dir():
        raise ToolError(f"not a directory: {root}")
    max_results = max(0, max_results)
    rg = _which("rg")
    if rg:
        return await _grep_rg(rg, root, query, is_regexp, include_pattern, max_results, timeout)
    return await _grep_python(root, query, is_regexp, include_pattern, max_results, timeout)


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
            more = f"{omitted} more lines" if omitted else "more output"
            parts.append(f"[... {more} not shown (max_lines={max_lines}) ...]")
    return "\n".join(parts) + "\n"


__all__ = ["STATES", "changed_files", "find_files", "grep", "list_project_files"]
