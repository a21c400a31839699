"""The bridge in-process (its stdio replaced by a stream pair), and the contract's helpers:
initialize built from the adapter, session/list and session/fork advertised only when
implemented, id mapping for requests the adapter sends the client, errors, secrets."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest

from codecompanion_py.acp_bridge import load_adapter
from codecompanion_py.acp_bridge.contract import LATER, BridgeAdapter, Failure, Reaction, overrides
from codecompanion_py.acp_bridge.environment import SESSION_SECRETS, child_environment
from codecompanion_py.acp_bridge.messages import prompt_text, request, response, session_update, text_chunk
from codecompanion_py.acp_bridge.server import Bridge
from codecompanion_py.errors import ConfigError
from codecompanion_py.processes import group_alive

from .user_adapters import ECHO_CHILD, EchoAdapter


class Wire:
    """The client's end of an in-process bridge."""

    def __init__(self) -> None:
        self.reader = asyncio.StreamReader()
        self.received: list[dict[str, Any]] = []
        self._arrived = asyncio.Event()

    # the bridge writes here
    def write(self, data: bytes) -> None:
        for line in data.splitlines():
            self.received.append(json.loads(line))
        self._arrived.set()

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None

    def send(self, message: dict[str, Any]) -> None:
        self.reader.feed_data(json.dumps(message).encode() + b"\n")

    async def wait_for(self, predicate: Any, timeout: float = 5.0) -> dict[str, Any]:
        async def scan() -> dict[str, Any]:
            while True:
                for message in self.received:
                    if predicate(message):
                        return message
                self._arrived.clear()
                await self._arrived.wait()

        return await asyncio.wait_for(scan(), timeout)

    async def call(self, request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params else {})})
        return await self.wait_for(lambda m: m.get("id") == request_id and "method" not in m)


@pytest.fixture
async def serve():
    running: list[tuple[Bridge, Wire, asyncio.Task[int]]] = []

    async def start(adapter: BridgeAdapter, opts: dict[str, Any] | None = None) -> tuple[Bridge, Wire]:
        wire = Wire()
        bridge = Bridge(adapter, opts or {}, wire.reader, wire)
        task = asyncio.ensure_future(bridge.serve(handle_signals=False))
        running.append((bridge, wire, task))
        return bridge, wire

    yield start
    for bridge, wire, task in running:
        wire.reader.feed_eof()
        assert await asyncio.wait_for(task, 10) == 0
        if bridge.native is not None:
            assert not group_alive(bridge.native.pgid), "native process left running"


class Bare(BridgeAdapter):
    """Claims list and fork in capabilities() but implements neither."""

    name = "bare"

    def init(self, opts: Any) -> Any:
        return {"seen": []}

    def command(self, opts: Any) -> list[str]:
        return ["true"]

    def capabilities(self) -> dict[str, Any]:
        return {"loadSession": False, "sessionCapabilities": {"list": {}, "fork": {}}}

    def auth_methods(self, opts: Any) -> list[dict[str, Any]]:
        return [{"id": "api-key", "name": "API key"}] if opts.get("auth") else []

    def translate_outbound(self, message: dict[str, Any], state: Any) -> Any:
        state = {"seen": [*state["seen"], message]}
        method = message.get("method")
        if method == "boom":
            raise RuntimeError("adapter bug")
        if method == "wrong":
            return "not a result"
        if method == "refuse":
            return Reaction(state, reply=Failure("not in this mode", -32602))
        if method == "session/new":
            return Reaction(state, reply={"sessionId": "bare-1", "modes": {"currentModeId": "b", "availableModes": []}})
        return Reaction(state)

    def translate_inbound(self, line: str, state: Any) -> Any:
        return Reaction(state)


class Forks(Bare):
    def fork_session(self, params: dict[str, Any], state: Any) -> Any:
        if params.get("sessionId") == "missing":
            return Reaction(state, reply=Failure("no such session", -32002))
        return Reaction(state, reply={"sessionId": params["sessionId"] + "-fork"})

    def modes(self) -> list[dict[str, Any]]:
        return [{"id": "a", "name": "A"}, {"id": "b", "name": "B"}]


