"""Many chats at once, over real sockets to one local streaming server.

* 30 HTTP chats through the engine at the same moment (the server holds every reply until
  all 30 requests are in, so they really are concurrent): each chat shows exactly its own
  reply, byte for byte, multi-byte characters split across HTTP chunks included, and keeps
  it in its own history: no cross-talk between chats.
* More chats than the connection pool has connections: the extra requests wait for a free
  connection instead of failing or hanging; a chat stopped while it waits sends nothing.
* Chats stopped at random points (seeded): before the request left, once the server has it,
  after a few tokens. Each ends with exactly one `Done`, its connection is closed (the
  server sees every one of them leave), and no asyncio task is left behind.
* Two tool calls editing one file at the same time: both land, or the later one is refused
  as stale and writes nothing; never a torn or a lost write.

Counts stay small; nothing here measures time (that is `make bench`).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from codecompanion_py.adapters import extend
from codecompanion_py.chat.session import ChatSession
from codecompanion_py.client import HttpClient
from codecompanion_py.demo.server import Reply, Request, ScriptedServer, ServerThread
from codecompanion_py.engine import Engine
from codecompanion_py.messages import ToolCall
from codecompanion_py.tools.approvals import Approvals
from codecompanion_py.tools.context import ChatHandle, ToolsContext
from codecompanion_py.tools.orchestrator import Orchestrator
from codecompanion_py.tools.registry import ToolSettings, enabled_definitions
from codecompanion_py.tools.workspace import Workspace
from codecompanion_py.ui import ops
from codecompanion_py.ui.view import EventView

from ..test_engine import RecordingChannel

SSE = {"content-type": "text/event-stream"}
WORDS = ("naïve", "漢字", "🙂", "e\u0301", "Ωmega", "tab\there", "“quoted”", "line\nbreak", "\\back")


async def async_wait_until(
    predicate: Callable[[], Any], message: str | Callable[[], str], timeout: float = 20.0
) -> Any:
    """Poll `predicate` from the loop until it is truthy; fail, never hang, after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(
                f"gave up after {timeout:g}s waiting for {message() if callable(message) else message}"
            )
        await asyncio.sleep(0.01)
    return value


def expected_reply(chat: int) -> str:
    """A reply no other chat gets: its number in every word, multi-byte characters throughout."""
    return f"Reply to chat {chat}: " + " ".join(f"{word}-{chat}" for word in WORDS) + f" (end of {chat})"


def delta(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


FINISH = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}


def frames(tokens: list[str], *, end: bool = True) -> bytes:
    payloads = [delta(token) for token in tokens] + ([FINISH] if end else [])
    body = b"".join(b"data: " + msgspec.json.encode(p) + b"\n\n" for p in payloads)
    return body + (b"data: [DONE]\n\n" if end else b"")


def tokens_of(text: str, rng: random.Random) -> list[str]:
    """`text` cut into tokens of 1 to 6 characters."""
    out, at = [], 0
    while at < len(text):
        size = rng.randint(1, 6)
        out.append(text[at : at + size])
        at += size
    return out


def pieces(body: bytes, rng: random.Random) -> list[bytes]:
    """`body` cut at random byte offsets: frames and UTF-8 sequences split across HTTP chunks."""
    out, at = [], 0
    while at < len(body):
        size = rng.randint(1, 48)
        out.append(body[at : at + size])
        at += size
    return out


def chat_number(request: Request) -> int:
    text = request.json()["messages"][-1]["content"]
    assert text.startswith("chat "), text
    return int(text.split()[1])


