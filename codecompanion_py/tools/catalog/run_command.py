"""run_command (`cmd_runner` in CodeCompanion, still accepted by that name): a command in
the project, after the user approves.

No shell unless the command needs one; its own process group, killed as a group on
timeout or when the user stops; only the environment variables that cannot carry a
credential (`processes.safe_env`) plus the ones the user allows in the tool's
`opts.env_allow`; output capped with head and tail kept. "Always accept" covers only that
exact command. It runs sandboxed (`tools/sandboxing.py`): under bubblewrap YOLO mode runs
it without asking, unless `allowed_in_yolo_mode = false`; where no sandbox can run it, the
user is asked each time, YOLO or not.

What the approval shows is what runs: the command with the blanks the shell ignores
collapsed (`processes.normalize_command`), so padding cannot push a part of it out of the
prompt; a command with characters the prompt cannot show (a no-break space, a carriage
return, a bidi control) is refused; a long or multi-line command is also shown whole in
the chat above the prompt.
"""

from __future__ import annotations

import os
from typing import Any

from ...errors import ToolError
from ...processes.commands import hidden_character, normalize_command, safe_env, to_argv
from ...processes.run import ProcessResult, run_process
from ...sandbox import Sandbox
from ..contract import ToolDefinition, ToolRun, env_allow
from ..sandboxing import chat_sandbox, offer_network, refusals
from .schema import catalog_tool

DEFAULT_TIMEOUT_MS = 300_000
LONG_COMMAND = 100
"""A command longer than this many characters is also shown whole in the chat."""


def setup(self: ToolRun, tools: Any) -> None:
    command = self.args.get("cmd")
    if not isinstance(command, str):
        raise ToolError("`cmd` must be a string")
    _prepare(self, command)
    self.args["cmd"] = self.command  # what the prompt shows, "always accept" remembers, and runs


def _prepare(self: ToolRun, command: str) -> None:
    """Check and normalise the command line, and keep it as what the approval shows and
    what runs."""
    hidden = hidden_character(command)
    if hidden is not None:
        raise ToolError(
            f"the command contains the character U+{ord(hidden):04X}, which the approval prompt cannot show; "
            "send it without that character (printf escapes can produce it)"
        )
    command = normalize_command(command)
    if not command:
        raise ToolError("empty command")
    self.command = command
    if "\n" in command or len(command) > LONG_COMMAND:
        fence = _fence(command)
        self.approval_detail = f"The command to run:\n{fence}sh\n{command}\n{fence}"
    sandbox = chat_sandbox(self.context, self.opts.get("sandbox"), tool=self.name)
    self.sandbox = sandbox
    if sandbox.policy.enabled and not sandbox.confined:  # never unconfined without the user's say
        self.must_ask = f"it would run with your full rights: {sandbox.availability.reason}"
    # a command bubblewrap confines may run in YOLO mode without asking, unless the tool's
    # opts say otherwise or want the tools judge to vet it
    self.opts.setdefault("allowed_in_yolo_mode", sandbox.whole and not self.opts.get("judge_in_yolo_mode"))


async def run(self: ToolRun, args: dict[str, Any], input: Any, output_handler: Any) -> dict[str, Any]:
    command = self.command
    workspace = self.context.workspace
    before, mark = set(workspace.code_running_paths()), refusals(self.sandbox)
    result = await _run_in(self, self.sandbox, command)
    if not result.ok and not result.timed_out:
        wider = await offer_network(self.context, self.sandbox, command, result.output, mark)
        if wider is not None:
            result = await _run_in(self, wider, command)
    fence = _fence(result.output)
    code = "timed out" if result.timed_out else f"exit code {result.exit_code}"
    text = f"`{command}` ({code}):\n{fence}\n{result.output.rstrip()}\n{fence}"
    # the sandbox keeps existing ones read-only; a new one is said, for the user to read first
    created = sorted(os.path.relpath(p, workspace.root) for p in set(workspace.code_running_paths()) - before)
    if created:
        text += f"\nThe command created {', '.join(created)}, which can run code by itself: the user should review it."
    return {"status": "success" if result.ok else "error", "data": text}


async def _run_in(self: ToolRun, sandbox: Sandbox, command: str) -> ProcessResult[str]:
    timeout = float(self.opts.get("timeout", DEFAULT_TIMEOUT_MS)) / 1000
    root = str(self.context.workspace.root)
    launch = await sandbox.launch(to_argv(command), cwd=root, env=safe_env(allow=env_allow(self.opts)))
    return await run_process(launch.argv, cwd=root, timeout=timeout, env=launch.env, preexec=launch.preexec)


def _fence(text: str) -> str:
    return "````" if "```" in text else "```"


def prompt(self: ToolRun, tools: Any) -> str:
    return f"Run the command `{self.command}`? ({self.sandbox.describe()})"


OPTS: dict[str, Any] = {
    "requires_approval": True,
    "require_cmd_approval": True,
    "judge_in_yolo_mode": False,
    "timeout": DEFAULT_TIMEOUT_MS,
    "env_allow": [],
}


TOOL = catalog_tool(
    "run_command",
    "Run a shell command in the project root, e.g. the test suite, and get its output.",
    {
        "cmd": {"type": "string", "description": "The command line to run"},
        "flag": {"type": ["string", "null"], "description": "'testing' when the command runs tests, else null"},
    },
    ["cmd", "flag"],
    strict=True,
    cmds=[run],
    handlers={"setup": setup},
    output={"prompt": prompt},
    gates={"judge_context": lambda self, tools: self.command},
    opts=OPTS,
)


def extension(
    name: str,
    *,
    schema: dict[str, Any],
    build_cmd: Any,
    handlers: dict[str, Any],
    output: dict[str, Any],
    opts: dict[str, Any],
    system_prompt: str | None = None,
) -> ToolDefinition:
    """A tool that extends run_command (CodeCompanion's `extends = "cmd_tool"`): the LLM
    fills the tool's own schema, its `build_cmd(args)` turns that into a command line, and
    the command runs as run_command runs it: the same checks, approval (per exact command,
    sandboxed, YOLO as run_command), environment, timeout and output. Its own
    `handlers` and `output` functions replace the defaults, except that the command is
    always built first (its `handlers.setup` runs after that)."""
    user_setup = handlers.get("setup")

    async def build(self: ToolRun, tools: Any) -> None:
        command = await tools.invoke(self, build_cmd, dict(self.args))
        if not isinstance(command, str):
            raise ToolError(f"build_cmd of `{name}` returned {command!r}, not a command line")
        _prepare(self, command)
        if user_setup is not None:
            await tools.invoke(self, user_setup, tools)

    return ToolDefinition(
        name=name,
        schema=schema,
        cmds=[run],
        system_prompt=system_prompt,
        handlers={**handlers, "setup": build},
        output={"prompt": prompt, **output},
        opts={**OPTS, **opts},
        build_cmd=build_cmd,
        lua=True,
    )
