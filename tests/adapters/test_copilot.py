"""Copilot: the GitHub login from copilot.vim's files exchanged for a Copilot token (cached,
exchanged again when due), the editor headers, each model sent to the endpoint it supports
(Chat Completions or Responses), and Copilot's reasoning fields kept and sent back. One local
server on 127.0.0.1 plays both GitHub (the token exchange) and Copilot (models, chat)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx
import msgspec
import pytest

from codecompanion_py.adapters import call_handler, extend, resolve
from codecompanion_py.adapters.http import copilot
from codecompanion_py.adapters.models import clear_cache, list_models
from codecompanion_py.adapters.request import build_request
from codecompanion_py.client import HttpClient
from codecompanion_py.demo.server import Reply, ScriptedServer, json_reply
from codecompanion_py.events import ErrorEvent, FinalEvent, ReasoningEvent, TokenEvent
from codecompanion_py.messages import ImagePart, Message, ReasoningPart, TextPart, ToolCall, ToolResultPart, ToolSpec
from codecompanion_py.stream.iterators import HttpStreamIterator, replay_body, replay_stream

FIXTURES = Path(__file__).parent.parent / "fixtures" / "copilot"
GITHUB_TOKEN = "gho_not_a_real_token_0123456789"
OPAQUE = "OPAQUE+state/0123=="
TOOLS = [ToolSpec(name="read_file", parameters={"type": "object", "properties": {"path": {"type": "string"}}})]


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
    copilot.clear_caches()
    clear_cache()
    for name in ("GH_COPILOT_TOKEN", "GITHUB_COPILOT_TOKEN", "LOCALAPPDATA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    yield
    copilot.clear_caches()
    clear_cache()


def login(folder: Path, filename: str = "apps.json", token: str = GITHUB_TOKEN) -> None:
    folder = folder / "github-copilot"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / filename).write_text(
        json.dumps(
            {
                "ghe.example.com:Iv1.0000": {"user": "someone", "oauth_token": "gho_enterprise_not_this_one"},
                "github.com:Iv1.b507a08c87ecfe98": {
                    "user": "someone",
                    "oauth_token": token,
                    "githubAppId": "Iv1.b507a08c87ecfe98",
                },
            }
        )
    )


class FakeCopilot:
    """GitHub's token endpoint and Copilot's API on one local server."""

    def __init__(
        self,
        *,
        expires_in: float = 1800,
        token_status: int = 200,
        models_status: int = 200,
        chat: bytes | None = None,
        chat_failures: int = 0,
    ):
        self.exchanges = 0
        self.chat_failures = chat_failures  # the first chat requests answered with a 401
        self.expires_in = expires_in
        self.token_status = token_status
        self.models_status = models_status
        self.chat = chat or fixture("chat_reasoning_tools_streaming.txt")
        self.server = ScriptedServer(self.respond)

    def respond(self, request) -> Reply:
        if request.path == "/copilot_internal/v2/token":
            self.exchanges += 1
            if self.token_status != 200:
                return json_reply({"message": "Bad credentials"}, status=self.token_status)
            return json_reply(
                {
                    "token": f"tid=copilot-{self.exchanges}",
                    "expires_at": int(copilot._now() + self.expires_in),
                    "refresh_in": 1500,
                    "endpoints": {"api": self.server.url + "/api"},
                }
            )
        if request.path == "/api/models":
            if self.models_status != 200:
                return json_reply({"error": "unavailable"}, status=self.models_status)
            return Reply(headers={"content-type": "application/json"}, chunks=[fixture("models.json")])
        if request.path == "/api/chat/completions":
            if self.chat_failures:
                self.chat_failures -= 1
                return json_reply({"error": {"message": "unauthorized: token expired"}}, status=401)
            if not request.json().get("stream"):
                return Reply(
                    headers={"content-type": "application/json"}, chunks=[fixture("chat_opaque_no_streaming.json")]
                )
            return _streamed(self.chat)
        if request.path == "/api/responses":
            return _streamed(fixture("responses_streaming.txt"))
        return Reply(status=404)

    def paths(self) -> list[str]:
        return [r.path for r in self.server.requests]

    def last(self, path: str):
        return [r for r in self.server.requests if r.path == path][-1]

    async def __aenter__(self) -> FakeCopilot:
        await self.server.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.server.close()

    def adapter(self, model: str = "gpt-4.1", **opts):
        return extend(
            "copilot",
            {
                "schema": {"model": {"default": model}},
                "opts": {"token_url": self.server.url + "/copilot_internal/v2/token", **opts},
            },
        )


def _streamed(body: bytes) -> Reply:
    return Reply(
        headers={"content-type": "text/event-stream"}, chunks=[body[i : i + 97] for i in range(0, len(body), 97)]
    )


async def chat(adapter, messages=None, tools=None) -> list:
    client = HttpClient(retries=0)  # failures are what some tests check: said at once, not retried
    try:
        iterator = HttpStreamIterator(adapter, messages or [Message.of("user", "hi")], client=client, tools=tools)
        return await replay_stream(iterator)
    finally:
        await client.aclose()


def reasoning(events) -> str:
    return "".join(e.content for e in events if isinstance(e, ReasoningEvent))


def text(events) -> str:
    return "".join(e.content for e in events if isinstance(e, TokenEvent))


# --- the login and the token ------------------------------------------------------------


@pytest.mark.parametrize("filename", ["apps.json", "hosts.json"])
async def test_the_login_is_exchanged_and_the_chat_streams_with_the_editor_headers(tmp_path, filename):
    login(tmp_path / "config", filename)
    async with FakeCopilot() as fake:
        events = await chat(fake.adapter(), tools=TOOLS)
        assert fake.paths() == ["/copilot_internal/v2/token", "/api/models", "/api/chat/completions"]
        exchange = fake.last("/copilot_internal/v2/token")
        assert exchange.method == "GET" and exchange.headers["authorization"] == f"Bearer {GITHUB_TOKEN}"
        request = fake.last("/api/chat/completions")
        assert request.headers["authorization"] == "Bearer tid=copilot-1"
        assert request.headers["copilot-integration-id"] == "vscode-chat"
        assert request.headers["editor-version"].startswith("Neovim/")
        assert request.headers["editor-plugin-version"].startswith("codecompanion-py/")
        assert request.headers["x-initiator"] == "user" and "copilot-vision-request" not in request.headers
        body = request.json()
        assert (
            body["model"] == "gpt-4.1"
            and body["stream"] is True
            and body["messages"] == [{"role": "user", "content": "hi"}]
        )
        assert body["tools"][0]["function"]["name"] == "read_file"
    assert isinstance(events[-1], FinalEvent), events[-1]
    assert reasoning(events) == "**Reading the project**\n\nThe README names the entry point."
    assert text(events) == "Let me read both files."
    assert events[-1].usage.total_tokens == 1010


async def test_the_config_dir_can_be_set_and_the_environment_overrides_the_files(tmp_path, monkeypatch):
    login(tmp_path / "elsewhere", token="gho_from_the_config_dir")
    async with FakeCopilot() as fake:
        await chat(fake.adapter(config_dir=str(tmp_path / "elsewhere")))
        assert fake.last("/copilot_internal/v2/token").headers["authorization"] == "Bearer gho_from_the_config_dir"
        monkeypatch.setenv("GH_COPILOT_TOKEN", "gho_from_the_environment")
        await chat(fake.adapter(config_dir=str(tmp_path / "elsewhere")))
        assert fake.last("/copilot_internal/v2/token").headers["authorization"] == "Bearer gho_from_the_environment"


def test_the_config_dir_is_xdg_then_localappdata_on_windows_then_dot_config(tmp_path, monkeypatch):
    assert copilot.config_dir() == tmp_path / "config"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "local"))
    assert copilot.config_dir() == Path.home() / ".config"
    monkeypatch.setattr(copilot, "_WINDOWS", True)
    assert copilot.config_dir() == tmp_path / "local"


async def test_the_token_is_cached_and_exchanged_again_when_due(tmp_path, monkeypatch):
    login(tmp_path / "config")
    clock = [time.time()]
    monkeypatch.setattr(copilot, "_now", lambda: clock[0])
    async with FakeCopilot(expires_in=1800) as fake:
        await chat(fake.adapter())
        clock[0] += 1400  # before refresh_in (1500 s)
        await chat(fake.adapter())
        assert fake.exchanges == 1
        assert fake.last("/api/chat/completions").headers["authorization"] == "Bearer tid=copilot-1"
        clock[0] += 200  # past refresh_in, still before expires_at
        await chat(fake.adapter())
        assert fake.exchanges == 2
        assert fake.last("/api/chat/completions").headers["authorization"] == "Bearer tid=copilot-2"


async def test_a_token_already_expired_is_never_reused(tmp_path):
    login(tmp_path / "config")
    async with FakeCopilot(expires_in=-10) as fake:
        await chat(fake.adapter())
        await chat(fake.adapter())
        assert fake.exchanges == 2
        assert fake.last("/api/chat/completions").headers["authorization"] == "Bearer tid=copilot-2"


async def test_a_token_copilot_refuses_is_not_reused(tmp_path):
    login(tmp_path / "config")
    async with FakeCopilot(chat_failures=1) as fake:
        events = await chat(fake.adapter())
        assert isinstance(events[-1], ErrorEvent) and events[-1].status == 401
        assert "tid=copilot-1" not in events[-1].message
        events = await chat(fake.adapter())
        assert isinstance(events[-1], FinalEvent) and fake.exchanges == 2
        assert fake.last("/api/chat/completions").headers["authorization"] == "Bearer tid=copilot-2"


async def test_concurrent_requests_share_one_exchange(tmp_path):
    login(tmp_path / "config")
    async with FakeCopilot() as fake:
        first, second = await asyncio.gather(chat(fake.adapter()), chat(fake.adapter()))
        assert isinstance(first[-1], FinalEvent) and isinstance(second[-1], FinalEvent)
        assert fake.exchanges == 1


async def test_no_login_says_how_to_sign_in(tmp_path):
    async with FakeCopilot() as fake:
        events = await chat(fake.adapter())
        assert fake.server.requests == []
    assert isinstance(events[-1], ErrorEvent)
    message = events[-1].message
    assert "no GitHub Copilot login found" in message and str(tmp_path / "config" / "github-copilot") in message
    assert "copilot.vim" in message and "copilot.lua" in message


@pytest.mark.parametrize("status", [401, 403])
async def test_a_refused_exchange_is_an_authentication_error_without_the_token(tmp_path, status):
    login(tmp_path / "config")
    async with FakeCopilot(token_status=status) as fake:
        events = await chat(fake.adapter())
        assert fake.paths() == ["/copilot_internal/v2/token"]  # no chat request
    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.kind == "AuthenticationError" and error.status == status
    assert f"HTTP {status}" in error.message and "sign in again" in error.message
    assert GITHUB_TOKEN not in error.message


async def test_an_exchange_that_fails_otherwise_names_the_status_and_never_the_token(tmp_path):
    login(tmp_path / "config")

    def echo(request):  # a server that echoes the credential back
        return json_reply({"message": f"oops: {request.headers['authorization']}"}, status=500)

    server = ScriptedServer(echo)
    await server.start()
    try:
        adapter = extend("copilot", {"opts": {"token_url": server.url + "/copilot_internal/v2/token"}})
        events = await chat(adapter)
    finally:
        await server.close()
    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.kind == "HTTPStatusError" and error.status == 500
    assert "Copilot token exchange" in error.message and "HTTP 500" in error.message
    assert GITHUB_TOKEN not in error.message


async def test_an_unreachable_token_endpoint_is_a_transport_error(tmp_path):
    login(tmp_path / "config")
    events = await chat(extend("copilot", {"opts": {"token_url": "http://127.0.0.1:9/copilot_internal/v2/token"}}))
    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.kind == "TransportError"
    assert "Copilot token exchange: cannot connect" in error.message and GITHUB_TOKEN not in error.message


class Recording(httpx.AsyncBaseTransport):
    """The real transport, noting the path of each request."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.paths: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_the_exchange_and_the_models_list_go_through_the_request_client(tmp_path):
    login(tmp_path / "config")
    transport = Recording()
    client = HttpClient(transport=transport)
    try:
        async with FakeCopilot() as fake:
            _, request = await build_request(fake.adapter(), [Message.of("user", "hi")], client=client)
            assert transport.paths == ["/copilot_internal/v2/token", "/api/models"]
            assert request.url == fake.server.url + "/api/chat/completions"
            copilot.clear_caches()
            clear_cache()
            await list_models(fake.adapter(), client)
            assert transport.paths[2:] == ["/copilot_internal/v2/token", "/api/models", "/api/models"]
    finally:
        await client.aclose()


