"""The chat session without Neovim: ops in order, history kept, stop keeps what arrived."""

import msgspec
import pytest

from codecompanion_py.adapters import extend
from codecompanion_py.chat.session import ChatSession
from codecompanion_py.client import HttpClient
from codecompanion_py.demo.server import ScriptedServer, sse_reply

from ..waiting import async_wait_until


def delta(text):
    return {"choices": [{"index": 0, "delta": {"content": text}}]}


class Recorder:
    """A sink that keeps each op as Lua would receive it."""

    def __init__(self):
        self.ops = []

    def push(self, op):
        self.ops.append(msgspec.to_builtins(op))

    def kinds(self):
        return [op["op"] if op["op"] != "fire" else op["event"] for op in self.ops]


@pytest.fixture
async def chat():
    servers, clients = [], []

    async def make(*replies, system_prompt=None):
        server = ScriptedServer.sequence(list(replies))
        await server.start()
        client = HttpClient()
        servers.append(server)
        clients.append(client)
        adapter = extend("openai_compatible", {"env": {"url": server.url}})
        return ChatSession(1, adapter, client=client, sink=Recorder(), system_prompt=system_prompt), server

    yield make
    for client in clients:
        await client.aclose()
    for server in servers:
        await server.close()


async def test_a_turn_emits_ops_in_order_and_grows_the_history(chat):
    reply = sse_reply(
        [
            delta("Hi"),
            delta(" there"),
            {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}},
        ]
    )
    session, server = await chat(reply, system_prompt="sys")
    await session.submit("hello")
    kinds = session.view.sink.kinds()
    # the tokens of one network chunk come as one text op
    assert [k for i, k in enumerate(kinds) if k != "text" or kinds[i - 1] != "text"] == [
        "begin",
        "RequestStarted",
        "RequestStreaming",
        "text",
        "RequestFinished",
        "done",
    ]
    assert "".join(op["text"] for op in session.view.sink.ops if op["op"] == "text") == "Hi there"
    assert session.view.sink.ops[-1] == {"op": "done", "status": "success", "tokens": 5}
    assert [(m.role, m.text) for m in session.history] == [
        ("system", "sys"),
        ("user", "hello"),
        ("assistant", "Hi there"),
    ]
    assert server.requests[0].json()["messages"][0] == {"role": "system", "content": "sys"}


async def test_stop_keeps_the_partial_reply_and_the_chat_goes_on(chat):
    slow = sse_reply([delta(f"w{i} ") for i in range(300)], delay=0.01)
    session, server = await chat(slow, sse_reply([delta("next")]))
    task = session.submit("go")
    await async_wait_until(lambda: any(op["op"] == "text" for op in session.view.sink.ops), 15, "the first text")
    assert session.busy
    assert session.submit("again") is None  # refused while a turn runs
    assert session.view.sink.ops[-1]["op"] == "error"
    assert session.stop()
    await task
    assert session.view.sink.ops[-1]["status"] == "stopped"
    partial = session.history[-1]
    assert partial.role == "assistant" and partial.text.startswith("w0 ") and "w299" not in partial.text
    await session.submit("more")
    assert session.history[-1].text == "next"
    assert server.requests[1].json()["messages"][-2]["content"] == partial.text


async def test_an_error_ends_the_turn_with_the_message(chat):
    session, _ = await chat(sse_reply([delta("part"), {"error": {"message": "overloaded"}}]))
    await session.submit("x")
    done = session.view.sink.ops[-1]
    assert done["status"] == "error" and "overloaded" in done["message"]
    assert session.history[-1].text == "part"
    assert not session.busy


async def test_empty_input_sends_nothing(chat):
    session, server = await chat()
    assert session.submit("   \n") is None
    assert session.view.sink.ops == [{"op": "done", "status": "empty"}]
    assert server.requests == []
