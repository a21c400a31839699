"""Retries before the first byte of a response reached the user: which failures are tried
again (408, 409, 429, 5xx, 529, a connection that failed before any answer), which never
(400, 401, 403, 404, 422), how long each wait is (retry-after-ms, retry-after in seconds
or as a date, else backoff with jitter), `x-should-retry`, the cap, and the notice the
chat shows before each wait. Waits go through an injected `sleep` that only records them:
no test waits, and none asserts how long anything took."""

from __future__ import annotations

import email.utils
import time

import pytest

from codecompanion_py import config
from codecompanion_py.adapters import extend
from codecompanion_py.chat.session import ChatSession
from codecompanion_py.client import HttpClient, HttpRequest
from codecompanion_py.errors import ConfigError, HTTPStatusError
from codecompanion_py.events import ErrorEvent, FinalEvent, NoticeEvent, TokenEvent
from codecompanion_py.messages import Message
from codecompanion_py.stream.iterators import HttpStreamIterator

from ..chat.test_session import Recorder
from .fault_server import Fault, FaultServer, sse, status, stream

OK = sse({"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]})


class Sleeps:
    """The client's `sleep`: records each wait, returns at once."""

    def __init__(self):
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
async def retrying():
    made = []

    def make(**options) -> tuple[HttpClient, Sleeps]:
        sleeps = Sleeps()
        http = HttpClient(read_timeout=5, connect_timeout=2, sleep=sleeps, jitter=lambda: 0.0, **options)
        made.append(http)
        return http, sleeps

    yield make
    for http in made:
        await http.aclose()


def compatible(url: str, **opts):
    return extend("openai_compatible", {"env": {"url": url}, "opts": opts})


async def ask(adapter, http) -> list:
    return [e async for e in HttpStreamIterator(adapter, [Message.of("user", "hi")], client=http)]


def notices(got) -> list[str]:
    return [e.text for e in got if isinstance(e, NoticeEvent)]


@pytest.mark.parametrize("code", [408, 409, 429, 500, 502, 503, 504, 529])
async def test_a_retryable_status_is_tried_again_with_a_notice_before_each_wait(code, retrying):
    http, sleeps = retrying()
    async with FaultServer.sequence(status(code), status(code), stream(OK)) as server:
        got = await ask(compatible(server.url), http)
    assert isinstance(got[-1], FinalEvent) and got[-1].message.text == "ok"
    assert len(server.requests) == 3
    assert sleeps.waits == [0.5, 1.0]  # backoff without jitter (jitter() == 0)
    shown = notices(got)
    assert len(shown) == 2 and shown[0].startswith("OpenAI Compatible: ") and f"(HTTP {code})" in shown[0]
    assert shown[0].endswith("retrying in 0.5 s, 1 of 2") and shown[1].endswith("retrying in 1 s, 2 of 2")
    assert [type(e).__name__ for e in got[:2]] == ["NoticeEvent", "NoticeEvent"]  # before any text


@pytest.mark.parametrize("code", [400, 401, 403, 404, 422])
async def test_a_status_that_another_try_cannot_fix_is_never_retried(code, retrying):
    http, sleeps = retrying()
    async with FaultServer.sequence(status(code, headers={"x-should-retry": "true"}), stream(OK)) as server:
        got = await ask(compatible(server.url), http)
    assert len(got) == 1 and isinstance(got[0], ErrorEvent) and got[0].status == code
    assert len(server.requests) == 1 and sleeps.waits == []


async def test_x_should_retry_overrides_the_status(retrying):
    http, sleeps = retrying()
    async with FaultServer.sequence(status(503, headers={"x-should-retry": "false"})) as server:
        got = await ask(compatible(server.url), http)
    assert got[-1].status == 503 and len(server.requests) == 1 and notices(got) == []
    async with FaultServer.sequence(status(418, headers={"x-should-retry": "true"}), stream(OK)) as server:
        got = await ask(compatible(server.url), http)
    assert got[-1].message.text == "ok" and len(server.requests) == 2
    assert notices(got) == ["OpenAI Compatible: HTTP 418: retrying in 0.5 s, 1 of 2"]


async def test_the_last_failure_is_the_error_once_the_retries_are_spent(retrying):
    http, sleeps = retrying()
    async with FaultServer.sequence(status(503, "one"), status(503, "two"), status(503, "three")) as server:
        got = await ask(compatible(server.url), http)
    assert len(server.requests) == 3 and len(notices(got)) == 2
    assert isinstance(got[-1], ErrorEvent) and got[-1].status == 503
    assert got[-1].message.startswith("OpenAI Compatible: server error (HTTP 503): three")


@pytest.mark.parametrize(
    "headers, wait",
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after": "soon"}, 0.5),  # not a number or a date: backoff
    ],
)
async def test_the_servers_retry_after_is_honoured(headers, wait, retrying):
    http, sleeps = retrying()
    async with FaultServer.sequence(status(429, headers=headers), stream(OK)) as server:
        got = await ask(compatible(server.url), http)
    assert got[-1].message.text == "ok"
    assert sleeps.waits == [wait]


async def test_a_retry_after_date_is_honoured(retrying):
    http, sleeps = retrying()
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    async with FaultServer.sequence(status(503, headers={"retry-after": when}), stream(OK)) as server:
        got = await ask(compatible(server.url), http)
    assert got[-1].message.text == "ok"
    assert 20 < sleeps.waits[0] <= 30


async def test_a_retry_after_past_the_cap_is_a_clear_rate_limit_error_at_once(retrying):
    http, sleeps = retrying(retry_max_wait=60)
    async with FaultServer.sequence(status(429, "slow down", headers={"retry-after": "3600"}), stream(OK)) as server:
        got = await ask(compatible(server.url), http)
    assert len(server.requests) == 1 and sleeps.waits == [] and notices(got) == []
    assert got[-1].kind == "RateLimitError" and got[-1].status == 429
    assert got[-1].message == (
        "OpenAI Compatible: rate limited (HTTP 429): slow down; retry after 3600s, longer "
        "than the 60 s a retry may wait (adapters.http.opts.retry_max_wait): try again later"
    )


async def test_jitter_shortens_the_backoff(retrying):
    http, sleeps = retrying()
    http.jitter = lambda: 1.0  # the most jitter: a quarter off
    async with FaultServer.sequence(status(500), status(500), stream(OK)) as server:
        await ask(compatible(server.url), http)
    assert sleeps.waits == [0.375, 0.75]
    assert [http.backoff(n) for n in range(7)][-1] == 8 * 0.75  # capped


async def test_a_connection_closed_before_any_answer_is_retried(retrying):
    http, sleeps = retrying()
    async with FaultServer.sequence(Fault(end="drop"), stream(OK)) as server:
        got = await ask(compatible(server.url), http)
    assert got[-1].message.text == "ok" and len(server.requests) == 2
    assert notices(got)[0].startswith("OpenAI Compatible: RemoteProtocolError: Server disconnected")


async def test_a_refused_connection_is_retried_then_reported(retrying):
    http, sleeps = retrying()
    got = await ask(compatible("http://127.0.0.1:9"), http)
    assert len(notices(got)) == 2 and got[-1].kind == "TransportError"
    assert "cannot connect to http://127.0.0.1:9" in got[-1].message


async def test_nothing_is_retried_once_the_response_has_begun(retrying):
    http, sleeps = retrying()
    text = sse({"choices": [{"index": 0, "delta": {"content": "Hel"}}]}, done=False)
    async with FaultServer.sequence(stream(text, end="reset", pause=0.1), stream(OK)) as server:
        got = await ask(compatible(server.url), http)
    assert len(server.requests) == 1 and sleeps.waits == [] and notices(got) == []
    assert [e.content for e in got if isinstance(e, TokenEvent)] == ["Hel"]
    assert got[-1].kind == "IncompleteResponse"


async def test_retries_can_be_turned_off_per_client_and_per_adapter(retrying):
    http, _ = retrying(retries=0)
    async with FaultServer.sequence(status(503), stream(OK)) as server:
        got = await ask(compatible(server.url), http)
    assert got[-1].status == 503 and len(server.requests) == 1
    http, sleeps = retrying()
    async with FaultServer.sequence(status(503), status(503), status(503), status(503), stream(OK)) as server:
        got = await ask(compatible(server.url, retries=4), http)
    assert got[-1].message.text == "ok" and len(sleeps.waits) == 4
    assert notices(got)[-1].endswith("4 of 4")


async def test_a_plain_request_is_retried_too(retrying):
    http, sleeps = retrying()
    seen: list[str] = []
    json_ok = Fault(headers={"content-type": "application/json"}, body=[b'{"token": "t"}'], framing="length")
    async with FaultServer.sequence(status(502), json_ok) as server:
        request = HttpRequest(url=server.url + "/token", body=b"", method="GET", stream=False, provider="Example")
        async with http.open(request, on_retry=lambda retry: seen.append(retry.notice)) as response:
            assert response.status_code == 200 and await response.aread() == b'{"token": "t"}'
    assert sleeps.waits == [0.5]
    assert seen == ["Example: server error (HTTP 502): retrying in 0.5 s, 1 of 2"]


async def test_fetch_json_gives_up_with_the_last_error(retrying):
    http, sleeps = retrying(retries=1)
    async with FaultServer.sequence(status(503, "a"), status(503, "b")) as server:
        request = HttpRequest(url=server.url + "/models", body=b"", method="GET", stream=False, provider="Example")
        with pytest.raises(HTTPStatusError, match="Example: server error .HTTP 503.: b"):
            await http.fetch_json(request)
    assert sleeps.waits == [0.5]


# --- the chat shows it ------------------------------------------------------------------


async def test_the_chat_shows_each_retry_until_the_reply_comes(retrying):
    http, sleeps = retrying()
    async with FaultServer.sequence(status(529, "overloaded"), stream(OK)) as server:
        session = ChatSession(1, compatible(server.url), client=http, sink=Recorder(), system_prompt=None)
        await session.submit("hi")
    kinds = session.view.sink.kinds()
    assert kinds == [
        "begin", "RequestStarted", "pending", "RequestStreaming", "pending", "text", "RequestFinished", "done"
    ]  # fmt: skip
    shown, gone = [op for op in session.view.sink.ops if op["op"] == "pending"]
    assert shown == {"op": "pending", "text": "OpenAI Compatible: overloaded (HTTP 529): retrying in 0.5 s, 1 of 2"}
    assert gone == {"op": "pending"}  # the reply takes the line away
    assert session.view.sink.ops[-1]["status"] == "success"
    assert [m.text for m in session.history] == ["hi", "ok"]


# --- settings -------------------------------------------------------------------------


def test_the_defaults_and_the_setup_table():
    assert (HttpClient().retries, HttpClient().retry_max_wait) == (2, 60.0)
    loaded = config.load({"adapters": {"http": {"opts": {"retries": 5, "retry_max_wait": 10}}}})
    assert (loaded.http.retries, loaded.http.retry_max_wait) == (5, 10.0)
    made = HttpClient(settings=loaded.http)
    assert (made.retries, made.retry_max_wait) == (5, 10.0)  # the engine's client, made with its config
    assert HttpClient(retries=1, settings=loaded.http).retries == 1
    assert HttpClient().retries == 2  # loading a config changed no default
    for bad in (-1, "many", True):
        with pytest.raises(ConfigError, match="adapters.http.opts.retries must be a number"):
            config.load({"adapters": {"http": {"opts": {"retries": bad}}}})
