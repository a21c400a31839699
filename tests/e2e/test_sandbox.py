"""The sandbox in real Neovim: a scripted LLM (a local server) asks for commands through
run_command, a fake agent asks for a terminal, the user approves, and the commands run
under the machine's mechanism (bubblewrap here). What they could do is read back from the
results the LLM got and from the disk.

The test's own home (HOME for Neovim and the engine) is under /var/tmp: /tmp is the
commands' temp dir, writable, where a write into the home would not be refused.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread
from codecompanion_py.sandbox import available

from .test_acp import open_agent_chat
from .test_tools import setup_with_tools, text_reply, tool_call_reply, tool_messages

pytestmark = [
    pytest.mark.nvim,
    pytest.mark.skipif(available().name != "bubblewrap", reason=f"no bubblewrap here: {available().reason}"),
]

PROBE = """
import os, socket
home = os.environ["HOME"]
for path in (home + "/escaped.txt", "made.txt"):
    try:
        open(path, "w").write("x"); print("wrote", os.path.basename(path))
    except OSError:
        print("could not write", os.path.basename(path))
try:
    print("KEY", open(home + "/.ssh/id_ed25519").read())
except OSError:
    print("could not read the key")
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=5).close(); print("CONNECTED")
except OSError:
    print("could not connect")
"""


@pytest.fixture
def home(monkeypatch) -> Iterator[Path]:
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    home = Path(tempfile.mkdtemp(prefix="cc-sandbox-home-", dir=base))
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY MATERIAL\n")
    monkeypatch.setenv("HOME", str(home))
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that accepts and closes: its port."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                server.accept()[0].close()
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(2)
    server.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    return root


def probe_command(project: Path, port: int) -> str:
    (project / "probe.py").write_text(PROBE.replace("PORT", str(port)))  # beside the project: the command runs there
    return f"{sys.executable} probe.py"


def run_commands(editor, project, commands, answers, sandbox="", yolo=False):
    """The LLM asks for each of `commands` in turn (answered with `answers`), under
    `interactions.shared.sandbox = { <sandbox> }`; what each result told the LLM."""
    replies = [tool_call_reply((f"c{i}", "run_command", {"cmd": c, "flag": None})) for i, c in enumerate(commands)]
    with ServerThread(ScriptedServer.sequence([*replies, text_reply("done")])) as server:
        editor.nvim.command(f"cd {project}")
        setup_with_tools(editor, server.url, answers=answers, key="interactions", shared=f"sandbox = {{ {sandbox} }}")
        editor.nvim.command("CodeCompanionChat")
        if yolo:
            editor.nvim.input("gty")
            editor.wait_for(lambda: any("YOLO mode on" in n for n in editor.lua("return _G.cc_notes")), what="YOLO")
        editor.type_prompt("Run them with @{run_command}")
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone", timeout=60)
        return [tool_messages(server.requests[i + 1])[0]["content"] for i in range(len(commands))]


def prompts(editor) -> list[str]:
    return [p["prompt"] for p in editor.lua("return _G.cc_prompts")]


def test_an_approved_command_writes_only_the_project_reads_no_keys_reaches_no_network_and_runs_the_tests(
    home, editor, project, listener
):
    probe, tests = probe_command(project, listener), f"{sys.executable} -m pytest -q -p no:cacheprovider"
    [probed, tested] = run_commands(editor, project, [probe, tests], ["Accept", "Accept"])
    assert "could not write escaped.txt" in probed and "wrote made.txt" in probed
    assert "could not read the key" in probed and "PRIVATE KEY" not in probed
    assert "could not connect" in probed and "CONNECTED" not in probed
    assert not (home / "escaped.txt").exists() and (project / "made.txt").read_text() == "x"
    assert "1 passed" in tested and "exit code 0" in tested
    asked = prompts(editor)
    assert len(asked) == 2 and all("sandboxed by bubblewrap, no network" in p for p in asked)


def test_the_network_opens_when_the_config_allows_it(home, editor, project, listener):
    [probed] = run_commands(editor, project, [probe_command(project, listener)], ["Accept"], sandbox="network = true")
    assert "CONNECTED" in probed and "could not read the key" in probed
    assert "sandboxed by bubblewrap, network on" in prompts(editor)[0]


def test_a_command_that_lacked_the_network_is_offered_it_and_runs_again(home, editor, project, listener):
    fetch = f"curl -sS http://127.0.0.1:{listener}/ || {sys.executable} -c 'import socket; socket.create_connection((\"127.0.0.1\", {listener}))'"
    [result] = run_commands(editor, project, [fetch], ["Accept", "Run it again with the network on"])
    asked = prompts(editor)
    assert len(asked) == 2 and "seems to have tried to reach the network" in asked[1]
    assert "Connection refused" not in result.split("`")[-1] or "exit code 0" in result


def test_in_yolo_mode_a_sandboxed_command_runs_unasked(home, editor, project):
    [result] = run_commands(editor, project, ["touch yolo.txt"], [], yolo=True)
    assert "exit code 0" in result and (project / "yolo.txt").exists() and prompts(editor) == []


@pytest.fixture
def no_bwrap(monkeypatch) -> None:
    monkeypatch.setenv("CODECOMPANION_PY_BWRAP", "/nonexistent/bwrap")  # the engine's (set before Neovim starts)


def test_without_a_sandbox_the_user_is_asked_each_time_even_in_yolo_mode(home, no_bwrap, editor, project):
    [refused, allowed] = run_commands(
        editor,
        project,
        ["touch refused.txt", "touch allowed.txt"],
        ["Reject", "not without a sandbox", "Accept"],
        sandbox='mechanism = "bubblewrap"',
        yolo=True,
    )
    asked = prompts(editor)
    assert len(asked) == 2 and all("full rights" in p for p in asked)
    assert "rejected" in refused.lower() and not (project / "refused.txt").exists()
    assert (project / "allowed.txt").exists()


def test_an_agents_terminal_runs_in_the_sandbox(home, editor, project, listener):
    probe_command(project, listener)
    chat = open_agent_chat(editor, project, "terminal exec(open('probe.py').read())")
    editor.wait_event("CodeCompanionChatDone", timeout=30)
    said = editor.text(chat).rsplit("output=", 1)[-1]
    assert "could not write escaped.txt" in said and "wrote made.txt" in said
    assert "could not read the key" in said and "could not connect" in said
    assert not (home / "escaped.txt").exists() and (project / "made.txt").exists()


def test_an_agents_terminal_without_a_sandbox_asks_first(home, no_bwrap, editor, project):
    only_bubblewrap = 'shared = { sandbox = { mechanism = "bubblewrap" } }'
    chat = open_agent_chat(editor, project, "terminal open('ran.txt', 'w')", ["Refuse"], interactions=only_bubblewrap)
    editor.wait_event("CodeCompanionChatDone", timeout=30)
    asked = prompts(editor)
    assert len(asked) == 1 and "without a sandbox" in asked[0] and "full rights" in asked[0]
    assert not (project / "ran.txt").exists()
    assert "refused to run the command without a sandbox" in editor.text(chat)
