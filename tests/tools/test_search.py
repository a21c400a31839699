"""list_project_files, find_files, grep and changed_files on real temporary projects."""

import os
import shutil
import stat
import subprocess
import sys

import pytest

from codecompanion_py.errors import ToolError
from codecompanion_py.tools import search
from codecompanion_py.tools.search import changed_files, find_files, grep, list_project_files

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths and symlinks")

HAVE_GIT = shutil.which("git") is not None
needs_git = pytest.mark.skipif(not HAVE_GIT, reason="git is not installed")

LONG_LINE = "needle " + "x" * 1000

# what the project below lists, whichever way it is listed
EXPECTED_FILES = sorted(
    [
        "-dash.txt",
        ".gitignore",
        "README.md",
        "big.txt",
        "data.bin",
        "docs/guide.md",
        "docs/secret.txt",
        "keep.log",
        "link_in",
        "long.txt",
        "notes/crlf.txt",
        "src/app.py",
        "src/pkg/.gitignore",
        "src/pkg/test_mod.py",
        "src/test_top.py",
        "src/util.py",
    ]
)

NEEDLE_HITS = [
    "README.md:2: needle in readme",
    "docs/secret.txt:1: needle docs",
    "keep.log:1: needle kept log",
    "long.txt:1: " + LONG_LINE[:300],
    "notes/crlf.txt:1: needle crlf",
    "src/app.py:4:     needle = 1",
    "src/app.py:5:     return needle",
    "src/pkg/test_mod.py:1: def test_needle():",
]


