"""The engine's host starts in the background once a UI is attached (`opts.background_start`),
never in a headless script, and a command sent while it starts runs once it is ready.

Neovim here has no remote-plugin manifest, so the engine runs as the plugin's own host job
(rpc.lua), the way a user's install runs it; pynvim's `ui_attach` stands in for a TUI or GUI."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from codecompanion_py.demo.launch import write_init
from tests.e2e.conftest import Editor, _exited, quit_nvim
from tests.waiting import wait_until

pytestmark = pytest.mark.nvim

HOST = "return require('codecompanion_py.rpc').host()"


@pytest.fixture
def start_nvim(tmp_path, monkeypatch, spawn):
    """Starts a headless Neovim whose init calls setup(`opts_lua`); no rplugin manifest."""
    for name in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    return lambda opts_lua: spawn(write_init(tmp_path / "init.lua", opts_lua))


def flush(editor: Editor) -> None:
    """Waits until what Neovim had scheduled so far has run."""
    editor.lua("vim.g.flushed = false; vim.schedule(function() vim.g.flushed = true end)")
    editor.wait_for(lambda: editor.nvim.vars["flushed"], what="the scheduled callbacks")


def chat_with_demo(editor: Editor) -> None:
    editor.nvim.command("CodeCompanionChat hi")
    done = editor.wait_event("CodeCompanionChatDone", timeout=30)
    assert done["data"]["status"] == "success"
    assert "Hello from the **demo** adapter" in editor.text()


def test_no_engine_in_a_headless_script_and_one_started_once_a_ui_attaches(start_nvim):
    editor = start_nvim('{ interactions = { chat = { adapter = "demo" } } }')
    flush(editor)
    assert editor.lua(HOST) is None  # a script pays nothing

    editor.nvim.ui_attach(80, 24, rgb=True)
    host = editor.wait_for(lambda: editor.lua(HOST), what="the engine's host to start")
    assert editor.lua("return vim.api.nvim_get_mode().blocking") is False  # started without a prompt

    chat_with_demo(editor)
    assert editor.lua(HOST)["pid"] == host["pid"]  # the chat used the host started ahead of it


def test_background_start_false_keeps_the_start_on_first_use(start_nvim):
    editor = start_nvim('{ interactions = { chat = { adapter = "demo" } }, opts = { background_start = false } }')
    # runs after setup()'s own UIEnter handling would have, had it registered any
    editor.lua(
        "vim.g.ui_seen = false; vim.api.nvim_create_autocmd('UIEnter', { callback = function() "
        "vim.schedule(function() vim.g.ui_seen = true end) end })"
    )
    editor.nvim.ui_attach(80, 24, rgb=True)
    editor.wait_for(lambda: editor.nvim.vars["ui_seen"], what="UIEnter")
    flush(editor)
    assert editor.lua(HOST) is None
    # the option is known: no notice (one would have been shown at setup, before the UI came)
    assert editor.lua("return vim.api.nvim_exec2('messages', { output = true }).output") == ""

    chat_with_demo(editor)
    assert editor.lua(HOST) is not None


def test_a_command_sent_while_the_engine_starts_runs_once_it_is_ready(start_nvim, tmp_path):
    # A Python that waits for the test's word before it runs the host: the command below is
    # surely sent while the host is starting, whatever the machine's speed.
    gate = tmp_path / "go"
    python = tmp_path / "slow-python"
    python.write_text(f'#!/bin/sh\nwhile [ ! -e "{gate}" ]; do sleep 0.02; done\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    editor = start_nvim(f'{{ interactions = {{ chat = {{ adapter = "demo" }} }}, opts = {{ python = "{python}" }} }}')
    editor.nvim.ui_attach(80, 24, rgb=True)
    host = editor.wait_for(lambda: editor.lua(HOST), what="the engine's host to start")

    editor.nvim.command("CodeCompanionChat hi")  # returns at once: the chat waits for the engine
    assert "CodeCompanionChatDone" not in editor.event_names()
    Path(gate).touch()
    done = editor.wait_event("CodeCompanionChatDone", timeout=30)
    assert done["data"]["status"] == "success"
    assert "Hello from the **demo** adapter" in editor.text()
    assert editor.lua(HOST)["pid"] == host["pid"]  # one host: the command did not start a second


def test_quitting_while_the_engine_starts_leaves_no_host_behind(start_nvim, tmp_path):
    python = tmp_path / "never-python"  # a host that never gets past its start
    python.write_text("#!/bin/sh\nwhile :; do sleep 0.02; done\n")
    python.chmod(0o755)
    editor = start_nvim(f'{{ opts = {{ python = "{python}" }} }}')
    editor.nvim.ui_attach(80, 24, rgb=True)
    host = editor.wait_for(lambda: editor.lua(HOST), what="the engine's host to start")

    quit_nvim(editor.nvim, editor.nvim.call("getpid"))
    wait_until(lambda: _exited(host["pid"]), 10, "the starting host to go with Neovim")
