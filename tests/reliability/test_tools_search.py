"""A search the LLM writes can never freeze the engine.

`re` holds the GIL while it matches: `(a+)+$` against thirty `a`s and a `!` backtracks for
about a minute, and run in a thread of the engine it stopped everything (the chat, `q`,
even `:qa!`). The search now runs in another process (ripgrep, or a Python worker when
ripgrep is absent) that is killed at the deadline, and the tool says the search took too
long. Each test runs an asyncio task beside the search that counts the ticks it gets while
a search process is running: it must get some (it is not starved), whatever the timing.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from codecompanion_py import processes
from codecompanion_py.errors import ToolError
from codecompanion_py.messages import ToolCall, ToolResultPart
from codecompanion_py.tools import search
from codecompanion_py.tools.approvals import Approvals
from codecompanion_py.tools.context import ChatHandle, ToolsContext
from codecompanion_py.tools.orchestrator import Orchestrator
from codecompanion_py.tools.registry import ToolSettings, enabled_definitions
from codecompanion_py.tools.workspace import Workspace

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and POSIX process groups")

CATASTROPHIC = r"(a+)+$"
EVIL_LINE = "a" * 30 + "!"
REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")


# --- helpers --------------------------------------------------------------------------------


def alive(pid: int) -> bool:
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat_line[stat_line.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


async def eventually(predicate: Callable[[], Any], what: str, timeout: float = 20.0) -> None:
    """Poll `predicate` until it holds; fail (never hang) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout:g}s waiting for {what}")
        await asyncio.sleep(0.02)


def tracked_groups() -> set[int]:
    return processes.tracking.tracked_groups()


class Ticker:
    """An asyncio task beside the search: it counts the ticks it gets while a process group
    started since `run()` began is alive, i.e. while the search itself runs elsewhere."""

    def __init__(self) -> None:
        self.before: set[int] = set()
        self.started: set[int] = set()
        self.ticks_while_searching = 0

    async def run(self, work: Awaitable[T]) -> T:
        self.before = tracked_groups()
        done = asyncio.Event()

        async def tick() -> None:
            while not done.is_set():
                new = tracked_groups() - self.before
                self.started |= new
                if any(processes.group_alive(pgid) for pgid in new):
                    self.ticks_while_searching += 1
                await asyncio.sleep(0.01)

        ticker = asyncio.ensure_future(tick())
        try:
            return await work
        finally:
            done.set()
            await ticker

    async def all_stopped(self) -> None:
        await eventually(
            lambda: not any(processes.group_alive(pgid) for pgid in self.started), "the search processes to be gone"
        )


def hide(monkeypatch: pytest.MonkeyPatch, *names: str, rg: str | None = None) -> None:
    """Hide git (so the tree is walked: no other process than the search's runs) and rg, or
    point `rg` somewhere."""

    def which(name: str) -> str | None:
        if name == "rg":
            return rg
        return None if name in names else shutil.which(name)

    monkeypatch.setattr(search, "_which", which)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "evil.txt").write_text(f"{EVIL_LINE}\n")
    (root / "src" / "app.py").write_text("needle = 1\n")
    return root


class NoEditor:
    reviews_edits = False  # no diff review after a write here

    async def call(self, method: str, args: Any) -> Any:
        raise AssertionError(f"the search tools do not ask the editor ({method})")


def grep_search(root: Path, timeout_ms: int) -> Orchestrator:
    settings = ToolSettings()
    tools = enabled_definitions(settings, ["grep_search", "file_search"])
    context = ToolsContext(chat=ChatHandle(), editor=NoEditor(), approvals=Approvals(), workspace=Workspace(root))

    class Surface:
        def show(self, event: Any) -> None:
            pass

        def fire(self, event: str, data: Any = None) -> None:
            pass

    configs = {name: {"opts": {"timeout": timeout_ms}} for name in tools}
    return Orchestrator(tools, configs, context, Surface())


async def run_tool(orchestrator: Orchestrator, name: str, **arguments: Any) -> ToolResultPart:
    batch = await orchestrator.run([ToolCall(id="call_1", name=name, arguments=arguments)])
    [result] = batch.results
    return result


# --- the Python fallback (ripgrep hidden) ---------------------------------------------------


async def test_a_catastrophic_regex_without_ripgrep_is_stopped_and_the_loop_keeps_running(project, monkeypatch):
    hide(monkeypatch, "git")
    ticker = Ticker()

    result = await ticker.run(
        run_tool(grep_search(project, timeout_ms=2000), "grep_search", query=CATASTROPHIC, is_regexp=True)
    )

    assert result.status == "error"
    assert "the search took too long" in result.content
    assert "simplify the pattern" in result.content
    assert ticker.ticks_while_searching > 0, "the event loop was starved while the search ran"
    await ticker.all_stopped()


