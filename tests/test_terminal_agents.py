"""The CLI interaction's engine side: which agent a call names and how its prompt is worded
(the terminals themselves: tests/e2e/test_cli_interaction.py)."""

from __future__ import annotations

import sys

import pytest

from codecompanion_py import calls
from codecompanion_py.errors import ConfigError
from codecompanion_py.terminal_agents import parse_words, prepare, render, resolve

AGENTS = {"agent": "py", "agents": {"py": {"cmd": sys.executable, "args": ["-q"], "description": "Python"}}}


def plan(**payload):
    return prepare(calls.decode("cli.prepare", {"cli": AGENTS, "cwd": "/p", **payload}))


def test_the_default_agent_and_a_named_one_resolve_to_an_argv():
    assert resolve(AGENTS, None).argv[1:] == ["-q"]
    with pytest.raises(ConfigError, match=r"CLI agent `codex` not found in config \(agents: py\)"):
        resolve(AGENTS, "codex")
    with pytest.raises(ConfigError, match="args must be a list of strings"):
        resolve({"agents": {"x": {"cmd": sys.executable, "args": "-q"}}}, "x")
    with pytest.raises(ConfigError, match="no CLI agent"):
        resolve({}, None)


def test_command_words_split_into_parameters_and_the_prompt():
    assert parse_words(["agent=codex", "fix", "a=b=c", "1+1=2"]) == ({"agent": "codex", "a": "b=c"}, "fix 1+1=2")
    assert plan(words=["Ask"])["action"] == "ask"
    assert plan(words=[])["action"] == "open"
    assert plan(words=[], visual=True)["action"] == "send"  # a range alone sends the selection
    assert plan(words=["agent=nope"]) == {"error": "CLI agent `nope` not found in config (agents: py)"}


def test_a_prompt_of_tags_alone_is_its_context_and_others_are_kept_as_written():
    items = {
        "buffers": {"items": [{"path": "/p/a.py"}, {"path": "/p/b.py"}]},
        "quickfix": {"items": [{"content": "a.py:3: oops"}]},
        "viewport": {"items": [{"content": "code"}]},
    }
    warnings: list[str] = []
    assert render("#{quickfix}", {"items": items}, "/p", True, warnings) == "- Quickfix list:\na.py:3: oops"
    assert render("#{buffers}", {"items": items}, "/p", True, warnings) == "the files I've shared: @a.py, @b.py"
    assert render("see #{viewport} #{tool} #{file:x.py}", {"items": items}, "/p", True, warnings) == (
        "see  #{tool} @x.py"
    )
    problems = {"diff": {"problems": ["git diff failed: not a repository"]}}
    assert render("#{diff} now", {"items": problems}, "/p", True, warnings) == "now"
    assert warnings == ["#{diff}: git diff failed: not a repository"]


def test_send_code_false_keeps_code_out():
    this = {"path": "/p/a.py", "lines": ["secret()"], "first": 1, "last": 1}
    assert render("explain #{this}", {"this": this}, "/p", False, []) == "explain"
    assert render("explain", {"this": this}, "/p", False, []) == "explain"
    assert "secret()" in render("explain", {"this": this}, "/p", True, [])
