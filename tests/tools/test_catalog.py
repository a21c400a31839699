"""Every catalog tool run through the real orchestrator, with no Neovim, against a project
that tries to trick it: symlinks in and out, a dangling link, a binary file, a CRLF file,
a FIFO, a sibling `<root>-evil`, `.env`, `.git/config`, and paths with `..`, `/` and `~`.

What is checked is what the user (or the LLM) would notice: the tool result's status and
text, the bytes on disk, which files exist, and whether the user was asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import os
import shlex
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from codecompanion_py.messages import ToolResultPart
from codecompanion_py.sandbox import Sandbox, SandboxPolicy, available
from codecompanion_py.tools import search
from codecompanion_py.tools.approvals import Approvals
from codecompanion_py.tools.context import ChatHandle, ToolsContext
from codecompanion_py.tools.orchestrator import Orchestrator
from codecompanion_py.tools.registry import CATALOG, ToolSettings, enabled_definitions
from codecompanion_py.tools.workspace import Workspace

from .test_orchestrator import FakeEditor, Surface, call

# `isolated_git` is autouse: imported here, it keeps the user's git configuration out of this module too
from .test_search import HAVE_GIT, git, isolated_git, needs_git  # noqa: F401

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX symlinks and FIFOs")

TIMEOUT = 10.0  # no tool call may take longer: a hang is a failure, not a stuck run

SECRET = b"needle top secret\n"
NOTES = b"hello\nneedle in notes\n"
CRLF = b"one\r\ntwo\r\nneedle crlf\r\n"


# --- the project --------------------------------------------------------------------------


@dataclass
class Project:
    root: Path  # tmp_path/proj
    outside: Path  # tmp_path/outside, next to tmp_path/proj-evil and tmp_path/home ($HOME)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    root, outside, evil, home = (tmp_path / "proj", tmp_path / "outside", tmp_path / "proj-evil", tmp_path / "home")
    for directory in (root / "src", root / ".git", outside, evil, home):
        directory.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))  # so a `~` that were expanded would land somewhere we can see
    (outside / "secret.txt").write_bytes(SECRET)
    (evil / "x").write_bytes(b"needle evil\n")
    (root / "notes.txt").write_bytes(NOTES)
    (root / "src" / "app.py").write_bytes(b"def main():\n    return 1\n")
    (root / "crlf.txt").write_bytes(CRLF)
    (root / "image.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00needle in binary\x00")
    (root / ".env").write_bytes(b"TOKEN=abc123\n")
    (root / ".git" / "config").write_bytes(b"[core]\n\tbare = false\n")
    (root / ".gitignore").write_bytes(b"ignored.txt\n")
    (root / "ignored.txt").write_bytes(b"needle ignored\n")
    os.symlink("notes.txt", root / "link_in")
    os.symlink(outside / "secret.txt", root / "link_out")
    os.symlink(outside, root / "dirlink_out")
    os.symlink("missing.txt", root / "dangling")
    os.mkfifo(root / "fifo")
    return Project(root, outside)


def tree(top: Path) -> dict[str, Any]:
    """Everything under `top` without following links or opening FIFOs: file bytes, link
    targets, directories; to prove a refused call changed nothing anywhere."""
    found: dict[str, Any] = {}
    for directory, dirs, files in os.walk(top):
        for name in dirs + files:
            path = Path(directory) / name
            rel = path.relative_to(top).as_posix()
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                found[rel] = "dir"
            elif path.is_file():
                found[rel] = path.read_bytes()
            else:
                found[rel] = "special"
    return found


# --- the chat: real catalog tools, real orchestrator, a fake editor -------------------------


class Editor(FakeEditor):
    """test_orchestrator's FakeEditor (approvals answered in the order given, then
    `default`), plus the editor methods the file tools use: buffer.get and diagnostics."""

    def __init__(
        self,
        *answers: dict[str, Any],
        default: str = "accept",
        buffers: dict[str, dict[str, Any]] | None = None,
        diagnostics: dict[str, list[dict[str, Any]]] | None = None,
    ) -> None:
        super().__init__(*answers)
        self.default = default
        self.buffers = buffers or {}
        self.diagnostics = diagnostics or {}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    reviews_edits = False  # no diff review after a write here

    async def call(self, method: str, args: dict[str, Any]) -> Any:
        self.calls.append((method, dict(args)))
        if method == "approve":
            if not self.answers:
                self.answers.append({"choice": self.default})
            return await super().call(method, args)
        if method == "buffer.get":
            return self.buffers.get(args["path"])
        if method == "diagnostics":
            if args["path"] not in self.diagnostics:
                return {"loaded": False, "items": []}
            return {"loaded": True, "items": self.diagnostics[args["path"]]}
        raise AssertionError(f"unexpected editor call {method} {args}")

    def paths_sent(self) -> list[str]:
        return [args["path"] for method, args in self.calls if "path" in args]


@dataclass
class Chat:
    orchestrator: Orchestrator
    editor: Editor
    surface: Surface

    async def run(self, name: str, **arguments: Any) -> ToolResultPart:
        batch = await asyncio.wait_for(self.orchestrator.run([call(name, **arguments)]), TIMEOUT)
        assert len(batch.results) == 1
        return batch.results[0]


def chat(
    root: Path,
    editor: Editor | None = None,
    approvals: Approvals | None = None,
    settings: ToolSettings | None = None,
    sandbox: SandboxPolicy | None = None,
) -> Chat:
    settings = settings or ToolSettings()
    tools = enabled_definitions(settings, CATALOG)
    context = ToolsContext(
        chat=ChatHandle(),
        editor=editor or Editor(),
        approvals=approvals or Approvals(),
        workspace=Workspace(root),
        sandbox=sandbox or SandboxPolicy(),
    )
    surface = Surface()
    orchestrator = Orchestrator(tools, {name: settings.config_of(name) for name in tools}, context, surface)
    return Chat(orchestrator, context.editor, surface)


def test_every_catalog_tool_is_covered_here() -> None:
    assert set(CATALOG) == {
        "read_file",
        "create_file",
        "insert_edit_into_file",
        "delete_file",
        "file_search",
        "grep_search",
        "get_changed_files",
        "get_diagnostics",
        "run_command",
        "fetch_webpage",
        # their own tests: tests/tools/test_memory.py, test_web_search.py, test_ask_questions.py
        "memory",
        "web_search",
        "ask_questions",
    }


# --- paths that lead out of the project: refused by every file tool, nothing touched -------

OUTSIDE = "outside the project root"
# (path, what the refusal says); `{root}`, `{tmp}` are filled in per test
ESCAPES = [
    ("link_out", OUTSIDE),  # a symlink to a file outside
    ("dirlink_out/secret.txt", OUTSIDE),  # through a symlink to a directory outside
    ("dirlink_out/new.txt", OUTSIDE),  # ... to a file that does not exist yet
    ("dangling", "target does not exist"),  # never followed, never created through
    ("../outside/secret.txt", OUTSIDE),
    ("src/../../outside/secret.txt", OUTSIDE),
    ("../proj-evil/x", OUTSIDE),  # the sibling whose name starts like the root
    ("{root}-evil/x", OUTSIDE),
    ("{root}-evil/new.txt", OUTSIDE),
    ("../x", OUTSIDE),
    ("{tmp}/outside/secret.txt", OUTSIDE),
    ("/tmp/x", OUTSIDE),
    ("~/x", "'~' and environment variables"),
    ("~", "'~' and environment variables"),
]


def file_tool_arguments(tool: str, path: str) -> dict[str, Any]:
    return {
        "read_file": {"filepath": path},
        "create_file": {"filepath": path, "content": "pwned\n"},
        "insert_edit_into_file": {"filepath": path, "edits": [{"oldText": "needle", "newText": "pwned"}]},
        "delete_file": {"filepath": path},
        "get_diagnostics": {"filepath": path},
    }[tool]


@pytest.mark.parametrize(
    "tool", ["read_file", "create_file", "insert_edit_into_file", "delete_file", "get_diagnostics"]
)
@pytest.mark.parametrize(("raw", "reason"), ESCAPES, ids=[raw for raw, _ in ESCAPES])
async def test_file_tools_refuse_paths_leading_out_of_the_project(project, tmp_path, tool, raw, reason):
    path = raw.format(root=project.root, tmp=tmp_path)
    before, tmp_x_existed = tree(tmp_path), os.path.lexists("/tmp/x")
    session = chat(project.root, Editor(default="accept"))

    result = await session.run(tool, **file_tool_arguments(tool, path))

    assert result.status == "error"
    assert reason in result.content  # the LLM is told why
    assert "top secret" not in result.content and "needle evil" not in result.content  # ... and shown nothing
    assert tree(tmp_path) == before  # nothing created, changed or deleted, inside or out
    assert os.path.lexists("/tmp/x") == tmp_x_existed
    assert session.editor.asked == []  # refused before the user is bothered
    outside = (str(project.outside), f"{project.root}-evil")
    assert not any(p.startswith(outside) for p in session.editor.paths_sent())  # not even a buffer.get


# --- protected paths: always asked, even in YOLO mode and after "always accept" ------------

PROTECTED = [
    ("read_file", {"filepath": ".env"}, "environment file"),
    ("read_file", {"filepath": ".git/config"}, "inside .git"),
    (
        "insert_edit_into_file",
        {"filepath": ".env", "edits": [{"oldText": "abc123", "newText": "pwned"}]},
        "environment file",
    ),
    (
        "insert_edit_into_file",
        {"filepath": ".git/config", "mode": "append", "content": "[alias]\n\tx = !sh\n"},
        "inside .git",
    ),
    ("create_file", {"filepath": ".git/hooks/pre-commit", "content": "#!/bin/sh\ncurl evil\n"}, "inside .git"),
    ("create_file", {"filepath": ".env.local", "content": "TOKEN=x\n"}, "environment file"),
    ("delete_file", {"filepath": ".env"}, "environment file"),
    ("delete_file", {"filepath": ".git/config"}, "inside .git"),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "reason"), PROTECTED, ids=[f"{tool}-{args['filepath']}" for tool, args, _ in PROTECTED]
)
async def test_protected_paths_ask_even_in_yolo_mode(project, tool, arguments, reason):
    approvals = Approvals(yolo=True)
    approvals.remember(tool, None)  # "always accept" for the tool...
    approvals.remember(tool, arguments["filepath"])  # ... and for this very path
    before = tree(project.root)
    session = chat(project.root, Editor({"choice": "reject", "reason": "not my secrets"}), approvals)

    result = await session.run(tool, **arguments)

    assert result.status == "rejected"
    assert "not my secrets" in result.content
    assert "abc123" not in result.content  # nothing was read
    [asked] = session.editor.asked
    assert reason in asked["must_ask"]
    assert asked["always"] is None  # "always accept" is not even offered
    assert tree(project.root) == before


async def test_a_protected_file_is_used_once_the_user_accepts(project):
    session = chat(project.root, Editor({"choice": "accept"}), Approvals(yolo=True))
    result = await session.run("read_file", filepath=".env")
    assert result.status == "success" and "TOKEN=abc123" in result.content
    assert len(session.editor.asked) == 1


# --- read_file ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw", ["notes.txt", "./notes.txt", "src/../notes.txt", "src//../notes.txt", "{root}/notes.txt", "link_in"]
)
async def test_read_file_reads_project_files_however_they_are_named(project, raw):
    session = chat(project.root)
    result = await session.run("read_file", filepath=raw.format(root=project.root))
    assert result.status == "success"
    assert "lines 0-1 of 2" in result.content
    assert "```\nhello\nneedle in notes\n```" in result.content
    assert session.editor.asked == []  # reading needs no approval


async def test_read_file_a_line_range(project):
    result = await chat(project.root).run(
        "read_file", filepath="crlf.txt", start_line_number_base_zero=1, end_line_number_base_zero=1
    )
    assert result.status == "success"
    assert result.content.endswith("crlf.txt, lines 1-1 of 3 (0-based):\n```\ntwo\n```")


@pytest.mark.parametrize(
    ("start", "end", "shown"),
    [(0, -1, "lines 1-3 of 3"), (1, 1, "line 2 of 3"), (1, 2, "lines 2-3 of 3")],
)
async def test_read_file_shows_the_user_lines_counted_from_1(project, start, end, shown):
    """The LLM reads the range as its parameters count it (from 0); the chat's line counts as
    a person does."""
    session = chat(project.root)
    result = await session.run(
        "read_file", filepath="crlf.txt", start_line_number_base_zero=start, end_line_number_base_zero=end
    )
    assert result.content.startswith(f"crlf.txt, lines {start}-{2 if end < 0 else end} of 3 (0-based):")
    assert session.surface.shown() == [f"Read crlf.txt, {shown}"]


async def test_read_file_of_a_crlf_file_shows_no_carriage_returns(project):
    result = await chat(project.root).run("read_file", filepath="crlf.txt")
    assert result.status == "success"
    assert "```\none\ntwo\nneedle crlf\n```" in result.content and "\r" not in result.content


async def test_read_file_refuses_a_binary_file_clearly(project):
    result = await chat(project.root).run("read_file", filepath="image.bin")
    assert result.status == "error"
    assert "'image.bin' is a binary file" in result.content
    assert "needle in binary" not in result.content


@contextlib.contextmanager
def never_blocks_on(fifo: Path, seconds: float = 5.0) -> Iterator[None]:
    """Fail, instead of hanging, if the body blocks on `fifo`: after `seconds`, its write
    end is opened again and again, which releases any reader stuck on it."""
    stop = threading.Event()
    released: list[float] = []

    def release_readers() -> None:
        if stop.wait(seconds):
            return
        while not stop.is_set():
            with contextlib.suppress(OSError):  # ENXIO: nobody is reading, nothing to release
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                released.append(time.monotonic())  # the open succeeded: someone was reading it
            stop.wait(0.1)

    watchdog = threading.Thread(target=release_readers, daemon=True)
    watchdog.start()
    try:
        yield
    finally:
        stop.set()
        watchdog.join()
    # a reader that had to be released, not the time taken (a busy machine can be slow
    # without anything blocking)
    assert not released, f"blocked on the FIFO {fifo.name}"


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("read_file", {}),
        ("insert_edit_into_file", {"edits": [{"oldText": "a", "newText": "b"}]}),
        ("insert_edit_into_file", {"mode": "append", "content": "more\n"}),
    ],
)
async def test_a_fifo_is_refused_without_hanging(project, tool, arguments):
    with never_blocks_on(project.root / "fifo"):
        result = await chat(project.root).run(tool, filepath="fifo", **arguments)
    assert result.status == "error"
    assert "'fifo' is a named pipe (FIFO); only regular files can be used" in result.content
    assert (project.root / "fifo").is_fifo()


async def test_read_file_refuses_a_directory_and_a_missing_file(project):
    session = chat(project.root)
    directory = await session.run("read_file", filepath="src")
    missing = await session.run("read_file", filepath="nope.txt")
    assert directory.status == missing.status == "error"
    assert "'src' is a directory" in directory.content
    assert "nope.txt does not exist; use create_file" in missing.content


async def test_read_file_shows_the_unsaved_text_of_a_loaded_buffer(project):
    buffer = {"bufnr": 3, "lines": ["hello", "unsaved change"], "modified": True, "changedtick": 7, "eol": True}
    session = chat(project.root, Editor(buffers={str(project.root / "notes.txt"): buffer}))
    result = await session.run("read_file", filepath="notes.txt")
    assert "```\nhello\nunsaved change\n```" in result.content


# --- create_file -------------------------------------------------------------------------


async def test_create_file_makes_the_file_and_its_folders_after_approval(project):
    session = chat(project.root, Editor({"choice": "accept"}))
    result = await session.run("create_file", filepath="pkg/sub/new.py", content="x = 1\n")
    assert result.status == "success" and "Created pkg/sub/new.py." in result.content
    assert (project.root / "pkg/sub/new.py").read_bytes() == b"x = 1\n"
    [asked] = session.editor.asked
    assert asked["prompt"] == "Create pkg/sub/new.py?" and "+x = 1" in asked["detail"]


async def test_create_file_rejected_creates_nothing(project):
    result = await chat(project.root, Editor({"choice": "reject"})).run(
        "create_file", filepath="new.txt", content="x\n"
    )
    assert result.status == "rejected"
    assert not (project.root / "new.txt").exists()


@pytest.mark.parametrize("raw", ["notes.txt", "link_in"])
async def test_create_file_never_overwrites(project, raw):
    result = await chat(project.root).run("create_file", filepath=raw, content="overwritten\n")
    assert result.status == "error" and "already exists; use insert_edit_into_file" in result.content
    assert (project.root / "notes.txt").read_bytes() == NOTES


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("a\r\nb\r\n", b"a\nb\n"),
        ("a\r\nb", b"a\nb"),
        ("a\nb\r\nc\n", b"a\nb\nc\n"),
    ],
)
async def test_create_file_writes_unix_line_endings_whatever_the_llm_sends(project, content, expected):
    session = chat(project.root)
    result = await session.run("create_file", filepath="new.txt", content=content)
    assert result.status == "success"
    assert (project.root / "new.txt").read_bytes() == expected
    assert "\r" not in session.editor.asked[0]["detail"]  # the diff shown is what gets written


# --- insert_edit_into_file -----------------------------------------------------------------


async def test_edit_replaces_text_after_showing_the_diff(project):
    session = chat(project.root)
    result = await session.run(
        "insert_edit_into_file",
        filepath="notes.txt",
        explanation="shout",
        edits=[{"oldText": "hello", "newText": "HELLO"}],
    )
    assert result.status == "success" and "notes.txt was edited on disk." in result.content
    assert (project.root / "notes.txt").read_bytes() == b"HELLO\nneedle in notes\n"
    [asked] = session.editor.asked
    assert asked["prompt"] == "Apply this edit to notes.txt? (shout)"
    assert "-hello\n+HELLO" in asked["detail"]


async def test_edit_rejected_leaves_the_file_alone(project):
    result = await chat(project.root, Editor({"choice": "reject"})).run(
        "insert_edit_into_file", filepath="notes.txt", edits=[{"oldText": "hello", "newText": "HELLO"}]
    )
    assert result.status == "rejected"
    assert (project.root / "notes.txt").read_bytes() == NOTES


class Reviewing(Editor):
    """An editor with the diff review after a write: every review kept, every buffer saved."""

    reviews_edits = True

    async def call(self, method: str, args: dict[str, Any]) -> Any:
        if method in ("review", "buffer.set"):
            self.calls.append((method, dict(args)))
            return {"result": "accepted"} if method == "review" else {"saved": True}
        return await super().call(method, args)


@pytest.mark.parametrize(
    "rule, in_buffer, asked",
    [
        ({"buffer": False, "file": False}, False, False),  # CodeCompanion's default: reviewed after
        ({"buffer": False, "file": False}, True, False),
        ({"buffer": True, "file": False}, True, True),
        ({"buffer": True, "file": False}, False, False),
        ({"file": True}, False, True),
        ({"file": True}, True, False),
        (True, True, True),
    ],
)
async def test_require_approval_before_as_a_table_asks_for_buffers_and_files_apart(project, rule, in_buffer, asked):
    buffer = {"bufnr": 3, "lines": ["hello", "needle in notes"], "modified": False, "changedtick": 7, "eol": True}
    editor = Reviewing(buffers={str(project.root / "notes.txt"): buffer} if in_buffer else {})
    settings = ToolSettings.from_config({"insert_edit_into_file": {"opts": {"require_approval_before": rule}}})
    edit = chat(project.root, editor, settings=settings)
    edit.orchestrator.context.diff_threshold_for_chat = 0  # no edit is small enough to ask in the chat
    result = await edit.run(
        "insert_edit_into_file", filepath="notes.txt", edits=[{"oldText": "hello", "newText": "HELLO"}]
    )
    assert result.status == "success", result.content
    methods = [method for method, _ in editor.calls]
    assert ("approve" in methods) == asked
    assert ("review" in methods) == (not asked)  # asked before with the diff, or reviewed after: once


async def test_edit_through_an_inside_symlink_edits_its_target_and_keeps_the_link(project):
    result = await chat(project.root).run(
        "insert_edit_into_file", filepath="link_in", edits=[{"oldText": "hello", "newText": "HELLO"}]
    )
    assert result.status == "success"
    assert (project.root / "notes.txt").read_bytes() == b"HELLO\nneedle in notes\n"
    assert os.readlink(project.root / "link_in") == "notes.txt"


@pytest.mark.parametrize(
    ("name", "original", "arguments", "expected"),
    [
        # the file's CRLF line endings and its final newline survive an LLM that sends "\n"
        (
            "crlf.txt",
            CRLF,
            {"edits": [{"oldText": "two", "newText": "TWO\nthree"}]},
            b"one\r\nTWO\r\nthree\r\nneedle crlf\r\n",
        ),
        ("nofinal.txt", b"a\r\nb", {"edits": [{"oldText": "b", "newText": "B\nC"}]}, b"a\r\nB\r\nC"),
        # ... and an LLM that sends "\r\n" gets the file's own line endings, not "\r\r\n"
        (
            "crlf.txt",
            CRLF,
            {"edits": [{"oldText": "one\r\ntwo", "newText": "ONE\r\nTWO"}]},
            b"ONE\r\nTWO\r\nneedle crlf\r\n",
        ),
        (
            "notes.txt",
            NOTES,
            {"edits": [{"oldText": "hello\r\n", "newText": "HI\r\nTHERE\r\n"}]},
            b"HI\nTHERE\nneedle in notes\n",
        ),
        (
            "crlf.txt",
            CRLF,
            {"mode": "append", "content": "four\r\nfive\r\n"},
            b"one\r\ntwo\r\nneedle crlf\r\nfour\r\nfive\r\n",
        ),
        ("notes.txt", NOTES, {"mode": "append", "content": "more\r\n"}, b"hello\nneedle in notes\nmore\n"),
        ("notes.txt", NOTES, {"mode": "overwrite", "content": "new\r\ntext\r\nhere\r\n"}, b"new\ntext\nhere\n"),
    ],
    ids=[
        "crlf-file-lf-text",
        "crlf-no-final-newline",
        "crlf-file-crlf-text",
        "lf-file-crlf-text",
        "crlf-append-crlf",
        "lf-append-crlf",
        "lf-overwrite-crlf",
    ],
)
async def test_edit_keeps_the_files_line_endings_on_disk(project, name, original, arguments, expected):
    (project.root / name).write_bytes(original)
    result = await chat(project.root).run("insert_edit_into_file", filepath=name, **arguments)
    assert result.status == "success", result.content
    assert (project.root / name).read_bytes() == expected


async def test_edit_refuses_a_binary_file(project):
    result = await chat(project.root).run(
        "insert_edit_into_file", filepath="image.bin", edits=[{"oldText": "needle", "newText": "pwned"}]
    )
    assert result.status == "error" and "binary file" in result.content
    assert b"needle in binary" in (project.root / "image.bin").read_bytes()


async def test_edit_of_a_missing_file_points_to_create_file(project):
    result = await chat(project.root).run(
        "insert_edit_into_file", filepath="nope.txt", edits=[{"oldText": "a", "newText": "b"}]
    )
    assert result.status == "error" and "use create_file" in result.content
    assert not (project.root / "nope.txt").exists()


async def test_edit_refuses_a_file_changed_since_the_llm_read_it(project):
    session = chat(project.root)
    assert (await session.run("read_file", filepath="notes.txt")).status == "success"
    (project.root / "notes.txt").write_bytes(b"hello\nthe user typed this\n")
    result = await session.run(
        "insert_edit_into_file", filepath="notes.txt", edits=[{"oldText": "hello", "newText": "HELLO"}]
    )
    assert result.status == "error" and "changed since you last read it" in result.content
    assert (project.root / "notes.txt").read_bytes() == b"hello\nthe user typed this\n"


# --- delete_file -------------------------------------------------------------------------


async def test_delete_file_removes_a_file_after_asking_even_in_yolo_mode(project):
    session = chat(project.root, Editor({"choice": "accept"}), Approvals(yolo=True))
    result = await session.run("delete_file", filepath="src/app.py")
    assert result.status == "success" and "Deleted src/app.py." in result.content
    assert not (project.root / "src/app.py").exists()
    assert [a["prompt"] for a in session.editor.asked] == ["Delete src/app.py?"]


async def test_delete_file_rejected_keeps_the_file(project):
    result = await chat(project.root, Editor({"choice": "reject"}), Approvals(yolo=True)).run(
        "delete_file", filepath="notes.txt"
    )
    assert result.status == "rejected"
    assert (project.root / "notes.txt").read_bytes() == NOTES


async def test_delete_file_of_an_inside_symlink_removes_the_link_not_its_target(project):
    result = await chat(project.root).run("delete_file", filepath="link_in")
    assert result.status == "success"
    assert not os.path.lexists(project.root / "link_in")
    assert (project.root / "notes.txt").read_bytes() == NOTES


@pytest.mark.parametrize(
    ("raw", "reason"), [("link_out", OUTSIDE), ("dirlink_out", OUTSIDE), ("dangling", "target does not exist")]
)
async def test_delete_file_never_removes_a_link_out_or_what_it_points_to(project, raw, reason):
    result = await chat(project.root).run("delete_file", filepath=raw)
    assert result.status == "error" and reason in result.content
    assert os.path.islink(project.root / raw)
    assert (project.outside / "secret.txt").read_bytes() == SECRET


@pytest.mark.parametrize(
    ("raw", "reason"),
    [("src", "is a directory"), ("fifo", "named pipe (FIFO)"), ("nope.txt", "nope.txt does not exist")],
)
async def test_delete_file_removes_only_regular_files(project, raw, reason):
    before = tree(project.root)
    result = await chat(project.root).run("delete_file", filepath=raw)
    assert result.status == "error" and reason in result.content
    assert tree(project.root) == before


async def test_delete_file_keeps_a_file_with_unsaved_changes_in_the_editor(project):
    buffer = {"bufnr": 3, "lines": ["hello", "unsaved"], "modified": True, "changedtick": 7, "eol": True}
    session = chat(project.root, Editor(buffers={str(project.root / "notes.txt"): buffer}))
    result = await session.run("delete_file", filepath="notes.txt")
    assert result.status == "error" and "unsaved changes" in result.content
    assert (project.root / "notes.txt").read_bytes() == NOTES


# --- file_search and grep_search -------------------------------------------------------------


@pytest.fixture(params=["walk", "git", "git+rg"])
def listed(request, project, monkeypatch):
    """The project listed by walking it (no git, grep in Python), by `git ls-files` in a fresh
    repository (grep in Python), or by git with ripgrep doing the grep."""
    if request.param == "walk":
        monkeypatch.setattr(search, "_which", lambda name: None)
        return project
    for needed in request.param.split("+"):
        if search._which(needed) is None:  # as the tools find them: PATH, or next to this Python
            pytest.skip(f"{needed} is not installed")
    git(project.root, "init", "-q")
    if request.param == "git":
        monkeypatch.setattr(search, "_which", lambda name: None if name == "rg" else shutil.which(name))
    return project


PROJECT_FILES = [".env", ".gitignore", "crlf.txt", "image.bin", "link_in", "notes.txt", "src/app.py"]


def listing(result: ToolResultPart) -> list[str]:
    assert result.status == "success", result.content
    return result.content.split("\n")[1:]


async def test_file_search_lists_project_files_only(listed):
    result = await chat(listed.root).run("file_search", query="**/*")
    # not listed: .git/, the ignored file, the FIFO, the dangling link, and the links out
    assert listing(result) == PROJECT_FILES
    assert result.content.startswith(f"{len(PROJECT_FILES)} files matching `**/*`:")


@pytest.mark.parametrize(
    "query", ["secret.txt", "**/secret.txt", "dirlink_out/**", "x", "../outside/*", "ignored.txt", "fifo", "config"]
)
async def test_file_search_finds_nothing_outside_ignored_or_special(listed, query):
    result = await chat(listed.root).run("file_search", query=query)
    assert result.status == "success"
    assert result.content == f"No files match `{query}`."


@pytest.mark.parametrize("limit", [1, -1])
async def test_file_search_max_results_says_more_files_match(listed, limit):
    result = await chat(listed.root).run("file_search", query="*.txt", max_results=limit)  # 2 match
    assert result.content == "More than 1 file matching `*.txt`:\ncrlf.txt\n(only the first 1 are listed)"


async def test_grep_search_returns_matching_lines_of_project_text_files_only(listed):
    result = await chat(listed.root).run("grep_search", query="needle")
    assert result.status == "success"
    # not searched: the binary file, the ignored file, the FIFO, anything through a link out
    assert result.content.split("\n") == ["crlf.txt:3: needle crlf", "notes.txt:2: needle in notes"]


@pytest.mark.parametrize(
    ("query", "extra"),
    [
        ("top secret", {}),
        ("evil", {}),
        ("secret", {"include_pattern": "dirlink_out/**"}),
        ("needle", {"include_pattern": "ignored.txt"}),
        ("needle", {"include_pattern": "*.bin"}),
        ("top.secret|needle.evil|binary", {"is_regexp": True}),
    ],
)
async def test_grep_search_never_returns_content_from_outside_ignored_or_binary_files(listed, query, extra):
    result = await chat(listed.root).run("grep_search", query=query, **extra)
    assert result.status == "success"
    assert result.content == f"No matches for `{query}`."


async def test_grep_search_leaves_out_protected_files_and_says_so(listed):
    result = await chat(listed.root, Editor(default="reject"), Approvals(yolo=True)).run("grep_search", query="TOKEN")
    assert result.status == "success" and "abc123" not in result.content
    assert result.content.startswith("No matches for `TOKEN`.\n(1 matching line in protected files")


async def test_grep_search_does_not_block_on_the_fifo(listed):
    with never_blocks_on(listed.root / "fifo"):
        result = await chat(listed.root).run("grep_search", query="needle", include_pattern="fifo")
    assert result.content == "No matches for `needle`."


async def test_grep_search_reports_a_bad_regex(project):
    result = await chat(project.root).run("grep_search", query="(unclosed", is_regexp=True)
    assert result.status == "error" and "invalid regular expression" in result.content


# --- get_changed_files ---------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path):
    if not HAVE_GIT:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    root.mkdir()
    (root / "staged.txt").write_bytes(b"one\n")
    (root / "unstaged.txt").write_bytes(b"x\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "initial")
    (root / "staged.txt").write_bytes(b"one\ntwo staged\n")
    git(root, "add", "staged.txt")
    (root / "unstaged.txt").write_bytes(b"y unstaged\n")
    return root


def section(text: str, title: str) -> str:
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


@needs_git
async def test_get_changed_files_reports_staged_and_unstaged_changes(repo):
    result = await chat(repo).run("get_changed_files")
    assert result.status == "success"
    staged, unstaged = section(result.content, "Staged changes"), section(result.content, "Unstaged changes")
    assert "+++ b/staged.txt" in staged and "+two staged" in staged and "unstaged.txt" not in staged
    assert "+++ b/unstaged.txt" in unstaged and "-x\n+y unstaged" in unstaged and "b/staged.txt" not in unstaged
    assert "(no files with merge conflicts)" in section(result.content, "Merge conflicts")


@needs_git
async def test_get_changed_files_only_the_states_asked_for(repo):
    result = await chat(repo).run("get_changed_files", source_control_state=["unstaged"])
    assert result.status == "success"
    assert "## Unstaged changes" in result.content and "## Staged changes" not in result.content


@needs_git
async def test_get_changed_files_outside_a_repository_says_so(project):
    result = await chat(project.root).run("get_changed_files")  # `.git/config` alone is no repository
    assert result.status == "error" and "not a git repository" in result.content


async def test_get_changed_files_refuses_an_unknown_state_before_running(project):
    result = await chat(project.root).run("get_changed_files", source_control_state=["everything"])
    assert result.status == "error" and "must be one of 'staged', 'unstaged', 'merge-conflicts'" in result.content


# --- get_diagnostics -----------------------------------------------------------------------

DIAGNOSTICS = [
    {
        "line": 2,
        "col": 1,
        "severity": "ERROR",
        "message": "undefined name",
        "source": "pyright",
        "code": "needle in notes",
    },
    {"line": 1, "col": 3, "severity": "WARN", "message": "style", "code": "hello"},
]


async def test_get_diagnostics_of_a_file_open_in_the_editor(project):
    session = chat(project.root, Editor(diagnostics={str(project.root / "notes.txt"): DIAGNOSTICS}))
    result = await session.run("get_diagnostics", filepath="notes.txt")
    assert result.status == "success"
    assert result.content == (
        "notes.txt:2:1: ERROR: undefined name [pyright]\n    needle in notes\nnotes.txt:1:3: WARN: style\n    hello"
    )
    # CodeCompanion's names, and a minimum as in CodeCompanion: ERROR leaves the warning out
    errors = await session.run("get_diagnostics", filepath="notes.txt", severity="ERROR")
    assert errors.content == "notes.txt:2:1: ERROR: undefined name [pyright]\n    needle in notes"
    for least in ("WARNING", "WARN", "INFORMATION", "HINT"):
        assert (await session.run("get_diagnostics", filepath="notes.txt", severity=least)).content == result.content
    information = Editor(diagnostics={str(project.root / "notes.txt"): [{**DIAGNOSTICS[1], "severity": "INFO"}]})
    warning_only = await chat(project.root, information).run(
        "get_diagnostics", filepath="notes.txt", severity="WARNING"
    )
    assert warning_only.content == "No diagnostics in notes.txt."


async def test_get_diagnostics_through_an_inside_symlink_asks_about_the_real_file(project):
    session = chat(project.root, Editor(diagnostics={str(project.root / "notes.txt"): DIAGNOSTICS[:1]}))
    result = await session.run("get_diagnostics", filepath="link_in")
    assert result.content.startswith("link_in:2:1: ERROR: undefined name")


async def test_get_diagnostics_of_a_protected_file_asks_even_in_yolo_mode(project):
    env = [{"line": 1, "col": 1, "severity": "WARN", "message": "x", "code": "TOKEN=abc123"}]
    session = chat(
        project.root,
        Editor({"choice": "reject", "reason": "no"}, diagnostics={str(project.root / ".env"): env}),
        Approvals(yolo=True),
    )
    result = await session.run("get_diagnostics", filepath=".env")
    assert result.status == "rejected" and "abc123" not in result.content
    [asked] = session.editor.asked
    assert "environment file" in asked["must_ask"]


async def test_get_diagnostics_of_a_file_not_open_says_so(project):
    result = await chat(project.root).run("get_diagnostics", filepath="notes.txt")
    assert result.status == "success" and "notes.txt is not open in the editor" in result.content


# --- run_command ---------------------------------------------------------------------------


def python(code: str) -> str:
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


async def test_run_command_runs_in_the_project_root_after_approval(project):
    session = chat(project.root)
    command = python("import os; print(os.getcwd())")
    result = await session.run("run_command", cmd=command, flag=None)
    assert result.status == "success"
    assert result.content == f"`{command}` (exit code 0):\n```\n{project.root}\n```"
    where = Sandbox(SandboxPolicy(), root=str(project.root)).describe()  # the machine's mechanism
    assert [a["prompt"] for a in session.editor.asked] == [f"Run the command `{command}`? ({where})"]


@pytest.mark.parametrize(
    "policy, opts",
    [
        (SandboxPolicy(enabled=False), {}),
        (SandboxPolicy(), {"allowed_in_yolo_mode": False}),
        pytest.param(
            SandboxPolicy(mechanism="landlock"),
            {},
            marks=pytest.mark.skipif(available("landlock").name != "landlock", reason="no Landlock here"),
        ),
    ],
    ids=["sandbox off", "allowed_in_yolo_mode = false", "only Landlock: a partial sandbox"],
)
async def test_run_command_asks_in_yolo_mode_unsandboxed_and_a_rejected_command_does_not_run(project, policy, opts):
    approvals = Approvals(yolo=True)
    approvals.remember("run_command", python("print(1)"))  # "always" for another command only
    settings = ToolSettings.from_config({"run_command": {"opts": opts}})
    session = chat(project.root, Editor({"choice": "reject"}), approvals, settings, sandbox=policy)
    result = await session.run("run_command", cmd=python("open('ran.txt', 'w')"), flag=None)
    assert result.status == "rejected"
    assert len(session.editor.asked) == 1
    assert not (project.root / "ran.txt").exists()


@pytest.mark.skipif(not available().name == "bubblewrap", reason=f"no bubblewrap here: {available().reason}")
async def test_run_command_runs_sandboxed_in_yolo_mode_without_asking(project):
    session = chat(project.root, Editor({"choice": "reject"}), Approvals(yolo=True))
    result = await session.run("run_command", cmd=python("open('ran.txt', 'w')"), flag=None)
    assert result.status == "success" and session.editor.asked == []
    assert (project.root / "ran.txt").exists()


async def test_run_command_failure_is_an_error_with_the_exit_code_and_output(project):
    result = await chat(project.root).run(
        "run_command", cmd=python("import sys; print('boom'); sys.exit(3)"), flag="testing"
    )
    assert result.status == "error"
    assert "(exit code 3):\n```\nboom\n```" in result.content


async def test_run_command_does_not_pass_secrets_to_the_command(project, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_API_KEY", "sk-live-123")
    monkeypatch.setenv("TZ", "visible")  # on the allowlist: it cannot carry a credential
    code = "import os; print(os.environ.get('MY_SERVICE_API_KEY'), os.environ.get('TZ'))"
    result = await chat(project.root).run("run_command", cmd=python(code), flag=None)
    assert "None visible" in result.content and "sk-live-123" not in result.content


# --- fetch_webpage -------------------------------------------------------------------------

PAGE = b"""<!doctype html><html><head><title>Title</title><style>body { color: red }</style></head>
<body><h1>Hello &amp; welcome</h1><script>alert('tracking')</script>
<p>First   paragraph.</p><ul><li>one</li><li>two</li></ul></body></html>"""


@dataclass
class Site:
    url: str
    requests: list[str]


@pytest.fixture
def site(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    requests: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the standard library's name
            requests.append(self.path)
            if self.path == "/page":
                body, status, kind = PAGE, 200, "text/html; charset=utf-8"
            elif self.path == "/plain":
                body, status, kind = b"<b>not html</b>\n", 200, "text/plain"
            else:
                body, status, kind = b"gone", 404, "text/plain"
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Site(f"http://127.0.0.1:{server.server_address[1]}", requests)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


async def test_fetch_webpage_returns_the_readable_text_of_the_page(project, site):
    session = chat(project.root)
    result = await session.run("fetch_webpage", url=f"{site.url}/page")
    assert result.status == "success"
    assert result.content == f"Content of {site.url}/page:\n\nHello & welcome\nFirst paragraph.\none\ntwo"
    assert [a["prompt"] for a in session.editor.asked] == [f"Fetch {site.url}/page?"]


async def test_fetch_webpage_keeps_plain_text_as_it_is(project, site):
    result = await chat(project.root).run("fetch_webpage", url=f"{site.url}/plain")
    assert result.content == f"Content of {site.url}/plain:\n\n<b>not html</b>\n"


async def test_fetch_webpage_rejected_sends_no_request(project, site):
    result = await chat(project.root, Editor({"choice": "reject"})).run("fetch_webpage", url=f"{site.url}/page")
    assert result.status == "rejected"
    assert site.requests == []


async def test_fetch_webpage_an_http_error_is_an_error_result(project, site):
    result = await chat(project.root).run("fetch_webpage", url=f"{site.url}/missing")
    assert result.status == "error" and "answered HTTP 404" in result.content


async def test_fetch_webpage_refuses_other_schemes(project):
    result = await chat(project.root).run("fetch_webpage", url=f"file://{project.root}/.env")
    assert result.status == "error" and "only http and https URLs can be fetched" in result.content
    assert "abc123" not in result.content


async def test_run_command_says_when_a_command_created_a_file_that_runs_code(project):
    result = await chat(project.root).run("run_command", cmd="touch .envrc notes.txt", flag=None)
    assert result.status == "success" and (project.root / ".envrc").exists()
    assert "The command created .envrc, which can run code by itself" in result.content
    again = await chat(project.root).run("run_command", cmd="touch notes.txt", flag=None)
    assert "created" not in again.content  # only what this command made