# --- headers ----------------------------------------------------------------------------


async def test_tool_results_are_sent_as_the_agent_and_images_ask_for_vision(tmp_path):
    login(tmp_path / "config")
    call = ToolCall(id="call_R1", name="read_file", arguments={"path": "README.md"})
    follow_up = [
        Message.of("user", "read it"),
        Message(role="assistant", parts=(call,)),
        Message(role="tool", parts=(ToolResultPart(tool_call_id="call_R1", name="read_file", content="# hi"),)),
    ]
    with_image = [Message(role="user", parts=(TextPart(text="what is this?"), ImagePart(data="QUJD")))]
    async with FakeCopilot() as fake:
        await chat(fake.adapter(), follow_up, tools=TOOLS)
        assert fake.last("/api/chat/completions").headers["x-initiator"] == "agent"
        await chat(fake.adapter(), with_image)
        request = fake.last("/api/chat/completions")
        assert request.headers["x-initiator"] == "user" and request.headers["copilot-vision-request"] == "true"


# --- Chat Completions: reasoning_text and reasoning_opaque ------------------------------


def test_reasoning_text_tool_calls_and_the_opaque_state_through_the_handlers():
    events = replay_body(resolve("copilot"), fixture("chat_reasoning_tools_streaming.txt"))
    final = events[-1]
    assert isinstance(final, FinalEvent) and final.finish_reason == "tool_calls"
    assert [e.content for e in events if isinstance(e, ReasoningEvent)] == [
        "**Reading the project**\n\nThe README names ",
        "the entry point.",
    ]
    assert [(c.id, c.name, c.arguments) for c in final.message.tool_calls] == [
        ("call_R1", "read_file", {"path": "README.md"}),
        ("call_R2", "read_file", {"path": "main.py"}),
    ]
    assert final.message.text == "Let me read both files."
    reasoning_part = final.message.parts[0]
    assert isinstance(reasoning_part, ReasoningPart)
    assert reasoning_part.text == "**Reading the project**\n\nThe README names the entry point."
    assert reasoning_part.provider_data == {"copilot": {"reasoning_opaque": OPAQUE}}
    assert (final.usage.prompt_tokens, final.usage.completion_tokens, final.usage.cached_tokens) == (900, 40, 512)


