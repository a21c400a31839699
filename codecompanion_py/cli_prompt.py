"""The text the CLI interaction types into an agent's own CLI (Claude Code, Codex, ...).

Editor context there is not pasted content but what such CLIs read themselves: a file is an
`@path` reference, which the agent opens on its own. Each `#{tag}` of the prompt becomes a
short phrase in place ("the selected code in @app.py"), and what has a body (a selection,
diagnostics, the terminal's output) follows the prompt as a block. A prompt that is only
tags sends the blocks (else the phrases) alone. A visual selection with no tag in the
prompt goes first, as its own block. Lua gathers what each tag names (`cli.render`); this
module only words it.
"""

from __future__ import annotations

import os
import re

from .calls import CliItem, CliRender

TAG = re.compile(r"#\{(\w+)(?::[^}]*)?\}(?:\{[^}]*\})?")
FENCE = "````"  # four backticks: a selection holding ``` stays one block
# how a kind of context is named in the prompt and over its block
NAMES = {
    "terminal": "terminal output",
    "messages": "Neovim messages",
    "quickfix": "quickfix list",
    "diff": "git diff",
    "viewport": "code in view",
}


def _at(path: str, cwd: str) -> str:
    if cwd and os.path.isabs(path):
        relative = os.path.relpath(path, cwd)
        path = relative if not relative.startswith("..") else path
    return "@" + path


def _selection_block(item: CliItem, cwd: str) -> str:
    first, last = item.lines or (1, 1)
    where = _at(item.paths[0], cwd) if item.paths else "the buffer"
    return f"- Selected code from {where} (lines {first}-{last}):\n{FENCE}{item.filetype}\n{item.content}\n{FENCE}\n"


def _worded(item: CliItem, cwd: str) -> tuple[str, str | None]:
    """The phrase in place of the tag, and the block that follows the prompt (or None)."""
    refs = [_at(path, cwd) for path in item.paths]
    if item.kind == "selection":
        return f"the selected code in {refs[0] if refs else 'the buffer'}", _selection_block(item, cwd)
    if item.kind == "buffer":
        return ", ".join(refs), None
    if item.kind == "buffers":
        return "the files I've shared: " + ", ".join(refs), None
    if item.kind == "diagnostics":
        where = refs[0] if refs else "the buffer"
        return f"the diagnostics in {where}", f"Diagnostics for {where}:\n{item.content}\n"
    if item.kind == "file":
        return ", ".join(refs) or item.label, None
    name = NAMES.get(item.kind) or item.label or item.kind
    return f"the {name}", f"- {name[:1].upper() + name[1:]}:\n{FENCE}\n{item.content}\n{FENCE}\n"


def render(call: CliRender) -> str:
    """The text to type into the CLI for `call.prompt`."""
    by_tag = {item.tag: item for item in call.items}
    blocks: list[str] = []
    phrases: list[str] = []

    def replace(match: re.Match[str]) -> str:
        item = by_tag.get(match.group(0))
        if item is None:
            return match.group(0)  # not editor context here (or it named nothing): left as typed
        phrase, block = _worded(item, call.cwd)
        if block:
            blocks.append(block)
        phrases.append(phrase)
        return phrase

    tags_only = TAG.sub("", call.prompt).strip() == ""
    text = TAG.sub(replace, call.prompt).strip()
    if tags_only and call.items:
        text = "\n".join(blocks or phrases)
    elif blocks:
        text = f"{text}\n\n" + "\n".join(blocks)
    if call.selection is not None and "#{" not in call.prompt:
        text = _selection_block(call.selection, call.cwd) + text
    return text


__all__ = ["render"]
