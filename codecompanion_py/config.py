"""The user's `setup()` table, in CodeCompanion's shape where it applies.

    adapters = { http = { <name> = <table from adapters.extend(...)>, opts = {...} },
                 acp = { <name> = <table over a built-in agent, or a new one with extends> } }
    strategies = { chat = { adapter = "name" | { name = ..., model = ... }, opts = {...},
                            tools = {...} } }      -- see tools/registry.py
    interactions = { chat = ... }          -- the newer spelling of `strategies`
    opts = { log_level = "ERROR", system_prompt = "..." }

`adapters.http.opts` holds what applies to every HTTP request: `connect_timeout` and
`read_timeout` (seconds), `retries` (tries after a failed one, default 2; 0: none),
`retry_max_wait` (the longest `retry-after` honoured, seconds, default 60),
`max_line_bytes` (one SSE/NDJSON line or event, default 16 MiB) and `max_response_bytes`
(a whole response, default 256 MiB); see client.py.

Adapter tables are registered with the adapter registry (and the HTTP client options
become the defaults of every HttpClient made after `load()`); the rest is kept here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import adapters, client
from .acp import adapters as acp_adapters
from .chat.session import DEFAULT_SYSTEM_PROMPT
from .errors import ConfigError
from .tools.registry import ToolSettings

DEFAULT_CHAT_ADAPTER = "openai"


@dataclass
class Config:
    chat_adapter: Any = DEFAULT_CHAT_ADAPTER
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT
    log_level: str = "ERROR"
    connect_timeout: float = 10.0
    read_timeout: float = 120.0
    http: client.ClientSettings = field(default_factory=client.ClientSettings)
    tools: ToolSettings = field(default_factory=ToolSettings)


def _table(value: Any, where: str) -> Mapping[str, Any]:
    if value is None or value == []:  # Lua sends an empty table as an empty list
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must be a table")
    return value


def load(raw: Mapping[str, Any] | None) -> Config:
    """Apply a setup() table: register its adapters and return the chat settings."""
    raw = _table(raw, "setup()")
    config = Config()
    http = _table(_table(raw.get("adapters"), "adapters").get("http"), "adapters.http")
    adapters.clear_user_adapters()
    for name, definition in http.items():
        if name == "opts":
            continue
        if not isinstance(definition, (Mapping, str)):
            raise ConfigError(f"adapters.http.{name} must be a table or an adapter name")
        adapters.register(name, definition)
    acp_adapters.clear_user_adapters()
    for name, definition in _table(_table(raw.get("adapters"), "adapters").get("acp"), "adapters.acp").items():
        if name == "opts":
            continue
        if not isinstance(definition, Mapping):
            raise ConfigError(f"adapters.acp.{name} must be a table")
        acp_adapters.register(name, definition)
    for key in ("interactions", "strategies"):  # the newer spelling wins
        chat = _table(_table(raw.get(key), key).get("chat"), f"{key}.chat")
        if "adapter" in chat:
            config.chat_adapter = chat["adapter"]
            opts = _table(chat.get("opts"), f"{key}.chat.opts")
            if "system_prompt" in opts:
                config.system_prompt = opts["system_prompt"] or None
            break
    tools: dict[str, Any] = {}
    for key in ("strategies", "interactions"):  # the newer spelling wins, entry by entry
        chat = _table(_table(raw.get(key), key).get("chat"), f"{key}.chat")
        tools.update(_table(chat.get("tools"), f"{key}.chat.tools"))
    config.tools = ToolSettings.from_config(tools)
    opts = _table(raw.get("opts"), "opts")
    config.log_level = _log_level(opts.get("log_level", config.log_level))
    if "system_prompt" in opts:
        config.system_prompt = opts["system_prompt"] or None
    http_opts = _table(http.get("opts"), "adapters.http.opts")
    config.connect_timeout = float(http_opts.get("connect_timeout", config.connect_timeout))
    config.read_timeout = float(http_opts.get("read_timeout", config.read_timeout))
    config.http = _client_settings(http_opts)
    client.configure(config.http)
    return config


def _client_settings(opts: Mapping[str, Any]) -> client.ClientSettings:
    base = client.ClientSettings()
    values: dict[str, Any] = {}
    for key, kind, least in (
        ("retries", int, 0),
        ("retry_max_wait", float, 0),
        ("max_line_bytes", int, 1),
        ("max_response_bytes", int, 1),
    ):
        value = opts.get(key, getattr(base, key))
        try:
            number = kind(value)
        except (TypeError, ValueError):
            number = None
        if number is None or isinstance(value, bool) or number < least:
            raise ConfigError(f"adapters.http.opts.{key} must be a number of at least {least}, not {value!r}")
        values[key] = number
    return client.ClientSettings(**values)


# CodeCompanion's level names, as Python's logging spells them.
_LEVELS = {
    "TRACE": "DEBUG",
    "DEBUG": "DEBUG",
    "INFO": "INFO",
    "WARN": "WARNING",
    "WARNING": "WARNING",
    "ERROR": "ERROR",
}


def _log_level(value: Any) -> str:
    level = _LEVELS.get(str(value).upper())
    if level is None:
        raise ConfigError(f"opts.log_level {value!r} is not one of {', '.join(sorted(_LEVELS))}")
    return level
