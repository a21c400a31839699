"""The prompt library's markdown prompts (codecompanion_py/prompt_library.py) and the YAML
subset of their front matter (codecompanion_py/front_matter.py), in plain pytest: what the
Lua parser's users saw, kept, and hostile input refused in time linear in its size."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from codecompanion_py import chat_calls, front_matter, prompt_library, prompt_trust
from codecompanion_py.front_matter import FrontMatterError, decode
from codecompanion_py.prompt_library import PromptError, PromptMessage, parse_markdown, read_prompts

BUILTINS = Path(__file__).resolve().parents[1] / "lua" / "codecompanion_py" / "prompts" / "builtins"


def test_the_yaml_subset_reads_maps_lists_scalars_and_comments():
    text = """
# a comment
name: "Quoted: yes"
single: 'it''s'
bare: plain words # a note
hash: a#b
count: 3
ratio: 0.5
hex: 0x10
on: true
off: false
nothing: ~
empty:
flow: [a, 2, true]
modes:
  - v
  - n
tools:
- one
- two
steps:
  - role: user
    content: hi
  - -
'quoted key': 1
escaped: "a \\"b\\"\\nc"
"""
    assert decode(text) == {
        "name": "Quoted: yes",
        "single": "it's",
        "bare": "plain words",
        "hash": "a#b",
        "count": 3,
        "ratio": 0.5,
        "hex": 16,
        "on": True,
        "off": False,
        "nothing": None,
        "empty": None,
        "flow": ["a", 2, True],
        "modes": ["v", "n"],
        "tools": ["one", "two"],
        "steps": [{"role": "user", "content": "hi"}, "-"],
        "quoted key": 1,
        "escaped": 'a "b"\nc',
    }
    assert decode("") == {} and decode("# only a comment\n") == {}
    assert decode("- a\n- b\n") == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("name: x\njust words\n", "line 2: expected `key: value`"),
        ("a: 1\n  b: 2\n", "line 2: unexpected indentation"),
        ("a:\n    b: 1\n  c: 2\n", "line 3: unexpected indentation"),
    ],
)
def test_yaml_it_does_not_read_is_an_error_that_names_the_line(text, error):
    with pytest.raises(FrontMatterError, match=f"^{error}$"):
        decode(text)


def test_a_megabyte_line_of_spaces_is_read_or_refused_at_once():
    started = time.monotonic()
    assert decode(f"description: a{' ' * 1_000_000}b # note")["description"] == f"a{' ' * 1_000_000}b"
    assert decode(f"description: {' ' * 1_000_000}")["description"] is None
    with pytest.raises(FrontMatterError, match="expected `key: value`"):
        decode(" " * 1_000_000 + "x")
    with pytest.raises(FrontMatterError, match="expected `key: value`"):
        decode("k: 1\n" + "x" * 1_000_000)
    assert time.monotonic() - started < 5


def test_ten_thousand_nested_levels_are_refused_at_once():
    """Maps, lists of maps and flow lists: each stops at MAX_NESTING, whatever the depth
    (an indented one is as large as its indentation: 50 MB for 10,000 levels of maps)."""
    deep = "k:\n" + "".join(f"{' ' * i}k:\n" for i in range(1, 10_000))
    dashes = "".join(f"{'  ' * i}- k:\n" for i in range(2_000))  # 4 MB
    brackets = "a: 1\nflow: " + "[" * 10_000 + "]" * 10_000
    started = time.monotonic()
    with pytest.raises(FrontMatterError, match=f"^line 33: nested deeper than {front_matter.MAX_NESTING} levels$"):
        decode(deep)
    with pytest.raises(FrontMatterError, match="nested deeper than 32 levels"):
        decode(dashes)
    with pytest.raises(FrontMatterError, match="^line 2: nested deeper than 32 levels$"):
        decode(brackets)
    assert time.monotonic() - started < 5
    assert decode("flow: [[a]]") == {"flow": [["a"]]}  # commas split first, as the Lua reader did


def test_a_markdown_prompt_has_front_matter_sections_and_section_options():
    text = """---
name: Mine
description: d
interaction: inline
tools:
  - grep
opts:
  alias: mine
---
Text before any section is no prompt.

## System

You are terse.

## user

