"""The engine as an RPC job of Neovim's own: `<venv python> -m codecompanion_py.nvim.host`.

`lua/codecompanion_py/rpc.lua` starts this with `jobstart({...}, {rpc = true})` once a UI
is up (or on first use), from the plugin's venv, so `g:python3_host_prog` and `:UpdateRemotePlugins` play no
part. It serves the two calls the remote plugin (`plugin.py`) serves, under two names:

- `rpcnotify(chan, "notify", method, payload)`: `Engine.dispatch`, fire and forget;
- `rpcrequest(chan, "request", method, payload)`: `Engine.request`, answered.

The engine and its `NvimChannel` are the ones the remote plugin uses. pynvim runs this
session's loop on the main thread (`run_loop`), and the engine runs its tasks on that same
loop: a call from Lua starts a task, a render is written to the channel as it is made.
pynvim's stdio session moves fd 1 aside for the RPC stream and points it at stderr, so a
stray print or a child's output cannot corrupt the channel.

The host ends when Neovim closes the channel (stdin reaches EOF) or stops the job
(SIGTERM, which pynvim's loop turns into a stop): either way it kills the agents and closes
the sessions before it exits.
"""

from __future__ import annotations

import gc
import sys
import threading
from typing import Any

import pynvim

from ..engine import Engine, yield_to_editor
from ..http1 import verified_tls
from ..scrubber import scrub_logs
from .channel import NvimChannel


def _call(args: list[Any]) -> tuple[str, Any]:
    if not args or not isinstance(args[0], str):
        raise ValueError("expected (method, payload)")
    payload = args[1] if len(args) > 1 else {}
    return args[0], payload or {}


class Host:
    """The two entry points, over an `Engine` that is created with the host."""

    def __init__(self, nvim: Any) -> None:
        self.nvim = nvim
        self.engine = Engine(NvimChannel(nvim), loop=nvim.loop)

    def on_request(self, name: str, args: list[Any]) -> Any:
        if name != "request":
            raise pynvim.ErrorResponse(f"codecompanion_py: unknown RPC request {name!r}")
        method, payload = _call(args)
        try:
            return self.engine.request(method, payload)
        except Exception as error:  # Lua gets one line, not a Python traceback
            raise pynvim.ErrorResponse(f"{type(error).__name__}: {error}") from error

    def on_notification(self, name: str, args: list[Any]) -> None:
        if name == "notify":
            method, payload = _call(args)
            self.engine.dispatch(method, payload)
        elif name == "nvim_error_event":  # Lua failed in what the engine sent it: say what failed
            message = str(args[1]) if len(args) > 1 else str(args)
            self.engine.channel.notify(f"CodeCompanion: a Lua error while showing the engine's work: {message}")
        else:
            self.engine.channel.notify(f"CodeCompanion: the engine got an unknown RPC notification {name!r}")

    def shutdown(self) -> None:
        try:
            self.engine.shutdown()  # agents first, at once; then up to 2 s to close the sessions
        except Exception as error:
            print(f"codecompanion_py host: shutdown: {type(error).__name__}: {error}", file=sys.stderr)


def main() -> None:
    pynvim.setup_logging("codecompanion")  # NVIM_PYTHON_LOG_FILE, as for Neovim's own host
    scrub_logs()
    nvim = pynvim.attach("stdio")
    # This thread runs the engine. (Neovim's own Python host, shared with other plugins, keeps
    # its priority when the engine runs there as a remote plugin.)
    yield_to_editor()
    host = Host(nvim)
    # An https chat's certificates, loaded while the user has not asked anything yet
    threading.Thread(target=verified_tls, name="tls-ahead", daemon=True).start()
    # What is loaded by now lives as long as the host: kept out of the collector's sight, a
    # full collection takes 0.4 ms instead of 10 (a pause that could land in a reply).
    gc.freeze()
    try:
        nvim.run_loop(host.on_request, host.on_notification)
    except Exception as error:  # EOF on stdin or SIGTERM: Neovim is done with us
        print(f"codecompanion_py host: {error}", file=sys.stderr)
    finally:
        host.shutdown()


if __name__ == "__main__":
    main()
