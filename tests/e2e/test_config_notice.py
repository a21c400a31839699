"""A config pasted from CodeCompanion starts Neovim without a prompt: options set to what
CodeCompanion does anyway are never named, and those that would behave otherwise are named
in one line once startup is over, once per distinct set (then :checkhealth alone lists them)."""

from __future__ import annotations

import pynvim
import pytest

from codecompanion_py.demo.launch import nvim_binary, write_init
from tests.e2e.conftest import Editor, quit_nvim

pytestmark = pytest.mark.nvim

CHECK = 'require("codecompanion_py.config_check")'
# Set after everything startup scheduled (the notice among it) has run.
SETTLED = (
    'vim.api.nvim_create_autocmd("VimEnter", { once = true, callback = function() '
    "vim.schedule(function() vim.schedule(function() vim.g.settled = true end) end) end })\n"
)

# Setups in the shapes CodeCompanion's documentation gives them, as users combine them.
PASTED = {
    "defaults spelled out": """{
  interactions = { chat = { adapter = "anthropic", tools = { opts = { auto_submit_errors = true,
    auto_submit_success = true, notify_on_approval = true } }, opts = { wait_timeout = 2e6 } } },
  display = { diff = { enabled = true, threshold_for_chat = 6, word_highlights = { additions = true } },
    chat = { show_context = true, separator = "─" },
    action_palette = { width = 95, height = 10, prompt = "Prompt ", opts = { title = "CodeCompanion actions" } } },
  opts = { log_level = "ERROR", submit_delay = 500,
    triggers = { tools = "@", editor_context = "#", slash_commands = "/", acp_slash_commands = "\\\\" } },
}""",
    "an adapter extended with a command key": """{
  adapters = { http = { anthropic = function()
    return require("codecompanion.adapters").extend("anthropic", { env = { api_key = "cmd:echo not-a-key" } })
  end } },
  interactions = { chat = { adapter = "anthropic" }, inline = { adapter = "anthropic" } },
}""",
    "older strategies with keymaps": """{
  strategies = {
    chat = { adapter = "openai", keymaps = { send = { modes = { n = "<C-s>" } }, close = { modes = { n = "q" } } } },
    inline = { adapter = "openai", keymaps = { stop = { modes = { n = "q" } } } },
  },
}""",
    "many options that do nothing here": """{
  display = { diff = { provider = "mini_diff", window = { layout = "float" } }, chat = { fold_context = true,
    show_header_separator = true, window = { sticky = true } }, input = { title = "Ask" } },
  interactions = { code_review = { enabled = true }, cli = { agent = "claude_code" },
    chat = { opts = { blank_prompt = "Go on", yank_jump_delay_ms = 100 } } },
  opts = { per_project_config = { files = { ".codecompanion.lua" } }, triggers = { tools = "!" } },
  extensions = { history = { enabled = true, opts = { picker = "telescope" } } },
}""",
    "rules, prompts and MCP": """{
  rules = { default = { description = "Mine", files = { "AGENTS.md" } }, opts = { chat = { autoload = "default" } } },
  prompt_library = { markdown = { dirs = { "~/prompts" } } },
  mcp = { servers = { fs = { cmd = { "mcp-fs" } } }, opts = { default_servers = {} } },
}""",
}


@pytest.fixture
def start(nvim_home, monkeypatch, tmp_path):
    """`start(setup_lua)`: Neovim started with `setup_lua` in its init.lua, as a user's is;
    its state directory (where the notice is remembered) is this test's."""
    _, env = nvim_home
    for key in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    running: list[tuple[pynvim.Nvim, int]] = []

    def started(setup_lua: str, columns: int = 80) -> Editor:
        init = write_init(tmp_path / "init.lua")
        setup = f'vim.o.columns = {columns}\nrequire("codecompanion").setup({setup_lua})\n'
        init.write_text(init.read_text() + SETTLED + setup)
        nvim = pynvim.attach("child", argv=[nvim_binary(), "--embed", "--headless", "-u", str(init)])
        running.append((nvim, nvim.call("getpid")))
        editor = Editor(nvim)
        editor.wait_for(lambda: editor.lua("return vim.g.settled"), what="startup to settle")
        return editor

    yield started
    for nvim, pid in running:
        quit_nvim(nvim, pid)


