"""`make bench` (12): edit predictions against a scripted FIM server on 127.0.0.1.

Every time is taken on one clock (CLOCK_MONOTONIC: libuv's `vim.uv.hrtime()` in Neovim,
`time.monotonic_ns()` in the server), and what the user waits for is observed from Neovim's
side: the last key (`vim.on_key`) to the ghost text's extmark being set.

- server's last byte to the ghost text drawn (the engine's read, decode, clean, the op to Lua,
  the extmark);
- the debounce firing (Lua's `completion.request`) to the request's first byte at the server,
  over a kept-alive connection;
- how late a 5 ms libuv timer fires in Neovim while 20 characters a second are typed with
  predictions on (each key a request, most dismissed and cancelled by the next);
- the last key to the ghost text, beside minuet-ai.nvim (its openai_fim_compatible provider,
  one curl process a request) against the same server, both with no debounce (the user's
  pause is the same for both): its checkout comes from CODECOMPANION_TEST_PLUGINS (skipped,
  with the reason, without it).

Run alone: `python bench/completion.py` (it prints the figures and writes them to
bench/results/completion.json); `make bench` runs it as section 12.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import pynvim

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from codecompanion_py.demo.launch import nvim_binary, runtime_env, write_init  # noqa: E402

DEBOUNCE_MS = 0  # the pause is the user's, the same for both: what follows it is measured
TRIALS = 40
WARMUP = 3
ANSWER = {"id": "fim", "choices": [{"index": 0, "text": "zz_completed(value)", "finish_reason": "stop"}]}

PROBE_LUA = """
local chan, watch = ...
_G.cb = { shown = {}, fired = {}, lag = {} }
vim.on_key(function() _G.cb.last_key = vim.uv.hrtime() end)
local set_extmark = vim.api.nvim_buf_set_extmark
vim.api.nvim_buf_set_extmark = function(buf, ns, row, col, opts)
  local id = set_extmark(buf, ns, row, col, opts)
  local names = vim.api.nvim_get_namespaces()
  if opts and opts.virt_text and names[watch] == ns then
    table.insert(_G.cb.shown, { key = _G.cb.last_key, at = vim.uv.hrtime() })
    vim.rpcnotify(chan, "shown")
  end
  return id
end
local ok, rpc = pcall(require, "codecompanion_py.rpc")
if ok then
  local notify = rpc.notify
  rpc.notify = function(method, payload)
    if method == "completion.request" then table.insert(_G.cb.fired, vim.uv.hrtime()) end
    return notify(method, payload)
  end
end
function _G.cb.lag_start()
  local timer, last = vim.uv.new_timer(), vim.uv.hrtime()
  _G.cb.timer = timer
  timer:start(5, 5, function()
    local now = vim.uv.hrtime()
    table.insert(_G.cb.lag, math.max(0, (now - last) / 1e6 - 5))
    last = now
  end)
end
function _G.cb.lag_stop() _G.cb.timer:stop(); _G.cb.timer:close() end
"""


class FimServer:
    """A keep-alive HTTP/1.1 server on 127.0.0.1 (its own loop, in a thread) answering every
    POST with one JSON completion, noting when each request's first byte came and when its
    reply's last byte went."""

    def __init__(self) -> None:
        self.first_bytes: list[int] = []
        self.last_bytes: list[int] = []
        self.connections = 0
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.url = ""

    def __enter__(self) -> FimServer:
        self._thread.start()
        server = asyncio.run_coroutine_threadsafe(asyncio.start_server(self._serve, "127.0.0.1", 0), self.loop)
        self._server = server.result(10)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self._server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        body = json.dumps(ANSWER).encode()
        reply = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.first_bytes.append(time.monotonic_ns())  # the head's first bytes came in this read
                fields = head.lower().split(b"\r\n")
                sizes = [line.split(b":")[1] for line in fields if line.startswith(b"content-length")]
                length = int(sizes[0]) if sizes else 0
                await reader.readexactly(length)
                writer.write(reply)
                self.last_bytes.append(time.monotonic_ns())
                await writer.drain()
        writer.close()


def start_neovim(setup_lua: str, plugins: list[Path], watch: str) -> pynvim.Nvim:
    home = Path(tempfile.mkdtemp(prefix="cc-bench-completion-"))
    init = write_init(home / "init.lua")
    env = runtime_env(home)
    os.environ.update({k: env[k] for k in env if k.startswith("XDG_")})
    nvim = pynvim.attach("child", argv=[nvim_binary(), "--embed", "--headless", "-u", str(init)])
    for path in plugins:
        nvim.command(f"set runtimepath+={path}")
    nvim.exec_lua(setup_lua)
    nvim.exec_lua(PROBE_LUA, nvim.channel_id, watch)
    nvim.command(f"edit {home / 'bench.py'}")
    nvim.input("ivalue = ")
    return nvim


def wait_shown(nvim: pynvim.Nvim, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        message = nvim.next_message()  # blocks until Neovim notifies
        if message is not None and message[1] == "shown":
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"no ghost text; got {message!r}")


