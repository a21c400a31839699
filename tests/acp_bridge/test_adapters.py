"""The two built-in adapters' translations, fed with recorded native lines (fixtures/*.jsonl,
in the shapes captured from Claude Code 2.1.83 and Codex CLI 0.169.0)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codecompanion_py.acp.jsonrpc import INVALID_PARAMS
from codecompanion_py.acp_bridge.claude_stream_json import ClaudeStreamJsonAdapter
from codecompanion_py.acp_bridge.codex_exec import ARG_LIMIT, CodexExecAdapter, strip_shell
from codecompanion_py.acp_bridge.contract import LATER, Failure, Reaction
from codecompanion_py.acp_bridge.native import to_bytes

FIXTURES = Path(__file__).with_name("fixtures")


def lines(name: str) -> list[str]:
    return (FIXTURES / name).read_text().splitlines()


def feed(adapter: Any, state: Any, native_lines: list[str]) -> tuple[list[dict], list[dict], Any]:
    """Every line through translate_inbound: (messages emitted, JSON written back, state)."""
    emitted: list[dict] = []
    written: list[dict] = []
    for line in native_lines:
        result = adapter.translate_inbound(line, state)
        assert result.parts() <= {"messages", "write"}
        state = result.state
        emitted += result.messages
        if result.write is not None:
            written.append(json.loads(to_bytes(result.write)))
    return emitted, written, state


def updates(messages: list[dict], kind: str | None = None) -> list[dict]:
    found = [m["params"]["update"] for m in messages if m.get("method") == "session/update"]
    return [u for u in found if kind is None or u["sessionUpdate"] == kind]


def text(messages: list[dict], kind: str = "agent_message_chunk") -> str:
    return "".join(u["content"]["text"] for u in updates(messages, kind))


def written(result: Reaction) -> dict:
    """What the outcome writes to the native process, which is all it does."""
    assert result.parts() == {"write"}
    return json.loads(to_bytes(result.write))


def refusal(result: Reaction) -> Failure:
    """The JSON-RPC error the outcome answers its request with."""
    assert isinstance(result.reply, Failure) and result.parts() == {"reply"}
    return result.reply


PROMPT = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "session/prompt",
    "params": {"sessionId": "S", "prompt": [{"type": "text", "text": "Say hello"}]},
}


# --- Claude Code stream-json --------------------------------------------------------------


def tool_use_line(message_id: str, tool_use_id: str, name: str, tool_input: dict) -> str:
    """An assistant line of Claude's that calls one tool."""
    call = {"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}
    return json.dumps({"type": "assistant", "message": {"id": message_id, "content": [call]}})


def claude(**opts: Any) -> tuple[ClaudeStreamJsonAdapter, Any]:
    adapter = ClaudeStreamJsonAdapter()
    return adapter, adapter.init(opts)


def prompted(adapter: ClaudeStreamJsonAdapter, state: Any) -> Any:
    result = adapter.translate_outbound(PROMPT, state)
    assert result.write is not None and result.reply is LATER
    return result.state


def test_claude_command_line():
    adapter = ClaudeStreamJsonAdapter()
    argv = adapter.command({"executable": "node /opt/cli.js", "model": "opus", "extra_args": ["--add-dir", "/x"]})
    assert argv[:3] == ["node", "/opt/cli.js", "-p"]
    for flag in ("--output-format", "--input-format", "--verbose", "--include-partial-messages"):
        assert flag in argv
    assert argv[argv.index("--permission-prompt-tool") + 1] == "stdio"
    assert argv[argv.index("--model") + 1] == "opus" and argv[-2:] == ["--add-dir", "/x"]
    assert "--include-partial-messages" not in adapter.command({"partial_messages": False})


def test_claude_prompt_is_one_user_line():
    adapter, state = claude()
    result = adapter.translate_outbound(
        {
            **PROMPT,
            "params": {
                "sessionId": "S",
                "prompt": [
                    {"type": "text", "text": "Look at"},
                    {"type": "resource_link", "uri": "file:///a.py", "name": "a.py"},
                    {"type": "resource", "resource": {"uri": "file:///b.py", "text": "print(1)"}},
                    {"type": "image", "data": "iVBOR", "mimeType": "image/png"},
                ],
            },
        },
        state,
    )
    assert result.parts() == {"write", "reply"} and result.reply is LATER  # answered by the turn's result
    assert result.write is not None and to_bytes(result.write).endswith(b"\n")
    line = json.loads(to_bytes(result.write))
    assert line["type"] == "user" and line["message"]["role"] == "user"
    content = line["message"]["content"]
    assert content[0] == {"type": "text", "text": "Look at"} and content[1]["text"] == "@file:///a.py"
    assert 'ref="file:///b.py"' in content[2]["text"] and "print(1)" in content[2]["text"]
    assert content[3]["source"] == {"type": "base64", "media_type": "image/png", "data": "iVBOR"}
    again = adapter.translate_outbound(PROMPT, result.state)
    assert "already running" in refusal(again).reason


def test_claude_streamed_deltas_are_not_emitted_twice():
    adapter, state = claude()
    state = prompted(adapter, state)
    emitted, _, state = feed(adapter, state, lines("claude_partial.jsonl"))
    assert text(emitted) == "Hello from the fake LLM! "
    assert text(emitted, "agent_thought_chunk") == "The user says hello."
    commands = updates(emitted, "available_commands_update")[0]["availableCommands"]
    assert [c["name"] for c in commands] == ["compact", "context", "review"]
    assert all(m["params"]["sessionId"] == "S" for m in emitted if "params" in m)
    answer = emitted[-1]
    assert answer["id"] == 7 and answer["result"]["stopReason"] == "end_turn"
    assert answer["result"]["usage"] == {
        "inputTokens": 12,
        "outputTokens": 5,
        "cachedReadTokens": 0,
        "cachedWriteTokens": 0,
        "totalTokens": 17,
    }
    assert state.prompt_id is None and state.cli_session_id == "682c3f2e-5d1b-4c2e-9a77-0d1f0e8b7a10"


def test_claude_whole_messages_without_partial_stream():
    adapter, state = claude(partial_messages=False)
    state = prompted(adapter, state)
    without_deltas = [line for line in lines("claude_partial.jsonl") if '"stream_event"' not in line]
    emitted, _, _ = feed(adapter, state, without_deltas)
    assert text(emitted) == "Hello from the fake LLM! "
    assert text(emitted, "agent_thought_chunk") == "The user says hello."


def test_claude_tool_call_permission_and_result():
    adapter, state = claude()
    state = prompted(adapter, state)
    emitted, _, state = feed(adapter, state, lines("claude_tool.jsonl")[:3])
    call = updates(emitted, "tool_call")[0]
    assert call["toolCallId"] == "toolu_1" and call["kind"] == "execute" and call["status"] == "pending"
    assert call["title"] == "`touch created_by_tool.txt`"
    ask = emitted[-1]
    assert ask["method"] == "session/request_permission" and ask["id"] is not None
    assert ask["params"]["toolCall"]["toolCallId"] == "toolu_1" and ask["params"]["sessionId"] == "S"
    assert [o["kind"] for o in ask["params"]["options"]] == ["allow_once", "allow_always", "reject_once"]

    chosen = adapter.translate_outbound(
        {"jsonrpc": "2.0", "id": ask["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow_always"}}},
        state,
    )
    reply = written(chosen)
    assert reply["type"] == "control_response"
    assert reply["response"]["request_id"] == "0b7d6c2e-1f3a-4e5b-8c9d-perm"
    decision = reply["response"]["response"]
    assert decision["behavior"] == "allow" and decision["updatedInput"]["command"] == "touch created_by_tool.txt"
    assert decision["updatedPermissions"][0]["type"] == "addRules"
    state = chosen.state
    assert not state.permissions
    assert adapter.translate_outbound({"jsonrpc": "2.0", "id": ask["id"], "result": {}}, state) == Reaction(state)

    emitted, _, state = feed(adapter, state, lines("claude_tool.jsonl")[3:])
    done = updates(emitted, "tool_call_update")[0]
    assert done["toolCallId"] == "toolu_1" and done["status"] == "completed"
    assert done["content"][0]["content"]["text"] == "(Bash completed with no output)"
    assert text(emitted) == "Hello from the fake LLM! "
    assert emitted[-1]["result"]["usage"] == {
        "inputTokens": 60,
        "outputTokens": 14,
        "cachedReadTokens": 30,
        "cachedWriteTokens": 10,
        "totalTokens": 114,
    }