```yaml opts
auto_submit: false
```
Do ${context.code}.
```
## system
```
"""
    item = parse_markdown(text, "/p/mine.md")
    assert (item.name, item.interaction, item.opts, item.path, item.dir) == (
        "Mine",
        "inline",
        {"alias": "mine"},
        "/p/mine.md",
        "/p",
    )
    assert item.meta == {"description": "d", "tools": ["grep"]}
    assert item.prompts == [
        PromptMessage("system", "You are terse."),
        PromptMessage("user", "Do ${context.code}.\n```\n## system\n```", {"auto_submit": False}),
    ]
    flat = item.for_lua()
    assert flat["description"] == "d" and flat["tools"] == ["grep"] and "meta" not in flat
    assert flat["prompts"][1] == {
        "role": "user",
        "content": "Do ${context.code}.\n```\n## system\n```",
        "opts": {"auto_submit": False},
    }


def test_a_workflows_user_sections_are_its_steps_each_with_the_system_sections_before_it():
    text = "---\nname: Flow\nstrategy: workflow\n---\n## system\nS\n## user\nOne\n## user\nTwo\n## system\nlate\n"
    item = parse_markdown(text)
    assert item.interaction == "workflow" and item.opts == {"is_workflow": True}
    assert item.prompts == [
        [PromptMessage("system", "S"), PromptMessage("user", "One")],
        [PromptMessage("user", "Two")],
    ]
    by_option = parse_markdown("---\nname: F\nopts:\n  is_workflow: true\n---\n## user\nOne\n")
    assert by_option.interaction == "chat" and by_option.prompts == [[PromptMessage("user", "One")]]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("no front matter here\n", "it has no front matter between --- lines"),
        ("---\nname: x\n---", "it has no front matter between --- lines"),
        ("---\ndescription: d\n---\n## user\nhi\n", "the front matter needs a name"),
        ("---\n- a\n---\n## user\nhi\n", "the front matter needs a name"),
        ("---\nname: x\nbad line\n---\n", "front matter: line 2: expected `key: value`"),
        (
            "---\nname: x\n---\n## user\n```yaml opts\nnope\n```\nhi\n",
            "a section's opts: line 1: expected `key: value`",
        ),
        (f"---\nname: x\nd: {'y' * 64_001}\n---\n", "its front matter is larger than 64 KB"),
    ],
)
def test_a_file_that_is_no_prompt_says_why(text, why):
    with pytest.raises(PromptError, match=f"^{why}$"):
        parse_markdown(text)


def test_a_front_matter_with_crlf_line_ends_parses():
    item = parse_markdown("---\r\nname: x\r\nopts:\r\n  alias: y\r\n---\r\n## user\r\nhi\r\n")
    assert item.opts == {"alias": "y"} and item.prompts == [PromptMessage("user", "hi")]


def test_the_builtins_parse_and_a_project_prompt_never_takes_another_prompts_alias(tmp_path):
    project = tmp_path / "proj"
    (project / ".prompts" / "nested").mkdir(parents=True)
    prompt = "---\nname: {name}\nopts:\n  alias: {alias}\n---\n## user\nhi\n"
    (project / ".prompts" / "hijack.md").write_text(prompt.format(name="Hijack", alias="explain"))
    (project / ".prompts" / "nested" / "cfg.md").write_text(prompt.format(name="Cfg", alias="mine"))
    (project / ".prompts" / "own.md").write_text(prompt.format(name="Own", alias="own"))
    (project / ".prompts" / "broken.md").write_text("no front matter here\n")
    (project / ".prompts" / ".hidden.md").write_text(prompt.format(name="Hidden", alias="hidden"))
    os.mkfifo(project / ".prompts" / "pipe.md")
    read = read_prompts(
        {
            "cwd": str(project),
            "home": str(tmp_path / "home"),
            "trust_file": str(trusting(tmp_path, project)),
            "builtins": str(BUILTINS),
            "dirs": [".prompts"],
            "config_aliases": {"mine": "From the config"},
        }
    )
    by_name = {item["name"]: item for item in read["items"]}
    assert {"Explain code", "Fix code", "Commit message", "Hijack", "Cfg", "Own"} <= set(by_name)
    assert {"Code workflow", "Inline prompt", "Upgrade Tools"} <= set(by_name)  # CodeCompanion 19's too
    assert len(by_name["Code workflow"]["prompts"]) == 3 and by_name["Code workflow"]["opts"]["auto_submit"] is False
    assert "Hidden" not in by_name
    assert by_name["Explain code"]["source"] == "builtin" and by_name["Explain code"]["opts"]["alias"] == "explain"
    assert by_name["Own"]["opts"] == {"alias": "own"} and by_name["Own"]["root"] == str(project.resolve())
    assert by_name["Hijack"]["opts"] == {} and by_name["Cfg"]["opts"] == {}
    assert by_name["Own"]["dir"] == str(project / ".prompts")
    problems = "\n".join(read["problems"])
    assert f"{project}/.prompts/broken.md: it has no front matter between --- lines" in problems
    assert "'.prompts/pipe.md' is a named pipe (FIFO)" in problems
    assert '.prompts/hijack.md: /explain is already "Explain code"\'s alias, which keeps it' in problems
    assert '.prompts/nested/cfg.md: /mine is already "From the config"\'s alias, which keeps it' in problems
    assert "ask" not in read


def test_a_prompts_pre_hook_context_and_mcp_servers_reach_lua_as_written():
    item = parse_markdown(
        "---\nname: Keys\npre_hook: hooks.make\nmcp_servers: none\ncontext:\n"
        "  - type: file\n    path:\n      - a.lua\n      - b.lua\n  - type: url\n    url: https://x.test\n---\n## user\nhi\n"
    ).for_lua()
    assert item["pre_hook"] == "hooks.make" and item["mcp_servers"] == "none"
    assert item["context"] == [{"type": "file", "path": ["a.lua", "b.lua"]}, {"type": "url", "url": "https://x.test"}]


def test_a_prompts_mcp_servers_name_the_chats_servers():
    assert chat_calls._servers("none") == ()
    assert chat_calls._servers(["fake", 3, "web"]) == ("fake", "web")
    assert chat_calls._servers(None) is None


def trusting(tmp_path: Path, project: Path, trusted: bool | None = True) -> Path:
    """A trust file that holds the user's answer on `project` (none when `trusted` is None)."""
    file = tmp_path / "data" / "trusted_prompts.json"
    if trusted is not None:
        prompt_trust.remember(str(file), os.path.realpath(project), trusted)
    return file


