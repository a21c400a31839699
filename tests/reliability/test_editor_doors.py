"""The editor surfaces that act on what a model wrote, in real headless Neovim against a
scripted LLM on 127.0.0.1:

* `:CodeCompanionCmd`: the answer reaches the command line as text, never as keys; an answer
  with control characters (ESC, CR, Ctrl-V, DEL, C1) or over 4000 characters is refused with
  a one-line error that shows them made visible, and a second line never reaches the
  command line. The file stays intact and Neovim keeps running.
* The review of a chat's edit (insert_edit_into_file), written on disk or into a loaded
  buffer: rejecting puts back the file's exact bytes (BOM, no final newline, mixed CRLF/LF,
  'fileformat' dos), accepting changes nothing but the edit.
* One review per buffer: an inline request on a buffer under review is refused, and the
  chat's review stays for the user. Wiping or unloading the buffer rejects the edit, puts
  the file back and lets the chat go on. A rejection goes back to the file the edit wrote
  even if the buffer was renamed, and never over a change made on disk meanwhile.
"""

from __future__ import annotations

import contextlib
import sys

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread
from tests.e2e import conftest as e2e
from tests.e2e.test_chat_surface import chat_config, notes, setup
from tests.e2e.test_inline import CODE, answer, open_code, rewrite_streaming

pytestmark = [pytest.mark.nvim, pytest.mark.skipif(sys.platform == "win32", reason="POSIX Neovim")]

nvim_home = e2e.nvim_home
editor = e2e.editor


# --- :CodeCompanionCmd: text, never keys ------------------------------------------------------


def _cmd_outcome(editor) -> str:
    """Wait until the answer is on the command line or refused; which one it was."""

    def settled():
        if editor.nvim.api.get_mode()["mode"] == "c":
            return "cmdline"
        if any("CodeCompanion" in note for note in notes(editor)):
            return "notified"
        return None

    return editor.wait_for(settled, timeout=20, what="the command on the command line, or an error")


@pytest.mark.parametrize(
    "answer_text",
    [
        "ls\x1bggdGZZ",  # ESC leaves the command line; then Normal-mode keys
        "`ls\x1bggdGZZ`",
        "ls\rggdGZZ",  # a lone CR would run `ls`, then the rest as keys
        "ls\x16\x1bggdGZZ",  # Ctrl-V
        "echo\x7f\x00 1",
        "ls\u0085ggdGZZ",  # a C1 control
        "echo 'ok' \u202e| !rm -rf ~",  # a bidi override shows another command than the one that runs
        "ls\u200b",  # a zero-width space
        "echo '" + "x" * 5000 + "'",  # no command to read and run: too long
    ],
)
def test_cmd_answer_with_control_characters_is_refused_and_never_typed(editor, tmp_path, answer_text):
    with ServerThread(ScriptedServer.sequence([answer(answer_text)])) as server:
        setup(editor, server.url, chat_config(""))
        buf = open_code(editor, tmp_path)
        editor.nvim.command("write")
        editor.nvim.command("CodeCompanionCmd empty this file")
        assert _cmd_outcome(editor) == "notified"
        [note] = [n for n in notes(editor) if "CodeCompanion" in n]
        assert ("invisible characters" in note or "characters long" in note) and "\n" not in note
        assert len(note) < 400
        assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F or ch in "\u202e\u200b" for ch in note)  # visible
        assert "ls" in note or "echo" in note
        assert editor.nvim.api.get_mode()["mode"] == "n"  # still running, nothing typed
        assert buf[:] == CODE
        assert (tmp_path / "calc.py").read_text() == "\n".join(CODE) + "\n"


