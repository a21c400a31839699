"""The model's answers made into text to insert. Model output is untrusted: each answer is
capped, loses control characters and terminal escapes (a tab and a newline stay), Markdown
fences a chat model adds anyway, and what repeats the text already around the cursor; the
editor inserts the result as text (nvim_buf_set_text), never as keys."""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_CHARS = 4000  # one candidate; more is no prediction anyone waits for
MAX_LINES = 60
_ESCAPES = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_FENCE = re.compile(r"^\s*(```|~~~)")


def clean(text: str) -> str:
    """`text` safe to show and insert: escapes and control characters out, capped."""
    text = text[: MAX_CHARS * 2].replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", _ESCAPES.sub("", text))
    lines = text.split("\n")[:MAX_LINES]
    return "\n".join(lines)[:MAX_CHARS]


def unfenced(text: str) -> str:
    """A chat model's answer without the fences around it (and what followed them)."""
    lines = text.strip("\n").split("\n")
    if lines and _FENCE.match(lines[0]):
        lines = lines[1:]
        end = next((i for i, line in enumerate(lines) if _FENCE.match(line)), len(lines))
        lines = lines[:end]
    return "\n".join(lines)


def fitted(text: str, line_before: str, suffix: str, *, chat: bool = False) -> str:
    """`text` as it goes in at the cursor: the indentation the cursor's line already has
    not doubled, the line so far not repeated (a chat model's habit), nor the rest of the
    line at its end; no trailing blank lines."""
    if line_before and text.startswith(line_before) and (chat or not line_before.strip()):
        text = text[len(line_before) :]
    elif chat and line_before.strip() and text.startswith(line_before.lstrip()):
        text = text[len(line_before.lstrip()) :]
    rest_of_line = suffix.split("\n", 1)[0]
    if rest_of_line.strip() and text.endswith(rest_of_line):
        text = text[: len(text) - len(rest_of_line)]
    return text.rstrip() if "\n" in text.rstrip() else text.rstrip("\n")


def candidates(answers: Iterable[str], line_before: str, suffix: str, *, chat: bool = False) -> list[str]:
    """Distinct, non-empty candidates, in the order given."""
    out: list[str] = []
    for answer in answers:
        text = clean(answer)
        if chat:
            text = unfenced(text)
        text = fitted(text, line_before, suffix, chat=chat)
        if text.strip() and text not in out:
            out.append(text)
    return out
