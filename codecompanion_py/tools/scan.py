"""The pure-Python matching of the search tools: globs over paths, and text or a regex
over lines. Searches with what the LLM sends run it in a worker process, never on the
engine: `re` holds the GIL while it matches, so a catastrophic pattern (`(a+)+$`) run in a
thread would freeze the engine, the editor's `q` and even `:qa!` until it ended.

`python -I -S -c WORKER` runs `main()`: the request comes as one JSON object on stdin, the
answer goes as one JSON object to stdout, and the caller kills the process at its
deadline (`search.grep`, `search.find_files`). Only the standard library, `..errors` and
`.lines` are imported here, so the worker starts in a few tens of milliseconds.

Request: `{"root", "files", "include", "query", "is_regexp", "max_results"}`; without a
`query` the answer is the files matching the glob `include`. Answer: `{"hits",
"truncated"}`, or `{"error"}` (what the user is told).
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ToolError
from .lines import split_lines

MAX_GREP_FILE_SIZE = 2 * 1024 * 1024
"""Files larger than this are not searched."""
BINARY_SNIFF = 8 * 1024
"""A NUL byte in this many first bytes makes a file binary (not searched)."""
MAX_LINE_CHARS = 300
"""A matching line is cut to this many characters."""


# --- globs ------------------------------------------------------------------------------


def translate_glob(pattern: str, *, braces: bool) -> str:
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
        return translate_glob(pattern, braces=False)
    return "".join(out)


def normalize_glob(pattern: str) -> str:
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = pattern.lstrip("/")
    if pattern.endswith("/"):
        pattern += "**"
    return pattern


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """A test of relative paths for a user's glob. A pattern without '/' matches the file
    name at any depth (`*.md`); one with '/' matches the whole path from the root."""
    pattern = normalize_glob(pattern)
    if not pattern:
        raise ToolError("empty glob pattern")
    try:
        regex = re.compile(translate_glob(pattern, braces=True), re.DOTALL)
    except re.error as error:
        raise ToolError(f"invalid glob pattern {pattern!r}: {error}") from None
    if "/" in pattern:
        return lambda path: regex.fullmatch(path) is not None
    return lambda path: regex.fullmatch(path.rpartition("/")[2]) is not None


# --- lines ----------------------------------------------------------------------------


def filter_include(files: list[str], include_pattern: str) -> list[str]:
    pattern = include_pattern.strip()
    if pattern.startswith("!"):  # as ripgrep's --glob: an exclusion
        excluded = glob_matcher(pattern[1:])
        return [path for path in files if not excluded(path)]
    included = glob_matcher(pattern)
    return [path for path in files if included(path)]


def format_hit(path: str, lineno: int, text: str) -> str:
    return f"{path}:{lineno}: {text.rstrip(chr(13) + chr(10))[:MAX_LINE_CHARS]}"


def scan(
    root: str, files: Sequence[str], query: str, regex: re.Pattern[str] | None, max_results: int
) -> tuple[list[str], bool]:
    """The lines of `files` (relative to `root`) that contain `query`, or match `regex`, as
    `path:line: text`; at most `max_results`, and whether there were more."""
    hits: list[str] = []
    for rel in files:
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
        lines = split_lines(text)
        for lineno, line in enumerate(lines, 1):
            if regex.search(line) if regex is not None else query in line:
                hits.append(format_hit(rel, lineno, line))
                if len(hits) > max_results:
                    return hits[:max_results], True
    return hits, False


# --- the worker -------------------------------------------------------------------------


def search(request: dict[str, Any]) -> dict[str, Any]:
    """One request (see the module's docstring) answered."""
    root = str(request["root"])
    files = [str(name) for name in request.get("files") or []]
    include = request.get("include")
    query = request.get("query")
    max_results = max(0, int(request.get("max_results", 100)))
    try:
        if query is None:  # file_search: the files matching a glob
            matches = glob_matcher(str(include or ""))
            found = [path for path in files if matches(path)]
            return {"hits": found[:max_results], "truncated": len(found) > max_results}
        regex = None
        if request.get("is_regexp"):
            try:
                regex = re.compile(str(query))
            except re.error as error:
                raise ToolError(f"invalid regular expression {query!r}: {error}") from None
        if include and str(include).strip():
            files = filter_include(files, str(include))
        files.sort(key=lambda path: path.split("/"))  # ripgrep's --sort path: directory by directory
        hits, truncated = scan(root, files, str(query), regex, max_results)
    except ToolError as error:
        return {"error": str(error)}
    return {"hits": hits, "truncated": truncated}


def main() -> None:
    request = json.loads(sys.stdin.buffer.read())
    answer = search(request)
    # ASCII: a file name that is not UTF-8 (a lone surrogate here) survives the trip
    sys.stdout.buffer.write(json.dumps(answer, ensure_ascii=True).encode("ascii"))
    sys.stdout.buffer.flush()


PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER = f"import sys; sys.path.insert(0, {PACKAGE_PARENT!r}); from codecompanion_py.tools.scan import main; main()"
"""The `-c` program of the worker: this module's `main`, imported from where this copy lives."""


__all__ = [
    "BINARY_SNIFF",
    "MAX_GREP_FILE_SIZE",
    "MAX_LINE_CHARS",
    "WORKER",
    "filter_include",
    "format_hit",
    "glob_matcher",
    "main",
    "normalize_glob",
    "scan",
    "search",
    "translate_glob",
]
