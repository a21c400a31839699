"""Cold start, this plugin beside CodeCompanion.nvim, measured the same way.

A fresh Neovim (`--embed`, a `--clean`-like init that only puts the plugin on the
runtimepath and calls its `setup()`, a UI attached as a TUI or a GUI attaches) and the
same local OpenAI-compatible server (`bench_server`, 20 chunks). The clock runs from
`:CodeCompanionChat hi` to the first token of the reply ("tok0") in the chat buffer,
seen by `nvim_buf_attach` on the buffer of filetype `codecompanion` (both plugins use
it), so each figure ends at a token the user can read, not at the first bytes received.

Each plugin is measured two ways: the command issued as soon as the UI is attached (a
user who starts Neovim with the command ready: the worst case) and after one second
idle (a user typing it). This plugin's engine starts in the background once a UI is up;
`on demand` is the same with `opts.background_start = false` (the start before it).
Also the first `:CodeCompanionActions` after 1 s idle, to the moment its picker would open
(`vim.ui.select`, replaced so that nothing waits for a choice): ours asks the engine for
the palette's items. (CodeCompanion's palette is left out: without a `yaml` parser for
treesitter, as in a fresh Neovim, it warns about its prompt library instead.)

The variants run interleaved, one of each in turn, so that the load of the machine falls
on each alike; medians are reported.

CodeCompanion.nvim and plenary.nvim are never part of this repository: they are taken
from CODECOMPANION_NVIM / PLENARY_NVIM (checkouts), else cloned into the git-ignored
bench/.vendor/ from CODECOMPANION_GIT / PLENARY_GIT (default: GitHub), at
CODECOMPANION_REF (default: the newest v19 tag). When that fails (offline), its line of
the report says why and the rest runs.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pynvim

REPO = Path(__file__).resolve().parents[1]
VENDOR = REPO / "bench" / ".vendor"

# Records when the reply's first token is in the chat buffer, and tells the bench.
FIRST_TOKEN_LUA = """
_G.bench = {}
vim.api.nvim_create_autocmd("FileType", { pattern = "codecompanion", callback = function(ev)
  vim.api.nvim_buf_attach(ev.buf, false, { on_lines = function(_, buf, _, first, _, last)
    if _G.bench.first then return true end
    for _, line in ipairs(vim.api.nvim_buf_get_lines(buf, first, last, false)) do
      if line:find("tok0", 1, true) then
        _G.bench.first = vim.uv.hrtime()
        vim.rpcnotify(_G.bench.channel, "first_token")
        return true
      end
    end
  end })
end })
-- the palette's picker: recorded when it would open, never shown (a UI would wait for a choice)
vim.ui.select = function()
  _G.bench.first = vim.uv.hrtime()
  vim.rpcnotify(_G.bench.channel, "first_token")
