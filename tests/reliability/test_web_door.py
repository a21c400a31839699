"""The web door: `fetch_webpage` and `#{fetch}` (web.py), and the one outbound HTTP door
(outbound.py) that the providers, web pages and MCP servers over HTTP share.

Real servers on 127.0.0.1 (raw asyncio sockets, so a test decides every byte and pause),
real TLS from a certificate openssl makes, a real proxy that records what it is asked. Only
name resolution, which leaves the machine, is replaced (`netguard.resolve`, the door's one
resolution step).
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import socket
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from codecompanion_py import client, config, outbound, web
from codecompanion_py.demo.server import Reply, ScriptedServer, ServerThread
from codecompanion_py.errors import ConfigError
from tests.e2e.conftest import editor, nvim_home  # noqa: F401 - the real Neovim, for the chat's door
from tests.e2e.test_chat_surface import chat_config, send, setup
from tests.e2e.test_chat_surface import reply as llm_reply
from tests.e2e.test_context import user_message

from ..tools.test_catalog import Editor, chat

Answer = Callable[[str, dict[str, str], asyncio.StreamWriter], Awaitable[None]]
HOST = "127.0.0.1"
BOUND = 10.0  # seconds any one fetch may take here, on a loaded machine, before the test fails


@dataclass
class Site:
    url: str
    requests: list[str] = field(default_factory=list)  # request lines
    hosts: list[str] = field(default_factory=list)  # Host headers


@contextlib.asynccontextmanager
async def serve(answer: Answer, *, tls: ssl.SSLContext | None = None) -> AsyncIterator[Site]:
    """A server on 127.0.0.1 that reads each request's head and lets `answer` write the reply."""
    site = Site("")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
                headers = dict(line.lower().split(": ", 1) for line in head[1:] if ": " in line)
                site.requests.append(head[0])
                site.hosts.append(headers.get("host", ""))
                if int(headers.get("content-length", 0)):
                    await reader.readexactly(int(headers["content-length"]))
                await answer(head[0], headers, writer)
                await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, HOST, 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    site.url = f"{'https' if tls else 'http'}://{HOST}:{port}"
    try:
        yield site
    finally:
        server.close()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(server.wait_closed(), 2)


def reply(
    body: bytes = b"", status: int = 200, headers: dict[str, str] | None = None, kind: str | None = "text/plain"
) -> bytes:
    lines = [f"HTTP/1.1 {status} X", f"content-length: {len(body)}"]
    lines += [f"content-type: {kind}"] if kind else []
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def answering(*replies: bytes) -> Answer:
    """The nth request gets the nth reply, the last one any later request."""
    pending = list(replies)

    async def answer(line: str, headers: dict[str, str], writer: asyncio.StreamWriter) -> None:
        writer.write(pending.pop(0) if len(pending) > 1 else pending[0])

    return answer


def moved(location: str, status: int = 302) -> bytes:
    return reply(status=status, headers={"location": location})


@pytest.fixture(autouse=True)
def plain_network(monkeypatch: pytest.MonkeyPatch) -> Any:
    """No proxy from the environment, the default settings, an empty page cache."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    web._cache.clear()
    yield
    web._cache.clear()


PLAIN = outbound.ClientSettings()  # no proxy from the config, the TLS check on


async def fetch_tool(tmp_path: Path, url: str, settings: outbound.ClientSettings = PLAIN) -> tuple[Any, Editor]:
    session = chat(tmp_path, Editor(default="accept"))
    session.orchestrator.context.http = settings  # the config's, as a chat gives its tools
    result = await asyncio.wait_for(session.run("fetch_webpage", url=url), BOUND)
    return result, session.editor


# --- 1. redirects ----------------------------------------------------------------------------


async def test_a_redirect_to_another_site_is_not_followed_but_named(tmp_path):
    async with serve(answering(reply(b"the other site's secret"))) as other:
        async with serve(answering(moved(f"{other.url}/elsewhere"))) as site:
            result, ui = await fetch_tool(tmp_path, f"{site.url}/docs")

    assert result.status == "error"
    assert f"redirected to {other.url}/elsewhere: not followed; fetch that URL if you want it" in result.content
    assert other.requests == []  # the approval named the first URL only: nothing went elsewhere
    assert [asked["prompt"] for asked in ui.asked] == [f"Fetch {site.url}/docs?"]


@pytest.mark.nvim
def test_a_chat_fetch_follows_its_site_elsewhere_but_never_to_a_forbidden_address(editor):  # noqa: F811
    """The user typed the URL, so a site that moved is followed (the LLM's own fetches are
    not: their approval named the site); every hop's address is still checked."""

    def respond(request: Any) -> Reply:
        if request.method == "GET" and request.path == "/docs":  # moved to another site
            return Reply(status=302, headers={"location": f"{other.url}/moved"})
        if request.method == "GET" and request.path == "/meta":
            return Reply(status=302, headers={"location": "http://169.254.169.254/latest/meta-data/"})
        if request.method == "GET":
            return Reply(headers={"content-type": "text/plain"}, chunks=[b"the moved page"])
        return llm_reply("fine")

    with ServerThread(ScriptedServer(respond)) as page, ServerThread(ScriptedServer(respond)) as other:
        setup(editor, other.url, chat_config(""))
        editor.nvim.command("CodeCompanionChat")
        editor.type_prompt(f"#{{fetch:{page.url}/docs}}")
        editor.nvim.input("<CR>")
        assert editor.wait_event("CodeCompanionChatDone")["data"]["status"] == "success"
        posts = [r for r in other.requests if r.method == "POST"]
        assert "the moved page" in json.dumps(posts[-1].json())
        editor.type_prompt(f"#{{fetch:{page.url}/meta}}")
        editor.nvim.input("<CR>")
        done = editor.wait_event("CodeCompanionChatDone", count=2)
        assert done["data"]["status"] == "error"
        editor.wait_for(lambda: "169.254.169.254" in editor.text(), what="the reason in the chat")
        send(editor, "still there?", 3)
        assert user_message(other, -1) == "still there?"


