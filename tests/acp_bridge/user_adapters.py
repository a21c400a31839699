"""Adapters a user could write, loaded by the tests as `tests.acp_bridge.user_adapters:Class`.

EchoAdapter runs one persistent child (ECHO_CHILD) that answers each line with the line
in capitals, or with the value of an environment variable for `env NAME`. It lists
sessions, so the bridge must advertise session/list for it.
ManagedEcho owns its processes (ADAPTER_MANAGED): one child per session, started at
session/new, whose lines and exit arrive through handle_adapter_message.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import Any

from codecompanion_py.acp_bridge.contract import (
    ADAPTER_MANAGED,
    LATER,
    BridgeAdapter,
    Failure,
    ProcessExited,
    ProcessOutput,
    Reaction,
)
from codecompanion_py.acp_bridge.messages import error_response, prompt_text, response, text_chunk

ECHO_CHILD = """
import os, sys
for line in sys.stdin:
    line = line.strip()
    if line.startswith('env '):
        print(os.environ.get(line[4:], '<unset>'), flush=True)
    elif line == 'die':
        sys.stderr.write('echo child: told to die\\n'); sys.exit(5)
    else:
        print(line.upper(), flush=True)
"""


@dataclass(frozen=True)
class EchoState:
    prompt_id: Any = None
    session: str = "echo-1"


class EchoAdapter(BridgeAdapter):
    name = "echo"
    title = "Echo"

    def init(self, opts: Any) -> EchoState:
        return EchoState()

    def command(self, opts: Any) -> list[str]:
        return [sys.executable, "-c", ECHO_CHILD, "fake_cli_echo"]

    def capabilities(self) -> dict[str, Any]:
        # "list" is stripped unless list_sessions is overridden (it is, here); "resume" is kept.
        return {"sessionCapabilities": {"resume": {}}}

    def config_options(self) -> list[dict[str, Any]]:
        return [
            {
                "id": "shout",
                "name": "Shout",
                "type": "select",
                "currentValue": "yes",
                "options": [{"value": "yes", "name": "Yes"}],
            }
        ]

    def env(self, opts: Any) -> dict[str, str]:
        return {"CLAUDECODE": "set-by-adapter-env", "ECHO_MARK": "from-env"}

    def list_sessions(self, params: dict[str, Any], state: EchoState) -> Reaction:
        return Reaction(
            state, reply=[{"sessionId": "old-echo", "cwd": params.get("cwd", "/"), "title": "An earlier echo"}]
        )

    def translate_outbound(self, message: dict[str, Any], state: EchoState) -> Any:
        method = message.get("method")
        if method == "session/new":
            return Reaction(state)  # the bridge makes up a session id
        if method == "session/prompt":
            text = prompt_text(message["params"]["prompt"])
            return Reaction(
                replace(state, prompt_id=message["id"], session=message["params"]["sessionId"]),
                write=text + "\n",
                reply=LATER,
            )
        if "id" in message and method:
            return Reaction(state, reply=Failure(f"no {method}"))
        return Reaction(state)

    def translate_inbound(self, line: str, state: EchoState) -> Any:
        if state.prompt_id is None:
            return Reaction(state)
        return Reaction(
            replace(state, prompt_id=None),
            messages=[text_chunk(state.session, line), response(state.prompt_id, {"stopReason": "end_turn"})],
        )


class ManagedEcho(BridgeAdapter):
    name = "managed-echo"
    title = "Managed echo"

    def init(self, opts: Any) -> dict[str, Any]:
        return {"processes": {}, "prompts": {}, "pgids": []}

    def command(self, opts: Any) -> Any:
        return ADAPTER_MANAGED

    def translate_outbound(self, message: dict[str, Any], state: dict[str, Any]) -> Any:
        method = message.get("method")
        if method == "session/new":
            session = f"managed-{len(state['processes']) + 1}"
            assert self.bridge is not None
            process = self.bridge.start_process([sys.executable, "-c", ECHO_CHILD, "fake_cli_managed"], tag=session)
            return Reaction(
                {**state, "processes": {**state["processes"], session: process}}, reply={"sessionId": session}
            )
        if method == "session/prompt":
            session = message["params"]["sessionId"]
            process = state["processes"].get(session)
            if process is None:
                return Reaction(state, reply=Failure(f"unknown session {session}"))
            process.write(prompt_text(message["params"]["prompt"]) + "\n")
            return Reaction({**state, "prompts": {**state["prompts"], session: message["id"]}}, reply=LATER)
        if "id" in message and method:
            return Reaction(state, reply=Failure(f"no {method}"))
        return Reaction(state)

    def translate_inbound(self, line: str, state: Any) -> Any:
        return Reaction(state)

    def handle_adapter_message(self, message: Any, state: dict[str, Any]) -> Any:
        session = message.process.tag
        prompts = dict(state["prompts"])
        prompt_id = prompts.pop(session, None)
        if isinstance(message, ProcessOutput) and prompt_id is not None:
            return Reaction(
                {**state, "prompts": prompts},
                messages=[text_chunk(session, message.line), response(prompt_id, {"stopReason": "end_turn"})],
            )
        if isinstance(message, ProcessExited):
            processes = {k: v for k, v in state["processes"].items() if k != session}
            answers = [error_response(prompt_id, message.description)] if prompt_id is not None else []
            return Reaction({**state, "processes": processes, "prompts": prompts}, messages=answers)
        return Reaction(state)
