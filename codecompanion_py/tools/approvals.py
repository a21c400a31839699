"""Who decides whether a tool call runs: the rules, and the chat's memory of answers.

A call runs without asking when its tool does not require approval, when the user chose
"Always accept" for the tool (or, for command tools, for that exact command), or in YOLO
mode when the tool is allowed there. It always asks when the run says it must (a
protected path): neither YOLO nor "always" skips that.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

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


@dataclass
class Approvals:
    """One chat's approval memory (CodeCompanion keeps it per chat buffer too)."""

    yolo: bool = False
    tools: set[str] = field(default_factory=set)
    commands: set[tuple[str, str]] = field(default_factory=set)

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
