"""What the bridge answers from the adapter's static answers: `initialize`, and the
modes and config options added to session setup and config answers."""

from __future__ import annotations

import copy
from typing import Any

from .. import __version__
from ..acp.jsonrpc import PROTOCOL_VERSION
from .contract import BridgeAdapter, overrides

SESSION_SETUP = frozenset({"session/new", "session/load", "session/resume", "session/fork"})


def initialize(adapter: BridgeAdapter, opts: dict[str, Any]) -> dict[str, Any]:
    """The `initialize` result: the adapter's capabilities, with session list and fork
    advertised exactly when the adapter implements them."""
    capabilities = copy.deepcopy(adapter.capabilities() or {})
    sessions = dict(capabilities.get("sessionCapabilities") or {})
    for key, callback in (("list", "list_sessions"), ("fork", "fork_session")):
        if overrides(adapter, callback):
            sessions[key] = {}
        else:
            sessions.pop(key, None)
    if sessions:
        capabilities["sessionCapabilities"] = sessions
    else:
        capabilities.pop("sessionCapabilities", None)
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": capabilities,
        "authMethods": list(adapter.auth_methods(opts) or []),
        "agentInfo": {"name": adapter.name, "title": adapter.title, "version": __version__},
    }


def with_extras(adapter: BridgeAdapter, method: str, result: Any) -> Any:
    """Session setup answers carry the adapter's modes and config options (its own
    values win); config answers carry the config options."""
    if not isinstance(result, dict):
        return result
    extras: dict[str, Any] = {}
    if method in SESSION_SETUP:
        modes = [m for m in adapter.modes() or [] if isinstance(m, dict)]
        if modes:
            extras["modes"] = {"currentModeId": modes[0].get("id"), "availableModes": modes}
    if method in SESSION_SETUP or method == "session/set_config_option":
        options = adapter.config_options() or []
        if options:
            extras["configOptions"] = list(options)
    return {**extras, **result}
