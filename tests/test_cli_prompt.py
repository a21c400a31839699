"""How the CLI interaction words editor context for an agent's own CLI."""

from __future__ import annotations

from codecompanion_py.calls import CliItem, CliRender
from codecompanion_py.cli_prompt import render

CWD = "/project"


def item(tag: str, kind: str, **fields) -> CliItem:
    return CliItem(tag=tag, kind=kind, **fields)


def test_files_are_at_paths_relative_to_the_cwd_and_outside_it_absolute():
    items = [
        item("#{this}", "buffer", paths=["/project/src/app.py"]),
        item("#{buffers}", "buffers", paths=["/project/a.py", "/elsewhere/b.py"]),
    ]
    text = render(CliRender(prompt="Compare #{this} with #{buffers}", cwd=CWD, items=items))
    assert text == "Compare @src/app.py with the files I've shared: @a.py, @/elsewhere/b.py"


def test_a_body_follows_the_prompt_as_a_block_and_a_tags_only_prompt_is_the_blocks():
    diagnostics = item("#{diagnostics}", "diagnostics", paths=["/project/app.py"], content="Line 3 [ERROR]: boom")
    terminal = item("#{terminal}", "terminal", content="FAILED test_x")
    text = render(CliRender(prompt="Fix #{diagnostics} and #{terminal}", cwd=CWD, items=[diagnostics, terminal]))
    assert text == (
        "Fix the diagnostics in @app.py and the terminal output\n\n"
        "Diagnostics for @app.py:\nLine 3 [ERROR]: boom\n\n"
        "- Terminal output:\n````\nFAILED test_x\n````\n"
    )
    only = render(CliRender(prompt="#{terminal}", cwd=CWD, items=[terminal]))
    assert only == "- Terminal output:\n````\nFAILED test_x\n````\n"
    paths = render(CliRender(prompt=" #{this} ", cwd=CWD, items=[item("#{this}", "buffer", paths=["/project/x.py"])]))
    assert paths == "@x.py"


def test_a_selection_without_tags_goes_first_and_unknown_tags_stay_as_typed():
    selection = item("", "selection", paths=["/project/app.py"], content="x = 1", filetype="python", lines=(2, 2))
    text = render(CliRender(prompt="Why?", cwd=CWD, selection=selection))
    assert text == "- Selected code from @app.py (lines 2-2):\n````python\nx = 1\n````\nWhy?"
    kept = render(CliRender(prompt="Keep #{nothing} here", cwd=CWD, selection=selection))
    assert kept == "Keep #{nothing} here"  # a tag: the selection is not added twice
