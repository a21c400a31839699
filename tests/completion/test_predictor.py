"""The engine's side of edit predictions over real HTTP on 127.0.0.1: each provider's
fill-in-the-middle request, the context cut to its budget, untrusted answers cleaned, and
failures that go quiet with :checkhealth saying why."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from codecompanion_py import config
from codecompanion_py.calls import CompletionRequest
from codecompanion_py.chat.factory import SessionFactory
from codecompanion_py.client import HttpClient
from codecompanion_py.completion import fim, predictor
from codecompanion_py.completion.candidates import candidates, clean
from codecompanion_py.completion.context import CHARS_PER_TOKEN, CompletionContext, Snippet
from codecompanion_py.completion.predictor import Predictor
from codecompanion_py.completion_calls import CompletionCalls
from codecompanion_py.demo.server import Reply, ScriptedServer, error_reply, json_reply, sse_reply
from codecompanion_py.mcp.servers import McpServers
from codecompanion_py.ui.editor import PendingCalls
from codecompanion_py.ui.ops import Suggestions

CONTEXT = CompletionContext("import os\n\ndef main():\n    path = os.", "\n    return path\n", "python", "app.py")


def adapter_for(url: str, name: str, table: dict[str, Any]):
    loaded = config.load({"adapters": {"http": {name: {**table, "env": {"api_key": "k", **table.get("env", {})}}}}})
    return loaded.adapters.http(name)


REPLIES = {  # each provider's reply with "getcwd()" as its one answer
    "/v1/fim/completions": {"choices": [{"message": {"content": "getcwd()"}}]},
    "/beta/completions": {"choices": [{"text": "getcwd()"}]},
    "/api/generate": {"response": "getcwd()", "done": True},
    "/infill": {"content": "getcwd()"},
    "/v1/completions": {"choices": [{"text": "getcwd()"}]},
}


@pytest.mark.parametrize(
    ("name", "table", "path", "fields"),
    [
        ("mistral", {"__extends": "mistral", "env": {"url": "{url}"}}, "/v1/fim/completions", {"prompt", "suffix"}),
        ("deepseek", {"__extends": "deepseek", "url": "{url}/chat/completions"}, "/beta/completions", {"suffix"}),
        ("ollama", {"__extends": "ollama", "env": {"url": "{url}"}}, "/api/generate", {"suffix", "raw"}),
        (
            "llamacpp",
            {"__extends": "openai_compatible", "env": {"url": "{url}"}, "opts": {"fim": "llama_cpp"}},
            "/infill",
            {"input_prefix", "input_suffix"},
        ),
        ("mine", {"__extends": "openai_compatible", "env": {"url": "{url}"}}, "/v1/completions", {"suffix", "model"}),
    ],
)
async def test_each_provider_is_asked_for_the_middle_its_way(name, table, path, fields):
    server = ScriptedServer(lambda request: json_reply(REPLIES.get(request.path, {})))
    await server.start()
    sent: list[Suggestions] = []
    client = HttpClient()
    try:
        filled = {k: (v.replace("{url}", server.url) if isinstance(v, str) else v) for k, v in table.items()}
        filled["env"] = {k: v.replace("{url}", server.url) for k, v in table.get("env", {}).items()}
        await Predictor(sent.append, lambda: client).predict(7, adapter_for(server.url, name, filled), CONTEXT, 1, 4000)
    finally:
        await client.aclose()
        await server.close()
    assert [request.path for request in server.requests] == [path]
    body = server.requests[0].json()
    assert fields <= set(body)
    prefix = body.get("prompt", body.get("input_prefix"))
    assert prefix.endswith("    path = os.") and "\n    return path" in body.get("suffix", body.get("input_suffix"))
    assert server.requests[0].headers.get("authorization", "Bearer k").endswith("k")
    assert sent == [Suggestions(id=7, items=["getcwd()"])]


def test_the_context_keeps_what_is_nearest_the_cursor_within_the_budget():
    prefix = "".join(f"line {i}\n" for i in range(1000)) + "x = "
    suffix = "".join(f"after {i}\n" for i in range(1000))
    recent = (Snippet("other.py", "y = 2\n" * 500),)
    fitted = CompletionContext(prefix, suffix, recent=recent).fitted(200)
    total = len(fitted.prefix) + len(fitted.suffix) + sum(len(s.text) + len(s.path) for s in fitted.recent)
    assert total <= 200 * CHARS_PER_TOKEN
    assert fitted.prefix.endswith("line 999\nx = ") and fitted.prefix.startswith("line ")  # whole lines
    assert fitted.suffix.startswith("after 0\n") and 150 < len(fitted.suffix) < len(fitted.prefix)
    assert fitted.recent and fitted.recent[0].path == "other.py"
    assert CompletionContext("a", "b").fitted(200) == CompletionContext("a", "b")


def test_model_output_is_cleaned_capped_and_fitted_to_the_cursor():
    hostile = "os.getcwd()\x1b]52;c;ZXZpbA==\x07\x1b[2J\u202e\r\nrm -rf\x00 /" + "x" * 10_000
    (cleaned,) = candidates([hostile], "    path = os.", "")
    assert "\x1b" not in cleaned and "\x00" not in cleaned and "\u202e" not in cleaned and "\r" not in cleaned
    assert cleaned.startswith("os.getcwd()\nrm -rf /") and len(cleaned) <= 4000
    assert len(clean("\n".join(["a"] * 500)).split("\n")) == 60
    # the cursor's indentation not doubled, the rest of the line not repeated, duplicates once
    assert candidates(["    return 1", "    return 1", "return 1"], "    ", "") == ["return 1"]
    assert candidates(["1)", "2"], "f(", ")") == ["1", "2"]
    # a chat model's fences and its repeat of the line so far go
    assert candidates(["```python\nx = compute()\n```\nThis computes."], "x = ", "", chat=True) == ["compute()"]
    assert candidates(["", "   \n"], "", "") == []


def completion_calls(loaded: config.Config, client: HttpClient, channel: Any) -> CompletionCalls:
    factory = SessionFactory(lambda: loaded, lambda: client, McpServers, PendingCalls())
    return CompletionCalls(channel=channel, config=lambda: loaded, client=lambda: client, factory=factory)


class Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[Any, Any]] = []

    def render(self, chat_id: Any, batch: list[Any]) -> None:
        self.sent.extend((chat_id, op) for op in batch)

    def notify(self, message: str, level: str = "ERROR") -> None:
        raise AssertionError(f"notified at a keystroke: {message}")


async def test_a_menu_request_and_the_ghost_texts_do_not_cancel_each_other_but_their_own_next_does():
    both = asyncio.Event()
    arrived = 0

    async def answer(_request):
        nonlocal arrived
        arrived += 1
        if arrived >= 2:
            both.set()
        await both.wait()
        return json_reply({"choices": [{"text": "done()"}]})

    server = ScriptedServer(answer)
    await server.start()
    recorder, client = Recorder(), HttpClient()
    loaded = config.load(
        {
            "adapters": {"http": {"mine": {"__extends": "openai_compatible", "env": {"url": server.url}}}},
            "interactions": {"completion": {"enabled": True, "adapter": "mine"}},
        }
    )
    calls = completion_calls(loaded, client, recorder)
    try:
        ghost = asyncio.ensure_future(calls.request(CompletionRequest(id=1, prefix="a")))
        menu = asyncio.ensure_future(calls.request(CompletionRequest(id=2, prefix="a", menu=True)))
        await asyncio.wait_for(asyncio.gather(ghost, menu), 10)
        first = asyncio.ensure_future(calls.request(CompletionRequest(id=3, prefix="b")))
        await asyncio.sleep(0)
        second = asyncio.ensure_future(calls.request(CompletionRequest(id=4, prefix="bc")))  # the same lane
        await asyncio.wait_for(asyncio.gather(first, second, return_exceptions=True), 10)
    finally:
        await client.aclose()
        await server.close()
    assert sorted((op.id, op.items) for _, op in recorder.sent) == [(1, ["done()"]), (2, ["done()"]), (4, ["done()"])]


async def test_failures_go_quiet_and_health_says_why():
    server = ScriptedServer(lambda _request: error_reply(429, "slow down"))
    await server.start()
    recorder, client = Recorder(), HttpClient()
    sent = recorder.sent
    loaded = config.load(
        {
            "adapters": {"http": {"mine": {"__extends": "openai_compatible", "env": {"url": server.url}}}},
            "interactions": {"completion": {"enabled": True, "adapter": "mine"}},
        }
    )
    calls = completion_calls(loaded, client, recorder)

    try:
        await calls.request(CompletionRequest(id=1, prefix="x = "))
        await calls.request(CompletionRequest(id=2, prefix="x = 1"))  # at once: quiet, not asked
    finally:
        await client.aclose()
        await server.close()
    assert len(server.requests) == 1
    assert [(chat_id, op.id, op.items) for chat_id, op in sent] == [("completion", 1, []), ("completion", 2, [])]
    assert "slow down" in (sent[0][1].error or "")
    section = calls.health()
    texts = [(entry.level, entry.text) for entry in section.entries]
    assert texts[0] == (
        "ok",
        "sends the code around the cursor to mine (llama3.1) at 127.0.0.1, by fill-in-the-middle (openai)",
    )
    assert texts[1][0] == "warn" and "slow down" in texts[1][1]
    assert "pause" in section.entries[1].advice[0]


def test_health_says_predictions_are_off_by_default():
    loaded = config.load({})
    calls = CompletionCalls(channel=None, config=lambda: loaded, client=HttpClient, factory=None)  # type: ignore[arg-type]
    assert [entry.level for entry in calls.health().entries] == ["info"]
    assert "no code is sent" in calls.health().entries[0].text


def test_health_says_where_predictions_go_before_the_first_request():
    loaded = config.load(
        {
            "adapters": {"http": {"mine": {"__extends": "openai_compatible", "env": {"url": "http://10.0.0.7:8080"}}}},
            "interactions": {"completion": {"enabled": True, "adapter": "mine"}},
        }
    )
    entries = completion_calls(loaded, HttpClient(), Recorder()).health().entries
    assert [(e.level, e.text) for e in entries] == [
        ("ok", "on: sends the code around the cursor to mine at 10.0.0.7 as you type")
    ]
    loaded = config.load({"interactions": {"completion": {"enabled": True, "adapter": "nowhere"}}})
    (entry,) = completion_calls(loaded, HttpClient(), Recorder()).health().entries
    assert entry.level == "error" and "nowhere" in entry.text


async def test_a_chat_model_gets_the_prompt_and_its_key_command_runs_once_a_request_after_the_first(tmp_path):
    runs = tmp_path / "runs"

    def chat(request):
        text = "```python\nreturn 2\n```"
        return sse_reply(
            [{"choices": [{"delta": {"content": text}}]}, {"choices": [{"delta": {}, "finish_reason": "stop"}]}]
        )

    server = ScriptedServer(chat)
    await server.start()
    client, sent = HttpClient(), []
    table = {
        "__extends": "openai_compatible",
        "env": {"url": server.url, "api_key": f"cmd:sh -c 'echo run >> {runs}; echo chat-key'"},
        "opts": {"fim": False},
    }
    adapter = config.load({"adapters": {"http": {"chatty": table}}}).adapters.http("chatty")
    predictor = Predictor(sent.append, lambda: client)
    try:
        for request_id in (1, 2):
            await predictor.predict(request_id, adapter, CONTEXT, 1, 4000)
    finally:
        await client.aclose()
        await server.close()
    assert sent == [Suggestions(id=1, items=["return 2"]), Suggestions(id=2, items=["return 2"])]
    assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 2
    assert server.requests[0].headers["authorization"] == "Bearer chat-key"
    assert "<|cursor|>" in server.requests[0].json()["messages"][-1]["content"]
    assert runs.read_text().count("run") == 3  # prepared to learn its kind once, then by each request


async def test_a_server_that_never_answers_is_a_failure_that_goes_quiet(monkeypatch):
    monkeypatch.setattr(predictor, "REQUEST_TIMEOUT", 0.3)
    server = ScriptedServer(
        lambda _request: Reply(headers={"content-type": "application/json"}, chunks=[b"{"], hang=True)
    )
    await server.start()
    sent: list[Suggestions] = []
    client = HttpClient()
    lane = Predictor(sent.append, lambda: client)
    adapter = adapter_for(server.url, "mine", {"__extends": "openai_compatible", "env": {"url": server.url}})
    try:
        await asyncio.wait_for(lane.predict(1, adapter, CONTEXT, 1, 4000), 5)  # a failure, not a hang, without one
        await lane.predict(2, adapter, CONTEXT, 1, 4000)  # quiet now: not asked
        await asyncio.sleep(0.2)
        disconnects = server.disconnects
    finally:
        await client.aclose()
        await server.close()
    assert len(server.requests) == 1 and disconnects == 1  # the request stopped
    assert [op.id for op in sent] == [1, 2] and "no answer in 0.3 s" in (sent[0].error or "")
    assert lane.quiet.failures == 1 and "no answer" in (lane.quiet.last_error or "")


@pytest.mark.parametrize(
    ("table", "path"),
    [  # the adapter's base path and query string kept
        ({"env": {"url": "{url}/llama"}, "opts": {"fim": "llama_cpp"}}, "/llama/infill"),
        (
            {"env": {"url": "{url}/proxy", "chat_url": "/v1/chat/completions?api-version=2"}},
            "/proxy/v1/completions?api-version=2",
        ),
        ({"env": {"url": "{url}/mistral"}, "opts": {"fim": "codestral"}}, "/mistral/v1/fim/completions"),
    ],
)
async def test_the_fim_url_keeps_the_adapters_base_path_and_query(table, path):
    server = ScriptedServer(lambda _request: json_reply({}))
    await server.start()
    client = HttpClient()
    env = {k: v.replace("{url}", server.url) for k, v in table["env"].items()}
    try:
        adapter = adapter_for(server.url, "mine", {**table, "__extends": "openai_compatible", "env": env})
        await Predictor(lambda _op: None, lambda: client).predict(1, adapter, CONTEXT, 1, 4000)
    finally:
        await client.aclose()
        await server.close()
    assert [request.path for request in server.requests] == [path]


def test_azure_deployments_get_the_chat_prompt():
    env = {"api_key": "k", "endpoint": "https://x.openai.azure.com", "deployment": "gpt-4.1", "api_version": "1"}
    adapter = config.load({"adapters": {"http": {"azure_openai": {"env": env}}}}).adapters.http("azure_openai")
    adapter.url = "https://x.openai.azure.com/openai/deployments/gpt-4.1/chat/completions?api-version=1"  # prepared
    assert fim.kind_of(adapter) == "chat"
    adapter.name = "under"  # extended under another name, at a proxy
    adapter.url = "http://127.0.0.1:9/openai/deployments/gpt-4.1/chat/completions?api-version=1"
    assert fim.kind_of(adapter) == "chat"


@pytest.mark.parametrize(
    ("completion", "model"), [({}, "codestral-latest"), ({"model": "codestral-2501"}, "codestral-2501")]
)
async def test_mistral_is_asked_with_a_codestral_model_unless_one_is_named(completion, model):
    server = ScriptedServer(lambda _request: json_reply({}))
    await server.start()
    client = HttpClient()
    mine = {"__extends": "mistral", "env": {"url": server.url, "api_key": "k"}}
    chat = {"adapter": {"name": "mistral", "model": "mistral-medium-latest"}}
    loaded = config.load(
        {"adapters": {"http": {"mistral": mine}}, "interactions": {"chat": chat, "completion": completion}}
    )
    try:
        await completion_calls(loaded, client, Recorder()).request(CompletionRequest(id=1, prefix="x = "))
    finally:
        await client.aclose()
        await server.close()
    assert [(r.path, r.json()["model"]) for r in server.requests] == [("/v1/fim/completions", model)]
