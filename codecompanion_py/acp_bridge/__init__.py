"""An ACP bridge for coding agents that do not speak ACP: `codecompanion-py acp-bridge NAME`
serves ACP on stdio and translates to and from the native CLI through a `BridgeAdapter`
(`contract.py`). Built in: `claude` (Claude Code stream-json) and `codex` (`codex exec
--json`, one process per prompt); `pkg.module:Class` names a user adapter.

A program of its own and a client of ACP's wire: it imports `acp.jsonrpc` and
`acp.agent_process`; nothing outside the `acp-bridge` command (cli.py) and health.py
imports it. Where things are: `contract.py` (what an adapter implements and gets back),
`messages.py` (building and reading ACP messages), `environment.py` (the native process's
environment and argv), `server.py` (the bridge), `arguments.py` (the command line)."""

from __future__ import annotations

import importlib

from ..errors import ConfigError
from .contract import BridgeAdapter

BUILTIN = {
    "claude": "codecompanion_py.acp_bridge.claude_stream_json:ClaudeStreamJsonAdapter",
    "codex": "codecompanion_py.acp_bridge.codex_exec:CodexExecAdapter",
}


def load_adapter(name: str) -> BridgeAdapter:
    """A built-in adapter by name, or `package.module:Class` (a BridgeAdapter subclass)."""
    target = BUILTIN.get(name, name)
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(f"unknown bridge adapter {name!r}; use {', '.join(sorted(BUILTIN))} or module.path:Class")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(f"cannot import {module_name!r} for bridge adapter {name!r}: {error}") from None
    cls = getattr(module, attribute, None)
    if not (isinstance(cls, type) and issubclass(cls, BridgeAdapter)):
        raise ConfigError(f"{target!r} is not a BridgeAdapter subclass")
    return cls()


__all__ = ["BUILTIN", "BridgeAdapter", "load_adapter"]