async def test_redirects_within_the_site_are_followed_at_most_five_times(tmp_path):
    async with serve(answering(moved("/a"), moved("/b", 301), moved("/c", 307), reply(b"arrived"))) as site:
        result, _ = await fetch_tool(tmp_path, f"{site.url}/start")
    assert result.status == "success" and result.content.endswith("arrived")
    assert site.requests[-1] == "GET /c HTTP/1.1"

    async with serve(answering(moved("/loop"))) as loop:
        result, _ = await fetch_tool(tmp_path, f"{loop.url}/loop")
    assert result.status == "error" and "more than 5 redirects" in result.content
    assert len(loop.requests) == 6  # the first request and five redirects, no more


async def test_a_redirect_carrying_a_password_is_not_followed_nor_repeated(tmp_path):
    async with serve(answering(moved("http://admin:hunter22@127.0.0.1:9/x"))) as site:
        result, _ = await fetch_tool(tmp_path, f"{site.url}/")
    assert result.status == "error" and "not followed" in result.content
    assert "hunter22" not in result.content


async def test_https_to_plain_http_is_refused_and_allow_insecure_reaches_the_page(tmp_path, tls_server_context):
    async with serve(answering(reply(b"plain secret"))) as plain:
        async with serve(answering(moved(f"{plain.url}/x"), reply(b"over tls")), tls=tls_server_context) as site:
            # a certificate nobody vouches for: refused, until the user's allow_insecure
            with pytest.raises(ConfigError, match="could not fetch"):
                await asyncio.wait_for(web.page_text(f"{site.url}/a", settings=PLAIN), BOUND)
            insecure = config.load({"adapters": {"http": {"opts": {"allow_insecure": True}}}}).http
            with pytest.raises(ConfigError, match="from https to plain http"):
                await asyncio.wait_for(web.page_text(f"{site.url}/a", settings=insecure), BOUND)
            assert await asyncio.wait_for(web.page_text(f"{site.url}/b", settings=insecure), BOUND) == "over tls"
    assert plain.requests == []


# --- 2. link-local and metadata addresses ------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://[fe80::1]/",
        "http://[fe80::1%25eth0]/",
        "http://0xA9FEA9FE/",
        "http://2852039166/",
        "http://0251.0376.0251.0376/",
        "http://169.254.43518/",
        "http://[::ffff:169.254.169.254]/",
        "http://[::ffff:a9fe:a9fe]/",
        "http://[64:ff9b::a9fe:a9fe]/",
        "http://100.100.100.200/latest/meta-data/",
        "http://[fd00:ec2::254]/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://METADATA.google.internal./",
        "http://0.0.0.0:8080/",
    ],
)
async def test_link_local_and_metadata_addresses_are_refused_before_anyone_is_asked(tmp_path, url):
    result, ui = await fetch_tool(tmp_path, url)
    assert result.status == "error"
    assert "not fetched" in result.content or "not a URL that can be fetched" in result.content  # (httpx's own)
    assert ui.asked == []  # refused before the approval: no connection was ever tried


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """What each name resolves to, instead of asking DNS; a name not listed is unknown."""
    from codecompanion_py import netguard

    names: dict[str, list[str]] = {}

    async def resolve(host: str, port: int) -> list[str]:
        if host not in names:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return names[host]

    monkeypatch.setattr(netguard, "resolve", resolve)
    return names


