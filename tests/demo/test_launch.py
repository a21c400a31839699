import os
import signal
import subprocess
import sys

import httpx
import pytest

from codecompanion_py import agenerate
from codecompanion_py.adapters import resolve
from codecompanion_py.adapters.http.demo import URL_ENV
from codecompanion_py.client import HttpClient
from codecompanion_py.demo import launch
from codecompanion_py.demo.launch import choose_adapter, setup_lua
from codecompanion_py.demo.provider import HELLO_PY, serve
from codecompanion_py.demo.server import ScriptedServer, ServerThread, json_reply
from codecompanion_py.errors import ConfigError
from codecompanion_py.events import FinalEvent
from codecompanion_py.messages import Message
from codecompanion_py.stream.iterators import HttpStreamIterator, replay_stream

KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")


def test_a_key_in_the_environment_picks_its_provider(monkeypatch):
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    assert choose_adapter()[:2] == ("gemini", None)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    choice = choose_adapter()
    assert choice[:2] == ("openai", None)
    assert choice.why == "make demo: openai, as OPENAI_API_KEY is set (unset it for the offline demo)"


def test_a_local_ollama_is_used_with_its_first_model_else_the_demo(monkeypatch):
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    tags = json_reply({"models": [{"name": "qwen3:8b"}, {"name": "llama3.1"}]})
    with ServerThread(ScriptedServer.sequence([tags])) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.url)
        name, definition, why = choose_adapter()
        assert name == "ollama" and '"qwen3:8b"' in definition
        assert why == "make demo: ollama qwen3:8b, as Ollama answers (stop it for the offline demo)"
        assert server.requests[0].path == "/api/tags"
        assert 'adapter = "ollama"' in setup_lua(name, definition)
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:9")
    assert choose_adapter() == ("demo", None, "make demo: the offline demo adapter (no key, no network)")


# --- the demo adapter and its server --------------------------------------------------


async def test_the_demo_adapter_talks_to_the_server_named_in_the_environment(monkeypatch):
    client = HttpClient()
    try:
        with serve() as server:
            monkeypatch.setenv(URL_ENV, server.url)
            reply = await agenerate("demo", [Message.of("user", "Show me the demo")], client=client)
            events = await replay_stream(
                HttpStreamIterator(resolve("demo"), [Message.of("user", "streamed")], client=client)
            )
    finally:
        await client.aclose()
    assert "Hello from the **demo** adapter" in reply.text and "> Show me the demo" in reply.text
    assert isinstance(events[-1], FinalEvent) and "> streamed" in events[-1].message.text
    assert server.requests[0].path == "/v1/chat/completions"
    assert server.requests[0].headers["authorization"] == "Bearer demo"


async def test_without_the_server_the_demo_adapter_names_the_variable(monkeypatch):
    monkeypatch.delenv(URL_ENV, raising=False)
    with pytest.raises(ConfigError, match=f"demo: url \\(environment variable {URL_ENV}\\) is not set"):
        await agenerate("demo", [Message.of("user", "hi")])


def test_the_adapter_module_does_not_import_the_server():
    code = (
        "import sys; import codecompanion_py.adapters as a; a.resolve('demo'); "
        "print([m for m in sys.modules if m.startswith('codecompanion_py.demo')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_launcher_runs_neovim_in_the_demo_project_with_the_server_url_and_stops_the_server_after(
    monkeypatch, tmp_path
):
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(launch, "choose_adapter", lambda: launch.Choice("demo"))
    monkeypatch.setattr(launch, "update_remote_plugins", lambda init, env: None)
    monkeypatch.setattr(launch, "nvim_binary", lambda: "nvim")
    home = tmp_path / "home"
    monkeypatch.setattr(launch.tempfile, "mkdtemp", lambda prefix: str(home.mkdir() or home))
    monkeypatch.setattr(sys, "argv", ["launch"])
    seen = {}

    def fake_nvim(argv, env, cwd):
        seen["argv"], seen["url"], seen["cwd"] = argv, env[URL_ENV], cwd
        seen["file"] = (cwd / "hello.py").read_text()
        seen["init"] = (home / "init.lua").read_text()
        answer = httpx.post(
            env[URL_ENV] + "/v1/chat/completions",
            json={"model": "demo-1", "messages": [{"role": "user", "content": "hi"}]},
        )
        seen["reply"] = answer.json()["choices"][0]["message"]["content"]
        return 3

    monkeypatch.setattr(launch, "run_nvim", fake_nvim)
    with pytest.raises(SystemExit) as exited:
        launch.main()
    assert exited.value.code == 3
    assert seen["cwd"] == home / "project" and seen["file"] == HELLO_PY
    nvim, u, init, first, chat, c, suggest = seen["argv"]
    assert (nvim, u, init, first, chat, c) == (
        "nvim",
        "-u",
        str(home / "init.lua"),
        "hello.py",
        "+CodeCompanionChat",
        "-c",
    )
    assert suggest == 'lua vim.api.nvim_buf_set_lines(0, 2, 3, false, { "Tidy up hello.py" })'
    init_lua = seen["init"]
    assert 'adapter = "demo"' in init_lua and 'default_tools = { "files" }' in init_lua
    assert "nvim_echo" not in init_lua  # the offline demo needs no word of explanation
    assert not home.exists()
    assert "Hello from the **demo** adapter" in seen["reply"]
    with pytest.raises(httpx.ConnectError):
        httpx.get(seen["url"] + "/v1/models")


