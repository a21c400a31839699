"""Tools written for CodeCompanion 19, pasted into setup() as its tool guide shows them:
the calculator with v18+ signatures (`meta.tools.chat`, `output.success(self, stdout,
meta)`, cmds with `opts.output_cb`), declared inline, by `callback` or by `path`; a tool
that extends run_command; `require_approval_before` and `require_confirmation_after`;
the tool events and their data. A local server plays the LLM; the requests it receives
show what reached the LLM."""

from __future__ import annotations

import json

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread
from codecompanion_py.sandbox import Sandbox, SandboxPolicy

from .lua_tools import calculator_v19 as calculator
from .test_tools import setup_with_tools, text_reply, tool_call_reply, tool_messages

pytestmark = pytest.mark.nvim


def setup_cc(editor, url, tools_lua, answers=(), key="interactions"):
    """setup() in CodeCompanion 19's shape, with a local OpenAI-compatible LLM."""
    setup_with_tools(editor, url, tools_lua, answers, key=key)


def event_data(editor, name):
    return [e["data"] for e in editor.events() if e["event"] == "CodeCompanion" + name]


def multiply_call(call_id="call_calc", num1=100, num2=50, operation="multiply"):
    return (call_id, "calculator", {"num1": num1, "num2": num2, "operation": operation})


