"""Agents that misbehave, seen from the chat: through the engine with a recording channel, as
Neovim would see it, with the scripted agent (`tests/acp/fake_agent.py`).

* An agent that crashes in the middle of a turn: the chat ends the turn with an error that
  says how it exited and what it last printed, and the next message starts a new agent
  (the chat says it was restarted).
* An agent that never answers `initialize`: the turn ends with a clear timeout, or at
  once when the user stops it; the hung process is gone and the next message starts a
  fresh agent.
* An agent that prints junk between its messages (not JSON, not UTF-8, nested past any
  sane depth, a lone surrogate): the junk is skipped and the same agent goes on.
* After every test, no agent process is left: each test's agents carry a marker of their
  own on their command line, so agents of tests running beside these are never counted.

The ACP client's own handling of the same faults is in `tests/acp/test_client.py`
(crash, initialize timeout, ASCII junk); the crash and restart in a real Neovim in
`tests/e2e/test_acp.py`. Here: what the chat shows, and that it stays usable.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from codecompanion_py.adapters.acp import AcpAdapter
from codecompanion_py.chat.acp.session import AcpChatSession
from codecompanion_py.engine import Engine
from codecompanion_py.tools.workspace import Workspace
from codecompanion_py.ui import ops

from ..test_engine import RecordingChannel

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")

FAKE_AGENT = str(Path(__file__).parents[1] / "acp" / "fake_agent.py")

# The fake agent, started through this wrapper: `hang_first` makes only the first start of
# the test hang (FAKE_AGENT_HANG for that process), and a `bytes` scenario prints lines no
# agent should print (the fake agent's own `junk` scenario prints ASCII junk only).
WRAPPER = r"""
import importlib.util, os, sys
path, marker, state, hang_first = sys.argv[1:5]
starts = os.path.join(state, "starts")
count = int(open(starts).read()) + 1 if os.path.exists(starts) else 1
open(starts, "w").write(str(count))
if hang_first and count == 1:
    os.environ["FAKE_AGENT_HANG"] = hang_first
spec = importlib.util.spec_from_file_location("fake_agent", path)
agent = importlib.util.module_from_spec(spec)
spec.loader.exec_module(agent)

