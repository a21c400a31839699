"""`#`, `@` and `/` completion through nvim-cmp and blink.cmp, each installed from its own
repository into the runtimepath (CODECOMPANION_TEST_PLUGINS names a folder holding
`nvim-cmp/` and `blink.cmp/` checkouts; without it these tests cannot run: the plugins come
from GitHub, which a machine with only package registries cannot reach)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread, json_reply
from tests.e2e.test_chat_surface import chat_config, setup
from tests.e2e.test_completion import completion_config

pytestmark = pytest.mark.nvim

PLUGINS = Path(os.environ.get("CODECOMPANION_TEST_PLUGINS", "/nonexistent"))


def plugin(name: str) -> Path:
    path = PLUGINS / name
    if not (path / "lua").is_dir():
        pytest.skip(f"{name} is not installed (set CODECOMPANION_TEST_PLUGINS to a folder holding its checkout)")
    return path


# How each completion plugin is set up, shows its menu, lists it and accepts the first item.
COMPLETERS = {
    "nvim-cmp": {
        "setup": "require('cmp').setup({ sources = {} })",
        "show": "require('cmp').complete()",
        "labels": "return vim.tbl_map(function(e) return e:get_completion_item().label end, require('cmp').get_entries())",
        "accept": "require('cmp').confirm({ select = true })",
    },
    "blink.cmp": {
        "setup": "require('blink.cmp').setup({ fuzzy = { implementation = 'lua' }, sources = { default = {} } })",
        "show": "require('blink.cmp').show()",
        "labels": "return vim.tbl_map(function(i) return i.label end, require('blink.cmp.completion.list').items or {})",
        "accept": "require('blink.cmp').select_and_accept()",
    },
}


@pytest.mark.parametrize("name", list(COMPLETERS))
def test_a_completion_plugin_offers_context_and_slash_commands_and_runs_them(editor, tmp_path, name):
    path, lua = plugin(name), COMPLETERS[name]
    (tmp_path / "app.py").write_text("x = 1\n")
    with ServerThread(ScriptedServer.sequence([])) as server:
        editor.nvim.command(f"set runtimepath+={path}")
        editor.lua(lua["setup"])
        setup(editor, server.url, chat_config(""))
        editor.lua("vim.ui.select = function(items, opts, on_choice) on_choice(items[1], 1) end")
        editor.nvim.command(f"cd {tmp_path}")
        editor.nvim.command("CodeCompanionChat")

        def menu(expected):
            editor.lua(lua["show"])
            labels = editor.wait_for(lambda: editor.lua(lua["labels"]) or None, what=f"{name}'s menu")
            assert set(labels) == set(expected)

        editor.nvim.command("normal! G")
        editor.nvim.input("AShare #{buf")
        editor.wait_for(lambda: editor.lines()[-1] == "Share #{buf", what="typed")
        menu(["#{buffer}", "#{buffers}"])
        editor.lua(lua["accept"])
        editor.wait_for(lambda: editor.lines()[-1] == "Share #{buffer}", what="accepted")

        editor.nvim.input(" /fi")
        menu(["/file"])
        editor.lua(lua["accept"])  # /file runs: the picker answers app.py
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


# Edit predictions offered in each menu (completion/blink.lua, completion/cmp.lua).
PREDICTIONS = {
    "nvim-cmp": "require('cmp').setup({ sources = { { name = 'codecompanion_completion' } } })",
    "blink.cmp": "require('blink.cmp').setup({ fuzzy = { implementation = 'lua' }, sources = { default = "
    "{ 'codecompanion_completion' }, providers = { codecompanion_completion = { name = 'CodeCompanion', "
    "module = 'codecompanion_py.completion.blink' } } } })",
}


@pytest.mark.parametrize("name", list(PREDICTIONS))
def test_a_completion_plugin_offers_edit_predictions(editor, tmp_path, name):
    path, lua = plugin(name), COMPLETERS[name]
    asked = []

    def fim(request):
        asked.append(request.json())
        return json_reply({"choices": [{"index": 0, "text": "ute(total)\nprint(value)"}]})

    with ServerThread(ScriptedServer(fim)) as server:
        editor.nvim.command(f"set runtimepath+={path}")
        editor.lua(PREDICTIONS[name])
        # the ghost text waits long: the menu alone asks here
        setup(editor, server.url, completion_config("debounce = 60000"))
        editor.nvim.command(f"edit {tmp_path / 'app.py'}")
        editor.nvim.input("i名前 = comp")  # multi-byte before the cursor: the items' columns are bytes
        editor.wait_for(lambda: editor.lines() == ["名前 = comp"], what="typed")
        editor.lua(lua["show"])
        labels = editor.wait_for(lambda: editor.lua(lua["labels"]) or None, what=f"{name}'s menu")
        assert labels == ["compute(total)"]
        assert asked[-1]["prompt"].endswith("名前 = comp")
        editor.lua(lua["accept"])
        editor.wait_for(lambda: editor.lines() == ["名前 = compute(total)", "print(value)"], what="accepted")
