"""The review's files: comments as editable markdown, state per baseline, broken files kept."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codecompanion_py.review.store import Comment, ReviewError, ReviewFiles, flatten, parse_comments
from codecompanion_py.review.text import for_chat, for_llm, review_md


def files(tmp_path: Path, branch: str = "main") -> ReviewFiles:
    return ReviewFiles(tmp_path / "storage", Path("/work/project"), branch)


def comment(path="a.py", start=3, end=4, code="x = 1\ny = 2", text="Why two lines?"):
    return Comment(path=path, start_line=start, end_line=end, code=code, filetype="python", comment=text)


def test_comments_round_trip_through_the_markdown_the_user_edits(tmp_path):
    review = files(tmp_path)
    tricky = comment(code="````\nfenced inside\n````", text="Keep it\n\nacross paragraphs")
    review.write_comments([comment(), tricky])
    assert review.comments() == [comment(), tricky] and review.warnings == []
    assert review.raw().startswith("## a.py:3-4\n")
    review.write_comments([])
    assert not review.comments_path.exists() and review.comments() == []


def test_text_that_is_no_comment_is_kept_aside_and_the_comments_go_on(tmp_path):
    review = files(tmp_path)
    review.comments_path.parent.mkdir(parents=True)
    review.comments_path.write_text("notes of mine\n\n## a.py:3-4\n\n```py\nx\n```\n\nfine\n\n## b.py:1-1\n")
    found = review.comments()
    assert [c.comment for c in found] == ["fine"]
    [kept] = review.folder.glob("comments.md.broken-*")
    assert "notes of mine" in kept.read_text() and "kept as" in review.warnings[0]


def test_state_belongs_to_one_baseline_and_a_broken_one_is_kept(tmp_path):
    review = files(tmp_path)
    state = review.state("base1")
    state.accepted.append("k1")
    review.save_state(state)
    assert review.state("base1").accepted == ["k1"]
    assert review.state("base2").accepted == []  # the baseline moved: the sets start afresh
    (review.folder / "state.json").write_text("[1, 2")
    assert review.state("base1").accepted == []
    [kept] = review.folder.glob("state.json.broken-*")
    assert kept.read_text() == "[1, 2" and len(review.warnings) == 1


def test_a_huge_file_is_kept_aside_and_a_fifo_refused(tmp_path):
    review = files(tmp_path)
    review.comments_path.parent.mkdir(parents=True)
    review.comments_path.write_bytes(b"## a:1-1\n\nx\n" + b"y" * (5 * 1024 * 1024))
    assert review.comments() == [] and list(review.folder.glob("comments.md.broken-*"))
    os.mkfifo(review.comments_path)
    with pytest.raises(ReviewError):
        review.comments()


def test_per_root_and_branch_and_review_md_per_root(tmp_path):
    main, feature = files(tmp_path, "main"), files(tmp_path, "feature/x")
    assert main.folder != feature.folder and main.review_path == feature.review_path
    assert flatten("feature/x") != flatten("feature_x") and "/" not in flatten("feature/x")


def test_what_the_llm_the_chat_and_review_md_get():
    sent = for_llm([comment()])
    assert '<comment file="a.py" lines="3-4">' in sent and "x = 1\ny = 2" in sent and "Why two lines?" in sent
    assert for_chat([comment(start=3, end=3)]) == "a.py:3\nWhy two lines?"
    assert "x = 1" not in for_chat([comment()])
    assert "Why two lines?" in review_md([comment()], "/work/project")


def test_parsing_never_raises_on_odd_text():
    huge = "## a.txt:1-" + "9" * 5000 + "\n\nwords\n"  # past Python's int() limit, and msgpack's
    for text in ["", "## :1-2", "## a:9-1\n\n````\nunclosed", "\x00\udcff", "## a:1-1\n" * 1000, huge]:
        parse_comments(text)
    [one] = parse_comments("## a:9-1\n\nswapped\n")[0]
    assert (one.start_line, one.end_line) == (1, 9)
