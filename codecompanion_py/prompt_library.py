"""The prompt library's markdown prompts (`prompts.read`, Lua's prompts/init.lua): found in
this plugin's built-ins and in `prompt_library.markdown.dirs` (nested and linked folders),
read through the repository door, and parsed here: front matter (front_matter.py), then
`## system` / `## user` sections, a section's ```yaml opts block, a workflow's steps.

A folder inside the project comes with the repository: its prompts are read only once the
user trusts the project (prompt_trust.py keeps the answers; Lua asks, once, when `ask` names
the project), and a project prompt never takes an alias another prompt has (/explain stays
the built-in's). Lua keeps what runs Lua: a prompt's `${name.fn}` helpers, `condition`
functions and the editor's context.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec

from . import front_matter, prompt_trust
from .calls import PromptsRead as PromptsRequest
from .errors import PathRefused
from .repository import Door, read_named
from .rules import expand

MAX_FRONT_MATTER = 64_000  # bytes: a prompt's options, not a document
MAX_VISITS = 20_000  # the most folder entries one folder's search looks at

Source = Literal["builtin", "markdown", "project", "unasked"]

_FRONT = re.compile(r"---\r?\n(.*?)\r?\n---\r?\n(.*)", re.DOTALL)
_ROLE = re.compile(r"##[ \t\v\f\r]+([A-Za-z]+)[ \t\v\f\r]*")
_OPTS = re.compile(r"```yaml opts\r?\n(.*?)\r?\n```[ \t\n\v\f\r]*(.*)", re.DOTALL)


class PromptMessage(msgspec.Struct, frozen=True, omit_defaults=True):
    role: str
    content: str
    opts: Any = None  # the section's ```yaml opts block


class PromptItem(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A markdown prompt. Lua sees it flat: the front matter's other keys (description,
    tools, rules...) beside these fields (`for_lua`)."""

    name: str
    interaction: str
    opts: dict[str, Any]
    prompts: list[PromptMessage] | list[list[PromptMessage]]  # a workflow: one list per step
    path: str | None = None
    dir: str | None = None
    source: Source | None = None
    root: str | None = None
    meta: dict[str, Any] = {}

    def for_lua(self) -> dict[str, Any]:
        fields = msgspec.to_builtins(self)
        return {**fields.pop("meta", {}), **fields}


class PromptsRead(msgspec.Struct, frozen=True, omit_defaults=True):
    items: list[dict[str, Any]]
    problems: list[str]  # one sentence each
    ask: str | None = None  # a project whose folder holds prompts and that was never asked about


class PromptError(ValueError):
    """Why a markdown file is no prompt."""


def parse_markdown(text: str, path: str | None = None) -> PromptItem:
    """A markdown prompt: front matter, then `## system` / `## user` sections; a section that
    starts with a ```yaml opts block has those options. `PromptError` says what is wrong."""
    found = _FRONT.match(text)
    if not found:
        raise PromptError("it has no front matter between --- lines")
    front, body = found[1], found[2]
    if len(front.encode("utf-8", errors="replace")) > MAX_FRONT_MATTER:
        raise PromptError(f"its front matter is larger than {MAX_FRONT_MATTER // 1000} KB")
    try:
        meta = front_matter.decode(front)
    except front_matter.FrontMatterError as error:
        raise PromptError(f"front matter: {error}") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        raise PromptError("the front matter needs a name")
    messages = [_message(role, lines) for role, lines in _sections(body)]
    meta = dict(meta)
    name = meta.pop("name")
    opts = meta.pop("opts", None)
    opts = dict(opts) if isinstance(opts, dict) else {}
    interaction = meta.pop("interaction", None) or meta.get("strategy") or "chat"
    prompts: list[PromptMessage] | list[list[PromptMessage]] = messages
    if interaction == "workflow" or opts.get("is_workflow"):  # each user section is a step
        prompts, opts["is_workflow"] = _steps(messages), True
    for field in ("path", "dir", "source", "root", "prompts"):
        meta.pop(field, None)
    return PromptItem(
        name=name,
        interaction=str(interaction),
        opts=opts,
        prompts=prompts,
        path=path,
        dir=os.path.dirname(path) if path else None,
        meta=meta,
    )


def _sections(body: str) -> list[tuple[str, list[str]]]:
    sections: list[tuple[str, list[str]]] = []
    fenced = False
    for line in body.split("\n"):
        line = line.removesuffix("\r")
        if line.startswith(("```", "~~~")):
            fenced = not fenced
        role = None if fenced else _ROLE.fullmatch(line)
        if role and role[1].lower() in ("system", "user"):
            sections.append((role[1].lower(), []))
        elif sections:
            sections[-1][1].append(line)
    return sections


def _message(role: str, lines: list[str]) -> PromptMessage:
    content = "\n".join(lines).strip(front_matter.SPACE)
    block = _OPTS.fullmatch(content)
    if not block:
        return PromptMessage(role, content)
    try:
        opts = front_matter.decode(block[1])
    except front_matter.FrontMatterError as error:
        raise PromptError(f"a section's opts: {error}") from None
    return PromptMessage(role, block[2], opts)


def _steps(messages: list[PromptMessage]) -> list[list[PromptMessage]]:
    """A workflow's steps: each user message with the system messages just before it."""
    steps, system = [], []
    for message in messages:
        if message.role == "system":
            system.append(message)
        else:
            steps.append([*system, message])
            system = []
    return steps