async def test_initialize_is_built_from_the_adapter_and_advertises_only_what_it_implements(serve):
    bare, wire = await serve(Bare(), {"auth": True})
    result = (await wire.call(0, "initialize", {"protocolVersion": 1}))["result"]
    assert bare.state["seen"] == []  # initialize is the bridge's own
    assert result["protocolVersion"] == 1 and result["agentInfo"]["name"] == "bare"
    assert result["authMethods"] == [{"id": "api-key", "name": "API key"}]
    assert result["agentCapabilities"] == {"loadSession": False}  # list and fork were claimed, not implemented

    _, wire = await serve(EchoAdapter())
    capabilities = (await wire.call(1, "initialize", {"protocolVersion": 1}))["result"]["agentCapabilities"]
    assert capabilities["sessionCapabilities"] == {"resume": {}, "list": {}}

    _, wire = await serve(Forks())
    capabilities = (await wire.call(2, "initialize", {"protocolVersion": 1}))["result"]["agentCapabilities"]
    assert capabilities["sessionCapabilities"] == {"fork": {}}
    assert overrides(Forks(), "fork_session") and not overrides(Forks(), "list_sessions")


async def test_session_list_and_fork_go_to_their_callbacks(serve):
    _, wire = await serve(EchoAdapter())
    listed = await wire.call(1, "session/list", {"cwd": "/w"})
    assert listed["result"] == {"sessions": [{"sessionId": "old-echo", "cwd": "/w", "title": "An earlier echo"}]}
    bridge, wire = await serve(Forks())
    forked = (await wire.call(2, "session/fork", {"sessionId": "s1", "cwd": "/"}))["result"]
    assert forked["sessionId"] == "s1-fork" and forked["modes"]["currentModeId"] == "a"
    missing = await wire.call(3, "session/fork", {"sessionId": "missing", "cwd": "/"})
    assert missing["error"] == {"code": -32002, "message": "no such session"}
    unlisted = await wire.call(4, "session/list", {})
    assert unlisted["result"] == {}  # not implemented: it went to translate_outbound, which skipped it
    assert bridge.state["seen"][-1]["method"] == "session/list"


async def test_session_setup_answers_carry_modes_and_config_options(serve):
    _, wire = await serve(EchoAdapter())
    made = (await wire.call(1, "session/new", {"cwd": "/", "mcpServers": []}))["result"]
    assert made["sessionId"].startswith("session-")  # no reply: the bridge made one up
    assert made["configOptions"][0]["id"] == "shout"
    _, wire = await serve(Forks())
    made = (await wire.call(2, "session/new", {"cwd": "/", "mcpServers": []}))["result"]
    assert made["sessionId"] == "bare-1" and made["modes"] == {"currentModeId": "b", "availableModes": []}


async def test_adapter_errors_and_bugs_become_json_rpc_errors(serve):
    bridge, wire = await serve(Bare())
    assert (await wire.call(1, "refuse"))["error"] == {"code": -32602, "message": "not in this mode"}
    boom = (await wire.call(2, "boom"))["error"]
    assert boom["code"] == -32603 and "adapter bug" in boom["message"]
    wrong = (await wire.call(3, "wrong"))["error"]
    assert "translate_outbound returned str" in wrong["message"]
    wire.send({"jsonrpc": "2.0", "method": "boom"})  # a notification: logged, nothing sent back
    wire.reader.feed_data(b"not json\n")
    assert (await wire.call(4, "other"))["result"] == {}
    ids = [m["id"] for m in bridge.state["seen"] if "id" in m]
    assert len(set(ids)) == len(ids)  # the adapter sees ids of the bridge's own, never reused


