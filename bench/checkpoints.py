"""11. Checkpoints in a 20,000-file git repository with 50 files changed each turn.

* The snapshot before a turn, as the engine takes it (`Checkpoints.before_turn`): the first
  in a worktree (our index made from a copy of the user's), warm (the median of 7, with 50
  files changed before each), and with the kernel's page cache dropped (as after a reboot;
  when run as root). An HTTP chat's request goes out while it runs (tools wait for it); an
  agent's prompt waits for it.
* In headless Neovim, from `:CodeCompanionChat go @{files}` (a turn with tools: one without
  takes no snapshot) to the reply's first chunk in the buffer,
  with Neovim in that repository and in a folder of 10 files: what the snapshot adds to the
  user's wait; the same for an agent's next message (the scripted agent, running).
* Rewind of 50 files, from `require("codecompanion").rewind()` in Neovim to
  `User CodeCompanionChatRewound` (the files written, the chat told): the scripted agent
  writes 50 files through the editor in a turn of its own, the rewind puts them back.
  Meanwhile a 5 ms timer in Neovim records how late it fires (from the turn's command to the
  rewind's end).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FILES = 20_000
CHANGED = 50
RUNS = 7


def make_repo(root: Path) -> list[str]:
    """20,000 files of 20 lines in 1,000 folders, committed; the 50 a turn changes."""
    for i in range(FILES):
        folder = root / f"d{i // 200}" / f"s{i % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"line {i}\n" * 20)
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b"}
    env["GIT_COMMITTER_EMAIL"] = "b@b"
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *argv], cwd=root, env=env, check=True)
    return [f"d{i}/s0/f{i * 200}.txt" for i in range(CHANGED)]


def change(root: Path, paths: list[str], mark: str) -> None:
    for path in paths:
        with open(root / path, "a") as handle:
            handle.write(f"{mark}\n")


def engine_snapshots(root: Path, changed: list[str]) -> dict:
    from codecompanion_py.snapshots.checkpoints import Checkpoints
    from codecompanion_py.snapshots.stores import Stores

    async def run() -> tuple[float, list[float]]:
        with tempfile.TemporaryDirectory() as data:
            points = Checkpoints(Stores(lambda: data))
            start = time.perf_counter()
            await points.before_turn(str(root), header=1, keep=0, text="x")
            cold = time.perf_counter() - start
            warm = []
            for run in range(RUNS):
                change(root, changed, f"engine {run}")
                start = time.perf_counter()
                await points.before_turn(str(root), header=run + 2, keep=0, text="x")
                warm.append(time.perf_counter() - start)
            change(root, changed, "after the page cache is dropped")
            dropped = drop_page_cache()
            start = time.perf_counter()
            await points.before_turn(str(root), header=RUNS + 2, keep=0, text="x")
            return cold, warm, (time.perf_counter() - start) if dropped else None

    cold, warm, uncached = asyncio.run(run())
    return {
        "snapshot_cold_ms": cold * 1000,
        "snapshot_warm_ms": statistics.median(warm) * 1000,
        "snapshot_uncached_ms": uncached * 1000 if uncached is not None else None,
    }


def drop_page_cache() -> bool:
    """The kernel's page cache emptied (root only), so a snapshot reads the disk as after a reboot."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True


# The timer runs while a turn with its snapshots and a rewind run, not while chats are opened
# and wiped (their cost is (2)'s and (9)'s); Lua's garbage is collected off it.
FLOW_LUA = """
_G.cp = { lag = {} }
function _G.cp.measure(on)
  if not on then
    if _G.cp.timer then _G.cp.timer:stop(); _G.cp.timer:close(); _G.cp.timer = nil end
    return collectgarbage("collect")
  end
  local timer, last = vim.uv.new_timer(), vim.uv.hrtime()
  timer:start(5, 5, function()
    local now = vim.uv.hrtime()
    table.insert(_G.cp.lag, math.max(0, (now - last) / 1e6 - 5))
    last = now
  end)
  _G.cp.timer = timer
end
vim.api.nvim_create_autocmd("User", { pattern = "CodeCompanionRequestStreaming", callback = function()
  _G.cp.first = _G.cp.first or vim.uv.hrtime() end })
vim.api.nvim_create_autocmd("User", { pattern = { "CodeCompanionChatDone", "CodeCompanionChatRewound" },
  callback = function(ev)
    _G.cp.at = vim.uv.hrtime()
    if _G.cp.channel then vim.rpcnotify(_G.cp.channel, ev.match) end
  end })
"""


