"""Search/replace edits for insert_edit_into_file: pure text in, text out, no I/O.

Text is always "\\n"-separated here; the caller converts CRLF before and after.

Matching, per edit, in order; the first strategy that finds anything wins:

1. exact: `oldText` is a substring of the file.
2. whole lines, ignoring trailing whitespace on each line.
3. whole lines, ignoring indentation too (stripped lines are compared; a blank line only
   matches a blank line). `newText` is then re-indented: each indentation seen in `oldText`
   maps to the file's indentation on the matching line, so the file's indent characters are
   used (tabs stay tabs); deeper lines keep the offset of the nearest mapped level. If the
   block's relative indentation disagrees with the file's, the edit is refused, not guessed.

Strategies 2 and 3 replace whole lines and add a note saying which tolerance was used. A
strategy that finds several matches refuses unless `replaceAll` is set (then every
non-overlapping match is replaced); finding none refuses with the most similar region of the
file (difflib), with line numbers, so the LLM can correct itself. Edits apply in order, each to
the result of the previous ones, and all apply or none do. Text outside the matched ranges is
kept byte for byte, including a missing final newline. Every refusal is an `EditRefused`
whose message is written for the LLM: which edit, why, and what to send instead.
"""

from __future__ import annotations

import difflib
import functools
import heapq
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import EditRefused
from ..words import count
from .lines import split_lines

SHRINK_MIN_LINES = 20  # the large-shrink warning applies to files at least this long
HINT_MIN_RATIO = 0.4  # below this similarity, no region is suggested
HINT_MAX_LINES = 12
HINT_CANDIDATES = 50  # windows sharing lines with oldText that are compared char by char
_WORD = re.compile(r"\w+")
MAX_LISTED = 10


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    names = {str: "a string", list: "a list", dict: "an object"}
    return next((name for t, name in names.items() if isinstance(value, t)), type(value).__name__)


@dataclass(frozen=True)
class Edit:
    old_text: str
    new_text: str
    replace_all: bool = False

    @classmethod
    def from_args(cls, raw: Any, index: int) -> Edit:
        """Build edit number `index` (1-based) from the LLM's {oldText, newText, replaceAll}."""
        where = f"edit {index}"
        if not isinstance(raw, dict):
            raise EditRefused(
                f'{where} must be an object {{"oldText": ..., "newText": ..., "replaceAll": false}}, got {_kind(raw)}'
            )
        for key in ("oldText", "newText"):
            if key not in raw:
                alias = next((k for k in raw if isinstance(k, str) and k.replace("_", "").lower() == key.lower()), None)
                spelled = f" (got {alias!r}; the key is spelled {key})" if alias else ""
                raise EditRefused(
                    f"{where}: {key} is missing{spelled}; every edit needs oldText (the exact text "
                    "from the file) and newText (what replaces it)"
                )
            if not isinstance(raw[key], str):
                raise EditRefused(f"{where}: {key} must be a string, got {_kind(raw[key])}")
        replace_all = raw.get("replaceAll")
        if replace_all is None:  # absent, or null as strict-schema models send for unset options
            replace_all = False
        if not isinstance(replace_all, bool):
            raise EditRefused(f"{where}: replaceAll must be true or false, got {_kind(replace_all)}")
        return cls(raw["oldText"], raw["newText"], replace_all)


@dataclass(frozen=True)
class EditOutcome:
    text: str  # the new file text
    notes: tuple[str, ...]  # for the LLM, e.g. "edit 2 matched lines 4-6 ignoring indentation"
    warnings: tuple[str, ...]  # from check_suspicious()