def test_claude_rejected_or_cancelled_permission_is_a_deny():
    adapter, state = claude()
    state = prompted(adapter, state)
    emitted, _, state = feed(adapter, state, lines("claude_tool.jsonl")[:3])
    ask_id = emitted[-1]["id"]
    rejected = adapter.translate_outbound(
        {"id": ask_id, "result": {"outcome": {"outcome": "selected", "optionId": "reject"}}}, state
    )
    assert written(rejected)["response"]["response"]["behavior"] == "deny"
    assert "interrupt" not in written(rejected)["response"]["response"]
    cancelled = adapter.translate_outbound({"id": ask_id, "result": {"outcome": {"outcome": "cancelled"}}}, state)
    assert written(cancelled)["response"]["response"] == {
        "behavior": "deny",
        "message": "The user cancelled the turn.",
        "interrupt": True,
    }
    errored = adapter.translate_outbound({"id": ask_id, "error": {"code": -32603, "message": "gone"}}, state)
    assert written(errored)["response"]["response"]["behavior"] == "deny"


def test_claude_edit_tool_carries_a_diff_and_its_location():
    adapter, state = claude()
    state = prompted(adapter, state)
    line = tool_use_line("m", "toolu_e", "Edit", {"file_path": "/p/a.py", "old_string": "x = 1", "new_string": "x = 2"})
    call = updates(feed(adapter, state, [line])[0], "tool_call")[0]
    assert call["kind"] == "edit" and call["locations"] == [{"path": "/p/a.py"}]
    assert call["content"] == [{"type": "diff", "path": "/p/a.py", "oldText": "x = 1", "newText": "x = 2"}]


