"""No key reaches the user: not through httpx's "illegal header value" (a key with a CR or
LF: a `cmd:` printing two lines, a CRLF env file), not through an error frame or status
body that echoes the request's headers, not through an exception or a URL in a hint. A
key that is empty is missing, and the message names where it should come from."""

from __future__ import annotations

import json

import pytest

from codecompanion_py import cli
from codecompanion_py.adapters import extend, resolve
from codecompanion_py.adapters.base import prepare
from codecompanion_py.client import HttpClient
from codecompanion_py.demo.server import ServerThread
from codecompanion_py.errors import ConfigError
from codecompanion_py.events import ErrorEvent
from codecompanion_py.messages import Message
from codecompanion_py.stream.iterators import HttpStreamIterator

from .fault_server import FaultServer, events, sse, status, stream

KEY = "sk-live-DoNotShowMe-0123456789"


@pytest.fixture
async def client():
    http = HttpClient(read_timeout=5, connect_timeout=2, retries=0)
    yield http
    await http.aclose()


async def ask(adapter, client) -> list:
    return [e async for e in HttpStreamIterator(adapter, [Message.of("user", "hi")], client=client)]


def openai_at(url: str, api_key: str = "OPENAI_API_KEY"):
    adapter = resolve("openai")
    adapter.url = url + "/v1/chat/completions"
    adapter.env["api_key"] = api_key
    return adapter


# --- keys with line breaks ---------------------------------------------------------------