@pytest.fixture(autouse=True)
def isolated_git(monkeypatch, tmp_path):
    """git sees neither the user's nor the system's configuration."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "test@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@example.com")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)


def git(root, *args, check=True):
    return subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=check,
    )


def write(path, content):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_bytes(content.encode())


def make_project(root, outside):
    write(outside / "outside.txt", "needle outside\n")
    write(root / ".gitignore", "*.log\n!keep.log\nbuild/\n/secret.txt\n")
    write(root / "README.md", "# Demo\nneedle in readme\n")
    write(root / "secret.txt", "needle secret\n")
    write(root / "docs/secret.txt", "needle docs\n")
    write(root / "docs/guide.md", "guide\n")
    write(root / "app.log", "needle log\n")
    write(root / "keep.log", "needle kept log\n")
    write(root / "build/out.py", "needle = 'built'\n")
    write(root / "src/app.py", "import os\n\ndef main():\n    needle = 1\n    return needle\n")
    write(root / "src/util.py", "value = a.b(c)\nother = axb(c)\n")
    write(root / "src/test_top.py", "x = 1\n")
    write(root / "src/pkg/.gitignore", "generated.py\ncache/\n")
    write(root / "src/pkg/generated.py", "needle = 'generated'\n")
    write(root / "src/pkg/cache/entry.txt", "needle cached\n")
    write(root / "src/pkg/test_mod.py", "def test_needle():\n    assert True\n")
    write(root / "data.bin", b"\x00\x01needle\x00binary\n")
    write(root / "big.txt", "filler line\n" * 200_000 + "needle at the end of a big file\n")
    write(root / "notes/crlf.txt", "needle crlf\r\nsecond\r\n")
    write(root / "long.txt", LONG_LINE + "\n")
    write(root / "-dash.txt", "--pre=evil\n")
    os.symlink("README.md", root / "link_in")
    os.symlink(outside / "outside.txt", root / "link_out")
    os.symlink("src", root / "linkdir")
    os.symlink(outside, root / "linkdir_out")
    os.symlink("missing-target", root / "dangling")
    os.mkfifo(root / "fifo")


@pytest.fixture
def plain_project(tmp_path):
    root = tmp_path / "plain"
    make_project(root, tmp_path / "outside")
    return root


@pytest.fixture
def git_project(tmp_path):
    if not HAVE_GIT:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    make_project(root, tmp_path / "outside")
    git(root, "init", "-q")
    git(root, "add", "README.md", "src/app.py", ".gitignore", "link_in", "link_out")
    write(root / "tracked_then_deleted.txt", "gone\n")
    git(root, "add", "tracked_then_deleted.txt")
    git(root, "commit", "-q", "-m", "initial")
    (root / "tracked_then_deleted.txt").unlink()
    return root


@pytest.fixture
def no_rg(monkeypatch):
    monkeypatch.setattr(search, "_which", lambda name: None if name == "rg" else shutil.which(name))


@pytest.fixture
def no_git(monkeypatch):
    monkeypatch.setattr(search, "_which", lambda name: None if name in ("git", "rg") else shutil.which(name))


@pytest.fixture(params=["python", "rg"])
def backend(request, monkeypatch):
    if request.param == "python":
        monkeypatch.setattr(search, "_which", lambda name: None if name == "rg" else shutil.which(name))
    elif search._which("rg") is None:  # PATH, or next to this Python (the ripgrep wheel)
        pytest.skip("ripgrep is not installed")
    return request.param


# --- list_project_files -----------------------------------------------------------------


@needs_git
async def test_lists_a_git_work_tree(git_project, no_rg):
    assert await list_project_files(git_project) == EXPECTED_FILES


@needs_git
async def test_git_work_tree_walked_without_git(git_project, no_git):
    assert await list_project_files(git_project) == EXPECTED_FILES


async def test_lists_a_plain_tree_by_walking(plain_project, no_rg):
    assert await list_project_files(plain_project) == EXPECTED_FILES


@needs_git
async def test_lists_a_subdirectory_of_a_work_tree(git_project, no_rg):
    assert await list_project_files(git_project / "src") == [
        "app.py",
        "pkg/.gitignore",
        "pkg/test_mod.py",
        "test_top.py",
        "util.py",
    ]


def make_rules_tree(root):
    write(
        root / ".gitignore",
        "\n".join(
            [
                "# a comment",
                "",
                "**/tmp/",
                "docs/*.md",
                "*.py[co]",
                "!important.pyc",
                "/only_root.txt",
                "name with space\\ ",
                "\\#hash.txt",
                "dir_only/",
                "deep/**/x.dat",
            ]
        )
        + "\n",
    )
    for rel in [
        "a.pyc",
        "b.pyo",
        "important.pyc",
        "lib/c.pyc",
        "lib/important.pyc",
        "tmp/t.txt",
        "lib/tmp/t.txt",
        "lib/tmpfile.txt",
        "docs/readme.md",
        "docs/sub/nested.md",
        "docs/notes.txt",
        "only_root.txt",
        "lib/only_root.txt",
        "name with space ",
        "name with space",
        "#hash.txt",
        "dir_only/f.txt",
        "lib/dir_only",
        "lib/dir_only_not/f.txt",
        "deep/x.dat",
        "deep/a/b/x.dat",
        "deep/a/y.dat",
        "lib/nested/.gitignore",
        "lib/nested/keep.me",
        "lib/nested/drop.me",
        "lib/nested/sub/drop.me",
        "lib/nested/sub/a.pyc",
    ]:
        write(root / rel, "x\n")
    write(root / "lib/nested/.gitignore", "drop.me\n!a.pyc\n")


RULES_EXPECTED = sorted(
    [
        ".gitignore",
        "important.pyc",
        "lib/important.pyc",
        "lib/tmpfile.txt",
        "docs/sub/nested.md",
        "docs/notes.txt",
        "lib/only_root.txt",
        "name with space",
        "lib/dir_only",
        "lib/dir_only_not/f.txt",
        "deep/a/y.dat",
        "lib/nested/.gitignore",
        "lib/nested/keep.me",
        "lib/nested/sub/a.pyc",
    ]
)


async def test_walk_honours_gitignore_rules(tmp_path, no_git):
    root = tmp_path / "rules"
    make_rules_tree(root)
    assert await list_project_files(root) == RULES_EXPECTED


@needs_git
async def test_walk_agrees_with_git_on_gitignore_rules(tmp_path, monkeypatch):
    root = tmp_path / "rules"
    make_rules_tree(root)
    git(root, "init", "-q")
    write(root / ".git/info/exclude", "lib/tmpfile.txt\n")
    expected = [path for path in RULES_EXPECTED if path != "lib/tmpfile.txt"]
    monkeypatch.setattr(search, "_which", lambda name: None if name == "rg" else shutil.which(name))
    assert await list_project_files(root) == expected
    monkeypatch.setattr(search, "_which", lambda name: None)
    assert await list_project_files(root) == expected


async def test_list_of_a_missing_root_is_a_tool_error(tmp_path):
    with pytest.raises(ToolError, match="not a directory"):
        await list_project_files(tmp_path / "missing")


# --- find_files -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("**/*.py", ["src/app.py", "src/pkg/test_mod.py", "src/test_top.py", "src/util.py"]),
        ("*.py", ["src/app.py", "src/pkg/test_mod.py", "src/test_top.py", "src/util.py"]),
        ("*.md", ["README.md", "docs/guide.md"]),
        ("src/*.py", ["src/app.py", "src/test_top.py", "src/util.py"]),
        ("src/**/test_*.py", ["src/pkg/test_mod.py", "src/test_top.py"]),
        ("./src/pkg/*", ["src/pkg/.gitignore", "src/pkg/test_mod.py"]),
        ("src/pkg/", ["src/pkg/.gitignore", "src/pkg/test_mod.py"]),
        ("**/*.{md,log}", ["README.md", "docs/guide.md", "keep.log"]),
        ("docs/[gs]*", ["docs/guide.md", "docs/secret.txt"]),
        ("docs/[!g]*", ["docs/secret.txt"]),
        ("?????.txt", ["-dash.txt"]),
        ("README.md", ["README.md"]),
        ("nothing*", []),
    ],
)
async def test_find_files(plain_project, no_git, pattern, expected):
    assert await find_files(plain_project, pattern) == (expected, False)


@needs_git
async def test_find_files_in_a_git_project(git_project):
    assert await find_files(git_project, "**/*.py") == (
        ["src/app.py", "src/pkg/test_mod.py", "src/test_top.py", "src/util.py"],
        False,
    )


async def test_find_files_truncates(plain_project, no_git):
    assert await find_files(plain_project, "**/*", max_results=3) == (EXPECTED_FILES[:3], True)
    assert await find_files(plain_project, "*.py", max_results=4) == (
        ["src/app.py", "src/pkg/test_mod.py", "src/test_top.py", "src/util.py"],
        False,
    )


async def test_find_files_empty_pattern_is_a_tool_error(plain_project):
    with pytest.raises(ToolError, match="empty glob"):
        await find_files(plain_project, "  ")


# --- grep -------------------------------------------------------------------------------


async def test_grep_literal(plain_project, backend):
    assert await grep(plain_project, "needle") == (NEEDLE_HITS, False)


@needs_git
async def test_grep_in_a_git_project(git_project, backend):
    assert await grep(git_project, "needle") == (NEEDLE_HITS, False)


async def test_grep_is_literal_unless_asked(plain_project, backend):
    assert await grep(plain_project, "a.b(") == (["src/util.py:1: value = a.b(c)"], False)
    assert await grep(plain_project, r"a.b\(", is_regexp=True) == (
        ["src/util.py:1: value = a.b(c)", "src/util.py:2: other = axb(c)"],
        False,
    )


async def test_grep_regex(plain_project, backend):
    assert await grep(plain_project, r"^def \w+\(", is_regexp=True) == (
        ["src/app.py:3: def main():", "src/pkg/test_mod.py:1: def test_needle():"],
        False,
    )
    assert await grep(plain_project, r"^\s+(return|assert) \w+$", is_regexp=True) == (
        ["src/app.py:5:     return needle", "src/pkg/test_mod.py:2:     assert True"],
        False,
    )


async def test_grep_invalid_regex_is_a_tool_error(plain_project, backend):
    with pytest.raises(ToolError, match="invalid regular expression"):
        await grep(plain_project, "(unclosed", is_regexp=True)


async def test_grep_include_pattern(plain_project, backend):
    py_hits = [
        "src/app.py:4:     needle = 1",
        "src/app.py:5:     return needle",
        "src/pkg/test_mod.py:1: def test_needle():",
    ]
    assert await grep(plain_project, "needle", include_pattern="*.py") == (py_hits, False)
    assert await grep(plain_project, "needle", include_pattern="src/**/*.py") == (py_hits, False)
    assert await grep(plain_project, "needle", include_pattern="src/pkg/*.py") == (py_hits[2:], False)
    assert await grep(plain_project, "needle", include_pattern="docs/*") == (["docs/secret.txt:1: needle docs"], False)


async def test_grep_truncates(plain_project, backend):
    assert await grep(plain_project, "needle", max_results=3) == (NEEDLE_HITS[:3], True)
    assert await grep(plain_project, "needle", max_results=8) == (NEEDLE_HITS, False)


async def test_grep_query_that_looks_like_an_option(plain_project, backend):
    assert await grep(plain_project, "--pre=evil") == (["-dash.txt:1: --pre=evil"], False)
    assert await grep(plain_project, "-e") == ([], False)


async def test_grep_no_match(plain_project, backend):
    assert await grep(plain_project, "no such text anywhere") == ([], False)


async def test_grep_empty_query_is_a_tool_error(plain_project, backend):
    with pytest.raises(ToolError, match="empty"):
        await grep(plain_project, "")


async def test_grep_python_fallback_skips_binary_big_and_unreadable_files(plain_project, no_rg):
    unreadable = plain_project / "src/locked.py"
    write(unreadable, "needle locked\n")
    unreadable.chmod(0)
    try:
        hits, truncated = await grep(plain_project, "needle")
    finally:
        unreadable.chmod(stat.S_IRUSR | stat.S_IWUSR)
    if os.geteuid() == 0:  # root reads it anyway
        hits = [hit for hit in hits if not hit.startswith("src/locked.py")]
    assert (hits, truncated) == (NEEDLE_HITS, False)


# --- changed_files ----------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path):
    if not HAVE_GIT:
        pytest.skip("git is not installed")
    root = tmp_path / "changes"
    write(root / "a.txt", "one\ntwo\nthree\n")
    write(root / "b.txt", "bee\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "initial")
    return root


def section(text, title):
    """The body of the section whose heading starts with `title`."""
    for part in text.split("## ")[1:]:
        heading, _, body = part.partition("\n")
        if heading.startswith(title):
            return body
    raise AssertionError(f"no section {title!r} in:\n{text}")


async def test_changed_files_of_a_clean_repo(repo):
    assert await changed_files(repo) == (
        "## Staged changes (`git diff --cached`)\n(no staged changes)\n"
        "## Unstaged changes (`git diff`)\n(no unstaged changes)\n"
        "## Merge conflicts (`git diff --name-only --diff-filter=U`)\n(no files with merge conflicts)\n"
    )


async def test_changed_files_staged_and_unstaged(repo):
    write(repo / "a.txt", "one\nTWO\nthree\n")
    git(repo, "add", "a.txt")
    write(repo / "b.txt", "bee\nsecond bee\n")
    text = await changed_files(repo)
    staged = section(text, "Staged changes")
    unstaged = section(text, "Unstaged changes")
    assert staged.startswith("```diff\ndiff --git a/a.txt b/a.txt\n")
    assert "\n-two\n+TWO\n" in staged and "b.txt" not in staged
    assert staged.endswith("```\n")
    assert unstaged.startswith("```diff\ndiff --git a/b.txt b/b.txt\n")
    assert "\n+second bee\n" in unstaged and "a.txt" not in unstaged
    assert section(text, "Merge conflicts") == "(no files with merge conflicts)\n"


async def test_changed_files_only_the_states_asked(repo):
    write(repo / "b.txt", "changed\n")
    text = await changed_files(repo, ["unstaged"])
    assert text.startswith("## Unstaged changes (`git diff`)\n```diff\n")
    assert "Staged" not in text and "Merge conflicts" not in text
    assert await changed_files(repo, "staged") == "## Staged changes (`git diff --cached`)\n(no staged changes)\n"


async def test_changed_files_merge_conflicts(repo):
    write(repo / "conflict.txt", "base\n")
    git(repo, "add", "conflict.txt")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "other")
    write(repo / "conflict.txt", "theirs\n")
    git(repo, "commit", "-q", "-am", "theirs")
    git(repo, "checkout", "-q", "main")
    write(repo / "conflict.txt", "ours\n")
    git(repo, "commit", "-q", "-am", "ours")
    merge = git(repo, "merge", "other", check=False)
    assert merge.returncode != 0
    assert await changed_files(repo, ["merge-conflicts"]) == (
        "## Merge conflicts (`git diff --name-only --diff-filter=U`)\n```\nconflict.txt\n```\n"
    )
    unstaged = section(await changed_files(repo), "Unstaged changes")
    assert "<<<<<<< HEAD" in unstaged and ">>>>>>> other" in unstaged


async def test_changed_files_in_a_repo_without_commits(tmp_path):
    if not HAVE_GIT:
        pytest.skip("git is not installed")
    root = tmp_path / "fresh"
    write(root / "new.txt", "brand new\n")
    git(root, "init", "-q")
    git(root, "add", "new.txt")
    assert "\n+brand new\n" in section(await changed_files(root, ["staged"]), "Staged changes")


async def test_changed_files_are_capped(repo):
    write(repo / "a.txt", "".join(f"line {i}\n" for i in range(50)))
    git(repo, "add", "a.txt")
    write(repo / "b.txt", "other\n")
    text = await changed_files(repo, max_lines=10)
    staged = section(text, "Staged changes").splitlines()
    assert staged[0] == "```diff" and staged[11] == "```"
    assert staged[1] == "diff --git a/a.txt b/a.txt"
    total = len(git(repo, "diff", "--cached").stdout.splitlines())
    assert staged[12:] == [f"[... {total - 10} more lines not shown (max_lines=10) ...]"]
    unstaged_total = len(git(repo, "diff").stdout.splitlines())
    assert section(text, "Unstaged changes") == (f"[... {unstaged_total} more lines not shown (max_lines=10) ...]\n")


async def test_changed_files_fence_longer_than_backticks_in_the_diff(repo):
    write(repo / "b.txt", "````\nbee\n")
    git(repo, "commit", "-q", "-am", "backticks")
    write(repo / "b.txt", "````\nchanged\n")
    unstaged = section(await changed_files(repo, ["unstaged"]), "Unstaged changes").splitlines()
    assert unstaged[0] == "`````diff" and unstaged[-1] == "`````"


async def test_changed_files_runs_no_repo_configured_programs(repo):
    marker = repo.parent / "ran"
    script = repo.parent / "hook.sh"
    write(script, f"#!/bin/sh\necho ran >> {marker}\nexit 0\n")
    script.chmod(0o755)
    git(repo, "config", "diff.external", str(script))
    git(repo, "config", "core.fsmonitor", str(script))
    git(repo, "config", "core.pager", str(script))
    write(repo / "b.txt", "changed\n")
    unstaged = section(await changed_files(repo), "Unstaged changes")
    assert "\n-bee\n+changed\n" in unstaged
    assert await list_project_files(repo) == ["a.txt", "b.txt"]
    assert not marker.exists()


async def test_changed_files_outside_a_repo(tmp_path):
    root = tmp_path / "not-a-repo"
    root.mkdir()
    with pytest.raises(ToolError, match="not a git repository"):
        await changed_files(root)


async def test_changed_files_unknown_state(repo):
    with pytest.raises(ToolError, match="unknown state.*bogus.*staged, unstaged, merge-conflicts"):
        await changed_files(repo, ["staged", "bogus"])
