"""ACP adapters: coding agents the chat starts as subprocesses, described as data.

    commands   {default = argv, yolo = argv, ...}: how to start the agent; `yolo` (when given)
               starts it with its own approvals turned off, `command=NAME` with another
    env        extra environment for the agent: values are environment variable names,
               `cmd:...` or `file:...`, as for HTTP adapters (unset names are left out),
               or Lua functions of the adapter (called through `editor` when it starts)
    defaults   auth_method (or a list of {method, env} tried in order: the first whose
               env variable is set), mode (set after the session starts), mcpServers,
               timeout (ms to answer initialize and session/new), prompt_timeout (ms of
               silence from the agent during a turn before it is considered hung)
    install    a hint shown when the command is not on PATH

The user's `adapters.acp.<name>` tables are deep-merged over these (or define new agents
with `extends`), so `adapters = { acp = { codex = { commands = { default = {...} } } } }`
works as in CodeCompanion; the registry (registry.py) does that.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from .base import DEFAULT_CMD_TIMEOUT, resolve_env_string
from .lua import LuaFunction

DEFAULT_TIMEOUT_MS = 20_000
DEFAULT_PROMPT_TIMEOUT_MS = 600_000


def _agent(
    formatted_name: str,
    default: list[str],
    *,
    yolo: list[str] | None = None,
    install: str = "",
    env: Mapping[str, str] | None = None,
    **defaults: Any,
) -> dict[str, Any]:
    commands = {"default": default}
    if yolo:
        commands["yolo"] = yolo
    return {
        "type": "acp",
        "formatted_name": formatted_name,
        "commands": commands,
        "env": dict(env or {}),
        "defaults": {
            "mcpServers": [],
            "timeout": DEFAULT_TIMEOUT_MS,
            "prompt_timeout": DEFAULT_PROMPT_TIMEOUT_MS,
            **defaults,
        },
        "install": install,
    }


BUILTIN: dict[str, dict[str, Any]] = {
    "claude_code": _agent(
        "Claude Code",
        ["claude-agent-acp"],
        install="npm install -g @zed-industries/claude-agent-acp",
        env={"ANTHROPIC_API_KEY": "ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN": "CLAUDE_CODE_OAUTH_TOKEN"},
        yolo_mode="bypassPermissions",
    ),
    "codex": _agent(
        "Codex",
        ["codex-acp"],
        install="npm install -g @zed-industries/codex-acp",
        yolo=["codex-acp", "-c", 'approval_policy="never"', "-c", 'sandbox_mode="danger-full-access"'],
        env={"OPENAI_API_KEY": "OPENAI_API_KEY", "CODEX_API_KEY": "CODEX_API_KEY"},
        auth_method=[
            {"method": "codex-api-key", "env": "CODEX_API_KEY"},
            {"method": "openai-api-key", "env": "OPENAI_API_KEY"},
        ],
    ),
    "gemini_cli": _agent(
        "Gemini CLI",
        ["gemini", "--acp"],
        yolo=["gemini", "--acp", "--yolo"],
        install="npm install -g @google/gemini-cli",
        env={"GEMINI_API_KEY": "GEMINI_API_KEY"},
        auth_method=[{"method": "gemini-api-key", "env": "GEMINI_API_KEY"}, {"method": "oauth-personal"}],
    ),
    "goose": _agent("Goose", ["goose", "acp"], install="see https://block.github.io/goose/"),
    "opencode": _agent("OpenCode", ["opencode", "acp"], install="npm install -g opencode-ai"),
    "cursor_cli": _agent("Cursor", ["agent", "acp"], install="install the Cursor CLI and run `agent login`"),
    "copilot_acp": _agent("Copilot", ["copilot", "--acp", "--stdio"], install="npm install -g @github/copilot"),
    "kimi_cli": _agent("Kimi CLI", ["kimi", "--acp"], install="uv tool install kimi-cli"),
    "auggie_cli": _agent("Auggie CLI", ["auggie", "--acp"], install="npm install -g @augmentcode/auggie"),
    "cline_cli": _agent("Cline CLI", ["cline", "--acp"], install="npm install -g cline"),
    # cagent runs the agent a YAML file describes: point `commands.default` at your own file
    "cagent": _agent(
        "Cagent",
        ["cagent", "acp", "basic_agent.yaml"],
        install="see https://github.com/docker/cagent, then name your agent's YAML in commands.default",
    ),
    # Kilo Code and Kiro log in through their own CLIs; they are not asked to authenticate
    "kilocode": _agent("Kilo Code", ["kilo", "acp"], install="see https://kilo.ai/docs/getting-started/installing"),
    "kiro": _agent("Kiro", ["kiro-cli", "acp"], install="see https://kiro.dev/docs/cli/, then log in with kiro-cli"),
    "mistral_vibe": _agent(
        "Mistral Vibe", ["vibe-acp"], install="see https://github.com/mistralai/mistral-vibe, then run `vibe --setup`"
    ),
    # CLIs without ACP, through our bridge (`codecompanion-py acp-bridge NAME`)
    "claude_code_cli": _agent(
        "Claude Code (CLI)",
        [sys.executable, "-m", "codecompanion_py.cli", "acp-bridge", "claude"],
        install="npm install -g @anthropic-ai/claude-code",
    ),
    "codex_cli": _agent(
        "Codex (CLI)",
        [sys.executable, "-m", "codecompanion_py.cli", "acp-bridge", "codex"],
        install="npm install -g @openai/codex",
    ),
}


@dataclass
class AcpAdapter:
    name: str
    formatted_name: str
    commands: dict[str, list[str]]
    env: dict[str, Any] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    install: str = ""
    editor: Any = None  # what Lua functions in `env` are called through (the chat's editor)
    cmd_timeout: float = DEFAULT_CMD_TIMEOUT  # seconds a `cmd:` env value may take

    def select(self, command: str) -> None:
        """Start with `commands[command]` (CodeCompanion's `command=`; YOLO mode too)."""
        argv = self.commands.get(command)
        if command == "selected" or not isinstance(argv, list):
            names = ", ".join(sorted(n for n in self.commands if n != "selected"))
            raise ConfigError(f"adapters.acp.{self.name} has no command {command!r}; it has {names}")
        self.commands = {**self.commands, "default": argv, "yolo": argv}

    def command(self, yolo: bool = False) -> list[str]:
        argv = self.commands.get("yolo") if yolo else None
        argv = argv or self.commands.get("default")
        if not argv or not all(isinstance(part, str) for part in argv):
            raise ConfigError(f"adapters.acp.{self.name}.commands.default must be a list of strings")
        return list(argv)

    @property
    def timeout(self) -> float:
        return float(self.defaults.get("timeout") or DEFAULT_TIMEOUT_MS) / 1000

    @property
    def prompt_timeout(self) -> float:
        return float(self.defaults.get("prompt_timeout") or DEFAULT_PROMPT_TIMEOUT_MS) / 1000

    async def environment(self) -> dict[str, str]:
        """The agent's environment: ours, plus the adapter's resolved `env` entries."""
        env = dict(os.environ)
        for key, spec in self.env.items():
            if isinstance(spec, LuaFunction):
                table = {"name": self.name, "formatted_name": self.formatted_name, "commands": self.commands}
                value = await spec.call_async(self.editor, {**table, "defaults": self.defaults, "env": self.env})
            else:
                value = (
                    await resolve_env_string(self.name, key, spec, self.cmd_timeout) if isinstance(spec, str) else spec
                )
            if value is None:
                continue
            env[key] = str(value)
        return env

    def auth_method(self, advertised: list[Any], env: Mapping[str, str]) -> str | None:
        """The auth method to call `authenticate` with, if any the agent offers fits."""
        ids = {m.get("id") for m in advertised if isinstance(m, Mapping)}
        wanted = self.defaults.get("auth_method")
        candidates = wanted if isinstance(wanted, list) else [{"method": wanted}] if wanted else []
        for candidate in candidates:
            method = candidate.get("method") if isinstance(candidate, Mapping) else candidate
            needs = candidate.get("env") if isinstance(candidate, Mapping) else None
            if method in ids and (not needs or env.get(needs)):
                return str(method)
        return None
