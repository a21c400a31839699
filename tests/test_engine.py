"""The engine without Neovim: a recording channel stands in for the editor, so what a chat
shows is checked as the typed UI ops the engine sends, through the same `Session`
interface for an HTTP provider and an ACP agent."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from greenlet import greenlet

from codecompanion_py.chat import history, keeper
from codecompanion_py.demo.server import ScriptedServer, sse_reply
from codecompanion_py.engine import Engine, wait_in_greenlet
from codecompanion_py.ui import ops
from tests.waiting import wait_until

FAKE_AGENT = str(Path(__file__).parent / "acp" / "fake_agent.py")


class RecordingChannel:
    """The editor as the engine sees it: every batch and notification, kept in order."""

    def __init__(self) -> None:
        self.batches: list[tuple[Any, list[ops.Op]]] = []
        self.notes: list[tuple[str, str]] = []
        self._changed = threading.Condition()

    def render(self, chat_id: Any, batch: list[ops.Op]) -> None:
        with self._changed:
            self.batches.append((chat_id, list(batch)))
            self._changed.notify_all()

    def notify(self, message: str, level: str = "ERROR") -> None:
        with self._changed:
            self.notes.append((message, level))
            self._changed.notify_all()

    def ops(self, chat_id: Any = 1) -> list[ops.Op]:
        return [op for chat, batch in list(self.batches) if chat == chat_id for op in batch]

    def wait(self, predicate, what: str, timeout: float = 20.0) -> Any:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not (found := predicate()):
                if not self._changed.wait(deadline - time.monotonic()) and time.monotonic() >= deadline:
                    raise AssertionError(f"timed out waiting for {what}; ops: {self.ops()}; notes: {self.notes}")
            return found

    def wait_done(self, count: int = 1, chat_id: Any = 1) -> ops.Done:
        done = self.wait(
            lambda: [op for op in self.ops(chat_id) if isinstance(op, ops.Done)][count - 1 :], f"Done #{count}"
        )
        return done[0]


def delta(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": text}}]}


@pytest.fixture
def engine():
    channel = RecordingChannel()
    engine = Engine(channel)
    servers: list[ScriptedServer] = []

    def serve(*replies) -> str:
        server = ScriptedServer.sequence(list(replies))
        asyncio.run_coroutine_threadsafe(server.start(), engine.loop).result(5)
        servers.append(server)
        return server.url

    def call(method: str, payload: dict[str, Any]) -> None:
        engine.dispatch(method, payload).result(10)

    engine.serve, engine.call, engine.recorded = serve, call, channel  # type: ignore[attr-defined]
    yield engine
    for server in servers:
        asyncio.run_coroutine_threadsafe(server.close(), engine.loop).result(5)
    engine.shutdown()


def configure(engine, url: str) -> None:
    engine.call("config.set", _config(url))


def _config(url: str) -> dict[str, Any]:
    return {
        "adapters": {
            "http": {"local": {"__extends": "openai_compatible", "env": {"url": url}}},
            "acp": {
                "fake": {
                    "formatted_name": "Fake Agent",
                    "defaults": {"timeout": 10000},
                    "commands": {"default": [sys.executable, FAKE_AGENT]},
                }
            },
        },
        "interactions": {"chat": {"adapter": "local"}},
    }


def test_an_http_chat_sends_typed_ops_in_order(engine, tmp_path):
    configure(engine, engine.serve(sse_reply([delta("Hel"), delta("lo")])))
    engine.call("chat.open", {"chat_id": 1, "cwd": str(tmp_path)})
    engine.call("chat.submit", {"chat_id": 1, "text": "hi"})
    done = engine.recorded.wait_done()
    assert done == ops.Done(status="success")
    shown = engine.recorded.ops()
    assert isinstance(shown[0], ops.Ready) and shown[0].adapter.name == "local" and shown[0].adapter.type == "http"
    assert [op.event for op in shown if isinstance(op, ops.Fire)] == [
        "ChatAdapter",
        "ChatModel",
        "RequestStarted",
        "RequestStreaming",
        "RequestFinished",
    ]
    assert "".join(op.text for op in shown if isinstance(op, ops.Text)) == "Hello"


def test_agent_actions_in_an_http_chat_say_what_to_do_instead(engine, tmp_path):
    configure(engine, engine.serve())
    engine.call("chat.open", {"chat_id": 1, "cwd": str(tmp_path)})
    for method in ("chat.agent_options", "chat.sessions", "chat.resume"):
        engine.call(method, {"chat_id": 1, "session_id": "x"})
    errors = [op.message for op in engine.recorded.ops() if isinstance(op, ops.Error)]
    assert errors == ["this chat does not talk to an agent; pick one with `ga` (codex, claude_code...)"] * 3


def test_one_chat_moves_from_a_provider_to_an_agent_and_back_with_its_history(engine, tmp_path):
    url = engine.serve(sse_reply([delta("first answer")]), sse_reply([delta("back again")]))
    configure(engine, url)
    engine.call("chat.open", {"chat_id": 1, "cwd": str(tmp_path)})
    engine.call("chat.submit", {"chat_id": 1, "text": "first question"})
    engine.recorded.wait_done(1)

    engine.call("chat.set_adapter", {"chat_id": 1, "adapter": "fake"})
    ready = [op for op in engine.recorded.ops() if isinstance(op, ops.Ready)][-1]
    assert ready.adapter == ops.AdapterInfo(name="fake", formatted_name="Fake Agent", type="acp")
    engine.call("chat.submit", {"chat_id": 1, "text": "hello agent"})
    engine.recorded.wait_done(2)
    text = "".join(op.text for op in engine.recorded.ops() if isinstance(op, ops.Text))
    assert "The conversation so far" in text and "first answer" in text  # the fake agent echoes its prompt

    engine.call("chat.agent_options", {"chat_id": 1})
    [choose] = [op for op in engine.recorded.ops() if isinstance(op, ops.ChooseOption)]
    assert [o.id for o in choose.options] == ["model", "__mode"]
    engine.call("chat.models", {"chat_id": 1})
    [models] = [op for op in engine.recorded.ops() if isinstance(op, ops.ChooseModel)]
    assert models == ops.ChooseModel(adapter="fake", models=("fake-1", "fake-2"))

    engine.call("chat.set_adapter", {"chat_id": 1, "adapter": "local"})
    engine.call("chat.submit", {"chat_id": 1, "text": "and now?"})
    engine.recorded.wait_done(3)
    assert engine.sessions[1].adapter_info().type == "http"
    roles = [m.role for m in engine.sessions[1].history if m.role != "system"]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant"]


def test_an_unknown_method_is_reported_in_the_chat_or_as_a_notification(engine, tmp_path):
    configure(engine, engine.serve())
    engine.call("chat.open", {"chat_id": 1, "cwd": str(tmp_path)})
    engine.call("chat.frobnicate", {"chat_id": 1})
    engine.call("nothing.at_all", {})
    assert ops.Error(message="unknown method 'chat.frobnicate'") in engine.recorded.ops()
    assert engine.recorded.notes == [("unknown method 'nothing.at_all'", "ERROR")]


def sent(engine, url_index: int = 0) -> list[dict[str, Any]]:
    return [request.json() for request in engine.servers[url_index].requests]


def fires(engine, name: str) -> list[dict[str, Any]]:
    return [op.data for op in engine.recorded.ops() if isinstance(op, ops.Fire) and op.event == name]


@pytest.fixture
def chat(engine, tmp_path):
    """An HTTP chat on a server that answers each request with `reply N`."""
    replies = [sse_reply([delta(f"reply {n}")]) for n in range(1, 7)]
    server = ScriptedServer.sequence(replies)
    asyncio.run_coroutine_threadsafe(server.start(), engine.loop).result(5)
    engine.servers = [server]  # type: ignore[attr-defined]
    configure(engine, server.url)
    engine.call("chat.open", {"chat_id": 1, "cwd": str(tmp_path)})
    yield engine
    asyncio.run_coroutine_threadsafe(server.close(), engine.loop).result(5)


def test_the_system_prompt_toggle_leaves_it_out_and_puts_it_back(chat):
    chat.call("chat.system_prompt", {"chat_id": 1})
    chat.call("chat.submit", {"chat_id": 1, "text": "one"})
    chat.recorded.wait_done(1)
    chat.call("chat.system_prompt", {"chat_id": 1})
    chat.call("chat.submit", {"chat_id": 1, "text": "two"})
    chat.recorded.wait_done(2)
    first, second = sent(chat)
    assert [m["role"] for m in first["messages"]] == ["user"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    assert chat.recorded.notes == [
        ("CodeCompanion: system prompt off for this chat", "INFO"),
        ("CodeCompanion: system prompt on for this chat", "INFO"),
    ]


def test_regenerate_drops_the_last_reply_and_sends_the_last_message_again(chat):
    chat.call("chat.submit", {"chat_id": 1, "text": "one"})
    chat.recorded.wait_done(1)
    chat.call("chat.regenerate", {"chat_id": 1})
    chat.recorded.wait_done(2)
    first, second = sent(chat)
    assert first["messages"] == second["messages"]
    history = [(m.role, m.text) for m in chat.sessions[1].history if m.role != "system"]
    assert history == [("user", "one"), ("assistant", "reply 2")]
    shown = chat.recorded.ops()
    rewind = shown.index(ops.Rewind())
    assert isinstance(shown[rewind + 1], ops.Begin)  # the buffer drops the old reply before the new one


def test_regenerate_before_any_message_says_so_and_sends_nothing(chat):
    chat.call("chat.regenerate", {"chat_id": 1})
    assert ops.Error(message="there is no message to send again yet") in chat.recorded.ops()
    assert sent(chat) == []


def test_clear_forgets_the_conversation_but_keeps_the_system_prompt(chat):
    chat.call("chat.submit", {"chat_id": 1, "text": "one"})
    chat.recorded.wait_done(1)
    chat.call("chat.clear", {"chat_id": 1})
    assert fires(chat, "ChatCleared") == [{"id": 1}]
    chat.call("chat.submit", {"chat_id": 1, "text": "fresh"})
    chat.recorded.wait_done(2)
    assert [(m["role"], m["content"]) for m in sent(chat)[1]["messages"][1:]] == [("user", "fresh")]


def test_debug_shows_messages_and_the_last_request_without_secrets(chat, monkeypatch):
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "sk-very-secret-key-123")
    chat.call("chat.submit", {"chat_id": 1, "text": "my key is sk-very-secret-key-123"})
    chat.recorded.wait_done(1)
    assert sent(chat)[0]["messages"][-1]["content"].endswith("sk-very-secret-key-123")  # it was sent
    chat.call("chat.debug", {"chat_id": 1})
    [debug] = [op for op in chat.recorded.ops() if isinstance(op, ops.Debug)]
    assert "## Messages (3)" in debug.text and "reply 1" in debug.text
    assert "## Last request" in debug.text and '"stream": true' in debug.text
    assert "sk-very-secret-key-123" not in debug.text and "my key is ***" in debug.text


def test_settings_from_the_header_reach_the_request_and_bad_ones_send_nothing(chat):
    [header] = [op for op in chat.recorded.ops() if isinstance(op, ops.Settings)]
    values = {entry.key: entry.value for entry in header.entries}
    assert "temperature" in values and values["temperature"] is None
    chat.call("chat.submit", {"chat_id": 1, "text": "one", "settings": {"temperature": 0.3, "top_p": None}})
    chat.recorded.wait_done(1)
    assert sent(chat)[0]["temperature"] == 0.3 and "top_p" not in sent(chat)[0]

    for bad, message in (
        ({"temperature": "hot"}, "settings header: temperature must be a number, not 'hot'"),
        ({"colour": 1}, "settings header: local has no setting 'colour'"),
        ({"_unparsed": ["oops"]}, "settings header: cannot read 'oops'"),
    ):
        chat.call("chat.submit", {"chat_id": 1, "text": "two", "settings": bad})
        errors = [op.message for op in chat.recorded.ops() if isinstance(op, ops.Error)]
        assert errors[-1].startswith(message)
    assert len(sent(chat)) == 1


def test_a_model_from_the_header_switches_the_model(chat):
    chat.call("chat.submit", {"chat_id": 1, "text": "one", "settings": {"model": "other-model"}})
    chat.recorded.wait_done(1)
    assert sent(chat)[0]["model"] == "other-model"
    assert fires(chat, "ChatModel")[-1]["model"] == "other-model"


def test_agent_chats_refuse_what_does_not_apply_and_fire_acp_events(engine, tmp_path):
    configure(engine, engine.serve())
    engine.call("chat.open", {"chat_id": 1, "cwd": str(tmp_path), "adapter": "fake"})
    assert fires(engine, "ChatAdapter")[0]["adapter"].name == "fake"
    for method in ("chat.regenerate", "chat.system_prompt"):
        engine.call(method, {"chat_id": 1})
    errors = [op.message for op in engine.recorded.ops() if isinstance(op, ops.Error)]
    assert "cannot be regenerated" in errors[0] and "own system prompt" in errors[1]
    engine.call("chat.submit", {"chat_id": 1, "text": "hello agent"})
    engine.recorded.wait_done(1)
    names = [op.event for op in engine.recorded.ops() if isinstance(op, ops.Fire)]
    order = ["ACPConnected", "ACPSessionPre", "ACPSessionPost", "RequestStarted", "RequestStreaming", "RequestFinished"]
    assert [n for n in names if n in order] == order
    finished = fires(engine, "RequestFinished")[0]
    assert finished["status"] == "success" and finished["interaction"] == "chat" and finished["adapter"].name == "fake"
    assert fires(engine, "ACPSessionPost")[0]["session_id"]
    engine.call("chat.clear", {"chat_id": 1})
    assert engine.sessions[1].history == [] and engine.sessions[1].session_id is None
    engine.call("chat.submit", {"chat_id": 1, "text": "again"})
    engine.recorded.wait_done(2)
    assert len(fires(engine, "ACPSessionPost")) == 2  # a new session of the agent


def test_a_reopened_chat_keeps_its_settings_header_values(engine, tmp_path):
    url = engine.serve(*[sse_reply([delta(f"reply {n}")]) for n in (1, 2)])
    folder = tmp_path / "history"
    engine.call("config.set", {**_config(url), "__editor": {"history_dir": str(folder)}})
    engine.call("chat.open", {"chat_id": 1, "cwd": str(tmp_path)})
    engine.call("chat.submit", {"chat_id": 1, "text": "one", "settings": {"temperature": 0.3}})
    engine.recorded.wait_done(1)
    # saved once, as the turn ends (the recorder has its Done as soon as it is pushed)
    wait_until(lambda: engine.request("history.list", {"dir": str(folder)}), 10, "the chat saved")
    [saved] = engine.request("history.list", {"dir": str(folder)})
    engine.call("chat.open", {"chat_id": 2, "cwd": str(tmp_path), "history_id": saved["id"]})
    [header] = [op for op in engine.recorded.ops(2) if isinstance(op, ops.Settings)]
    assert {entry.key: entry.value for entry in header.entries}["temperature"] == 0.3


def _old_saved_chats(folder: Path, count: int) -> Path:
    """`folder` holding `count` saved chats, old000.json the oldest."""
    folder.mkdir()
    for i in range(count):
        old = folder / f"old{i:03}.json"
        old.write_text("{}")
        os.utime(old, (1_000 + i, 1_000 + i))
    return folder


def test_a_new_chat_s_save_prunes_the_oldest_saved_chats_soon_after(engine, tmp_path, monkeypatch):
    """The history folder keeps its newest 200 chats; the pruning a new chat's first save
    calls for is done a moment later, not as its request goes out."""
    monkeypatch.setattr(keeper, "PRUNE_AFTER", 0.05)
    folder = _old_saved_chats(tmp_path / "history", 200)
    url = engine.serve(sse_reply([delta("reply")]))
    engine.call("config.set", {**_config(url), "__editor": {"history_dir": str(folder)}})
    engine.call("chat.open", {"chat_id": 1, "cwd": str(tmp_path)})
    engine.call("chat.submit", {"chat_id": 1, "text": "one"})
    engine.recorded.wait_done(1)
    names = lambda: sorted(p.name for p in folder.glob("[!.]*.json"))  # noqa: E731  (not a save's temporary file)
    wait_until(lambda: "old000.json" not in names(), 10, lambda: f"{len(names())} files")
    assert len(names()) == 200 and "old001.json" in names()


def test_chats_made_in_a_row_share_one_prune(engine, tmp_path, monkeypatch):
    """Each new chat's first save asks for a prune; those asked for while one is on the way
    are covered by it, so making many chats does not read the folder once per chat."""
    monkeypatch.setattr(keeper, "PRUNE_AFTER", 1.5)  # both chats are saved well before it
    prunes = []
    real_prune = history.HistoryStore.prune
    monkeypatch.setattr(history.HistoryStore, "prune", lambda store: (prunes.append(1), real_prune(store)))
    folder = _old_saved_chats(tmp_path / "history", 200)
    url = engine.serve(*[sse_reply([delta(f"reply {n}")]) for n in (1, 2)])
    engine.call("config.set", {**_config(url), "__editor": {"history_dir": str(folder)}})
    for chat in (1, 2):
        engine.call("chat.open", {"chat_id": chat, "cwd": str(tmp_path)})
        engine.call("chat.submit", {"chat_id": chat, "text": "one"})
        engine.recorded.wait_done(chat_id=chat)
    names = lambda: sorted(p.name for p in folder.glob("[!.]*.json"))  # noqa: E731
    wait_until(lambda: "old001.json" not in names(), 10, lambda: f"{len(names())} files")
    assert len(names()) == 200 and "old002.json" in names()
    time.sleep(1.6)  # a second prune, had one been asked for, would have run by now
    assert len(prunes) == 1


def test_a_config_change_keeps_open_chats_and_new_ones_working(engine, tmp_path):
    """setup() again (or RefreshCache) replaces the HTTP client: a chat opened before sends
    through the new one, and a chat opened at once after it does not get the old, closed one."""
    url = engine.serve(*[sse_reply([delta(f"reply {n}")]) for n in range(1, 14)])
    configure(engine, url)
    for chat in range(1, 11):  # ten chats at once: the client pools ten connections
        engine.call("chat.open", {"chat_id": chat, "cwd": str(tmp_path)})
        engine.dispatch("chat.submit", {"chat_id": chat, "text": "one"})
    for chat in range(1, 11):
        engine.recorded.wait_done(1, chat_id=chat)
    # the new config, a new chat and its message arrive together, as Lua sends them
    engine.dispatch("config.set", _config(url))
    engine.dispatch("chat.open", {"chat_id": 11, "cwd": str(tmp_path)})
    engine.dispatch("chat.submit", {"chat_id": 11, "text": "two"})
    assert engine.recorded.wait_done(1, chat_id=11).status == "success"
    engine.call("chat.submit", {"chat_id": 1, "text": "three"})
    assert engine.recorded.wait_done(2).status == "success"


# --- on pynvim's loop: the host runs the engine there, calls come in greenlets ------------


def as_pynvim_handler(loop: asyncio.AbstractEventLoop, handler) -> None:
    """Run `handler` as pynvim runs an RPC handler: in a new greenlet, from a loop callback."""
    loop.call_soon(lambda: greenlet(handler).switch())


def test_on_a_shared_loop_a_chat_renders_from_the_loops_own_thread(tmp_path):
    loop = asyncio.new_event_loop()
    channel = RecordingChannel()
    threads: set[int] = set()
    render = channel.render
    channel.render = lambda chat_id, batch: (threads.add(threading.get_ident()), render(chat_id, batch))  # type: ignore[method-assign]
    engine = Engine(channel, loop=loop)
    server = ScriptedServer.sequence([sse_reply([delta("Hel"), delta("lo")])])
    loop.run_until_complete(server.start())

    def submit() -> None:
        engine.dispatch("config.set", _config(server.url))
        engine.dispatch("chat.open", {"chat_id": 1, "cwd": str(tmp_path)})
        engine.dispatch("chat.submit", {"chat_id": 1, "text": "hi"})

    try:
        as_pynvim_handler(loop, submit)

        async def done() -> None:
            while not any(isinstance(op, ops.Done) for op in channel.ops()):
                await asyncio.sleep(0.01)

        loop.run_until_complete(asyncio.wait_for(done(), 10))
        assert "".join(op.text for op in channel.ops() if isinstance(op, ops.Text)) == "Hello"
        assert threads == {threading.get_ident()}  # no thread of the engine's own
    finally:
        loop.run_until_complete(server.close())
        engine.shutdown()
        loop.close()


def test_on_a_shared_loop_a_shutdown_from_a_handler_closes_the_chats_before_it_returns(tmp_path):
    """Neovim's Python host calls the shutdown hook from a handler, its loop running."""
    loop = asyncio.new_event_loop()
    engine = Engine(RecordingChannel(), loop=loop)
    closed: list[Any] = []

    def open_chat() -> None:
        engine.dispatch("chat.open", {"chat_id": 1, "cwd": str(tmp_path)})

    def shut_down() -> None:
        session = engine.sessions[1]
        close = session.close

        async def recorded() -> None:
            await asyncio.sleep(0.01)  # a close that takes a step or two
            await close()
            closed.append(1)

        session.close = recorded  # type: ignore[method-assign]
        engine.shutdown()
        closed.append("returned")

    try:
        as_pynvim_handler(loop, open_chat)
        loop.run_until_complete(asyncio.sleep(0.1))
        as_pynvim_handler(loop, shut_down)
        loop.run_until_complete(asyncio.sleep(0.1))
        assert closed == [1, "returned"] and engine.sessions == {}
    finally:
        loop.close()