@pytest.mark.parametrize("trusted", [True, False, None])
def test_a_projects_folder_is_read_once_trusted_and_only_looked_into_before(tmp_path, trusted):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.md").write_text("---\nname: A\n---\n## user\nhi\n")
    (tmp_path / "empty").mkdir()
    request = {"cwd": str(tmp_path), "trust_file": str(trusting(tmp_path, tmp_path, trusted)), "dirs": ["p"]}
    read = read_prompts(request)
    assert [item["name"] for item in read["items"]] == (["A"] if trusted else [])
    assert read.get("ask") == (os.path.realpath(tmp_path) if trusted is None else None)
    assert "ask" not in read_prompts({**request, "dirs": ["empty"]})


def test_the_trust_answers_are_kept_whole_by_the_projects_real_path(tmp_path):
    file = tmp_path / "data" / "trusted_prompts.json"
    prompt_trust.remember(str(file), "/a", True)
    prompt_trust.remember(str(file), "/b", False)
    assert json.loads(file.read_text()) == {"/a": True, "/b": False}
    assert [prompt_trust.answer(str(file), root) for root in ("/a", "/b", "/c")] == [True, False, None]
    file.write_text("not json")
    assert prompt_trust.answer(str(file), "/a") is None
    assert prompt_trust.answer(str(tmp_path / "none.json"), "/a") is None


def test_prompt_folders_under_the_home_folder_are_the_users_own(tmp_path):
    home = tmp_path / "home"
    (home / "proj" / ".prompts").mkdir(parents=True)
    root = os.path.realpath(home)
    assert prompt_trust.in_project(str(home / ".config/nvim/prompts"), root, str(home)) is False
    assert prompt_trust.in_project(".prompts", root, str(home)) is False
    proj = os.path.realpath(home / "proj")
    assert prompt_trust.in_project(str(home / "proj/.prompts"), proj, str(home)) is True
    assert prompt_trust.in_project("~/proj/.prompts", proj, str(home)) is True
    assert prompt_trust.in_project(".prompts", proj, str(home)) is True
    assert prompt_trust.in_project(str(tmp_path / "elsewhere"), proj, str(home)) is False


def test_a_folder_is_named_with_home_and_variables_and_a_missing_one_is_nothing(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / "prompts").mkdir(parents=True)
    (home / "prompts" / "a.md").write_text("---\nname: A\n---\n## user\nhi\n")
    monkeypatch.setenv("CC_PROMPTS", str(home / "prompts"))
    (tmp_path / "proj").mkdir()
    for path in ("~/prompts", "$CC_PROMPTS", "${CC_PROMPTS}", "nowhere"):
        read = read_prompts({"cwd": str(tmp_path / "proj"), "home": str(home), "dirs": [path]})
        assert [i["name"] for i in read["items"]] == ([] if path == "nowhere" else ["A"]), path


def test_a_folder_search_stops_after_max_visits(tmp_path, monkeypatch):
    for i in range(10):
        (tmp_path / f"{i}.md").write_text("x")
    monkeypatch.setattr(prompt_library, "MAX_VISITS", 4)
    assert len(prompt_library.find_markdown(str(tmp_path))) == 4


def test_a_hostile_body_parses_in_time():
    spaces = " " * 1_000_000
    text = (
        f"---\nname: x\n---\n##{spaces}1\n## user\n```yaml opts{spaces}\n##{spaces}user{spaces}\n```yaml opts\n{spaces}"
    )
    started = time.monotonic()
    item = parse_markdown(text)
    assert time.monotonic() - started < 5
    assert [message.role for message in item.prompts] == ["user"]  # the "## user" after a fence line is fenced
