"""Counts as a person writes them: "1 line", "2 lines". Imports nothing of ours, so any
layer may use it."""

from __future__ import annotations


def count(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and `noun`, the noun plural unless `n` is 1 (`plural` for nouns that do not just
    take an "s": count(2, "entry", "entries"))."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
