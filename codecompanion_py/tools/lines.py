"""A text's lines as the editor holds them.

Text here has "\\n" line endings, and a final "\\n" ends the last line rather than starting
an empty one (Neovim keeps it as the buffer's 'eol'). The file tools, the edit matcher, the
diffs and the search worker all count lines this way, so a line number means the same line
in each. Imports nothing: the search worker (`scan.py`) loads it at start.
"""

from __future__ import annotations


def split_lines(text: str) -> list[str]:
    """`text`'s lines without their "\\n": `[]` for "", `["a"]` for "a" and "a\\n",
    `["a", ""]` for "a\\n\\n"."""
    pieces = text.split("\n")
    if text.endswith("\n") or not text:
        pieces.pop()
    return pieces


__all__ = ["split_lines"]