def in_neovim(nvim, url: str, root: Path, tiny: Path, changed: list[str]) -> dict:
    """The user's side: first chunk after the command, rewinds, and the timer's lateness."""
    agent = [sys.executable, str(REPO / "tests" / "acp" / "fake_agent.py")]
    nvim.exec_lua(f"""require("codecompanion_py").setup({{
      adapters = {{
        http = {{ bench = function()
          return require("codecompanion_py.adapters").extend("openai_compatible", {{ env = {{ url = "{url}" }} }})
        end }},
        acp = {{ fake = {{ commands = {{ default = {{ "{agent[0]}", "{agent[1]}" }} }},
          defaults = {{ timeout = 20000 }} }} }},
      }},
      interactions = {{ chat = {{ adapter = "bench" }} }} }})""")
    nvim.exec_lua(FLOW_LUA)

    def wait(event: str) -> None:
        nvim.exec_lua("_G.cp.channel = ...", nvim.channel_id)
        message = nvim.next_message()
        if message is None or message[1] != event:
            raise RuntimeError(f"expected {event}, got {message!r}")

    def first_chunk(folder: Path) -> float:
        nvim.command(f"cd {folder}")
        # with tools, as a turn that may change files: its checkpoint is taken (one without takes none)
        nvim.exec_lua("_G.cp.first = nil; _G.cp.start = vim.uv.hrtime(); vim.cmd('CodeCompanionChat go @{files}')")
        wait("CodeCompanionChatDone")
        elapsed = nvim.exec_lua("return (_G.cp.first - _G.cp.start) / 1e6")
        nvim.command("bwipeout!")
        return elapsed

    first_chunk(tiny), first_chunk(root)  # the engine started; the repository's first snapshot taken
    in_repo, in_tiny = [], []
    for run in range(RUNS):
        change(root, changed, f"user {run}")
        in_repo.append(first_chunk(root))
        in_tiny.append(first_chunk(tiny))

    def agent_first_chunks(folder: Path) -> float:
        """An agent's prompt waits for the snapshot: its next turns (the agent running)."""
        nvim.command(f"cd {folder}")
        nvim.command("CodeCompanionChat adapter=fake stream")
        wait("CodeCompanionChatDone")
        times = []
        for run in range(RUNS):
            change(root, changed, f"agent turn {run}")
            nvim.exec_lua("""_G.cp.first = nil; _G.cp.start = vim.uv.hrtime()
              local buf = vim.api.nvim_get_current_buf()
              vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "stream" })
              require("codecompanion_py.chat").submit(buf)""")
            wait("CodeCompanionChatDone")
            times.append(nvim.exec_lua("return (_G.cp.first - _G.cp.start) / 1e6"))
        nvim.command("bwipeout!")
        return statistics.median(times)

    agent_repo, agent_tiny = agent_first_chunks(root), agent_first_chunks(tiny)
    nvim.command(f"cd {root}")
    rewinds, before = [], (root / changed[0]).read_text()
    for run in range(RUNS):
        writes = {path: f"agent {run}\n" for path in changed}
        nvim.exec_lua("_G.cp.measure(true)")
        nvim.command("CodeCompanionChat adapter=fake files " + json.dumps({"editor": writes}).replace(" ", ""))
        wait("CodeCompanionChatDone")
        time.sleep(0.3)  # the snapshot after the turn (a human takes longer to press gz)
        nvim.exec_lua("_G.cp.start = vim.uv.hrtime(); require('codecompanion').rewind({ turn = 1, restore = 'files' })")
        wait("CodeCompanionChatRewound")
        rewinds.append(nvim.exec_lua("return (_G.cp.at - _G.cp.start) / 1e6"))
        assert (root / changed[0]).read_text() == before, "the rewind did not restore"
        nvim.exec_lua("_G.cp.measure(false)")
        nvim.command("bwipeout!")
        nvim.exec_lua("collectgarbage('collect')")
    lag = sorted(nvim.exec_lua("return _G.cp.lag"))
    return {
        "first_chunk_repo_ms": statistics.median(in_repo),
        "first_chunk_tiny_ms": statistics.median(in_tiny),
        "agent_first_chunk_repo_ms": agent_repo,
        "agent_first_chunk_tiny_ms": agent_tiny,
        "rewind_50_ms": statistics.median(rewinds),
        "rewind_50_max_ms": max(rewinds),
        "lag_p99_ms": lag[min(len(lag) - 1, int(len(lag) * 0.99))],
        "lag_max_ms": lag[-1],
        "lag_samples": len(lag),
    }


def bench_checkpoints(nvim, server) -> dict:
    """`server(chunks)`: run.py's scripted server; `nvim`: its headless Neovim."""
    base = Path(tempfile.mkdtemp(prefix="cc-bench-checkpoints-"))
    try:
        root, tiny = base / "repo", base / "tiny"
        root.mkdir()
        tiny.mkdir()
        for i in range(10):
            (tiny / f"{i}.txt").write_text("x\n")
        changed = make_repo(root)
        report = engine_snapshots(root, changed)
        with server(20) as url:
            report.update(in_neovim(nvim, url, root, tiny, changed))
        return report
    finally:
        shutil.rmtree(base, ignore_errors=True)


def report_lines(c: dict) -> list[str]:
    return [
        f"(11) checkpoints, {FILES:,} files with {CHANGED} changed: the snapshot {c['snapshot_warm_ms']:.0f} ms "
        f"(the first in a worktree {c['snapshot_cold_ms']:.0f} ms, with the page cache dropped "
        f"{c['snapshot_uncached_ms'] or float('nan'):.0f} ms); :CodeCompanionChat to the first chunk "
        f"{c['first_chunk_repo_ms']:.1f} ms in that repository, {c['first_chunk_tiny_ms']:.1f} ms in a 10-file folder",
        f"     an agent's next message to its first chunk (its prompt waits for the snapshot): "
        f"{c['agent_first_chunk_repo_ms']:.0f} ms in that repository, {c['agent_first_chunk_tiny_ms']:.0f} ms "
        "in the 10-file folder",
        f"     rewind of {CHANGED} files, command to done: {c['rewind_50_ms']:.0f} ms (slowest "
        f"{c['rewind_50_max_ms']:.0f} ms); timer lag over the turns and rewinds p99 {c['lag_p99_ms']:.2f} ms, "
        f"max {c['lag_max_ms']:.2f} ms over {c['lag_samples']} ticks",
    ]
