"""run_command (`cmd_runner` in CodeCompanion, still accepted by that name): a command in
the project, after the user approves.

No shell unless the command needs one; its own process group, killed as a group on
timeout or when the user stops; secrets removed from its environment; output capped with
head and tail kept. "Always accept" covers only that exact command, and YOLO mode still
asks.
"""

from __future__ import annotations

from typing import Any

from ..contract import ToolDefinition, ToolRun
from ..process import run_process
from .schema import function_schema

DEFAULT_TIMEOUT_MS = 300_000


async def run(self: ToolRun, args: dict[str, Any], input: Any, output_handler: Any) -> dict[str, Any]:
    command = args["cmd"]
    timeout = float(self.opts.get("timeout", DEFAULT_TIMEOUT_MS)) / 1000
    result = await run_process(command, cwd=self.context.workspace.root, timeout=timeout)
    fence = "````" if "```" in result.output else "```"
    code = "timed out" if result.timed_out else f"exit code {result.exit_code}"
    text = f"`{command}` ({code}):\n{fence}\n{result.output.rstrip()}\n{fence}"
    return {"status": "success" if result.ok else "error", "data": text}


def prompt(self: ToolRun, tools: Any) -> str:
    return f"Run the command `{self.args['cmd']}`?"


TOOL = ToolDefinition(
    name="run_command",
    schema=function_schema(
        "run_command",
        "Run a shell command in the project root, e.g. the test suite, and get its output.",
        {
            "cmd": {"type": "string", "description": "The command line to run"},
            "flag": {"type": ["string", "null"], "description": "'testing' when the command runs tests, else null"},
        },
        ["cmd", "flag"],
        strict=True,
    ),
    cmds=[run],
    output={"prompt": prompt},
    opts={
        "requires_approval": True,
        "require_cmd_approval": True,
        "allowed_in_yolo_mode": False,
        "timeout": DEFAULT_TIMEOUT_MS,
    },
)
