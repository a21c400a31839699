"""The orchestrator: the LLM's tool calls in, one result per call out.

For a batch of calls: resolve each tool (unknown tools and
malformed arguments become error results at once, nothing runs), fire
`ToolsStarted`, then per queued call: `handlers.setup`, the approval decision (and the
prompt, between `ToolApprovalRequested` and `ToolApprovalFinished`), `ToolStarted` when it
runs, the `cmds` in order (each one's output is the next one's `input`; an error stops the
tool and goes to `output.error`), `output.success` after each success, `handlers.on_exit`,
`ToolFinished`; at the end `ToolsFinished`. These are CodeCompanion 19's moments; the
events carry its data fields (`id`, `name`, `args`, `status`) beside ours.

Every call gets exactly one result (success, error, rejected with the user's reason, or
cancelled), even when the user stops the turn, so the next request is valid.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import json
import logging
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..adapters.lua import LuaFunction
from ..errors import ToolError
from ..events import ToolResultEvent
from ..logfile import loggable
from ..messages import ToolCall, ToolResultPart
from ..processes.commands import safe_env
from ..processes.run import run_process
from ..scrubber import KNOWN
from . import arguments
from .approvals import Answer, Verdict, choice_of, must_prompt, visible
from .context import Surface, ToolsContext
from .contract import APPROVAL, CONFIRMATION, Outcome, ToolDefinition, ToolRun, env_allow
from .edits import changed_lines, unified_diff

log = logging.getLogger("codecompanion_py.tools")

DEFAULT_TIMEOUT_MS = 300_000
_run_ids = itertools.count(1)
_batch_ids = itertools.count(1)


@dataclass
class BatchResult:
    results: list[ToolResultPart] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    cancelled: bool = False


class Orchestrator:
    def __init__(
        self,
        tools: Mapping[str, ToolDefinition],
        configs: Mapping[str, Mapping[str, Any]],
        context: ToolsContext,
        surface: Surface,
    ) -> None:
        self.tools = tools
        self.configs = configs
        self.context = context
        self.surface = surface
        context.surface = surface
        context.invoke = self._invoke
        self._cancel_rest = False
        self._batch_id = next(_batch_ids)

    # --- the batch --------------------------------------------------------------------

    async def run(self, calls: Sequence[ToolCall]) -> BatchResult:
        batch = BatchResult()
        results: dict[str, ToolResultPart] = {}
        queue: list[ToolRun] = []
        for call in calls:
            problem = self._refusal(call)
            if problem is not None:
                results[call.id] = self._finish_unrun(call, "error", problem)
            else:
                definition = self.tools[call.name]
                run = ToolRun.start(definition, call, self.configs.get(call.name, {}), next(_run_ids))
                run.context = self.context
                queue.append(run)
        names = [call.name for call in calls]
        self._fire("ToolsStarted", {"tools": names, "id": self._batch_id})
        handlers_done: set[str] = set()
        try:
            for position, run in enumerate(queue):
                if self._cancel_rest:
                    results[run.function_call.id] = await self._cancelled(run)
                    continue
                following = queue[position + 1] if position + 1 < len(queue) else None
                results[run.function_call.id] = await self._run_one(run, following, handlers_done)
        except asyncio.CancelledError:
            batch.cancelled = True
            for run in queue:
                if run.function_call.id not in results:
                    results[run.function_call.id] = await self._cancelled(run)
        finally:
            await self._release(queue)
        batch.cancelled = batch.cancelled or self._cancel_rest
        batch.results = [results[call.id] for call in calls]
        batch.messages = self.context.chat.messages
        statuses = [r.status for r in batch.results]
        self._fire(
            "ToolsFinished",
            {
                "tools": names,
                "statuses": statuses,
                "id": self._batch_id,
                "status": "error" if "error" in statuses else "success",
            },
        )
        return batch

    def _refusal(self, call: ToolCall) -> str | None:
        available = ", ".join(sorted(self.tools)) or "none"
        if call.name not in self.tools:
            return f"There is no tool named `{call.name}` in this chat. Available tools: {available}."
        data = call.provider_data or {}
        if "invalid_arguments" in data:
            return (
                f"You made an error in calling the `{call.name}` tool: {data.get('error')}. "
                f"The arguments must be one JSON object matching the tool's schema. Nothing was run."
            )
        definition = self.tools[call.name]
        found = arguments.problems(call.arguments, definition.accepts or definition.spec().parameters)
        if found:
            return (
                f"You made an error in calling the `{call.name}` tool: {'; '.join(found)}. "
                f"Nothing was run; call it again with corrected arguments."
            )
        return None

    def _finish_unrun(self, call: ToolCall, status: Outcome, text: str) -> ToolResultPart:
        self.surface.show(ToolResultEvent(tool_call_id=call.id, name=call.name, status=status, content=text))
        return ToolResultPart(tool_call_id=call.id, name=call.name, content=text, status=status)

    # --- one call ---------------------------------------------------------------------

    async def _run_one(self, run: ToolRun, following: ToolRun | None, handlers_done: set[str]) -> ToolResultPart:
        data = {"tool": run.name, "name": run.name, "id": run.function_call.id, "args": run.args}
        log.info("tool call %s (%s)", run.name, run.function_call.id)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("tool %s arguments: %s", run.name, loggable(json.dumps(run.args)))
        once = bool(run.opts.get("use_handlers_once"))
        status: Outcome
        try:
            if not (once and run.name in handlers_done):
                await self._handler(run, "setup")
                handlers_done.add(run.name)
            answer = await self._approval(run)
            if answer is None or answer.choice in ("accept", "always"):
                self._fire("ToolStarted", data)
                status = await self._execute(run)
                if status == "success" and answer is None and run.reviewed_after:
                    status = await self._review(run)
            elif answer.choice == "reject":
                status = "rejected"
                await self._output(run, "rejected", _first_cmd(run), {"reason": answer.reason})
                if not run.outputs:
                    run.add_output(f"The user rejected the `{run.name}` tool call.")
                if answer.reason and not any(answer.reason in output.for_llm for output in run.outputs):
                    run.add_output(f"The user's reason: {answer.reason}")
            else:
                self._cancel_rest = True
                status = "cancelled"
                await self._output(run, "cancelled", _first_cmd(run))
        except ToolError as error:
            status = "error"
            run.add_output(f"Error in the `{run.name}` tool: {error}")
        if not (once and following is not None and following.name == run.name):
            with contextlib.suppress(ToolError):
                await self._handler(run, "on_exit")
        self._fire("ToolFinished", {**data, "status": status})
        await self._on_tool_output(run)
        return self._result(run, status)

    async def _on_tool_output(self, run: ToolRun) -> None:
        """The chat's `on_tool_output` callbacks may change each output before it is added
        (CodeCompanion's { tool, for_llm, for_user }); one that fails leaves it as it was."""
        if "on_tool_output" not in self.context.hooks:
            return
        for output in run.outputs:
            shown = output.for_user if output.for_user is not None else output.for_llm  # as CodeCompanion's
            args = {"tool": run.name, "for_llm": output.for_llm, "for_user": shown}
            with contextlib.suppress(Exception):
                changed = await self.context.editor.call("tool.output", args)
                if isinstance(changed, Mapping) and isinstance(changed.get("for_llm"), str):
                    output.for_llm = changed["for_llm"]
                    for_user = changed.get("for_user")
                    output.for_user = for_user if isinstance(for_user, str) else None

    async def _cancelled(self, run: ToolRun) -> ToolResultPart:
        # Called while the turn is being stopped: a Lua `cancelled` handler gets a moment,
        # never the power to hold the stop up.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._output(run, "cancelled", _first_cmd(run)), 2)
        self._fire(
            "ToolFinished",
            {"tool": run.name, "name": run.name, "id": run.function_call.id, "args": run.args, "status": "cancelled"},
        )
        return self._result(run, "cancelled")

    def _result(self, run: ToolRun, status: Outcome) -> ToolResultPart:
        if not run.outputs:
            run.add_output(_DEFAULT_OUTPUT[status].format(name=run.name))
        for output in run.outputs:
            shown = output.for_user if output.for_user is not None else output.for_llm
            self.surface.show(
                ToolResultEvent(
                    tool_call_id=run.function_call.id, name=run.name, status=status, content=KNOWN.scrub(shown)
                )
            )
        # A key of yours that a command printed or a file holds goes to no provider (scrubber.py).
        content = KNOWN.scrub("\n\n".join(output.for_llm for output in run.outputs))
        if log.isEnabledFor(logging.DEBUG):
            log.debug("tool %s %s: %s", run.name, status, loggable(content))
        return ToolResultPart(
            tool_call_id=run.function_call.id, name=run.name, content=content, status=status, images=tuple(run.images)
        )

    # --- approval ---------------------------------------------------------------------

    async def _approval(self, run: ToolRun) -> Answer | None:
        """None when the call may run without asking; otherwise the user's answer."""
        approvals = self.context.approvals
        command = self._command_of(run)
        needs = await self._needs_approval(run)
        if not must_prompt(
            needs_approval=needs,
            remembered=approvals.remembered(run.name, command),
            yolo=approvals.yolo,
            allowed_in_yolo=run.opts.get("allowed_in_yolo_mode", True) is not False,
            must_ask=run.must_ask,
        ):
            return None
        verdict = await self._judged(run)
        if verdict is not None and verdict.safe:
            approvals.remember(run.name, command)  # this exact action is not judged again
            return None
        prompt = await self._invoke(run, run.definition.output.get("prompt"), self.context)
        prompt = visible(str(prompt) if prompt else f"Run the `{run.name}` tool with {json.dumps(run.args)}?")
        if verdict is not None and verdict.reason:
            prompt += f'\nJudge: _"{visible(verdict.reason)}"_'
        request = {
            "tool": run.name,
            "id": run.function_call.id,
            "prompt": prompt,
            "detail": run.approval_detail,
            "must_ask": run.must_ask,
            "always": None
            if run.must_ask
            else (
                f"Always accept `{visible(command)}` in this chat"
                if command is not None
                else f"Always accept `{run.name}` in this chat"
            ),
        }
        self._fire(
            "ToolApprovalRequested", {"tool": run.name, "name": run.name, "id": run.function_call.id, "prompt": prompt}
        )
        reply = await self.context.editor.call("approve", request)
        reply = reply if isinstance(reply, Mapping) else {}
        answer = Answer(choice=choice_of(reply.get("choice")), reason=reply.get("reason") or None)
        if answer.choice == "always" and not run.must_ask:
            approvals.remember(run.name, command)
        self._fire("ToolApprovalFinished", {"tool": run.name, "id": run.function_call.id, "choice": answer.choice})
        return answer

    async def _judged(self, run: ToolRun) -> Verdict | None:
        """The tools judge's verdict, when it vets this call: in YOLO mode, for a tool with
        `opts.judge_in_yolo_mode` and a `gates.judge_context`, never for a call that must ask."""
        gate = run.definition.gates.get("judge_context")
        judge = self.context.judge
        if judge is None or gate is None or run.must_ask or not self.context.approvals.yolo:
            return None
        if not run.opts.get("judge_in_yolo_mode"):
            return None
        action = await self._invoke(run, gate, self.context)
        if not isinstance(action, str) or not action.strip():
            return None
        self._fire("ToolsJudgeStarted", {"id": run.function_call.id, "tool": run.name, "context": action})
        try:
            verdict = await judge(run.name, action)
        except Exception:  # whatever goes wrong, the judge approves nothing
            log.exception("the tools judge failed")
            verdict = Verdict(safe=False, reason="The judge request failed")
        self._fire(
            "ToolsJudgeFinished",
            {
                "id": run.function_call.id,
                "tool": run.name,
                "safe": verdict.safe,
                "reason": verdict.reason,
                "status": "success" if verdict.safe else "error",
            },
        )
        return verdict

    def _command_of(self, run: ToolRun) -> str | None:
        """For tools approved per command (`require_cmd_approval`), the command text."""
        if not run.opts.get("require_cmd_approval"):
            return None
        if isinstance(getattr(run, "command", None), str):
            return run.command
        for key in ("cmd", "command", "filepath"):
            if isinstance(run.args.get(key), str):
                return run.args[key]
        return json.dumps(run.args, sort_keys=True)

    async def _needs_approval(self, run: ToolRun) -> bool:
        """CodeCompanion 19's rule: `require_approval_before` is a boolean, or a function of
        `(tool, tools)`; any other true value (such as `{ buffer = false, file = true }`)
        leaves it to the tool's `handlers.prompt_condition` (asked when it has none), which
        also has its say when the answer is true. A tool that shows its change (an edit's
        diff) and is not asked before is confirmed after (`require_confirmation_after`): in
        the editor's review once it is written, or else by its preview asked before."""
        needed = await self._opt_value(run, APPROVAL)
        if needed and "prompt_condition" in run.definition.handlers:
            needed = await self._invoke(run, run.definition.handlers["prompt_condition"], self.context, run.opts)
        if not needed and run.definition.previews and await self._opt_value(run, CONFIRMATION):
            if run.review is not None and self.context.editor.reviews_edits and not self._small(run):
                run.reviewed_after = not self.context.approvals.yolo  # written, then reviewed
                return False
            return True  # no review after: the preview is the question before
        return bool(needed)

    def _small(self, run: ToolRun) -> bool:
        """An edit small enough (`display.diff.threshold_for_chat` changed lines or fewer) to
        be asked about in the chat, its diff shown there, rather than reviewed in the file."""
        limit = self.context.diff_threshold_for_chat
        new = getattr(run, "new_text", None)
        if not limit or run.review is None or not isinstance(new, str):
            return False
        return 0 < changed_lines(str(run.review.get("before", "")), new) <= limit

    async def _review(self, run: ToolRun) -> Outcome:
        """The written edit, reviewed in the editor (its diff review: accept, reject, hunk by
        hunk); the LLM is told what the user did not keep."""
        assert run.review is not None
        relative = run.review["relative"]
        reply = await self.context.editor.call("review", run.review)
        result = reply.get("result") if isinstance(reply, Mapping) else None
        final = reply.get("text") if isinstance(reply, Mapping) else None
        self._fire("ToolReviewed", {"tool": run.name, "id": run.function_call.id, "result": result})
        if result == "rejected":
            run.outputs.clear()
            run.add_output(f"The user reviewed the edit to {relative} and rejected it: the file is as it was.")
            return "rejected"
        if result == "partial" and isinstance(final, str):
            wanted = getattr(run, "new_text", None)
            kept = unified_diff(relative, wanted, final) if isinstance(wanted, str) else ""
            run.add_output(
                f"The user kept part of this edit and rejected the rest. How {relative} differs from what "
                f"you wrote (- yours, + the file now):\n{kept}"
            )
        elif result == "kept":
            run.add_output(f"The user changed {relative} while reviewing the edit; the edit stays, with their changes.")
        if run.outputs and run.approval_detail:  # the chat shows what was written
            first = run.outputs[0]
            first.for_user = (first.for_user or first.for_llm) + "\n" + run.approval_detail
        return "success"

    async def _opt_value(self, run: ToolRun, key: str) -> Any:
        rule = run.opts.get(key, False)
        if callable(rule) or isinstance(rule, LuaFunction):
            rule = await self._invoke(run, rule, self.context)
        return rule

    # --- execution --------------------------------------------------------------------

    async def _execute(self, run: ToolRun) -> Outcome:
        stdout: list[Any] = []
        value: Any = None
        for cmd in list(run.cmds):
            result = await self._run_cmd(run, cmd, value)
            if result["status"] == "error":
                await self._output(run, "error", cmd, [result["data"]], stdout)
                if not run.outputs:
                    run.add_output(f"Error in the `{run.name}` tool: {_as_text(result['data'])}")
                return "error"
            value = result["data"]
            stdout.append(value)
            await self._output(run, "success", cmd, stdout)
        if not run.outputs and stdout:
            run.add_output("\n".join(_as_text(item) for item in stdout))
        return "success"

    async def _run_cmd(self, run: ToolRun, cmd: Any, value: Any) -> dict[str, Any]:
        timeout = float(run.opts.get("timeout", DEFAULT_TIMEOUT_MS)) / 1000
        if isinstance(cmd, (list, tuple)):
            return await self._run_argv(run, [str(part) for part in cmd], timeout)
        if isinstance(cmd, str):
            return await self._run_argv(run, cmd, timeout)
        try:
            call = self._invoke(run, cmd, run.args, value) if _of_lua_tool(cmd) else self._call_python(run, cmd, value)
            # a tool that enforces its own timeout (run_command) gets a grace period to report it
            limit = timeout + min(timeout, 10.0)
            result = await asyncio.wait_for(call, limit)
        except ToolError as error:
            return {"status": "error", "data": str(error)}
        except asyncio.TimeoutError:  # not the builtin TimeoutError before Python 3.11
            return {"status": "error", "data": f"the tool did not finish within {limit:g} s"}
        return _checked(result, run.name)

    async def _call_python(self, run: ToolRun, fn: Callable[..., Any], value: Any) -> Any:
        """Call a function cmd; it returns its result or hands it to `output_handler` once."""
        loop = asyncio.get_running_loop()
        handed: asyncio.Future[Any] = loop.create_future()

        def output_handler(result: Any) -> None:
            def settle() -> None:
                if not handed.done():
                    handed.set_result(result)
                else:
                    log.warning("tool %s called output_handler again; ignored", run.name)

            loop.call_soon_threadsafe(settle)

        try:
            result = fn(run, run.args, value, output_handler)
            if inspect.isawaitable(result):
                result = await result
        except ToolError:
            raise
        except Exception as error:  # a tool author's bug is an error result, not a crash
            log.exception("tool %s failed", run.name)
            raise ToolError(f"{type(error).__name__}: {error}") from None
        return result if result is not None else await handed

    async def _run_argv(self, run: ToolRun, cmd: list[str] | str, timeout: float) -> dict[str, Any]:
        env = await self._invoke(run, run.definition.env)  # None when the tool has no env
        template_values = {str(k): str(v) for k, v in env.items()} if isinstance(env, Mapping) else {}
        if isinstance(cmd, list):
            cmd = [string.Template(part).safe_substitute(template_values) for part in cmd]
        env_vars = safe_env(allow=env_allow(run.opts))
        result = await run_process(cmd, cwd=self.context.workspace.root, timeout=timeout, env=env_vars)
        # A Lua tool gets its command's output as lines, as CodeCompanion hands it over.
        data: Any = result.output.splitlines() if run.definition.lua else result.output
        return {"status": "success" if result.ok else "error", "data": data}

    # --- callbacks --------------------------------------------------------------------

    async def _handler(self, run: ToolRun, name: str) -> None:
        handler = run.definition.handlers.get(name)
        if handler is not None:
            await self._invoke(run, handler, self.context)

    async def _output(self, run: ToolRun, name: str, *args: Any) -> None:
        handler = run.definition.output.get(name)
        if handler is not None:
            await self._invoke(run, handler, self.context, *args)

    async def _invoke(self, run: ToolRun, fn: Any, *args: Any) -> Any:
        if fn is None:
            return None
        if _of_lua_tool(fn):
            return await self._invoke_lua(run, fn, args)
        try:
            result = fn(run, *args)
            if inspect.isawaitable(result):
                result = await result
        except ToolError:
            raise
        except Exception as error:
            log.exception("tool %s: callback failed", run.name)
            raise ToolError(f"{type(error).__name__}: {error}") from None
        return result

    async def _invoke_lua(self, run: ToolRun, fn: LuaFunction, args: Sequence[Any]) -> Any:
        # `tools` and `self` live on the Lua side; only data crosses.
        tool = fn.tool or run.name
        wire_args = [a for a in args if not isinstance(a, ToolsContext)]
        run.in_lua = True
        reply = await self.context.editor.call(
            "tool.invoke",
            {
                "run_id": run.run_id,
                "tool": tool,
                "path": fn.path,
                "args": _jsonable(wire_args),
                "call": {"id": run.function_call.id, "name": run.name, "arguments": run.args},
            },
        )
        reply = reply if isinstance(reply, Mapping) else {}
        for output in reply.get("outputs") or []:
            run.add_output(output.get("for_llm", ""), output.get("for_user"))
        for message in reply.get("messages") or []:
            self.context.chat.add_message(message)
        if isinstance(reply.get("cmds"), list):
            run.cmds = [
                LuaFunction.of_tool(tool, f"cmds.{i}") if kind == "function" else kind
                for i, kind in enumerate(reply["cmds"], start=1)
            ]
        if reply.get("error"):
            raise ToolError(str(reply["error"]))
        return reply.get("result")

    async def _release(self, queue: Sequence[ToolRun]) -> None:
        lua_runs = [run.run_id for run in queue if run.definition.lua or run.in_lua]
        if lua_runs:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.context.editor.call("tool.release", {"run_ids": lua_runs}), 2)

    def _fire(self, event: str, data: dict[str, Any]) -> None:
        self.surface.fire(event, data)


_DEFAULT_OUTPUT: dict[str, str] = {
    "success": "The `{name}` tool ran successfully.",
    "error": "The `{name}` tool failed.",
    "rejected": "The user rejected the `{name}` tool call.",
    "cancelled": "The user cancelled the `{name}` tool call; it did not run.",
}


def _checked(result: Any, name: str) -> dict[str, Any]:
    if isinstance(result, Mapping) and result.get("status") in ("success", "error"):
        return {"status": result["status"], "data": result.get("data")}
    return {"status": "error", "data": f"the `{name}` tool returned {result!r}, not {{status, data}}"}


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return "\n".join(value)  # a Lua command tool's output lines
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _of_lua_tool(fn: Any) -> bool:
    """A function of a Lua-defined tool (called through tools.lua with the run as `self`)."""
    return isinstance(fn, LuaFunction) and fn.tool is not None


def _first_cmd(run: ToolRun) -> Any:
    return run.cmds[0] if run.cmds else None


def _jsonable(value: Any) -> Any:
    def fallback(item: Any) -> Any:
        return {"lua": item.path} if isinstance(item, LuaFunction) else str(item)

    return json.loads(json.dumps(value, default=fallback))
