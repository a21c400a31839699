"""A chat with an agent, without Neovim: what reaches the agent, and what the editor is
asked, for mentions, slash commands, YOLO, options and switching away."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from codecompanion_py.adapters.acp import AcpAdapter
from codecompanion_py.chat.acp.session import AcpChatSession
from codecompanion_py.tools.workspace import Workspace

from .test_session import Recorder

FAKE_AGENT = str(Path(__file__).parents[1] / "acp" / "fake_agent.py")


class FakeEditor:
    """Answers approvals with `choice`; the file `buffer_path` is 'loaded' with unsaved text."""

    def __init__(self, choice: str = "allow", buffer_path: str | None = None, lines: list[str] | None = None):
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.choice = choice
        self.buffer_path = buffer_path
        self.lines = lines or []

    async def call(self, method: str, args: dict[str, Any]) -> Any:
        self.calls.append((method, args))
        if method == "approve":
            return {"choice": self.choice}
        if method == "buffer.get":
            if args["path"] == self.buffer_path:
                return {"bufnr": 5, "lines": self.lines, "modified": True, "changedtick": 9, "eol": True}
            return None
        return {}


@pytest.fixture
async def agent_chat(tmp_path, monkeypatch):
    sessions: list[AcpChatSession] = []

    def make(editor: FakeEditor | None = None, **env: str) -> AcpChatSession:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        adapter = AcpAdapter(
            name="fake",
            formatted_name="Fake Agent",
            commands={"default": [sys.executable, FAKE_AGENT]},
            defaults={"timeout": 5000, "prompt_timeout": 5000},
        )
        session = AcpChatSession(
            1, adapter, sink=Recorder(), editor=editor or FakeEditor(), workspace=Workspace(tmp_path)
        )
        sessions.append(session)
        return session

    yield make
    for session in sessions:
        await session.close()


def texts(session: AcpChatSession) -> str:
    return "".join(op["text"] for op in session.view.sink.ops if op["op"] == "text")


async def test_a_file_mention_sends_the_buffer_text_as_a_resource(agent_chat, tmp_path):
    (tmp_path / "notes.txt").write_text("on disk\n")
    log = tmp_path / "wire.log"
    editor = FakeEditor(buffer_path=str(tmp_path / "notes.txt"), lines=["unsaved text"])
    session = agent_chat(editor, FAKE_AGENT_LOG=str(log))
    await session.submit("look at #{file:notes.txt} please")
    assert texts(session) == f"echo: look at `notes.txt` please [resource {(tmp_path / 'notes.txt').as_uri()}]"
    wire = log.read_text()
    assert "unsaved text" in wire and "on disk" not in wire  # what the user sees, not the disk


async def test_a_backslash_command_goes_to_the_agent_as_a_slash_command(agent_chat):
    session = agent_chat()
    await session.submit("hello")  # the agent announces its commands with the session
    await session.submit("\\review the diff")
    await session.submit("\\unknown stays")
    assert "echo: /review the diff" in texts(session)
    assert "echo: \\unknown stays" in texts(session)


async def test_yolo_allows_ordinary_calls_but_asks_for_protected_files(agent_chat, tmp_path):
    editor = FakeEditor(choice="allow")
    session = agent_chat(editor)
    session.approvals.yolo = True
    await session.submit("permission plain.txt")
    assert not [c for c in editor.calls if c[0] == "approve"]  # allowed without asking
    assert (tmp_path / "plain.txt").read_text() == "hello from the agent\n"
    await session.submit("permission .env")
    approvals = [args for method, args in editor.calls if method == "approve"]
    assert approvals and ".env is" in approvals[0]["must_ask"]


async def test_modes_and_config_options_are_offered_and_set(agent_chat):
    session = agent_chat()
    await session.submit("hello")
    options = {o.id: o for o in session.options()}
    assert options["model"].current == "fake-1"
    assert [v.value for v in options["model"].values] == ["fake-1", "fake-2"]
    assert [v.value for v in options["__mode"].values] == ["ask", "code"]
    await session.set_option("model", "fake-2")
    assert session.adapter_info().model == "fake-2"
    await session.set_option("__mode", "code")
    assert session.state.modes["currentModeId"] == "code"


async def test_the_conversation_is_kept_as_canonical_messages(agent_chat):
    session = agent_chat()
    await session.submit("stream it")
    assert [(m.role, m.text) for m in session.history] == [
        ("user", "stream it"),
        ("assistant", "Hello from the fake agent."),
    ]


async def test_a_model_chosen_when_opening_is_set_once_the_session_starts(agent_chat):
    session = agent_chat()
    session.adapter.defaults["model"] = "fake-2"
    await session.submit("hello")
    assert session.adapter_info().model == "fake-2"
    other = agent_chat()
    other.adapter.defaults["model"] = "no-such-model"
    await other.submit("hello")
    assert (
        other.view.sink.ops[-1]["status"] == "error"
        and "no model 'no-such-model'" in other.view.sink.ops[-1]["message"]
    )


async def test_switching_to_an_agent_mid_chat_tells_it_the_conversation_once(tmp_path, monkeypatch):
    from codecompanion_py.messages import Message

    log = tmp_path / "wire.log"
    monkeypatch.setenv("FAKE_AGENT_LOG", str(log))
    adapter = AcpAdapter(name="fake", formatted_name="Fake Agent", commands={"default": [sys.executable, FAKE_AGENT]})
    history = [
        Message.of("system", "a system prompt"),
        Message.of("user", "what is 2+2?"),
        Message.of("assistant", "It is 4."),
    ]
    session = AcpChatSession(
        1,
        adapter,
        sink=Recorder(),
        editor=FakeEditor(),
        workspace=Workspace(tmp_path),
        history=[m for m in history if m.role != "system"],
    )
    try:
        await session.submit("and 3+3?")
        await session.submit("thanks")
    finally:
        await session.close()
    prompts = [line for line in log.read_text().splitlines() if '"session/prompt"' in line]
    assert "User: what is 2+2?" in prompts[0] and "Assistant: It is 4." in prompts[0]
    assert "what is 2+2" not in prompts[1]


async def test_an_image_mention_is_sent_as_an_image(agent_chat, tmp_path):
    (tmp_path / "shot.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 10)
    session = agent_chat()
    await session.submit("what is in #{image:shot.png}?")
    assert texts(session) == "echo: what is in `shot.png`? [image image/png 24 base64 chars]"
    await session.submit("and #{image:../outside.png}")
    assert session.view.sink.ops[-1]["status"] == "error" and "outside" in session.view.sink.ops[-1]["message"]


async def test_resuming_a_session_loads_it_on_the_same_agent(agent_chat):
    session = agent_chat()
    [earlier] = await session.list_sessions()
    first = session.client
    session.resume(earlier.id)
    await session.submit("hello")
    assert session.client is first and session.session_id == "old-1"  # one agent process, not two
    shown = [op["text"] for op in session.view.sink.ops if op["op"] == "show"]
    assert "earlier question" in shown


async def test_reading_a_missing_file_answers_resource_not_found(agent_chat, tmp_path):
    """Gemini CLI's write_file reads the file first and creates it only on ACP's -32002."""
    import json

    log = tmp_path / "wire.log"
    session = agent_chat(FAKE_AGENT_LOG=str(log))
    await session.submit("read new.txt")
    assert f"Read failed: Resource not found: {tmp_path / 'new.txt'}" in texts(session)
    errors = [m["error"] for m in map(json.loads, log.read_text().splitlines()) if "error" in m]
    assert errors == [
        {
            "code": -32002,
            "message": f"Resource not found: {tmp_path / 'new.txt'}",
            "data": {"path": str(tmp_path / "new.txt")},
        }
    ]