@pytest.mark.parametrize(
    ("answer_text", "cmdline"),
    [
        ("ls<Esc>ggdGZZ", "ls<Esc>ggdGZZ"),  # the literal text "<Esc>" stays text
        ("ls\nggdGZZ", "ls"),  # one command: the second line never reaches the command line
        ("echo 1\n:bwipeout!\x1bZZ", "echo 1"),
    ],
)
def test_cmd_answer_reaches_the_command_line_as_text(editor, tmp_path, answer_text, cmdline):
    with ServerThread(ScriptedServer.sequence([answer(answer_text)])) as server:
        setup(editor, server.url, chat_config(""))
        buf = open_code(editor, tmp_path)
        editor.nvim.command("CodeCompanionCmd list buffers")
        assert _cmd_outcome(editor) == "cmdline"
        editor.wait_for(lambda: editor.nvim.call("getcmdline") == cmdline, timeout=5, what="the command line's text")
        assert editor.nvim.call("getcmdtype") == ":"
        editor.nvim.input("<C-u><Esc>")  # the user thinks better of it
        editor.wait_for(lambda: editor.nvim.api.get_mode()["mode"] == "n", what="back in Normal mode")
        assert buf[:] == CODE and not buf.options["modified"]
        assert (tmp_path / "calc.py").read_text() == "\n".join(CODE) + "\n"


# --- the review of a chat's edit: exactly the bytes that should be there ------------------------

ODD_FILES = {
    "bom": b"\xef\xbb\xbfdef add(a, b):\n    return a - b\n",
    "no-final-newline": b"def add(a, b):\n    return a - b",
    "mixed-crlf-lf": b"def add(a, b):\r\n    return a - b\n\nx = 1\r\n",
    "dos": b"def add(a, b):\r\n    return a - b\r\n\r\nx = 1\r\n",
    "dos-bom-no-final-newline": b"\xef\xbb\xbfdef add(a, b):\r\n    return a - b\r\nx = 1",
}
EDIT = {"filepath": "calc.py", "edits": [{"oldText": "return a - b", "newText": "return a + b"}]}


@contextlib.contextmanager
def edit_chat(editor, tmp_path, content: bytes, *, reply: str = "Understood."):
    """A project whose calc.py holds `content`, and a chat whose LLM asks for EDIT of it,
    then says `reply`; vim.notify is recorded (`notes`)."""
    from tests.e2e.test_tools import setup_with_tools, text_reply, tool_call_reply

    root = tmp_path / "proj"
    root.mkdir()
    (root / "calc.py").write_bytes(content)
    replies = [tool_call_reply(("e1", "insert_edit_into_file", EDIT)), text_reply(reply)]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup_with_tools(editor, server.url)
        editor.lua("_G.cc_notes = {}; vim.notify = function(msg) table.insert(_G.cc_notes, msg) end")
        yield root, server


def _review_edit(editor, root, *, loaded: bool, action: str) -> int:
    """A chat asks for EDIT of calc.py; the user settles its review with `action`."""
    calc = _pending_review(editor, root, loaded=loaded)
    editor.lua("require('codecompanion_py.diff').act(...)", calc, action)
    editor.wait_event("CodeCompanionChatDone", timeout=30)
    return calc


@pytest.mark.parametrize("action", ["reject_change", "accept_change"])
@pytest.mark.parametrize("loaded", [False, True], ids=["on-disk", "in-a-loaded-buffer"])
@pytest.mark.parametrize("kind", list(ODD_FILES))
def test_a_reviewed_edit_leaves_exactly_the_bytes_it_should(editor, tmp_path, kind, loaded, action):
    original = ODD_FILES[kind]
    with edit_chat(editor, tmp_path, original, reply="Done.") as (root, server):
        calc = _review_edit(editor, root, loaded=loaded, action=action)
        expected = original if action == "reject_change" else original.replace(b"a - b", b"a + b")
        assert (root / "calc.py").read_bytes() == expected
        assert not editor.nvim.api.get_option_value("modified", {"buf": calc})
        if action == "reject_change":
            assert editor.nvim.api.buf_get_lines(calc, 0, -1, False)[1].startswith("    return a - b")


# --- one review per buffer; a closed buffer settles its review ---------------------------------

ODD = ODD_FILES["dos-bom-no-final-newline"]


def _pending_review(editor, root, *, loaded: bool) -> int:
    editor.nvim.command(f"cd {root}")
    if loaded:
        editor.nvim.command("edit calc.py")
    editor.nvim.command("CodeCompanionChat Fix calc.py with @{files}")
    calc = editor.wait_for(lambda: max(editor.nvim.call("bufnr", str(root / "calc.py")), 0), what="loaded")
    editor.wait_for(
        lambda: editor.lua("return require('codecompanion_py.diff').reviews[...] ~= nil", calc),
        what="the review",
        timeout=30,
    )
    return calc