class Recorder:
    """A sink that keeps every op as Lua would receive it, and says when `count` text ops
    have arrived."""

    def __init__(self) -> None:
        self.ops: list[dict[str, Any]] = []
        self._waiting: list[tuple[int, asyncio.Event]] = []

    def push(self, op: ops.Op) -> None:
        self.ops.append(msgspec.to_builtins(op))
        texts = self.count("text")
        for count, event in self._waiting:
            if texts >= count:
                event.set()

    def count(self, kind: str) -> int:
        return sum(1 for op in self.ops if op["op"] == kind)

    def text(self) -> str:
        return "".join(op["text"] for op in self.ops if op["op"] == "text")

    def done(self) -> list[dict[str, Any]]:
        return [op for op in self.ops if op["op"] == "done"]

    async def texts(self, count: int) -> None:
        event = asyncio.Event()
        self._waiting.append((count, event))
        if self.count("text") >= count:
            event.set()
        await event.wait()


# --- 30 chats through the engine ----------------------------------------------------------

CHATS = 30


def test_thirty_chats_at_once_each_get_exactly_their_own_reply(tmp_path):
    rng = random.Random(30)
    bodies = {chat: pieces(frames(tokens_of(expected_reply(chat), rng)), rng) for chat in range(1, CHATS + 1)}
    arrived: set[int] = set()
    everyone = asyncio.Event()

    async def respond(request: Request) -> Reply:
        chat = chat_number(request)
        arrived.add(chat)
        if len(arrived) == CHATS:
            everyone.set()
        # every reply waits for all the requests: the 30 streams run at the same time
        await asyncio.wait_for(everyone.wait(), 20)
        return Reply(headers=SSE, chunks=bodies[chat], delay=0.001)

    channel = RecordingChannel()
    engine = Engine(channel)
    try:
        with ServerThread(ScriptedServer(respond)) as server:
            engine.dispatch(
                "config.set",
                {
                    "adapters": {"http": {"local": {"__extends": "openai_compatible", "env": {"url": server.url}}}},
                    "interactions": {"chat": {"adapter": "local"}},
                },
            ).result(10)
            for chat in range(1, CHATS + 1):
                engine.dispatch("chat.open", {"chat_id": chat, "cwd": str(tmp_path)}).result(10)
            for chat in range(1, CHATS + 1):
                engine.dispatch("chat.submit", {"chat_id": chat, "text": f"chat {chat}"}).result(10)
            for chat in range(1, CHATS + 1):
                channel.wait_done(1, chat_id=chat)
            assert sorted(chat_number(r) for r in server.requests) == list(range(1, CHATS + 1))
        for chat in range(1, CHATS + 1):
            shown = channel.ops(chat)
            assert [op for op in shown if isinstance(op, ops.Done)] == [ops.Done(status="success")]
            assert not [op for op in shown if isinstance(op, ops.Error)]
            assert "".join(op.text for op in shown if isinstance(op, ops.Text)) == expected_reply(chat)
            history = engine.sessions[chat].history
            assert [(m.role, m.text) for m in history if m.role != "system"] == [
                ("user", f"chat {chat}"),
                ("assistant", expected_reply(chat)),
            ]
        assert not channel.notes
    finally:
        engine.shutdown()


# --- more chats than connections --------------------------------------------------------------

POOL = 3


@dataclass
class Flight:
    """The server's view: requests being answered now, the most at once, and a gate that
    holds the first replies until the test opens it."""

    now: int = 0
    most: int = 0
    full: asyncio.Event = field(default_factory=asyncio.Event)
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    held: int = 0

    def body(self, chat: int):
        try:
            yield from [frames([expected_reply(chat)])]
        finally:
            self.now -= 1


def chat_session(chat: int, url: str, client: HttpClient, sink: Recorder) -> ChatSession:
    adapter = extend("openai_compatible", {"env": {"url": url}})
    return ChatSession(chat, adapter, client=client, sink=sink, system_prompt=None)