def test_claude_todo_write_is_a_plan_and_subagent_text_stays_out():
    adapter, state = claude()
    state = prompted(adapter, state)
    todos = [
        {"content": "Read", "status": "completed", "activeForm": "Reading"},
        {"content": "Fix", "status": "in_progress", "activeForm": "Fixing"},
    ]
    todo = tool_use_line("m1", "toolu_t", "TodoWrite", {"todos": todos})
    result = json.dumps(
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_t", "content": "ok"}]}}
    )
    nested = json.dumps(
        {
            "type": "assistant",
            "parent_tool_use_id": "toolu_task",
            "message": {
                "id": "m2",
                "content": [
                    {"type": "text", "text": "subagent talk"},
                    {"type": "tool_use", "id": "toolu_n", "name": "Read", "input": {"file_path": "/p/b.py"}},
                ],
            },
        }
    )
    emitted, _, _ = feed(adapter, state, [todo, result, nested])
    plan = updates(emitted, "plan")[0]["entries"]
    assert [(e["content"], e["status"]) for e in plan] == [("Read", "completed"), ("Fix", "in_progress")]
    assert not updates(emitted, "tool_call_update")  # the TodoWrite result is the plan already
    assert text(emitted) == ""
    assert [c["toolCallId"] for c in updates(emitted, "tool_call")] == ["toolu_n"]


def test_claude_cancel_interrupts_and_the_turn_ends_cancelled():
    adapter, state = claude()
    nothing = adapter.translate_outbound({"method": "session/cancel", "params": {"sessionId": "S"}}, state)
    assert nothing == Reaction(state)  # nothing running
    state = prompted(adapter, state)
    cancel = adapter.translate_outbound(
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "S"}}, state
    )
    interrupt = written(cancel)
    assert interrupt["type"] == "control_request" and interrupt["request"] == {"subtype": "interrupt"}
    late = json.dumps(
        {
            "type": "stream_event",
            "event": {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "late"}},
        }
    )
    ended = json.dumps({"type": "result", "subtype": "error_during_execution", "is_error": True, "session_id": "x"})
    emitted, _, state = feed(adapter, cancel.state, [late, ended])
    assert text(emitted) == ""
    assert emitted == [{"jsonrpc": "2.0", "id": 7, "result": {"stopReason": "cancelled"}}]
    assert state.prompt_id is None and not state.cancelling


def test_claude_error_results_become_json_rpc_errors():
    adapter, state = claude()
    state = prompted(adapter, state)
    failed = json.dumps(
        {"type": "result", "subtype": "success", "is_error": True, "result": "Invalid API key · Please run /login"}
    )
    emitted, _, state = feed(adapter, state, [failed])
    assert emitted[0]["id"] == 7 and "Invalid API key" in emitted[0]["error"]["message"]
    state = prompted(adapter, state)
    limited = json.dumps({"type": "result", "subtype": "error_max_turns", "is_error": False})
    assert feed(adapter, state, [limited])[0][0]["result"]["stopReason"] == "max_turn_requests"


def test_claude_junk_is_skipped_and_unknown_control_requests_are_refused():
    adapter, state = claude()
    state = prompted(adapter, state)
    emitted, back, _ = feed(
        adapter,
        state,
        [
            "not json",
            "[1,2]",
            '{"type":"keep_alive"}',
            "",
            '{"type":"mystery"}',
            '{"type":"stream_event","event":"odd"}',
            '{"type":"control_request","request_id":"h1","request":{"subtype":"hook_callback"}}',
        ],
    )
    assert emitted == []
    assert back == [
        {
            "type": "control_response",
            "response": {
                "subtype": "error",
                "request_id": "h1",
                "error": "unsupported control request 'hook_callback'",
            },
        }
    ]


