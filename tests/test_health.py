"""Health tells the truth: agents' executables looked up and asked for their version (the
CLIs the bridge drives, for the bridge agents), keys shown as set / not set, never their
values. Fake executables in a temporary directory stand in for the agents; PATH holds only
that directory, so what is installed on the machine does not matter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codecompanion_py import checkhealth, health
from codecompanion_py.adapters import Adapters
from codecompanion_py.demo.launch import nvim_binary

ROOT = Path(__file__).resolve().parents[1]
BRIDGE = [sys.executable, "-m", "codecompanion_py.cli", "acp-bridge"]


def fake(directory: Path, name: str, body: str) -> Path:
    """An executable Python script `name` in `directory`; `body` runs with `sys` and `os`
    imported and `count()` appending a line to `<name>.calls`."""
    path = directory / name
    path.write_text(
        f"#!{sys.executable}\n"
        "import os, sys, time, subprocess\n"
        f"def count():\n    open({str(path) + '.calls'!r}, 'a').write('x\\n')\n" + body + "\n"
    )
    path.chmod(0o755)
    return path


def calls(path: Path) -> int:
    counter = Path(str(path) + ".calls")
    return len(counter.read_text().splitlines()) if counter.exists() else 0


@pytest.fixture
def bin_dir(tmp_path, monkeypatch):
    directory = tmp_path / "bin"
    directory.mkdir()
    monkeypatch.setenv("PATH", str(directory))
    return directory


def test_the_bridge_agents_check_the_cli_the_bridge_drives(bin_dir):
    fake(bin_dir, "claude", "count(); print('2.0.14 (Claude Code)')")
    report = health.report()
    claude = report["agents"]["claude_code_cli"]
    assert claude == {
        "command": "claude",
        "found": True,
        "install": "npm install -g @anthropic-ai/claude-code",
        "bridge": "claude",
        "path": str(bin_dir / "claude"),
        "version": "2.0.14 (Claude Code)",
    }
    # codex is not installed: the bridge (our own Python) being there does not make it OK
    assert report["agents"]["codex_cli"] == {
        "command": "codex",
        "found": False,
        "install": "npm install -g @openai/codex",
        "bridge": "codex",
    }


def test_every_acp_agent_is_looked_up_and_asked_for_its_version(bin_dir):
    fake(bin_dir, "codex-acp", "print('codex-acp 0.16.0')")
    fake(bin_dir, "gemini", "sys.stderr.write('\\x1b[1m0.9.0\\x1b[0m\\n')")  # on stderr, with colours
    fake(bin_dir, "goose", "print('unknown flag --version', file=sys.stderr); sys.exit(3)")
    fake(bin_dir, "opencode", "pass")
    agents = health.report()["agents"]
    assert agents["codex"]["version"] == "codex-acp 0.16.0"
    assert agents["gemini_cli"]["version"] == "0.9.0"
    assert agents["goose"]["found"] is True and "version" not in agents["goose"]
    assert (
        agents["goose"]["version_error"]
        == f"`{bin_dir / 'goose'} --version` exited with status 3: unknown flag --version"
    )
    assert agents["opencode"]["version_error"].endswith("--version` printed nothing")
    assert agents["claude_code"] == {
        "command": "claude-agent-acp",
        "found": False,
        "install": "npm install -g @zed-industries/claude-agent-acp",
    }


def test_the_last_four_agents_are_looked_up_by_their_own_commands(bin_dir):
    fake(bin_dir, "kilo", "print('kilo 1.2.3')")
    fake(bin_dir, "vibe-acp", "print('vibe 2.0.0')")
    agents = health.report()["agents"]
    assert agents["kilocode"]["version"] == "kilo 1.2.3" and agents["kilocode"]["path"] == str(bin_dir / "kilo")
    assert agents["mistral_vibe"]["version"] == "vibe 2.0.0"
    assert agents["kiro"]["command"] == "kiro-cli" and agents["kiro"]["found"] is False
    assert "kiro.dev" in agents["kiro"]["install"]
    assert agents["cagent"]["command"] == "cagent" and "commands.default" in agents["cagent"]["install"]


def test_executable_in_the_bridge_command_is_followed(bin_dir, tmp_path):
    elsewhere = tmp_path / "opt"
    elsewhere.mkdir()
    mine = fake(elsewhere, "my-claude", "print('1.0.0 (Claude Code)')")
    registry = Adapters(
        acp={
            "claude_code_cli": {"commands": {"default": [*BRIDGE, "claude", "--executable", str(mine)]}},
            "codex_cli": {"commands": {"default": [*BRIDGE, "codex", "--executable=codex-nightly"]}},
        }
    )
    agents = health.report(registry)["agents"]
    assert (agents["claude_code_cli"]["command"], agents["claude_code_cli"]["version"]) == (
        str(mine),
        "1.0.0 (Claude Code)",
    )
    assert agents["codex_cli"]["command"] == "codex-nightly" and agents["codex_cli"]["found"] is False


def test_a_bridge_adapter_that_does_not_load_is_an_error(bin_dir):
    report = health.report(Adapters(acp={"mine": {"commands": {"default": [*BRIDGE, "no_such_module:Adapter"]}}}))
    assert "cannot import 'no_such_module'" in report["adapter_errors"]["mine"]
    assert health.broken(report) == [f"adapter mine: {report['adapter_errors']['mine']}"]


def test_versions_are_asked_once_per_executable_in_a_run_and_again_in_the_next(bin_dir):
    cli = fake(bin_dir, "shared-cli", "count(); print('shared 1.2')")
    registry = Adapters(
        acp={name: {"commands": {"default": ["shared-cli", "--acp", name]}} for name in ("one", "two", "three")}
    )
    agents = health.report(registry)["agents"]
    assert [agents[n]["version"] for n in ("one", "two", "three")] == ["shared 1.2"] * 3
    assert calls(cli) == 1
    health.report(registry)
    assert calls(cli) == 2  # a new health run asks again: the CLI may have been updated


def test_a_version_that_hangs_is_cut_short_with_its_children(bin_dir, tmp_path, monkeypatch):
    pids = tmp_path / "child.pid"
    fake(
        bin_dir,
        "stuck",
        f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pids)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)",
    )
    fake(bin_dir, "quick", "print('quick 1')")
    registry = Adapters(
        acp={"stuck": {"commands": {"default": ["stuck"]}}, "quick": {"commands": {"default": ["quick"]}}}
    )
    monkeypatch.setattr(health, "VERSION_TIMEOUT", 1.0)
    started = time.monotonic()
    agents = health.report(registry)["agents"]
    assert time.monotonic() - started < 5  # the probes run at once, each bounded
    assert agents["stuck"]["version_error"] == f"`{bin_dir / 'stuck'} --version` did not answer within 1 s"
    assert agents["quick"]["version"] == "quick 1"
    child = int(pids.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the hung CLI's child was left running"


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def test_keys_are_sorted_and_never_shown(bin_dir, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-never-print")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    report = health.report()
    keys = list(report["keys"])
    assert keys == sorted(keys)
    assert {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "CODEX_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"} <= set(keys)
    assert report["keys"]["OPENAI_API_KEY"] is True and report["keys"]["ANTHROPIC_API_KEY"] is False
    table = health.format_table(report)
    assert "sk-should-never-print" not in table + json.dumps(report)
    rows = [line.split() for line in table.split("values are never shown)\n", 1)[1].splitlines()]
    assert [row[0] for row in rows] == keys
    assert dict((row[0], " ".join(row[1:])) for row in rows)["OPENAI_API_KEY"] == "set"
    assert dict((row[0], " ".join(row[1:])) for row in rows)["ANTHROPIC_API_KEY"] == "not set"


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codecompanion_py.cli", *args], capture_output=True, text=True, timeout=60, env=env
    )


def test_the_command_prints_a_table_and_json_on_request(bin_dir):
    fake(bin_dir, "claude", "print('2.0.14 (Claude Code)')")
    env = {**os.environ, "PATH": str(bin_dir), "OPENAI_API_KEY": "sk-should-never-print", "PYTHONPATH": str(ROOT)}
    table = cli("health", env=env)
    assert table.returncode == 0, table.stderr
    assert "sk-should-never-print" not in table.stdout
    lines = table.stdout.splitlines()
    claude = next(line for line in lines if line.split()[:1] == ["claude_code_cli"])
    assert claude.split() == [
        "claude_code_cli",
        "claude",
        "(via",
        "acp-bridge",
        "claude)",
        "2.0.14",
        "(Claude",
        "Code)",
    ]
    codex = next(line for line in lines if line.split()[:1] == ["codex_cli"])
    assert "codex (via acp-bridge codex)" in codex and "not found; install: npm install -g @openai/codex" in codex
    assert any(line.split() == ["OPENAI_API_KEY", "set"] for line in lines)
    assert (
        any(line.split() == ["ANTHROPIC_API_KEY", "not", "set"] for line in lines) or "ANTHROPIC_API_KEY" in os.environ
    )
    machine = cli("health", "--json", env=env)
    report = json.loads(machine.stdout)
    assert report["agents"]["claude_code_cli"]["version"] == "2.0.14 (Claude Code)"
    assert report["keys"]["OPENAI_API_KEY"] is True
    assert "sk-should-never-print" not in machine.stdout


CANNED = {
    "python": "3.11.0",
    "executable": "/venv/bin/python",
    "versions": {"pynvim": "0.6.0", "codecompanion-py": "0.1.0", "msgspec": "0.19", "httpx": "0.28"},
    "adapters": ["openai"],
    "adapter_errors": {},
    "agents": {
        "codex_cli": {"command": "codex", "found": False, "install": "npm install -g @openai/codex", "bridge": "codex"},
        "claude_code_cli": {
            "command": "claude",
            "found": True,
            "install": "",
            "bridge": "claude",
            "path": "/usr/bin/claude",
            "version": "2.0.14 (Claude Code)",
        },
        "goose": {"command": "goose", "found": True, "install": "", "path": "/bin/goose", "version_error": "exit 3"},
    },
    "keys": {"ZED_KEY": False, "ANTHROPIC_API_KEY": True, "OPENAI_API_KEY": False},
}


def run_checkhealth(tmp_path, rpc_lua: str) -> str:
    """`:checkhealth codecompanion_py` in a clean Neovim with the checkout on the runtimepath
    and `codecompanion_py.rpc` replaced by `rpc_lua` (a table expression)."""
    script = tmp_path / "health.lua"
    script.write_text(
        f"vim.opt.rtp:prepend({str(ROOT)!r})\n"
        f"local canned = vim.json.decode({json.dumps(json.dumps(checkhealth.for_lua(CANNED, [])))})\n"
        f"package.loaded['codecompanion_py.rpc'] = {rpc_lua}\n"
        "vim.cmd('checkhealth codecompanion_py')\n"
        "io.stdout:write(table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n'))\n"
    )
    return subprocess.run(
        [nvim_binary(), "--clean", "--headless", "-c", f"luafile {script}", "-c", "qa!"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout


@pytest.mark.nvim
def test_checkhealth_shows_bridge_clis_versions_and_sorted_keys(tmp_path):
    """The Lua side: the engine's answer replaced by the sections of a canned report."""
    out = run_checkhealth(
        tmp_path,
        "{ request = function() return canned end, last_exit = function() return nil end,"
        " host = function() return { pid = 4242, python = '/plugin/.venv/bin/python' } end }",
    )
    assert "the engine runs as Neovim's job (pid 4242) with /plugin/.venv/bin/python" in out
    assert "claude_code_cli: `claude` (through `codecompanion-py acp-bridge claude`) 2.0.14 (Claude Code)" in out
    assert (
        "codex_cli: `codex` (through `codecompanion-py acp-bridge codex`) not on PATH (npm install -g @openai/codex)"
        in out
    )
    assert "goose: `goose` found (/bin/goose); version unknown: exit 3" in out
    assert out.index("ANTHROPIC_API_KEY: set") < out.index("OPENAI_API_KEY: not set") < out.index("ZED_KEY: not set")
    assert out.index("codecompanion-py 0.1.0") < out.index("httpx 0.28") < out.index("msgspec 0.19")
    assert "ERROR" not in out