@dataclass(frozen=True)
class _Match:
    start: int
    stop: int
    line: int  # 1-based first line
    last: int  # 1-based last line
    replacement: str | None  # None: the indentation could not be mapped


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _reindent(old: list[str], found: list[str], new: list[str]) -> list[str] | None:
    """Move `new` from `old`'s indentation to the file's (`found`); None if they disagree."""
    mapping: dict[str, str] = {}
    for o, f in zip(old, found):  # noqa: B905 (found is a window of old's length)
        if o.strip() and mapping.setdefault(_indent(o), _indent(f)) != _indent(f):
            return None
    steps = sorted(
        (
            (o2[len(o1) :], f2[len(f1) :])
            for o1, f1 in mapping.items()
            for o2, f2 in mapping.items()
            if len(o2) > len(o1) and o2.startswith(o1) and f2.startswith(f1) and len(f2) > len(f1)
        ),
        key=lambda step: len(step[0]),
    )

    def convert(rest: str) -> str:  # an indent in the LLM's units, in the file's units
        for unit, file_unit in steps[:1]:
            if rest == unit * (len(rest) // len(unit)):
                return file_unit * (len(rest) // len(unit))
        return rest

    known = sorted(mapping, key=len, reverse=True)
    out: list[str] = []
    for line in new:
        if not line.strip():
            out.append("")
            continue
        ind = _indent(line)
        deeper = next((k for k in known if ind.startswith(k)), None)
        if deeper is not None:
            out.append(mapping[deeper] + convert(ind[len(deeper) :]) + line[len(ind) :])
            continue
        outer = next((k for k in reversed(known) if k.startswith(ind)), None)  # a dedent past oldText
        removed = convert(outer[len(ind) :]) if outer is not None else ""
        if outer is None or not mapping[outer].endswith(removed):
            return None
        out.append(mapping[outer][: len(mapping[outer]) - len(removed)] + line[len(ind) :])
    return out


def _find_exact(text: str, edit: Edit) -> list[_Match]:
    matches: list[_Match] = []
    line, counted = 1, 0
    pos = text.find(edit.old_text)
    while pos != -1:
        line += text.count("\n", counted, pos)
        counted = pos
        last = line + edit.old_text.count("\n", 0, max(len(edit.old_text) - 1, 0))
        matches.append(_Match(pos, pos + len(edit.old_text), line, last, edit.new_text))
        pos = text.find(edit.old_text, pos + 1)  # overlapping starts count: they make it ambiguous
    return matches


def _line_finder(key: Callable[[str], str], reindent: bool) -> Callable[[str, Edit], list[_Match]]:
    def find(text: str, edit: Edit) -> list[_Match]:
        lines, old, new = split_lines(text), split_lines(edit.old_text), split_lines(edit.new_text)
        if not old:
            return []
        want, have = [key(line) for line in old], [key(line) for line in lines]
        starts: list[int] = []  # each line's offset, counted once a block matches
        matches: list[_Match] = []
        size, i = len(old), 0
        while True:
            try:
                i = have.index(want[0], i)  # the next candidate, found in C
            except ValueError:
                break
            if i + size > len(have):
                break
            if have[i : i + size] == want:
                if not starts:
                    starts = [0, *itertools.accumulate(len(line) + 1 for line in lines)]
                end = starts[i + size - 1] + len(lines[i + size - 1])  # after the block's last character
                stop = min(end + 1, len(text))
                body = _reindent(old, lines[i : i + size], new) if reindent else new
                ending = "\n" if body and stop > end else ""
                replacement = None if body is None else "\n".join(body) + ending
                matches.append(_Match(starts[i], stop, i + 1, i + size, replacement))
            i += 1
        return matches

    return find


_STRATEGIES: tuple[tuple[str, Callable[[str, Edit], list[_Match]]], ...] = (
    ("", _find_exact),
    ("ignoring trailing whitespace", _line_finder(str.rstrip, reindent=False)),
    ("ignoring indentation", _line_finder(str.strip, reindent=True)),
)


def _span(match: _Match) -> str:
    return f"line {match.line}" if match.last == match.line else f"lines {match.line}-{match.last}"


def _window_sums(values: list[int], size: int) -> list[int]:
    """The sum of each run of `size` consecutive values (a sliding window, linear)."""
    sums = [sum(values[:size])]
    for i in range(size, len(values)):
        sums.append(sums[-1] + values[i] - values[i - size])
    return sums


def _closest_region(text: str, old_text: str) -> str:
    """The most similar region of `text` to `old_text`, numbered, or advice when none is."""
    lines = split_lines(text)
    want = [line.strip() for line in split_lines(old_text)]
    size = min(len(want), len(lines))
    if not lines or size == 0:
        return "The file is empty.\n"
    stripped = [line.strip() for line in lines]
    wanted = {line for line in want if len(line) >= 4}  # "}" or "" would point everywhere
    shared = _window_sums([int(line in wanted) for line in stripped], size)
    if max(shared) == 0:  # no line in common: rank the windows by the words they share instead
        words = set(_WORD.findall(old_text))
        shared = _window_sums([len(words.intersection(_WORD.findall(line))) for line in stripped], size)
    # only the best few windows are compared character by character (difflib is slow in
    # Python: comparing every window of a 100k-line file took seconds on a miss)
    starts = heapq.nlargest(HINT_CANDIDATES, range(len(shared)), key=lambda i: (shared[i], -i))
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2("\n".join(want))
    # quick_ratio() bounds ratio() from above: a window below the best so far (or below
    # HINT_MIN_RATIO, which would not be shown) never pays for the full comparison
    best, best_at = HINT_MIN_RATIO, None
    for i in sorted(starts):
        matcher.set_seq1("\n".join(stripped[i : i + size]))
        if matcher.real_quick_ratio() >= best and matcher.quick_ratio() >= best:
            ratio = matcher.ratio()
            if ratio > best or (best_at is None and ratio >= best):
                best, best_at = ratio, i
    if best_at is None:
        return "Nothing in the file is similar to it.\n"
    shown = range(best_at, best_at + min(size, HINT_MAX_LINES))
    width = len(str(shown[-1] + 1))
    region = "\n".join(f"{n + 1:>{width}} | {lines[n]}" for n in shown)
    more = f"\n(and {count(size - HINT_MAX_LINES, 'more line')})" if size > HINT_MAX_LINES else ""
    span = f"line {best_at + 1}" if size == 1 else f"lines {best_at + 1}-{best_at + size}"
    return f"The most similar part of the file is {span}:\n{region}{more}\n"


def _apply_one(text: str, edit: Edit, index: int) -> tuple[str, str | None]:
    where = f"edit {index}"
    if edit.old_text == edit.new_text:
        raise EditRefused(
            f"{where}: oldText and newText are identical, so it changes nothing; drop it, "
            "or put the changed text in newText"
        )
    if not edit.old_text:
        if not text:
            return edit.new_text, None
        raise EditRefused(
            f"{where}: oldText is empty; to add text at the end use mode append, or give the exact text to replace"
        )
    if not text:
        raise EditRefused(
            f"{where}: the file is empty, so oldText cannot match; to fill it use an edit with "
            "empty oldText, or mode overwrite"
        )
    for how, find in _STRATEGIES:  # noqa: B007 (`how` names the strategy that matched, below)
        matches = find(text, edit)
        if matches:
            break
    else:
        after = f" (after edits 1-{index - 1} were applied)" if index > 2 else " (after edit 1)" if index == 2 else ""
        raise EditRefused(
            f"{where}: oldText was not found in the file{after}. {_closest_region(text, edit.old_text)}"
            "Copy oldText exactly from the current file (read it again if unsure) and retry."
        )
    qualifier = f" {how}" if how else ""
    if len(matches) > 1 and not edit.replace_all:
        lines = list(dict.fromkeys(match.line for match in matches))
        listed = ", ".join(map(str, lines[:MAX_LISTED])) + (", ..." if len(lines) > MAX_LISTED else "")
        raise EditRefused(
            f"{where}: oldText matches {len(matches)} places{qualifier} "
            f"(line{'s' if len(lines) > 1 else ''} {listed}); include more surrounding lines to "
            "make it unique, or set replaceAll to true to change every one"
        )
    chosen: list[_Match] = []
    for match in matches:
        if not chosen or match.start >= chosen[-1].stop:
            chosen.append(match)
    for match in chosen:
        if match.replacement is None:
            raise EditRefused(
                f"{where}: oldText matches {_span(match)} only {how}, and newText's indentation "
                "cannot be mapped onto the file's (oldText's relative indentation differs from "
                "the file's, or newText dedents past it); copy oldText exactly from the file, "
                "indentation included, and indent newText the same way"
            )
    for match in reversed(chosen):
        text = text[: match.start] + str(match.replacement) + text[match.stop :]
    places = ", ".join(_span(match) for match in chosen[:MAX_LISTED]) + (", ..." if len(chosen) > MAX_LISTED else "")
    if how:
        reindented = "; newText was re-indented to match the file" if "indentation" in how else ""
        return text, f"{where} matched {places} {how}{reindented}"
    if len(chosen) > 1:
        return text, f"{where} replaced {len(chosen)} occurrences ({places})"
    return text, None


def apply_edits(original: str, edits: Sequence[Edit]) -> EditOutcome:
    """Apply `edits` in order to `original`; all of them, or raise EditRefused and apply none."""
    if not edits:
        raise EditRefused("no edits were given; send a list of {oldText, newText} objects")
    text = original
    notes: list[str] = []
    for index, edit in enumerate(edits, 1):
        try:
            text, note = _apply_one(text, edit, index)
        except EditRefused as refused:
            if len(edits) > 1:
                raise EditRefused(f"{refused} No edit was applied; send all {len(edits)} again, fixed.") from None
            raise
        if note:
            notes.append(note)
    return EditOutcome(text, tuple(notes), check_suspicious(original, text))


def _count(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def apply_mode(original: str, mode: str, content: str) -> EditOutcome:
    """Mode "overwrite" (content replaces the file) or "append" (content added at the end)."""
    if mode == "overwrite":
        if content == original:
            raise EditRefused("content is identical to the file, so overwriting changes nothing")
        new, note = content, f"overwrote the file ({count(_count(original), 'line')} before, {_count(content)} now)"
    elif mode == "append":
        if not content:
            raise EditRefused("content is empty, so appending changes nothing")
        new = original + ("\n" if original and not original.endswith("\n") else "") + content
        note = f"appended {count(_count(content), 'line')}"
    else:
        raise EditRefused(
            f"unknown mode {mode!r}; use mode append or overwrite with `content`, or mode edit with `edits`"
        )
    return EditOutcome(new, (note,), check_suspicious(original, new))


_COMMENT = r"(?://+|#+|--|;+|/\*+|\*|<!--|\{/\*|%)"
_ELLIPSIS = r"(?:\.{3,}|…)"
_NOUN = (
    r"(?:code|file|function|class|method|implementation|module|component|page|template|content|body|"
    r"logic|lines?|config|section|imports|methods|functions|tests|styles|text)"
)
_CLOSE = r"\s*[.:]?\s*(?:\*/\}?|-->)?\s*$"
_SUFFIX = (
    r"(?:here|goes\s+here|unchanged|is\s+unchanged|remains?(?:\s+the)?\s+same|stays\s+the\s+same|"
    r"as\s+before|omitted)"
)
_PLACEHOLDER_PATTERNS = (
    # // ... rest of the code   # ... existing code ...   <!-- ... unchanged -->
    rf"^\s*{_COMMENT}\s*{_ELLIPSIS}.*\b(?:existing|rest|unchanged|remaining|same|previous|omitted)\b",
    rf"^\s*{_COMMENT}\s*{_ELLIPSIS}" + _CLOSE,  # <!-- ... -->   // ...   {/* ... */}
    # ... existing code ...   ... rest of the file unchanged   (bare; JS `...rest` and doctest lines differ)
    rf"^\s*{_ELLIPSIS}\s*(?:the\s+)?(?:existing|rest\s+of(?:\s+the)?|remaining|unchanged|previous|same)\s+"
    rf"(?:\w+\s+)?{_NOUN}\b",
    rf"^\s*{_ELLIPSIS}\s*(?:existing|unchanged|rest|same)\s*{_ELLIPSIS}\s*$",
    # # existing code ...   // rest of the function unchanged...
    rf"^\s*{_COMMENT}\s*(?:the\s+)?(?:existing|remaining|previous|unchanged|same|rest\s+of(?:\s+the)?)\s+"
    rf"(?:\w+\s+){{0,2}}?{_NOUN}\b.*{_ELLIPSIS}",
    # (rest of code here)   [existing code]   # (remaining methods unchanged)
    rf"^\s*(?:{_COMMENT}\s*)?[(\[]\s*(?:the\s+)?(?:rest\s+of|remaining|existing|previous|same)\s+\w[^)\]]*[)\]]"
    + _CLOSE,
    # # rest of file unchanged   // existing code   <!-- rest of the page -->
    rf"^\s*{_COMMENT}\s*(?:the\s+)?(?:rest\s+of\s+(?:the\s+)?(?:\w+\s+)?{_NOUN}|existing\s+code)"
    rf"(?:\s+{_SUFFIX})?" + _CLOSE,
    # // remaining methods unchanged   # previous code here
    rf"^\s*{_COMMENT}\s*(?:the\s+)?(?:remaining|previous|other|existing)\s+{_NOUN}\s+{_SUFFIX}" + _CLOSE,
)


@functools.cache
def _placeholders() -> tuple[re.Pattern[str], ...]:
    """Compiled on first use: compiling them took 9 ms of every host's start."""
    return tuple(re.compile(p, re.IGNORECASE) for p in _PLACEHOLDER_PATTERNS)


_STRIDE = 256  # lines compared at once by common_ends


def common_ends(a: Sequence[str], b: Sequence[str]) -> tuple[int, int]:
    """How many lines `a` and `b` share at their start, and then at their end (never
    overlapping): an edit changes a few lines of a big file, so what lies between is all that
    a diff or a check needs to look at. Runs of lines are compared a slice at a time, in C."""
    size = min(len(a), len(b))
    prefix = 0
    while prefix + _STRIDE <= size and a[prefix : prefix + _STRIDE] == b[prefix : prefix + _STRIDE]:
        prefix += _STRIDE
    while prefix < size and a[prefix] == b[prefix]:
        prefix += 1
    rest, end_a, end_b = size - prefix, len(a), len(b)
    suffix = 0
    while (
        suffix + _STRIDE <= rest
        and a[end_a - suffix - _STRIDE : end_a - suffix] == b[end_b - suffix - _STRIDE : end_b - suffix]
    ):
        suffix += _STRIDE
    while suffix < rest and a[end_a - suffix - 1] == b[end_b - suffix - 1]:
        suffix += 1
    return prefix, suffix


def check_suspicious(original: str, new: str) -> tuple[str, ...]:
    """Warnings about `new`: placeholder lines that were not in `original`, or a large deletion."""
    warnings: list[str] = []
    old_lines, new_lines = original.split("\n"), new.split("\n")
    prefix, suffix = common_ends(old_lines, new_lines)
    candidates = [
        (n, line)
        for n, line in enumerate(new_lines[prefix : len(new_lines) - suffix], prefix + 1)
        if any(p.search(line) for p in _placeholders())
    ]
    before = {line.strip() for line in old_lines} if candidates else set()
    found = [f'line {n} "{line.strip()}"' for n, line in candidates if line.strip() not in before]
    if found:
        more = f", and {len(found) - MAX_LISTED} more" if len(found) > MAX_LISTED else ""
        warnings.append(
            f"the new text has placeholder lines instead of real code: {', '.join(found[:MAX_LISTED])}{more}"
        )
    total, removed = _count(original), _count(original) - _count(new)
    if total >= SHRINK_MIN_LINES and removed * 2 > total:
        warnings.append(f"this edit deletes {removed} of {total} lines")
    return tuple(warnings)


def keep_line_endings(original: str, new: str, newline: str) -> str:
    """`new` ("\\n"-separated) with the file's own line endings: `original` is the file's exact
    text. A line the edit left alone keeps its ending (CRLF or LF, in a file that mixes them),
    so does a changed line in the place of an old one; an added line gets `newline`, the
    file's usual one."""
    if "\r" not in original:
        return new if newline == "\n" else new.replace("\n", newline)
    pieces = original.split("\n")  # each piece but the last ended with "\n"
    endings = ["\r\n" if piece.endswith("\r") else "\n" for piece in pieces[:-1]]
    if "\n" not in endings:
        return new.replace("\n", "\r\n")
    old = [piece[:-1] if ending == "\r\n" else piece for piece, ending in zip(pieces, [*endings, ""])]  # noqa: B905
    lines = new.split("\n")
    chosen = [newline] * (len(lines) - 1)
    for _tag, a1, a2, b1, b2 in _ChangedSpan(old, lines).get_opcodes():
        for i, j in zip(range(a1, a2), range(b1, b2)):  # noqa: B905 (a replaced line takes its old one's place)
            if i < len(endings) and j < len(chosen):
                chosen[j] = endings[i]
    return "".join(line + ending for line, ending in zip(lines, [*chosen, ""]))  # noqa: B905


def _diff_lines(text: str) -> list[str]:
    lines = split_lines(text)
    if text and not text.endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file"
    return lines


def changed_lines(old: str, new: str) -> int:
    """Lines removed plus lines added (CodeCompanion's measure for `threshold_for_chat`)."""
    a, b = _diff_lines(old), _diff_lines(new)
    return sum(a2 - a1 + b2 - b1 for tag, a1, a2, b1, b2 in _ChangedSpan(a, b).get_opcodes() if tag != "equal")


def unified_diff(path: str, old: str, new: str, context: int = 3) -> str:
    """A unified diff with a/ and b/ headers, "" when the texts are identical."""
    if old == new:
        return ""
    a, b = _diff_lines(old), _diff_lines(new)
    lines = [f"--- a/{path}", f"+++ b/{path}"]
    for group in _ChangedSpan(a, b).get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        lines.append(f"@@ -{_hunk_range(first[1], last[2])} +{_hunk_range(first[3], last[4])} @@")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                lines.extend(" " + line for line in a[a1:a2])
            else:
                lines.extend("-" + line for line in a[a1:a2])
                lines.extend("+" + line for line in b[b1:b2])
    return "\n".join(lines) + "\n"


_Opcode = tuple[Literal["replace", "delete", "insert", "equal"], int, int, int, int]


class _ChangedSpan(difflib.SequenceMatcher[str]):
    """difflib's matcher run on the changed span alone, with the lines the two texts share at
    their start and end as two equal blocks around it: an edit of a few lines in a 20,000-line
    file is diffed in well under a millisecond (difflib over the whole file took 27 ms), and
    every hunk keeps its full context."""

    def __init__(self, a: list[str], b: list[str]) -> None:
        prefix, suffix = common_ends(a, b)
        old, new = a[prefix : len(a) - suffix], b[prefix : len(b) - suffix]
        codes: list[_Opcode] = [
            (tag, i1 + prefix, i2 + prefix, j1 + prefix, j2 + prefix) for tag, i1, i2, j1, j2 in _opcodes(old, new)
        ]
        if prefix:
            codes.insert(0, ("equal", 0, prefix, 0, prefix))
        if suffix:
            codes.append(("equal", len(a) - suffix, len(a), len(b) - suffix, len(b)))
        self._codes = codes

    def get_opcodes(self) -> list[_Opcode]:
        return self._codes


MAX_DIFF_CELLS = 10_000_000
"""Changed spans of more lines than this (old times new) are shown as one replacement:
difflib's time grows with their product, and an agent's diff of two 150,000-line texts
held the engine (every chat) for minutes."""


def _opcodes(old: list[str], new: list[str]) -> list[_Opcode]:
    if len(old) * len(new) <= MAX_DIFF_CELLS:
        return difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    return [("replace", 0, len(old), 0, len(new))]


def _hunk_range(start: int, stop: int) -> str:
    """A hunk's line range as unified diffs write it (an empty range names the line before it)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"