async def test_chats_beyond_the_pool_wait_for_a_connection_and_a_stopped_one_sends_nothing():
    """The product's client has httpx's pool (100 connections): a pool of 3 here, so 12
    chats exceed it without opening a hundred sockets."""
    flight = Flight()

    async def respond(request: Request) -> Reply:
        chat = chat_number(request)
        flight.now += 1
        flight.most = max(flight.most, flight.now)
        if flight.held < POOL:  # the first ones keep their connections until the test says
            flight.held += 1
            if flight.held == POOL:
                flight.full.set()
            await asyncio.wait_for(flight.gate.wait(), 20)
        return Reply(headers=SSE, chunks=flight.body(chat), delay=0.001)

    server = ScriptedServer(respond)
    await server.start()
    limits = httpx.Limits(max_connections=POOL, max_keepalive_connections=POOL)
    client = HttpClient(transport=httpx.AsyncHTTPTransport(limits=limits), read_timeout=30, retries=0)
    try:
        sinks = {chat: Recorder() for chat in range(1, 13)}
        sessions = {chat: chat_session(chat, server.url, client, sinks[chat]) for chat in sinks}
        tasks = {chat: session.submit(f"chat {chat}") for chat, session in sessions.items()}
        await asyncio.wait_for(flight.full.wait(), 20)
        # every chat has started its request; only POOL of them reached the server
        await async_wait_until(
            lambda: all(any(op.get("event") == "RequestStarted" for op in s.ops) for s in sinks.values()),
            message="every chat to start its request",
        )
        assert len(server.requests) == POOL
        waiting = [chat for chat in sinks if chat not in {chat_number(r) for r in server.requests}]
        stopped = waiting[1], waiting[-1]
        for chat in stopped:
            assert sessions[chat].stop()
        flight.gate.set()
        await asyncio.wait_for(asyncio.gather(*(t for t in tasks.values() if t is not None)), 30)
    finally:
        await client.aclose()
        await server.close()
    assert flight.most == POOL  # never more connections than the pool has
    for chat, sink in sinks.items():
        if chat in stopped:
            assert sink.done() == [{"op": "done", "status": "stopped"}]
            assert sink.text() == ""
        else:
            assert sink.done() == [{"op": "done", "status": "success"}], sink.ops
            assert sink.text() == expected_reply(chat)
    assert sorted(chat_number(r) for r in server.requests) == [c for c in sinks if c not in stopped]


# --- stopped at random points -------------------------------------------------------------------

STOPS = ("at_once", "at_the_server", "after_tokens", "never")


@dataclass
class Plan:
    stop: str
    tokens: int = 0  # after_tokens: how many text ops before the stop


def plans(rng: random.Random, count: int) -> dict[int, Plan]:
    kinds = [STOPS[i % len(STOPS)] for i in range(count)]
    rng.shuffle(kinds)
    return {chat: Plan(kind, rng.randint(1, 5)) for chat, kind in enumerate(kinds, 1)}


def leftover_tasks() -> set[asyncio.Task[Any]]:
    """Pending tasks other than this test's and the server's connections."""
    current = asyncio.current_task()
    return {
        task
        for task in asyncio.all_tasks()
        if task is not current and not task.get_coro().__qualname__.startswith("ScriptedServer.")
    }