class Asker(BridgeAdapter):
    """Asks the client for permission on every prompt; answers the prompt with the outcome."""

    name = "asker"

    def init(self, opts: Any) -> Any:
        return {"prompts": {}, "answers": []}

    def command(self, opts: Any) -> list[str]:
        return ["true"]

    def translate_outbound(self, message: dict[str, Any], state: Any) -> Any:
        if message.get("method") == "session/prompt":
            question = f"q-{message['id']}"
            ask = request(
                question,
                "session/request_permission",
                {
                    "sessionId": "s",
                    "toolCall": {"toolCallId": "t"},
                    "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}],
                },
            )
            return Reaction(
                {**state, "prompts": {**state["prompts"], question: message["id"]}},
                messages=[text_chunk("s", "asking"), ask],
                reply=LATER,
            )
        if "method" not in message:  # the client's answer
            prompt_id = state["prompts"].get(message["id"])
            outcome = message.get("result", {}).get("outcome") if "result" in message else message.get("error")
            return Reaction(
                {**state, "answers": [*state["answers"], message]},
                messages=[response(prompt_id, {"stopReason": "end_turn", "_meta": {"outcome": outcome}})],
            )
        return Reaction(state)

    def translate_inbound(self, line: str, state: Any) -> Any:
        return Reaction(state)


