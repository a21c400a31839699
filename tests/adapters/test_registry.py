"""resolve(), extend(), schema mapping and env resolution."""

import pytest

from codecompanion_py import adapters
from codecompanion_py.adapters import EXTENDS_KEY, Adapters, HTTPAdapter, extend, prepare, resolve
from codecompanion_py.adapters.base import map_schema_to_params
from codecompanion_py.errors import ConfigError


def test_resolve_by_name_gives_independent_copies():
    first = resolve("openai")
    first.headers["X"] = "1"
    first.set_model("changed")
    second = resolve("openai")
    assert "X" not in second.headers
    assert second.model == "gpt-4.1"
    assert second.url == "https://api.openai.com/v1/chat/completions"


def test_a_requests_copy_changes_nothing_in_its_adapter_and_shares_its_functions():
    def key(_adapter):
        return "k"

    adapter = resolve({"name": "x", "url": "http://h", "env": {"api_key": key}, "body": {"stop": ["a"], "t": (1, [2])}})
    copy = adapter.copy()
    copy.body["stop"].append("b")
    copy.body["t"][1].append(3)
    copy.schema.setdefault("model", {})["default"] = "other"
    copy.headers["X"] = "1"
    assert adapter.body == {"stop": ["a"], "t": (1, [2])}
    assert adapter.model != "other" and "X" not in adapter.headers
    assert copy.env["api_key"] is key and copy.to_data() != adapter.to_data()


async def test_only_an_adapter_that_holds_a_lua_function_runs_its_handlers_where_lua_can_be_called():
    from codecompanion_py.adapters.base import prepare
    from codecompanion_py.adapters.lua import LuaFunction, in_context

    seen = []

    def setup(self):
        seen.append(in_context())
        return True

    editor = object()  # never called: no Lua function is
    plain = resolve({"name": "x", "url": "http://h", "handlers": {"lifecycle": {"setup": setup}}})
    with_lua = resolve(
        {
            "name": "y",
            "url": "http://h",
            "handlers": {"lifecycle": {"setup": setup}},
            "opts": {"hook": LuaFunction(7, "opts.hook")},
        }
    )
    assert (plain.copy().holds_lua, with_lua.copy().holds_lua) == (False, True)
    await prepare(plain, editor=editor)
    await prepare(with_lua, editor=editor)
    assert seen == [False, True]


def test_resolve_codecompanion_adapter_table_with_model():
    assert resolve({"name": "openai", "model": "gpt-4o-mini"}).model == "gpt-4o-mini"
    assert resolve("openai", model="o3").model == "o3"


def test_unknown_adapter_names_the_available_ones():
    with pytest.raises(ConfigError, match="unknown adapter 'nope'; available: .*openai"):
        resolve("nope")


def test_extend_overrides_deeply_and_keeps_the_rest():
    adapter = extend(
        "openai_compatible", {"env": {"url": "http://127.0.0.1:9"}, "schema": {"model": {"default": "qwen"}}}
    )
    assert adapter.env["url"] == "http://127.0.0.1:9"
    assert adapter.env["chat_url"] == "/v1/chat/completions"
    assert adapter.model == "qwen"
    assert adapter.schema["model"]["mapping"] == "parameters"
    assert adapter.handlers["response"]["parse_chat"] is resolve("openai").handlers["response"]["parse_chat"]


def test_user_adapter_from_lua_extend_table():
    registry = Adapters(
        {
            "my_llm": {
                EXTENDS_KEY: "openai_compatible",
                "env": {"url": "http://127.0.0.1:1"},
                "schema": {"model": {"default": "m"}},
            }
        }
    )
    adapter = registry.http("my_llm")
    assert (adapter.name, adapter.formatted_name, adapter.model) == ("my_llm", "my_llm", "m")
    assert "my_llm" in registry.names("http") and "my_llm" not in adapters.BUILTIN.names("http")


def test_user_adapter_may_extend_the_builtin_of_the_same_name():
    registry = Adapters({"openai": {EXTENDS_KEY: "openai", "schema": {"model": {"default": "gpt-5"}}}})
    adapter = registry.http("openai")
    assert adapter.model == "gpt-5"
    assert adapter.formatted_name == "OpenAI"


@pytest.mark.parametrize(
    "name, vision", [("openai", True), ("anthropic", True), ("deepseek", False), ("xai", False), ("kimi", False)]
)
def test_vision_is_codecompanions_opts_vision_per_built_in(name, vision):
    assert resolve(name).vision is vision


def test_vision_is_off_when_absent_or_off_and_for_a_model_whose_choice_lacks_it():
    choices = {"sees": {"opts": {"has_vision": True}}, "blind": {"opts": {"can_reason": True}}, "plain": {}}
    adapter = extend("openai", {"schema": {"model": {"choices": choices}}})
    assert [resolve(adapter, model=m).vision for m in ("sees", "blind", "plain")] == [True, False, True]
    assert not extend("openai", {"opts": {"vision": False}}).vision
    assert not HTTPAdapter.from_data({"name": "own", "url": "http://127.0.0.1:1"}).vision  # as CodeCompanion


