"""Running commands for `run_command` and for tools whose `cmds` are argv lists: the
output as text for the LLM.

The child runs in its own process group, with only the environment variables that cannot
carry a credential (`processes.safe_env`, plus what the tool's `opts.env_allow` names) and
its output capped (`codecompanion_py.processes.run_process_raw`); here that output is
decoded (invalid UTF-8 replaced) and cleaned of terminal escapes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ToolError
from ..processes import run_process_raw, strip_ansi


@dataclass(frozen=True)
class ProcessResult:
    argv: tuple[str, ...]
    exit_code: int | None
    """The exit status; negative (-signal) when a signal other than ours ended it, None
    when it was killed on timeout."""
    output: str
    timed_out: bool
    truncated: bool

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


async def run_process(
    command: str | Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    timeout: float = 300.0,
    max_output: int = 100_000,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
) -> ProcessResult:
    """Run `command` in `cwd` and return its exit code and capped, cleaned output.

    A missing executable is a result (exit code 127), not an exception; a `cwd` that does
    not exist raises ToolError. Cancelling the awaiting task kills the process group and
    re-raises CancelledError."""
    raw = await run_process_raw(command, cwd=cwd, timeout=timeout, max_output=max_output, env=env, stdin=stdin)
    output = strip_ansi(raw.output.decode("utf-8", errors="replace"))
    return ProcessResult(raw.argv, raw.exit_code, output, raw.timed_out, raw.truncated)


def env_allow(opts: Mapping[str, Any]) -> list[str]:
    """The tool option `env_allow`: environment variables (names, or patterns such as
    `NPM_CONFIG_*`) the user lets this tool's commands see beyond the safe ones. A Lua
    list arrives as a list; a single name is accepted too."""
    value = opts.get("env_allow")
    if value is None or value == {}:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(name, str) for name in value):
        raise ToolError("the tool option `env_allow` must be a list of environment variable names")
    return list(value)


__all__ = ["ProcessResult", "env_allow", "run_process"]
