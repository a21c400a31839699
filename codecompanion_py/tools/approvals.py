"""Who decides whether a tool call runs: the rules, and the chat's memory of answers.

A call runs without asking when its tool does not require approval, when the user chose
"Always accept" for the tool (or, for command tools, for that exact command), or in YOLO
mode when the tool is allowed there. It always asks when the run says it must (a
protected path): neither YOLO nor "always" skips that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

MAX_PROMPT_CHARS = 2000
# Terminal controls, zero-width and bidi-override characters: in a question the user answers,
# each would let the LLM's text hide or rearrange what is asked. Line breaks stay (a command
# of several lines is asked as such).
_HIDING = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_SHOWN_AS = {"\r": "\\r", "\t": "\\t"}

Choice = Literal["accept", "always", "reject", "cancel"]
CHOICES: tuple[Choice, ...] = ("accept", "always", "reject", "cancel")


def choice_of(value: object) -> Choice:
    """The editor's answer as a Choice; no answer, or one we do not know, cancels."""
    for choice in CHOICES:
        if value == choice:
            return choice
    return "cancel"


@dataclass
class Answer:
    choice: Choice
    reason: str | None = None


@dataclass(frozen=True)
class Verdict:
    """The tools judge's answer (chat/judge.py): run without asking, or ask with `reason`."""

    safe: bool
    reason: str = ""


@dataclass
class Approvals:
    """One chat's approval memory (CodeCompanion keeps it per chat buffer too)."""

    yolo: bool = False
    tools: set[str] = field(default_factory=set)
    commands: set[tuple[str, str]] = field(default_factory=set)
    # the network the user opened to this chat's sandboxed commands after one lacked it
    network: bool = False
    hosts: set[str] = field(default_factory=set)

    def remembered(self, tool: str, command: str | None) -> bool:
        if command is not None:
            return (tool, command_key(command)) in self.commands
        return tool in self.tools

    def remember(self, tool: str, command: str | None) -> None:
        if command is not None:
            self.commands.add((tool, command_key(command)))
        else:
            self.tools.add(tool)

    def clear(self) -> None:
        self.tools.clear()
        self.commands.clear()
        self.network = False
        self.hosts.clear()


def visible(text: str, limit: int = MAX_PROMPT_CHARS) -> str:
    """`text` for an approval question: each control (but line breaks), zero-width or bidi
    character written as its escape (`\\r`, `\\u202e`), and no longer than `limit`."""
    shown = _HIDING.sub(lambda found: _SHOWN_AS.get(found[0], f"\\u{ord(found[0]):04x}"), text)
    if len(shown) <= limit:
        return shown
    return f"{shown[:limit]}… ({len(shown) - limit} more characters; the chat shows the call whole)"


def command_key(command: str) -> str:
    """The exact command: only surrounding whitespace is ignored, so `npm test` never
    matches `npm test; curl evil` or `npm test && rm -rf x`."""
    return command.strip()


def must_prompt(
    *, needs_approval: bool, remembered: bool, yolo: bool, allowed_in_yolo: bool, must_ask: str | None
) -> bool:
    if must_ask:
        return True
    if remembered or not needs_approval:
        return False
    return not (yolo and allowed_in_yolo)
