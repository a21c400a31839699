"""Terminals an agent asks the editor to run (`terminal/*`).

Each is a real process in its own group, in the project, with the safe part of the
engine's environment (`processes.safe_env`) plus what the agent asks for, sandboxed as the
chat's commands are (its `launcher`, given by the chat: `tools/sandboxing.py`); it dies with the
engine (`processes.die_with_parent`, and its group is killed at the engine's exit).
Output (stdout and stderr interleaved) is kept within the agent's `outputByteLimit`,
dropping from the beginning at a character boundary as the protocol asks, and is read
scrubbed of the secrets the engine knows (scrubber.py), as run_command's is. Releasing a
terminal kills what is still running.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import subprocess
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import RpcError
from ..processes import (
    die_with_parent,
    safe_env,
    signal_group,
    start_in_group,
    strip_ansi,
    terminate_group,
    to_argv,
)
from ..processes.run import then
from ..sandbox import Launch
from ..scrubber import scrub_secrets
from .jsonrpc import INVALID_PARAMS, RESOURCE_NOT_FOUND

DEFAULT_OUTPUT_LIMIT = 1_000_000
MAX_OUTPUT_LIMIT = 8 * 1024 * 1024
"""The most output kept per terminal, whatever the agent asks: `yes` under a limit of 2**40
filled the engine's memory until it was killed."""
KEPT_RELEASED = 32  # released terminals whose last output is kept for display


@dataclass
class Terminal:
    id: str
    argv: list[str]
    proc: asyncio.subprocess.Process
    limit: int
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    reader: asyncio.Task[None] | None = None

    def add(self, data: bytes) -> None:
        self.output += data
        excess = len(self.output) - self.limit
        if excess > 0:
            cut = excess
            while cut < len(self.output) and (self.output[cut] & 0xC0) == 0x80:  # not mid-character
                cut += 1
            del self.output[:cut]
            self.truncated = True

    def text(self) -> str:
        """The output as the agent and the chat read it: no escapes, no key the engine knows
        (while the command runs, the beginning of one still being printed, too)."""
        running = self.proc.returncode is None
        return scrub_secrets(strip_ansi(bytes(self.output).decode("utf-8", errors="replace")), (), cut=running)

    def exit_status(self) -> dict[str, Any] | None:
        code = self.proc.returncode
        if code is None:
            return None
        if code < 0:
            return {"exitCode": None, "signal": _signal_name(-code)}
        return {"exitCode": code, "signal": None}


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


Launcher = Callable[[list[str], str, dict[str, str]], Awaitable[Launch]]
"""How a terminal's command starts: `(argv, cwd, env) -> Launch`, its sandbox. It raises
RpcError when the user refuses to run it unsandboxed."""


class Terminals:
    def __init__(self, cwd: str, launcher: Launcher | None = None) -> None:
        self.cwd = cwd
        self.launcher = launcher
        self._ids = itertools.count(1)
        self._terminals: dict[str, Terminal] = {}
        self.released: dict[str, str] = {}  # the last output of released terminals, for display

    async def create(self, params: Mapping[str, Any]) -> Terminal:
        command = params.get("command")
        if not isinstance(command, str) or not command:
            raise RpcError(INVALID_PARAMS, "terminal/create needs a command")
        args = params.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise RpcError(INVALID_PARAMS, "terminal/create: args must be a list of strings")
        argv = [command, *args] if args else to_argv(command)
        env = safe_env()
        for entry in params.get("env") or []:
            if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
                env[entry["name"]] = str(entry.get("value", ""))
        cwd = params.get("cwd") or self.cwd
        if not os.path.isdir(cwd):
            raise RpcError(INVALID_PARAMS, f"terminal/create: no such directory {cwd}")
        limit = params.get("outputByteLimit")
        limit = min(limit, MAX_OUTPUT_LIMIT) if isinstance(limit, int) and limit >= 0 else DEFAULT_OUTPUT_LIMIT
        preexec = None
        if self.launcher is not None:
            launch = await self.launcher(argv, cwd, env)
            argv, env, preexec = launch.argv, launch.env, launch.preexec
        try:
            proc = await start_in_group(
                argv,
                cwd=cwd,
                env=env,
                preexec_fn=then(die_with_parent(), preexec),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
        except OSError as error:
            raise RpcError(INVALID_PARAMS, f"cannot run {argv[0]}: {error.strerror or error}") from None
        except subprocess.SubprocessError as error:  # the sandbox could not confine it: it did not start
            raise RpcError(INVALID_PARAMS, f"cannot start {argv[0]}: {error}") from None
        terminal = Terminal(f"term-{next(self._ids)}", argv, proc, limit)
        terminal.reader = asyncio.ensure_future(self._pump(terminal))
        self._terminals[terminal.id] = terminal
        return terminal

    @staticmethod
    async def _pump(terminal: Terminal) -> None:
        assert terminal.proc.stdout is not None
        while chunk := await terminal.proc.stdout.read(64 * 1024):
            terminal.add(chunk)

    def output_of(self, terminal_id: str) -> str | None:
        terminal = self._terminals.get(terminal_id)
        return terminal.text() if terminal is not None else self.released.get(terminal_id)

    def get(self, params: Mapping[str, Any]) -> Terminal:
        terminal = self._terminals.get(str(params.get("terminalId")))
        if terminal is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"no terminal {params.get('terminalId')!r}")
        return terminal

    @staticmethod
    async def wait(terminal: Terminal) -> dict[str, Any]:
        await terminal.proc.wait()
        if terminal.reader is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(terminal.reader), timeout=1.0)
        status = terminal.exit_status()
        assert status is not None
        return status

    @staticmethod
    async def kill(terminal: Terminal) -> None:
        if terminal.proc.returncode is None:
            await terminate_group(terminal.proc.pid)

    async def release(self, terminal: Terminal) -> None:
        self._terminals.pop(terminal.id, None)
        await self.kill(terminal)
        if terminal.reader is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(terminal.reader), timeout=0.5)
            terminal.reader.cancel()
        self.released[terminal.id] = terminal.text()
        while len(self.released) > KEPT_RELEASED:  # an agent making terminals without end
            del self.released[next(iter(self.released))]

    async def close(self) -> None:
        for terminal in list(self._terminals.values()):
            await self.release(terminal)

    def kill_now(self) -> None:
        for terminal in self._terminals.values():
            if terminal.proc.returncode is None:
                signal_group(terminal.proc.pid, 9)
