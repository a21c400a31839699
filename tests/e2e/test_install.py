"""The plugin installed as a user installs it: a clone of this repository, the real build step
(build.lua: a venv at <clone>/.venv with the plugin pip-installed into it), and Neovim with no
`g:python3_host_prog` and no `:UpdateRemotePlugins`. The engine then runs in the plugin's own RPC
job (`python -m codecompanion_py.nvim.host`), started on the first command.

Each build is real (venv, pip, PyPI through pip's cache): about 6-8 s here. The remote-plugin path
that the other e2e tests use keeps working beside this one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pynvim
import pytest

from codecompanion_py.demo.launch import nvim_binary
from codecompanion_py.demo.server import Reply, ScriptedServer, ServerThread, sse_reply
from tests.e2e.conftest import RECORD_EVENTS, Editor

# the build downloads from the package registry: longer than the default test timeout
pytestmark = [pytest.mark.nvim, pytest.mark.timeout(360)]

REPO = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT = 240.0  # a cold pip cache on a slow network; a warm one takes seconds

# What the tests read back: every vim.notify message, and the User events.
RECORD_MESSAGES = """
_G.cc_messages = {}
vim.notify = function(msg, level) table.insert(_G.cc_messages, { msg = tostring(msg), level = level }) end
"""

DEMO_SETUP = '{ interactions = { chat = { adapter = "demo" } } }'


def lua_str(text: str | Path) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def plugin_clone(dest: Path) -> Path:
    """A git clone of this repository, as a plugin manager makes one, carrying the work tree's
    current files (committed or not), so that what gets installed is the code under test."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(dest)], check=True, timeout=120)
    listed = (
        subprocess.run(
            ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            check=True,
            capture_output=True,
            timeout=60,
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, listed):
        source, target = REPO / rel, dest / rel
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        elif target.is_file():
            target.unlink()  # deleted in the work tree
    return dest


@pytest.fixture
def isolated(tmp_path, monkeypatch) -> Path:
    """Neovim's data and config under tmp_path: no remote-plugin manifest, no user config."""
    for name in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    # a user's Neovim has no PYTHONPATH to this checkout: with one, the half-made venv's host would
    # import the engine from here and miss its dependencies instead of the engine itself
    monkeypatch.delenv("PYTHONPATH", raising=False)
    return tmp_path


class Session(Editor):
    def messages(self) -> list[str]:
        return [m["msg"] for m in self.lua("return _G.cc_messages")]

    def wait_message(self, fragment: str, timeout: float = 15.0) -> str:
        def found():
            return next((m for m in self.messages() if fragment in m), None)

        return wait(found, timeout, lambda: f"a message with {fragment!r}; messages: {self.messages()}")

    def chat(self) -> dict:
        # the state a user sees; the chat object also holds functions, which cannot cross the RPC
        return self.lua(
            "local c = require('codecompanion_py.chat').chats[vim.api.nvim_get_current_buf()]"
            " return { status = c.status, engine_ready = c.engine_ready }"
        )

    def host(self) -> dict | None:
        # pcall: a Neovim that only ran build.lua has no plugin on its runtimepath
        return self.lua("local ok, rpc = pcall(require, 'codecompanion_py.rpc') return ok and rpc.host() or nil")

    def build_state(self) -> str | None:
        return self.nvim.vars.get("codecompanion_py_build")


def wait(predicate, timeout: float, what):
    """Poll `predicate` until it is truthy (and return that); fail after `timeout` seconds with
    `what` (a string, or a callable that describes the state left)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what() if callable(what) else what}")
        time.sleep(0.05)


@contextlib.contextmanager
def neovim(init: Path, cwd: Path, *extra: str):
    """Headless Neovim with `init`, its working directory `cwd` (not this checkout, whose
    codecompanion_py/ would otherwise be what `python -m` imports); quits it at the end and
    checks that the engine's host went with it."""
    argv = [nvim_binary(), "--embed", "--headless", "--cmd", f"call chdir({lua_str(cwd)})", *extra, "-u", str(init)]
    nvim = pynvim.attach("child", argv=argv)
    pid = nvim.call("getpid")
    session = Session(nvim)
    session.lua(RECORD_EVENTS)
    hosts: list[int] = []
    try:
        yield session, hosts
        job = session.host()
        if job:
            hosts.append(job["pid"])
    finally:
        with contextlib.suppress(Exception):
            nvim.command("qa!", async_=True)
        with contextlib.suppress(AssertionError):
            wait(lambda: not _alive(pid), 15, "Neovim to quit")
        nvim.close()
    for host_pid in hosts:  # the VimLeavePre hook stopped the job: no host outlives Neovim
        wait(lambda pid=host_pid: not _alive(pid), 10, f"the engine host {host_pid} to exit with Neovim")


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def assert_no_remote_plugin(session: Session) -> None:
    assert session.nvim.vars.get("python3_host_prog") is None
    assert session.lua("return vim.fn.exists('#FuncUndefined#CodeCompanionPyNotify')") == 0
    assert not list(Path(os.environ["XDG_DATA_HOME"]).rglob("rplugin.vim"))


def chat_and_get_the_demo_reply(session: Session, root: Path, prompt: str = "hello", count: int = 1) -> None:
    session.nvim.command(f"CodeCompanionChat {prompt}")
    done = session.wait_event("CodeCompanionChatDone", count=count, timeout=30)
    assert done["data"]["status"] == "success", session.messages()
    assert "Hello from the **demo** adapter" in session.text()
    host = session.host()
    assert host and host["python"] == str(root / ".venv" / "bin" / "python")


# --- (a) lazy.nvim ------------------------------------------------------------------------

LAZY_INIT = """
-- What lazy.nvim does for `{ "codecompanion-py/codecompanion-py", opts = {...} }` on its first
-- install: it runs the plugin's build.lua inside a coroutine before the plugin is on the
-- runtimepath, resumes it on each tick and logs what it yields; the plugin is loaded meanwhile.
local plugin = { name = "codecompanion-py", dir = @DIR@ }
assert(not vim.o.runtimepath:find(plugin.dir, 1, true), "the plugin must not be on the runtimepath yet")
_G.build_log = {}
local build = coroutine.create(function() assert(loadfile(plugin.dir .. "/build.lua"))() end)
local function step()
  local ok, msg = coroutine.resume(build)
  if not ok then
    table.insert(_G.build_log, { msg = "error: " .. tostring(msg), level = vim.log.levels.ERROR })
  elseif type(msg) == "table" then
    table.insert(_G.build_log, msg)
  end
  if coroutine.status(build) ~= "dead" then
    vim.defer_fn(step, 5)
  end
end
step()
vim.opt.runtimepath:prepend(plugin.dir)
require("codecompanion_py").setup(@SETUP@)
"""


def test_lazy_style_build_then_chat_with_no_remote_plugin(isolated):
    root = plugin_clone(isolated / "lazy" / "codecompanion-py")
    init = isolated / "init.lua"
    init.write_text(RECORD_MESSAGES + LAZY_INIT.replace("@DIR@", lua_str(root)).replace("@SETUP@", DEMO_SETUP))
    with neovim(init, isolated) as (session, _):
        # the build runs while Neovim goes on answering
        assert session.build_state() == "running"
        wait(lambda: session.build_state() in ("done", "failed"), BUILD_TIMEOUT, "the build")
        log = session.lua("return _G.build_log")
        assert session.build_state() == "done", log
        trace, info = vim_levels(session, "TRACE"), vim_levels(session, "INFO")
        assert any("Successfully installed" in m["msg"] and m["level"] == trace for m in log), log
        assert log[-1]["level"] == info and "the Python engine is installed" in log[-1]["msg"]
        assert (root / ".venv" / "bin" / "python").exists()

        assert_no_remote_plugin(session)
        chat_and_get_the_demo_reply(session, root)
        assert session.messages() == []


def vim_levels(session: Session, name: str) -> int:
    return session.lua(f"return vim.log.levels.{name}")


# --- (b) a native package, built from a shell -----------------------------------------------


@pytest.fixture(scope="module")
def packaged(tmp_path_factory) -> Path:
    """A native package (`pack/x/start/`) built as the README says for a shell:
    `nvim -l build.lua` in the plugin's directory."""
    site = tmp_path_factory.mktemp("site")
    root = plugin_clone(site / "pack" / "x" / "start" / "codecompanion-py")
    out = subprocess.run(
        [nvim_binary(), "-l", "build.lua"], cwd=root, capture_output=True, text=True, timeout=BUILD_TIMEOUT
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "the Python engine is installed" in out.stdout.splitlines()[-1], out.stdout
    return site


def package_init(path: Path, setup: str) -> Path:
    path.write_text(RECORD_MESSAGES + f'require("codecompanion_py").setup({setup})\n')
    return path


def test_native_package_in_packpath_works_with_no_remote_plugin(isolated, packaged):
    init = package_init(isolated / "init.lua", DEMO_SETUP)
    root = packaged / "pack" / "x" / "start" / "codecompanion-py"
    with neovim(init, isolated, "--cmd", f"set packpath^={packaged}") as (session, _):
        assert session.lua("return require('codecompanion_py.rpc').root()") == str(root)
        assert_no_remote_plugin(session)
        chat_and_get_the_demo_reply(session, root)
        assert session.messages() == []


# --- (c) no venv, or a venv without the engine ------------------------------------------------

OPT_INIT = """
vim.opt.packpath:prepend({site})
vim.cmd.packadd("codecompanion-py")
require("codecompanion_py").setup({setup})
"""


def test_without_the_venv_the_first_command_says_what_to_run(isolated):
    site = isolated / "site"
    root = plugin_clone(site / "pack" / "x" / "opt" / "codecompanion-py")
    init = isolated / "init.lua"
    init.write_text(RECORD_MESSAGES + OPT_INIT.format(site=lua_str(site), setup=DEMO_SETUP))
    with neovim(init, isolated) as (session, _):
        session.nvim.command("CodeCompanionChat hello")  # no Lua error: a message
        message = session.wait_message("not installed")
        assert ":CodeCompanionInstall" in message
        assert f"in a shell: cd {root} && python3 -m venv .venv && .venv/bin/pip install -e .)" in message
        assert str(root / ".venv" / "bin" / "python") in message
        assert session.chat()["status"] == "idle"  # the prompt stays, to send once installed
        assert session.nvim.current.buffer.options["modifiable"]
        assert session.host() is None


def test_a_venv_without_the_engine_is_reported_then_installed_from_neovim(isolated):
    site = isolated / "site"
    root = plugin_clone(site / "pack" / "x" / "opt" / "codecompanion-py")
    # a venv left half made: a Python, no pip, no engine
    subprocess.run(
        [shutil.which("python3") or "python3", "-m", "venv", "--without-pip", str(root / ".venv")],
        check=True,
        timeout=60,
    )
    init = isolated / "init.lua"
    init.write_text(RECORD_MESSAGES + OPT_INIT.format(site=lua_str(site), setup=DEMO_SETUP))
    with neovim(init, isolated) as (session, _):
        session.nvim.command("CodeCompanionChat hello")
        message = session.wait_message("not installed in")
        assert "No module named 'codecompanion_py'" in message and ":CodeCompanionInstall" in message
        session.wait_for(lambda: session.chat()["status"] == "idle", what="the chat to be unlocked")
        assert session.host() is None
        # one message says why, and the one typed is kept, whether it had gone out or not
        assert len(session.messages()) == 1, session.messages()
        assert "hello" in session.lines()

        session.nvim.command("CodeCompanionInstall")  # returns at once; the install goes on
        wait(lambda: session.build_state() in ("done", "failed"), BUILD_TIMEOUT, "the install")
        assert session.build_state() == "done", session.messages()
        session.wait_message("the Python engine is installed")

        # Whether the engine was seen to fail before the message went (it stays to be sent) or
        # after (the chat shows the error and a new prompt) is a race of milliseconds.
        ended = sum(event["event"] == "CodeCompanionChatDone" for event in session.events())
        if session.lines()[-1] != "hello":
            session.type_prompt("hello again")
        session.nvim.input("<CR>")
        done = session.wait_event("CodeCompanionChatDone", count=ended + 1, timeout=30)
        assert done["data"]["status"] == "success"
        assert "Hello from the **demo** adapter" in session.text()
        assert session.host()["python"] == str(root / ".venv" / "bin" / "python")


# --- (d) the host dies mid-reply ----------------------------------------------------------------


def chunk(content: str | None = None, finish: str | None = None) -> dict:
    delta = {} if content is None else {"content": content}
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def test_killed_host_unlocks_the_chat_and_the_next_message_starts_a_new_one(isolated, packaged):
    hanging = sse_reply([chunk("Half an ans")], done=False)
    hanging = Reply(headers=hanging.headers, chunks=hanging.chunks, hang=True)
    finished = sse_reply([chunk("A whole answer."), chunk(finish="stop")])
    with ServerThread(ScriptedServer.sequence([hanging, finished])) as server:
        setup = f"""{{
          adapters = {{ http = {{ testllm = function()
            return require("codecompanion_py.adapters").extend("openai_compatible", {{
              env = {{ url = "{server.url}" }}, schema = {{ model = {{ default = "test-model" }} }},
            }})
          end }} }},
          interactions = {{ chat = {{ adapter = "testllm" }} }},
        }}"""
        init = package_init(isolated / "init.lua", setup)
        with neovim(init, isolated, "--cmd", f"set packpath^={packaged}") as (session, hosts):
            session.nvim.command("CodeCompanionChat first question")
            session.wait_for(lambda: "Half an ans" in session.text(), what="the reply to start")
            assert session.chat()["status"] == "streaming"
            first = session.host()["pid"]
            hosts.append(first)

            os.kill(first, signal.SIGKILL)
            message = session.wait_message("the Python engine stopped")
            assert "the next command starts it again" in message
            session.wait_for(lambda: session.chat()["status"] == "idle", what="the chat to be unlocked")
            assert session.nvim.current.buffer.options["modifiable"]
            assert f"> **Error:** {message.removeprefix('CodeCompanion: ')}" in session.text()
            assert session.lines()[-3:] == ["## Me", "", ""]
            assert session.host() is None
            assert [m for m in session.messages() if "stopped" in m] == [message]  # told once
            health = session.nvim.exec_lua("""
              local report = {}
              local h = vim.health
              h.start, h.ok, h.info = function() end, function() end, function() end
              h.warn = function(text) table.insert(report, text) end
              h.error = function(text) table.insert(report, text) end
              require("codecompanion_py.health").check()
              return report""")
            assert any("earlier in this session the Python engine stopped" in line for line in health), health

            session.type_prompt("second question")
            session.nvim.input("<CR>")
            done = session.wait_event("CodeCompanionChatDone", count=2, timeout=30)
            assert done["data"]["status"] == "success"
            assert session.text().rstrip().endswith("A whole answer.\n\n## Me")
            second = session.host()["pid"]
            assert second != first
            assert server.requests[-1].json()["messages"][-1] == {"role": "user", "content": "second question"}


# --- (e) a failing install, on each of build.lua's three fronts (no pip: it fails at once) ---------


@pytest.fixture
def unbuildable(tmp_path) -> Path:
    """A plugin directory with build.lua and its installer, where no venv can be made (.venv is a
    file), so that the installer fails on its first step."""
    root = tmp_path / "plugin"
    for rel in ("build.lua", "codecompanion_py/install.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, root / rel)
    (root / ".venv").write_text("")
    return root


def test_from_a_shell_a_failed_install_prints_why_and_exits_1(unbuildable):
    out = subprocess.run(
        [nvim_binary(), "-l", "build.lua"], cwd=unbuildable, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 1, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(f"creating {unbuildable / '.venv'} with ")
    assert lines[1].startswith("  ")  # the tool's own output, indented
    assert f"could not create {unbuildable / '.venv'}:" in lines


def test_from_a_shell_a_python_that_does_not_run_fails_the_install(unbuildable):
    argv = [nvim_binary(), "--cmd", "let g:codecompanion_py_build_python = '/no/such/python'", "-l", "build.lua"]
    out = subprocess.run(argv, cwd=unbuildable, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "/no/such/python" in out.stdout and "ENOENT" in out.stdout, out.stdout


def test_in_the_background_a_failed_install_is_notified_and_fires_the_event(isolated, unbuildable):
    init = isolated / "init.lua"
    init.write_text(RECORD_MESSAGES)
    with neovim(init, isolated) as (session, _):
        session.nvim.command(f"luafile {unbuildable / 'build.lua'}")
        assert session.build_state() == "running"
        session.nvim.command(f"luafile {unbuildable / 'build.lua'}")  # a second one is turned away
        built = session.wait_event("CodeCompanionPyBuilt", timeout=30)
        assert session.build_state() == "failed"
        python = str(unbuildable / ".venv" / "bin" / "python")
        assert built["data"]["ok"] is False and built["data"]["python"] == python
        assert built["data"]["message"].startswith(f"could not create {unbuildable / '.venv'}:")
        messages = session.lua("return _G.cc_messages")
        levels = session.lua("return vim.log.levels")
        assert messages[0] == {"msg": "CodeCompanion: an install is already running", "level": levels["WARN"]}
        assert messages[1]["msg"].startswith("CodeCompanion: creating ") and messages[1]["level"] == levels["INFO"]
        assert messages[-1] == {"msg": "CodeCompanion: " + built["data"]["message"], "level": levels["ERROR"]}
        assert len(messages) == 3  # a tool's output is not notified


def test_in_lazy_a_failed_install_is_the_tasks_error(isolated, unbuildable):
    init = isolated / "init.lua"
    init.write_text(LAZY_INIT.split("vim.opt.runtimepath")[0].replace("@DIR@", lua_str(unbuildable)))
    with neovim(init, isolated) as (session, _):
        wait(lambda: session.build_state() == "failed", 30, "the build to fail")
        log = session.lua("return _G.build_log")
        trace = vim_levels(session, "TRACE")
        assert log[0]["msg"].startswith("creating ") and log[0]["level"] == vim_levels(session, "INFO")
        assert all(entry["level"] == trace for entry in log[1:-1]), log
        assert log[-1]["msg"].startswith(f"error: could not create {unbuildable / '.venv'}:\n"), log
        assert session.events()[-1]["event"] == "CodeCompanionPyBuilt"
