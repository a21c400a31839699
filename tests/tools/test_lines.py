"""The one line splitter: a final "\\n" ends the last line, it does not start one."""

import pytest

from codecompanion_py.tools.lines import split_lines


@pytest.mark.parametrize(
    ("text", "lines"),
    [("", []), ("\n", [""]), ("a", ["a"]), ("a\n", ["a"]), ("a\n\n", ["a", ""]), ("a\nb", ["a", "b"])],
)
def test_split_lines(text, lines):
    assert split_lines(text) == lines
    assert "".join(line + "\n" for line in lines) == (text if text.endswith("\n") or not text else text + "\n")