async def test_a_name_that_resolves_to_a_forbidden_address_is_refused(resolver):
    resolver["rebind.example.test"] = ["169.254.169.254"]
    resolver["split.example.test"] = ["127.0.0.1", "fe80::1"]
    async with serve(answering(reply(b"should never be read"))) as site:
        port = site.url.rsplit(":", 1)[1]
        for name, shown in (("rebind", "169.254.169.254, a cloud metadata service"), ("split", "fe80::1")):
            with pytest.raises(ConfigError, match="not fetched") as refused:
                await asyncio.wait_for(web.page_text(f"http://{name}.example.test:{port}/", settings=PLAIN), BOUND)
            assert shown in str(refused.value)
    assert site.requests == []


async def test_a_name_is_reached_at_the_address_that_was_checked(resolver):
    async with serve(answering(reply(b"local docs"))) as site:
        port = site.url.rsplit(":", 1)[1]
        resolver["docs.example.test"] = ["::1", "127.0.0.1"]  # nothing listens on the first: the next is tried
        assert (
            await asyncio.wait_for(web.page_text(f"http://docs.example.test:{port}/", settings=PLAIN), BOUND)
            == "local docs"
        )
    assert site.hosts == [f"docs.example.test:{port}"]


# --- 3. deadline, caps, content types, encodings, linear parsing -------------------------------


