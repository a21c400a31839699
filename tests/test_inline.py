"""Reading the inline assistant's answer: the placement line, fences and prose dropped."""

from codecompanion_py.inline import InlineParser, InlineRequest
from codecompanion_py.ui import ops


def parse(chunks, forced=None):
    parser = InlineParser(forced=forced)
    out = [op for chunk in chunks for op in parser.feed(chunk)] + parser.finish()
    placements = [op.placement for op in out if isinstance(op, ops.Placement)]
    return placements, "".join(op.text for op in out if isinstance(op, ops.Text))


def test_the_placement_line_then_the_code_in_any_chunking():
    text = "PLACEMENT: add\n```python\ndef f():\n    return 1\n```\nThis adds f.\n"
    for size in (1, 3, 100):
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        assert parse(chunks) == (["add"], "def f():\n    return 1\n")


def test_a_forced_placement_wins_and_an_answer_without_the_line_is_code():
    assert parse(["PLACEMENT: new\nx = 1\n"], forced="replace") == (["replace"], "x = 1\n")
    assert parse(["x = 1\ny = 2"]) == (["replace"], "x = 1\ny = 2")
    assert parse(["**Placement:** before\n\nx = 1"]) == (["before"], "x = 1")
    assert parse(["PLACEMENT: sideways\nx"]) == (["replace"], "x")


def test_the_request_names_the_selection_the_context_and_a_forced_placement():
    request = InlineRequest(
        prompt="fix it",
        filetype="lua",
        path="a.lua",
        selection="local x = 1",
        lines=(3, 3),
        placement="replace",
        context=[{"label": "The clipboard", "content": "y"}],
    )
    system, user = request.messages()
    assert "PLACEMENT: <where>" in system.text
    assert user.text == (
        "The buffer's file type is lua, its file is a.lua.\n\n"
        "The selected lines 3-3:\n```lua\nlocal x = 1\n```\n\n"
        "The clipboard:\n```\ny\n```\n\nUse PLACEMENT: replace.\n\nThe request: fix it"
    )
