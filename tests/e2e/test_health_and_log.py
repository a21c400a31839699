""":checkhealth says which adapter each interaction uses and whether it can work (its key, its
login), and `opts.log_level` writes the log where CodeCompanion does, keys masked;
:CodeCompanionLog opens it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread, error_reply
from codecompanion_py.sandbox import available
from tests.e2e.conftest import Editor
from tests.e2e.test_chat_surface import reply, send

pytestmark = pytest.mark.nvim

KEY = "sk-e2e-log-0123456789abcdefghij"
# chat with `chat`, inline with Copilot, cmd with `mine`: openai with env.api_key = `key`
ROLES = """{
  adapters = { http = { mine = function()
    return require("codecompanion.adapters").extend("openai", { env = { api_key = "%s" } })
  end } },
  interactions = { chat = { adapter = "%s" }, inline = { adapter = "copilot" }, cmd = { adapter = "mine" } },
}"""


@pytest.fixture
def start(nvim_home, monkeypatch, tmp_path, spawn):
    """`start(**env)`: Neovim (and so the engine) with `env` over the tests' environment
    (None unsets a variable); its state directory, where the log goes, is this test's."""
    init, base = nvim_home

    def started(**env: str | None) -> Editor:
        for key in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
            monkeypatch.setenv(key, base[key])
        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
        for key, value in env.items():
            if value is None:
                monkeypatch.delenv(key, raising=False)
            else:
                monkeypatch.setenv(key, value)
        return spawn(init)

    return started


def chat_on(editor: Editor, url: str, env: str = "", opts: str = "") -> None:
    """A chat open on the local server at `url`, with `env` and `opts` added to the config."""
    editor.lua(f"""require("codecompanion").setup({{
      adapters = {{ http = {{ testllm = function()
        return require("codecompanion.adapters").extend("openai_compatible", {{
          env = {{ url = "{url}", {env} }}, schema = {{ model = {{ default = "test-model" }} }},
        }})
      end }} }},
      interactions = {{ chat = {{ adapter = "testllm" }} }},
      opts = {{ {opts} }},
    }})""")
    editor.nvim.command("CodeCompanionChat")


def health(editor: Editor) -> list[str]:
    editor.nvim.command("checkhealth codecompanion")
    return editor.lines()


def line_of(lines: list[str], text: str) -> str:
    found = [line for line in lines if text in line]
    assert found, f"{text!r} not in :checkhealth:\n" + "\n".join(lines)
    return found[0]


def test_checkhealth_errors_when_the_adapters_in_use_cannot_work(start, tmp_path):
    no_login = tmp_path / "config"  # no github-copilot/ in it
    no_login.mkdir()
    editor = start(
        ANTHROPIC_API_KEY=None, MY_OWN_VAR=None, GH_COPILOT_TOKEN=None, GITHUB_COPILOT_TOKEN=None,
        XDG_CONFIG_HOME=str(no_login),
    )  # fmt: skip
    editor.setup(ROLES % ("MY_OWN_VAR", "anthropic"))
    lines = health(editor)
    line_of(lines, "the chat interaction uses anthropic")
    assert "ERROR" in line_of(lines, "anthropic: env.api_key: ANTHROPIC_API_KEY is not set")
    line_of(lines, "the inline interaction uses copilot")
    assert "ERROR" in line_of(lines, "copilot: not logged in to GitHub Copilot")
    line_of(lines, f"no GitHub Copilot login found in {no_login}/github-copilot/apps.json")
    line_of(lines, "the cmd interaction uses mine")
    assert "ERROR" in line_of(lines, "mine: env.api_key: MY_OWN_VAR is not set")
    line_of(lines, "Set MY_OWN_VAR in the environment Neovim starts from")


def test_checkhealth_is_green_for_keys_that_are_there(start, tmp_path):
    login = tmp_path / "config"
    (login / "github-copilot").mkdir(parents=True)
    (login / "github-copilot" / "hosts.json").write_text(json.dumps({"github.com": {"oauth_token": "gho_test"}}))
    editor = start(
        OPENAI_API_KEY="sk-test-not-real", GH_COPILOT_TOKEN=None, GITHUB_COPILOT_TOKEN=None,
        XDG_CONFIG_HOME=str(login),
    )  # fmt: skip
    editor.setup(ROLES % ("cmd:echo not-a-key", "openai"))
    lines = health(editor)
    assert "OK" in line_of(lines, "openai: env.api_key: OPENAI_API_KEY is set")
    assert "OK" in line_of(lines, "copilot: a GitHub Copilot login was found")
    line_of(lines, "mine: env.api_key comes from `echo ...`, run when the chat first needs the key (not run here)")
    log = str(Path(editor.lua('return vim.fn.stdpath("log")')) / "codecompanion.log")
    line_of(lines, f"log: {log} (opts.log_level = ERROR; open it with :CodeCompanionLog)")
    assert not any("ERROR" in line for line in lines if "interaction" in line or "env.api_key" in line)


