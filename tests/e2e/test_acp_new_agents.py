"""cagent, kilocode, kiro and mistral_vibe chat in headless Neovim as CodeCompanion starts
them: their own command on PATH (a script standing in for each CLI, recording its arguments
and running the scripted fake agent), cagent with the agent file CodeCompanion's docs have
you name through `require("codecompanion.adapters").extend`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from .test_acp import FAKE_AGENT

pytestmark = pytest.mark.nvim

AGENTS = {  # name: (the command on PATH, its arguments, the chat's header)
    "cagent": ("cagent", ["acp", "reviewer.yaml"], "Cagent"),
    "kilocode": ("kilo", ["acp"], "Kilo Code"),
    "kiro": ("kiro-cli", ["acp"], "Kiro"),
    "mistral_vibe": ("vibe-acp", [], "Mistral Vibe"),
}
CAGENT_AS_DOCUMENTED = """{
  adapters = { acp = { cagent = function()
    return require("codecompanion.adapters").extend("cagent", {
      commands = { default = { "cagent", "acp", "reviewer.yaml" } },
    })
  end } },
  interactions = { chat = { adapter = "cagent" } },
}"""


@pytest.fixture
def agents_on_path(tmp_path, monkeypatch):
    """A folder first on PATH (set before the editor starts) with each agent's command."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for command, _, _ in AGENTS.values():
        script = bin_dir / command
        script.write_text(
            f"#!{sys.executable}\nimport json, os, sys\n"
            f"open({str(tmp_path / command)!r} + '.argv', 'w').write(json.dumps(sys.argv[1:]))\n"
            f"os.execv(sys.executable, [sys.executable, {FAKE_AGENT!r}])\n"
        )
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(sys.executable).parent}:/usr/bin:/bin")
    return tmp_path


@pytest.mark.parametrize("name", list(AGENTS))
def test_each_agent_starts_with_its_own_command_and_chats(agents_on_path, editor, name):
    command, arguments, header = AGENTS[name]
    project = agents_on_path / "proj"
    project.mkdir()
    editor.nvim.command(f"cd {project}")
    if name == "cagent":
        editor.setup(CAGENT_AS_DOCUMENTED)
        editor.nvim.command("CodeCompanionChat stream please")
    else:
        editor.setup("{}")
        editor.nvim.command(f"CodeCompanionChat adapter={name} stream please")
    chat = editor.nvim.current.buffer.number
    editor.wait_event("CodeCompanionChatDone")
    text = editor.text(chat)
    assert f"## CodeCompanion ({header})" in text
    assert "Hello from the fake agent." in text
    assert json.loads((agents_on_path / f"{command}.argv").read_text()) == arguments
