"""The YAML a prompt's front matter uses, and no more: maps by indentation, lists of scalars
or of maps ("- key: value"), strings (bare or quoted), numbers, true/false/null, flow lists
(`[a, b]`). Anything else is a `FrontMatterError` that names the line.

Every step runs in time linear in its line (an 80 KB line of spaces once froze Neovim for
43 s in a backtracking parser), and maps and lists nest `MAX_NESTING` deep, so a hostile
file is refused at once rather than recursed into.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

MAX_NESTING = 32
SPACE = " \t\n\v\f\r"  # what Lua's %s matched: the bytes the old parser took for blanks

_COMMENT = re.compile(r"[ \t\n\v\f\r]#")
_NUMBER = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F]+|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")
_MAP_ITEM = re.compile(r"[A-Za-z0-9_-]+:(?:[ \t\n\v\f\r]|$)")  # "- key: value" starts a map in a list
_KEY_VALUE = re.compile(r"([^:]+):[ \t\n\v\f\r]*(.*)", re.DOTALL)
_QUOTED_KEY = re.compile(r"[\"'](.*)[\"']", re.DOTALL)


class FrontMatterError(ValueError):
    """What is wrong, starting with the line: "line 3: expected `key: value`"."""


@dataclass(frozen=True, slots=True)
class _Line:
    indent: int
    text: str
    number: int


def decode(source: str) -> dict[str, Any] | list[Any]:
    """The map or list `source` holds ({} when it holds nothing)."""
    lines = _lines_of(source)
    if not lines:
        return {}
    value, end = _block(lines, 0, lines[0].indent, 0)
    if end < len(lines):
        raise FrontMatterError(f"line {lines[end].number}: unexpected indentation")
    return value


def _trim(text: str, comment: bool = False) -> str:
    """`text` without the blanks around it (and a ` # comment` after it), in one pass each way."""
    stripped = text.lstrip(SPACE)
    if comment:
        hash_at = _COMMENT.search(stripped)
        if hash_at:
            stripped = stripped[: hash_at.start()]
    return stripped.rstrip(SPACE)


def _lines_of(source: str) -> list[_Line]:
    out = []
    for number, line in enumerate(source.split("\n"), start=1):
        line = line.removesuffix("\r")
        body = line.lstrip(SPACE)
        if body and not body.startswith("#"):
            indent = len(line) - len(line.lstrip(" "))
            out.append(_Line(indent, line[indent:], number))
    return out


def _scalar(text: str, line: _Line, depth: int) -> Any:
    text = _trim(text)
    if text in ("", "~", "null"):
        return None
    if text in ("true", "false"):
        return text == "true"
    if _NUMBER.fullmatch(text):
        if text.lstrip("+-")[:2] in ("0x", "0X"):
            return int(text, 16)
        number = float(text)
        return int(number) if number.is_integer() and not any(c in text for c in ".eE") else number
    quote = text[0]
    if quote in "\"'" and len(text) >= 2 and text[-1] == quote:
        inner = text[1:-1]
        return inner.replace('\\"', '"').replace("\\n", "\n") if quote == '"' else inner.replace("''", "'")
    if text.startswith("[") and text.endswith("]"):  # a flow list: [a, b]
        if depth >= MAX_NESTING:
            raise FrontMatterError(f"line {line.number}: nested deeper than {MAX_NESTING} levels")
        return [_scalar(part, line, depth + 1) for part in text[1:-1].split(",") if part]
    return _trim(text, comment=True)


def _is_dash(line: _Line) -> bool:
    return line.text.startswith("- ") or line.text == "-"


def _block(lines: list[_Line], i: int, indent: int, depth: int) -> tuple[Any, int]:
    """The map or list starting at lines[i] with indentation `indent`, `depth` levels in, and
    the index after it."""
    depth += 1
    if depth > MAX_NESTING:
        raise FrontMatterError(f"line {lines[i].number}: nested deeper than {MAX_NESTING} levels")
    if _is_dash(lines[i]):
        return _list(lines, i, indent, depth)
    mapping: dict[str, Any] = {}
    while i < len(lines) and lines[i].indent == indent:
        line = lines[i]
        pair = _KEY_VALUE.match(line.text)
        if not pair:
            raise FrontMatterError(f"line {line.number}: expected `key: value`")
        key, value = _trim(pair[1]), pair[2]
        quoted = _QUOTED_KEY.fullmatch(key)
        key = quoted[1] if quoted else key
        after = lines[i + 1] if i + 1 < len(lines) else None
        if value == "" and after and after.indent > indent:
            mapping[key], i = _block(lines, i + 1, after.indent, depth)
        elif value == "" and after and after.indent == indent and after.text.startswith("- "):
            mapping[key], i = _block(lines, i + 1, indent, depth)  # a list at the key's own indentation
        else:
            mapping[key] = _scalar(value, line, depth)
            i += 1
    if i < len(lines) and lines[i].indent > indent:
        raise FrontMatterError(f"line {lines[i].number}: unexpected indentation")
    return mapping, i


def _list(lines: list[_Line], i: int, indent: int, depth: int) -> tuple[list[Any], int]:
    items: list[Any] = []
    while i < len(lines) and lines[i].indent == indent and _is_dash(lines[i]):
        rest = lines[i].text[2:]
        if _MAP_ITEM.match(rest):  # a map in the list: its first key is on the dash line
            inner = [_Line(indent + 2, rest, lines[i].number)]
            j = i + 1
            while j < len(lines) and lines[j].indent > indent:
                inner.append(lines[j])
                j += 1
            items.append(_block(inner, 0, indent + 2, depth)[0])
            i = j
        else:
            items.append(_scalar(rest, lines[i], depth))
            i += 1
    return items, i


__all__ = ["MAX_NESTING", "FrontMatterError", "decode"]
