"""Search/replace edits: exact and tolerant matching, refusals written for the LLM, warnings, diffs."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from codecompanion_py.errors import EditRefused, ToolError
from codecompanion_py.tools.edits import (
    Edit,
    EditOutcome,
    apply_edits,
    apply_mode,
    check_suspicious,
    keep_line_endings,
    unified_diff,
)

CLASS = (
    "class Greeter:\n"
    "    def __init__(self, name):\n"
    "        self.name = name\n"
    "\n"
    "    def greet(self):\n"
    "        if self.name:\n"
    "            return 'hi ' + self.name\n"
    "        return 'hi'\n"
)


def refusal(original: str, *edits: Edit) -> str:
    with pytest.raises(EditRefused) as caught:
        apply_edits(original, edits)
    return str(caught.value)


# --- exact matching -----------------------------------------------------------------------------


def test_an_exact_edit_replaces_only_the_matched_text() -> None:
    outcome = apply_edits("a = 1\nb = a - 2\nc = 3\n", [Edit("a - 2", "a + 2")])
    assert outcome == EditOutcome("a = 1\nb = a + 2\nc = 3\n", (), ())


def test_edits_apply_in_order_each_to_the_result_of_the_previous() -> None:
    edits = [Edit("def add(a, b):", "def plus(a, b):"), Edit("plus(a, b):\n    return", "plus(a, b):\n    yield")]
    outcome = apply_edits("def add(a, b):\n    return a + b\n", edits)
    assert outcome.text == "def plus(a, b):\n    yield a + b\n"


def test_when_a_later_edit_fails_none_are_applied_and_the_llm_is_told() -> None:
    with pytest.raises(EditRefused) as caught:
        apply_edits("x = 1\ny = 2\n", [Edit("x = 1", "x = 10"), Edit("z = 3", "z = 30")])
    message = str(caught.value)
    assert message.startswith("edit 2: oldText was not found in the file (after edit 1).")
    assert message.endswith("No edit was applied; send all 2 again, fixed.")


def test_an_ambiguous_edit_is_refused_with_the_line_numbers_of_every_match() -> None:
    text = "x = 0\nreturn None\nx = 1\ny = 2\nreturn None\n\n\nreturn None\n"
    message = refusal(text, Edit("return None", "return 0"))
    assert message == (
        "edit 1: oldText matches 3 places (lines 2, 5, 8); include more surrounding lines to make "
        "it unique, or set replaceAll to true to change every one"
    )


def test_overlapping_occurrences_count_as_ambiguous() -> None:
    assert "matches 2 places (line 1)" in refusal("aaa\n", Edit("aa", "b"))


def test_replace_all_replaces_every_match_and_says_how_many() -> None:
    outcome = apply_edits("foo(1)\nbar(foo)\nfoo\n", [Edit("foo", "baz", replace_all=True)])
    assert outcome.text == "baz(1)\nbar(baz)\nbaz\n"
    assert outcome.notes == ("edit 1 replaced 3 occurrences (line 1, line 2, line 3)",)


# --- tolerant matching --------------------------------------------------------------------------


def test_trailing_whitespace_in_the_file_is_ignored_and_noted() -> None:
    text = "keep  \nx = 1   \ny = 2\t\nkeep too \n"
    outcome = apply_edits(text, [Edit("x = 1\ny = 2\n", "x = 10\ny = 20\n")])
    assert outcome.text == "keep  \nx = 10\ny = 20\nkeep too \n"
    assert outcome.notes == ("edit 1 matched lines 2-3 ignoring trailing whitespace",)


def test_code_sent_without_indentation_is_matched_and_reindented_into_the_class() -> None:
    old = "if self.name:\n    return 'hi ' + self.name\nreturn 'hi'"
    new = "if self.name:\n    greeting = 'hi ' + self.name\n    return greeting\nreturn 'hi'"
    outcome = apply_edits(CLASS, [Edit(old, new)])
    assert outcome.text == CLASS.replace(
        "            return 'hi ' + self.name\n",
        "            greeting = 'hi ' + self.name\n            return greeting\n",
    )
    assert outcome.notes == (
        "edit 1 matched lines 6-8 ignoring indentation; newText was re-indented to match the file",
    )


def test_a_block_sent_too_deep_is_dedented_including_lines_shallower_than_its_first() -> None:
    text = "def f():\n    x = 1\n    y = 2\n"
    outcome = apply_edits(text, [Edit("        x = 1\n        y = 2", "        x = 1\n        y = 3\n    z = 0")])
    assert outcome.text == "def f():\n    x = 1\n    y = 3\nz = 0\n"


def test_a_dedent_further_than_the_file_allows_is_refused() -> None:
    message = refusal("def f():\n    x = 1\n", Edit("        x = 1", "        x = 2\nz = 0"))
    assert message.startswith("edit 1: oldText matches line 2 only ignoring indentation, and newText's")


def test_the_files_tabs_are_used_when_the_llm_indents_with_spaces() -> None:
    text = "class A:\n\tdef f(self):\n\t\tif x:\n\t\t\treturn 1\n\t\treturn 2\n"
    old = "def f(self):\n    if x:\n        return 1\n"
    new = "def f(self):\n    if x:\n        if y:\n            return 1\n    return 0\n"
    outcome = apply_edits(text, [Edit(old, new)])
    assert outcome.text == (
        "class A:\n\tdef f(self):\n\t\tif x:\n\t\t\tif y:\n\t\t\t\treturn 1\n\t\treturn 0\n\t\treturn 2\n"
    )


def test_a_tab_indented_file_gets_tabs_for_a_block_sent_with_four_spaces() -> None:
    text = "func main() {\n\tif ok {\n\t\trun()\n\t}\n}\n"
    outcome = apply_edits(text, [Edit("if ok {\n    run()\n}", "if ok {\n    prepare()\n    run()\n}")])
    assert outcome.text == "func main() {\n\tif ok {\n\t\tprepare()\n\t\trun()\n\t}\n}\n"


def test_an_exact_match_wins_even_after_indentation_and_is_taken_literally() -> None:
    text = "func main() {\n\t\trun()\n}\n"
    outcome = apply_edits(text, [Edit("run()\n", "prepare()\nrun()\n")])
    assert outcome == EditOutcome("func main() {\n\t\tprepare()\nrun()\n}\n", (), ())


def test_blank_lines_in_the_block_match_blank_lines_even_with_stray_spaces() -> None:
    old = "    self.name = name\n\ndef greet(self):"
    new = "    self.name = name\n\n\ndef hello(self):"
    outcome = apply_edits(CLASS.replace("\n\n", "\n    \n"), [Edit(old, new)])
    assert "        self.name = name\n\n\n    def hello(self):\n" in outcome.text
    assert refusal("a\nb\n", Edit("a\n\nb", "a\nc")).startswith("edit 1: oldText was not found")  # not blank-free
    assert refusal("a\nz\nb\n", Edit("a\n\nb", "a\nc")).startswith("edit 1: oldText was not found")


def test_a_block_whose_relative_indentation_differs_from_the_file_is_refused_not_guessed() -> None:
    message = refusal("if a:\n    b()\nc()\n", Edit("if a:\nb()\nc()", "if a:\nb2()\nc()"))
    assert message.startswith("edit 1: oldText matches lines 1-3 only ignoring indentation, and newText's")


def test_replace_all_reindents_each_match_for_its_own_place() -> None:
    text = "def f():\n    pass\nclass A:\n    def g(self):\n        pass\n"
    exact = apply_edits(text, [Edit("pass", "x = 1\nreturn x", replace_all=True)])  # exact: taken literally
    assert exact.text == "def f():\n    x = 1\nreturn x\nclass A:\n    def g(self):\n        x = 1\nreturn x\n"
    tolerant = apply_edits(text, [Edit("pass  \n", "x = 1\nreturn x\n", replace_all=True)])
    assert tolerant.text == (
        "def f():\n    x = 1\n    return x\nclass A:\n    def g(self):\n        x = 1\n        return x\n"
    )
    assert tolerant.notes == (
        "edit 1 matched line 2, line 5 ignoring indentation; newText was re-indented to match the file",
    )


def test_a_missing_final_newline_is_kept_when_the_last_line_is_matched_tolerantly() -> None:
    outcome = apply_edits("a\n  end  ", [Edit("end\n", "finish\n")])
    assert outcome.text == "a\n  finish"


def test_the_final_newline_is_not_a_blank_line_to_match() -> None:
    assert refusal("a\n", Edit("a\n\n", "b\n\n")).startswith("edit 1: oldText was not found in the file.")
    assert apply_edits("a\n\n", [Edit("a  \n\n", "b\n\n")]).text == "b\n\n"


def test_empty_new_text_deletes_whole_lines_in_line_mode() -> None:
    assert apply_edits("a\n  b \nc\n", [Edit("b\n", "")]).text == "a\nc\n"


# --- refusals -----------------------------------------------------------------------------------


def test_a_missing_match_shows_the_most_similar_lines_with_their_numbers() -> None:
    message = refusal(CLASS, Edit("return 'hello ' + self.nam", "return 'hey'"))
    assert message == (
        "edit 1: oldText was not found in the file. The most similar part of the file is line 7:\n"
        "7 |             return 'hi ' + self.name\n"
        "Copy oldText exactly from the current file (read it again if unsure) and retry."
    )


def test_a_missing_multiline_match_shows_the_similar_region() -> None:
    message = refusal(CLASS, Edit("def greet(self):\n    if self.nme:\n        return 'hi ' + self.name", "x"))
    assert "lines 5-7:\n5 |     def greet(self):\n6 |         if self.name:\n7 |" in message


def test_in_a_big_file_a_near_miss_is_found_by_the_words_it_shares() -> None:
    text = "".join(f"def method_{i}(value):\n    return value + {i}\n" for i in range(10_000))
    message = refusal(text, Edit("def method_9123(values):\n    return values + 9123", "x"))
    assert "The most similar part of the file is lines 18247-18248:" in message


def test_a_missing_match_with_nothing_similar_says_so() -> None:
    assert refusal("aaaa\nbbbb\n", Edit("zzzz qqqq xxxx", "y")) == (
        "edit 1: oldText was not found in the file. Nothing in the file is similar to it.\n"
        "Copy oldText exactly from the current file (read it again if unsure) and retry."
    )


def test_an_empty_file_takes_new_text_when_old_text_is_empty() -> None:
    assert apply_edits("", [Edit("", "print(1)\n")]).text == "print(1)\n"
    assert apply_edits("", [Edit("", "a\n"), Edit("a", "b")]).text == "b\n"


def test_empty_old_text_on_a_non_empty_file_is_refused() -> None:
    assert refusal("x\n", Edit("", "y")) == (
        "edit 1: oldText is empty; to add text at the end use mode append, or give the exact text to replace"
    )


def test_non_empty_old_text_on_an_empty_file_is_refused() -> None:
    assert refusal("", Edit("x", "y")).startswith("edit 1: the file is empty, so oldText cannot match")


def test_a_no_op_edit_is_refused() -> None:
    assert refusal("x = 1\n", Edit("x = 1", "x = 1")).startswith("edit 1: oldText and newText are identical")


def test_no_edits_at_all_is_refused() -> None:
    with pytest.raises(EditRefused, match="no edits were given"):
        apply_edits("x", [])


# --- Edit.from_args -----------------------------------------------------------------------------


def test_from_args_reads_the_llms_object() -> None:
    assert Edit.from_args({"oldText": "a", "newText": "b"}, 1) == Edit("a", "b", False)
    assert Edit.from_args({"oldText": "a", "newText": "b", "replaceAll": True}, 1) == Edit("a", "b", True)
    assert Edit.from_args({"oldText": "a", "newText": "b", "replaceAll": None}, 1) == Edit("a", "b", False)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("oldText: a", 'edit 3 must be an object {"oldText": ..., "newText": ..., "replaceAll": false}, got a string'),
        (["a", "b"], 'edit 3 must be an object {"oldText": ..., "newText": ..., "replaceAll": false}, got a list'),
        (
            {"newText": "b"},
            "edit 3: oldText is missing; every edit needs oldText (the exact text from the file) and "
            "newText (what replaces it)",
        ),
        ({"old_text": "a", "newText": "b"}, "edit 3: oldText is missing (got 'old_text'; the key is spelled oldText)"),
        ({"oldText": "a"}, "edit 3: newText is missing"),
        ({"oldText": 5, "newText": "b"}, "edit 3: oldText must be a string, got a number (5)"),
        ({"oldText": "a", "newText": None}, "edit 3: newText must be a string, got null"),
        (
            {"oldText": "a", "newText": "b", "replaceAll": "yes"},
            "edit 3: replaceAll must be true or false, got a string",
        ),
        (
            {"oldText": "a", "newText": "b", "replaceAll": 1},
            "edit 3: replaceAll must be true or false, got a number (1)",
        ),
    ],
)
def test_from_args_refuses_malformed_edits_clearly(raw: Any, message: str) -> None:
    with pytest.raises(EditRefused) as caught:
        Edit.from_args(raw, 3)
    assert str(caught.value).startswith(message)
    assert isinstance(caught.value, ToolError)


# --- modes --------------------------------------------------------------------------------------


def test_overwrite_replaces_the_whole_file() -> None:
    outcome = apply_mode("old\ntext\n", "overwrite", "new\n")
    assert outcome == EditOutcome("new\n", ("overwrote the file (2 lines before, 1 now)",), ())


def test_append_adds_a_newline_separator_only_when_the_file_lacks_one() -> None:
    assert apply_mode("a\nb", "append", "c\n").text == "a\nb\nc\n"
    assert apply_mode("a\nb\n", "append", "c\n").text == "a\nb\nc\n"
    assert apply_mode("", "append", "c").text == "c"
    assert apply_mode("a\n", "append", "c\nd\n").notes == ("appended 2 lines",)


def test_unknown_or_empty_modes_are_refused() -> None:
    with pytest.raises(EditRefused, match="unknown mode 'prepend'; use mode append or overwrite"):
        apply_mode("a", "prepend", "b")
    with pytest.raises(EditRefused, match="appending changes nothing"):
        apply_mode("a", "append", "")
    with pytest.raises(EditRefused, match="overwriting changes nothing"):
        apply_mode("a\n", "overwrite", "a\n")


# --- warnings -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "    # ... existing code ...",
        "// ... rest of the code",
        "# ... rest of file unchanged",
        "<!-- ... -->",
        "<!-- ... unchanged ... -->",
        "{/* ... existing code ... */}",
        "-- ... remaining code",
        "/* ... */",
        "... existing code ...",
        "(rest of code here)",
        "# rest of file unchanged",
        "// existing code here",
        "  // remaining methods unchanged",
        "# existing code...",
    ],
)
def test_placeholder_lines_are_flagged(line: str) -> None:
    warnings = check_suspicious("def f():\n    return 1\n", f"def f():\n{line}\n    return 2\n")
    assert warnings == (f'the new text has placeholder lines instead of real code: line 2 "{line.strip()}"',)


@pytest.mark.parametrize(
    "line",
    [
        "def f(*args): ...",
        "    ...",
        "const { a, ...rest } = obj;",
        "    ...rest",
        "print('loading...')",
        "# TODO: handle the remaining cases...",
        "# rest of the tests check errors",
        ">>> f(1,",
        "... previous = 2",
        "x = 1  # ...",
    ],
)
def test_ordinary_ellipses_and_comments_are_not_placeholders(line: str) -> None:
    assert check_suspicious("a = 1\n", f"a = 1\n{line}\n") == ()


def test_a_placeholder_already_in_the_file_is_not_flagged() -> None:
    assert check_suspicious("x\n// ... rest of the code\n", "y\n// ... rest of the code\n") == ()


def test_an_edit_that_writes_a_placeholder_reports_it_in_the_outcome() -> None:
    outcome = apply_edits(CLASS, [Edit("        return 'hi'\n", "        # ... rest of the code unchanged\n")])
    assert outcome.warnings == (
        'the new text has placeholder lines instead of real code: line 8 "# ... rest of the code unchanged"',
    )


def test_deleting_more_than_half_of_a_long_file_warns() -> None:
    original = "".join(f"line {n}\n" for n in range(30))
    assert check_suspicious(original, "line 0\n") == ("this edit deletes 29 of 30 lines",)
    assert check_suspicious(original, "".join(f"line {n}\n" for n in range(15))) == ()  # exactly half
    fourteen = "".join(f"line {n}\n" for n in range(14))
    assert check_suspicious(original, fourteen) == ("this edit deletes 16 of 30 lines",)
    short = "".join(f"line {n}\n" for n in range(19))
    assert check_suspicious(short, "") == ()


# --- diffs --------------------------------------------------------------------------------------


def test_unified_diff_has_a_and_b_headers_and_ends_with_a_newline() -> None:
    assert unified_diff("src/calc.py", "a\nb\nc\n", "a\nB\nc\n") == (
        "--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    )


def test_unified_diff_shows_a_change_of_the_final_newline() -> None:
    assert unified_diff("f", "a\nb", "a\nb\n") == (
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
    )


def test_unified_diff_of_identical_texts_is_empty() -> None:
    assert unified_diff("f", "same\n", "same\n") == ""
    assert unified_diff("f", "", "") == ""


def _patched(old: str, diff: str) -> str:
    """`old` with `diff`'s hunks applied, checking each hunk's header and its old lines."""
    lines = old.split("\n")
    out: list[str] = []
    at = 0  # lines of `old` used so far
    body = diff.split("\n")[2:-1]
    i = 0
    while i < len(body):
        header = re.match(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$", body[i])
        assert header, body[i]
        start, size = int(header[1]), int(header[2] or 1)
        begin = start - 1 if size else start
        out.extend(lines[at:begin])
        at, seen, i = begin, 0, i + 1
        while i < len(body) and not body[i].startswith("@@"):
            mark, text = body[i][0], body[i][1:]
            if mark in " -":
                assert lines[at] == text, (at, text)
                at, seen = at + 1, seen + 1
            if mark in " +":
                out.append(text)
            i += 1
        assert seen == size
    return "\n".join(out + lines[at:])


@given(
    st.lists(st.sampled_from(["a", "b", "", "x = 1", "    pass"]), max_size=80),
    st.lists(st.tuples(st.integers(0, 80), st.sampled_from(["change", "insert", "delete"])), min_size=1, max_size=4),
    st.integers(0, 4),
)
def test_a_diff_turns_the_old_text_into_the_new_with_full_context(lines, changes, context) -> None:
    new_lines = list(lines)
    for where, what in changes:
        where = min(where, len(new_lines))
        if what == "insert":
            new_lines.insert(where, "added")
        elif new_lines and where < len(new_lines):
            if what == "change":
                new_lines[where] += "!"
            else:
                del new_lines[where]
    old, new = "".join(line + "\n" for line in lines), "".join(line + "\n" for line in new_lines)
    assume(old != new)
    diff = unified_diff("f", old, new, context=context)
    assert _patched(old, diff) == new
    starts = [int(m) for m in re.findall(r"(?m)^@@ -(\d+)", diff)]
    for start, hunk in zip(starts, re.split(r"(?m)^@@.*\n", diff)[1:]):
        marks = [row[0] for row in hunk.rstrip("\n").split("\n")]
        changed = [n for n, mark in enumerate(marks) if mark != " "]
        lead, trail = changed[0], len(marks) - 1 - changed[-1]
        old_rows = sum(mark != "+" for mark in marks)
        first = start - 1 + lead if old_rows else start  # old lines before the first change
        after = len(lines) - (start - 1 + old_rows - trail) if old_rows else len(lines) - start
        assert lead == min(context, first) and trail == min(context, after), (hunk, context)


def test_an_edit_of_a_big_file_is_diffed_around_the_change() -> None:
    old = "".join(f"line {n}\n" for n in range(20_000))
    new = old.replace("line 15000\n", "line 15000 changed\n")
    assert unified_diff("big", old, new) == (
        "--- a/big\n+++ b/big\n@@ -14998,7 +14998,7 @@\n line 14997\n line 14998\n line 14999\n"
        "-line 15000\n+line 15000 changed\n line 15001\n line 15002\n line 15003\n"
    )


def test_unified_diff_respects_context() -> None:
    old = "".join(f"{n}\n" for n in range(10))
    assert unified_diff("f", old, old.replace("5\n", "five\n"), context=1) == (
        "--- a/f\n+++ b/f\n@@ -5,3 +5,3 @@\n 4\n-5\n+five\n 6\n"
    )


# --- property -----------------------------------------------------------------------------------


@given(text=st.text(alphabet="ab \t\nxy", max_size=60), data=st.data(), new=st.text(alphabet="abz\n ", max_size=8))
def test_an_exact_unique_old_text_behaves_like_str_replace(text: str, data: st.DataObject, new: str) -> None:
    assume(text)
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    old = text[start:end]
    first = text.find(old)
    assume(text.find(old, first + 1) == -1 and old != new)
    assert apply_edits(text, [Edit(old, new)]).text == text.replace(old, new)


@pytest.mark.parametrize(
    ("original", "new", "newline", "written"),
    [
        ("a\nb\n", "a\nB\n", "\n", "a\nB\n"),  # LF alone: as it is
        ("a\r\nb\r\n", "a\nB\nc\n", "\r\n", "a\r\nB\r\nc\r\n"),  # CRLF alone: every line
        ("a\r\nb\n\nx\r\n", "a\nB\n\nx\n", "\n", "a\r\nB\n\nx\r\n"),  # mixed: each line its own
        ("a\r\nb\n\nx\r\n", "a\nnew\nb\n\nx\n", "\r\n", "a\r\nnew\r\nb\n\nx\r\n"),  # an added line: the usual one
        ("a\r\nb\nc", "a\nb\nC", "\n", "a\r\nb\nC"),  # no final newline stays so
        ("\ufeffa\r\nb\n", "\ufeffa\nb\nc\n", "\n", "\ufeffa\r\nb\nc\n"),
        ("a\rb\n", "a\rB\n", "\n", "a\rB\n"),  # a lone CR is text
    ],
)
def test_keep_line_endings_changes_no_line_the_edit_left_alone(original, new, newline, written):
    assert keep_line_endings(original, new, newline) == written


@given(st.lists(st.tuples(st.text("ab \r", max_size=4), st.sampled_from(["\n", "\r\n"])), max_size=8))
def test_keep_line_endings_of_an_unchanged_text_is_the_original(lines):
    original = "".join(text + ending for text, ending in lines)
    assume(not any(text.endswith("\r") for text, _ in lines))  # "x\r" + "\n" reads as a CRLF
    assert keep_line_endings(original, original.replace("\r\n", "\n"), "\n") == original
