"""Nothing the engine starts outlives it.

`:qa!`, a crash of the Python host or a `kill -9` used to leave run_command's children
(and what they started in the background) running, reparented to init. Now:

* every process group started through `processes` is tracked, and the engine's exit
  (`Engine.shutdown`, `kill_agents`, atexit) SIGKILLs them all;
* a janitor process kills them when the host dies without running any of that;
* run_command's and the terminals' children get PR_SET_PDEATHSIG, so they die with the
  host even without the janitor.

The hosts here are real Python processes driving the real APIs; they are killed with
SIGKILL, and /proc is polled (with a deadline) until what they started is gone.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from codecompanion_py import processes
from codecompanion_py.acp.terminals import Terminals
from codecompanion_py.engine import Engine
from codecompanion_py.processes.run import run_process

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, PR_SET_PDEATHSIG")

REPO = Path(__file__).resolve().parents[2]


def alive(pid: int) -> bool:
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat_line[stat_line.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
    """Poll `predicate` until it is truthy; fail (never hang) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout:g}s waiting for {what}")
        time.sleep(0.02)
    return value


def read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


@pytest.fixture
def leftovers() -> Iterator[list[int]]:
    """Pids a test expects to be gone: killed at the end whatever happened, so a failing
    test leaves nothing running."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


# --- a host killed with SIGKILL ---------------------------------------------------------------

HOST_HEADER = """
import asyncio, os, sys
sys.path.insert(0, {repo!r})
from codecompanion_py import processes
root = sys.argv[1]
SLEEPER = {sleeper!r}
"""

# run_command through the orchestrator, approved by a fake editor: a shell whose background
# grandchild sleeps; with the janitor (the grandchild has no PDEATHSIG of its own)
RUN_COMMAND = """
from codecompanion_py.messages import ToolCall
from codecompanion_py.tools.approvals import Approvals
from codecompanion_py.tools.context import ChatHandle, ToolsContext
from codecompanion_py.tools.orchestrator import Orchestrator
from codecompanion_py.tools.registry import ToolSettings, enabled_definitions
from codecompanion_py.tools.workspace import Workspace
from codecompanion_py.sandbox import SandboxPolicy

class Editor:
    reviews_edits = False  # no diff review after a write here

    async def call(self, method, args):
        return {"choice": "accept"}

class Surface:
    def show(self, event):
        pass
    def fire(self, event, data=None):
        pass

async def main():
    settings = ToolSettings()
    tools = enabled_definitions(settings, ["run_command"])
    context = ToolsContext(
        chat=ChatHandle(), editor=Editor(), approvals=Approvals(), workspace=Workspace(root),
        sandbox=SandboxPolicy(enabled=sys.argv[2] == "sandboxed"),
    )
    orchestrator = Orchestrator(tools, {"run_command": settings.config_of("run_command")}, context, Surface())
    command = "sleep 60.25 & echo $! > grandchild.pid; echo $$ > child.pid; wait"
    await orchestrator.run([ToolCall(id="call_1", name="run_command", arguments={"cmd": command, "flag": None})])

asyncio.run(main())
"""

# a direct child that writes its own pid and sleeps, without the janitor: only
# PR_SET_PDEATHSIG can end it when the host is killed
SLEEPER = "import os, time; open('child.pid', 'w').write(str(os.getpid())); time.sleep(60)"

RUN_PROCESS_ALONE = """
from codecompanion_py.processes.run import run_process
processes.tracking.JANITOR = False

asyncio.run(run_process([sys.executable, "-c", SLEEPER], cwd=root, timeout=120))
"""

TERMINAL_ALONE = """
from codecompanion_py.acp.terminals import Terminals
processes.tracking.JANITOR = False

async def main():
    terminal = await Terminals(root).create({"command": sys.executable, "args": ["-c", SLEEPER]})
    await Terminals.wait(terminal)

asyncio.run(main())
"""


def start_host(script: str, root: Path, *args: str) -> subprocess.Popen[bytes]:
    program = HOST_HEADER.format(repo=str(REPO), sleeper=SLEEPER) + textwrap.dedent(script)
    return subprocess.Popen(
        [sys.executable, "-c", program, str(root), *args],
        cwd=root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def kill_host(host: subprocess.Popen[bytes]) -> None:
    host.kill()  # SIGKILL: no atexit, no finally, nothing of ours runs
    host.wait(10)
    assert host.stdout is not None
    host.stdout.close()


def host_pid_file(host: subprocess.Popen[bytes], path: Path) -> int:
    def pid() -> int | None:
        if host.poll() is not None:
            assert host.stdout is not None
            raise AssertionError(f"the host exited early:\n{host.stdout.read().decode(errors='replace')}")
        return read_pid(path)

    return int(wait_for(pid, f"a pid in {path.name}"))


def running(fragment: bytes) -> list[int]:
    """The pids (as this machine numbers them) of the processes whose argv holds `fragment`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if fragment in (entry / "cmdline").read_bytes() and alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("sandbox", ["unsandboxed", "sandboxed"])
