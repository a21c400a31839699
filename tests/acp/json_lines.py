"""The stdio of the fake agents and CLIs the tests run as subprocesses (fake_agent.py,
fake_cli_claude.py, fake_cli_codex.py): a JSON object a line each way, plain blocking
reads. No product code: the fakes must not share a bug with what they test."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def read(backlog: list[dict], *, stubborn: bool = False, record: Callable[[str], None] | None = None) -> dict | None:
    """The next message: the oldest of those read ahead (`backlog`), else a line of stdin
    (None when it is not JSON), shown to `record` first. At the end of input: exit, or
    with `stubborn` hang on, as the worst real agents do."""
    if backlog:
        return backlog.pop(0)
    line = sys.stdin.readline()
    if not line:
        while stubborn:
            time.sleep(60)
        sys.exit(0)
    if record is not None:
        record(line)
    try:
        return json.loads(line)
    except ValueError:
        return None