@pytest.mark.parametrize("seed", [7, 2024])
async def test_chats_stopped_at_random_points_release_their_connections_and_tasks(seed):
    plan = plans(random.Random(seed), 24)
    at_server = {chat: asyncio.Event() for chat in plan}

    def respond(request: Request) -> Reply:
        chat = chat_number(request)
        kind = plan[chat].stop
        at_server[chat].set()
        assert kind != "at_once", f"chat {chat} was stopped before its request could leave"
        if kind == "at_the_server":
            return Reply(headers=SSE, hang=True)  # the head, then nothing until the chat leaves
        words = tokens_of(expected_reply(chat), random.Random(seed * 100 + chat))
        if kind == "after_tokens":  # tokens, then silence: the reply is never complete
            return Reply(headers=SSE, chunks=[frames([w], end=False) for w in words[:8]], delay=0.002, hang=True)
        return Reply(headers=SSE, chunks=[frames([w], end=False) for w in words] + [frames([])], delay=0.001)

    server = ScriptedServer(respond)
    await server.start()
    client = HttpClient(read_timeout=30, retries=0)
    sinks = {chat: Recorder() for chat in plan}
    sessions = {chat: chat_session(chat, server.url, client, sinks[chat]) for chat in plan}

    async def drive(chat: int) -> None:
        session, kind = sessions[chat], plan[chat].stop
        task = session.submit(f"chat {chat}")
        assert task is not None
        if kind == "at_once":
            assert session.stop()
        elif kind == "at_the_server":
            await at_server[chat].wait()
            assert session.stop()
        elif kind == "after_tokens":
            await sinks[chat].texts(plan[chat].tokens)
            assert session.stop()
        await asyncio.wait([task])

    try:
        await asyncio.wait_for(asyncio.gather(*(drive(chat) for chat in plan)), 30)
        left = {chat for chat in plan if plan[chat].stop in ("at_the_server", "after_tokens")}
        await async_wait_until(
            lambda: server.disconnects >= len(left),
            message=lambda: f"the server to see {len(left)} chats leave (it saw {server.disconnects})",
        )
        await async_wait_until(lambda: not leftover_tasks(), message=lambda: f"no tasks left: {leftover_tasks()}")
    finally:
        await client.aclose()
        await server.close()
    assert server.disconnects == len(left)  # and no finished reply counted as one
    assert sorted(chat_number(r) for r in server.requests) == [c for c in plan if plan[c].stop != "at_once"]
    for chat, sink in sinks.items():
        kind = plan[chat].stop
        assert len(sink.done()) == 1, (chat, kind, sink.ops)  # one end of turn, however it was stopped
        [done] = sink.done()
        if kind == "never":
            assert done["status"] == "success" and sink.text() == expected_reply(chat)
        else:
            assert done["status"] == "stopped", (chat, kind, sink.ops)
            assert expected_reply(chat).startswith(sink.text())
            if kind == "after_tokens":
                assert sink.count("text") >= plan[chat].tokens
            assert not sessions[chat].busy
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_a_chat_stopped_before_its_turn_began_can_send_again():
    server = ScriptedServer(lambda request: Reply(headers=SSE, chunks=[frames([expected_reply(1)])]))
    await server.start()
    client = HttpClient(retries=0)
    sink = Recorder()
    session = chat_session(1, server.url, client, sink)
    try:
        first = session.submit("chat 1")
        assert first is not None and session.stop()
        await asyncio.wait([first])
        assert sink.done() == [{"op": "done", "status": "stopped"}]
        assert not session.busy and not server.requests
        second = session.submit("chat 1")
        assert second is not None
        await second
    finally:
        await client.aclose()
        await server.close()
    assert sink.done()[-1] == {"op": "done", "status": "success"}
    assert sink.text() == expected_reply(1)


# --- two edits of one file at the same time ------------------------------------------------------

ORIGINAL = "".join(f"line {n} = {n}\n" for n in range(1, 11))


class GatedEditor:
    """Answers approvals when the test opens the chat's gate; no buffers are loaded."""

    def __init__(self, choice: str = "accept") -> None:
        self.choice = choice
        self.asked = asyncio.Event()
        self.gate = asyncio.Event()

    reviews_edits = False  # no diff review after a write here

    async def call(self, method: str, args: dict[str, Any]) -> Any:
        if method == "buffer.get":
            return None
        assert method == "approve", method
        self.asked.set()
        await self.gate.wait()
        return {"choice": self.choice}


