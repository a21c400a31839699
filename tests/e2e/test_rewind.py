"""Checkpoints and rewind in a real Neovim: a chat of several turns of edits (the built-in tools,
a command the LLM runs, a scripted agent writing through the editor and by itself) goes back to
each turn byte-exact, in a git repository with uncommitted work and in a folder without git; what
the user changed since a checkpoint is asked about and never lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread

from .conftest import _exited
from .test_acp import open_agent_chat
from .test_tools import setup_with_tools, text_reply, tool_call_reply

pytestmark = pytest.mark.nvim

TOOLS = """
  create_file = { opts = { require_confirmation_after = false } },
  insert_edit_into_file = { opts = { require_confirmation_after = false } },
  delete_file = { opts = { require_approval_before = false, require_confirmation_after = false } },
  run_command = { opts = { require_approval_before = false } },
"""
BINARY = bytes(range(256))


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True).stdout


def make_project(tmp_path: Path, *, with_git: bool) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.py").write_text("one\ntwo\n")
    (root / "b.txt").write_text("bee\n")
    (root / "bin.dat").write_bytes(BINARY)
    (root / "make_binary.py").write_text(
        "open('bin.dat', 'wb').write(bytes(range(255, -1, -1)))\nopen('made.bin', 'wb').write(b'\\x00\\xff')\n"
    )
    if with_git:
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "init")
        (root / "a.py").write_text("one\ntwo\nuncommitted\n")  # the user's work in progress
        (root / "staged.txt").write_text("staged\n")
        git(root, "add", "staged.txt")
    return root


def files(root: Path) -> dict[str, bytes]:
    found = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = Path(folder, name)
            found[str(path.relative_to(root))] = path.read_bytes()
    return found


def submit(editor, text: str) -> None:
    editor.type_prompt(text)
    editor.lua("require('codecompanion_py.chat').submit(vim.api.nvim_get_current_buf())")


def turn_snapshotted(editor, root: Path, turns: int) -> None:
    """The snapshot after the last turn is taken (its ref is there): what the user changes from
    now on is theirs, not the turn's."""
    refs = "refs/codecompanion/"
    editor.wait_for(
        lambda: git(root, "for-each-ref", "--format=%(refname)", refs).count("-after") == turns,
        what="the snapshot after the turn",
    )


def edit(call_id: str, path: str, old: str, new: str) -> tuple:
    return (call_id, "insert_edit_into_file", {"filepath": path, "edits": [{"oldText": old, "newText": new}]})


def one_turn(editor, server, root: Path, prompt: str) -> int:
    """A chat in `root` that sends `prompt`, its turn done and snapshotted: the chat's buffer."""
    editor.nvim.command(f"cd {root}")
    setup_with_tools(editor, server.url, TOOLS)
    editor.nvim.command(f"CodeCompanionChat {prompt}")
    chat = editor.nvim.current.buffer.number
    editor.wait_event("CodeCompanionChatDone", timeout=30)
    turn_snapshotted(editor, root, 1)
    return chat


def rewound(editor, count: int = 1) -> dict:
    try:
        return editor.wait_event("CodeCompanionChatRewound", count=count, timeout=30)["data"]
    except AssertionError as failed:
        raise AssertionError(f"{failed}; notes: {editor.lua('return _G.cc_notes')}") from None