def test_a_request_on_the_shared_loop_waits_in_its_greenlet_and_the_loop_runs_on():
    loop = asyncio.new_event_loop()
    seen: list[Any] = []

    async def work() -> int:
        seen.append("work starts")
        await asyncio.sleep(0.01)
        seen.append("work ends")
        return 42

    def slow_request() -> None:
        seen.append(("answer", wait_in_greenlet(loop, work(), timeout=5)))

    def timed_out() -> None:
        with pytest.raises(TimeoutError):
            wait_in_greenlet(loop, asyncio.sleep(10), timeout=0.01)
        seen.append("timed out")

    as_pynvim_handler(loop, slow_request)
    loop.call_soon(seen.append, "another message handled")
    as_pynvim_handler(loop, timed_out)
    loop.run_until_complete(asyncio.sleep(0.1))
    loop.close()
    # the loop went on with the next message while the request waited; each got its answer
    assert seen[:2] == ["another message handled", "work starts"]
    assert sorted(seen[2:], key=str) == [("answer", 42), "timed out", "work ends"]
    assert seen.index("work ends") < seen.index(("answer", 42))


def test_a_request_on_the_loops_thread_outside_a_handler_is_refused():
    loop = asyncio.new_event_loop()
    work = asyncio.sleep(0)
    try:
        with pytest.raises(RuntimeError, match="pynvim handler"):
            wait_in_greenlet(loop, work, timeout=1)
    finally:
        work.close()
        loop.close()
