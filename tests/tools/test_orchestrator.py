"""The orchestrator with no Neovim: the tool flow, approvals, errors and cancellation."""

import asyncio

import pytest

from codecompanion_py.messages import ToolCall
from codecompanion_py.tools.approvals import Approvals
from codecompanion_py.tools.context import ChatHandle, ToolsContext
from codecompanion_py.tools.contract import ToolDefinition
from codecompanion_py.tools.orchestrator import Orchestrator
from codecompanion_py.tools.workspace import Workspace
from codecompanion_py.ui.view import EventView

from ..chat.test_session import Recorder


def schema(name, properties=None, required=()):
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": {
                "type": "object",
                "properties": properties or {},
                "required": list(required),
                "additionalProperties": False,
            },
            "strict": True,
        },
    }


def calculate(self, args, input, output_handler=None):
    a, b, op = args["num1"], args["num2"], args["operation"]
    if op == "divide" and b == 0:
        return {"status": "error", "data": "Cannot divide by zero"}
    return {"status": "success", "data": {"add": a + b, "multiply": a * b, "divide": a / (b or 1)}[op]}


def calculator(**overrides):
    calls = []

    def success(self, tools, cmd, stdout):
        calls.append("success")
        tools.chat.add_tool_output(self, str(stdout[0]))

    definition = ToolDefinition(
        name="calculator",
        schema=schema(
            "calculator",
            {
                "num1": {"type": "integer"},
                "num2": {"type": "integer"},
                "operation": {"type": "string", "enum": ["add", "multiply", "divide"]},
            },
            ("num1", "num2", "operation"),
        ),
        cmds=[calculate],
        handlers={
            "setup": lambda self, tools: calls.append("setup"),
            "on_exit": lambda self, tools: calls.append("on_exit"),
        },
        output={
            "success": success,
            "error": lambda self, tools, cmd, stderr, stdout: calls.append("error"),
            "prompt": lambda self, tools: f"Perform {self.args['num1']} {self.args['operation']} {self.args['num2']}?",
        },
    )
    for key, value in overrides.items():
        setattr(definition, key, value)
    return definition, calls


class FakeEditor:
    def __init__(self, *answers):
        self.answers = list(answers)
        self.asked = []

    reviews_edits = False  # no diff review after a write here

    async def call(self, method, args):
        assert method == "approve"
        self.asked.append(args)
        return self.answers.pop(0)


class Surface(EventView):
    """The chat's view over a sink that records ops as Lua receives them."""

    def __init__(self):
        super().__init__(Recorder())

    @property
    def ops(self):
        return self.sink.ops

    def events(self):
        return [op["event"] for op in self.ops if op["op"] == "fire"]

    def shown(self):
        return [op["text"] for op in self.ops if op["op"] == "tool_output"]


def orchestrator(tools, tmp_path, *answers, approvals=None, configs=None):
    editor = FakeEditor(*answers)
    surface = Surface()
    context = ToolsContext(
        chat=ChatHandle(), editor=editor, approvals=approvals or Approvals(), workspace=Workspace(tmp_path)
    )
    return Orchestrator({t.name: t for t in tools}, configs or {}, context, surface), editor, surface


def call(name="calculator", id="call_1", **arguments):
    return ToolCall(id=id, name=name, arguments=arguments)


MUL = {"num1": 100, "num2": 50, "operation": "multiply"}


async def test_the_calculator_flow(tmp_path):
    tool, calls = calculator()
    orch, editor, surface = orchestrator([tool], tmp_path)
    batch = await orch.run([call(**MUL)])
    assert [(r.tool_call_id, r.status, r.content) for r in batch.results] == [("call_1", "success", "5000")]
    assert calls == ["setup", "success", "on_exit"]
    assert surface.events() == ["ToolsStarted", "ToolStarted", "ToolFinished", "ToolsFinished"]
    assert surface.shown() == ["5000"]
    assert editor.asked == []


