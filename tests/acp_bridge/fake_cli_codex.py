"""A stand-in for `codex exec --json --skip-git-repo-check [resume ID] PROMPT`: one turn,
JSON lines in the shapes captured from Codex CLI 0.169.0 (research notes §3.1), then exit.

The first word of the prompt picks the scenario: `fail` (turn.failed, exit 1), `crash`
(exit 2 with a stderr message, no turn.completed), `slow` (a command that never ends,
with a child process in the same group), `quiet` (exit 0 without turn.completed);
anything else is a full turn: reasoning, a command, a file change, a todo list, a
message. A prompt of `-` is read from stdin.
FAKE_CLI_LOG=<path>: appends {"pid", "argv", "env", "prompt"} at start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository, for tests.acp.json_lines
from tests.acp.json_lines import send  # noqa: E402


def main() -> None:
    args = sys.argv[1:]
    assert args[:1] == ["exec"], args
    prompt = args[-1]
    if prompt == "-":
        prompt = sys.stdin.read()
    thread = args[args.index("resume") + 1] if "resume" in args else str(uuid.uuid4())
    log = os.environ.get("FAKE_CLI_LOG")
    if log:
        with open(log, "a") as handle:
            handle.write(
                json.dumps(
                    {"pid": os.getpid(), "argv": args, "cwd": os.getcwd(), "env": dict(os.environ), "prompt": prompt}
                )
                + "\n"
            )
    send({"type": "thread.started", "thread_id": thread})
    send(
        {
            "type": "item.completed",
            "item": {"id": "item_0", "type": "error", "message": "Model metadata for `fake-model` not found."},
        }
    )
    send({"type": "turn.started"})
    word = prompt.strip().split(" ", 1)[0]
    if word == "fail":
        send({"type": "error", "message": "stream disconnected before completion"})
        send({"type": "turn.failed", "error": {"message": "unexpected status 401 Unauthorized"}})
        sys.exit(1)
    if word == "crash":
        sys.stderr.write("thread 'main' panicked: the fake codex fell over\n")
        sys.stderr.flush()
        os._exit(2)
    if word == "quiet":
        return
    if word == "slow":
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "fake_cli_codex-child"])
        send(
            {
                "type": "item.started",
                "item": {
                    "id": "item_1",
                    "type": "command_execution",
                    "command": "/bin/bash -lc 'sleep 600'",
                    "aggregated_output": "",
                    "exit_code": None,
                    "status": "in_progress",
                },
            }
        )
        time.sleep(600)
        return
    send({"type": "item.completed", "item": {"id": "item_r", "type": "reasoning", "text": "**Planning** the work"}})
    send(
        {
            "type": "item.started",
            "item": {
                "id": "item_t",
                "type": "todo_list",
                "items": [{"text": "Create the file", "completed": False}, {"text": "Report", "completed": False}],
            },
        }
    )
    send(
        {
            "type": "item.started",
            "item": {
                "id": "item_1",
                "type": "command_execution",
                "command": "/bin/bash -lc 'touch created_by_tool.txt'",
                "aggregated_output": "",
                "exit_code": None,
                "status": "in_progress",
            },
        }
    )
    send(
        {
            "type": "item.completed",
            "item": {
                "id": "item_1",
                "type": "command_execution",
                "command": "/bin/bash -lc 'touch created_by_tool.txt'",
                "aggregated_output": "done\n",
                "exit_code": 0,
                "status": "completed",
            },
        }
    )
    send(
        {
            "type": "item.completed",
            "item": {
                "id": "item_2",
                "type": "file_change",
                "status": "completed",
                "changes": [{"path": os.path.join(os.getcwd(), "notes.txt"), "kind": "add"}],
            },
        }
    )
    send(
        {
            "type": "item.completed",
            "item": {
                "id": "item_t",
                "type": "todo_list",
                "items": [{"text": "Create the file", "completed": True}, {"text": "Report", "completed": True}],
            },
        }
    )
    send(
        {
            "type": "item.completed",
            "item": {"id": "item_3", "type": "agent_message", "text": f"Hello from the fake Codex (thread {thread})."},
        }
    )
    send(
        {
            "type": "turn.completed",
            "usage": {
                "input_tokens": 20,
                "cached_input_tokens": 4,
                "cache_write_input_tokens": 0,
                "output_tokens": 10,
                "reasoning_output_tokens": 3,
            },
        }
    )


if __name__ == "__main__":
    main()