end
"""

OURS_INIT = """
vim.opt.runtimepath:prepend({repo})
require("codecompanion_py").setup({{
  adapters = {{ http = {{ bench = function()
    return require("codecompanion_py.adapters").extend("openai_compatible", {{ env = {{ url = {url} }} }})
  end }} }},
  interactions = {{ chat = {{ adapter = "bench" }} }},
  opts = {{ background_start = {background} }},
}})
"""

# CodeCompanion's openai_compatible adapter pointed at the server as its docs show; a model
# named, as ours is, so neither asks the server for its models first.
THEIRS_INIT = """
vim.opt.runtimepath:prepend({plenary})
vim.opt.runtimepath:prepend({codecompanion})
require("codecompanion").setup({{
  adapters = {{ http = {{ bench = function()
    return require("codecompanion.adapters").extend("openai_compatible", {{
      env = {{ url = {url}, api_key = "bench", chat_url = "/v1/chat/completions" }},
      schema = {{ model = {{ default = "demo" }} }},
    }})
  end }} }},
  interactions = {{ chat = {{ adapter = "bench" }} }},
}})
"""


def lua_str(text: str | Path) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def checkout(name: str, path_var: str, git_var: str, url: str, ref: str | None = None) -> Path:
    """A checkout of `name`: the one $path_var names, else a clone in bench/.vendor/."""
    given = os.environ.get(path_var)
    if given:
        if not (Path(given) / "lua").is_dir():
            raise RuntimeError(f"{path_var}={given} is not a checkout of {name} (no lua/ in it)")
        return Path(given)
    dest = VENDOR / name
    if not (dest / "lua").is_dir():
        shutil.rmtree(dest, ignore_errors=True)
        source = os.environ.get(git_var, url)
        clone = subprocess.run(
            ["git", "clone", "--quiet", source, str(dest)],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},  # offline or no such repository: fail, never ask
        )
        if clone.returncode != 0:
            shutil.rmtree(dest, ignore_errors=True)
            why = clone.stderr.strip()[-200:]
            raise RuntimeError(f"git clone {source} failed ({why}); set {path_var} or {git_var}")
    if ref:
        tags = subprocess.run(["git", "-C", str(dest), "tag", "--list", ref], capture_output=True, text=True).stdout
        newest = sorted(tags.split(), key=lambda t: [int(p) if p.isdigit() else 0 for p in t.lstrip("v").split(".")])
        if newest:
            subprocess.run(["git", "-C", str(dest), "checkout", "--quiet", newest[-1]], check=True)
    return dest


def codecompanion_checkouts() -> tuple[Path, Path]:
    """CodeCompanion.nvim (v19) and plenary.nvim; RuntimeError with the reason when not at hand."""
    if not shutil.which("curl"):
        raise RuntimeError("CodeCompanion.nvim needs curl, which is not on PATH")
    cc = checkout(
        "codecompanion.nvim",
        "CODECOMPANION_NVIM",
        "CODECOMPANION_GIT",
        "https://github.com/olimorris/codecompanion.nvim",
        os.environ.get("CODECOMPANION_REF", "v19.*"),
    )
    plenary = checkout("plenary.nvim", "PLENARY_NVIM", "PLENARY_GIT", "https://github.com/nvim-lua/plenary.nvim")
    return cc, plenary


class Run:
    """One fresh Neovim with `init`, a UI attached."""

    def __init__(self, init: str, nvim: str) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="cc-cold-"))
        (self.home / "init.lua").write_text(FIRST_TOKEN_LUA + init)
        own = [f"{k}={self.home / k.lower()}" for k in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME")]
        # `--embed` without `--headless`: Neovim waits for the UI, then starts, as under a GUI
        argv = ["env", *own, nvim, "--embed", "-i", "NONE", "-u", str(self.home / "init.lua")]
        self.nvim = pynvim.attach("child", argv=argv)
        self.nvim.ui_attach(100, 30, rgb=True)

    def first_token_ms(self, idle: float, command: str = "CodeCompanionChat hi") -> float:
        """ms from `command` to the reply's first token in the buffer (or the palette's picker)."""
        time.sleep(idle)
        self.nvim.exec_lua(
            "_G.bench.channel = ...; _G.bench.start = vim.uv.hrtime(); vim.cmd(select(2, ...))",
            self.nvim.channel_id,
            command,
        )
        while True:  # redraws arrive meanwhile
            message = self.nvim.next_message()
            if message is None:
                raise RuntimeError("Neovim closed the channel before the first token")
            if message[1] == "first_token":
                break
        start, first = self.nvim.exec_lua("return { _G.bench.start, _G.bench.first }")
        return (first - start) / 1e6

    def close(self) -> None:
        quit_child(self.nvim)
        shutil.rmtree(self.home, ignore_errors=True)


def quit_child(nvim: pynvim.Nvim) -> None:
    """`:qa!` to a Neovim child of ours, then its channel closed."""
    with contextlib.suppress(Exception):  # the child exits while answering
        nvim.command("qa!")
    nvim.close()


def bench_cold_start(url: str, nvim: str, runs: int = 7) -> dict:
    """Medians (ms) of command to first token for each variant; a variant that cannot run
    is reported with its reason under "skipped"."""
    ours = {
        background: OURS_INIT.format(repo=lua_str(REPO), url=lua_str(url), background=background)
        for background in ("true", "false")
    }
    chat, palette = "CodeCompanionChat hi", "CodeCompanionActions"
    variants: dict[str, tuple[str, float, str]] = {
        "ours_right_after_start": (ours["true"], 0.0, chat),
        "ours_after_1s_idle": (ours["true"], 1.0, chat),
        "ours_on_demand_after_1s_idle": (ours["false"], 1.0, chat),
        "ours_palette_after_1s_idle": (ours["true"], 1.0, palette),
        "ours_on_demand_palette_after_1s_idle": (ours["false"], 1.0, palette),
    }
    skipped = {}
    try:
        cc, plenary = codecompanion_checkouts()
        described = subprocess.run(["git", "-C", str(cc), "describe", "--tags"], capture_output=True, text=True)
        version = described.stdout.strip() or "of unknown version"
        theirs = THEIRS_INIT.format(plenary=lua_str(plenary), codecompanion=lua_str(cc), url=lua_str(url))
        variants["codecompanion_right_after_start"] = (theirs, 0.0, chat)
        variants["codecompanion_after_1s_idle"] = (theirs, 1.0, chat)
    except (RuntimeError, OSError, subprocess.SubprocessError) as error:
        skipped["codecompanion"] = str(error)
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(runs):
        for name, (init, idle, command) in variants.items():
            run = Run(init, nvim)
            try:
                times[name].append(run.first_token_ms(idle, command))
            finally:
                run.close()
    result: dict = {name: statistics.median(values) for name, values in times.items()}
    result.update(runs=times, skipped=skipped)
    if not skipped:
        result["codecompanion_version"] = version
    return result


def idle_cost(nvim: str, seconds: float = 2.0, runs: int = 5) -> dict:
    """What the background start costs a user who never chats: the host's CPU time and RSS
    once it is up, and how late a 5 ms libuv timer in Neovim fires while it starts (beside
    the same Neovim with the start off)."""
    lag_lua = """
    _G.lag = {}
    local timer, last = vim.uv.new_timer(), vim.uv.hrtime()
    timer:start(5, 5, function()
      local now = vim.uv.hrtime()
      table.insert(_G.lag, math.max(0, (now - last) / 1e6 - 5)); last = now
    end)
    """
    out: dict[str, dict] = {}
    for background in ("true", "false"):
        init = lag_lua + OURS_INIT.format(repo=lua_str(REPO), url=lua_str("http://127.0.0.1:9"), background=background)
        lags: list[float] = []
        cpu, rss = [], []
        for _ in range(runs):
            run = Run(init, nvim)
            try:
                time.sleep(seconds)
                lags.extend(run.nvim.exec_lua("return _G.lag"))
                host = run.nvim.exec_lua("return require('codecompanion_py.rpc').host()")
                if host:
                    cpu_s, rss_mb = process_usage(host["pid"])
                    cpu.append(cpu_s * 1000)
                    rss.append(rss_mb)
            finally:
                run.close()
        lags.sort()
        out["background" if background == "true" else "on_demand"] = {
            "timer_lag_p99_ms": lags[min(len(lags) - 1, int(len(lags) * 0.99))],
            "timer_lag_max_ms": lags[-1],
            "host_cpu_ms": statistics.median(cpu) if cpu else None,
            "host_rss_mb": statistics.median(rss) if rss else None,
        }
    return out


def process_usage(pid: int) -> tuple[float, float]:
    """CPU seconds (user + system) and RSS in MB of a running process, from /proc."""
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(stat[11]) + int(stat[12])) / ticks
    rss = int(stat[21]) * resource.getpagesize() / 2**20
    return cpu, rss


def report_lines(cold: dict, cost: dict | None = None) -> list[str]:
    fmt: Callable[[str], str] = lambda key: f"{cold[key]:.0f} ms" if key in cold else "skipped"  # noqa: E731
    lines = [
        "(10) a fresh Neovim with a UI, :CodeCompanionChat hi to the reply's first token in the buffer "
        f"(median of {len(next(iter(cold['runs'].values())))} interleaved runs):",
        f"     this plugin: {fmt('ours_right_after_start')} issued right after start, "
        f"{fmt('ours_after_1s_idle')} after 1 s idle "
        f"(engine started on demand, background_start = false: {fmt('ours_on_demand_after_1s_idle')})",
    ]
    if "codecompanion" in cold["skipped"]:
        lines.append(f"     CodeCompanion.nvim: skipped ({cold['skipped']['codecompanion']})")
    else:
        lines.append(
            f"     CodeCompanion.nvim {cold['codecompanion_version']}: {fmt('codecompanion_right_after_start')} "
            "issued right after start, "
            f"{fmt('codecompanion_after_1s_idle')} after 1 s idle"
        )
    lines.append(
        f"     the first :CodeCompanionActions after 1 s idle, to its picker: this plugin "
        f"{fmt('ours_palette_after_1s_idle')} (on demand: {fmt('ours_on_demand_palette_after_1s_idle')})"
    )
    if cost:
        bg, od = cost["background"], cost["on_demand"]
        lines.append(
            f"     the background start for a user who never chats: host CPU {bg['host_cpu_ms']:.0f} ms, "
            f"RSS {bg['host_rss_mb']:.0f} MB; 5 ms timer lag in Neovim over its first 2 s p99 "
            f"{bg['timer_lag_p99_ms']:.2f} ms, max {bg['timer_lag_max_ms']:.2f} ms "
            f"(without it: p99 {od['timer_lag_p99_ms']:.2f} ms, max {od['timer_lag_max_ms']:.2f} ms)"
        )
    return lines