def test_debug_writes_the_log_where_codecompanion_does_keys_masked(start):
    editor = start()
    with ServerThread(ScriptedServer.sequence([reply("Hello from the log test")])) as server:
        chat_on(editor, server.url, f'api_key = "{KEY}"', 'log_level = "DEBUG"')
        send(editor, f"Is {KEY} safe in the log?", 1)
    log = Path(editor.lua('return vim.fn.stdpath("log")')) / "codecompanion.log"
    text = editor.wait_for(
        lambda: log.exists() and "Hello from the log test" in log.read_text() and log.read_text(), what="the log"
    )
    assert f"POST {server.url}/v1/chat/completions (testllm, model test-model" in text
    assert "[INFO]" in text and "[DEBUG]" in text and "request body:" in text
    assert "Is *** safe in the log?" in text
    assert KEY not in text
    # :CodeCompanionLog opens it beside the chat
    windows = len(editor.nvim.api.list_wins())
    editor.nvim.command("CodeCompanionLog")
    assert editor.nvim.current.buffer.name == str(log)
    assert len(editor.nvim.api.list_wins()) == windows + 1
    assert "request body:" in editor.text()


def test_at_the_default_level_only_what_failed_is_logged(start):
    editor = start()
    log = Path(editor.lua('return vim.fn.stdpath("log")')) / "codecompanion.log"
    refused = error_reply(400, "the model refuses this one")
    with ServerThread(ScriptedServer.sequence([reply("Quiet"), refused])) as server:
        chat_on(editor, server.url)
        send(editor, "Say nothing to the log", 1)
        assert "Quiet" in editor.text()
        assert not log.exists()
        send(editor, "Now fail", 2)
    lines = log.read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith("[ERROR] "), lines  # as CodeCompanion logs its errors
    assert "the model refuses this one" in lines[0]


def test_checkhealth_errors_when_the_chats_agent_is_not_on_path(start, tmp_path):
    editor = start(PATH=f"{tmp_path}:/usr/bin:/bin")  # no agent CLIs here
    editor.setup('{ interactions = { chat = { adapter = "goose" } } }')
    lines = health(editor)
    line_of(lines, "chat, inline and cmd use goose")
    assert "ERROR" in line_of(lines, "goose: `goose` is not on PATH")
    assert "ERROR" in line_of(lines, "inline and cmd cannot use the agent goose")  # they fall back to the chat's
    line_of(lines, "Set interactions.inline.adapter to an HTTP adapter")


def test_checkhealth_names_cagent_kilocode_kiro_and_mistral_vibe(start, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    kilo = bin_dir / "kilo"
    kilo.write_text("#!/bin/sh\necho 'kilo 0.9.1'\n")
    kilo.chmod(0o755)
    editor = start(PATH=f"{bin_dir}:/usr/bin:/bin")
    editor.setup('{ interactions = { chat = { adapter = "kilocode" } } }')
    lines = health(editor)
    line_of(lines, "chat, inline and cmd use kilocode")
    assert "OK" in line_of(lines, "kilocode: `kilo` found")
    for name, command in (("cagent", "cagent"), ("kiro", "kiro-cli"), ("mistral_vibe", "vibe-acp")):
        line_of(lines, f"{name}: `{command}` not on PATH")


@pytest.mark.parametrize(
    "bwrap, sandbox, says",
    [
        (None, "", "commands run sandboxed by bubblewrap"),
        ("/nonexistent/bwrap", 'mechanism = "bubblewrap"', "no sandbox: bubblewrap is not installed"),
        (None, "enabled = false", "off (interactions.shared.sandbox.enabled = false)"),
    ],
    ids=["bubblewrap", "none", "off"],
)
def test_checkhealth_says_which_sandbox_confines_commands(start, bwrap, sandbox, says):
    if available("bubblewrap").name != "bubblewrap":
        pytest.skip(f"no bubblewrap here: {available('bubblewrap').reason}")
    editor = start(CODECOMPANION_PY_BWRAP=bwrap)
    editor.setup(f"{{ interactions = {{ shared = {{ sandbox = {{ {sandbox} }} }} }} }}")
    lines = health(editor)
    line_of(lines, "sandbox (the commands the LLM and agents run)")
    found = line_of(lines, says)
    assert ("ERROR" in found) == (bwrap is not None)
    if not sandbox:
        line_of(lines, "network: off (a command that fails for lack of it is offered it)")