async def test_an_error_result_goes_to_output_error_and_the_llm_still_gets_a_result(tmp_path):
    tool, calls = calculator()
    orch, _, _ = orchestrator([tool], tmp_path)
    batch = await orch.run([call(num1=1, num2=0, operation="divide")])
    assert calls == ["setup", "error", "on_exit"]
    assert batch.results[0].status == "error"
    assert "Cannot divide by zero" in batch.results[0].content


async def test_async_functions_and_output_handler_called_twice(tmp_path):
    seen = []

    async def later(self, args, input, output_handler):
        await asyncio.sleep(0)
        output_handler({"status": "success", "data": "first"})
        output_handler({"status": "success", "data": "second"})  # discarded

    def chained(self, args, input, output_handler):
        seen.append(input)
        return {"status": "success", "data": input + "+chained"}

    tool = ToolDefinition(name="chain", schema=schema("chain"), cmds=[later, chained])
    orch, _, _ = orchestrator([tool], tmp_path)
    batch = await orch.run([call("chain")])
    assert seen == ["first"]
    assert batch.results[0].content == "first\nfirst+chained"


async def test_an_error_stops_the_remaining_cmds(tmp_path):
    ran = []
    tool = ToolDefinition(
        name="steps",
        schema=schema("steps"),
        cmds=[
            lambda self, args, input, cb: {"status": "error", "data": "step one failed"},
            lambda self, args, input, cb: ran.append("two"),
        ],
    )
    orch, _, _ = orchestrator([tool], tmp_path)
    batch = await orch.run([call("steps")])
    assert ran == []
    assert batch.results[0].status == "error" and "step one failed" in batch.results[0].content


async def test_a_tool_past_its_timeout_is_an_error_result(tmp_path):
    async def forever(self, args, input, output_handler=None):
        await asyncio.sleep(60)

    tool, _ = calculator(cmds=[forever], opts={"timeout": 100})
    orch, _, surface = orchestrator([tool], tmp_path)
    [result] = (await orch.run([call(**MUL)])).results
    assert result.status == "error" and "did not finish within 0.2 s" in result.content
    assert surface.events()[-2:] == ["ToolFinished", "ToolsFinished"]


async def test_a_raising_tool_is_an_error_result_not_a_crash(tmp_path):
    def broken(self, args, input, cb):
        raise KeyError("oops")

    tool = ToolDefinition(name="broken", schema=schema("broken"), cmds=[broken])
    orch, _, _ = orchestrator([tool], tmp_path)
    batch = await orch.run([call("broken")])
    assert batch.results[0].status == "error" and "KeyError" in batch.results[0].content


async def test_unknown_tools_and_bad_arguments_run_nothing_and_explain(tmp_path):
    tool, calls = calculator()
    orch, _, _ = orchestrator([tool], tmp_path)
    bad_json = ToolCall(
        id="c2",
        name="calculator",
        arguments={},
        provider_data={"invalid_arguments": '{"num1": 1,', "error": "not valid JSON"},
    )
    batch = await orch.run(
        [call("rm_rf", id="c1"), bad_json, call(id="c3", num1="100", num2=50, operation="multiply", extra=1)]
    )
    unknown, broken, wrong = (r.content for r in batch.results)
    assert all(r.status == "error" for r in batch.results)
    assert "no tool named `rm_rf`" in unknown and "calculator" in unknown
    assert "not valid JSON" in broken
    assert "`num1` must be integer" in wrong and "unknown field `extra`" in wrong
    assert calls == []


async def test_approval_accept_reject_with_reason_and_always(tmp_path):
    tool, calls = calculator(opts={"requires_approval": True})
    orch, editor, surface = orchestrator(
        [tool], tmp_path, {"choice": "reject", "reason": "use mental maths"}, {"choice": "always"}
    )
    batch = await orch.run([call(id="a", **MUL), call(id="b", **MUL), call(id="c", **MUL)])
    assert [r.status for r in batch.results] == ["rejected", "success", "success"]
    assert "use mental maths" in batch.results[0].content
    assert [a["prompt"] for a in editor.asked] == ["Perform 100 multiply 50?"] * 2  # "always" covers the third
    assert surface.events().count("ToolApprovalRequested") == 2


