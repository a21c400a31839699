"""The CLI interaction in real Neovim with real terminals: a scripted CLI stands in for an
agent (Claude Code, Codex). It puts its tty in raw mode as a TUI does, writes every byte it
reads to a log (so a test sees the prompt, the editor context and the Enter that submits
it), and starts a child in its own process group that only a group kill can stop."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from tests.e2e.test_chat_surface import setup
from tests.waiting import wait_until

pytestmark = pytest.mark.nvim

AGENT = textwrap.dedent(
    """
    import os, signal, subprocess, sys, tty
    log = sys.argv[1]
    with open(log + ".args", "w") as f:
        f.write(" ".join(sys.argv[2:]))
    # an orphan that ignores SIGHUP and SIGTERM: out of the agent's process tree (its parent
    # exits), gone only when its process group is killed
    subprocess.run([sys.executable, "-c",
        "import os, signal, sys, time\\n"
        "if os.fork(): os._exit(0)\\n"
        "signal.signal(signal.SIGHUP, signal.SIG_IGN); signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
        "open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)", log + ".child"])
    tty.setraw(0)
    for n in range(6):
        os.write(1, b"scripted agent ready, line %d\\r\\n" % n)
    while True:
        data = os.read(0, 4096)
        if not data:
            break
        with open(log, "ab") as f:
            f.write(data)
        os.write(1, data.replace(b"\\n", b"\\r\\n"))
    """
)


@pytest.fixture
def agent(tmp_path):
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    return script


def configure(editor, agent: Path, log: Path, extra: str = "") -> None:
    setup(
        editor,
        "http://127.0.0.1:9/v1",
        f"""interactions = {{
          chat = {{ adapter = "testllm" }},
          cli = {{
            agent = "scripted",
            agents = {{
              scripted = {{ cmd = "{sys.executable}", args = {{ "{agent}", "{log}", "default" }},
                description = "A scripted CLI", provider = "terminal" }},
              other = {{ cmd = "{sys.executable}", args = {{ "{agent}", "{log}.other", "other" }} }},
              missing = {{ cmd = "no-such-agent-cli" }},
              failing = {{ cmd = "{sys.executable}", args = {{ "-c", "import sys; sys.exit(3)" }} }},
            }},
          }},
        }},
        {extra}""",
    )


def received(log: Path, expected: str, timeout: float = 20.0) -> str:
    def has():
        text = log.read_bytes().decode() if log.exists() else ""
        return text if expected in text else None

    return wait_until(has, timeout, f"{expected!r} in {log}")


def terminals(editor) -> list[int]:
    return sorted(editor.lua("return vim.tbl_keys(require('codecompanion_py.cli').terminals)"))


def project(editor, tmp_path) -> Path:
    src = tmp_path / "proj"
    src.mkdir()
    (src / "main.lua").write_text("local a = 1\nlocal b = 2\nlocal c = 3\nreturn a + b + c\n")
    editor.nvim.command(f"cd {src}")
    editor.nvim.command("edit main.lua")
    return src


def test_prompt_and_this_reach_the_default_agent_unsubmitted(editor, agent, tmp_path):
    log = tmp_path / "log"
    configure(editor, agent, log)
    project(editor, tmp_path)
    editor.nvim.command("CodeCompanionCLI What does #{this} do?")
    text = received(log, "What does @main.lua do?")
    assert text.endswith("\n") and "\r" not in text  # sent, not submitted
    assert (tmp_path / "log.args").read_text() == "default"
    [buf] = terminals(editor)
    assert editor.nvim.api.buf_get_option(buf, "buftype") == "terminal"
    assert editor.nvim.api.get_current_buf().number == buf  # focused by default
    names = editor.event_names()
    assert names.index("CodeCompanionCLICreated") < names.index("CodeCompanionCLIOpened")
    sent = [e["data"] for e in editor.events() if e["event"] == "CodeCompanionCLISent"]
    assert sent == [{"bufnr": buf, "text": "What does @main.lua do?\n"}]


def test_bang_submits_and_a_range_sends_the_selection(editor, agent, tmp_path):
    log = tmp_path / "log"
    configure(editor, agent, log)
    project(editor, tmp_path)
    editor.nvim.command("2,3CodeCompanionCLI! Explain this")
    text = received(log, "\r")
    assert (
        text == "- Selected code from @main.lua (lines 2-3):\n````lua\nlocal b = 2\nlocal c = 3\n````\nExplain this\r"
    )


def test_lua_api_named_agent_focus_false_and_diagnostics(editor, agent, tmp_path):
    log = tmp_path / "log"
    configure(editor, agent, log)
    project(editor, tmp_path)
    editor.lua("""
      local ns = vim.api.nvim_create_namespace("cli_test")
      vim.diagnostic.set(ns, 0, { { lnum = 1, col = 0, message = "b is unused", severity = vim.diagnostic.severity.WARN } })
      require("codecompanion").cli("#{diagnostics} Can you fix these?", { agent = "other", focus = false, submit = true })
    """)
    text = received(Path(f"{log}.other"), "\r")
    assert text.startswith("the diagnostics in @main.lua Can you fix these?\n\nDiagnostics for @main.lua:\n")
    assert "b is unused" in text
    assert (tmp_path / "log.other.args").read_text() == "other"
    assert editor.nvim.api.buf_get_name(0).endswith("main.lua")  # focus = false: the cursor stayed
    # a second prompt naming that agent goes to the same terminal
    editor.lua('require("codecompanion").cli("again", { agent = "other", focus = false })')
    received(Path(f"{log}.other"), "again\n")
    assert len(terminals(editor)) == 1


def test_ask_sends_the_input_on_write_and_submits_on_bang_write(editor, agent, tmp_path):
    log = tmp_path / "log"
    configure(editor, agent, log)
    project(editor, tmp_path)
    editor.nvim.command("CodeCompanionCLI Ask")
    assert editor.nvim.current.buffer.options["filetype"] == "codecompanion_input"
    editor.nvim.current.buffer[:] = ["Look at #{this}", "please"]
    editor.nvim.command("write")
    received(log, "Look at @main.lua\nplease\n")
    editor.lua('require("codecompanion").cli({ prompt = true })')
    editor.nvim.input("<Up>")
    editor.wait_for(lambda: editor.lines() == ["Look at #{this}", "please"], what="the last prompt back")
    editor.nvim.command("write!")
    received(log, "please\r")


def test_toggle_and_cycling_across_a_chat_and_a_terminal(editor, agent, tmp_path):
    log = tmp_path / "log"
    configure(editor, agent, log)
    project(editor, tmp_path)
    editor.nvim.command("CodeCompanionChat")
    chat = editor.nvim.api.get_current_buf().number
    editor.nvim.command("stopinsert")
    editor.lua('require("codecompanion").cli()')
    [term] = terminals(editor)
    editor.wait_for(lambda: editor.nvim.api.get_current_buf().number == term, what="the terminal shown")
    editor.nvim.command("stopinsert")
    editor.nvim.input("}")
    editor.wait_for(lambda: editor.nvim.api.get_current_buf().number == chat, what="} to the chat")
    editor.nvim.input("{")
    editor.wait_for(lambda: editor.nvim.api.get_current_buf().number == term, what="{ back to the terminal")
    # toggle(): the CLI shows, so it hides; with nothing shown, the last toggled comes back
    editor.lua(f"local chats = require('codecompanion_py.chat'); chats.hide(chats.chats[{chat}])")
    editor.lua('require("codecompanion").toggle()')
    assert not editor.lua(f"return require('codecompanion_py.chat.window').visible({term})")
    assert "CodeCompanionCLIHidden" in editor.event_names()
    editor.lua('require("codecompanion").toggle()')
    assert editor.lua(f"return require('codecompanion_py.chat.window').visible({term})")
    assert not editor.lua(f"return require('codecompanion_py.chat.window').visible({chat})")
    assert editor.event_names().count("CodeCompanionCLIOpened") == 2


def test_close_kills_the_agents_process_group(editor, agent, tmp_path):
    log = tmp_path / "log"
    configure(editor, agent, log)
    project(editor, tmp_path)
    editor.lua('require("codecompanion").cli()')
    child_file = tmp_path / "log.child"
    wait_until(lambda: child_file.exists() and child_file.read_text(), 20, "the agent's child")
    child = int(child_file.read_text())
    [term] = terminals(editor)
    editor.lua(f"require('codecompanion_py.cli').close({term})")
    wait_until(lambda: not _alive(child), 20, "the child killed with the group")
    assert terminals(editor) == []
    assert not editor.nvim.api.buf_is_valid(term)
    closed = [e["data"] for e in editor.events() if e["event"] == "CodeCompanionCLIClosed"]
    assert closed == [{"bufnr": term}]


def test_a_missing_agent_or_command_is_one_clear_error(editor, agent, tmp_path):
    configure(editor, agent, tmp_path / "log")
    editor.nvim.command("CodeCompanionCLI agent=missing hello")
    editor.nvim.command("CodeCompanionCLI agent=nobody")
    notes = editor.lua("return _G.cc_notes")
    assert notes == [
        "CodeCompanion: CLI agent `missing`: the command `no-such-agent-cli` is not an executable on PATH",
        "CodeCompanion: CLI agent `nobody` not found in config (agents: failing, missing, other, scripted)",
    ]
    assert terminals(editor) == []


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def test_terminal_context_skips_the_agents_own_terminal(editor, agent, tmp_path):
    log = tmp_path / "log"
    configure(editor, agent, log)
    project(editor, tmp_path)
    editor.nvim.command("split | terminal echo tests failed: 3")
    editor.wait_for(lambda: "tests failed: 3" in editor.text(), what="the user's terminal output")
    editor.nvim.command("wincmd p")
    editor.lua('require("codecompanion").cli()')
    editor.nvim.command("wincmd p")
    editor.lua('require("codecompanion").cli("#{terminal} Fix it", { focus = false })')
    text = received(log, "Fix it")
    assert "- Latest terminal output:" in text and "tests failed: 3" in text
    assert "scripted agent ready" not in text
    assert os.path.exists(log)


def test_leaving_the_terminal_reloads_what_the_agent_wrote(editor, agent, tmp_path):
    configure(editor, agent, tmp_path / "log")
    src = project(editor, tmp_path)
    editor.lua('require("codecompanion").cli()')
    [term] = terminals(editor)
    (src / "main.lua").write_text("return 42\n")  # as the agent would edit it
    editor.nvim.command("wincmd p")
    editor.wait_for(lambda: editor.lines() == ["return 42"], what="main.lua reloaded")


def test_neovim_exiting_kills_the_agents_process_group(editor, agent, tmp_path):
    configure(editor, agent, tmp_path / "log")
    project(editor, tmp_path)
    editor.lua('require("codecompanion").cli()')
    child_file = tmp_path / "log.child"
    wait_until(lambda: child_file.exists() and child_file.read_text(), 20, "the agent's child")
    editor.nvim.command("qa!", async_=True)
    wait_until(lambda: not _alive(int(child_file.read_text())), 20, "the child killed as Neovim exits")


def test_codecompanions_cli_config_is_taken_and_only_a_provider_of_your_own_is_named(editor):
    check = "require('codecompanion_py.config_check')"
    documented = """{ interactions = { cli = {
        agent = "claude_code",
        agents = { claude_code = { cmd = "claude", args = {}, description = "Claude Code CLI", provider = "terminal" } },
        providers = { terminal = { path = "interactions.cli.providers.terminal", description = "Terminal CLI provider" } },
        keymaps = { next_chat = { modes = { n = "}" }, callback = "keymaps.next_chat", description = "Next" } },
        opts = { auto_insert = true, reload = true } } },
      display = { cli = { window = { layout = "vertical", width = 0.4, height = 0.6, opts = { list = false } } } } }"""
    assert editor.lua(f"return {check}.unsupported({documented})") == []
    own = "{ interactions = { cli = { providers = { mine = { path = 'my.provider' } } } } }"
    assert [item["key"] for item in editor.lua(f"return {check}.unsupported({own})")] == [
        "interactions.cli.providers.mine"
    ]


def test_an_agent_that_exits_at_once_is_told_and_its_terminal_goes(editor, agent, tmp_path):
    configure(editor, agent, tmp_path / "log")
    editor.nvim.command("CodeCompanionCLI agent=failing")
    editor.wait_for(lambda: "CodeCompanionCLIClosed" in editor.event_names(), what="the terminal closed")
    assert editor.lua("return _G.cc_notes") == ["CodeCompanion: the CLI agent `failing` exited with code 3"]
    assert terminals(editor) == []


def test_the_command_completes_ask_and_the_agents(editor, agent, tmp_path):
    configure(editor, agent, tmp_path / "log")
    assert sorted(editor.nvim.call("getcompletion", "CodeCompanionCLI agent=o", "cmdline")) == ["agent=other"]
    assert editor.nvim.call("getcompletion", "CodeCompanionCLI A", "cmdline") == ["Ask"]


def test_a_visual_mode_keymap_shares_the_selection_as_this(editor, agent, tmp_path):
    log = tmp_path / "log"
    configure(editor, agent, log)
    project(editor, tmp_path)
    editor.lua("""vim.keymap.set({ "n", "v" }, "<F5>", function()
      return require("codecompanion").cli("#{this}", { focus = false })
    end)""")
    editor.nvim.input("ggjVj<F5>")
    text = received(log, "````\n")
    assert text == "- Selected code from @main.lua (lines 2-3):\n````lua\nlocal b = 2\nlocal c = 3\n````\n\n"
    assert editor.nvim.api.get_mode()["mode"] == "n"