@pytest.mark.parametrize("value", [KEY + "\r", KEY + "\r\n", KEY + "\nsecond-line", "first\n" + KEY])
async def test_a_key_with_a_line_break_is_refused_naming_the_variable(value, client, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", value)
    async with FaultServer.sequence() as server:
        got = await ask(openai_at(server.url), client)
    assert len(got) == 1 and isinstance(got[0], ErrorEvent) and got[0].kind == "ConfigError"
    assert "the OPENAI_API_KEY environment variable (env.api_key) has a line break" in got[0].message
    assert "Authorization header" in got[0].message
    assert KEY not in got[0].message and "second-line" not in got[0].message and "first" not in got[0].message
    assert server.requests == []  # nothing was sent


async def test_a_command_printing_two_lines_is_refused_naming_the_command(client):
    async with FaultServer.sequence() as server:
        got = await ask(openai_at(server.url, f"cmd:printf '{KEY}\\nsecond-line\\n'"), client)
    assert len(got) == 1 and isinstance(got[0], ErrorEvent)
    assert got[0].message == (
        "openai: env 'api_key' command (`printf ...`) printed more than one line; "
        "it must print the value alone, on one line"
    )
    assert server.requests == []


async def test_a_commands_single_trailing_newline_is_dropped_as_a_shell_does(client):
    async with FaultServer.sequence(
        stream(sse({"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}))
    ) as server:
        got = await ask(openai_at(server.url, f"cmd:printf '{KEY}\\r\\n'"), client)
    assert got[-1].message.text == "ok"
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_a_key_file_with_two_lines_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "key"
    path.write_text(f"{KEY}\nsecond-line\n")
    adapter = extend("openai", {"env": {"api_key": f"file:{path}"}})
    with pytest.raises(ConfigError) as refused:
        await prepare(adapter)
    assert f"the file {path} (env.api_key) has a line break" in str(refused.value)
    assert KEY not in str(refused.value)


def test_the_cli_never_prints_a_key_with_a_line_break(capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY + "\nsecond-line")
    with ServerThread(FaultServer.sequence(status(500))) as server:
        code = cli.main(["chat", "--adapter", "openai", "--url", server.url + "/v1/chat/completions", "hi"])
    out, err = capsys.readouterr()
    assert code != 0 and "OPENAI_API_KEY" in err
    assert KEY not in out + err and "second-line" not in out + err


async def test_header_values_from_any_source_are_checked_before_sending(client):
    """A header built without the adapter's env (a token exchange's): refused by the client."""
    from codecompanion_py.client import HttpRequest

    request = HttpRequest(
        url="http://127.0.0.1:9/x", body=b"", headers={"Authorization": f"Bearer {KEY}\n"}, provider="Example"
    )
    with pytest.raises(ConfigError) as refused:
        await client.fetch_json(request)
    assert "the Authorization header would contain a line break" in str(refused.value)
    assert KEY not in str(refused.value)


# --- empty keys ----------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["", "   "])
async def test_an_empty_variable_is_a_missing_key_named_as_such(value, client, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", value)
    async with FaultServer.sequence() as server:
        got = await ask(openai_at(server.url), client)
    assert got[-1].message.startswith("openai: api_key (environment variable OPENAI_API_KEY) is empty")
    assert server.requests == []  # no `Authorization: Bearer ` with nothing after it


async def test_an_empty_optional_key_sends_no_authorization(client, monkeypatch):
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "")
    async with FaultServer.sequence(
        stream(sse({"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}))
    ) as server:
        got = await ask(extend("openai_compatible", {"env": {"url": server.url}}), client)
    assert got[-1].message.text == "ok"
    assert "authorization" not in server.requests[0].headers


async def test_a_command_printing_nothing_is_a_missing_key(client):
    async with FaultServer.sequence() as server:
        got = await ask(openai_at(server.url, "cmd:true"), client)
    assert got[-1].message == "openai: env.api_key is not set: the command (`true ...`) printed nothing"


# --- error texts that echo the key ----------------------------------------------------------

ECHO = f"invalid request: header Authorization: Bearer {KEY} rejected (x-api-key: {KEY})"
IN_STREAM_ERRORS = {
    "openai": (sse({"error": {"message": ECHO, "type": "invalid_request_error"}}, done=False), "text/event-stream"),
    "anthropic": (
        events({"type": "error", "error": {"type": "invalid_request_error", "message": ECHO}}),
        "text/event-stream",
    ),
    "gemini": (
        sse({"error": {"code": 400, "message": ECHO, "status": "INVALID_ARGUMENT"}}, done=False),
        "text/event-stream",
    ),
    "openai_responses": (events({"type": "error", "message": ECHO, "code": "bad"}), "text/event-stream"),
}
KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "openai_responses": "OPENAI_API_KEY",
}


@pytest.mark.parametrize("adapter", sorted(IN_STREAM_ERRORS))
async def test_an_error_frame_in_a_200_stream_is_scrubbed(adapter, client, monkeypatch):
    monkeypatch.setenv(KEY_ENV[adapter], KEY)
    frames, kind = IN_STREAM_ERRORS[adapter]
    async with FaultServer.sequence(stream(frames, kind)) as server:
        ready = resolve(adapter)
        ready.url = server.url + "/" + ready.url.split("/", 3)[3]
        got = await ask(ready, client)
    assert isinstance(got[-1], ErrorEvent) and got[-1].kind == "StreamError"
    assert KEY not in got[-1].message and "Bearer ***" in got[-1].message


async def test_an_ollama_error_line_is_scrubbed_of_a_key_from_a_header(client, monkeypatch):
    monkeypatch.setenv("OLLAMA_API_KEY", KEY)
    async with FaultServer.sequence(
        stream([json.dumps({"error": ECHO}).encode() + b"\n"], "application/x-ndjson")
    ) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.url)
        adapter = extend(
            "ollama", {"env": {"api_key": "OLLAMA_API_KEY"}, "headers": {"Authorization": "Bearer ${api_key}"}}
        )
        got = await ask(adapter, client)
    assert KEY not in got[-1].message and "***" in got[-1].message


async def test_a_status_error_echoing_a_key_in_a_custom_header_or_the_url_is_scrubbed(client, monkeypatch):
    """The key in a header whose name says nothing, and in the URL's path (the 404 hint)."""
    monkeypatch.setenv("MY_GATEWAY_KEY", KEY)
    async with FaultServer.sequence(status(404, f"no route for key {KEY}")) as server:
        adapter = extend(
            "openai_compatible",
            {
                "url": "${url}/gw/${api_key}/chat",
                "env": {"url": server.url, "api_key": "MY_GATEWAY_KEY"},
                "headers": {"X-Gateway": "${api_key}"},
            },
        )
        got = await ask(adapter, client)
    assert got[-1].kind == "HTTPStatusError"
    assert KEY not in got[-1].message
    assert got[-1].message.startswith("OpenAI Compatible: not found (HTTP 404): no route for key ***;")
    assert f"{server.url}/gw/***/chat" in got[-1].message


async def test_an_exception_from_a_handler_is_scrubbed(client, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)

    def parse_chat(self, data, tools=None):
        raise ValueError(f"cannot parse with {self.env_replaced['api_key']}")

    async with FaultServer.sequence(stream(sse({"choices": []}))) as server:
        adapter = openai_at(server.url)
        adapter.handlers["response"]["parse_chat"] = parse_chat
        got = await ask(adapter, client)
    assert got[-1].message == "the adapter failed: ValueError: cannot parse with ***"


async def test_the_iterators_error_object_is_scrubbed_too(client, monkeypatch):
    """`generate()` raises `stream.error`: its text is scrubbed as the event's is."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    async with FaultServer.sequence(stream(IN_STREAM_ERRORS["openai"][0])) as server:
        iterator = HttpStreamIterator(openai_at(server.url), [Message.of("user", "hi")], client=client)
        [e async for e in iterator]
    assert iterator.error is not None and KEY not in str(iterator.error)
