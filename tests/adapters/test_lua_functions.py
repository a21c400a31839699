"""Lua functions of the config as the engine sees them: references called through an
editor. `FakeLua` answers `lua.call` as functions.lua does (same payload, same answer
shape), with Python functions standing in for the Lua ones; the e2e tests run real Lua."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from codecompanion_py import adapters, config
from codecompanion_py.adapters import lua
from codecompanion_py.adapters.base import prepare, resolve_env_string
from codecompanion_py.adapters.lua import LuaFunction
from codecompanion_py.adapters.request import build_request
from codecompanion_py.client import HttpClient
from codecompanion_py.errors import ConfigError
from codecompanion_py.messages import Message
from codecompanion_py.stream.normalizer import StreamNormalizer


class FakeLua:
    """An editor whose `lua.call` runs Python functions registered as Lua ones."""

    def __init__(self) -> None:
        self.functions: dict[int, Any] = {}
        self.calls: list[dict[str, Any]] = []

    def ref(self, fn: Any, path: str) -> dict[str, Any]:
        fn_id = len(self.functions) + 1
        self.functions[fn_id] = fn
        return {lua.REF_KEY: fn_id, "path": path}

    reviews_edits = False  # no diff review after a write here

    async def call(self, method: str, args: dict[str, Any]) -> Any:
        assert method == "lua.call"
        self.calls.append(args)
        await asyncio.sleep(0)  # an answer comes later, as from Neovim
        call_args = list(args["args"])
        try:
            result = self.functions[args["id"]](*call_args)
        except Exception as error:  # functions.lua: the path and the error
            raise ConfigError(f"{args['path']} failed: {error}") from None
        results = list(result) if isinstance(result, tuple) else [result]
        return {"results": results, "args": {str(i): call_args[i - 1] for i in args.get("back", [])}}


def local(fake: FakeLua, **overrides: Any) -> dict[str, Any]:
    return lua.decode({"__extends": "openai_compatible", "env": {"url": "http://127.0.0.1:9"}, **overrides})


async def request_for(adapter_data: dict[str, Any], fake: FakeLua, **kwargs: Any):
    adapter = adapters.resolve(adapter_data)
    return await build_request(adapter, [Message.of("user", "hi")], editor=fake, **kwargs)


def test_decode_makes_references_lua_functions_and_copies_keep_them():
    data = lua.decode({"env": {"api_key": {"__lua_fn": 7, "path": "adapters.http.x.env.api_key"}}, "n": [1, {"a": 2}]})
    fn = data["env"]["api_key"]
    assert isinstance(fn, LuaFunction) and fn.id == 7 and fn.path == "adapters.http.x.env.api_key"
    assert data["n"] == [1, {"a": 2}]
    adapter = adapters.resolve({"name": "x", "env": data["env"], "url": "http://h"})
    assert adapter.copy().env["api_key"] is fn


async def test_env_function_gets_the_adapter_and_its_value_is_the_key():
    fake = FakeLua()
    seen = {}

    def api_key(self):
        seen.update(self)
        return "lua-key"

    data = local(fake, env={"url": "http://127.0.0.1:9", "api_key": fake.ref(api_key, "adapters.http.x.env.api_key")})
    ready, request = await request_for(data, fake)
    assert request.headers["Authorization"] == "Bearer lua-key"
    assert request.secrets == ("lua-key",)  # scrubbed from errors like any key
    assert seen["name"] == "openai_compatible" and seen["__adapter"] is True
    assert {"url", "env", "headers", "parameters", "schema", "opts", "formatted_name"} <= set(seen)


async def test_schema_default_function_is_the_model_and_env_can_point_at_it():
    fake = FakeLua()
    data = local(
        fake,
        env={"url": "http://127.0.0.1:9", "model_for_url": "schema.model.default"},
        url="${url}/v1/${model_for_url}",
        schema={"model": {"default": fake.ref(lambda self: "picked-" + self["name"], "x.schema.model.default")}},
    )
    ready, request = await request_for(data, fake)
    assert request.url == "http://127.0.0.1:9/v1/picked-openai_compatible"
    assert ready.model == "picked-openai_compatible"
    assert b'"model":"picked-openai_compatible"' in request.body


async def test_form_parameters_override_over_a_nested_layout_adapter_and_self_changes_come_back():
    fake = FakeLua()

    def form_parameters(self, params, messages):
        assert messages == [{"role": "user", "content": "hi"}]
        params["temperature"] = 0.5
        return params

    def setup(self):
        self["parameters"]["from_setup"] = True
        self["headers"]["X-Setup"] = "yes"
        return True

    data = local(
        fake,
        handlers={
            "form_parameters": fake.ref(form_parameters, "x.handlers.form_parameters"),
            "setup": fake.ref(setup, "x.handlers.setup"),
        },
    )
    ready, request = await request_for(data, fake)
    assert b'"temperature":0.5' in request.body and b'"from_setup":true' in request.body
    assert request.headers["X-Setup"] == "yes"
    assert b'"messages":[{"role":"user","content":"hi"}]' in request.body  # the built-in build_messages still runs


async def test_an_empty_table_from_lua_means_no_fields():
    fake = FakeLua()
    data = local(fake, handlers={"request": {"build_body": fake.ref(lambda self, payload: [], "x.build_body")}})
    _, request = await request_for(data, fake)
    assert b'"messages"' in request.body


async def test_enabled_choices_and_validate_functions():
    fake = FakeLua()
    data = local(
        fake,
        schema={
            "model": {"default": "m", "mapping": "parameters"},
            "top_p": {
                "default": 0.3,
                "mapping": "parameters",
                "enabled": fake.ref(lambda self: self["schema"]["model"]["default"] != "m", "x.top_p.enabled"),
            },
            "temperature": {
                "default": 1,
                "mapping": "parameters",
                "validate": fake.ref(lambda n: (n <= 2, "at most 2"), "x.temperature.validate"),
            },
        },
    )
    _, request = await request_for(data, fake)
    assert b"top_p" not in request.body
    with pytest.raises(ConfigError, match="temperature=5 is not valid: at most 2"):
        await request_for(data, fake, settings={"temperature": 5})


async def test_a_failing_function_is_a_config_error_naming_its_path():
    fake = FakeLua()

    def broken(self):
        raise RuntimeError("vault is locked")

    data = local(fake, env={"url": "http://127.0.0.1:9", "api_key": fake.ref(broken, "adapters.http.x.env.api_key")})
    with pytest.raises(ConfigError, match="adapters.http.x.env.api_key failed: vault is locked"):
        await request_for(data, fake)


async def test_without_an_editor_a_lua_function_is_a_clear_error():
    fake = FakeLua()
    data = local(
        fake, env={"url": "http://127.0.0.1:9", "api_key": fake.ref(lambda self: "k", "adapters.http.x.env.api_key")}
    )
    with pytest.raises(ConfigError, match="adapters.http.x.env.api_key: a Lua function needs Neovim"):
        await prepare(adapters.resolve(data))
    handler = local(fake, handlers={"setup": fake.ref(lambda self: True, "adapters.http.x.handlers.setup")})
    with pytest.raises(ConfigError, match="adapters.http.x.handlers.setup: a Lua function cannot be called here"):
        await prepare(adapters.resolve(handler))


def test_the_model_of_a_lua_default_outside_a_request_is_the_last_one_seen():
    fn = LuaFunction(990001, "x.schema.model.default")
    adapter = adapters.resolve({"name": "x", "url": "http://h", "schema": {"model": {"default": fn}}})
    assert adapter.model is None
    fn.last = "seen-before"
    assert adapter.model == "seen-before"


async def test_a_lua_chat_output_gets_codecompanions_frames_and_fills_tools():
    fake = FakeLua()
    frames = []

    def chat_output(self, data, tools):
        frames.append(data)
        if '"call"' in data:
            tools.append(
                {"_index": 0, "id": "call_1", "type": "function", "function": {"name": "calc", "arguments": '{"a":'}}
            )
            tools.append({"_index": 0, "function": {"arguments": "1}"}})
            return None
        if "stop" in data:
            return {"status": "success", "finish_reason": "stop", "output": {"role": "assistant"}}
        return {"status": "success", "output": {"role": "assistant", "content": "Hi", "reasoning": {"content": "hmm"}}}

    data = local(fake, handlers={"chat_output": fake.ref(chat_output, "x.handlers.chat_output")})
    ready = await prepare(adapters.resolve(data), editor=fake)
    normalizer = StreamNormalizer(ready)
    body = b'data: {"text":1}\n\ndata: {"call":1}\n\ndata: {"stop":1}\n\n'
    events = await normalizer.normalize_chunk(body)
    events += await normalizer.finish_async()
    assert frames == ['data: {"text":1}', 'data: {"call":1}', 'data: {"stop":1}']
    final = events[-1]
    assert final.message.text == "Hi"
    call = final.message.tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("call_1", "calc", {"a": 1})
    assert [p.text for p in final.message.parts if p.__class__.__name__ == "ReasoningPart"] == ["hmm"]
    assert all("back" not in c or c["back"] == [3] for c in fake.calls)  # per chunk: self is not sent back


async def test_cancelling_while_lua_answers_unwinds_the_sync_code():
    never = asyncio.get_running_loop().create_future()

    class Silent:
        reviews_edits = False  # no diff review after a write here

        async def call(self, method, args):
            return await never

    fn = LuaFunction(1, "x.handlers.setup")
    reached_after = []

    def sync_code():
        fn("arg")
        reached_after.append(True)

    task = asyncio.ensure_future(lua.run_sync(Silent(), sync_code))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert reached_after == []


async def test_resolve_env_order_matches_codecompanion(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_TEST_KEY", "from-env")
    monkeypatch.delenv("CC_UNSET_KEY", raising=False)
    key_file = tmp_path / "key"
    key_file.write_text("from-file\n")
    assert await resolve_env_string("a", "k", "cmd:echo from-cmd") == "from-cmd"
    assert await resolve_env_string("a", "k", f"file:{key_file}") == "from-file"
    assert await resolve_env_string("a", "k", "CC_TEST_KEY") == "from-env"
    assert await resolve_env_string("a", "k", "schema.model.default", lookup=lambda p: "m1") == "m1"
    assert await resolve_env_string("a", "k", "sk-literal-KEY") == "sk-literal-KEY"
    assert await resolve_env_string("a", "k", "ABCDEF123") == "ABCDEF123"  # a literal, not a variable's name
    assert await resolve_env_string("a", "k", "CC_UNSET_KEY") is None  # a variable that is not set
    assert "CC_UNSET_KEY" not in os.environ


def test_config_extend_tables_opts_and_chat_model():
    cfg = config.load(
        {
            "adapters": {
                "http": {
                    "extend": {"openai": {"env": {"api_key": "sk-x"}}, "mine": {"opts": {"stream": False}}},
                    "mine": {"__extends": "openai_compatible", "env": {"url": "http://127.0.0.1:1"}},
                    "opts": {"show_presets": False, "cache_models_for": 60, "proxy": "http://127.0.0.1:3128"},
                },
                "acp": {"extend": {"codex": {"defaults": {"model": "gpt-x"}}}, "opts": {"show_presets": False}},
                "opts": {"cmd_timeout": 5000},
            },
            "interactions": {"chat": {"adapter": "copilot", "model": "auto", "opts": {"system_prompt": ""}}},
        }
    )
    mine = cfg.adapters.http("mine")
    assert "extend" not in cfg.adapters.names("http") and "opts" not in cfg.adapters.names("http")
    assert cfg.adapters.http("openai").env["api_key"] == "sk-x"
    assert mine.opts["stream"] is False and mine.env["url"] == "http://127.0.0.1:1"
    assert cfg.chat_adapter == {"name": "copilot", "model": "auto"}
    assert cfg.system_prompt is None
    assert config.adapter_names(cfg) == ["mine", "openai", "codex"]
    assert cfg.http.proxy == "http://127.0.0.1:3128" and cfg.http.verify is True
    assert cfg.adapters.cmd_timeout == 5.0 and mine.opts["cmd_timeout"] == 5.0 and cfg.models_cache_seconds == 60
    assert cfg.adapters.agent("codex").defaults["model"] == "gpt-x"


def test_a_system_prompt_function_is_kept_and_a_bad_one_refused():
    cfg = config.load({"interactions": {"chat": {"opts": {"system_prompt": {"__lua_fn": 4, "path": "p"}}}}})
    assert isinstance(cfg.system_prompt, LuaFunction)
    with pytest.raises(ConfigError, match="system_prompt must be a string or a function"):
        config.load({"interactions": {"chat": {"opts": {"system_prompt": 3}}}})


async def test_the_chat_resolves_a_system_prompt_function_before_each_request():
    from codecompanion_py.chat.session import DEFAULT_SYSTEM_PROMPT, ChatSession

    class ListSink(list):
        push = list.append

    fake = FakeLua()
    prompts = iter(["first prompt", "second prompt"])

    def system_prompt(ctx):
        assert ctx["default_system_prompt"] == DEFAULT_SYSTEM_PROMPT and ctx["adapter"]["name"] == "openai_compatible"
        return next(prompts)

    fn = lua.decode(fake.ref(system_prompt, "interactions.chat.opts.system_prompt"))
    client = HttpClient()
    session = ChatSession(
        1, adapters.resolve("openai_compatible"), client=client, sink=ListSink(), system_prompt=fn, editor=fake
    )
    await session._refresh_system_prompt()
    session.history.append(Message.of("user", "hi"))
    await session._refresh_system_prompt()
    await client.aclose()
    assert [m.text for m in session.history] == ["second prompt", "hi"]
    assert fake.calls[0]["context"] == "system_prompt"


async def test_parse_meta_from_the_llama_cpp_example_turns_an_extra_field_into_reasoning():
    fake = FakeLua()

    def parse_meta(self, data):
        extra = data["extra"]
        if extra.get("reasoning_content"):
            data["output"]["reasoning"] = {"content": extra["reasoning_content"]}
        return data

    data = local(fake, handlers={"parse_message_meta": fake.ref(parse_meta, "x.handlers.parse_message_meta")})
    ready = await prepare(adapters.resolve(data), editor=fake)
    normalizer = StreamNormalizer(ready)
    body = (
        b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"","extra_reasoning":1,"reasoning_content":"thinking"}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":"Answer"},"finish_reason":"stop"}]}\n\n'
    )
    events = await normalizer.normalize_chunk(body) + await normalizer.finish_async()
    final = events[-1].message
    assert final.text == "Answer"
    assert [p.text for p in final.parts if p.__class__.__name__ == "ReasoningPart"] == ["thinking"]


async def test_an_acp_agents_env_function_is_called_when_it_starts():
    fake = FakeLua()
    cfg = config.load(
        lua.decode(
            {
                "adapters": {
                    "acp": {
                        "codex": {
                            "__extends": "codex",
                            "env": {
                                "OPENAI_API_KEY": fake.ref(
                                    lambda self: "agent-key-" + self["name"], "adapters.acp.codex.env.OPENAI_API_KEY"
                                )
                            },
                        }
                    }
                }
            }
        )
    )
    agent = cfg.adapters.agent("codex")
    agent.editor = fake
    assert (await agent.environment())["OPENAI_API_KEY"] == "agent-key-codex"
    agent.editor = None
    with pytest.raises(ConfigError, match="adapters.acp.codex.env.OPENAI_API_KEY: a Lua function needs Neovim"):
        await agent.environment()
