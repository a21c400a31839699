"""Secrets stay out of the commands the LLM runs, whatever their names.

The environment used to be filtered by a denylist (`*KEY*`, `*TOKEN*`, `*SECRET*`,
`*PASSWORD*`...), which let through every credential named some other way. It is now an
allowlist of variables that cannot carry one, plus what the user names in
`interactions.chat.tools.run_command.opts.env_allow`.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from codecompanion_py.acp.terminals import Terminals
from codecompanion_py.messages import ToolCall, ToolResultPart
from codecompanion_py.processes import safe_env
from codecompanion_py.tools.approvals import Approvals
from codecompanion_py.tools.context import ChatHandle, ToolsContext
from codecompanion_py.tools.orchestrator import Orchestrator
from codecompanion_py.tools.registry import ToolSettings, enabled_definitions
from codecompanion_py.tools.workspace import Workspace

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX commands")

SECRETS = {
    "OP_SESSION_my_team": "1password-session",
    "BW_SESSION": "bitwarden-session",
    "DATABASE_URL": "postgres://app:hunter2@db.internal/app",
    "SMTP_PASS": "mail-password",
    "NPM_CONFIG__AUTH": "bnBtOnBhc3N3b3Jk",
    "CI_JOB_JWT": "eyJhbGciOiJSUzI1NiJ9.ci",
    "SENTRY_DSN": "https://key@o1.ingest.sentry.io/1",
    "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T/B/secret",
    "DISCORD_WEBHOOK": "https://discord.com/api/webhooks/1/secret",
    "COOKIE": "session=abcdef",
    "AUTHORIZATION": "Bearer abcdef",
    "AUTH_HEADER": "Basic dXNlcjpwYXNz",
    "REDIS_PASS": "redis-password",
}
SAFE = {"PATH", "HOME", "LANG"}


class Editor:
    reviews_edits = False  # no diff review after a write here

    async def call(self, method: str, args: dict[str, Any]) -> Any:
        assert method == "approve"
        return {"choice": "accept"}


class Surface:
    def show(self, event: Any) -> None:
        pass

    def fire(self, event: str, data: Any = None) -> None:
        pass


async def run_command(root: Path, command: str, opts: dict[str, Any] | None = None) -> ToolResultPart:
    settings = ToolSettings.from_config({"run_command": {"opts": opts or {}}})
    tools = enabled_definitions(settings, ["run_command"])
    context = ToolsContext(chat=ChatHandle(), editor=Editor(), approvals=Approvals(), workspace=Workspace(root))
    orchestrator = Orchestrator(tools, {"run_command": settings.config_of("run_command")}, context, Surface())
    batch = await orchestrator.run(
        [ToolCall(id="call_1", name="run_command", arguments={"cmd": command, "flag": None})]
    )
    [result] = batch.results
    return result


PRINT_ENV = f"{shlex.quote(sys.executable)} -c 'import json, os; print(json.dumps(dict(os.environ)))'"


def child_env(result: ToolResultPart) -> dict[str, str]:
    assert result.status == "success", result.content
    body = result.content.split("```\n", 1)[1].rsplit("\n```", 1)[0]
    env: dict[str, str] = json.loads(body)
    return env


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_4llowed8y7heUser0123")
    monkeypatch.setenv("MYAPP_MODE", "dev")


@pytest.mark.parametrize("name", sorted(SECRETS))
async def test_run_command_does_not_see_a_secret(tmp_path, environment, name):
    env = child_env(await run_command(tmp_path, PRINT_ENV))
    assert name not in env
    assert SECRETS[name] not in json.dumps(env)


async def test_run_command_keeps_what_commands_need_and_what_the_user_allows(tmp_path, environment):
    env = child_env(await run_command(tmp_path, PRINT_ENV))
    assert SAFE <= set(env)
    assert env["LANG"] == env["LC_ALL"] == "C.UTF-8"
    assert "GITHUB_TOKEN" not in env and "MYAPP_MODE" not in env

    allowed = child_env(await run_command(tmp_path, PRINT_ENV, {"env_allow": ["GITHUB_TOKEN", "MYAPP_*"]}))
    # The command got the token; what it printed reaches the LLM without it (scrubber.KNOWN).
    assert allowed["GITHUB_TOKEN"] == "***"
    assert allowed["MYAPP_MODE"] == "dev"
    assert not set(SECRETS) & set(allowed)


async def test_a_malformed_env_allow_is_an_error_and_nothing_runs(tmp_path, environment):
    result = await run_command(tmp_path, "touch ran", {"env_allow": [1, 2]})
    assert result.status == "error"
    assert "env_allow" in result.content
    assert not (tmp_path / "ran").exists()


def test_safe_env_is_an_allowlist():
    base = {**SECRETS, "PATH": "/bin", "HOME": "/h", "LANG": "C", "LC_TIME": "C", "UNKNOWN_THING": "x"}
    assert safe_env(base) == {"PATH": "/bin", "HOME": "/h", "LANG": "C", "LC_TIME": "C"}
    assert safe_env(base, allow=["UNKNOWN_*", "BW_SESSION"]) == {
        "PATH": "/bin",
        "HOME": "/h",
        "LANG": "C",
        "LC_TIME": "C",
        "UNKNOWN_THING": "x",
        "BW_SESSION": "bitwarden-session",
    }


async def test_an_agent_terminal_does_not_see_the_secrets_either(tmp_path, environment):
    terminals = Terminals(str(tmp_path))
    terminal = await terminals.create({"command": "env", "env": [{"name": "ASKED_BY_AGENT", "value": "yes"}]})
    await Terminals.wait(terminal)
    names = {line.partition("=")[0] for line in terminal.text().splitlines()}
    await terminals.close()
    assert not set(SECRETS) & names
    assert SAFE | {"ASKED_BY_AGENT"} <= names
