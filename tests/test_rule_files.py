"""Which files a rules group's entries name (codecompanion_py/rules.py), in plain pytest:
files, directories, globs and name patterns as CodeCompanion reads them, searches that stop,
and globs that match what Neovim's vim.glob matched when Lua did this."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from codecompanion_py import repository, rules
from codecompanion_py.demo.launch import nvim_binary
from codecompanion_py.rules import RuleEntry, glob_regex, rule_files


def tree(root: Path, *names: str) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"{name}\n")


def shown(files, root: Path) -> list[str]:
    return [str(Path(file.path).relative_to(root)) for file in files]


def test_entries_name_files_directories_globs_and_patterns(tmp_path):
    tree(tmp_path, "docs/a.md", "docs/api/b.md", "docs/skip.txt", "guides/one.md", "team/x.rules", "top.md")
    tree(tmp_path, "node_modules/pkg/c.md", ".git/d.md", "docs/node_modules/e.md")
    entries = [
        RuleEntry("docs/**/*.md"),
        RuleEntry("guides", parser="claude"),
        RuleEntry(".", files=["*.rules", "top.md"]),
        RuleEntry("nowhere", files="*.md"),
        RuleEntry("missing.md"),
        RuleEntry("top.md"),
    ]
    files, problems = rule_files(entries, str(tmp_path), str(tmp_path / "home"))
    assert shown(files, tmp_path) == ["docs/a.md", "docs/api/b.md", "guides/one.md", "team/x.rules", "top.md", "top.md"]
    assert [file.parser for file in files][2] == "claude"
    assert problems == ["nowhere (a rule entry with `files`) is not a directory"]


def test_a_config_that_names_a_file_itself_reads_it_wherever_it_is(tmp_path, monkeypatch):
    home = tmp_path / "home"
    tree(home, ".claude/CLAUDE.md", "notes/n.md")
    tree(tmp_path, "proj/CLAUDE.md", "up.md")
    monkeypatch.setenv("CC_NOTES", str(home / "notes"))
    entries = [
        RuleEntry("~/.claude/CLAUDE.md"),
        RuleEntry("$CC_NOTES/n.md"),
        RuleEntry("../up.md"),
        RuleEntry("CLAUDE.md"),
    ]
    files, _ = rule_files(entries, str(tmp_path / "proj"), str(home))
    assert [file.named for file in files] == [True, True, True, False]
    assert files[0].path == str(home / ".claude/CLAUDE.md") and files[1].path == str(home / "notes/n.md")


def test_an_entry_that_names_a_huge_tree_is_searched_only_so_far(tmp_path, monkeypatch):
    """`~` or `/` as a rules directory must not hang the editor: the search stops and says so."""
    tree(tmp_path, *(f"many/r{i}.md" for i in range(6)))
    monkeypatch.setattr(rules, "MAX_VISITS", 4)
    loaded = repository.load_rules({"cwd": str(tmp_path), "entries": [{"path": "many"}]})
    assert len(loaded["items"]) == 4 and all("/many/r" in item["path"] for item in loaded["items"])
    assert loaded["problems"] == ["many: the search stopped after 4 files and folders"]


def test_an_entry_brings_at_most_max_files(tmp_path, monkeypatch):
    tree(tmp_path, *(f"d/{i}.md" for i in range(5)))
    monkeypatch.setattr(rules, "MAX_FILES", 3)
    files, problems = rule_files([RuleEntry("d")], str(tmp_path), str(tmp_path))
    assert len(files) == 3 and problems == ["d names 5 files: the first 3 were read"]


def test_a_slash_wide_glob_is_refused_in_time(tmp_path):
    started = time.monotonic()
    _, problems = rule_files([RuleEntry("/**/*.md")], str(tmp_path), str(tmp_path))
    assert time.monotonic() - started < 5
    assert problems[:1] in ([], [f"/**/*.md: the search stopped after {rules.MAX_VISITS} files and folders"])


GLOBS = [
    ("**/*.md", ["a.md", "x/y/a.md", "a.txt", "xa.md"]),
    ("*.md", ["a.md", "x/a.md", ".md"]),
    ("docs/**", ["docs/a/b", "docs", "docs/"]),
    ("a?c", ["abc", "a/c", "ac"]),
    ("*.{md,txt}", ["x.txt", "x.md", "x.rst"]),
    ("[!a]b", ["cb", "ab", "[!a]b"]),
    ("[a-c]x", ["bx", "dx"]),
    ("[!a-c]x", ["bx", "dx", "/x"]),
    ("**", ["a/b", ""]),
    ("a/**/b", ["a/b", "a/x/y/b", "a/xb"]),
    ("*", ["", "a", "a/b"]),
    ("a*", ["a", "ab"]),
    ("{a,b/c}", ["b/c", "a", "c"]),
    ("{a,b", ["{a,b", "a"]),
    ("[abc", ["[abc", "a"]),
    ("a.b+(c)", ["a.b+(c)", "aXb+c"]),
]


def test_globs_match_what_neovims_vim_glob_matches(tmp_path):
    script = tmp_path / "globs.lua"
    cases = [(pattern, name) for pattern, names in GLOBS for name in names]
    script.write_text(
        "local out = {}\n"
        "for i = 1, #_G.arg, 2 do\n"
        "  local ok, m = pcall(vim.glob.to_lpeg, _G.arg[i])\n"
        "  table.insert(out, ok and m:match(_G.arg[i + 1]) ~= nil and '1' or '0')\n"
        "end\n"
        "io.stdout:write(table.concat(out))\n"
    )
    args = [part for case in cases for part in case]
    done = subprocess.run(
        [nvim_binary(), "--clean", "-l", str(script), *args], capture_output=True, text=True, timeout=30
    )
    expected = [flag == "1" for flag in done.stdout]
    ours = [re.fullmatch(glob_regex(pattern), name, re.DOTALL) is not None for pattern, name in cases]
    assert len(expected) == len(cases), done.stderr
    assert [c for c, a, b in zip(cases, ours, expected, strict=True) if a != b] == []


@pytest.mark.parametrize("pattern", ["[z-a]x", "[!z-a]x"])
def test_an_empty_range_matches_nothing_or_anything(pattern):
    assert (re.fullmatch(glob_regex(pattern), "qx", re.DOTALL) is not None) == pattern.startswith("[!")


def test_a_glob_over_a_deep_tree_of_long_names_is_searched_in_time(tmp_path):
    """A hostile repository's names are as long as the system allows: the glob is still one
    expression per name, linear in the tree."""
    deep = tmp_path
    for _ in range(12):
        deep = deep / ("d" * 250)
    deep.mkdir(parents=True)
    for i in range(300):
        (deep / f"{'n' * 200}{i}.mdx").write_text("x")
    (deep / "hit.md").write_text("x")
    started = time.monotonic()
    files, problems = rule_files([RuleEntry("**/*.md")], str(tmp_path), str(tmp_path))
    assert time.monotonic() - started < 5
    assert [Path(file.path).name for file in files] == ["hit.md"] and problems == []


def test_the_system_prompt_section_is_split_off_as_codecompanions_parser_does():
    text = (
        "# Team\nUse tabs.\n## System Prompt\nBe terse.\n@skip.md\n### Detail\nStill the prompt.\n"
        "```\n## System Prompt in a fence\n```\n# Next\nRest.\n"
    )
    prompt, rest = repository.system_prompt_section(text)
    assert prompt == "Be terse.\n### Detail\nStill the prompt.\n```\n## System Prompt in a fence\n```"
    assert rest == "# Team\nUse tabs.\n# Next\nRest."
    assert repository.system_prompt_section("## system prompt\n") == ("", "")
    assert repository.system_prompt_section("No section.\n## Other\n") == ("", "No section.\n## Other")


def test_a_rules_file_read_with_the_codecompanion_parser_carries_its_system_prompt(tmp_path):
    (tmp_path / "AGENTS.md").write_text("Rule.\n## System Prompt\nBe terse.\n")
    (tmp_path / "OTHER.md").write_text("Rule.\n## System Prompt\nBe terse.\n")
    answer = repository.load_rules(
        {
            "cwd": str(tmp_path),
            "entries": [{"path": "AGENTS.md", "parser": "codecompanion"}, {"path": "OTHER.md", "parser": "mine"}],
        }
    )
    mine, other = answer["items"]
    assert mine["system_prompt"] == "Be terse." and mine["content"] == "Rule."
    assert "system_prompt" not in other and other["parser"] == "mine" and "Be terse." in other["content"]
