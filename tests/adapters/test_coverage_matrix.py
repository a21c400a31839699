"""Every adapter × every case, from fixtures written from each provider's documented wire
format: text, tool calls (parallel), reasoning, usage, an error mid-stream and HTTP error
bodies, listed with what each must parse to in `coverage_matrix.json`. Each fixture goes
through the handlers (`replay_body`) and through a real HTTP server on 127.0.0.1, and
`codecompanion-py replay` parses a streamed and a whole body for every adapter.
`test_the_matrix_is_complete` fails when an adapter loses a case."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from codecompanion_py import adapters, cli
from codecompanion_py.adapters import resolve
from codecompanion_py.demo.server import Reply
from codecompanion_py.events import ErrorEvent, FinalEvent, ReasoningEvent, TokenEvent, ToolCallEvent, UsageEvent
from codecompanion_py.stream.iterators import replay_body

from ..streaming import ask, in_pieces

FIXTURES = Path(__file__).parent.parent / "fixtures"

# Every built-in provider adapter (`test_the_matrix_is_complete` keeps the list whole);
# `demo` and `openai_compatible` are not providers, copilot has its own tests.
ADAPTERS = [
    "anthropic",
    "openai",
    "openai_responses",
    "gemini",
    "gemini_interactions",
    "ollama",
    "mistral",
    "deepseek",
    "openrouter",
    "azure_openai",
    "githubmodels",
    "xai",
    "huggingface",
    "novita",
    "kimi",
]
# Chat Completions from OpenAI (and Azure/GitHub serving OpenAI models) streams no reasoning.
NO_REASONING = {"openai", "azure_openai", "githubmodels"}

KEY_ENV = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "openai_responses": "OPENAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "gemini_interactions": "GEMINI_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "azure_openai": "AZURE_OPENAI_API_KEY",
    "xai": "XAI_API_KEY",
    "huggingface": "HUGGINGFACE_API_KEY",
    "novita": "NOVITA_API_KEY",
    "kimi": "MOONSHOT_API_KEY",
}
# The header each provider reads the key from (Bearer unless named here); Ollama sends none.
KEY_HEADER = {
    "anthropic": "x-api-key",
    "gemini": "x-goog-api-key",
    "gemini_interactions": "x-goog-api-key",
    "azure_openai": "api-key",
}
# Where each adapter sends a streamed request, as its real URL template composes it.
STREAM_PATH = {
    "anthropic": "/v1/messages",
    "openai": "/v1/chat/completions",
    "openai_responses": "/v1/responses",
    "gemini": "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    "gemini_interactions": "/v1beta/interactions?alt=sse",
    "ollama": "/api/chat",
    "mistral": "/v1/chat/completions",
    "deepseek": "/chat/completions",
    "openrouter": "/api/v1/chat/completions",
    "azure_openai": "/openai/deployments/gpt-4.1/chat/completions?api-version=2024-10-21",
    "githubmodels": "/inference/chat/completions",
    "xai": "/v1/chat/completions",
    "huggingface": "/v1/chat/completions",
    "novita": "/v3/openai/chat/completions",
    "kimi": "/v1/chat/completions",
}
GH_TOKEN = "gho_fakeGitHubCliToken0123456789"


def key_for(name: str) -> str:
    return GH_TOKEN if name == "githubmodels" else f"test-key-{name}-0123456789abcdef"


class Case(NamedTuple):
    adapter: str
    fixture: str
    text: str = ""
    reasoning: str = ""
    calls: tuple[tuple[str | None, str, dict[str, Any]], ...] = ()  # (id, None when made up), name, arguments
    usage: tuple[int, int, int] | None = None  # prompt, completion, total
    finish: str | None = None  # default: tool_calls with calls, else stop
    error: str | None = None  # the ErrorEvent message after "<Provider>: "
    partial: str = ""  # the text streamed before the error

    @property
    def kinds(self) -> set[str]:
        if self.error:
            return {"error_mid_stream"}
        kinds = {"streaming" if self.streamed else "whole_body"}
        if self.text:
            kinds.add("text")
        if self.reasoning:
            kinds.add("reasoning")
        if self.calls:
            kinds.add("tool_call")
        if len(self.calls) > 1:
            kinds.add("parallel_tool_calls")
        if self.usage:
            kinds.add("usage")
        return kinds

    @property
    def streamed(self) -> bool:
        return not self.fixture.endswith(".json")

    def __str__(self) -> str:
        return f"{self.adapter}:{self.fixture.split('/')[-1]}"


# The cases and HTTP error bodies of each provider, with what each must parse to.
MATRIX = json.loads((Path(__file__).parent / "coverage_matrix.json").read_text(encoding="utf-8"))["providers"]
CASES = [
    Case(
        adapter,
        entry["fixture"],
        **{k: v for k, v in entry.items() if k not in ("fixture", "calls", "usage")},
        calls=tuple((call_id, name, arguments) for call_id, name, arguments in entry.get("calls", ())),
        usage=tuple(entry["usage"]) if "usage" in entry else None,
    )
    for adapter, provider in MATRIX.items()
    for entry in provider["cases"]
]


def provider_name(adapter: str) -> str:
    return resolve(adapter).formatted_name


def check(case: Case, events: list[Any]) -> None:
    """The parsed events say exactly what the fixture says."""
    tokens = "".join(e.content for e in events if isinstance(e, TokenEvent))
    thoughts = "".join(e.content for e in events if isinstance(e, ReasoningEvent))
    if case.error:
        assert isinstance(events[-1], ErrorEvent), events[-1]
        assert events[-1].message == f"{provider_name(case.adapter)}: {case.error}"
        assert tokens == case.partial
        assert not any(isinstance(e, FinalEvent) for e in events)
        return
    final = events[-1]
    assert isinstance(final, FinalEvent), final
    assert sum(isinstance(e, FinalEvent) for e in events) == 1
    assert final.message.text == case.text and tokens == case.text
    assert final.message.reasoning == case.reasoning and thoughts == case.reasoning
    calls = final.message.tool_calls
    assert [(c.name, c.arguments) for c in calls] == [(name, args) for _, name, args in case.calls]
    for call, (expected_id, _, _) in zip(calls, case.calls):
        assert call.id == expected_id if expected_id else call.id.startswith("call_")
    assert len({c.id for c in calls}) == len(calls)
    complete = [(e.id, e.name, e.arguments) for e in events if isinstance(e, ToolCallEvent) and e.is_final]
    assert complete == [(c.id, c.name, c.arguments) for c in calls]
    assert final.finish_reason == (case.finish or ("tool_calls" if case.calls else "stop"))
    if case.usage:
        usage = final.usage
        assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == case.usage
        assert [e.usage for e in events if isinstance(e, UsageEvent)] == [usage]


# --- 1. through the handlers ---------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=str)
def test_through_the_handlers(case):
    check(case, replay_body(resolve(case.adapter), (FIXTURES / case.fixture).read_bytes()))


# --- 2. through a real HTTP server ---------------------------------------------------


@pytest.fixture
def point_at(monkeypatch, tmp_path):
    """An adapter as its user configures it (key in its environment variable, or from a
    `gh` on PATH for GitHub Models), sending to the local server through its real URL template."""

    def configure(name: str, server_url: str, *, stream: bool = True):
        for env in set(KEY_ENV.values()) - {KEY_ENV.get(name)}:
            monkeypatch.delenv(env, raising=False)
        if name in KEY_ENV:
            monkeypatch.setenv(KEY_ENV[name], key_for(name))
        adapter = resolve(name)
        if name == "githubmodels":
            bin_dir = tmp_path / "bin"
            bin_dir.mkdir(exist_ok=True)
            gh = bin_dir / "gh"
            gh.write_text(f"#!/bin/sh\n[ \"$1 $2\" = 'auth token' ] && echo {GH_TOKEN}\n")
            gh.chmod(0o755)
            monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        if name == "ollama":
            monkeypatch.setenv("OLLAMA_HOST", server_url)
        elif name == "azure_openai":
            monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server_url)
        elif adapter.url.startswith("${url}"):
            adapter.env["url"] = server_url
        else:  # the provider's own host replaced, its path and placeholders kept
            adapter.url = server_url + "/" + adapter.url.split("/", 3)[3]
        adapter.opts["stream"] = stream
        return adapter

    return configure


def reply_for(fixture: str, status: int = 200, size: int = 23, headers: dict[str, str] | None = None) -> Reply:
    kind = {".txt": "text/event-stream", ".ndjson": "application/x-ndjson"}.get(
        Path(fixture).suffix, "application/json"
    )
    return in_pieces((FIXTURES / fixture).read_bytes(), size, kind, status=status, headers=headers or {})


def check_sent(name: str, request, *, streamed: bool) -> None:
    """The request the adapter sent: its path, its key in the right header, its stream flag."""
    path = STREAM_PATH[name]
    if not streamed and name == "gemini":
        path = "/v1beta/models/gemini-2.5-flash:generateContent"
    elif not streamed and name == "gemini_interactions":
        path = "/v1beta/interactions"
    assert request.method == "POST" and request.path == path
    header = KEY_HEADER.get(name, "authorization")
    if name == "ollama":
        assert "authorization" not in request.headers
    else:
        expected = key_for(name) if name in KEY_HEADER else f"Bearer {key_for(name)}"
        assert request.headers[header] == expected
    body = request.json()
    if name == "gemini_interactions":  # typed steps, not roles
        assert body["input"][-1]["type"] == "user_input" and body["store"] is False
    else:
        turns = body[
            "messages" if name not in ("gemini", "openai_responses") else "contents" if name == "gemini" else "input"
        ]
        assert turns[-1]["role"] == "user"
    if name == "gemini":
        assert "stream" not in body
    else:
        assert body.get("stream", False) is streamed
        assert body["model"] == resolve(name).model


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_through_a_real_server(case, scripted_server, client, point_at):
    server = await scripted_server(reply_for(case.fixture, size=7 if case.adapter == "kimi" else 23))
    events = await ask(point_at(case.adapter, server.url, stream=case.streamed), client)
    check(case, events)
    check_sent(case.adapter, server.requests[0], streamed=case.streamed)


# --- 3. HTTP error bodies: each provider's own, and every status in its shape --------

HTTP_ERRORS = [  # (adapter, fixture, status, the whole message, error kind)
    (adapter, error["fixture"], error["status"], error["message"], error["kind"])
    for adapter, provider in MATRIX.items()
    for error in provider["http_errors"]
]
RETRY_AFTER = {"openai/error_429.json": "2", "githubmodels/error_429.json": "42"}


@pytest.mark.parametrize("adapter, fixture, status, expected, kind", HTTP_ERRORS, ids=[e[1] for e in HTTP_ERRORS])
async def test_provider_error_bodies_over_http(
    adapter, fixture, status, expected, kind, scripted_server, client, point_at
):
    retry = RETRY_AFTER.get(fixture)
    server = await scripted_server(reply_for(fixture, status, headers={"retry-after": retry} if retry else None))
    events = await ask(point_at(adapter, server.url), client)
    assert len(events) == 1 and isinstance(events[0], ErrorEvent)
    assert events[0].message == expected.format(url=server.url)
    assert (events[0].kind, events[0].status) == (kind, status)
    assert key_for(adapter) not in events[0].message


ERROR_TYPES = {  # status: (Anthropic's error type, Gemini's status)
    400: ("invalid_request_error", "INVALID_ARGUMENT"),
    401: ("authentication_error", "UNAUTHENTICATED"),
    403: ("permission_error", "PERMISSION_DENIED"),
    404: ("not_found_error", "NOT_FOUND"),
    413: ("request_too_large", "INVALID_ARGUMENT"),
    429: ("rate_limit_error", "RESOURCE_EXHAUSTED"),
    500: ("api_error", "INTERNAL"),
    503: ("api_error", "UNAVAILABLE"),
}


def native_error(adapter: str, status: int, message: str) -> dict[str, Any]:
    """An error body in the shape each provider documents."""
    if adapter == "anthropic":
        kind = ERROR_TYPES[status][0]
        return {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_01"}
    if adapter in ("gemini", "gemini_interactions"):
        return {"error": {"code": status, "message": message, "status": ERROR_TYPES[status][1]}}
    if adapter in ("ollama", "huggingface"):
        return {"error": message}
    if adapter == "mistral":
        if status == 401:
            return {"message": message, "request_id": "c61f2f15feca71626a990e3740f99245"}
        return {"object": "error", "message": message, "type": "invalid_request_error", "param": None, "code": None}
    if adapter == "xai":
        return {"code": "Some requested entity was not found" if status == 404 else "Internal", "error": message}
    if adapter == "novita":
        return {"code": status, "reason": "ERROR", "message": message, "metadata": {}}
    if adapter in ("azure_openai", "githubmodels"):
        return {"error": {"code": str(status), "message": message}}
    if adapter == "openrouter":
        return {"error": {"code": status, "message": message}}
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}


STATUSES = [400, 401, 403, 404, 413, 429, 500, 503]


def expected_wording(adapter: str, status: int, detail: str, url: str) -> str:
    name = provider_name(adapter)
    if adapter == "githubmodels":
        key = "the GitHub CLI login (`gh auth token`; run `gh auth login`)"
    else:
        key = f"the {KEY_ENV[adapter]} environment variable" if adapter in KEY_ENV else None
    if status == 401:
        return f"{name} rejected the API key (HTTP 401): {detail}; " + (
            f"check {key}" if key else "the adapter sends no API key"
        )
    if status == 403:
        return f"{name} refused access (HTTP 403): {detail}; " + (
            f"check {key} and that it may use this model" if key else "the key may not be allowed to use this model"
        )
    if status == 429:
        return f"{name}: rate limited (HTTP 429): {detail}; retry after 7s"
    path = STREAM_PATH[adapter].split("?")[0]
    return {
        400: f"{name}: bad request (HTTP 400): {detail}",
        404: f"{name}: not found (HTTP 404): {detail}; check the model name {resolve(adapter).model!r} and the URL "
        f"{url}{path}",
        413: f"{name}: request too large (HTTP 413): {detail}; the conversation or its attachments are too large: "
        f"remove some context or start a new chat",
        500: f"{name}: server error (HTTP 500): {detail}; this is on the provider's side: try again later",
        503: f"{name}: server error (HTTP 503): {detail}; this is on the provider's side: try again later",
    }[status]


@pytest.mark.parametrize("adapter", ADAPTERS)
async def test_every_status_has_a_clear_provider_specific_message(adapter, scripted_server, client, point_at):
    """400/401/403/404/413/429/5xx for each provider, over HTTP, in the provider's own error
    shape: the provider, what the status means, its message, what to check; a key the
    server echoes back is masked, and no key ever appears."""
    key = key_for(adapter)
    details = {s: f"problem {s} at {adapter}" for s in STATUSES}
    if adapter != "ollama":  # a server that echoes the key back: it must not reach the user
        details[401] = f"Incorrect API key provided: {key}"
    replies = [
        Reply(
            status=s,
            headers={"content-type": "application/json", **({"retry-after": "7"} if s == 429 else {})},
            chunks=[json.dumps(native_error(adapter, s, details[s])).encode()],
        )
        for s in STATUSES
    ]
    server = await scripted_server(*replies)
    kinds = {401: "AuthenticationError", 403: "AuthenticationError", 429: "RateLimitError"}
    for status in STATUSES:
        events = await ask(point_at(adapter, server.url), client)
        assert len(events) == 1 and isinstance(events[0], ErrorEvent), events
        shown = details[status].replace(key, "***")
        assert events[0].message == expected_wording(adapter, status, shown, server.url), status
        assert (events[0].kind, events[0].status) == (kinds.get(status, "HTTPStatusError"), status)
        assert key not in events[0].message


async def test_an_unset_key_is_named_as_unset_and_html_pages_are_summarised(scripted_server, client, monkeypatch):
    """openai_compatible sends no key when its variable is unset: a 401 says which variable
    to set; a gateway's HTML error page becomes its title, not markup."""
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    page = b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head><body><h1>nginx</h1></body></html>"
    server = await scripted_server(
        Reply(status=401, chunks=[b'{"error":{"message":"Missing Authentication header"}}']),
        Reply(status=502, headers={"content-type": "text/html"}, chunks=[page]),
    )
    adapter = adapters.extend("openai_compatible", {"env": {"url": server.url}})
    unauthorized = (await ask(adapter, client))[0].message
    assert unauthorized == (
        "OpenAI Compatible rejected the API key (HTTP 401): Missing Authentication header; "
        "check the OPENAI_COMPATIBLE_API_KEY environment variable (it is not set)"
    )
    gateway = (await ask(adapter, client))[0].message
    assert gateway == (
        "OpenAI Compatible: server error (HTTP 502): an HTML page: 502 Bad Gateway; "
        "this is on the provider's side: try again later"
    )