class YieldingEditor:
    """Lets other chats run at random moments while a tool reads the file."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    reviews_edits = False  # no diff review after a write here

    async def call(self, method: str, args: dict[str, Any]) -> Any:
        assert method == "buffer.get", method
        for _ in range(self.rng.randint(0, 3)):
            await asyncio.sleep(0)
        return None


def edit_chat(root: Path, editor: Any, approvals: Approvals | None = None) -> tuple[Orchestrator, EventView]:
    settings = ToolSettings()
    tools = enabled_definitions(settings, ["read_file", "insert_edit_into_file"])
    context = ToolsContext(
        chat=ChatHandle(), editor=editor, approvals=approvals or Approvals(), workspace=Workspace(root)
    )
    view = EventView(Recorder())
    return Orchestrator(tools, {name: settings.config_of(name) for name in tools}, context, view), view


def edit(n: int, call_id: str = "call_1") -> ToolCall:
    return ToolCall(
        id=call_id,
        name="insert_edit_into_file",
        arguments={
            "filepath": "config.py",
            "edits": [{"oldText": f"line {n} = {n}\n", "newText": f"line {n} = {n}0\n"}],
        },
    )


def edited(*lines: int) -> str:
    return "".join(f"line {n} = {n}0\n" if n in lines else f"line {n} = {n}\n" for n in range(1, 11))


async def test_two_chats_editing_one_file_the_later_write_is_refused_as_stale(tmp_path):
    (tmp_path / "config.py").write_text(ORIGINAL)
    first_editor, second_editor = GatedEditor(), GatedEditor()
    first, first_view = edit_chat(tmp_path, first_editor)
    second, _ = edit_chat(tmp_path, second_editor)
    # both compute their diff from the same text and wait for the user's approval
    first_run = asyncio.ensure_future(first.run([edit(2)]))
    await asyncio.wait_for(first_editor.asked.wait(), 10)
    second_run = asyncio.ensure_future(second.run([edit(7)]))
    await asyncio.wait_for(second_editor.asked.wait(), 10)
    second_editor.gate.set()  # the user approves the second chat's edit first
    [landed] = (await asyncio.wait_for(second_run, 10)).results
    assert landed.status == "success"
    assert (tmp_path / "config.py").read_text() == edited(7)
    first_editor.gate.set()
    [refused] = (await asyncio.wait_for(first_run, 10)).results
    assert refused.status == "error"
    assert "'config.py' changed since it was read; read it again (nothing was written)" in refused.content
    assert (tmp_path / "config.py").read_text() == edited(7)  # the other chat's edit is not lost
    shown = [op for op in first_view.sink.ops if op["op"] == "tool_output"]
    assert shown[-1]["status"] == "error" and "changed since it was read" in shown[-1]["text"]
    # read again, the first chat's edit lands beside the other one
    retry = await asyncio.wait_for(first.run([edit(2, "call_2")]), 10)
    assert [r.status for r in retry.results] == ["success"]
    assert (tmp_path / "config.py").read_text() == edited(2, 7)


async def test_two_edits_of_one_file_in_one_batch_both_land(tmp_path):
    (tmp_path / "config.py").write_text(ORIGINAL)
    editor = GatedEditor()
    editor.gate.set()
    chat, _ = edit_chat(tmp_path, editor)
    batch = await asyncio.wait_for(chat.run([edit(3, "call_1"), edit(9, "call_2")]), 10)
    assert [r.status for r in batch.results] == ["success", "success"]
    assert (tmp_path / "config.py").read_text() == edited(3, 9)


@pytest.mark.parametrize("seed", [1, 99])
async def test_many_chats_editing_one_file_in_yolo_mode_lose_no_write(tmp_path, seed):
    """Each chat changes its own line; whichever ran on a text that is no longer on disk is
    refused, so every line is changed exactly when its chat says it succeeded."""
    (tmp_path / "config.py").write_text(ORIGINAL)
    rng = random.Random(seed)
    chats = {n: edit_chat(tmp_path, YieldingEditor(rng), Approvals(yolo=True))[0] for n in range(1, 11)}
    batches = await asyncio.wait_for(asyncio.gather(*(chats[n].run([edit(n)]) for n in chats)), 20)
    statuses = {n: batch.results[0].status for n, batch in zip(chats, batches)}
    succeeded = [n for n, status in statuses.items() if status == "success"]
    assert succeeded, statuses
    assert (tmp_path / "config.py").read_text() == edited(*succeeded)
    for n, batch in zip(chats, batches):
        if statuses[n] != "success":
            assert statuses[n] == "error" and "changed since it was read" in batch.results[0].content
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "config.py"]
    assert leftovers == []  # no temporary file left beside it