def test_the_opaque_state_of_a_whole_body():
    final = replay_body(resolve("copilot"), fixture("chat_opaque_no_streaming.json"))[-1]
    assert isinstance(final, FinalEvent) and final.message.text == "Paris."
    assert final.message.parts[0] == ReasoningPart(
        text="The capital of France.", provider_data={"copilot": {"reasoning_opaque": "WHOLE+opaque=="}}
    )


def test_an_opaque_state_without_reasoning_text_is_kept():
    body = (
        b'data: {"choices":[{"index":0,"delta":{"content":"ok","reasoning_opaque":"ONLY"}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )
    final = replay_body(resolve("copilot"), body)[-1]
    assert final.message.text == "ok" and final.message.parts[0].provider_data == {
        "copilot": {"reasoning_opaque": "ONLY"}
    }
    wire = call_handler(resolve("copilot"), "build_messages", [Message.of("user", "q"), final.message])["messages"]
    assert wire[1] == {"role": "assistant", "content": "ok", "reasoning_opaque": "ONLY"}


async def test_the_opaque_state_goes_back_on_the_next_turn(tmp_path):
    login(tmp_path / "config")
    async with FakeCopilot() as fake:
        adapter = fake.adapter("gemini-3-pro-preview")
        reply = (
            await chat(
                adapter, [Message.of("system", "be brief"), Message.of("user", "what is this project?")], tools=TOOLS
            )
        )[-1].message
        results = Message(
            role="tool",
            parts=(
                ToolResultPart(tool_call_id="call_R1", name="read_file", content="# Demo"),
                ToolResultPart(tool_call_id="call_R2", name="read_file", content="print()"),
            ),
        )
        history = [Message.of("system", "be brief"), Message.of("user", "what is this project?"), reply, results]
        await chat(adapter, history, tools=TOOLS)
        second = fake.last("/api/chat/completions")
        assert fake.paths().count("/api/chat/completions") == 2 and fake.paths().count("/api/models") == 1
    assert second.headers["x-initiator"] == "agent"
    system, user, assistant, result1, result2 = second.json()["messages"]
    assert assistant == {
        "role": "assistant",
        "content": "Let me read both files.",
        "tool_calls": [
            {
                "id": "call_R1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path":"README.md"}'},
            },
            {"id": "call_R2", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"main.py"}'}},
        ],
        "reasoning_text": "**Reading the project**\n\nThe README names the entry point.",
        "reasoning_opaque": OPAQUE,
    }
    assert (result1["tool_call_id"], result2["tool_call_id"]) == ("call_R1", "call_R2")