# --- 4. concatenated arguments from parallel calls under one index -------------------

CONCATENATED = FIXTURES / "openai/concatenated_args_streaming.txt"


# the rest speak OpenAI's Chat Completions
OWN_WIRE = ("anthropic", "openai_responses", "gemini", "gemini_interactions", "ollama")


@pytest.mark.parametrize("adapter", [a for a in ADAPTERS if a not in OWN_WIRE])
def test_concatenated_arguments_are_split_for_every_openai_wire_provider(adapter):
    final = replay_body(resolve(adapter), CONCATENATED.read_bytes())[-1]
    assert isinstance(final, FinalEvent), final
    assert [(c.name, c.arguments) for c in final.message.tool_calls] == [
        ("read_file", {"path": "a.py"}),
        ("read_file", {"path": "b.py"}),
    ]
    assert len({c.id for c in final.message.tool_calls}) == 2


def test_concatenated_arguments_are_split_for_anthropic_and_responses():
    anthropic = (
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":'
        b'{"type":"tool_use","id":"toolu_C","name":"read_file","input":{}}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":'
        b'{"type":"input_json_delta","partial_json":"{\\"path\\":\\"a.py\\"}{\\"path\\":"}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":'
        b'{"type":"input_json_delta","partial_json":"\\"b.py\\"}"}}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"tool_use"},'
        b'"usage":{"output_tokens":9}}\n\n'
    )
    responses = (
        b'event: response.output_item.added\ndata: {"type":"response.output_item.added","output_index":0,'
        b'"item":{"type":"function_call","id":"fc_1","call_id":"call_R","name":"read_file","arguments":""}}\n\n'
        b'event: response.function_call_arguments.delta\ndata: {"type":"response.function_call_arguments.delta",'
        b'"output_index":0,"delta":"{\\"path\\":\\"a.py\\"}{\\"path\\":\\"b.py\\"}"}\n\n'
        b'event: response.completed\ndata: {"type":"response.completed","response":{"status":"completed"}}\n\n'
    )
    for adapter, body, first_id in (("anthropic", anthropic, "toolu_C"), ("openai_responses", responses, "call_R")):
        calls = replay_body(resolve(adapter), body)[-1].message.tool_calls
        assert [(c.id, c.arguments) for c in calls] == [
            (first_id, {"path": "a.py"}),
            (f"{first_id}_1", {"path": "b.py"}),
        ]