def test_run_command_and_its_background_grandchild_die_with_a_killed_host(tmp_path, leftovers, sandbox):
    host = start_host(RUN_COMMAND, tmp_path, sandbox)
    try:
        host_pid_file(host, tmp_path / "child.pid")
        # in a sandbox the files hold the pids of its own PID namespace: found by argv instead
        grandchild = wait_for(lambda: running(b"sleep\x0060.25\x00"), "the background sleep")[0]
        started = wait_for(lambda: running(b"-c\x00sleep 60.25 &"), "the command's shell")  # bwrap's too
        if sandbox == "unsandboxed":
            assert [grandchild, *started] == [read_pid(tmp_path / n) for n in ("grandchild.pid", "child.pid")]
        leftovers += [grandchild, *started]
        assert alive(grandchild) and all(map(alive, started))
    finally:
        kill_host(host)
    wait_for(
        lambda: not alive(grandchild) and not any(map(alive, started)),
        f"the command's processes {started} and its background sleep {grandchild} to be gone",
    )


@pytest.mark.parametrize("script", [RUN_PROCESS_ALONE, TERMINAL_ALONE], ids=["run_process", "terminal"])
def test_a_child_dies_with_its_killed_host_even_without_the_janitor(tmp_path, leftovers, script):
    host = start_host(script, tmp_path)
    try:
        child = host_pid_file(host, tmp_path / "child.pid")
        leftovers.append(child)
        assert alive(child)
    finally:
        kill_host(host)
    wait_for(lambda: not alive(child), f"the child {child} to die with its host (PR_SET_PDEATHSIG)")


def test_a_host_that_exits_kills_what_its_commands_left_in_the_background(tmp_path, leftovers):
    """The host ends normally (no Neovim, no engine): atexit kills the groups; the janitor
    is off, so it is atexit that does it."""
    script = """
    from codecompanion_py.processes.run import run_process
    processes.tracking.JANITOR = False
    asyncio.run(run_process("sleep 60 > /dev/null 2>&1 & echo $! > background.pid", cwd=root))
    """
    host = start_host(script, tmp_path)
    try:
        assert host.wait(30) == 0
    finally:
        if host.poll() is None:
            kill_host(host)
    background = read_pid(tmp_path / "background.pid")
    assert background is not None
    leftovers.append(background)
    wait_for(lambda: not alive(background), f"the background sleep {background} to be killed at exit")


# --- the engine's exit, in this process -------------------------------------------------------


class Channel:
    def render(self, chat_id: Any, batch: list[Any]) -> None:
        pass

    def notify(self, message: str, level: str = "ERROR") -> None:
        pass


def test_engine_shutdown_kills_what_commands_left_running(tmp_path, leftovers):
    engine = Engine(Channel())
    try:
        command = "sleep 60 > /dev/null 2>&1 & echo $!"
        future = asyncio.run_coroutine_threadsafe(run_process(command, cwd=tmp_path), engine.loop)
        result = future.result(30)
        background = int(result.output.strip())
        leftovers.append(background)
        assert alive(background)  # a command may leave a server running while the chat goes on
    finally:
        engine.shutdown()
    wait_for(lambda: not alive(background), f"the background sleep {background} to be killed by shutdown")


async def test_kill_all_groups_reaches_terminals_and_forgets_groups_that_ended(tmp_path, leftovers):
    terminals = Terminals(str(tmp_path))
    terminal = await terminals.create({"command": "sleep", "args": ["60"]})
    leftovers.append(terminal.proc.pid)
    before = processes.tracking.tracked_groups()
    assert terminal.proc.pid in before
    assert (await run_process("true", cwd=tmp_path)).ok
    assert processes.tracking.tracked_groups() <= before  # a command that ended leaves nothing tracked

    assert terminal.proc.pid in processes.kill_all_groups()
    await asyncio.wait_for(terminal.proc.wait(), 10)
    assert terminal.proc.returncode == -signal.SIGKILL
    assert processes.tracking.tracked_groups() == set()
    await terminals.close()
