"""The CLI interaction in headless Neovim: real terminals running a scripted CLI that stands in
for an agent's (it draws a few lines, then records every byte typed into it, raw, so a
submitted prompt's Enter is told from a typed newline), with editor context sent into it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread
from tests.waiting import wait_until

from .test_extensions import setup_with

pytestmark = pytest.mark.nvim

FAKE_CLI = f"""#!{sys.executable}
import json, os, subprocess, sys, tty
log = sys.argv[1]
# a process of the agent's own that a closed terminal's hangup does not end: the group's kill must
child = subprocess.Popen(["sh", "-c", "trap '' HUP; exec sleep 300"])
with open(log + ".child", "w") as f:
    f.write(str(child.pid))
with open(log + ".args", "w") as f:
    f.write(json.dumps(sys.argv[2:]))
for i in range(6):
    print(f"fake agent ready {{i}}", flush=True)
tty.setraw(0)
with open(log, "ab", buffering=0) as out:
    while True:
        data = os.read(0, 4096)
        if not data:
            break
        out.write(data)
        if b"EDIT" in data:  # the agent edits a file of the project
            with open("app.py", "w") as f:
                f.write("edited = True\\n")
"""


@pytest.fixture
def cli_setup(editor, tmp_path):
    """The scripted CLI as agents `fake` (the default) and `other`; the cwd a project with app.py."""
    script = tmp_path / "fake-cli"
    script.write_text(FAKE_CLI)
    script.chmod(0o755)
    (tmp_path / "app.py").write_text("def add(a, b):\n    return a + b\n")
    logs = {name: tmp_path / f"{name}.log" for name in ("fake", "other")}
    agents = ", ".join(
        f'{name} = {{ cmd = "{script}", args = {{ "{log}", "--flag" }}, description = "{name} CLI" }}'
        for name, log in logs.items()
    )
    with ServerThread(ScriptedServer.sequence([])) as server:
        setup_with(editor, server.url, "", "")
        editor.lua(
            "local c = require('codecompanion_py').config"
            f" c.interactions.cli = {{ agent = 'fake', agents = {{ {agents} }} }}"
        )
        editor.nvim.command(f"cd {tmp_path}")
        editor.nvim.command("edit app.py")
        yield editor, logs


def typed(log: Path, ending: bytes) -> bytes:
    """Everything typed into the CLI once it ends with `ending`."""
    return wait_until(
        lambda: log.exists() and log.read_bytes().endswith(ending) and log.read_bytes(),
        15,
        lambda: f"the CLI to receive ...{ending!r}; it has {log.read_bytes() if log.exists() else b''!r}",
    )


def cli_buffers(editor) -> list[int]:
    return editor.lua("return vim.tbl_keys(require('codecompanion_py.cli').instances)")


def test_a_prompt_with_this_reaches_the_agents_cli_as_a_path(cli_setup):
    editor, logs = cli_setup
    source = editor.nvim.current.buffer.number
    editor.nvim.command("CodeCompanionCLI What does #{this} do?")
    [buf] = cli_buffers(editor)
    assert editor.nvim.current.buffer.number == buf  # the terminal is shown and focused
    assert editor.lua("return vim.bo[...].filetype", buf) == "codecompanion_cli"
    assert typed(logs["fake"], b"\n") == b"What does @app.py do?\n"  # typed, not submitted
    assert json.loads(Path(str(logs["fake"]) + ".args").read_text()) == ["--flag"]
    names = editor.event_names()
    for event in ("CodeCompanionCLICreated", "CodeCompanionCLIOpened", "CodeCompanionCLISent"):
        assert event in names
    sent = [e for e in editor.events() if e["event"] == "CodeCompanionCLISent"][0]
    assert sent["data"]["text"] == "What does @app.py do?\n"

    # a second prompt goes to the same CLI, in the background, and the bang submits it
    editor.nvim.command(f"buffer {source}")
    editor.lua("require('codecompanion').cli('#{buffers} and more', { focus = false, submit = true })")
    assert typed(logs["fake"], b"\r").endswith(b"the files I've shared: @app.py and more\r")
    assert editor.nvim.current.buffer.number == source
    assert cli_buffers(editor) == [buf]


def test_a_visual_selection_goes_first_as_a_block_and_bang_submits(cli_setup):
    editor, logs = cli_setup
    editor.nvim.command("1,2CodeCompanionCLI! Explain this")
    expected = (
        b"- Selected code from @app.py (lines 1-2):\n````python\ndef add(a, b):\n    return a + b\n````\nExplain this\r"
    )
    assert typed(logs["fake"], b"\r") == expected


def test_another_agent_by_name_and_the_ask_buffer(cli_setup):
    editor, logs = cli_setup
    editor.nvim.command("CodeCompanionCLI agent=other hello other")
    assert typed(logs["other"], b"\n") == b"hello other\n"
    assert not logs["fake"].exists()
    other = editor.nvim.current.buffer.number

    editor.nvim.command("wincmd p")
    editor.nvim.command("CodeCompanionCLI agent=other Ask")
    assert editor.lua("return vim.bo.filetype") == "codecompanion_input"
    editor.nvim.current.buffer[:] = ["from the prompt buffer", "two lines"]
    editor.nvim.command("write!")
    assert typed(logs["other"], b"\r").endswith(b"from the prompt buffer\ntwo lines\r")
    assert cli_buffers(editor) == [other]  # the agent's CLI that runs, not a new one


def test_braces_cycle_chats_and_cli_terminals_and_toggle_hides_and_shows(cli_setup):
    editor, logs = cli_setup
    editor.nvim.command("CodeCompanionChat")
    chat = editor.nvim.current.buffer.number
    editor.nvim.command("CodeCompanionCLI")
    [cli] = cli_buffers(editor)
    editor.nvim.command("stopinsert")
    editor.wait_for(lambda: editor.nvim.api.get_mode()["mode"] != "t", what="normal mode")
    editor.nvim.input("}")
    editor.wait_for(lambda: editor.nvim.current.buffer.number == chat, what="} to the chat")
    editor.nvim.input("}")
    editor.wait_for(lambda: editor.nvim.current.buffer.number == cli, what="} back to the CLI")

    visible = "return #vim.fn.win_findbuf(...) > 0"
    editor.lua("require('codecompanion').toggle_chat()")  # the chat's own window hidden
    assert editor.lua(visible, chat) is False
    editor.lua("require('codecompanion').toggle()")
    assert editor.lua(visible, cli) is False
    editor.lua("require('codecompanion').toggle()")
    assert editor.lua(visible, cli) is True  # the CLI was used last: it comes back, not the chat
    assert editor.lua(visible, chat) is False
    assert "CodeCompanionCLIHidden" in editor.event_names()


def test_closing_the_cli_ends_the_agents_whole_process_group(cli_setup):
    editor, logs = cli_setup
    editor.nvim.command("CodeCompanionCLI")
    [buf] = cli_buffers(editor)
    child_file = Path(str(logs["fake"]) + ".child")
    child = int(wait_until(lambda: child_file.exists() and child_file.read_text(), 15, "the agent's child"))
    os.kill(child, 0)  # alive
    editor.nvim.command(f"bwipeout! {buf}")
    editor.wait_event("CodeCompanionCLIClosed")

    def gone() -> bool:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return True
        stat = Path(f"/proc/{child}/stat")
        return stat.exists() and stat.read_text().split(") ")[1].startswith("Z")  # reaped later

    wait_until(gone, 15, "the agent's child ended with it")
    assert cli_buffers(editor) == []


def test_an_agent_not_configured_or_not_installed_is_told(cli_setup):
    editor, _logs = cli_setup
    editor.nvim.command("CodeCompanionCLI agent=nobody hi")
    editor.lua("require('codecompanion_py').config.interactions.cli.agents.gone = { cmd = 'no-such-cli-here' }")
    editor.nvim.command("CodeCompanionCLI agent=gone hi")
    editor.lua("require('codecompanion_py').config.interactions.cli.agents.quits = { cmd = 'false' }")
    editor.nvim.command("CodeCompanionCLI agent=quits")
    editor.wait_event("CodeCompanionCLIClosed")
    notes = editor.wait_for(lambda: len(editor.lua("return _G.cc_notes")) == 3 and editor.lua("return _G.cc_notes"))
    assert notes == [
        'CodeCompanion: no CLI agent "nobody" in interactions.cli.agents',
        'CodeCompanion: the CLI agent gone runs "no-such-cli-here", which is not on PATH',
        "CodeCompanion: the CLI agent quits exited with code 1",
    ]
    assert cli_buffers(editor) == []


def test_a_file_the_agent_edits_is_reloaded_in_its_buffer(cli_setup):
    editor, logs = cli_setup
    source = editor.nvim.current.buffer.number
    editor.lua("require('codecompanion').cli('EDIT please', { focus = false, submit = true })")
    typed(logs["fake"], b"\r")
    editor.wait_for(lambda: editor.lines(source) == ["edited = True"], what="app.py reloaded")
