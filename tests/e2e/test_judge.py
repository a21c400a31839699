"""The tools judge (`interactions.background.gates.judge`) in real Neovim: in YOLO mode a
tool with `judge_in_yolo_mode` is vetted by an LLM (the scripted server), and only a
well-formed "safe" verdict lets it run without asking."""

from __future__ import annotations

import json

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread, error_reply

from .lua_tools import calculator_v19
from .test_tools import RECORD_UI, text_reply, tool_call_reply

pytestmark = pytest.mark.nvim


RUN_COMMAND = "run_command = { opts = { judge_in_yolo_mode = true } }, opts = { default_tools = { 'run_command' } },"


def setup_judged(
    editor,
    url,
    cwd,
    gates="judge = { opts = { system_prompt = function(d) return d .. ' MINE' end } }",
    tools=RUN_COMMAND,
):
    editor.nvim.command(f"cd {cwd}")
    editor.lua(RECORD_UI)
    editor.lua('_G.cc_answers = { "Reject", "not now" }')
    editor.setup(f"""{{
      adapters = {{ http = {{ testllm = function()
        return require("codecompanion_py.adapters").extend("openai_compatible", {{
          env = {{ url = "{url}" }}, schema = {{ model = {{ default = "test-model" }} }},
        }})
      end }} }},
      interactions = {{
        background = {{ gates = {{ {gates} }} }},
        chat = {{ adapter = "testllm", tools = {{ {tools} }} }},
      }},
    }}""")
    editor.nvim.command("CodeCompanionChat")
    editor.nvim.input("gty")
    editor.wait_for(lambda: any("YOLO mode on" in n for n in editor.lua("return _G.cc_notes")), what="YOLO on")
    editor.type_prompt("make the file")
    editor.nvim.input("<CR>")
    editor.wait_event("CodeCompanionChatDone", timeout=30)


def call(call_id, command):
    return tool_call_reply((call_id, "run_command", {"cmd": command, "flag": None}))


def test_a_safe_verdict_runs_the_command_unasked_and_that_command_is_not_judged_again(editor, tmp_path):
    replies = [
        call("c1", "touch made.txt"),
        text_reply('{"safe": true, "reason": "creates an empty file"}'),
        call("c2", "touch made.txt"),
        text_reply("done"),
    ]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup_judged(editor, server.url, tmp_path)
        assert (tmp_path / "made.txt").exists()
        assert editor.lua("return _G.cc_prompts") == []
        assert len(server.requests) == 4  # the second, identical call was not judged
        judged = server.requests[1].json()
        assert "tools" not in judged
        system, user = judged["messages"]
        assert system["role"] == "system" and system["content"].endswith(" MINE")  # the user's prompt function
        assert "`run_command`" in user["content"] and "touch made.txt" in user["content"]
        events = [e for e in editor.events() if e["event"].startswith("CodeCompanionToolsJudge")]
        assert [e["event"] for e in events] == ["CodeCompanionToolsJudgeStarted", "CodeCompanionToolsJudgeFinished"]
        assert events[0]["data"]["context"] == "touch made.txt"
        assert events[1]["data"]["safe"] is True and events[1]["data"]["status"] == "success"


@pytest.mark.parametrize(
    "verdict, reason",
    [
        (text_reply('{"safe": false, "reason": "writes to the disk"}'), "writes to the disk"),
        (text_reply('{"safe": "true", "reason": "trust me"}'), "unreadable"),
        (text_reply('Sure. {"safe": true, "reason": "fine"}'), "unreadable"),
        (text_reply('{"safe": true, "reason": "fine"}\n{"safe": false}'), "unreadable"),
        (error_reply(400, "no such model"), "request failed"),
    ],
    ids=["unsafe", "string-true", "prose", "two-objects", "failed"],
)
def test_anything_but_a_clear_safe_verdict_asks_the_user_with_the_reason(editor, tmp_path, verdict, reason):
    replies = [call("c1", "touch made.txt"), verdict, text_reply("understood")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup_judged(editor, server.url, tmp_path)
        assert not (tmp_path / "made.txt").exists()
        [prompt] = editor.lua("return _G.cc_prompts")
        assert "touch made.txt" in prompt["prompt"] and "Judge:" in prompt["prompt"] and reason in prompt["prompt"]
        result = [m for m in server.requests[-1].json()["messages"] if m["role"] == "tool"]
        assert "rejected" in result[0]["content"] and "not now" in result[0]["content"]
        finished = [e for e in editor.events() if e["event"] == "CodeCompanionToolsJudgeFinished"]
        assert finished[0]["data"]["safe"] is False


def test_without_the_gate_or_the_tool_opting_in_the_judge_is_never_asked(editor, tmp_path):
    replies = [call("c1", "touch made.txt"), text_reply("ok")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup_judged(editor, server.url, tmp_path, gates="judge = { enabled = false }")
        assert len(server.requests) == 2
        [prompt] = editor.lua("return _G.cc_prompts")
        assert "Judge:" not in prompt["prompt"]
        assert not any(json.dumps(e).count("Judge") for e in editor.events())


JUDGED_CALCULATOR = calculator_v19("""
  opts = { require_approval_before = true, allowed_in_yolo_mode = false, judge_in_yolo_mode = true },
  gates = { judge_context = function(self, meta)
    return ("calculate %s %s %s"):format(self.args.num1, self.args.operation, self.args.num2)
  end },""")


def test_a_lua_tool_with_gates_judge_context_is_judged_with_its_own_words(editor, tmp_path):
    replies = [
        tool_call_reply(("k1", "calculator", {"num1": 6, "num2": 7, "operation": "multiply"})),
        text_reply('{"safe": true, "reason": "arithmetic"}'),
        text_reply("42"),
    ]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        tools = f"calculator = {JUDGED_CALCULATOR}, opts = {{ default_tools = {{ 'calculator' }} }},"
        setup_judged(editor, server.url, tmp_path, gates="judge = { enabled = true }", tools=tools)
        assert editor.lua("return _G.cc_prompts") == []
        assert "calculate 6 multiply 7" in server.requests[1].json()["messages"][1]["content"]
        result = [m for m in server.requests[2].json()["messages"] if m["role"] == "tool"]
        assert "42" in result[0]["content"]
