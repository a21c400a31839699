"""A CodeCompanion.nvim user's config, pasted as it is: `require("codecompanion")` loads this
plugin, and each option that does nothing here is named (tests/e2e/test_config_notice.py: how)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.nvim

CAPTURE_NOTIFY = """
_G.notices = {}
vim.notify = function(msg, level) table.insert(_G.notices, { msg = msg, level = level }) end
"""

# Pieces of CodeCompanion 19's documentation examples, as a user would combine them.
DOCS_CONFIG = """{
  adapters = {
    http = {
      anthropic = function()
        return require("codecompanion.adapters").extend("anthropic", {
          env = { api_key = "cmd:echo test-key" },
        })
      end,
      opts = { show_presets = false, show_model_choices = true },
    },
    acp = {
      claude_code = function()
        return require("codecompanion.adapters").extend("claude_code", {
          env = { CLAUDE_CODE_OAUTH_TOKEN = "my-oauth-token" },
        })
      end,
    },
  },
  interactions = {
    chat = {
      adapter = { name = "anthropic", model = "claude-sonnet-4-20250514" },
      roles = { llm = "CodeCompanion", user = "Me" },
      keymaps = { send = { modes = { n = "<C-s>", i = "<C-s>" } }, close = { modes = { n = "<C-c>" } } },
      tools = { opts = { default_tools = { "read_file" } } },
      slash_commands = { ["file"] = { opts = { provider = "snacks" } } },
      opts = { completion_provider = "cmp" },
    },
    inline = { adapter = "copilot" },
  },
  display = {
    chat = { window = { layout = "vertical", position = "right", width = 0.45 }, show_settings = false },
    action_palette = { provider = "telescope" },
    diff = { enabled = true },
  },
  opts = { log_level = "DEBUG", language = "English" },
}"""


def notices(editor) -> list[str]:
    return [n["msg"] for n in editor.lua("return _G.notices")]


def test_a_pasted_config_names_only_what_does_nothing_here(editor):
    editor.lua(f'require("codecompanion").setup({DOCS_CONFIG})')
    # the palette and the prompt library are honoured; display.diff.enabled = true is CodeCompanion's default
    assert editor.lua(f'return require("codecompanion_py.config_check").unsupported({DOCS_CONFIG})') == []
    # the config reached the plugin: the adapter a new chat uses
    assert editor.lua('return require("codecompanion_py").chat_adapter()') == {
        "name": "anthropic",
        "model": "claude-sonnet-4-20250514",
    }


def test_typos_and_what_is_not_here_are_caught(editor):
    named = editor.lua(
        'return require("codecompanion_py.config_check").unsupported({ opts = { log_levl = "DEBUG" }, '
        "extensions = { x = {} }, interactions = { cli = { providers = { mine = {} } } } })"
    )
    assert named == [
        {
            "key": "interactions.cli.providers.mine",
            "why": "CLI agents run in a Neovim terminal here (the terminal provider); providers of your own are not read",
        },
        {"key": "opts.log_levl", "why": "not a CodeCompanion option"},
    ]


def test_the_code_reads_only_options_the_report_calls_honoured(editor):
    """options.lua is the one table: what reads an option through it is never reported."""
    editor.lua('require("codecompanion").setup({ display = { action_palette = { provider = "mini_pick" } } })')
    options = 'require("codecompanion_py.options")'
    assert editor.lua(f'return {options}.get("display.action_palette.provider")') == "mini_pick"
    assert editor.lua(f'return {options}.get("display.chat.window.width")') == 0.45  # a default
    refused = editor.lua(f'local ok, err = pcall({options}.get, "display.diff.window"); return {{ ok, err }}')
    assert refused[0] is False and "display.diff.window is read but not honoured" in refused[1]
    honoured = 'require("codecompanion_py.config_check").unsupported({ prompt_library = { x = {} }, display = '
    assert (
        editor.lua(f"return {honoured}{{ action_palette = {{ opts = {{ show_preset_prompts = false }} }} }} }})") == []
    )


def test_codecompanion_modules_resolve_to_this_plugin(editor):
    assert editor.lua('return require("codecompanion") == require("codecompanion_py.api")')
    editor.nvim.command("checkhealth codecompanion")
    report = editor.text()
    assert 'require("codecompanion") loads this plugin' in report


def test_an_installed_codecompanion_keeps_its_own_modules(editor, tmp_path):
    """Both installed: the original wins, and :checkhealth says why."""
    original = tmp_path / "codecompanion.nvim"
    (original / "lua" / "codecompanion").mkdir(parents=True)
    (original / "lua" / "codecompanion" / "init.lua").write_text("return { the_original = true }\n")
    rtp = editor.nvim.options["runtimepath"]
    # after this plugin on 'runtimepath', so Neovim finds ours first and ours must defer
    editor.nvim.options["runtimepath"] = rtp + "," + str(original)
    assert editor.lua('return require("codecompanion").the_original') is True
    editor.nvim.command("checkhealth codecompanion_py")
    report = editor.text()
    assert "CodeCompanion.nvim is installed too" in report
    assert str(original) in report


def test_the_docs_llama_cpp_adapter_and_an_acp_agent_with_codecompanions_helpers_load(editor):
    """Two of CodeCompanion's own examples: an adapter whose name holds a dot, and an agent
    defined with its ACP helpers module."""
    editor.lua(CAPTURE_NOTIFY)
    editor.lua("""require("codecompanion").setup({
      adapters = {
        http = { ["llama.cpp"] = function()
          return require("codecompanion.adapters").extend("openai_compatible", {
            env = { url = "http://127.0.0.1:8080", api_key = "TERM", chat_url = "/v1/chat/completions" },
          })
        end },
        acp = { my_agent = function()
          local helpers = require("codecompanion.adapters.acp.helpers")
          return { name = "my_agent", formatted_name = "MyAgent", type = "acp",
            commands = { default = { "myagent", "--acp" } },
            handlers = { form_messages = function(self, messages, caps) return helpers.form_messages(self, messages, caps) end } }
        end },
      },
      interactions = { chat = { adapter = "llama.cpp" } },
    })""")
    for name in ("llama.cpp", "my_agent"):
        editor.nvim.command(f"CodeCompanionChat adapter={name}")
        buf = editor.nvim.current.buffer.number
        ready = f"local c = require('codecompanion_py.chat').chats[{buf}] return c.engine_ready and c.adapter.name"
        editor.wait_for(lambda code=ready, name=name: editor.lua(code) == name, what=f"the {name} chat ready")
    assert notices(editor) == []


def test_a_filetype_handler_sets_the_chat_windows_options_before_chat_created(editor):
    """`after/ftplugin/codecompanion.lua` with `vim.opt_local.wrap = false` and the like, as
    CodeCompanion users write them: the filetype is set in the chat's window, before the
    ChatCreated autocmd, whose handlers then find the window current."""
    editor.lua("""
      vim.api.nvim_create_autocmd("FileType", { pattern = "codecompanion", command = "setlocal number conceallevel=2 nowrap" })
      vim.api.nvim_create_autocmd("User", { pattern = "CodeCompanionChatCreated", callback = function()
        _G.created_in = { win = vim.api.nvim_get_current_win(), ft = vim.bo.filetype }
      end })""")
    source = editor.nvim.current.window
    editor.nvim.command("CodeCompanionChat")
    chat = editor.nvim.current.window
    assert chat.handle != source.handle
    assert chat.options["number"] and chat.options["conceallevel"] == 2
    assert not chat.options["wrap"]  # the handler's, over `display.chat.window.opts` (wrap by default)
    assert not source.options["number"] and source.options["conceallevel"] == 0
    assert editor.lua("return _G.created_in") == {"win": chat.handle, "ft": "codecompanion"}

    # hidden and shown again (a new window, given the window options afresh), the ftplugin's
    # options come after them again
    editor.nvim.command("CodeCompanionChat Toggle")
    assert editor.nvim.current.window.handle == source.handle
    editor.nvim.command("CodeCompanionChat Toggle")
    again = editor.nvim.current.window
    assert again.handle != source.handle and again.options["number"] and not again.options["wrap"]