async def test_a_trickling_page_ends_with_a_clear_error_at_the_deadline(monkeypatch):
    monkeypatch.setattr(web, "DEADLINE", 1.0)

    async def trickle(line: str, headers: dict[str, str], writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 1000\r\n\r\n")
        for _ in range(300):  # one byte every 0.2 s: never silent long enough for a read timeout
            writer.write(b"x")
            await writer.drain()
            await asyncio.sleep(0.2)

    async with serve(trickle) as site:
        with pytest.raises(ConfigError, match="no whole page within 1 s"):
            await asyncio.wait_for(web.page_text(f"{site.url}/slow", settings=PLAIN), BOUND)


async def test_only_text_is_read(tmp_path):
    pdf = reply(b"%PDF-1.7\n\x00\x01binary", kind="application/pdf")
    untyped = reply(b"\x7fELF\x02\x01\x01\x00\x00\x00", kind=None)
    async with serve(answering(pdf, untyped, reply(b'{"a": 1}', kind="application/json"))) as site:
        result, _ = await fetch_tool(tmp_path, f"{site.url}/doc.pdf")
        assert result.status == "error" and "is application/pdf, not text: not read" in result.content
        result, _ = await fetch_tool(tmp_path, f"{site.url}/tool")
        assert result.status == "error" and "is binary, not text" in result.content
        result, _ = await fetch_tool(tmp_path, f"{site.url}/data.json")
        assert result.status == "success" and result.content.endswith('{"a": 1}')


async def test_invalid_bytes_and_unknown_charsets_are_replaced_not_fatal(tmp_path):
    body = "café ".encode() + b"\xff\xfe ok"
    async with serve(answering(reply(body, kind="text/plain; charset=x-no-such-charset"))) as site:
        result, _ = await fetch_tool(tmp_path, f"{site.url}/")
    assert result.status == "success" and result.content.endswith("café \ufffd\ufffd ok")


async def test_a_huge_or_compressed_page_is_read_to_the_cap_and_the_text_cut_saying_so(tmp_path):
    bomb = gzip.compress(b"<p>all work and no play</p>" * (2 << 20), compresslevel=9)  # 56 MiB as ~200 KiB
    assert len(bomb) < 1 << 20
    page = reply(bomb, kind="text/html", headers={"content-encoding": "gzip"})
    async with serve(answering(page)) as site:
        result, _ = await fetch_tool(tmp_path, f"{site.url}/big")
    assert result.status == "success"
    assert result.content.endswith(
        f"[... cut at {web.MAX_CHARS} characters; the page is larger than 5 MiB: the rest was not read ...]"
    )
    assert len(result.content) < web.MAX_CHARS + 200
    async with serve(answering(page)) as site:
        text = await asyncio.wait_for(web.page_text(f"{site.url}/big", settings=PLAIN), BOUND)
    assert "all work and no play" in text  # decompressed, then reduced to text


def test_html_to_text_takes_time_linear_in_the_page():
    # Each shape made the standard library's parser rescan the rest of the page at every
    # step: this page took the old code minutes. Own process, so a hang is ended.
    code = (
        "from codecompanion_py.web import html_to_text\n"
        "page = '<!--' * 100_000 + '</' * 300_000 + '<?' * 300_000\n"
        "for shape in (page, '<div>' * 1_000_000 + 'deep', '<p>' + '<!--' * 300_000):\n"
        "    html_to_text(shape)\n"
        "print(repr(html_to_text('<div>' * 1000 + 'deep' + '</div>' * 1000)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "'deep'"


# --- 4. one outbound door: the user's proxy applies to web pages and MCP over HTTP ---------------


async def recording_proxy(line: str, headers: dict[str, str], writer: asyncio.StreamWriter) -> None:
    """A proxy that answers every request itself: a provider's models, an MCP reply, a page."""
    if "/v1/models" in line:
        writer.write(reply(b'{"data": [{"id": "m"}]}', kind="application/json"))
    elif line.startswith("POST"):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18"}}).encode()
        writer.write(reply(body, kind="application/json"))
    else:
        writer.write(reply(b"<p>from the proxy</p>", kind="text/html"))


async def test_providers_web_pages_and_mcp_over_http_all_go_through_the_users_proxy(tmp_path):
    from codecompanion_py.mcp.http import HttpConnection

    async with serve(recording_proxy) as proxy:
        loaded = config.load({"adapters": {"http": {"opts": {"proxy": proxy.url}}}})
        # port 9 (discard) answers nobody: only the proxy can have given these
        result, _ = await fetch_tool(tmp_path, "http://127.0.0.1:9/page", loaded.http)
        assert result.status == "success" and result.content.endswith("from the proxy")

        async def nothing(method: str, params: Any) -> None:
            return None

        mcp = HttpConnection(
            "http://127.0.0.1:9/mcp", {}, on_request=nothing, on_notification=nothing, name="s", settings=loaded.http
        )
        try:
            answer = await asyncio.wait_for(mcp.request("initialize", {"capabilities": {}}), BOUND)
        finally:
            await mcp.close()

        http = client.HttpClient(retries=0, settings=loaded.http)  # the providers': the engine's client
        try:
            request = client.HttpRequest(url="http://127.0.0.1:9/v1/models", body=b"", method="GET", stream=False)
            models = await asyncio.wait_for(http.fetch_json(request), BOUND)
        finally:
            await http.aclose()
    assert answer == {"protocolVersion": "2025-06-18"} and models == {"data": [{"id": "m"}]}
    assert proxy.requests == [
        "GET http://127.0.0.1:9/page HTTP/1.1",
        "POST http://127.0.0.1:9/mcp HTTP/1.1",
        "GET http://127.0.0.1:9/v1/models HTTP/1.1",
    ]


# --- probes: schemes, credentials, long and malformed URLs, the cache ----------------------------


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "only http and https URLs can be fetched"),
        ("gopher://127.0.0.1:70/_GET", "only http and https URLs can be fetched"),
        ("ftp://127.0.0.1/x", "only http and https URLs can be fetched"),
        ("http://admin:hunter22@127.0.0.1:9/", "a URL with a user name or password is not fetched"),
        ("http://127.0.0.1:9/?q=" + "a" * 5000, "at most 4096 characters, not 5022 characters"),
        ("http://[::1/", "not a URL that can be fetched"),
        ("http:///nohost", "only http and https URLs can be fetched"),
    ],
)
async def test_urls_that_can_never_be_fetched_are_refused_before_anyone_is_asked(tmp_path, url, reason):
    result, ui = await fetch_tool(tmp_path, url)
    assert result.status == "error" and reason in result.content
    assert "hunter22" not in result.content and "aaaaaaaaaa" not in result.content
    assert ui.asked == []


async def test_the_fetch_cache_keeps_a_bounded_number_of_pages():
    async with serve(answering(reply(b"page"))) as site:
        for n in range(web.CACHE_PAGES + 8):
            await asyncio.wait_for(web.page_text(f"{site.url}/{n}", settings=PLAIN, cached=True), BOUND)
    assert len(web._cache) == web.CACHE_PAGES


async def test_the_approval_shows_the_url_as_it_will_be_requested(tmp_path):
    async with serve(answering(reply(b"page"))) as site:
        result, ui = await fetch_tool(tmp_path, f"{site.url}/docs/../notes\u202etxt.exe")
    assert result.status == "success"
    [asked] = ui.asked
    # the right-to-left override that would show "exe.txt" escaped, the path resolved
    assert asked["prompt"] == f"Fetch {site.url}/notes%E2%80%AEtxt.exe?"
    assert site.requests == ["GET /notes%E2%80%AEtxt.exe HTTP/1.1"]
