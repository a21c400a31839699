"""The engine's log (logfile.py): CodeCompanion's file and level names, rotated at its cap,
every record scrubbed; a request at INFO and DEBUG, over real HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from codecompanion_py import logfile
from codecompanion_py.acp.jsonrpc import Connection
from codecompanion_py.client import HttpClient, HttpRequest
from codecompanion_py.demo.server import sse_reply
from codecompanion_py.messages import Message
from codecompanion_py.scrubber import KNOWN

KEY = "sk-unit-log-0123456789abcdefghij"


@pytest.fixture
def log_to(tmp_path):
    """`log_to(level, **options)`: the engine's log configured at `level` into a file of this
    test's, whose path it returns; the log goes nowhere again after the test."""

    def configure(level: str, **options):
        path = tmp_path / "nvim" / logfile.FILE_NAME  # the folder is made as it is needed
        assert logfile.configure(str(path), level, **options) is None
        return path

    yield configure
    logfile.configure(None, "ERROR")


async def ask(url: str) -> None:
    request = HttpRequest(
        url=f"{url}/v1/chat/completions?key={KEY}",
        body=f'{{"messages": [{{"role": "user", "content": "my key is {KEY}"}}]}}'.encode(),
        headers={"Authorization": f"Bearer {KEY}"},
        provider="openai",
        model="gpt-test",
    )
    async with HttpClient(retries=0).open(request) as response:
        await response.aread()


async def test_debug_logs_the_request_and_its_body_without_the_key(log_to, scripted_server):
    path = log_to("DEBUG")
    server = await scripted_server(sse_reply([{"choices": []}]))
    await ask(server.url)
    text = path.read_text()
    assert "[INFO] " in text and f"POST {server.url}/v1/chat/completions (openai, model gpt-test" in text
    assert "status 200" in text
    assert "[DEBUG] " in text and "request body: " in text and "my key is ***" in text
    assert KEY not in text and "key=" not in text  # nor the query string that may hold one


async def test_at_the_default_level_a_request_writes_nothing(log_to, scripted_server):
    path = log_to("ERROR")
    server = await scripted_server(sse_reply([{"choices": []}]))
    await ask(server.url)
    assert not path.exists()
    KNOWN.remember([KEY])  # as prepare() makes an adapter's key known
    logging.getLogger("codecompanion_py.test").error("what failed, %s", KEY)
    assert path.read_text().startswith("[ERROR] ") and "what failed, ***" in path.read_text()


def test_levels_by_codecompanions_names(log_to):
    path = log_to("TRACE")
    log = logging.getLogger("codecompanion_py.test")
    log.log(logfile.TRACE, "a chunk")
    log.warning("a retry")
    log.info("a request")
    lines = [line.split(" ")[0] for line in path.read_text().splitlines()]
    assert lines == ["[TRACE]", "[WARN]", "[INFO]"]
    log_to("WARN")
    log.info("not written")
    assert "not written" not in path.read_text()


def test_the_log_is_rotated_at_its_cap_and_one_older_file_is_kept(log_to):
    path = log_to("INFO", max_bytes=4000)
    log = logging.getLogger("codecompanion_py.test")
    for number in range(300):
        log.info("record %d %s", number, "x" * 60)
    older = path.with_name(logfile.FILE_NAME + ".1")
    assert path.stat().st_size <= 4000 and older.stat().st_size <= 4000
    assert "record 299 " in path.read_text()
    assert sorted(p.name for p in path.parent.iterdir()) == [logfile.FILE_NAME, logfile.FILE_NAME + ".1"]


def test_a_record_holds_at_most_a_cut_of_a_body():
    body = ("a" * 10 + KEY) * 2000
    shown = logfile.loggable(body.encode(), [KEY])
    assert len(shown) <= logfile.CUT + 1 and KEY[:8] not in shown


class _Pipe:
    """A writer whose every request is answered on `reader` (a peer that echoes the params)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def write(self, data: bytes) -> None:
        sent = json.loads(data)
        self.reader.feed_data(
            json.dumps({"jsonrpc": "2.0", "id": sent["id"], "result": sent["params"]}).encode() + b"\n"
        )

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        self.reader.feed_eof()


async def test_an_agents_messages_at_debug_and_trace_without_the_key(log_to):
    path = log_to("TRACE")
    KNOWN.remember([KEY])
    reader = asyncio.StreamReader()

    async def nothing(*_args):
        return None

    peer = Connection(reader, _Pipe(reader), on_request=nothing, on_notification=nothing, name="agent")
    peer.start()
    assert await peer.request("session/prompt", {"text": f"use {KEY}"}) == {"text": f"use {KEY}"}
    await peer.close()
    lines = path.read_text().splitlines()
    assert [line.split(" ")[0] for line in lines] == ["[DEBUG]", "[TRACE]"]
    assert "agent <- " in lines[0] and '"method":"session/prompt"' in lines[0] and "use ***" in lines[0]
    assert "agent -> " in lines[1] and "use ***" in lines[1]
    assert KEY not in path.read_text()


async def test_a_reply_that_echoes_a_key_without_digits_is_logged_without_it(log_to, scripted_server, monkeypatch):
    """A key not shaped like a credential (no digit) is no known key: the request's own keys
    keep it out of the chunks at TRACE and the reply at DEBUG all the same."""
    from codecompanion_py.adapters import Adapters
    from codecompanion_py.stream.iterators import HttpStreamIterator
    from tests.e2e.test_chat import chunk

    wordy = "abcdefghsecretvalue-horse"
    monkeypatch.setenv("LOG_TEST_WORDY_KEY", wordy)
    path = log_to("TRACE")
    server = await scripted_server(sse_reply([chunk(f"your key is {wordy}"), chunk(finish="stop")]))
    adapters = Adapters(
        {"wordy": {"__extends": "openai_compatible", "env": {"url": server.url, "api_key": "LOG_TEST_WORDY_KEY"}}}
    )
    client = HttpClient(retries=0)
    try:
        async for _event in HttpStreamIterator(adapters.http("wordy"), [Message.of("user", "hi")], client=client):
            pass
    finally:
        await client.aclose()
    text = path.read_text()
    assert "chunk: " in text and "reply (stop): " in text and "your key is ***" in text
    assert wordy not in text


async def test_the_mcp_servers_handed_to_an_agent_are_logged_without_their_values(log_to):
    path = log_to("DEBUG")
    reader = asyncio.StreamReader()

    async def nothing(*_args):
        return None

    peer = Connection(reader, _Pipe(reader), on_request=nothing, on_notification=nothing, name="agent")
    peer.start()
    server = {
        "name": "db",
        "command": "db-mcp",
        "args": [],
        "env": [{"name": "DB_PASSWORD", "value": "correct-horse-battery-staple"}],
        "headers": [{"name": "X-Token", "value": "plain-words-token"}],
    }
    await peer.request("session/new", {"cwd": "/p", "mcpServers": [server]})
    await peer.close()
    text = path.read_text()
    assert '"name":"DB_PASSWORD","value":"***"' in text and '"command":"db-mcp"' in text
    assert "correct-horse" not in text and "plain-words" not in text