def settle(editor: Editor) -> None:
    """Wait until what was scheduled before now has run."""
    editor.lua("vim.g.settled = false; vim.schedule(function() vim.g.settled = true end)")
    editor.wait_for(lambda: editor.lua("return vim.g.settled"), what="the scheduled work")


def messages(editor: Editor) -> list[str]:
    output = editor.lua("return vim.api.nvim_exec2('messages', { output = true }).output")
    return [line for line in output.splitlines() if line.strip()]


@pytest.mark.parametrize("name", list(PASTED))
def test_a_pasted_config_starts_without_a_prompt(start, name):
    editor = start(PASTED[name])
    # headless Neovim never waits for ENTER, so what would make it wait is checked instead:
    # more than one line, or a line wider than the command line, at startup
    shown = messages(editor)
    assert len(shown) <= 1, shown
    space = editor.lua("return vim.v.echospace")
    assert all(editor.lua("return vim.fn.strdisplaywidth(...)", line) <= space for line in shown), shown


def test_options_set_to_codecompanions_defaults_are_never_named(start):
    editor = start(PASTED["defaults spelled out"])
    assert messages(editor) == []
    assert editor.lua(f"return {CHECK}.unsupported(require('codecompanion_py').user_opts)") == []
    # a value that does change something is named
    named = editor.lua(f"return {CHECK}.unsupported({{ opts = {{ triggers = {{ tools = '!' }} }} }})")
    assert [item["key"] for item in named] == ["opts.triggers"]
    named = editor.lua(f"return {CHECK}.unsupported({{ display = {{ action_palette = {{ width = 60 }} }} }})")
    assert named == [{"key": "display.action_palette.width", "why": "the palette is the picker's own window here"}]


def test_what_changes_behaviour_is_named_in_one_line_once(start):
    editor = start(PASTED["many options that do nothing here"], columns=120)
    shown = messages(editor)
    # an extension not installed comes first (its whole line is in :checkhealth), then the options
    assert len(shown) == 1 and shown[0].startswith("CodeCompanion: extension history is not installed: no codecomp")
    assert shown[0].endswith("… (:checkhealth codecompanion)")  # cut to fit beside the ruler: no ENTER
    assert editor.lua("return vim.fn.strdisplaywidth(...)", shown[0]) <= editor.lua("return vim.v.echospace")
    # the same setup() again, in this session or the next, says nothing more
    editor.lua(f'require("codecompanion").setup({PASTED["many options that do nothing here"]})')
    settle(editor)
    assert messages(editor) == shown
    editor = start(PASTED["many options that do nothing here"])
    assert messages(editor) == []
    # ... while :checkhealth lists every one, with what it does not do
    editor.nvim.command("checkhealth codecompanion")
    report = editor.text()
    assert "display.diff.provider has no effect here: this diff option is not read here" in report
    assert "extension history is not installed: no codecompanion._extensions.history on the runtimepath" in report
    assert "opts.triggers has no effect here" in report
    # a different set is news: it is named
    editor = start(PASTED["many options that do nothing here"].replace("history = {", "history_off = {"), 250)
    assert messages(editor)[0].startswith("CodeCompanion: extension history_off is not installed: no codecompanion.")
    assert "; ignores display.chat.fold_context, display.chat" in messages(editor)[0]
    editor = start('{ interactions = { background = { gates = { judge = { action = "mine" } } } } }', columns=120)
    assert messages(editor) == [
        "CodeCompanion ignores interactions.background.gates.judge.action (:checkhealth codecompanion)"
    ]