def find_markdown(folder: str, suffix: str = ".md") -> list[str]:
    """The files under `folder` whose names end with `suffix`, at any depth (none hidden),
    sorted: linked folders are followed, each real folder once (Vim's `**` went round a folder
    that links to itself 2^30 times), and at most MAX_VISITS entries are looked at."""
    found, seen, visits = [], set(), 0
    pending = [folder.rstrip("/") or "/"]
    while pending and visits < MAX_VISITS:
        path = pending.pop()
        real = os.path.realpath(path)
        if real in seen or not os.path.isdir(real):
            continue
        seen.add(real)
        try:
            entries = sorted(os.scandir(path), key=lambda entry: entry.name, reverse=True)
        except OSError:
            continue
        for entry in entries:
            if visits >= MAX_VISITS:
                break
            visits += 1
            if entry.name.startswith("."):  # left out, as `**` leaves them
                continue
            try:
                is_dir = entry.is_dir()  # a link by its target; a dangling link is nothing
                os.stat(entry.path)
            except OSError:
                continue
            if is_dir:
                pending.append(entry.path)
            elif entry.name.endswith(suffix):  # a FIFO too: the door says why it is not read
                found.append(entry.path)
    return sorted(found)


def read_prompts(payload: PromptsRequest | Mapping[str, Any]) -> dict[str, Any]:
    """`prompts.read`: {items, problems, ask}."""
    request = payload if isinstance(payload, PromptsRequest) else msgspec.convert(payload, PromptsRequest)
    home = request.home or str(Path.home())
    door = Door.of(request.cwd, (), home)
    items: list[PromptItem] = []
    problems: list[str] = []
    ask = None
    for path, source in _folders(request, str(door.root), home):
        paths = find_markdown(os.path.normpath(os.path.join(request.cwd, expand(path, home))))
        if source == "unasked":
            ask = ask or (str(door.root) if paths else None)
            continue
        texts = _read_own(door, paths) if source == "builtin" else _read_repository(request, paths)
        for file, text in zip(paths, texts, strict=True):
            try:
                if "error" in text:
                    raise PromptError(text["error"])
                item = parse_markdown(text["content"], file)
            except PromptError as why:
                problems.append(f"{_show(file, Path(home))}: {why}")
                continue
            item.source, item.root = source, (str(door.root) if source == "project" else None)
            items.append(item)
    problems += _unshadow(items, request, Path(home))
    return msgspec.to_builtins(PromptsRead([item.for_lua() for item in items], problems, ask))


def _folders(request: PromptsRequest, root: str, home: str) -> list[tuple[str, Source]]:
    """The folders to read and whose they are: the built-ins, then `markdown.dirs`; a folder
    inside the project only once the user trusts it ("unasked": only looked into)."""
    folders: list[tuple[str, Source]] = [(request.builtins, "builtin")] if request.builtins else []
    for folder in request.dirs:
        if not prompt_trust.in_project(folder, root, home):
            folders.append((folder, "markdown"))
        elif (trusted := prompt_trust.answer(request.trust_file, root)) is not False:
            folders.append((folder, "project" if trusted else "unasked"))
    return folders


def _read_own(door: Door, paths: list[str]) -> list[dict[str, str]]:
    """This plugin's own files: read where they are (no project confines them), as regular files."""
    out = []
    for path in paths:
        try:
            out.append({"content": door.read(Path(os.path.realpath(path)))})
        except PathRefused as refused:
            out.append({"error": str(refused)})
    return out


def _read_repository(request: PromptsRequest, paths: list[str]) -> list[dict[str, str]]:
    return read_named({"cwd": request.cwd, "home": request.home, "paths": paths})


def _unshadow(items: list[PromptItem], request: PromptsRequest, home: Path) -> list[str]:
    """A project prompt whose alias another prompt has keeps its place in the palette, not the alias."""
    taken: dict[str, str] = {}
    for item in items:  # the built-ins first, then the config's prompts, then the other folders'
        if item.source == "builtin" and isinstance(item.opts.get("alias"), str):
            taken.setdefault(item.opts["alias"], item.name)
    for config_alias, name in request.config_aliases.items():
        taken.setdefault(config_alias, name)
    for item in items:
        if item.source == "markdown" and isinstance(item.opts.get("alias"), str):
            taken.setdefault(item.opts["alias"], item.name)
    problems = []
    for item in items:
        alias = item.opts.get("alias")
        owner = taken.get(alias) if item.source == "project" and isinstance(alias, str) else None
        if owner is not None:
            shown = _show(item.path, home, Path(request.cwd)) if item.path else item.name
            problems.append(f"{shown}: /{alias} is already {_quoted(owner)}'s alias, which keeps it")
            del item.opts["alias"]
    return problems


def _show(path: str, home: Path, cwd: Path | None = None) -> str:
    """`path` as the editor's `:~` (with `cwd`, `:~:.`) shows it."""
    if cwd is not None and Path(path).is_relative_to(cwd):
        return os.path.relpath(path, cwd)
    return "~" + path[len(str(home)) :] if Path(path).is_relative_to(home) else path


def _quoted(text: str) -> str:
    """`text` as Lua's %q writes it (the messages kept their old form)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\\n") + '"'


__all__ = [
    "MAX_FRONT_MATTER",
    "PromptError",
    "PromptItem",
    "PromptMessage",
    "PromptsRead",
    "PromptsRequest",
    "find_markdown",
    "parse_markdown",
    "read_prompts",
]
