"""Child processes, each in its own process group, stopped as a group.

Shared by the tools (run_command, git and ripgrep for the search tools), the ACP client
(agents and the terminals they ask for), the ACP bridge (the native CLIs) and the
adapters' `cmd:` env values. Everything here is asyncio: the engine's loop must never
block on a child.

* `commands`: a command as it runs (`to_argv`, `needs_shell`) and as its approval shows it
  (`normalize_command`, `hidden_character`), the environment it may see (`safe_env`), and
  `strip_ansi` for output shown as text.
* `capture`: output kept within a cap with bounded memory (`capped`).
* `groups`: process groups as the OS has them: `signal_group`, `group_alive`,
  `die_with_parent`, `close_pipes`.
* `tracking`: the groups we started (`start_in_group`, `terminate_group`), and what happens
  to them when we end (`kill_all_groups`, the janitor).
* `run`: a command run to its end (`run_process_raw` for data, `run_process` for text).

The names the other packages (ACP, MCP, adapters, the engine, the UI) import are importable
from here; the rest from their module (`processes.run.run_process`...).
"""

from __future__ import annotations

from .capture import capped
from .commands import hidden_character, normalize_command, safe_env, strip_ansi, to_argv
from .groups import KILL_GRACE, close_pipes, die_with_parent, group_alive, signal_group
from .tracking import kill_all_groups, start_in_group, terminate_group

__all__ = [
    "KILL_GRACE",
    "capped",
    "close_pipes",
    "die_with_parent",
    "group_alive",
    "hidden_character",
    "kill_all_groups",
    "normalize_command",
    "safe_env",
    "signal_group",
    "start_in_group",
    "strip_ansi",
    "terminate_group",
    "to_argv",
]
