"""Copilot: the GitHub login from copilot.vim's files exchanged for a Copilot token (cached,
exchanged again near expiry), then Chat Completions with the editor headers, all against
one local server playing both GitHub and Copilot."""

from __future__ import annotations

import json
import time

import pytest

from codecompanion_py.adapters import resolve
from codecompanion_py.adapters.http import copilot
from codecompanion_py.adapters.models import clear_cache, list_models
from codecompanion_py.client import HttpClient
from codecompanion_py.demo.server import Reply, ScriptedServer, json_reply, sse_reply
from codecompanion_py.events import ErrorEvent, FinalEvent, ReasoningEvent, TokenEvent
from codecompanion_py.messages import Message
from codecompanion_py.stream.iterators import HttpStreamIterator, replay_stream

GITHUB_TOKEN = "gho_not_a_real_token"


@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
    copilot._cache.clear()
    clear_cache()
    for name in ("GH_COPILOT_TOKEN", "GITHUB_COPILOT_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    yield
    copilot._cache.clear()


def login(tmp_path, filename: str = "apps.json") -> None:
    folder = tmp_path / "config" / "github-copilot"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / filename).write_text(json.dumps({"github.com:Iv1.b507a08c87ecfe98": {
        "user": "someone", "oauth_token": GITHUB_TOKEN, "githubAppId": "Iv1.b507a08c87ecfe98"}}))


class Copilot:
    """GitHub's token endpoint and Copilot's API on one local server."""

    def __init__(self, expires_in: float = 1800, token_status: int = 200):
        self.exchanges = 0
        self.expires_in = expires_in
        self.token_status = token_status
        self.server = ScriptedServer(self.respond)

    def respond(self, request) -> Reply:
        if request.path == "/copilot_internal/v2/token":
            self.exchanges += 1
            if self.token_status != 200:
                return json_reply({"message": "Bad credentials"}, status=self.token_status)
            return json_reply({"token": f"tid=copilot-{self.exchanges}", "expires_at": int(time.time() + self.expires_in),
                               "refresh_in": 1500, "endpoints": {"api": self.server.url + "/api"}})
        if request.path == "/api/models":
            return json_reply({"data": [{"id": "gpt-4.1"}, {"id": "claude-sonnet-4.5"}]})
        if request.path == "/api/chat/completions":
            return sse_reply([
                {"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_text": "Thinking."}}]},
                {"choices": [{"index": 0, "delta": {"content": "Hello from Copilot"}}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}])
        return Reply(status=404)

    async def __aenter__(self):
        await self.server.start()
        return self

    async def __aexit__(self, *exc):
        await self.server.close()

    def adapter(self):
        adapter = resolve("copilot")
        adapter.opts["token_url"] = self.server.url + "/copilot_internal/v2/token"
        return adapter


async def chat(adapter) -> list:
    client = HttpClient()
    try:
        return await replay_stream(HttpStreamIterator(adapter, [Message.of("user", "hi")], client=client))
    finally:
        await client.aclose()


@pytest.mark.parametrize("filename", ["apps.json", "hosts.json"])
async def test_the_login_is_exchanged_and_the_chat_streams_with_the_editor_headers(tmp_path, filename):
    login(tmp_path, filename)
    async with Copilot() as fake:
        events = await chat(fake.adapter())
        exchange, request = fake.server.requests
        assert exchange.headers["authorization"] == f"Bearer {GITHUB_TOKEN}"
        assert request.headers["authorization"] == "Bearer tid=copilot-1"
        assert request.headers["copilot-integration-id"] == "vscode-chat"
        assert request.headers["editor-version"].startswith("Neovim/")
        assert request.headers["editor-plugin-version"].startswith("codecompanion-py/")
        assert request.json()["model"] == "gpt-4.1" and request.json()["stream"] is True
    assert "".join(e.content for e in events if isinstance(e, ReasoningEvent)) == "Thinking."
    assert "".join(e.content for e in events if isinstance(e, TokenEvent)) == "Hello from Copilot"
    assert isinstance(events[-1], FinalEvent) and events[-1].usage.total_tokens == 8


async def test_the_token_is_cached_and_exchanged_again_near_expiry(tmp_path):
    login(tmp_path)
    async with Copilot(expires_in=1800) as fake:
        await chat(fake.adapter())
        await chat(fake.adapter())
        assert fake.exchanges == 1
    copilot._cache.clear()
    async with Copilot(expires_in=30) as fake:  # inside the refresh margin: never reused
        await chat(fake.adapter())
        await chat(fake.adapter())
        assert fake.exchanges == 2
        assert fake.server.requests[-1].headers["authorization"] == "Bearer tid=copilot-2"


async def test_models_come_from_the_copilot_api(tmp_path):
    login(tmp_path)
    async with Copilot() as fake:
        client = HttpClient()
        try:
            models = await list_models(fake.adapter(), client)
        finally:
            await client.aclose()
    assert models[:2] == ["gpt-4.1", "claude-sonnet-4.5"] or set(models) >= {"gpt-4.1", "claude-sonnet-4.5"}


async def test_no_login_says_how_to_sign_in(tmp_path):
    async with Copilot() as fake:
        events = await chat(fake.adapter())
        assert fake.server.requests == []
    assert isinstance(events[-1], ErrorEvent)
    assert "no GitHub Copilot login found" in events[-1].message and "copilot.vim" in events[-1].message


async def test_a_refused_exchange_is_an_authentication_error_without_the_token(tmp_path):
    login(tmp_path)
    async with Copilot(token_status=401) as fake:
        events = await chat(fake.adapter())
        assert [r.path for r in fake.server.requests] == ["/copilot_internal/v2/token"]  # no chat request
    assert isinstance(events[-1], ErrorEvent)
    assert "sign in again" in events[-1].message and GITHUB_TOKEN not in events[-1].message
