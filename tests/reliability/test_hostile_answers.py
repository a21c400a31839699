"""Hostile model and agent output, probed from outside: what a provider or an agent sends
must not kill the engine's channel to Neovim, hang a chat, or run anything unasked."""

from __future__ import annotations

import json
import sys

import pytest

from codecompanion_py.demo.server import Reply, Request, ScriptedServer, ServerThread, sse_reply
from tests.chat import test_acp_session as acp
from tests.chat.test_acp_session import FakeEditor, texts
from tests.e2e import conftest as e2e
from tests.e2e.lua_tools import calculator_callback
from tests.e2e.test_chat import chunk, usage
from tests.e2e.test_tools import setup_with_tools, text_reply

editor, nvim_home = e2e.editor, e2e.nvim_home  # the fixtures: a real headless Neovim with the plugin
agent_chat = acp.agent_chat  # the fixture: a chat with the scripted agent, without Neovim


def call_reply(name: str, arguments: str, call_id: str = "call_1") -> Reply:
    """One tool call, its arguments as the model wrote them."""
    call = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return sse_reply(
        [
            {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
            chunk(finish="tool_calls"),
            usage(30),
        ]
    )


def done_in(editor, buf: int) -> list[dict]:
    return [e for e in editor.events() if e["event"] == "CodeCompanionChatDone" and e["data"]["bufnr"] == buf]


@pytest.mark.nvim
@pytest.mark.parametrize("value", ["1180591620717411303424", "-1180591620717411303424", "1e400"])
def test_numbers_msgpack_cannot_carry_do_not_cut_the_chat(editor, value):
    """2^70 in a tool call's arguments: msgpack has no such integer, so the batch that shows
    the call could not be sent and the approval never reached the user."""
    arguments = '{"num1": ' + value + ', "num2": 2, "operation": "add"}'

    def respond(request: Request) -> Reply:
        if request.json()["messages"][-1]["role"] == "tool":
            return text_reply("Done with the big number.")
        return call_reply("calculator", arguments)

    with ServerThread(ScriptedServer(respond)) as server:
        setup_with_tools(editor, server.url, calculator_callback())
        editor.nvim.command("CodeCompanionChat Use the @{calculator} tool")
        buf = editor.nvim.current.buffer.number
        editor.wait_for(lambda: done_in(editor, buf), timeout=30, what="the chat to finish")
        assert "Done with the big number." in editor.text(buf)
        assert editor.lua("return 1 + 1") == 2


# --- a hostile agent ---------------------------------------------------------------------


def script(tmp_path, *steps: dict) -> str:
    """The prompt that makes the fake agent play `steps` (see its `script` scenario)."""
    path = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.jsonl"
    path.write_text("".join(json.dumps(step) + "\n" for step in steps))
    return f"script {path}"


@pytest.mark.parametrize("path", [".env", ".ssh/id_rsa", "deploy.pem", ".git/config"])
async def test_an_agent_reading_a_protected_file_is_asked_first(agent_chat, tmp_path, path):
    """fs/read_text_file of the project's .env handed its secrets to the agent, in YOLO mode
    too, where the chat's own read_file tool always asks."""
    (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / path).write_text("OPENAI_API_KEY=sk-do-not-leak-1234567890\n")
    editor = FakeEditor(choice="refuse")
    session = agent_chat(editor)
    session.approvals.yolo = True
    await session.submit(f"read {path}")
    assert "sk-do-not-leak" not in texts(session)
    [asked] = [args for method, args in editor.calls if method == "approve"]
    assert asked["prompt"].endswith(f"wants to read {path}") and asked["must_ask"].startswith(f"{path} is ")
    assert "Read failed" in texts(session)
    editor.choice = "allow"
    await session.submit(f"read {path}")
    assert "CONTENT<OPENAI_API_KEY=sk-do-not-leak-1234567890" in texts(session)


HIDDEN = "\r\x1b[2K\u202e\u200b\x00"


async def test_an_agents_permission_question_shows_its_text_visibly(agent_chat, tmp_path):
    """The title and option names an agent puts in a permission request reach the question
    with their escapes, bidi overrides and NULs written out, and no longer than a screen."""
    title = "Read notes.txt" + HIDDEN + "rm -rf ~" + "x" * 100_000
    options = [
        {"optionId": "yes", "name": "Reject" + HIDDEN, "kind": "allow_once"},
        {"optionId": "no", "name": "Allow\u202e", "kind": "reject_once"},
    ]
    tool = {"toolCallId": "c1", "title": title, "kind": "read"}
    editor = FakeEditor(choice="no")
    session = agent_chat(editor)
    await session.submit(
        script(tmp_path, {"ask": ["session/request_permission", {"options": options, "toolCall": tool}]})
    )
    [asked] = [args for method, args in editor.calls if method == "approve"]
    for text in [asked["prompt"], *(o["label"] for o in asked["options"])]:
        assert not any(ch in text for ch in "\r\x1b\u202e\u200b\x00"), repr(text[:100])
        assert len(text) < 2200
    assert "\\u202e" in asked["options"][1]["label"]
    assert '"optionId": "no"' in texts(session)


# --- tool-call ids that collide ------------------------------------------------------------


def two_calls_one_id(first: dict, second: dict) -> Reply:
    calls = [
        {"index": i, "id": "call_same", "type": "function", "function": {"name": c["name"], "arguments": c["args"]}}
        for i, c in enumerate([first, second])
    ]
    return sse_reply(
        [
            {"choices": [{"index": 0, "delta": {"tool_calls": calls}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ]
    )


async def test_two_calls_with_one_id_each_get_their_own_result(tmp_path):
    """Two calls a model gave the same id: the second's result answered both, so the LLM read
    that its refused delete had succeeded (and the first call's output was lost)."""
    from tests.reliability.test_hostile_input import Editor, answer, project, run_turn

    root = project(tmp_path)
    reply = two_calls_one_id(
        {"name": "read_file", "args": json.dumps({"filepath": "notes.txt"})},
        {"name": "delete_file", "args": json.dumps({"filepath": "keep/important.txt"})},
    )
    turn = await run_turn(root, reply, answer(), editor=Editor(choice="reject"))
    assert (root / "keep" / "important.txt").exists()
    sent = turn.sent_to_llm(1)
    [assistant] = [m for m in sent if m["role"] == "assistant"]
    ids = [c["id"] for c in assistant["tool_calls"]]
    assert len(set(ids)) == 2, ids
    results = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    assert set(results) == set(ids)
    assert "hello" in results[ids[0]] and "hello" not in results[ids[1]]


# --- the inline assistant on buffers it cannot write ----------------------------------------


@pytest.mark.nvim
@pytest.mark.parametrize("kind", ["help", "nomodifiable", "terminal"])
def test_inline_on_a_buffer_it_cannot_write_says_so_and_keeps_the_editor_usable(editor, tmp_path, kind):
    """`:CodeCompanion` in a help, terminal or 'nomodifiable' buffer: each batch of code
    raised E21 in Lua, a storm of errors, and the buffer stayed busy for good."""
    from tests.e2e.test_chat_surface import chat_config, notes, setup
    from tests.e2e.test_inline import answer

    code = "PLACEMENT: add\n" + "".join(f"line {i}\n" for i in range(50))
    with ServerThread(ScriptedServer.sequence([answer(code), answer(code)])) as server:
        setup(editor, server.url, chat_config(""))
        if kind == "help":
            editor.nvim.command("help help")
        elif kind == "terminal":
            editor.nvim.command("terminal cat")
        else:
            editor.nvim.command("enew")
            editor.nvim.current.buffer[:] = ["keep me"]
            editor.nvim.command("setlocal nomodifiable")
        buf = editor.nvim.current.buffer
        editor.nvim.command("CodeCompanion add some lines")
        editor.wait_for(lambda: notes(editor), what="a notice")
        assert "cannot be changed" in notes(editor)[0] and len(notes(editor)) == 1
        assert "line 0" not in buf[:]
        assert editor.lua("return vim.v.errmsg") == ""
        assert not editor.lua("return require('codecompanion_py.inline').writing(...)", buf.number)
        # the editor and the engine go on: the same request in a buffer it can write
        path = tmp_path / "ok.txt"
        path.write_text("first\n")
        editor.nvim.command(f"edit {path}")
        editor.nvim.command("CodeCompanion add some lines")
        editor.wait_for(lambda: "line 49" in editor.nvim.current.buffer[:], what="the code in a writable buffer")


async def test_what_an_agents_terminal_prints_reaches_it_without_a_known_key(agent_chat, tmp_path):
    """`terminal/output` handed the agent (and its LLM) a key a command printed (`cat .env`),
    where the chat's own run_command scrubs it before the LLM reads it."""
    from codecompanion_py.scrubber import KNOWN

    key = "sk-proj-NeverToTheAgent-0123456789"
    KNOWN.remember([key])
    (tmp_path / ".env").write_text(f"OPENAI_API_KEY={key}\n")
    session = agent_chat(FakeEditor())
    await session.submit("terminal print(open('.env').read())")
    shown = texts(session) + "".join(op.get("text", "") for op in session.view.sink.ops if op["op"] == "show")
    assert "output=OPENAI_API_KEY=***" in shown
    assert key not in shown and key[:12] not in shown


def update(fields: dict) -> dict:
    """A script step: one `session/update` as the agent sends it."""
    return {"send": {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "sess-1", "update": fields}}}


def nested_value(levels: int) -> dict:
    value: dict = {"a": 1}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


HOSTILE_UPDATES = [
    update({"sessionUpdate": "plan", "entries": [{"content": nested_value(500), "status": nested_value(3)}]}),
    update(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "t1",
            "title": "ok\x1b[2J",
            "kind": 2**70,
            "status": "completed",
            "locations": [{"path": "/etc/passwd", "line": 2**70}],
            "rawInput": nested_value(100),
            "content": [{"type": "diff", "path": "x", "oldText": 5, "newText": ["a"]}],
        }
    ),
    update({"sessionUpdate": "tool_call", "toolCallId": nested_value(400), "title": "deep id", "status": "pending"}),
    update({"sessionUpdate": "current_mode_update", "currentModeId": nested_value(100)}),
    update({"sessionUpdate": "config_option_update", "configOptions": [{"id": 2**70, "name": 5, "options": "abc"}]}),
    update({"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "x", "description": 2**70}]}),
    update({"sessionUpdate": "usage_update", "used": 2**70, "size": 1e308}),
    update({"sessionUpdate": "some_future_kind", "huge": "x" * 1_000_000}),
    update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": nested_value(5)}}),
    {"raw": '{"jsonrpc": "2.0", "method": "session/update", "params": {"update": ' + "[" * 5000 + "\n"},
    update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "still fine"}}),
]


@pytest.mark.nvim
def test_hostile_agent_updates_in_real_neovim_end_the_turn_and_keep_the_channel(editor, tmp_path):
    from tests.e2e.test_acp import open_agent_chat

    root = tmp_path / "proj"
    root.mkdir()
    chat = open_agent_chat(editor, root, script(tmp_path, *HOSTILE_UPDATES))
    done = editor.wait_event("CodeCompanionChatDone", timeout=60)
    assert done["data"]["status"] == "success"
    assert "still fine" in editor.text(chat)
    assert editor.lua("return 1 + 1") == 2
    editor.type_prompt("hello again")
    editor.nvim.input("<CR>")
    editor.wait_event("CodeCompanionChatDone", count=2, timeout=30)
    assert "echo: hello again" in editor.text(chat)


@pytest.mark.nvim
def test_control_characters_in_a_reply_its_reasoning_and_a_call_id_keep_the_chat(editor):
    """NUL, CR, ESC sequences, bidi overrides and line separators in the text, in the
    reasoning and in a tool call's id: the chat shows them, runs the call and goes on."""
    nasty = "a\x00b\rc\x1b[2Jd\u202ee\u2028f\x7fg\x1b]52;c;QUJD\x07h"

    def respond(request: Request) -> Reply:
        messages = request.json()["messages"]
        if messages[-1]["role"] == "tool":
            return text_reply("after " + nasty)
        if messages[-1]["content"] == "again":
            return text_reply("Second turn fine.")
        call = {"index": 0, "id": "id" + nasty, "type": "function", "function": {"name": "calculator"}}
        call["function"]["arguments"] = '{"num1": 1, "num2": 2, "operation": "add"}'
        frames = [
            {"choices": [{"index": 0, "delta": {"reasoning_content": "think " + nasty}}]},
            chunk("text " + nasty + "\n"),
            {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
            chunk(finish="tool_calls"),
            usage(30),
        ]
        return sse_reply(frames)

    with ServerThread(ScriptedServer(respond)) as server:
        setup_with_tools(editor, server.url, calculator_callback())
        editor.nvim.command("CodeCompanionChat Use the @{calculator} tool")
        buf = editor.nvim.current.buffer.number
        editor.wait_for(lambda: done_in(editor, buf), timeout=30, what="the chat to finish")
        assert done_in(editor, buf)[0]["data"]["status"] == "success"
        assert "after a" in editor.text(buf)
        tool_results = [m for m in server.requests[-1].json()["messages"] if m["role"] == "tool"]
        assert tool_results and tool_results[0]["tool_call_id"] == "id" + nasty
        assert editor.lua("return vim.v.errmsg") == ""
        editor.type_prompt("again")
        editor.nvim.input("<CR>")
        editor.wait_for(lambda: len(done_in(editor, buf)) == 2, timeout=30, what="the next turn")
        assert "Second turn fine." in editor.text(buf)


class SlowUser(FakeEditor):
    """Answers each question after a moment, keeping how many were open at once."""

    def __init__(self, choice: str) -> None:
        super().__init__(choice)
        self.open = self.most_open = 0

    reviews_edits = False  # no diff review after a write here

    async def call(self, method: str, args: dict) -> object:
        import asyncio

        if method != "approve":
            return await super().call(method, args)
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            await asyncio.sleep(0.02)
            return await super().call(method, args)
        finally:
            self.open -= 1


async def test_an_agent_flooding_permission_questions_gets_them_asked_one_at_a_time(agent_chat, tmp_path):
    """Fifty permission requests sent at once opened fifty questions in the editor at once
    (each one a vim.ui.select on top of the others), which stopping the chat could not take
    back; now one is open at a time and the rest wait their turn."""
    options = [{"optionId": "no", "name": "Reject", "kind": "reject_once"}]
    flood = [
        {
            "send": {
                "jsonrpc": "2.0",
                "id": f"p{n}",
                "method": "session/request_permission",
                "params": {"sessionId": "sess-1", "options": options, "toolCall": {"toolCallId": f"c{n}"}},
            }
        }
        for n in range(50)
    ]
    last = {"ask": ["session/request_permission", {"options": options, "toolCall": {"toolCallId": "last"}}]}
    user = SlowUser(choice="no")
    session = agent_chat(user)
    await session.submit(script(tmp_path, *flood, last))
    assert '"optionId": "no"' in texts(session)
    assert user.most_open == 1


async def test_an_agent_streaming_without_end_is_stopped_at_the_turn_cap(agent_chat, monkeypatch):
    """An agent that streams on and ignores `session/cancel` filled the chat (and Neovim's
    memory) without bound; a provider's reply stops at max_response_bytes."""
    from codecompanion_py.chat.acp import session as acp_session

    monkeypatch.setattr(acp_session, "MAX_TURN_CHARS", 5000)
    session = agent_chat(FakeEditor())
    await session.submit("many 3000")  # about 30000 characters, and it never reads a cancel
    assert 4000 < len(texts(session)) <= 5000
    done = session.view.sink.ops[-1]
    assert done["op"] == "done" and done["status"] == "error" and "more than 5000 characters" in done["message"]
    await session.submit("hello")
    assert texts(session).endswith("echo: hello")


async def test_an_agents_diff_of_two_huge_texts_does_not_hold_the_engine(agent_chat, tmp_path):
    """A tool call whose diff has two different 150,000-line texts: difflib's time grows with
    their product, so showing it held the engine's loop (every chat) for minutes."""
    import asyncio
    import random

    rng = random.Random(1)
    old, new = ("\n".join(f"line {rng.randint(0, 50)}" for _ in range(150_000)) for _ in range(2))
    diff = {"type": "diff", "path": str(tmp_path / "big.txt"), "oldText": old, "newText": new}
    call = {"toolCallId": "d1", "title": "Edit big.txt", "kind": "edit", "status": "completed", "content": [diff]}
    session = agent_chat(FakeEditor())
    prompt = script(tmp_path, update({"sessionUpdate": "tool_call", **call}), update(SAID_DONE))
    await asyncio.wait_for(session.submit(prompt), timeout=60)
    assert texts(session).endswith("done")
    [shown] = [op for op in session.view.sink.ops if op["op"] == "show"]
    assert shown["text"].count("\n-line ") == 150_000 and shown["text"].count("\n+line ") == 150_000


SAID_DONE = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done"}}


# --- the inline assistant's parser ----------------------------------------------------------

LONG_LINE_PARSE = """
from codecompanion_py.inline import InlineParser
for head in ("PLACEMENT: add\\n", ""):  # one long code line, and one long first line
    parser = InlineParser()
    out = parser.feed(head)
    for _ in range(80_000):
        out += parser.feed("x" * 50)
    [line] = [op for op in out + parser.finish() if op.__class__.__name__ == "Text"]
    assert line.text == "x" * 4_000_000, len(line.text)
print("parsed")
"""


def test_a_long_line_in_tiny_tokens_is_parsed_in_linear_time():
    """An inline answer of one 4 MB line in 80,000 tokens: the parser joined and split all it
    had at each token, so the engine spent minutes (every chat with it) on one answer."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).parents[2])
    env = {**os.environ, "PYTHONPATH": root}
    done = subprocess.run(
        [sys.executable, "-c", LONG_LINE_PARSE], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.strip() == "parsed", done.stderr[-2000:]


# --- an agent's terminals ---------------------------------------------------------------------


async def test_a_terminal_keeps_at_most_its_cap_whatever_limit_the_agent_asks(agent_chat, tmp_path):
    """`outputByteLimit: 2**40` and a command printing without end: the engine kept it all,
    until the system killed it (and every chat with it)."""
    from codecompanion_py.acp.terminals import MAX_OUTPUT_LIMIT

    flood = "import sys\nfor _ in range(24): sys.stdout.write('y' * 1_000_000)"
    created = {"command": sys.executable, "args": ["-c", flood], "outputByteLimit": 2**40}
    steps = [
        {"ask": ["terminal/create", created]},
        {"ask": ["terminal/wait_for_exit", {"terminalId": "term-1"}]},
        {"ask": ["terminal/output", {"terminalId": "term-1"}]},
    ]
    session = agent_chat(FakeEditor())
    await session.submit(script(tmp_path, *steps))
    output = json.loads(texts(session).rsplit("ANSWER<", 1)[1][:-1])["result"]
    assert output["truncated"] is True
    assert 0 < len(output["output"]) <= MAX_OUTPUT_LIMIT


async def test_what_an_agent_sends_past_the_turn_cap_is_not_kept(agent_chat, tmp_path, monkeypatch):
    """Past the cap the updates were dropped from the screen but each tool call was still
    kept whole in the engine, so an agent sending on grew its memory without bound."""
    from codecompanion_py.chat.acp import session as acp_session

    monkeypatch.setattr(acp_session, "MAX_TURN_CHARS", 5000)
    calls = [
        update(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": f"c{n}",
                "title": "Run",
                "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": "y" * 1000}}],
            }
        )
        for n in range(20)
    ]
    session = agent_chat(FakeEditor())
    await session.submit(script(tmp_path, *calls))
    assert 4 <= len(session.updates.tool_calls) <= 6