def test_claude_line_whose_type_is_not_a_string_is_skipped():
    # an unhashable `type` used to raise TypeError in the handler lookup
    adapter, state = claude()
    state = prompted(adapter, state)
    for line in ('{"type":[]}', '{"type":{"a":1}}', '{"type":null}', '{"type":3}'):
        assert adapter.translate_inbound(line, state) == Reaction(state)


def test_claude_mode_before_and_after_the_process_starts():
    adapter, state = claude()
    early = adapter.translate_outbound(
        {"id": 1, "method": "session/set_mode", "params": {"sessionId": "S", "modeId": "plan"}}, state
    )
    assert early.reply == {} and early.parts() == {"reply"}
    connected = adapter.post_connect(early.state)
    assert written(connected)["request"] == {"subtype": "set_permission_mode", "mode": "plan"}
    late = adapter.translate_outbound(
        {"id": 2, "method": "session/set_mode", "params": {"sessionId": "S", "modeId": "acceptEdits"}}, connected.state
    )
    assert late.reply == {} and late.parts() == {"reply", "write"}  # answered now, written too
    assert late.write is not None and json.loads(to_bytes(late.write))["request"]["mode"] == "acceptEdits"
    refusal(adapter.translate_outbound({"id": 3, "method": "session/set_mode", "params": {"modeId": "yolo"}}, state))
    assert adapter.post_connect(state).parts() == set()


def test_claude_unknown_requests_are_method_not_found():
    adapter, state = claude()
    result = adapter.translate_outbound({"id": 4, "method": "session/load", "params": {}}, state)
    assert refusal(result).code == -32601


# --- Codex exec --json --------------------------------------------------------------------


def codex(**opts: Any) -> tuple[CodexExecAdapter, Any, str]:
    adapter = CodexExecAdapter()
    state = adapter.init(opts)
    made = adapter.translate_outbound({"id": 1, "method": "session/new", "params": {"cwd": "/scratch/work"}}, state)
    assert made.parts() == {"reply"}
    return adapter, made.state, made.reply["sessionId"]


def codex_prompt(
    adapter: CodexExecAdapter, state: Any, session: str, words: str = "Say hello", request_id: int = 7
) -> Reaction:
    result = adapter.translate_outbound(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": words}]},
        },
        state,
    )
    assert result.run is not None and result.reply is LATER  # the run answers it
    return result


def test_codex_is_one_shot_with_the_captured_command_line():
    adapter, state, session = codex(executable=["/opt/codex"], model="gpt-5")
    assert adapter.command({}).value == "one_shot"
    argv, stdin = adapter.argv(state, state.sessions[session], "Say hello")
    assert argv == ["/opt/codex", "exec", "--json", "--skip-git-repo-check", "--model", "gpt-5", "Say hello"]
    assert stdin is None
    long_argv, long_stdin = adapter.argv(state, state.sessions[session], "x" * (ARG_LIMIT + 1))
    assert long_argv[-1] == "-" and long_stdin == b"x" * (ARG_LIMIT + 1)


def test_codex_turn_maps_every_item():
    adapter, state, session = codex()
    state = codex_prompt(adapter, state, session).state
    emitted, _, state = feed(adapter, state, lines("codex_turn.jsonl"))
    assert state.sessions[session].thread_id == "01a20278-77af-7121-8c7a-b2458fa6ef36"
    thoughts = [u["content"]["text"] for u in updates(emitted, "agent_thought_chunk")]
    assert thoughts[0].startswith("Warning: Model metadata") and thoughts[1] == "**Creating the file** with touch"
    calls = updates(emitted, "tool_call")
    assert [(c["toolCallId"], c["kind"], c["status"]) for c in calls] == [
        ("item_1", "execute", "in_progress"),
        ("item_5", "edit", "completed"),
        ("item_6", "execute", "in_progress"),
    ]
    assert calls[0]["title"] == "`touch created_by_tool.txt`"
    assert calls[1]["locations"] == [{"path": "/scratch/work/notes.txt"}, {"path": "/scratch/work/new.txt"}]
    assert "update /scratch/work/notes.txt" in calls[1]["content"][0]["content"]["text"]
    done = updates(emitted, "tool_call_update")
    assert [(u["toolCallId"], u["status"]) for u in done] == [("item_1", "completed"), ("item_6", "failed")]
    assert (
        done[1]["rawOutput"] == {"exit_code": 1, "output": "oops\n"}
        and "oops" in done[1]["content"][0]["content"]["text"]
    )
    plan = updates(emitted, "plan")[0]["entries"]
    assert [(e["content"], e["status"]) for e in plan] == [("Create the file", "completed"), ("Say hello", "pending")]
    assert text(emitted) == "Hello from the fake LLM!"
    assert emitted[-1] == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {
            "stopReason": "end_turn",
            "usage": {
                "inputTokens": 20,
                "outputTokens": 10,
                "cachedReadTokens": 0,
                "cachedWriteTokens": 0,
                "thoughtTokens": 0,
                "totalTokens": 30,
            },
        },
    }
    assert all(m["params"]["sessionId"] == session for m in emitted if "params" in m)
    assert state.prompt_id is None

    argv, _ = adapter.argv(state, state.sessions[session], "And again")
    assert argv[-3:] == ["resume", "01a20278-77af-7121-8c7a-b2458fa6ef36", "And again"]


