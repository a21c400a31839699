"""Each engine holds its own config: loading one changes nothing another engine sees."""

from __future__ import annotations

from typing import Any

import pytest

from codecompanion_py.engine import Engine
from codecompanion_py.ui import ops
from tests.test_engine import RecordingChannel


def _setup(name: str, formatted: str) -> dict[str, Any]:
    return {
        "adapters": {
            "http": {
                name: {"__extends": "openai_compatible", "env": {"url": "http://127.0.0.1:9"}},
                "local": {"__extends": "openai_compatible", "formatted_name": formatted},
            },
            "acp": {f"{name}_agent": {"commands": {"default": ["true"]}}},
        },
        "interactions": {"chat": {"adapter": "local"}},
    }


def test_two_engines_with_two_configs_see_only_their_own_adapters(tmp_path):
    first, second = RecordingChannel(), RecordingChannel()
    engines = [Engine(first), Engine(second)]
    try:
        engines[0].dispatch("config.set", _setup("only_first", "First")).result(10)
        engines[1].dispatch("config.set", _setup("only_second", "Second")).result(10)
        names = [set(engine.request("adapters", {})) for engine in engines]
        assert {"only_first", "only_first_agent"} <= names[0] and not {"only_second", "only_second_agent"} & names[0]
        assert {"only_second", "only_second_agent"} <= names[1] and not {"only_first", "only_first_agent"} & names[1]
        for engine, bridge, shown in ((engines[0], first, "First"), (engines[1], second, "Second")):
            engine.dispatch("chat.open", {"chat_id": 1, "cwd": str(tmp_path)}).result(10)
            ready = bridge.wait(lambda b=bridge: [op for op in b.ops() if isinstance(op, ops.Ready)], "Ready")
            assert ready[0].adapter.formatted_name == shown
    finally:
        for engine in engines:
            engine.shutdown()


async def test_the_cmd_timeout_of_the_config_bounds_mcp_servers_env_commands_too():
    from codecompanion_py.errors import ConfigError
    from codecompanion_py.mcp.client import McpServer

    server = McpServer("s", {}, cwd=".", notice=lambda *_: None, cmd_timeout=0.2)
    with pytest.raises(ConfigError, match="timed out after 0.2s"):
        await server.value("TOKEN", "cmd:sleep 5")


def test_an_engine_gives_its_mcp_servers_the_configs_cmd_timeout():
    engine = Engine(RecordingChannel())
    try:
        engine.dispatch("config.set", {"adapters": {"opts": {"cmd_timeout": 3000}}}).result(10)
        assert engine.mcp.cmd_timeout == 3.0
    finally:
        engine.shutdown()


def test_two_engines_give_their_clients_and_mcp_servers_their_own_proxy():
    """The HTTP settings are the config's, passed to whatever makes a client: no process-wide
    default that the last config loaded would win."""
    from codecompanion_py import outbound

    first, second = Engine(RecordingChannel()), Engine(RecordingChannel())
    try:
        for engine, proxy in ((first, "http://127.0.0.1:3128"), (second, "http://127.0.0.1:8080")):
            engine.dispatch("config.set", {"adapters": {"http": {"opts": {"proxy": proxy}}}}).result(10)
        assert [e.mcp.http.proxy for e in (first, second)] == ["http://127.0.0.1:3128", "http://127.0.0.1:8080"]
        assert [e.client.settings.proxy for e in (first, second)] == [e.mcp.http.proxy for e in (first, second)]
        assert not hasattr(outbound, "configure")
    finally:
        first.shutdown()
        second.shutdown()