@pytest.mark.parametrize("answer", ["Accept", "Reject"])
def test_the_cc19_calculator_asks_and_the_llm_gets_the_result_or_the_refusal(editor, answer):
    replies = [tool_call_reply(multiply_call()), text_reply("Done.")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup_cc(
            editor,
            server.url,
            f"calculator = {calculator('opts = { require_approval_before = true },')},",
            answers=[answer, "not now"],
        )
        editor.nvim.command("CodeCompanionChat Use the @{calculator} tool for 100*50")
        editor.wait_event("CodeCompanionChatDone", timeout=30)

        first = server.requests[0].json()
        assert [t["function"]["name"] for t in first["tools"]] == ["calculator"]
        assert any(m["role"] == "system" and "Calculator Tool" in m["content"] for m in first["messages"])
        [prompt] = editor.lua("return _G.cc_prompts")
        assert prompt["prompt"] == "Perform the calculation `100 multiply 50`?"
        [result] = tool_messages(server.requests[1])
        assert result["tool_call_id"] == "call_calc"
        notes = editor.lua("return _G.cc_notes")
        assert "setup function called" in notes
        if answer == "Accept":
            assert result["content"] == "5000"
            assert "5000" in editor.lines()
            assert "on_exit function called" in notes
        else:
            assert result["content"].startswith("The user declined to run the calculator tool")
            assert "not now" in result["content"]  # the reason the user typed
            assert "5000" not in json.dumps(server.requests[1].json())
            assert not event_data(editor, "ToolStarted")  # it never ran


def test_tool_events_carry_cc19_data_at_its_moments(editor):
    replies = [tool_call_reply(multiply_call()), text_reply("Done.")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup_cc(
            editor,
            server.url,
            f"calculator = {calculator('opts = { require_approval_before = true },')},",
            answers=["Accept"],
        )
        editor.nvim.command("CodeCompanionChat Use the @{calculator} tool for 100*50")
        chat = editor.nvim.current.buffer.number
        editor.wait_event("CodeCompanionChatDone", timeout=30)

    names = [n.removeprefix("CodeCompanion") for n in editor.event_names() if "Tool" in n]
    assert names == [
        "ChatToolAdded",
        "ToolAdded",
        "ToolsStarted",
        "ToolApprovalRequested",
        "ToolApprovalFinished",
        "ToolStarted",
        "ToolFinished",
        "ToolsFinished",
    ]
    args = {"num1": 100, "num2": 50, "operation": "multiply"}
    [added] = event_data(editor, "ChatToolAdded")
    assert added["tool"] == "calculator" and added["bufnr"] == chat
    [started] = event_data(editor, "ToolsStarted")
    [requested] = event_data(editor, "ToolApprovalRequested")
    assert requested["name"] == "calculator" and requested["bufnr"] == chat
    [approved] = event_data(editor, "ToolApprovalFinished")
    assert approved["choice"] == "accept" and approved["bufnr"] == chat
    [tool_started] = event_data(editor, "ToolStarted")
    assert tool_started["tool"] == "calculator" and tool_started["args"] == args and tool_started["bufnr"] == chat
    [tool_finished] = event_data(editor, "ToolFinished")
    assert tool_finished["name"] == "calculator" and tool_finished["args"] == args
    assert tool_finished["status"] == "success"
    [finished] = event_data(editor, "ToolsFinished")
    assert finished["id"] == started["id"] and finished["status"] == "success" and finished["bufnr"] == chat


CALCULATOR_FILE = "return " + calculator()


@pytest.mark.parametrize("declared", ["callback_function", "callback_table", "path_file", "path_module", "strategies"])
def test_the_calculator_declared_each_way_cc19_allows(editor, tmp_path, declared):
    module_dir = tmp_path / "lua" / "user_tools"
    module_dir.mkdir(parents=True)
    (module_dir / "calculator.lua").write_text(CALCULATOR_FILE)
    (tmp_path / "calculator.lua").write_text(CALCULATOR_FILE)
    entries = {
        "callback_function": f'{{ description = "Calc", callback = function() return {calculator()} end }}',
        "callback_table": f'{{ description = "Calc", callback = {calculator()} }}',
        "path_file": f'{{ description = "Calc", path = "{tmp_path / "calculator.lua"}" }}',
        "path_module": '{ description = "Calc", path = "user_tools.calculator" }',
        "strategies": calculator(),
    }
    editor.nvim.command(f"set runtimepath^={tmp_path}")
    replies = [tool_call_reply(multiply_call(num1=6, num2=7)), text_reply("42 it is.")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        key = "strategies" if declared == "strategies" else "interactions"
        setup_cc(editor, server.url, f"calculator = {entries[declared]},", key=key)
        editor.nvim.command("CodeCompanionChat Use the @{calculator} tool for 6*7")
        editor.wait_event("CodeCompanionChatDone", timeout=30)
        assert tool_messages(server.requests[1]) == [{"role": "tool", "tool_call_id": "call_calc", "content": "42"}]
        assert editor.lua("return _G.cc_prompts") == []  # no require_approval_before: no question


ASYNC_TOOL = r"""
lookup = {
  description = "Look a word up",
  name = "lookup",
  schema = { type = "function", ["function"] = { name = "lookup", description = "Look a word up",
    parameters = { type = "object", properties = { word = { type = "string" } }, required = { "word" } } } },
  cmds = {
    function(self, args, opts)
      local cb = opts.output_cb
      vim.schedule(function()
        self.chat:add_message({ role = "user", content = "Context for " .. args.word })
        if args.word == "missing" then
          return cb({ status = "error", data = "no entry for " .. args.word })
        end
        cb({ status = "success", data = { "definition of " .. args.word, "second line" } })
      end)
    end,
  },
  output = {
    success = function(self, stdout, meta)
      meta.tools.chat:add_tool_output(self, table.concat(stdout[1], " / "), "looked up " .. self.args.word)
    end,
    error = function(self, stderr, meta)
      _G.error_meta = { status = meta.tools.status, has_cmd = type(meta.cmd) == "function" }
      meta.tools.chat:add_tool_output(self, "Lookup failed: " .. stderr[1])
    end,
  },
},
"""


def test_async_cmds_add_message_and_error_output_reach_the_llm(editor):
    replies = [
        tool_call_reply(("l1", "lookup", {"word": "tool"}), ("l2", "lookup", {"word": "missing"})),
        text_reply("Looked up."),
    ]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup_cc(editor, server.url, ASYNC_TOOL)
        editor.nvim.command("CodeCompanionChat Look up @{lookup}")
        editor.wait_event("CodeCompanionChatDone", timeout=30)
        found, missing = tool_messages(server.requests[1])
        assert found == {"role": "tool", "tool_call_id": "l1", "content": "definition of tool / second line"}
        assert missing == {"role": "tool", "tool_call_id": "l2", "content": "Lookup failed: no entry for missing"}
        messages = server.requests[1].json()["messages"]
        assert {"role": "user", "content": "Context for tool"} in messages
        assert "looked up tool" in editor.lines()  # for_user is what the chat shows
        assert editor.lua("return _G.error_meta") == {"status": "error", "has_cmd": True}
        statuses = [d["status"] for d in event_data(editor, "ToolFinished")]
        assert statuses == ["success", "error"]
        assert event_data(editor, "ToolsFinished")[0]["status"] == "error"


def greeter(extends, opts):
    return f"""
greeter = {{
  extends = "{extends}",
  description = "Greet someone with echo",
  opts = {opts},
  name = "greeter",
  system_prompt = "Greets people by running echo.",
  schema = {{
    properties = {{ who = {{ type = "string", description = "Who to greet" }} }},
    required = {{ "who" }},
  }},
  build_cmd = function(args)
    return "echo hello " .. args.who
  end,
}},
"""


@pytest.mark.parametrize(
    "extends, opts, asked",
    [
        ("cmd_tool", "{ require_approval_before = true }", True),
        ("run_command", "{}", True),  # run_command's own default: ask
        ("cmd_tool", "{ require_approval_before = false }", False),
    ],
)
def test_a_tool_extending_run_command_builds_and_runs_its_command(editor, tmp_path, extends, opts, asked):
    replies = [tool_call_reply(("g1", "greeter", {"who": "world"})), text_reply("Greeted.")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        editor.nvim.command(f"cd {tmp_path}")
        setup_cc(editor, server.url, greeter(extends, opts), answers=["Accept"])
        editor.nvim.command("CodeCompanionChat Say hello with @{greeter}")
        editor.wait_event("CodeCompanionChatDone", timeout=30)

        first = server.requests[0].json()
        [spec] = first["tools"]
        assert spec["function"]["name"] == "greeter"
        assert spec["function"]["parameters"]["required"] == ["who"]
        assert any(
            m["role"] == "system" and m["content"] == "Greets people by running echo." for m in first["messages"]
        )
        [result] = tool_messages(server.requests[1])
        assert "hello world" in result["content"] and "echo hello world" in result["content"]
        prompts = [p["prompt"] for p in editor.lua("return _G.cc_prompts")]
        where = Sandbox(SandboxPolicy(), root=str(tmp_path)).describe()
        assert prompts == ([f"Run the command `echo hello world`? ({where})"] if asked else [])


def test_require_approval_before_false_runs_a_built_in_without_asking(editor, tmp_path):
    replies = [tool_call_reply(("t1", "run_command", {"cmd": "echo quiet", "flag": None})), text_reply("Ran.")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        editor.nvim.command(f"cd {tmp_path}")
        setup_cc(editor, server.url, "run_command = { opts = { require_approval_before = false } },")
        editor.nvim.command("CodeCompanionChat Run it with @{run_command}")
        editor.wait_event("CodeCompanionChatDone", timeout=30)
        [result] = tool_messages(server.requests[1])
        assert "quiet" in result["content"]
        assert editor.lua("return _G.cc_prompts") == []
        assert not event_data(editor, "ToolApprovalRequested")


def test_require_approval_before_as_a_function_decides_per_call(editor):
    opts = """opts = { require_approval_before = function(tool, tools)
      _G.approval_calls = (_G.approval_calls or 0) + 1
      _G.approval_saw = { name = tool.name, bufnr = tools.chat.bufnr }
      return tool.args.num1 > 10
    end },"""
    replies = [
        tool_call_reply(multiply_call("small", num1=2, num2=3), multiply_call("big", num1=200, num2=3)),
        text_reply("Done."),
    ]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup_cc(editor, server.url, f"calculator = {calculator(opts)},", answers=["Accept"])
        editor.nvim.command("CodeCompanionChat Use the @{calculator} tool twice")
        chat = editor.nvim.current.buffer.number
        editor.wait_event("CodeCompanionChatDone", timeout=30)
        prompts = [p["prompt"] for p in editor.lua("return _G.cc_prompts")]
        assert prompts == ["Perform the calculation `200 multiply 3`?"]
        assert [m["content"] for m in tool_messages(server.requests[1])] == ["6", "600"]
        assert editor.lua("return _G.approval_calls") == 2
        assert editor.lua("return _G.approval_saw") == {"name": "calculator", "bufnr": chat}


@pytest.mark.parametrize("confirm", [None, "true", "false"])
def test_require_confirmation_after_decides_whether_create_file_asks(editor, tmp_path, confirm):
    opts = "" if confirm is None else f"create_file = {{ opts = {{ require_confirmation_after = {confirm} }} }},"
    call = ("c1", "create_file", {"filepath": "notes.txt", "content": "hello\n"})
    replies = [tool_call_reply(call), text_reply("Created.")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        editor.nvim.command(f"cd {tmp_path}")
        setup_cc(editor, server.url, opts, answers=["Accept"])
        editor.nvim.command("CodeCompanionChat Write notes with @{create_file}")
        editor.wait_event("CodeCompanionChatDone", timeout=30)
        prompts = [p["prompt"] for p in editor.lua("return _G.cc_prompts")]
        assert prompts == ([] if confirm == "false" else ["Create notes.txt?"])
        assert (tmp_path / "notes.txt").read_text() == "hello\n"
        assert "+hello" in editor.text() or confirm == "false"  # the diff shown with the question


def test_a_tool_that_cannot_be_resolved_is_named_when_the_config_is_sent_and_when_used(editor):
    replies = [text_reply("Hello.")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup_cc(editor, server.url, 'broken = { path = "no.such.module" },')
        editor.nvim.command("CodeCompanionChat Try @{broken}")

        def said():
            return [n for n in editor.lua("return _G.cc_notes") if "broken" in n and "no.such.module" in n]

        editor.wait_for(lambda: len(said()) >= 2, what="the error at setup and at use")
        assert said()[0].startswith("CodeCompanion: tools.broken:")
