"""The native process's environment and command line.

The child gets the bridge's environment less `SESSION_SECRETS` (variables through which a
running Claude Code or Codex session marks or authorises its own children), then the
adapter's `env(opts)`, then `opts["env"]`; a value of None unsets a name. User API keys
(ANTHROPIC_API_KEY, OPENAI_API_KEY, CODEX_API_KEY, CLAUDE_CODE_OAUTH_TOKEN) and config dirs
(CODEX_HOME, CLAUDE_CONFIG_DIR) are kept: the native CLI needs them to log in.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from .contract import BridgeAdapter

SESSION_SECRETS: frozenset[str] = frozenset(
    {
        # A running Claude Code marks its children (a nested `claude` refuses to start or
        # attaches to the parent's IDE and session) and passes session credentials to them.
        "CLAUDECODE",
        "CLAUDE_CODE_ENTRYPOINT",
        "CLAUDE_CODE_SSE_PORT",
        "CLAUDE_CODE_SESSION_ID",
        "CLAUDE_SESSION_ID",
        "CLAUDE_CODE_CHILD_SESSION",
        "CLAUDE_CODE_EXECPATH",
        "CLAUDE_CODE_SESSION_KIND",
        "CLAUDE_CODE_SESSION_ACCESS_TOKEN",
        "CLAUDE_SESSION_INGRESS_TOKEN_FILE",
        "CLAUDE_CODE_WEBSOCKET_AUTH_FILE_DESCRIPTOR",
        "CLAUDE_CODE_OAUTH_TOKEN_FILE_DESCRIPTOR",
        "CLAUDE_CODE_API_KEY_FILE_DESCRIPTOR",
        "CLAUDE_CODE_MESSAGING_SOCKET",
        "CLAUDE_CODE_MESSAGING_TOKEN",
        # A running Codex marks the commands it runs (sandbox flags, its thread).
        "CODEX_SANDBOX",
        "CODEX_SANDBOX_NETWORK_DISABLED",
        "CODEX_THREAD_ID",
        "CODEX_SESSION_ID",
        "CODEX_CI",
    }
)


def child_environment(adapter: BridgeAdapter, opts: Mapping[str, Any], base: Mapping[str, str]) -> dict[str, str]:
    """The native process's environment: `base` less SESSION_SECRETS, then the adapter's
    `env(opts)`, then `opts["env"]` (explicit options win); None unsets a name."""
    env = {name: value for name, value in base.items() if name not in SESSION_SECRETS}
    extra = opts.get("env")
    for layer in (adapter.env(opts) or {}, extra if isinstance(extra, Mapping) else {}):
        for name, value in layer.items():
            if value is None:
                env.pop(str(name), None)
            else:
                env[str(name)] = str(value)
    return env


def executable_argv(opts: Mapping[str, Any], default: str) -> list[str]:
    """`opts["executable"]` (an argv list, or a command string split like a shell would)
    as the start of a command line; `[default]` without it."""
    value = opts.get("executable")
    if isinstance(value, (list, tuple)) and value:
        return [str(part) for part in value]
    if isinstance(value, str) and value.strip():
        return shlex.split(value)
    return [default]