def launch_with(monkeypatch, tmp_path, fake_nvim, choice=None):
    """`launch.main()` in a temporary home of this test; its exit code and the home."""
    monkeypatch.setattr(launch, "choose_adapter", lambda: choice or launch.Choice("demo"))
    monkeypatch.setattr(launch, "nvim_binary", lambda: "nvim")
    home = tmp_path / "home"
    monkeypatch.setattr(launch.tempfile, "mkdtemp", lambda prefix: str(home.mkdir() or home))
    monkeypatch.setattr(sys, "argv", ["launch"])
    monkeypatch.setattr(launch, "run_nvim", fake_nvim)
    with pytest.raises(BaseException) as exited:
        launch.main()
    return exited.value, home


def test_the_launcher_removes_its_directory_when_neovim_fails_to_start(monkeypatch, tmp_path):
    def missing(argv, env, cwd):
        raise FileNotFoundError("nvim")

    error, home = launch_with(monkeypatch, tmp_path, missing)
    assert isinstance(error, FileNotFoundError) and not home.exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_the_launcher_removes_its_directory_when_it_is_signalled(monkeypatch, tmp_path, sig):
    def signalled(argv, env, cwd):
        os.kill(os.getpid(), sig)  # as `kill` from another terminal, or the terminal closing
        return 0

    before = signal.getsignal(sig)
    exited, home = launch_with(monkeypatch, tmp_path, signalled)
    assert isinstance(exited, SystemExit) and exited.code == 128 + sig
    assert not home.exists()
    assert signal.getsignal(sig) == before  # the launcher's handler is not left behind


def test_a_real_provider_is_named_on_the_terminal_and_in_neovim(monkeypatch, tmp_path, capfd):
    why = "make demo: openai, as OPENAI_API_KEY is set (unset it for the offline demo)"
    seen = {}

    def fake_nvim(argv, env, cwd):
        seen["init"] = (cwd.parent / "init.lua").read_text()
        return 0

    exited, _ = launch_with(monkeypatch, tmp_path, fake_nvim, launch.Choice("openai", None, why))
    assert exited.code == 0
    assert capfd.readouterr().err == why + "\n"
    assert f'local line = "{why}"' in seen["init"] and "vim.v.echospace" in seen["init"]


def test_the_users_arguments_replace_hello_py_with_their_paths_made_absolute(monkeypatch, tmp_path):
    monkeypatch.setattr(launch, "nvim_binary", lambda: "nvim")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.md").write_text("notes\n")
    argv = launch.nvim_argv(tmp_path / "init.lua", ["notes.md", "+10", "missing.txt"])
    assert argv[3:6] == [str(tmp_path / "notes.md"), "+10", "missing.txt"]
    assert "hello.py" not in argv[3:6] and argv[6] == "+CodeCompanionChat"


def test_the_provider_serves_on_its_own_and_prints_the_setting():
    proc = subprocess.Popen([sys.executable, "-m", "codecompanion_py.demo.provider"], stdout=subprocess.PIPE, text=True)
    try:
        name, _, url = proc.stdout.readline().strip().partition("=")
        assert name == URL_ENV and url.startswith("http://127.0.0.1:")
        answer = httpx.post(
            url + "/v1/chat/completions", json={"model": "demo-1", "messages": [{"role": "user", "content": "hello"}]}
        )
        assert "> hello" in answer.json()["choices"][0]["message"]["content"]
    finally:
        proc.kill()
        proc.wait()