def test_arguments_that_cannot_be_split_are_reported_not_merged():
    body = (
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":'
        b'{"name":"read_file","arguments":"{\\"path\\":\\"a.py\\"}{\\"path\\":"}}]}}]}\n\ndata: [DONE]\n\n'
    )
    for adapter in ("openai", "kimi"):
        (call,) = replay_body(resolve(adapter), body)[-1].message.tool_calls
        assert call.arguments == {}
        assert call.provider_data["invalid_arguments"] == '{"path":"a.py"}{"path":'


def test_parallel_calls_with_their_own_ids_under_one_index_keep_their_names():
    # Some OpenAI-compatible servers (LiteLLM over Ollama, Responses-to-Chat proxies) give
    # every parallel call index 0 but their own id and name.
    body = (
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function",'
        b'"function":{"name":"get_weather","arguments":"{\\"city\\":\\"Paris\\"}"}}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_b","type":"function",'
        b'"function":{"name":"get_time","arguments":"{\\"zone\\":\\"UTC\\"}"}}]}}]}\n\ndata: [DONE]\n\n'
    )
    calls = replay_body(resolve("openai"), body)[-1].message.tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_a", "get_weather", {"city": "Paris"}),
        ("call_b", "get_time", {"zone": "UTC"}),
    ]