def test_the_opaque_state_goes_only_to_copilot():
    reply = replay_body(resolve("copilot"), fixture("chat_reasoning_tools_streaming.txt"))[-1].message
    history = [Message.of("user", "q"), reply]
    for name in ("openai", "deepseek", "anthropic", "openai_responses", "gemini"):
        wire = json.dumps(call_handler(resolve(name), "build_messages", history))
        assert OPAQUE not in wire, name
    # other providers' reasoning has no opaque state: nothing Copilot-only is sent
    foreign = Message(
        role="assistant",
        parts=(ReasoningPart(text="hm", provider_data={"anthropic": {"signature": "s"}}), TextPart(text="ok")),
    )
    wire = call_handler(resolve("copilot"), "build_messages", [Message.of("user", "q"), foreign])["messages"]
    assert wire[1] == {"role": "assistant", "content": "ok"}


# --- the endpoint of each model ---------------------------------------------------------


async def test_a_responses_only_model_is_sent_to_responses(tmp_path):
    login(tmp_path / "config")
    async with FakeCopilot() as fake:
        events = await chat(
            fake.adapter("gpt-5-codex"), [Message.of("system", "be brief"), Message.of("user", "test")], tools=TOOLS
        )
        assert fake.paths() == ["/copilot_internal/v2/token", "/api/models", "/api/responses"]
        request = fake.last("/api/responses")
    assert request.headers["authorization"] == "Bearer tid=copilot-1"
    assert request.headers["copilot-integration-id"] == "vscode-chat"
    body = request.json()
    assert body["model"] == "gpt-5-codex" and body["stream"] is True and body["store"] is False
    assert body["instructions"] == "be brief" and "messages" not in body and "stream_options" not in body
    assert body["input"] == [{"role": "user", "content": [{"type": "input_text", "text": "test"}]}]
    assert body["tools"][0] == {
        "type": "function",
        "name": "read_file",
        "description": "",
        "parameters": TOOLS[0].parameters,
    }
    final = events[-1]
    assert isinstance(final, FinalEvent), final
    assert reasoning(events) == "Check the tests first." and text(events) == "Running them."
    assert [(c.id, c.arguments) for c in final.message.tool_calls] == [("call_T1", {"path": "tests"})]
    assert final.message.parts[0].provider_data == {
        "copilot": {"responses": {"id": "rs_c1", "encrypted_content": "COPILOT-encrypted=="}}
    }
    assert final.usage.total_tokens == 42


