"""Both kinds of chat implement the whole `Session` interface, and what one kind keeps (an
HTTP chat's settings and MCP servers, an agent's session) goes through it: nothing outside
`chat/factory.py` asks which kind a chat or an adapter is."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from codecompanion_py.adapters import extend
from codecompanion_py.adapters.acp import AcpAdapter
from codecompanion_py.chat.acp.session import AcpChatSession
from codecompanion_py.chat.history import Record
from codecompanion_py.chat.protocol import PromptSetup, SavedState, Session
from codecompanion_py.chat.session import ChatSession
from codecompanion_py.messages import Message
from codecompanion_py.tools.workspace import Workspace

from .test_acp_session import FAKE_AGENT, FakeEditor
from .test_session import Recorder

PACKAGE = Path(__file__).parents[2] / "codecompanion_py"


def members(cls: type) -> set[str]:
    return {name for name in vars(cls) if not name.startswith("_")} | set(getattr(cls, "__annotations__", {}))


def http_chat() -> ChatSession:
    adapter = extend("openai_compatible", {"env": {"url": "http://127.0.0.1:9"}})
    return ChatSession(1, adapter, client=lambda: None, sink=Recorder())  # type: ignore[arg-type]


def agent_chat(tmp_path) -> AcpChatSession:
    adapter = AcpAdapter(name="fake", formatted_name="Fake", commands={"default": [sys.executable, FAKE_AGENT]})
    return AcpChatSession(2, adapter, sink=Recorder(), editor=FakeEditor(), workspace=Workspace(tmp_path))


def test_each_kind_has_every_member_of_the_interface(tmp_path):
    wanted = members(Session) - {"chat_id", "view", "editor", "workspace", "approvals", "history"}
    for session in (http_chat(), agent_chat(tmp_path)):
        missing = [name for name in sorted(wanted) if not hasattr(session, name)]
        assert missing == [], f"{type(session).__name__} lacks {missing}"


def test_what_a_chat_keeps_is_saved_and_restored_through_the_interface(tmp_path):
    chat, agent = http_chat(), agent_chat(tmp_path)
    chat.settings = {"temperature": 0.5}
    assert chat.saved_state() == SavedState(settings={"temperature": 0.5})
    assert agent.saved_state() == SavedState()
    saved = Record(id="a", title="t", adapter=chat.adapter.name, session_id="s-1", settings={"temperature": 0.1})
    fresh, other, fresh_agent = http_chat(), http_chat(), agent_chat(tmp_path)
    fresh.restore(saved)
    other.restore(Record(id="a", title="t", adapter="another", settings={"temperature": 0.1}))
    fresh_agent.restore(saved)
    assert fresh.settings == {"temperature": 0.1}
    assert other.settings == {}  # another adapter has another schema
    assert fresh_agent.saved_session == "s-1"


def test_a_library_prompt_and_mcp_servers_change_an_http_chat_and_leave_an_agent_alone(tmp_path):
    chat, agent = http_chat(), agent_chat(tmp_path)
    setup = PromptSetup(system_prompts=("Be brief.", "  "), ignore_system_prompt=True, tools=())
    for session in (chat, agent):
        session.use_prompt(setup)
        session.attach_mcp("files")
    assert chat.system_prompt_on is False
    assert chat.history[-1] == Message.of("system", "Be brief.")
    assert chat.mcp_tools.names == ["files"]
    chat.detach_mcp("files")
    assert chat.mcp_tools.names == []
    assert [m for m in agent.history if m.role == "system"] == []
    assert chat.title_adapter() is chat.adapter and agent.title_adapter() is None


def test_nothing_asks_which_kind_of_session_or_adapter_a_chat_is():
    kinds = re.compile(r"isinstance\([^)]*\b(ChatSession|AcpChatSession)\b")
    for path in PACKAGE.rglob("*.py"):
        assert not kinds.search(path.read_text()), f"{path} asks which kind of session it holds"
    askers = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py") if ".kind(" in p.read_text()}
    # chat/factory.py for the chats; the CLI and the adapters' own registry besides
    assert {a for a in askers if a.startswith("chat/") or a.endswith("_calls.py") or a == "engine.py"} == {
        "chat/factory.py"
    }