def test_codex_failures_are_json_rpc_errors():
    adapter, state, session = codex()
    state = codex_prompt(adapter, state, session).state
    emitted, _, state = feed(
        adapter,
        state,
        [
            '{"type":"thread.started","thread_id":"t1"}',
            '{"type":"error","message":"stream disconnected before completion"}',
            '{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized"}}',
        ],
    )
    assert emitted == [
        {"jsonrpc": "2.0", "id": 7, "error": {"code": -32603, "message": "Codex: unexpected status 401 Unauthorized"}}
    ]
    assert state.prompt_id is None
    state = codex_prompt(adapter, state, session, request_id=8).state
    emitted, _, state = feed(adapter, state, ['{"type":"error","message":"quota exceeded"}'])
    assert emitted == [] and state.last_error == "Codex: quota exceeded"  # answered when the run ends


def test_codex_sessions_modes_and_bad_requests():
    adapter, state, session = codex()
    moded = adapter.translate_outbound(
        {"id": 2, "method": "session/set_mode", "params": {"sessionId": session, "modeId": "read-only"}}, state
    )
    assert moded.reply == {}
    argv, _ = adapter.argv(moded.state, moded.state.sessions[session], "hi")
    assert argv[argv.index("--sandbox") + 1] == "read-only"
    refusal(
        adapter.translate_outbound(
            {"id": 3, "method": "session/set_mode", "params": {"sessionId": session, "modeId": "chaos"}}, state
        )
    )
    unknown = adapter.translate_outbound(
        {
            "id": 4,
            "method": "session/prompt",
            "params": {"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]},
        },
        state,
    )
    assert "unknown session" in refusal(unknown).reason
    running = codex_prompt(adapter, state, session).state
    busy = adapter.translate_outbound(
        {
            "id": 5,
            "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]},
        },
        running,
    )
    assert "already running" in refusal(busy).reason
    refusal(adapter.translate_outbound({"id": 6, "method": "session/load", "params": {}}, state))
    assert feed(adapter, running, ["garbage", "{}", '{"type":"item.completed","item":{"type":"mystery"}}'])[0] == []


def test_codex_set_mode_with_a_malformed_session_id_is_invalid_params():
    # an unhashable sessionId used to raise TypeError in the `in` test (an internal error)
    adapter, state, _ = codex()
    for bad in ([], {"id": 1}, None, 3):
        refused = adapter.translate_outbound(
            {"id": 2, "method": "session/set_mode", "params": {"sessionId": bad, "modeId": "read-only"}}, state
        )
        assert refusal(refused).code == INVALID_PARAMS and "unknown session" in refusal(refused).reason


def test_codex_cancel_marks_the_turn_and_drops_late_items():
    adapter, state, session = codex()
    state = codex_prompt(adapter, state, session).state

    class Run:
        cancelled = False

        def cancel(self) -> None:
            self.cancelled = True

    run = Run()
    state = state.__class__(**{**state.__dict__, "running": run})
    cancelled = adapter.translate_outbound({"method": "session/cancel", "params": {"sessionId": session}}, state)
    assert cancelled.parts() == set() and run.cancelled and cancelled.state.cancelling
    emitted, _, _ = feed(
        adapter,
        cancelled.state,
        [
            '{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"late"}}',
            '{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}',
        ],
    )
    assert emitted == [{"jsonrpc": "2.0", "id": 7, "result": {"stopReason": "cancelled"}}]


def test_strip_shell():
    assert strip_shell("/bin/bash -lc 'touch created_by_tool.txt'") == "touch created_by_tool.txt"
    assert strip_shell("bash -c 'a && b'") == "a && b"
    assert strip_shell("ls -la") == "ls -la" and strip_shell("echo 'unterminated") == "echo 'unterminated"