async def test_responses_reasoning_goes_back_to_copilot_only(tmp_path):
    login(tmp_path / "config")
    async with FakeCopilot() as fake:
        adapter = fake.adapter("gpt-5-codex")
        reply = (await chat(adapter, [Message.of("user", "test")], tools=TOOLS))[-1].message
        theirs = Message(
            role="assistant",
            parts=(
                ReasoningPart(
                    text="x", provider_data={"openai_responses": {"id": "rs_o", "encrypted_content": "OPENAI=="}}
                ),
                TextPart(text="from OpenAI"),
            ),
        )
        results = Message(role="tool", parts=(ToolResultPart(tool_call_id="call_T1", name="run_tests", content="ok"),))
        await chat(
            adapter, [Message.of("user", "hello"), theirs, Message.of("user", "test"), reply, results], tools=TOOLS
        )
        items = fake.last("/api/responses").json()["input"]
    reasoning_items = [i for i in items if i.get("type") == "reasoning"]
    assert reasoning_items == [
        {
            "type": "reasoning",
            "id": "rs_c1",
            "encrypted_content": "COPILOT-encrypted==",
            "summary": [{"type": "summary_text", "text": "Check the tests first."}],
        }
    ]
    assert {"type": "function_call_output", "call_id": "call_T1", "output": "ok"} in items
    wire = json.dumps(call_handler(resolve("openai_responses"), "build_messages", [Message.of("user", "q"), reply]))
    assert "COPILOT-encrypted==" not in wire


