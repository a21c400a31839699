"""What a prediction is asked from: the text before and after the cursor, the file's name
and language, and snippets of other buffers edited lately, cut to the user's budget
(`context_window`, in tokens, counted as CHARS_PER_TOKEN characters each: a prediction
cannot wait for a tokenizer)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

CHARS_PER_TOKEN = 4
SUFFIX_SHARE = 0.3  # of what the text around the cursor may take, when both sides are long
RECENT_SHARE = 0.2  # of the budget, for other buffers' snippets


@dataclass(frozen=True)
class Snippet:
    path: str
    text: str


@dataclass(frozen=True)
class CompletionContext:
    prefix: str
    suffix: str
    filetype: str = ""
    path: str = ""
    recent: tuple[Snippet, ...] = ()

    @property
    def line_before(self) -> str:
        """The cursor's line up to the cursor."""
        return self.prefix.rsplit("\n", 1)[-1]

    def fitted(self, budget_tokens: int) -> CompletionContext:
        """This context within `budget_tokens`: the text nearest the cursor kept, whole
        lines dropped from the far ends; snippets only in the share left for them."""
        chars = budget_tokens * CHARS_PER_TOKEN
        recent_room = int(chars * RECENT_SHARE)
        recent = _snippets_within(self.recent, recent_room)
        room = chars - sum(len(s.text) + len(s.path) for s in recent)
        suffix_room = max(int(room * SUFFIX_SHARE), room - len(self.prefix))
        suffix = _head(self.suffix, suffix_room)
        prefix = _tail(self.prefix, room - len(suffix))
        return CompletionContext(prefix, suffix, self.filetype, self.path, recent)


def _tail(text: str, room: int) -> str:
    """The end of `text` in `room` characters, from a line's start when it is cut."""
    if len(text) <= room:
        return text
    cut = text[len(text) - max(room, 0) :]
    newline = cut.find("\n")
    return cut[newline + 1 :] if 0 <= newline < len(cut) - 1 else cut


def _head(text: str, room: int) -> str:
    if len(text) <= room:
        return text
    cut = text[: max(room, 0)]
    newline = cut.rfind("\n")
    return cut[:newline] if newline > 0 else cut


def _snippets_within(snippets: Sequence[Snippet], room: int) -> tuple[Snippet, ...]:
    kept: list[Snippet] = []
    for snippet in snippets:
        left = room - len(snippet.path)
        if left < 80:  # a snippet too short to say anything
            break
        text = _head(snippet.text, left)
        kept.append(Snippet(snippet.path, text))
        room = left - len(text)
    return tuple(kept)