def test_openrouter_finish_reason_error_is_a_failure_not_an_answer():
    body = (
        b'data: {"choices":[{"index":0,"delta":{"content":"Part"}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error",'
        b'"error":{"code":502,"message":"Upstream died"}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}\n\ndata: [DONE]\n\n'
    )
    events = replay_body(resolve("openrouter"), body)
    assert isinstance(events[-1], ErrorEvent) and events[-1].message == "OpenRouter: Upstream died"
    bare = body.split(b"\n\n")
    events = replay_body(resolve("openrouter"), bare[0] + b"\n\n" + bare[2] + b"\n\n")
    assert events[-1].message == 'OpenRouter: the stream ended with finish_reason "error"'
    # the same through the base adapter (an OpenRouter-like proxy behind openai_compatible)
    assert isinstance(replay_body(resolve("openai"), body)[-1], ErrorEvent)


# --- 5. `codecompanion-py replay` for every adapter ----------------------------------

REPLAY = {
    name: (
        [c for c in CASES if c.adapter == name and c.streamed and not c.error][0],
        [c for c in CASES if c.adapter == name and not c.streamed][0],
    )
    for name in ADAPTERS
}


def run_replay(capsys, adapter: str, fixture: str) -> tuple[int, list[dict[str, Any]]]:
    code = cli.main(["replay", "--adapter", adapter, str(FIXTURES / fixture)])
    out = capsys.readouterr().out
    return code, [json.loads(line) for line in out.splitlines()]


