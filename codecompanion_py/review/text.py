"""The words a review goes out in: what the LLM reads for `#{code_review}`, the short version
the chat shows, and `review.md` for an agent outside CodeCompanion."""

from __future__ import annotations

from ..scrubber import KNOWN
from .store import Comment, fenced

REPLACEMENT = "my comments from the code review, which I've attached"


def _where(comment: Comment) -> str:
    if comment.start_line == comment.end_line:
        return f"{comment.path}:{comment.start_line}"
    return f"{comment.path}:{comment.start_line}-{comment.end_line}"


def block(comment: Comment) -> str:
    """One comment as the LLM reads it: where, the code it is on, what the user said."""
    return (
        f'<comment file="{comment.path}" lines="{comment.start_line}-{comment.end_line}">\n'
        f"{fenced(comment)}\n{comment.comment}\n</comment>"
    )


def for_llm(comments: list[Comment]) -> str:
    blocks = "\n\n".join(block(c) for c in comments)
    return KNOWN.scrub(f"Here are the comments from my code review:\n\n{blocks}")


def for_chat(comments: list[Comment]) -> str:
    """What the chat shows of it: where and what, without the code."""
    return "\n\n".join(f"{_where(c)}\n{c.comment}" for c in comments)


def review_md(comments: list[Comment], root: str) -> str:
    intro = (
        f"# Code review\n\nMy comments on the changes in {root}. Each names a file (relative to "
        "that folder), its lines, the code I commented on, and what I'd like done.\n\n"
    )
    return KNOWN.scrub(intro + "\n\n".join(block(c) for c in comments) + "\n")