async def test_the_python_fallback_still_finds_lines(project, monkeypatch):
    hide(monkeypatch, "git")
    assert await search.grep(project, r"^need\w+", is_regexp=True) == (["src/app.py:1: needle = 1"], False)
    assert await search.grep(project, "needle", include_pattern="*.txt") == ([], False)
    with pytest.raises(ToolError, match="invalid regular expression"):
        await search.grep(project, "(", is_regexp=True)


async def test_stopping_the_turn_kills_the_search_worker(project, monkeypatch):
    """`q` cancels the task awaiting the search: its worker is killed, not left matching."""
    hide(monkeypatch, "git")
    ticker = Ticker()
    task = asyncio.ensure_future(ticker.run(search.grep(project, CATASTROPHIC, is_regexp=True, timeout=60)))
    await eventually(lambda: ticker.ticks_while_searching > 0, "the search worker to start")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await ticker.all_stopped()


# --- ripgrep --------------------------------------------------------------------------------


def real_rg() -> str | None:
    return shutil.which("rg") or shutil.which("rg", path=os.path.dirname(sys.executable))


@pytest.mark.skipif(real_rg() is None, reason="ripgrep is not installed")
async def test_ripgrep_runs_the_catastrophic_regex_outside_the_engine(project, monkeypatch):
    rg = real_rg()
    hide(monkeypatch, "git", rg=rg)
    ran: list[str] = []
    run_process_raw = search.run_process_raw

    async def spy(argv: list[str], **options: Any) -> Any:
        ran.append(argv[0])
        return await run_process_raw(argv, **options)

    monkeypatch.setattr(search, "run_process_raw", spy)
    lines = await search.grep(project, CATASTROPHIC + "|need", is_regexp=True, timeout=10)
    assert lines == (["src/app.py:1: needle = 1"], False)
    assert ran == [rg]  # a linear-time matcher, in a process of its own


async def test_a_ripgrep_that_never_ends_is_stopped_at_the_deadline(project, monkeypatch, tmp_path):
    slow = tmp_path / "rg"
    slow.write_text("#!/bin/sh\nexec sleep 60\n")
    slow.chmod(slow.stat().st_mode | stat.S_IXUSR)
    hide(monkeypatch, "git", rg=str(slow))
    ticker = Ticker()
    with pytest.raises(ToolError, match="the search took too long .* simplify the pattern"):
        await ticker.run(search.grep(project, CATASTROPHIC, is_regexp=True, timeout=1))
    assert ticker.ticks_while_searching > 0
    await ticker.all_stopped()


def test_ripgrep_is_found_next_to_the_running_python_when_not_on_path(monkeypatch):
    beside = os.path.join(os.path.dirname(sys.executable), "rg")
    if not os.access(beside, os.X_OK):
        pytest.skip("no rg next to this Python")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    if shutil.which("rg"):
        pytest.skip("rg is installed system-wide too")
    assert search._which("rg") == beside


# --- globs the LLM sends: matched in the worker too -----------------------------------------

HOST = textwrap.dedent("""
    import asyncio, inspect, shutil, sys
    sys.path.insert(0, REPO)
    from codecompanion_py.errors import ToolError
    from codecompanion_py.tools import search

    search._which = lambda name: None if name in ("git", "rg") else shutil.which(name)

    async def main():
        deadline = {"timeout": 2} if "timeout" in inspect.signature(search.find_files).parameters else {}
        try:
            print(await search.find_files(sys.argv[1], sys.argv[2], **deadline))
        except ToolError as error:
            print("ToolError:", error)

    asyncio.run(main())
""")


def test_a_catastrophic_glob_is_stopped_too(project):
    """file_search's glob becomes a regex: `*a*a*...!` against a long name backtracks for
    ever. Run in a host process of its own, so that, were the engine frozen, this test
    would fail instead of freezing the test run."""
    (project / ("a" * 120)).write_text("x\n")
    glob = "*a" * 14 + "*!"
    try:
        host = subprocess.run(
            [sys.executable, "-c", HOST.replace("REPO", repr(str(REPO)), 1), str(project), glob],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError("the glob froze its host for a minute (killed)") from None
    assert host.returncode == 0, host.stderr
    assert "ToolError: the search took too long" in host.stdout