@pytest.mark.nvim
def test_checkhealth_says_how_to_install_a_missing_engine(tmp_path):
    out = run_checkhealth(
        tmp_path,
        "{ request = function() error('must not be asked') end, host = function() return nil end, running = function() return false end,"
        " last_exit = function() return nil end, python = function() return '/nowhere/.venv/bin/python', false end,"
        " install_hint = function() return 'Run :CodeCompanionInstall' end }",
    )
    assert "the engine is not installed: no /nowhere/.venv/bin/python" in out
    assert "Run :CodeCompanionInstall" in out
    assert "must not be asked" not in out


def test_the_report_is_sent_as_sections_ready_for_vim_health():
    broken = {
        **CANNED,
        "versions": {**CANNED["versions"], "httpx": None},
        "adapter_errors": {"mine": "missing base"},
        "agents": {
            **CANNED["agents"],
            "gemini": {
                "command": "gemini",
                "found": True,
                "install": "",
                "version_error": "cannot run `gemini`: denied",
            },
        },
    }
    servers = [
        {"name": "fs", "transport": "stdio", "running": True, "tools": ["a", "b"], "prompts": [], "resources": ["r"]},
        {
            "name": "web",
            "transport": "http",
            "running": False,
            "tools": [],
            "prompts": [],
            "resources": [],
            "last_exit": "exit 1",
        },
    ]
    shown = {
        section.title: [(e.level, e.text) for e in section.entries] for section in checkhealth.sections(broken, servers)
    }
    assert list(shown) == [
        checkhealth.HOST,
        checkhealth.ADAPTERS,
        checkhealth.AGENTS,
        checkhealth.MCP,
        checkhealth.KEYS,
    ]
    assert shown[checkhealth.HOST][0] == ("ok", "Python 3.11.0 (/venv/bin/python)")
    assert ("error", "httpx is not installed") in shown[checkhealth.HOST]
    assert shown[checkhealth.ADAPTERS] == [("info", "available: openai"), ("error", "adapter mine: missing base")]
    assert ("warn", "gemini: `gemini` is on PATH but cannot run `gemini`: denied") in shown[checkhealth.AGENTS]
    assert shown[checkhealth.MCP] == [
        ("ok", "fs (stdio): running, 2 tools, 0 prompts, 1 resource"),
        ("warn", "web (http): not started (servers start when a chat first needs them); it last stopped: exit 1"),
    ]
    assert shown[checkhealth.KEYS][0] == ("ok", "ANTHROPIC_API_KEY: set")
    assert "advice" not in checkhealth.for_lua(CANNED, [])[0]["entries"][0]  # absent, not null, for Lua


def test_no_mcp_section_without_servers():
    assert checkhealth.MCP not in [section.title for section in checkhealth.sections(CANNED, [])]


@pytest.mark.nvim
def test_checkhealth_names_a_chosen_python_that_is_not_executable_and_an_engine_that_does_not_answer(tmp_path):
    chosen = run_checkhealth(
        tmp_path,
        "{ request = function() error('must not be asked') end, host = function() return nil end, running = function() return false end,"
        " last_exit = function() return nil end, python = function() return '/nowhere/python', true end }",
    )
    assert "opts.python = /nowhere/python is not executable" in chosen
    assert "Point opts.python at a Python that has codecompanion-py installed" in chosen
    silent = run_checkhealth(
        tmp_path,
        "{ request = function() error('no channel', 0) end, last_exit = function() return 'it was killed' end,"
        " host = function() return { pid = 1, python = 'py' } end, install_hint = function() return 'reinstall' end }",
    )
    assert "earlier in this session it was killed" in silent
    assert "the Python engine did not answer: no channel" in silent and "reinstall" in silent
