import os

import pytest

from codecompanion_py import adapters, config
from codecompanion_py.adapters import Adapters
from codecompanion_py.errors import ConfigError


def test_codecompanion_shape_registers_adapters_and_picks_the_chat_adapter():
    cfg = config.load(
        {
            "adapters": {
                "http": {
                    "mine": {"__extends": "openai_compatible", "env": {"url": "http://127.0.0.1:1"}},
                    "opts": {"read_timeout": 30},
                }
            },
            "strategies": {"chat": {"adapter": "mine"}},
        }
    )
    assert cfg.chat_adapter == "mine" and cfg.read_timeout == 30
    assert cfg.adapters.http("mine").env["url"] == "http://127.0.0.1:1"
    with pytest.raises(ConfigError, match="unknown adapter 'mine'"):
        adapters.resolve("mine")  # only the config that defined it knows it


def test_loading_a_config_changes_nothing_another_config_sees():
    first = config.load({"adapters": {"http": {"mine": {"__extends": "openai", "url": "http://first"}}}})
    second = config.load(
        {
            "adapters": {
                "http": {"mine": {"__extends": "anthropic", "url": "http://second"}},
                "acp": {"codex": {"commands": {"default": ["/opt/codex-acp"]}}},
                "opts": {"cmd_timeout": 5000},
            }
        }
    )
    assert (first.adapters.http("mine").url, second.adapters.http("mine").url) == ("http://first", "http://second")
    assert first.adapters.agent("codex").command() == ["codex-acp"]
    assert second.adapters.agent("codex").command() == ["/opt/codex-acp"]
    assert (first.adapters.agent("codex").cmd_timeout, second.adapters.agent("codex").cmd_timeout) == (20.0, 5.0)
    assert "cmd_timeout" not in first.adapters.http("mine").opts
    assert second.adapters.http("mine").opts["cmd_timeout"] == 5.0


def test_interactions_wins_over_strategies_and_tables_are_kept():
    cfg = config.load(
        {
            "strategies": {"chat": {"adapter": "openai"}},
            "interactions": {"chat": {"adapter": {"name": "openai", "model": "o3"}}},
        }
    )
    assert cfg.adapters.http(cfg.chat_adapter).model == "o3"


def test_empty_lua_tables_and_bad_shapes():
    assert config.load({"adapters": {"http": []}}).chat_adapter == "openai"
    assert config.load({"adapters": {"http": {"x": 3}}}).problems == [
        "adapters.http.x must be a table or an adapter name; it was left out"
    ]
    with pytest.raises(ConfigError, match="setup\\(\\) must be a table"):
        config.load("nope")


def test_engine_modules_do_not_import_pynvim():
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['pynvim'] = None\n"
        "import codecompanion_py.chat.session, codecompanion_py.cli, codecompanion_py.generation, "
        "codecompanion_py.engine, codecompanion_py.stream"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_health_reports_a_broken_user_adapter_by_name():
    from codecompanion_py import health

    report = health.report(Adapters({"broken": {"__extends": "missing_base"}}))
    assert "unknown adapter 'missing_base'" in report["adapter_errors"]["broken"]
    assert "OPENAI_API_KEY" in report["keys"]


def test_log_levels_in_codecompanion_spelling():
    assert config.load({"opts": {"log_level": "trace"}}).log_level == "TRACE"
    assert config.load({"opts": {"log_level": "WARN"}}).log_level == "WARN"
    with pytest.raises(ConfigError, match="opts.log_level 'LOUD' is not one of"):
        config.load({"opts": {"log_level": "LOUD"}})


def test_health_says_which_agents_are_installed(tmp_path, monkeypatch):
    from codecompanion_py import health

    agent = tmp_path / "my-agent"
    agent.write_text("#!/bin/sh\n")
    agent.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    registry = Adapters(
        acp={
            "mine": {"commands": {"default": ["my-agent", "--acp"]}},
            "codex": {"commands": {"default": ["surely-missing-codex-acp"]}},
        }
    )
    agents = health.report(registry)["agents"]
    assert agents["mine"]["found"] is True
    assert agents["codex"] == {
        "command": "surely-missing-codex-acp",
        "found": False,
        "install": "npm install -g @zed-industries/codex-acp",
    }


def test_acp_adapters_come_from_setup():
    loaded = config.load({"adapters": {"acp": {"codex": {"commands": {"default": ["/opt/codex-acp"]}}}}})
    assert loaded.adapters.agent("codex").command() == ["/opt/codex-acp"]
    assert config.load({"adapters": {"acp": {"bad": 3}}}).problems == [
        "adapters.acp.bad must be a table; it was left out"
    ]
    assert adapters.BUILTIN.agent("codex").command() == ["codex-acp"]


def test_the_default_system_prompt_knows_the_language_cwd_date_editor_and_os():
    from codecompanion_py.chat.session import DEFAULT_SYSTEM_PROMPT

    french = config.load({"opts": {"language": "French"}, "__editor": {"nvim_version": "0.11.4", "os": "Linux"}})
    prompt = french.chat_system_prompt("/home/me/project")
    assert prompt.startswith(DEFAULT_SYSTEM_PROMPT)
    for fact in (
        "written in the French language",
        "working directory is /home/me/project",
        "Neovim version is 0.11.4",
        "on a Linux machine",
        "The current date is ",
    ):
        assert fact in prompt
    assert "English language" in config.load({}).chat_system_prompt("/x")
    own = config.load({"opts": {"language": "French"}, "interactions": {"chat": {"opts": {"system_prompt": "Mine."}}}})
    assert own.chat_system_prompt("/x") == "Mine."


def test_a_bad_adapter_entry_is_left_out_and_the_rest_of_the_config_applies():
    loaded = config.load(
        {
            "adapters": {"http": {"broken": 42, "empty": [], "mine": {"__extends": "openai"}}, "acp": {"odd": "x"}},
            "interactions": {"chat": {"adapter": "mine"}},
        }
    )
    assert loaded.chat_adapter == "mine" and {"mine", "empty"} <= set(loaded.adapters.user_names())
    assert loaded.problems == [
        "adapters.http.broken must be a table or an adapter name; it was left out",
        "adapters.acp.odd must be a table; it was left out",
    ]