async def test_a_model_with_both_endpoints_or_unknown_uses_chat_completions(tmp_path):
    login(tmp_path / "config")
    async with FakeCopilot() as fake:
        for model in ("gpt-4.1", "gemini-3-pro-preview", "not-in-the-list"):
            events = await chat(fake.adapter(model))
            assert isinstance(events[-1], FinalEvent), model
        assert fake.paths().count("/api/chat/completions") == 3 and "/api/responses" not in fake.paths()
        assert fake.paths().count("/api/models") == 1  # the list is cached


async def test_without_the_models_list_requests_go_to_chat_completions_and_opts_endpoint_forces_one(tmp_path):
    login(tmp_path / "config")
    async with FakeCopilot(models_status=500) as fake:
        events = await chat(fake.adapter("gpt-5-codex"))
        assert isinstance(events[-1], FinalEvent) and fake.paths()[-1] == "/api/chat/completions"
        events = await chat(fake.adapter("gpt-5-codex", endpoint="responses"))
        assert isinstance(events[-1], FinalEvent) and fake.paths()[-1] == "/api/responses"
        events = await chat(fake.adapter(endpoint="completions"))
    assert isinstance(events[-1], ErrorEvent) and "opts.endpoint" in events[-1].message


async def test_a_model_copilot_does_not_stream_gets_a_whole_body(tmp_path):
    login(tmp_path / "config")
    async with FakeCopilot() as fake:
        events = await chat(fake.adapter("o1-batch"))
        body = fake.last("/api/chat/completions").json()
    assert "stream" not in body and "stream_options" not in body
    final = events[-1]
    assert isinstance(final, FinalEvent) and final.message.text == "Paris."
    assert final.message.parts[0].provider_data == {"copilot": {"reasoning_opaque": "WHOLE+opaque=="}}


def test_endpoint_of_a_models_entry():
    models = {m["id"]: m for m in msgspec.json.decode(fixture("models.json"))["data"]}
    assert {name: copilot.endpoint_of(entry) for name, entry in models.items()} == {
        "gpt-4.1": "chat/completions",
        "gpt-5-codex": "responses",
        "gemini-3-pro-preview": "chat/completions",
        "o1-batch": "chat/completions",
        "text-embedding-3-small": "chat/completions",
    }
    assert copilot.endpoint_of(None) == "chat/completions"


async def test_models_come_from_the_copilot_api(tmp_path):
    login(tmp_path / "config")
    async with FakeCopilot() as fake:
        client = HttpClient()
        try:
            models = await list_models(fake.adapter(), client)
        finally:
            await client.aclose()
        assert fake.last("/api/models").headers["authorization"] == "Bearer tid=copilot-1"
    assert models[0] == "gpt-4.1" and {"gpt-5-codex", "gemini-3-pro-preview"} <= set(models)