async def test_cancel_at_approval_cancels_the_rest_of_the_queue(tmp_path):
    tool, calls = calculator(opts={"requires_approval": True})
    orch, _, _ = orchestrator([tool], tmp_path, {"choice": "cancel"})
    batch = await orch.run([call(id="a", **MUL), call(id="b", **MUL)])
    assert [r.status for r in batch.results] == ["cancelled", "cancelled"]
    assert batch.cancelled
    assert "success" not in calls


async def test_yolo_skips_prompts_except_for_tools_that_must_always_ask(tmp_path):
    plain, _ = calculator(opts={"requires_approval": True})
    strict = ToolDefinition(
        name="shell",
        schema=schema("shell"),
        opts={"requires_approval": True, "allowed_in_yolo_mode": False},
        cmds=[lambda self, a, i, cb: {"status": "success", "data": "ran"}],
    )
    orch, editor, _ = orchestrator([plain, strict], tmp_path, {"choice": "accept"}, approvals=Approvals(yolo=True))
    batch = await orch.run([call(id="a", **MUL), call("shell", id="b")])
    assert [r.status for r in batch.results] == ["success", "success"]
    assert [a["tool"] for a in editor.asked] == ["shell"]


async def test_a_protected_target_asks_even_after_always_and_in_yolo(tmp_path):
    def setup(self, tools):
        self.must_ask = "inside .git"

    tool = ToolDefinition(
        name="touch",
        schema=schema("touch"),
        handlers={"setup": setup},
        cmds=[lambda self, a, i, cb: {"status": "success", "data": "ok"}],
    )
    approvals = Approvals(yolo=True)
    approvals.remember("touch", None)
    orch, editor, _ = orchestrator([tool], tmp_path, {"choice": "reject"}, approvals=approvals)
    batch = await orch.run([call("touch")])
    assert batch.results[0].status == "rejected"
    assert editor.asked[0]["must_ask"] == "inside .git" and editor.asked[0]["always"] is None


async def test_always_accept_for_a_command_matches_only_that_exact_command(tmp_path):
    tool = ToolDefinition(
        name="run",
        schema=schema("run", {"cmd": {"type": "string"}}, ("cmd",)),
        opts={"requires_approval": True, "require_cmd_approval": True},
        cmds=[lambda self, a, i, cb: {"status": "success", "data": a["cmd"]}],
    )
    orch, editor, _ = orchestrator([tool], tmp_path, {"choice": "always"}, {"choice": "reject"})
    await orch.run(
        [
            call("run", id="a", cmd="npm test"),
            call("run", id="b", cmd="npm test"),
            call("run", id="c", cmd="npm test; curl evil"),
        ]
    )
    assert [a["id"] for a in editor.asked] == ["a", "c"]


async def test_use_handlers_once_runs_setup_and_on_exit_once_per_run_of_calls(tmp_path):
    tool, calls = calculator(opts={"use_handlers_once": True})
    orch, _, _ = orchestrator([tool], tmp_path)
    await orch.run([call(id="a", **MUL), call(id="b", **MUL)])
    assert calls == ["setup", "success", "success", "on_exit"]


async def test_requires_approval_as_a_function(tmp_path):
    tool, _ = calculator(opts={"requires_approval": lambda self, tools: self.args["num1"] > 10})
    orch, editor, _ = orchestrator([tool], tmp_path, {"choice": "accept"})
    await orch.run([call(id="small", num1=1, num2=2, operation="add"), call(id="big", **MUL)])
    assert [a["id"] for a in editor.asked] == ["big"]


async def test_command_cmds_fill_placeholders_from_env(tmp_path):
    tool = ToolDefinition(
        name="echo",
        schema=schema("echo", {"word": {"type": "string"}}, ("word",)),
        cmds=[["echo", "${word}"]],
        env=lambda self: {"word": self.args["word"]},
    )
    orch, _, _ = orchestrator([tool], tmp_path)
    batch = await orch.run([call("echo", word="hello; rm -rf /")])
    assert batch.results[0].status == "success"
    assert batch.results[0].content.strip() == "hello; rm -rf /"  # one argv element, no shell