@pytest.mark.parametrize("with_git", [True, False], ids=["git", "no-git"])
def test_each_turn_of_tool_edits_rewinds_byte_exact(editor, tmp_path, with_git):
    root = make_project(tmp_path, with_git=with_git)
    index = (root / ".git" / "index").read_bytes() if with_git else None
    replies = [
        tool_call_reply(
            ("c1", "create_file", {"filepath": "new/deep/file.py", "content": "x = 1\n"}),
            edit("e1", "a.py", "two", "TWO"),
            ("d1", "delete_file", {"filepath": "b.txt"}),
        ),
        text_reply("Turn one done."),
        tool_call_reply(("r1", "run_command", {"cmd": f"{sys.executable} make_binary.py", "flag": None})),
        text_reply("Turn two done."),
        text_reply("Nothing to change."),
        text_reply("Again from the first message."),
    ]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        editor.nvim.command(f"cd {root}")
        setup_with_tools(editor, server.url, TOOLS, answers=["Accept"] * 3)
        states = [files(root)]
        editor.nvim.command("CodeCompanionChat Make the first changes with @{files} and @{delete_file}")
        chat = editor.nvim.current.buffer.number
        editor.wait_event("CodeCompanionChatDone", timeout=30)
        states.append(files(root))
        assert not (root / "b.txt").exists() and (root / "new/deep/file.py").exists()
        submit(editor, "Now make the binary with @{run_command}")
        editor.wait_event("CodeCompanionChatDone", count=2, timeout=30)
        states.append(files(root))
        assert (root / "made.bin").read_bytes() == b"\x00\xff"
        submit(editor, "Anything else?")
        editor.wait_event("CodeCompanionChatDone", count=3, timeout=30)

        # the files alone, back to before the second message (rewind() from Lua)
        editor.lua("require('codecompanion').rewind({ bufnr = ..., turn = 2, restore = 'files' })", chat)
        data = rewound(editor)
        assert files(root) == states[1]
        assert data["turn"] == 2 and data["conversation"] is False
        assert sorted(data["files"]) == ["bin.dat", "made.bin"]
        assert editor.text(chat).count("## Me") == 4  # the conversation stays
        assert "> **Rewound** to before message 2: restored `bin.dat`; removed `made.bin`" in editor.text(chat)

        # gz on the first message: files and conversation, back to before it all
        editor.lua("_G.cc_answers = { 'Restore files and conversation' }")
        editor.nvim.command("call cursor(1, 1)")
        editor.nvim.command("call search('^## Me$', 'c')")
        editor.nvim.input("gz")
        rewound(editor, 2)
        assert files(root) == states[0]
        lines = editor.lines(chat)
        assert lines.count("## Me") == 1 and "Turn one done." not in lines
        assert lines[-1] == "Make the first changes with @{files} and @{delete_file}"  # the draft, to send again
        if with_git:
            assert (root / ".git" / "index").read_bytes() == index  # the user's index, staged file and all
            assert git(root, "diff", "--cached", "--name-only") == "staged.txt\n"
            assert git(root, "stash", "list") == ""

        editor.lua("require('codecompanion_py.chat').submit(...)", chat)
        editor.wait_event("CodeCompanionChatDone", count=4, timeout=30)
        sent = server.requests[-1].json()["messages"]
        assert sum(m["role"] == "user" for m in sent) == 1
        assert sum(m["role"] == "assistant" for m in sent) == 0  # the rewound turns are gone


