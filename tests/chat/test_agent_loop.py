"""The turn loop without Neovim: LLM -> tools -> LLM until it answers, within a round limit."""

import json

from codecompanion_py.adapters import extend
from codecompanion_py.chat.session import ChatSession
from codecompanion_py.client import HttpClient
from codecompanion_py.demo.server import ScriptedServer, sse_reply
from codecompanion_py.tools.registry import ToolSettings
from codecompanion_py.tools.workspace import Workspace

from .test_session import Recorder, delta

ECHO = {
    "callback": {
        "name": "echo",
        "schema": {
            "type": "function",
            "function": {
                "name": "echo",
                "description": "Echo a word",
                "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
            },
        },
        "cmds": [lambda self, args, input, cb: {"status": "success", "data": args["word"].upper()}],
        "system_prompt": "Echo tool prompt",
    }
}


def call_reply(call_id, word):
    return sse_reply(
        [
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": call_id,
                                    "type": "function",
                                    "function": {"name": "echo", "arguments": json.dumps({"word": word})},
                                }
                            ]
                        },
                    }
                ]
            },
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ]
    )


async def session_for(tmp_path, *replies, max_rounds=25):
    server = ScriptedServer.sequence(list(replies))
    await server.start()
    client = HttpClient()
    settings = ToolSettings.from_config({"echo": ECHO, "opts": {"max_rounds": max_rounds}})
    adapter = extend("openai_compatible", {"env": {"url": server.url}})
    session = ChatSession(
        1,
        adapter,
        client=client,
        sink=Recorder(),
        system_prompt=None,
        tools=settings,
        editor=None,
        workspace=Workspace(tmp_path),
    )
    session.editor = object()  # never asked: the echo tool needs no approval
    return session, server, client


async def test_results_go_back_until_the_llm_answers_in_text(tmp_path):
    session, server, client = await session_for(
        tmp_path, call_reply("a", "one"), call_reply("b", "two"), sse_reply([delta("done")])
    )
    try:
        await session.submit("use @{echo} twice")
        assert session.view.sink.ops[-1]["status"] == "success"
        roles = [m.role for m in session.history]
        assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
        assert session.history[0].text == "Echo tool prompt"
        assert session.history[1].text == "use `echo` twice"
        assert [r.content for m in session.history for r in m.tool_results] == ["ONE", "TWO"]
        third = server.requests[2].json()
        assert [m["content"] for m in third["messages"] if m["role"] == "tool"] == ["ONE", "TWO"]
        assert third["tools"][0]["function"]["name"] == "echo"
        begins = [op for op in session.view.sink.ops if op["op"] == "begin"]
        assert [op.get("continued", False) for op in begins] == [False, True, True]
    finally:
        await client.aclose()
        await server.close()


async def test_the_round_limit_stops_the_loop_and_still_answers_the_calls(tmp_path):
    session, server, client = await session_for(tmp_path, call_reply("a", "one"), call_reply("b", "two"), max_rounds=1)
    try:
        await session.submit("@{echo} forever")
        done = session.view.sink.ops[-1]
        assert done["status"] == "error" and "1 rounds" in done["message"]
        last = session.history[-1]
        assert last.role == "tool" and last.tool_results[0].tool_call_id == "b"
        assert last.tool_results[0].status == "error"
        assert len(server.requests) == 2
    finally:
        await client.aclose()
        await server.close()


async def test_tools_wait_for_the_turns_checkpoint_while_the_request_goes_out(tmp_path):
    """The engine takes the worktree's checkpoint while the request goes out
    (`before_changes`): the LLM is asked at once, the tool runs only once it is taken."""
    import asyncio

    session, server, client = await session_for(tmp_path, call_reply("a", "one"), sse_reply([delta("done")]))
    checkpoint = asyncio.get_running_loop().create_future()
    session.before_changes = checkpoint
    try:
        turn = session.submit("use @{echo}")
        assert turn is not None
        while len(server.requests) < 1 or not any(op["op"] == "tool_call" for op in session.view.sink.ops):
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        assert not any(m.role == "tool" for m in session.history) and len(server.requests) == 1
        checkpoint.set_result(None)
        await turn
        assert [r.content for m in session.history for r in m.tool_results] == ["ONE"]
    finally:
        await client.aclose()
        await server.close()