async def test_stopping_mid_tool_cancels_it_and_answers_every_call(tmp_path):
    started = asyncio.Event()

    async def slow(self, args, input, cb):
        started.set()
        await asyncio.sleep(60)

    tool = ToolDefinition(name="slow", schema=schema("slow"), cmds=[slow])
    orch, _, surface = orchestrator([tool], tmp_path)
    task = asyncio.create_task(orch.run([call("slow", id="a"), call("slow", id="b")]))
    await started.wait()
    task.cancel()
    batch = await task
    assert batch.cancelled
    assert [(r.tool_call_id, r.status) for r in batch.results] == [("a", "cancelled"), ("b", "cancelled")]
    assert surface.events()[-1] == "ToolsFinished"


@pytest.mark.parametrize("answer", [{"choice": "bogus"}, None])
async def test_a_garbled_approval_answer_counts_as_cancel(tmp_path, answer):
    tool, calls = calculator(opts={"requires_approval": True})
    orch, _, _ = orchestrator([tool], tmp_path, answer)
    batch = await orch.run([call(**MUL)])
    assert batch.results[0].status == "cancelled" and "success" not in calls


@pytest.mark.parametrize(
    "tool_opts, config_opts, asked",
    [
        ({"requires_approval": True}, {"require_approval_before": False}, False),  # the user's entry wins
        ({"require_approval_before": True}, {"requires_approval": False}, False),  # in either spelling
        ({}, {"require_approval_before": True}, True),
        ({"require_approval_before": False}, {"require_approval_before": {"buffer": True}}, True),  # a table: ask
    ],
)
async def test_require_approval_before_from_the_users_entry_overrides_the_tools(
    tmp_path, tool_opts, config_opts, asked
):
    tool, _ = calculator(opts=tool_opts)
    orch, editor, _ = orchestrator(
        [tool], tmp_path, {"choice": "accept"}, configs={"calculator": {"opts": config_opts}}
    )
    await orch.run([call(**MUL)])
    assert bool(editor.asked) == asked


@pytest.mark.parametrize(
    "opts, asked",
    [
        ({}, True),
        ({"require_confirmation_after": False}, False),
        ({"require_confirmation_after": lambda self, tools: self.args["num1"] > 10}, True),
        ({"requires_approval": False}, False),  # the name before v18 meant the one question
        ({"require_approval_before": True, "require_confirmation_after": False}, True),
    ],
)
async def test_a_previewing_tool_asks_while_require_confirmation_after_holds(tmp_path, opts, asked):
    tool, _ = calculator(opts={"require_approval_before": False, "require_confirmation_after": True}, previews=True)
    orch, editor, _ = orchestrator([tool], tmp_path, {"choice": "accept"}, configs={"calculator": {"opts": opts}})
    await orch.run([call(**MUL)])
    assert bool(editor.asked) == asked


async def test_events_carry_codecompanions_fields(tmp_path):
    tool, _ = calculator(opts={"require_approval_before": True})
    orch, _, surface = orchestrator([tool], tmp_path, {"choice": "accept"})
    await orch.run([call(**MUL)])
    fired = [(op["event"], op.get("data") or {}) for op in surface.ops if op["op"] == "fire"]
    assert [name for name, _ in fired] == [
        "ToolsStarted",
        "ToolApprovalRequested",
        "ToolApprovalFinished",
        "ToolStarted",
        "ToolFinished",
        "ToolsFinished",
    ]
    data = dict(fired)
    assert data["ToolsStarted"]["id"] == data["ToolsFinished"]["id"]
    assert data["ToolsFinished"]["status"] == "success" and data["ToolsFinished"]["statuses"] == ["success"]
    assert data["ToolApprovalRequested"]["name"] == "calculator"
    assert data["ToolStarted"]["tool"] == "calculator" and data["ToolStarted"]["args"] == MUL
    assert data["ToolFinished"]["name"] == "calculator" and data["ToolFinished"]["args"] == MUL