def test_an_inline_request_on_a_buffer_under_review_is_refused_and_the_review_stays(editor, tmp_path):
    from tests.e2e.test_tools import setup_with_tools, text_reply, tool_call_reply

    root = tmp_path / "proj"
    root.mkdir()
    (root / "calc.py").write_bytes(ODD)
    inline = answer("PLACEMENT: replace\ndef add(a, b):\n    return 0\n")
    replies = [tool_call_reply(("e1", "insert_edit_into_file", EDIT)), inline, text_reply("Done.")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup_with_tools(editor, server.url)
        calc = _pending_review(editor, root, loaded=True)
        editor.lua("vim.api.nvim_set_current_win(vim.fn.bufwinid(...))", calc)
        editor.nvim.command("1,2CodeCompanion return zero")
        editor.wait_for(lambda: any("review" in n for n in notes(editor)), what="the refusal", timeout=20)
        assert "CodeCompanionChatDone" not in editor.event_names()  # the chat's review was not settled for it
        assert editor.lua("return require('codecompanion_py.diff').reviews[...] ~= nil", calc)
        assert len(server.requests) == 1  # the inline request never left
        editor.lua("require('codecompanion_py.diff').act(..., 'reject_change')", calc)
        editor.wait_event("CodeCompanionChatDone", timeout=30)
        assert (root / "calc.py").read_bytes() == ODD
        assert "rejected" in server.requests[1].json()["messages"][-1]["content"]


@pytest.mark.parametrize("how", ["bwipeout!", "bunload!"])
@pytest.mark.parametrize("loaded", [False, True], ids=["on-disk", "in-a-loaded-buffer"])
def test_closing_a_buffer_under_review_rejects_the_edit_and_unlocks_the_chat(editor, tmp_path, loaded, how):
    with edit_chat(editor, tmp_path, ODD) as (root, server):
        calc = _pending_review(editor, root, loaded=loaded)
        assert b"a + b" in (root / "calc.py").read_bytes()  # written before the review
        editor.nvim.command(f"{how} {calc}")
        editor.wait_event("CodeCompanionChatDone", timeout=20)  # the chat is not left waiting
        assert (root / "calc.py").read_bytes() == ODD
        assert any("closed" in n and "calc.py" in n for n in notes(editor))
        assert "rejected" in server.requests[1].json()["messages"][-1]["content"]
        assert not editor.lua("return next(require('codecompanion_py.diff').reviews) ~= nil")


def test_a_rejected_edit_goes_back_to_its_file_when_the_buffer_was_renamed(editor, tmp_path):
    with edit_chat(editor, tmp_path, ODD) as (root, server):
        calc = _pending_review(editor, root, loaded=True)
        editor.lua("vim.api.nvim_buf_set_name(..., 'renamed.py')", calc)  # :file renamed.py
        editor.lua("require('codecompanion_py.diff').act(..., 'reject_change')", calc)
        editor.wait_event("CodeCompanionChatDone", timeout=30)
        assert (root / "calc.py").read_bytes() == ODD
        assert not (root / "renamed.py").exists()
        assert "rejected" in server.requests[1].json()["messages"][-1]["content"]


def test_a_rejected_edit_never_overwrites_a_change_made_on_disk_during_the_review(editor, tmp_path):
    with edit_chat(editor, tmp_path, ODD) as (root, server):
        calc = _pending_review(editor, root, loaded=False)
        (root / "calc.py").write_bytes(b"theirs\n")  # another program writes the file meanwhile
        editor.lua("require('codecompanion_py.diff').act(..., 'reject_change')", calc)
        editor.wait_event("CodeCompanionChatDone", timeout=20)  # nothing waits on a question
        assert (root / "calc.py").read_bytes() == b"theirs\n"
        assert any("changed on disk" in n and "calc.py" in n for n in notes(editor))


def test_cmd_answer_in_insert_mode_is_not_typed_into_the_buffer(editor, tmp_path):
    with ServerThread(ScriptedServer.sequence([answer("ls")])) as server:
        setup(editor, server.url, chat_config(""))
        buf = open_code(editor, tmp_path)
        editor.nvim.input("o")  # the user is typing when the answer arrives
        editor.wait_for(lambda: editor.nvim.api.get_mode()["mode"] == "i", what="Insert mode")
        editor.lua("require('codecompanion_py.inline').cmd('list buffers')")
        editor.wait_for(lambda: any("command history" in n for n in notes(editor)), what="the message", timeout=20)
        assert editor.nvim.api.get_mode()["mode"] == "i"
        lines = buf[:]
        assert lines[1].strip() == "" and lines[:1] + lines[2:] == CODE  # the line the user opened, nothing in it
        assert editor.nvim.call("histget", "cmd", -1) == "ls"  # `:` then <Up> brings it back
        editor.nvim.input("<Esc>")


def test_quitting_neovim_during_a_review_rejects_the_edit_and_puts_the_file_back(editor, tmp_path):
    with edit_chat(editor, tmp_path, ODD) as (root, server):
        _pending_review(editor, root, loaded=False)
        pid = editor.nvim.call("getpid")
        e2e.quit_nvim(editor.nvim, pid)
        assert e2e._exited(pid)  # nothing waits at exit
        assert (root / "calc.py").read_bytes() == ODD


def test_a_chat_edit_into_a_buffer_under_inline_review_is_refused_and_the_review_stays(editor, tmp_path):
    from tests.e2e.test_tools import setup_with_tools, text_reply, tool_call_reply

    root = tmp_path / "proj"
    root.mkdir()
    (root / "calc.py").write_text("\n".join(CODE) + "\n")
    inline = answer("PLACEMENT: add\nprint('hi')\n")
    replies = [inline, tool_call_reply(("e1", "insert_edit_into_file", EDIT)), text_reply("I will wait.")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup_with_tools(editor, server.url)
        editor.nvim.command(f"cd {root}")
        editor.nvim.command("edit calc.py | 4")
        calc = editor.nvim.current.buffer
        editor.nvim.command("CodeCompanion print hi")
        editor.wait_for(
            lambda: editor.lua("return require('codecompanion_py.diff').reviews[...] ~= nil", calc.number),
            what="the inline review",
        )
        editor.nvim.command("CodeCompanionChat Fix calc.py with @{files}")
        editor.wait_event("CodeCompanionChatDone", timeout=30)
        result = server.requests[2].json()["messages"][-1]["content"]
        assert "under way" in result and "nothing was written" in result
        assert editor.lua("return require('codecompanion_py.diff').reviews[...] ~= nil", calc.number)
        assert calc[:] == [*CODE, "print('hi')"]  # the inline change, still to be settled
        editor.lua("require('codecompanion_py.diff').act(..., 'reject_change')", calc.number)
        assert calc[:] == CODE and (root / "calc.py").read_text() == "\n".join(CODE) + "\n"


def test_closing_a_latin1_buffer_under_review_puts_back_its_own_bytes(editor, tmp_path):
    latin1 = b"# caf\xe9\r\ndef add(a, b):\r\n    return a - b\r\n"
    with edit_chat(editor, tmp_path, latin1) as (root, server):
        calc = _pending_review(editor, root, loaded=True)
        assert (root / "calc.py").read_bytes() == latin1.replace(b"a - b", b"a + b")  # saved as latin1
        editor.nvim.command(f"bwipeout! {calc}")
        editor.wait_event("CodeCompanionChatDone", timeout=20)
        assert (root / "calc.py").read_bytes() == latin1


def test_closing_a_buffer_keeps_the_hunks_accepted_before(editor, tmp_path):
    from tests.e2e.test_tools import setup_with_tools, text_reply, tool_call_reply

    before = b"def add(a, b):\r\n    return a - b\r\n\r\n\r\ndef mul(a, b):\r\n    return a + b"
    two = {
        "filepath": "calc.py",
        "edits": [
            {"oldText": "    return a - b", "newText": "    return a + b"},
            {"oldText": "def mul(a, b):\n    return a + b", "newText": "def mul(a, b):\n    return a * b"},
        ],
    }
    root = tmp_path / "proj"
    root.mkdir()
    (root / "calc.py").write_bytes(before)
    replies = [tool_call_reply(("e1", "insert_edit_into_file", two)), text_reply("Noted.")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup_with_tools(editor, server.url)
        calc = _pending_review(editor, root, loaded=False)
        editor.lua("vim.api.nvim_set_current_win(vim.fn.bufwinid(...))", calc)
        editor.nvim.command("2")
        editor.lua("require('codecompanion_py.diff').act(..., 'accept_hunk')", calc)
        editor.nvim.command(f"bwipeout! {calc}")
        editor.wait_event("CodeCompanionChatDone", timeout=20)
        assert (root / "calc.py").read_bytes() == before.replace(b"a - b", b"a + b")
        assert "kept part of this edit" in server.requests[1].json()["messages"][-1]["content"]


def test_closing_a_buffer_while_the_inline_assistant_writes_to_it_stops_the_request(editor, tmp_path):
    with rewrite_streaming(editor, tmp_path) as buf:
        editor.nvim.command("let v:errmsg = ''")
        editor.nvim.command(f"bwipeout! {buf.number}")
        finished = editor.wait_event("CodeCompanionInlineFinished", timeout=20)
        assert finished["data"]["status"] == "stopped"
        assert editor.nvim.eval("v:errmsg") == ""
        assert any("closed" in n for n in notes(editor))
        assert (tmp_path / "calc.py").read_text() == "\n".join(CODE) + "\n"
        assert not editor.lua("return next(require('codecompanion_py.inline').runs) ~= nil")


@pytest.mark.parametrize("kind", list(ODD_FILES))
def test_a_rejected_inline_change_leaves_the_buffer_and_the_file_as_they_were(editor, tmp_path, kind):
    fixed = "PLACEMENT: replace\ndef add(a, b):\n    return a + b\n"
    path = tmp_path / "calc.py"
    path.write_bytes(ODD_FILES[kind])
    with ServerThread(ScriptedServer.sequence([answer(fixed)])) as server:
        setup(editor, server.url, chat_config(""))
        editor.nvim.command(f"edit {path}")
        buf = editor.nvim.current.buffer
        shape = {name: buf.options[name] for name in ("bomb", "eol", "fileformat", "fileencoding")}
        lines = buf[:]
        editor.nvim.command("1,2CodeCompanion fix the bug")
        editor.wait_event("CodeCompanionInlineFinished")
        editor.wait_for(lambda: editor.lua("return require('codecompanion_py.diff').reviews[...] ~= nil", buf.number))
        editor.lua("require('codecompanion_py.diff').act(..., 'reject_change')", buf.number)
        assert buf[:] == lines and not buf.options["modified"]
        assert {name: buf.options[name] for name in shape} == shape
        assert path.read_bytes() == ODD_FILES[kind]


def test_a_second_review_on_a_buffer_waits_for_the_first_to_be_settled_by_the_user(editor, tmp_path):
    buf = open_code(editor, tmp_path)
    editor.lua(
        """
      local diff, buf = require("codecompanion_py.diff"), ...
      _G.results = {}
      local function review(name, row, new)
        local old = vim.api.nvim_buf_get_lines(buf, row, row + 1, false)
        vim.api.nvim_buf_set_lines(buf, row, row + 1, false, { new })
        diff.start(buf, { start = row, count = 1, original = old, modified = false,
          on_done = function(result) table.insert(_G.results, name .. ":" .. result) end })
      end
      review("first", 1, "    return a + b")
      diff.start(buf, { start = 3, count = 1, original = { "print(add(9, 9))" }, modified = false,
        on_done = function(result) table.insert(_G.results, "queued:" .. result) end })
    """,
        buf.number,
    )
    assert editor.lua("return _G.results") == []  # the first is not settled for the user
    editor.lua("require('codecompanion_py.diff').act(..., 'reject_change')", buf.number)
    assert editor.lua("return _G.results") == ["first:rejected"]
    editor.wait_for(lambda: editor.lua("return require('codecompanion_py.diff').reviews[...] ~= nil", buf.number))
    editor.lua("require('codecompanion_py.diff').act(..., 'accept_change')", buf.number)
    assert editor.lua("return _G.results") == ["first:rejected", "queued:accepted"]
    assert buf[:] == CODE