def test_what_the_user_changed_since_is_asked_about_and_kept(editor, tmp_path):
    root = make_project(tmp_path, with_git=True)
    replies = [tool_call_reply(edit("e1", "a.py", "two", "TWO"), edit("e2", "b.txt", "bee", "BEE")), text_reply("Ok")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        chat = one_turn(editor, server, root, "Edit a.py and b.txt with @{insert_edit_into_file}")
        (root / "a.py").write_text("the user's own version\n")  # after the turn, on disk
        editor.nvim.command("tabnew b.txt")
        b = editor.nvim.current.buffer.number
        editor.nvim.command("normal! Gounsaved words")  # and unsaved, in a buffer
        editor.nvim.command(f"tabprevious | buffer {chat}")
        editor.lua(
            "_G.cc_answers = { 'Keep mine', 'View the diff', \"Take the checkpoint's\" };"
            "require('codecompanion').rewind({ bufnr = ..., turn = 1, restore = 'files' })",
            chat,
        )
        data = rewound(editor)
        prompts = [p["prompt"] for p in editor.lua("return _G.cc_prompts")]
        assert prompts == [
            "a.py changed since the checkpoint",
            "b.txt changed since the checkpoint",
            "b.txt changed since the checkpoint",  # again, after the diff
        ]
        assert (root / "a.py").read_text() == "the user's own version\n"  # never overwritten
        assert (root / "b.txt").read_text() == "bee\n"  # the checkpoint's, as chosen
        assert editor.nvim.api.buf_get_lines(b, 0, -1, False) == ["bee"]  # its buffer reloaded
        editor.nvim.command(f"buffer {b} | undo")  # one undo step gives the unsaved words back
        assert editor.nvim.api.buf_get_lines(b, 0, -1, False) == ["BEE", "unsaved words"]
        assert sorted(data["files"]) == ["a.py", "b.txt"]
        assert "kept yours: `a.py`" in editor.text(chat)


def test_cancelling_a_question_changes_nothing(editor, tmp_path):
    root = make_project(tmp_path, with_git=True)
    replies = [tool_call_reply(edit("e1", "a.py", "two", "TWO")), text_reply("Edited.")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        chat = one_turn(editor, server, root, "Edit a.py with @{insert_edit_into_file}")
        (root / "a.py").write_text("mine\n")
        before = files(root)
        editor.lua("_G.cc_answers = {}; require('codecompanion').rewind({ bufnr = ..., turn = 1 })", chat)
        editor.wait_for(lambda: len(editor.lua("return _G.cc_prompts")) == 1, what="the first question")
        assert editor.lua("return _G.cc_prompts")[0]["prompt"] == "Rewind to before message 1"
        editor.lua(
            "_G.cc_answers = { 'Restore files and conversation' }; require('codecompanion').rewind({ turn = 1 })"
        )
        editor.wait_for(
            lambda: any("the rewind was cancelled" in n for n in editor.lua("return _G.cc_notes")),
            what="the cancel",
        )
        assert files(root) == before and "Edited." in editor.text(chat)
        # a message not sent yet, and one without a checkpoint, are said plainly
        editor.lua("require('codecompanion').rewind({ bufnr = ..., turn = 2, restore = 'files' })", chat)
        editor.wait_for(
            lambda: any("has not been sent" in n for n in editor.lua("return _G.cc_notes")), what="the refusal"
        )


def test_an_agents_edits_and_its_own_writes_rewind_and_the_checkpoints_survive_a_restart(
    editor, spawn, nvim_home, tmp_path
):
    root = make_project(tmp_path, with_git=True)
    first = {"editor": {"a.py": "agent one\n"}, "direct": {"out/made.bin": "\x00\x01\xff"}, "remove": ["b.txt"]}
    second = {"editor": {"a.py": "agent two\n", "new.txt": "new\n"}}
    states = [files(root)]
    chat = open_agent_chat(editor, root, "files " + json.dumps(first))
    editor.wait_event("CodeCompanionChatDone", timeout=30)
    states.append(files(root))
    assert (root / "out/made.bin").read_bytes() == b"\x00\x01\xff" and not (root / "b.txt").exists()
    submit(editor, "files " + json.dumps(second))
    editor.wait_event("CodeCompanionChatDone", count=2, timeout=30)
    assert (root / "new.txt").exists()
    turn_snapshotted(editor, root, 2)
    pid = editor.nvim.call("getpid")
    saved = editor.lua("return require('codecompanion_py.chat').chats[...].open_payload.resume_id", chat)
    assert saved
    editor.nvim.command("qall!", async_=True)  # the engine saves the chat as Neovim exits
    editor.wait_for(lambda: _exited(pid), what="Neovim to quit")

    # a new Neovim: the saved chat comes back with its checkpoints
    again = spawn(nvim_home[0])
    again.nvim.command(f"cd {root}")
    open_agent_chat(again, root, "")  # setup; then the saved chat is opened from the history
    again.lua("require('codecompanion_py.history').open(...)", saved)
    again.wait_for(lambda: "agent two" in again.text() or "Files done." in again.text(), what="the saved chat")
    reopened = again.nvim.current.buffer.number
    again.lua("require('codecompanion').rewind({ bufnr = ..., turn = 2, restore = 'files' })", reopened)
    rewound(again)
    assert files(root) == states[1]
    again.lua("require('codecompanion').rewind({ bufnr = ..., turn = 1, restore = 'all' })", reopened)
    rewound(again, 2)
    assert files(root) == states[0]
