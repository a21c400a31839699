"""Counts as a person writes them."""

from __future__ import annotations

from codecompanion_py.words import count


def test_a_count_of_one_is_singular_and_any_other_plural():
    assert [count(n, "line") for n in (0, 1, 2)] == ["0 lines", "1 line", "2 lines"]
    assert count(1, "entry", "entries") == "1 entry" and count(3, "entry", "entries") == "3 entries"