def test_unknown_adapter_keys_are_refused():
    with pytest.raises(ConfigError, match=r"unknown keys \['urll'\]"):
        HTTPAdapter.from_data({"name": "x", "urll": "typo"})


def test_schema_maps_defaults_settings_and_nested_keys():
    adapter = HTTPAdapter(
        name="s",
        schema={
            "model": {"mapping": "parameters", "default": "m1"},
            "temperature": {"mapping": "parameters", "default": None},
            "reasoning.effort": {"mapping": "parameters", "default": lambda self: "low"},
            "hidden": {"mapping": "parameters", "default": 1, "enabled": lambda self: False},
            "thinking": {"mapping": "body.generationConfig", "default": 128},
        },
    )
    map_schema_to_params(adapter, {"temperature": 0.2})
    assert adapter.parameters == {"model": "m1", "temperature": 0.2, "reasoning": {"effort": "low"}}
    assert adapter.body == {"generationConfig": {"thinking": 128}}


def test_schema_choices_are_enforced_except_for_models():
    adapter = resolve("openai")
    with pytest.raises(ConfigError, match="reasoning_effort='extreme' is not one of"):
        map_schema_to_params(adapter, {"reasoning_effort": "extreme"})
    map_schema_to_params(adapter, {"model": "a-brand-new-model"})
    assert adapter.parameters["model"] == "a-brand-new-model"


async def test_prepare_resolves_env_kinds_and_substitutes(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_TEST_KEY", "s3cret-env")
    key_file = tmp_path / "key"
    key_file.write_text("s3cret-file\n")
    adapter = HTTPAdapter(
        name="t",
        url="${base}/v1/${model}",
        env={
            "base": "http://127.0.0.1:5",
            "model": "schema.model.default",
            "env_key": "CC_TEST_KEY",
            "file_key": f"file:{key_file}",
            "cmd_key": "cmd:printf s3cret-cmd",
        },
        headers={"A": "Bearer ${env_key}", "B": "${file_key}", "C": "${cmd_key}"},
        schema={"model": {"mapping": "parameters", "default": "m7"}},
    )
    ready = await prepare(adapter)
    assert ready.url == "http://127.0.0.1:5/v1/m7"
    assert ready.headers == {"A": "Bearer s3cret-env", "B": "s3cret-file", "C": "s3cret-cmd"}
    assert "s3cret" not in repr(ready)
    assert adapter.url == "${base}/v1/${model}"  # the original is untouched


async def test_missing_required_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"openai: api_key \(environment variable OPENAI_API_KEY\) is not set"):
        await prepare(resolve("openai"))


async def test_optional_missing_key_drops_the_header(monkeypatch):
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    ready = await prepare(resolve("openai_compatible"))
    assert "Authorization" not in ready.headers
    assert ready.url == "http://localhost:11434/v1/chat/completions"


async def test_env_command_failure_and_timeout_are_clear_and_secret_free():
    failing = HTTPAdapter(name="f", env={"api_key": "cmd:echo topsecret; exit 3"})
    with pytest.raises(ConfigError, match="env 'api_key' command failed with exit code 3") as info:
        await prepare(failing)
    assert "topsecret" not in str(info.value)
    slow = HTTPAdapter(name="s", env={"api_key": "cmd:sleep 5"}, opts={"cmd_timeout": 0.2})
    with pytest.raises(ConfigError, match="timed out after 0.2s"):
        await prepare(slow)


async def test_setup_handler_sets_streaming_parameters(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    ready = await prepare(resolve("openai"))
    assert ready.parameters["stream"] is True
    assert ready.parameters["stream_options"] == {"include_usage": True}
    plain = resolve("openai")
    plain.opts["stream"] = False
    assert "stream" not in (await prepare(plain)).parameters


def test_one_registry_knows_both_kinds_and_the_users_entries_of_each():
    from codecompanion_py.adapters.acp import AcpAdapter

    registry = Adapters(
        {"mine": {EXTENDS_KEY: "openai"}}, {"my_agent": {"extends": "codex", "formatted_name": "My Codex"}}
    )
    assert [registry.kind(n) for n in ("openai", "mine", "codex", "my_agent", "nope", None)] == [
        "http",
        "http",
        "acp",
        "acp",
        None,
        None,
    ]
    assert "mine" in registry.names("http") and "my_agent" in registry.names("acp")
    assert "codex" not in registry.names("http") and "openai" not in registry.names("acp")
    assert registry.user_names() == ["mine", "my_agent"]
    agent = registry.resolve("my_agent")
    assert isinstance(agent, AcpAdapter) and (agent.formatted_name, agent.command()) == ("My Codex", ["codex-acp"])
    assert (
        isinstance(registry.resolve("mine", model="o3"), HTTPAdapter)
        and registry.http("mine", model="o3").model == "o3"
    )
    with pytest.raises(ConfigError, match="unknown ACP adapter 'nope'"):
        registry.agent("nope")


def test_every_built_in_http_adapter_is_listed_in_providers_py():
    from codecompanion_py.adapters.http import providers

    assert set(adapters.BUILTIN.names("http")) == set(providers.MODULES) | set(providers.ADAPTERS)
    for name in adapters.BUILTIN.names("http"):
        assert resolve(name).name == name
