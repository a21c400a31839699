"""The editor surfaces that act on what a model wrote, in real headless Neovim against a
scripted LLM on 127.0.0.1:

* `:CodeCompanionCmd`: the answer reaches the command line as text, never as keys; an answer
  with control characters (ESC, CR, Ctrl-V...) is refused with a one-line error that shows
  them made visible, and a second line never reaches the command line.
"""

from __future__ import annotations

import sys

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread
from tests.e2e import conftest as e2e
from tests.e2e.test_chat_surface import chat_config, notes, setup
from tests.e2e.test_inline import CODE, answer, open_code

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
        assert "control character" in note and "\n" not in note
        assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in note)  # shown made visible
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