def trials(nvim: pynvim.Nvim, count: int, server: FimServer) -> list[dict]:
    """Type one key that is not the suggestion, `count` times; each time the ghost text that
    follows, with the key's time, the debounce's and the server's times of the request that
    answered it (the last one: each key dismisses what came before)."""
    out = []
    for i in range(count + WARMUP):
        nvim.input("abcdefghij"[i % 10])
        wait_shown(nvim)
        if i >= WARMUP:
            shown = nvim.exec_lua("return _G.cb.shown[#_G.cb.shown]")
            fired = nvim.exec_lua("return _G.cb.fired[#_G.cb.fired]")
            out.append({**shown, "fired": fired, "first": server.first_bytes[-1], "last": server.last_bytes[-1]})
        time.sleep(0.02)
    return out


def ours_setup(url: str) -> str:
    return f"""require("codecompanion_py").setup({{
      adapters = {{ http = {{ fim = function()
        return require("codecompanion_py.adapters").extend("openai_compatible", {{ env = {{ url = "{url}" }},
          schema = {{ model = {{ default = "bench" }} }} }})
      end }} }},
      interactions = {{ chat = {{ adapter = "fim" }}, completion = {{ enabled = true, debounce = {DEBOUNCE_MS} }} }},
    }})"""


def minuet_setup(url: str) -> str:
    return f"""require("minuet").setup({{
      provider = "openai_fim_compatible", n_completions = 1, throttle = 0, debounce = {DEBOUNCE_MS},
      provider_options = {{ openai_fim_compatible = {{ end_point = "{url}/v1/completions", name = "bench",
        model = "bench", stream = false, api_key = function() return "bench" end }} }},
      virtualtext = {{ auto_trigger_ft = {{ "*" }} }},
    }})"""


def ms(ns: float) -> float:
    return ns / 1e6


def lag_while_typing(nvim: pynvim.Nvim, seconds: float = 6.0) -> dict:
    """20 characters a second for `seconds`, predictions on; the 5 ms timer's lateness."""
    nvim.exec_lua("_G.cb.lag = {}; _G.cb.lag_start()")
    text = "the quick brown fox jumps over the lazy dog " * 4
    for ch in text[: int(seconds * 20)]:
        nvim.input(ch)
        time.sleep(0.05)
    nvim.exec_lua("_G.cb.lag_stop()")
    samples = sorted(nvim.exec_lua("return _G.cb.lag"))
    return {
        "samples": len(samples),
        "p50_ms": statistics.median(samples),
        "p99_ms": samples[min(len(samples) - 1, int(len(samples) * 0.99))],
        "max_ms": samples[-1],
    }


def quit(nvim: pynvim.Nvim) -> None:
    with contextlib.suppress(Exception):
        nvim.command("qa!")
    nvim.close()


def bench_completion(trial_count: int = TRIALS) -> dict:
    result: dict = {"debounce_ms": DEBOUNCE_MS, "trials": trial_count}
    with FimServer() as server:
        nvim = start_neovim(ours_setup(server.url), [], "codecompanion_py_completion")
        try:
            rows = trials(nvim, trial_count, server)
            result["last_byte_to_drawn_ms"] = statistics.median(ms(r["at"] - r["last"]) for r in rows)
            result["debounce_to_first_byte_ms"] = statistics.median(ms(r["first"] - r["fired"]) for r in rows)
            result["key_to_ghost_ms"] = statistics.median(ms(r["at"] - r["key"]) for r in rows)
            result["connections"] = server.connections
            result["typing_lag"] = lag_while_typing(nvim)
        finally:
            quit(nvim)
        minuet = Path(os.environ.get("CODECOMPANION_TEST_PLUGINS", "/nonexistent")) / "minuet-ai.nvim"
        if not (minuet / "lua").is_dir():
            result["minuet_skipped"] = "minuet-ai.nvim is not installed (CODECOMPANION_TEST_PLUGINS names no checkout)"
            return result
        nvim = start_neovim(minuet_setup(server.url), [minuet], "minuet.virtualtext")
        try:
            rows = trials(nvim, trial_count, server)
            result["minuet_key_to_ghost_ms"] = statistics.median(ms(r["at"] - r["key"]) for r in rows)
        finally:
            quit(nvim)
    result["minuet_ratio"] = result["minuet_key_to_ghost_ms"] / result["key_to_ghost_ms"]
    return result


def report_lines(c: dict) -> list[str]:
    lag = c["typing_lag"]
    lines = [
        f"(12) edit predictions, scripted FIM server: its last byte to the ghost text drawn, median "
        f"{c['last_byte_to_drawn_ms']:.2f} ms; the debounce firing to the request's first byte at the server "
        f"{c['debounce_to_first_byte_ms']:.2f} ms ({c['connections']} connection(s) for all requests)",
        f"     timer lag while typing 20 characters a second with predictions on: p50 {lag['p50_ms']:.2f} ms, "
        f"p99 {lag['p99_ms']:.2f} ms, max {lag['max_ms']:.2f} ms over {lag['samples']} ticks",
    ]
    ours = f"the last key to the ghost text, debounce {c['debounce_ms']} ms: ours {c['key_to_ghost_ms']:.1f} ms"
    if "minuet_skipped" in c:
        lines.append(f"     {ours}; minuet-ai.nvim skipped: {c['minuet_skipped']}")
    else:
        lines.append(f"     {ours}, minuet-ai.nvim {c['minuet_key_to_ghost_ms']:.1f} ms ({c['minuet_ratio']:.1f}x)")
    return lines


if __name__ == "__main__":
    figures = bench_completion()
    print("\n".join(report_lines(figures)))
    out = REPO / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "completion.json").write_text(json.dumps(figures, indent=2))