def bad_bytes(cwd, rest):
    sys.stdout.flush()
    out = sys.stdout.buffer
    update = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":'
    out.write(update + b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"caf\xe9 "}}}}\n')
    out.write(b"[" * 100000 + b"\n")
    out.write(update + b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\\ud800"}}}}\n')
    out.write(b"\xff\xfe\x00 binary garbage\n")
    out.flush()
    agent.say("still here")
    return "end_turn"

agent.SCENARIOS["bytes"] = bad_bytes
agent.main()
"""


def wait_until(predicate: Callable[[], Any], message: str | Callable[[], str], timeout: float = 20.0) -> Any:
    """Poll `predicate` until it is truthy; fail, never hang, after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(
                f"gave up after {timeout:g}s waiting for {message() if callable(message) else message}"
            )
        time.sleep(0.02)
    return value


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


def processes(marker: str) -> list[int]:
    """Live processes whose command line holds `marker` (as `tests/e2e/test_acp.py`'s
    helper, with a marker per test)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


class Agent:
    """One test's agent command, its marker and its start count."""

    def __init__(self, root: Path, hang_first: str = "") -> None:
        self.marker = f"agent-fault-{uuid.uuid4().hex}"
        self.state = root / "agent-state"
        self.state.mkdir()
        self.argv = [sys.executable, "-c", WRAPPER, FAKE_AGENT, self.marker, str(self.state), hang_first]

    @property
    def starts(self) -> int:
        path = self.state / "starts"
        return int(path.read_text()) if path.exists() else 0

    def running(self) -> list[int]:
        return processes(self.marker)


class Chat:
    """Chat 1 of an engine, talking to `agent`, as the editor drives it."""

    def __init__(self, engine: Engine, channel: RecordingChannel, agent: Agent) -> None:
        self.engine, self.channel, self.agent = engine, channel, agent

    def call(self, method: str, **payload: Any) -> None:
        self.engine.dispatch(method, {"chat_id": 1, **payload}).result(10)

    def send(self, text: str) -> None:
        self.call("chat.submit", text=text)

    def done(self, count: int) -> ops.Done:
        return self.channel.wait_done(count)

    def text(self) -> str:
        return "".join(op.text for op in self.channel.ops() if isinstance(op, ops.Text))

    def shown(self) -> list[ops.Show]:
        return [op for op in self.channel.ops() if isinstance(op, ops.Show)]

    def errors(self) -> list[str]:
        return [op.message for op in self.channel.ops() if isinstance(op, ops.Error)]


@pytest.fixture
def open_chat(tmp_path):
    made: list[tuple[Engine, Agent]] = []

    def open_(hang_first: str = "", timeout_ms: int = 10000) -> Chat:
        project = tmp_path / "project"
        project.mkdir()
        agent = Agent(tmp_path, hang_first)
        channel = RecordingChannel()
        engine = Engine(channel)
        made.append((engine, agent))
        fake = {
            "formatted_name": "Fake Agent",
            "defaults": {"timeout": timeout_ms, "prompt_timeout": 20000},
            "commands": {"default": agent.argv},
        }
        config = {"adapters": {"acp": {"fake": fake}}, "interactions": {"chat": {"adapter": "fake"}}}
        engine.dispatch("config.set", config).result(10)
        chat = Chat(engine, channel, agent)
        chat.call("chat.open", cwd=str(project))
        return chat

    yield open_
    for engine, agent in made:
        try:
            engine.shutdown()
        finally:
            gone(agent)


def gone(agent: Agent) -> None:
    wait_until(lambda: not agent.running(), message=lambda: f"agents left: {agent.running()}")


def close_and_check(chat: Chat) -> None:
    """Closing the chat (not the engine's shutdown) ends its agent."""
    chat.call("chat.close")
    wait_until(lambda: not chat.agent.running(), message=lambda: f"the agent to end: {chat.agent.running()}")


def test_an_agent_that_crashes_mid_turn_says_why_and_the_next_message_starts_a_new_one(open_chat):
    chat = open_chat()
    chat.send("crash")
    done = chat.done(1)
    assert done.status == "error"
    assert done.message is not None
    assert "Fake Agent exited with code 3" in done.message and "the fake agent fell over" in done.message
    assert chat.text() == "about to crash"  # what it said before it fell over stays
    wait_until(lambda: not chat.agent.running(), message="the crashed agent to be reaped")

    chat.send("stream")
    assert chat.done(2).status == "success"
    assert "Hello from the fake agent." in chat.text()
    assert any("was restarted: it does not remember the earlier turns" in op.text for op in chat.shown())
    assert chat.agent.starts == 2
    assert not chat.errors()
    close_and_check(chat)


def test_an_agent_that_never_answers_initialize_times_out_and_the_next_message_starts_afresh(open_chat):
    chat = open_chat(hang_first="initialize", timeout_ms=2000)
    chat.send("stream")
    done = chat.done(1)
    assert done == ops.Done(status="error", message="Fake Agent did not answer initialize within 2 s")
    wait_until(lambda: not chat.agent.running(), message="the hung agent to be stopped")

    chat.send("stream")
    assert chat.done(2).status == "success"
    assert "Hello from the fake agent." in chat.text()
    assert chat.agent.starts == 2
    close_and_check(chat)


def test_stopping_a_chat_whose_agent_hangs_on_initialize_ends_the_turn_and_the_agent(open_chat):
    chat = open_chat(hang_first="initialize", timeout_ms=60000)
    chat.send("stream")
    wait_until(lambda: chat.agent.starts == 1 and chat.agent.running(), message="the agent to start")
    chat.call("chat.stop")
    assert chat.done(1) == ops.Done(status="stopped")  # at once, not after the 60 s timeout
    wait_until(lambda: not chat.agent.running(), message="the hung agent to be stopped")

    chat.send("stream")
    assert chat.done(2).status == "success"
    assert "Hello from the fake agent." in chat.text()
    assert chat.agent.starts == 2
    close_and_check(chat)


def test_closing_a_chat_whose_agent_hangs_on_initialize_ends_the_turn_and_the_agent(open_chat):
    chat = open_chat(hang_first="initialize", timeout_ms=60000)
    chat.send("stream")
    wait_until(lambda: chat.agent.starts == 1 and chat.agent.running(), message="the agent to start")
    close_and_check(chat)
    assert chat.done(1).status == "stopped"  # the turn ended too, not only its agent


def test_junk_from_an_agent_is_skipped_and_the_same_agent_goes_on(open_chat):
    chat = open_chat()
    chat.send("junk")  # not JSON, JSON that is no message, an unknown update kind
    assert chat.done(1).status == "success"
    assert chat.text() == "still fine"
    [pid] = chat.agent.running()

    chat.send("bytes")  # invalid UTF-8 in a message, 100000 brackets, a lone surrogate, binary
    done = chat.done(2)
    assert done.status == "success" and done.message is None, done
    assert chat.text() == "still finecaf\ufffd still here"  # the bad byte replaced, the message kept
    assert chat.agent.running() == [pid]

    chat.send("stream")
    assert chat.done(3).status == "success"
    assert chat.agent.running() == [pid] and chat.agent.starts == 1
    assert not chat.errors()
    msgspec.msgpack.encode([msgspec.to_builtins(op) for op in chat.channel.ops()])  # all of it can go to Neovim
    close_and_check(chat)


# --- stopped before the turn began ------------------------------------------------------


class Sink:
    def __init__(self) -> None:
        self.ops: list[ops.Op] = []

    def push(self, op: ops.Op) -> None:
        self.ops.append(op)


class NoEditor:
    async def call(self, method: str, args: Any) -> Any:
        raise AssertionError(f"unexpected editor call {method}")


async def test_an_agent_chat_stopped_before_its_turn_began_ends_it_and_starts_no_agent(tmp_path):
    agent = Agent(tmp_path)
    adapter = AcpAdapter(
        name="fake",
        formatted_name="Fake Agent",
        commands={"default": agent.argv},
        defaults={"timeout": 10000, "prompt_timeout": 20000},
    )
    sink = Sink()
    session = AcpChatSession(1, adapter, sink=sink, editor=NoEditor(), workspace=Workspace(tmp_path))
    try:
        first = session.submit("stream")
        assert first is not None and session.stop()  # q pressed before the engine got to the turn
        await asyncio.wait([first])
        assert [op for op in sink.ops if isinstance(op, ops.Done)] == [ops.Done(status="stopped")]
        assert agent.starts == 0 and not session.busy

        second = session.submit("stream")
        assert second is not None
        await asyncio.wait_for(second, 20)
        assert [op for op in sink.ops if isinstance(op, ops.Done)][-1].status == "success"
    finally:
        await session.close()
    await async_wait_until(lambda: not agent.running(), message="the agent to end with its chat")
