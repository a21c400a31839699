"""Hunks parsed from `git diff -U0`: one per change, known by content, found by line."""

from __future__ import annotations

from codecompanion_py.review.hunks import covering, parse

DIFF = """diff --git a/calc.txt b/calc.txt
index 1111111..2222222 100644
--- a/calc.txt
+++ b/calc.txt
@@ -2 +2 @@ line 1
-line 2
+line two
@@ -15,0 +16,2 @@ line 15
+added one
+added two
@@ -18,2 +19,0 @@ line 17
-line 18
-line 19
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index 3333333..0000000
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000..4444444
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+hello
diff --git a/pic.png b/pic.png
index 5555555..6666666 100644
Binary files a/pic.png and b/pic.png differ
diff --git "a/sp\\303\\244ce \\"q\\".txt" "b/sp\\303\\244ce \\"q\\".txt"
index 7777777..8888888 100644
--- "a/sp\\303\\244ce \\"q\\".txt"
+++ "b/sp\\303\\244ce \\"q\\".txt"
@@ -1 +1 @@
-a
+b
"""


def test_each_change_is_a_hunk_at_the_line_it_is_now():
    hunks = parse(DIFF)
    assert [(h.path, h.first, h.last) for h in hunks] == [
        ("calc.txt", 2, 2),
        ("calc.txt", 16, 17),
        ("calc.txt", 20, 20),  # a deletion after line 19: at the line after it
        ("gone.txt", 1, 1),
        ("new.txt", 1, 1),
        ("pic.png", 1, 1),
        ('späce "q".txt', 1, 1),
    ]
    assert hunks[0].lines == ("-line 2", "+line two") and hunks[0].summary() == "+1 -1 line 2"


def test_a_hunk_is_known_by_its_content_not_its_place():
    moved = DIFF.replace("@@ -2 +2 @@", "@@ -5 +5 @@")
    assert parse(moved)[0].key == parse(DIFF)[0].key
    other = DIFF.replace("+line two", "+line 2!")
    assert parse(other)[0].key != parse(DIFF)[0].key
    assert len({h.key for h in parse(DIFF)}) == len(parse(DIFF))


def test_the_hunk_at_a_line_or_the_nearest_one():
    hunks = parse(DIFF)
    assert covering(hunks, "calc.txt", 17) == hunks[1]
    assert covering(hunks, "calc.txt", 3) == hunks[0]
    assert covering(hunks, "elsewhere.txt", 1) is None


def test_nothing_to_parse_is_no_hunks():
    assert parse("") == [] and parse("garbage\n@@ nonsense @@\n+x") == []


def test_names_with_a_space_or_quoted_on_binary_files_come_out_whole():
    diff = (
        "diff --git a/my notes.txt b/my notes.txt\nindex 1..2 100644\n--- a/my notes.txt\t\n"
        "+++ b/my notes.txt\t\n@@ -1 +1 @@\n-a\n+b\n"
        'diff --git "a/\\303\\251 caf\\303\\251.bin" "b/\\303\\251 caf\\303\\251.bin"\n'
        "index 3..4 100644\nBinary files differ\n"
    )
    assert [h.path for h in parse(diff)] == ["my notes.txt", "é café.bin"]