@pytest.mark.parametrize("case", [c for pair in REPLAY.values() for c in pair], ids=str)
def test_replay_command_streamed_and_whole_bodies(case, capsys):
    code, events = run_replay(capsys, case.adapter, case.fixture)
    assert code == 0
    final = events[-1]
    assert final["type"] == "final"
    parts = final["message"]["parts"]
    assert "".join(p["text"] for p in parts if p["type"] == "text") == case.text
    assert "".join(p["text"] for p in parts if p["type"] == "reasoning") == case.reasoning
    calls = [e for e in events if e["type"] == "tool_call"]
    assert [(c["name"], c["arguments"]) for c in calls] == [(n, a) for _, n, a in case.calls]
    if case.usage:
        usage = [e["usage"] for e in events if e["type"] == "usage"][0]
        assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == case.usage


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_replay_command_reports_a_mid_stream_error(adapter, capsys):
    case = next(c for c in CASES if c.adapter == adapter and c.error)
    code, events = run_replay(capsys, adapter, case.fixture)
    assert code == 1
    assert "".join(e["content"] for e in events if e["type"] == "token") == case.partial
    assert events[-1]["type"] == "error"
    assert events[-1]["message"] == f"{provider_name(adapter)}: {case.error}"


def test_the_installed_command_replays_for_every_adapter():
    """One process of the real console script per adapter pair would be slow; one run per
    wire format family, as a user types it."""
    command = shutil.which("codecompanion-py", path=str(Path(sys.executable).parent)) or shutil.which(
        "codecompanion-py"
    )
    if command is None:
        pytest.skip("the codecompanion-py console script is not installed")
    for case in (REPLAY["kimi"][0], REPLAY["xai"][1], REPLAY["ollama"][1], REPLAY["gemini"][0]):
        result = subprocess.run(
            [command, "replay", "--adapter", case.adapter, str(FIXTURES / case.fixture)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        final = json.loads(result.stdout.splitlines()[-1])
        assert "".join(p.get("text", "") for p in final["message"]["parts"] if p["type"] == "text") == case.text


# --- the matrix ------------------------------------------------------------------------

REQUIRED = [
    "text",
    "tool_call",
    "parallel_tool_calls",
    "reasoning",
    "usage",
    "error_mid_stream",
    "http_error_body",
    "streaming",
    "whole_body",
]


def coverage() -> dict[str, set[str]]:
    matrix: dict[str, set[str]] = {name: set() for name in ADAPTERS}
    for case in CASES:
        matrix[case.adapter] |= case.kinds
    for adapter, *_ in HTTP_ERRORS:
        matrix[adapter].add("http_error_body")
    return matrix


def test_the_matrix_is_complete():
    # copilot speaks the openai wire format behind a token exchange: tests/adapters/test_copilot.py
    assert set(ADAPTERS) == set(adapters.BUILTIN.names("http")) - {"demo", "openai_compatible", "copilot"}
    missing = {
        name: [k for k in REQUIRED if k not in kinds and not (k == "reasoning" and name in NO_REASONING)]
        for name, kinds in coverage().items()
    }
    assert {name: kinds for name, kinds in missing.items() if kinds} == {}
    for case in CASES:
        assert (FIXTURES / case.fixture).is_file(), case.fixture
