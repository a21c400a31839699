"""`#`, `@` and `/` completion through nvim-cmp and blink.cmp, each installed from its own
repository into the runtimepath (CODECOMPANION_TEST_PLUGINS names a folder holding
`nvim-cmp/` and `blink.cmp/` checkouts; without it these tests cannot run: the plugins come
from GitHub, which a machine with only package registries cannot reach)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread
from tests.e2e.test_chat_surface import chat_config, setup

pytestmark = pytest.mark.nvim

PLUGINS = Path(os.environ.get("CODECOMPANION_TEST_PLUGINS", "/nonexistent"))


def plugin(name: str) -> Path:
    path = PLUGINS / name
    if not (path / "lua").is_dir():
        pytest.skip(f"{name} is not installed (set CODECOMPANION_TEST_PLUGINS to a folder holding its checkout)")
    return path


def test_nvim_cmp_offers_context_tools_and_slash_commands_and_runs_them(editor, tmp_path):
    path = plugin("nvim-cmp")
    (tmp_path / "app.py").write_text("x = 1\n")
    with ServerThread(ScriptedServer.sequence([])) as server:
        editor.nvim.command(f"set runtimepath+={path}")
        editor.lua("require('cmp').setup({ sources = {} })")
        setup(editor, server.url, chat_config(""))
        editor.lua("vim.ui.select = function(items, opts, on_choice) on_choice(items[1], 1) end")
        editor.nvim.command(f"cd {tmp_path}")
        editor.nvim.command("CodeCompanionChat")

        def entries():
            return editor.lua(
                "return vim.tbl_map(function(e) return e:get_completion_item().label end, require('cmp').get_entries())"
            )

        editor.nvim.command("normal! G")
        editor.nvim.input("AShare #{buf")
        editor.wait_for(lambda: editor.lines()[-1] == "Share #{buf", what="typed")
        editor.lua("require('cmp').complete()")
        assert set(editor.wait_for(lambda: entries() or None, what="cmp's menu")) == {"#{buffer}", "#{buffers}"}
        editor.lua("require('cmp').confirm({ select = true })")
        editor.wait_for(lambda: editor.lines()[-1] == "Share #{buffer}", what="accepted")

        editor.nvim.input(" /fi")
        editor.lua("require('cmp').complete()")
        assert editor.wait_for(lambda: entries() or None, what="cmp's menu") == ["/file"]
        editor.lua("require('cmp').confirm({ select = true })")  # /file runs: the picker answers app.py
        editor.wait_for(lambda: editor.lines()[-1] == "Share #{buffer} #{file:app.py}", what="the command ran")


def test_blink_cmp_offers_context_tools_and_slash_commands_and_runs_them(editor, tmp_path):
    path = plugin("blink.cmp")
    (tmp_path / "app.py").write_text("x = 1\n")
    with ServerThread(ScriptedServer.sequence([])) as server:
        editor.nvim.command(f"set runtimepath+={path}")
        editor.lua("require('blink.cmp').setup({ fuzzy = { implementation = 'lua' }, sources = { default = {} } })")
        setup(editor, server.url, chat_config(""))
        editor.lua("vim.ui.select = function(items, opts, on_choice) on_choice(items[1], 1) end")
        editor.nvim.command(f"cd {tmp_path}")
        editor.nvim.command("CodeCompanionChat")

        def entries():
            return editor.lua(
                "return vim.tbl_map(function(i) return i.label end, require('blink.cmp.completion.list').items or {})"
            )

        editor.nvim.command("normal! G")
        editor.nvim.input("AShare #{buf")
        editor.wait_for(lambda: editor.lines()[-1] == "Share #{buf", what="typed")
        editor.lua("require('blink.cmp').show()")
        assert set(editor.wait_for(lambda: entries() or None, what="blink's menu")) == {"#{buffer}", "#{buffers}"}
        editor.lua("require('blink.cmp').select_and_accept()")
        editor.wait_for(lambda: editor.lines()[-1] == "Share #{buffer}", what="accepted")

        editor.nvim.input(" /fi")
        editor.lua("require('blink.cmp').show()")
        assert editor.wait_for(lambda: entries() == ["/file"] or None, what="blink's menu")
        editor.lua("require('blink.cmp').select_and_accept()")
        editor.wait_for(lambda: editor.lines()[-1] == "Share #{buffer} #{file:app.py}", what="the command ran")


PICKERS = {
    "telescope": ("telescope.nvim", "plenary.nvim"),
    "fzf_lua": ("fzf-lua",),
    "mini_pick": ("mini.pick",),
    "snacks": ("snacks.nvim",),
}
SETUP = {
    "telescope": "",
    "fzf_lua": "",
    "mini_pick": "require('mini.pick').setup()",
    "snacks": "require('snacks').setup({ picker = { enabled = true } })",
}


@pytest.mark.parametrize("provider", list(PICKERS))
def test_slash_commands_pick_through_each_picker_plugin(editor, tmp_path, provider):
    paths = [plugin(name) for name in PICKERS[provider]]
    if provider == "fzf_lua" and not shutil.which("fzf"):
        pytest.skip("fzf-lua needs the fzf program")
    (tmp_path / "app.py").write_text("x = 1\n")
    with ServerThread(ScriptedServer.sequence([])) as server:
        for path in paths:
            editor.nvim.command(f"set runtimepath+={path}")
        if SETUP[provider]:
            editor.lua(SETUP[provider])
        setup(editor, server.url, chat_config(""))
        editor.lua("_G.cc_default_used = false; vim.ui.select = function() _G.cc_default_used = true end")
        editor.nvim.command(f"cd {tmp_path}")
        editor.nvim.command("CodeCompanionChat")
        chat = editor.nvim.current.buffer.number
        assert editor.lua("return require('codecompanion_py.pickers').provider()") == provider
        editor.nvim.command("normal! G")
        run = "require('codecompanion_py.chat.slash').run(require('codecompanion_py.chat').chats[...], 'file')"
        editor.nvim.exec_lua(run, chat, async_=True)  # mini.pick's runs until it has its keys
        editor.wait_for(lambda: editor.nvim.current.buffer.number != chat, what="the picker open")
        shown = "return table.concat(vim.tbl_map(function(w) return table.concat("
        shown += "vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false), '\\n') end,"
        shown += " vim.api.nvim_list_wins()), '\\n')"
        editor.wait_for(lambda: "app.py" in editor.lua(shown), what="the picker listing app.py")
        editor.nvim.input("<CR>")
        editor.wait_for(lambda: editor.lines(chat)[-1] == "#{file:app.py}", what="the picked file inserted")
        assert editor.lua("return _G.cc_default_used") is False