async def test_requests_the_adapter_sends_reach_the_client_and_their_answers_come_back(serve):
    bridge, wire = await serve(Asker())
    wire.send({"jsonrpc": "2.0", "id": "p1", "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}})
    question = await wire.wait_for(lambda m: m.get("method") == "session/request_permission")
    assert question["id"] != "q-1"  # the bridge's connection numbers its own requests
    assert wire.received.index(question) > wire.received.index(
        next(m for m in wire.received if m.get("method") == "session/update")
    )
    wire.send(
        {"jsonrpc": "2.0", "id": question["id"], "result": {"outcome": {"outcome": "selected", "optionId": "ok"}}}
    )
    answer = await wire.wait_for(lambda m: m.get("id") == "p1")
    assert answer["result"] == {
        "stopReason": "end_turn",
        "_meta": {"outcome": {"outcome": "selected", "optionId": "ok"}},
    }
    assert bridge.state["answers"][0]["id"] == "q-1"  # mapped back to the adapter's own id

    wire.send({"jsonrpc": "2.0", "id": "p2", "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}})
    question = await wire.wait_for(lambda m: m.get("method") == "session/request_permission" and m is not question)
    wire.send({"jsonrpc": "2.0", "id": question["id"], "error": {"code": -32603, "message": "no UI"}})
    answer = await wire.wait_for(lambda m: m.get("id") == "p2")
    assert answer["result"]["_meta"]["outcome"] == {"code": -32603, "message": "no UI"}


class Composer(BridgeAdapter):
    """One outcome with several parts: messages, a write and a reply; a persistent echo child."""

    name = "composer"

    def init(self, opts: Any) -> Any:
        return {"prompt": None, "lines": []}

    def command(self, opts: Any) -> list[str]:
        return [sys.executable, "-c", ECHO_CHILD, "fake_cli_composer"]

    def translate_outbound(self, message: dict[str, Any], state: Any) -> Reaction:
        method = message.get("method")
        if method == "session/new":  # an update that must reach the client before the answer
            commands = session_update("c-1", "available_commands_update", availableCommands=[])
            return Reaction(state, messages=[commands], reply={"sessionId": "c-1"})
        if method == "session/prompt":
            words = prompt_text(message["params"]["prompt"])
            started = text_chunk("c-1", "started")
            return Reaction({**state, "prompt": message["id"]}, messages=[started], write=words + "\n", reply=LATER)
        return Reaction(state)

    def translate_inbound(self, line: str, state: Any) -> Reaction:
        state = {**state, "lines": [*state["lines"], line]}
        if line == "WRONG":  # a reply answers no native line: logged, dropped with its state
            return Reaction(state, reply={})
        return Reaction({**state, "prompt": None}, messages=[response(state["prompt"], {"stopReason": "end_turn"})])

    def list_sessions(self, params: dict[str, Any], state: Any) -> Reaction:
        return Reaction(state, messages=[text_chunk("c-1", "no")])  # no reply, and messages it cannot have


async def test_an_outcome_emits_its_messages_then_writes_then_replies(serve, caplog):
    bridge, wire = await serve(Composer())
    made = await wire.call(1, "session/new", {"cwd": "/", "mcpServers": []})
    assert made["result"] == {"sessionId": "c-1"}
    assert wire.received[0]["params"]["update"]["sessionUpdate"] == "available_commands_update"
    assert wire.received[1] is made

    answered = await wire.call(2, "session/prompt", {"sessionId": "c-1", "prompt": [{"type": "text", "text": "hi"}]})
    assert answered["result"] == {"stopReason": "end_turn"}  # from the child's line, not at once
    assert wire.received[2]["params"]["update"]["content"]["text"] == "started"
    assert bridge.state["lines"] == ["HI"]

    wrong = {"sessionId": "c-1", "prompt": [{"type": "text", "text": "wrong"}]}
    wire.send({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": wrong})  # never answered
    for _ in range(500):
        if "translate_inbound returned an outcome with reply, which it cannot have" in caplog.text:
            break
        await asyncio.sleep(0.01)
    else:
        raise AssertionError(f"not logged: {caplog.text}")
    assert bridge.state["lines"] == ["HI"]  # the unfit outcome's state was dropped
    listed = await wire.call(4, "session/list", {})
    assert "list_sessions returned an outcome with messages, which it cannot have" in listed["error"]["message"]


async def test_a_missing_native_command_is_an_error_with_the_install_hint(serve, tmp_path):
    adapter = load_adapter("claude")
    _, wire = await serve(adapter, {"executable": str(tmp_path / "no-such-claude")})
    await wire.call(1, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
    failed = await wire.call(2, "session/prompt", {"sessionId": "x", "prompt": [{"type": "text", "text": "hi"}]})
    assert "was not found on PATH; npm install -g @anthropic-ai/claude-code" in failed["error"]["message"]


def test_child_environment_drops_session_secrets_before_the_adapter_env():
    base = {
        "PATH": "/usr/bin",
        "HOME": "/h",
        "CLAUDECODE": "1",
        "CLAUDE_CODE_SESSION_ACCESS_TOKEN": "sekrit",
        "CLAUDE_CODE_SSE_PORT": "4242",
        "CODEX_SANDBOX": "seatbelt",
        "CODEX_THREAD_ID": "t",
        "ANTHROPIC_API_KEY": "sk-ant-user",
        "OPENAI_API_KEY": "sk-user",
        "CODEX_HOME": "/h/.codex",
    }

    class WithEnv(Bare):
        def env(self, opts: Any) -> dict[str, Any]:
            return {"CLAUDECODE": "mine", "EXTRA": "adapter", "HOME": None}

    env = child_environment(WithEnv(), {"env": {"EXTRA": "option"}}, base)
    assert "CLAUDE_CODE_SESSION_ACCESS_TOKEN" not in env and "CLAUDE_CODE_SSE_PORT" not in env
    assert "CODEX_SANDBOX" not in env and "CODEX_THREAD_ID" not in env
    assert env["CLAUDECODE"] == "mine"  # env() is applied after the secrets are gone
    assert env["EXTRA"] == "option" and "HOME" not in env  # options win; None unsets
    assert env["ANTHROPIC_API_KEY"] == "sk-ant-user" and env["OPENAI_API_KEY"] == "sk-user"
    assert env["CODEX_HOME"] == "/h/.codex" and env["PATH"] == "/usr/bin"
    assert {"CLAUDE_CODE_SESSION_ACCESS_TOKEN", "CLAUDECODE", "CODEX_SANDBOX_NETWORK_DISABLED"} <= SESSION_SECRETS


def test_prompt_text_and_adapter_loading():
    assert (
        prompt_text(
            [
                {"type": "text", "text": "Fix"},
                {"type": "resource_link", "uri": "file:///a"},
                {"type": "resource", "resource": {"uri": "file:///b", "text": "B"}},
                "junk",
            ]
        )
        == 'Fix\n@file:///a\n<context ref="file:///b">\nB\n</context>'
    )
    assert load_adapter("claude").name == "claude-stream-json" and load_adapter("codex").name == "codex-exec"
    assert load_adapter("tests.acp_bridge.user_adapters:EchoAdapter").name == "echo"
    for bad in ("gemini", "tests.acp_bridge.user_adapters:ECHO_CHILD", "no.such.module:X"):
        with pytest.raises(ConfigError):
            load_adapter(bad)
