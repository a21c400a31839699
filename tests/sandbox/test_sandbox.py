"""The sandbox with real mechanisms: bubblewrap (the wheel's bwrap) and Landlock (the
kernel's), each skipped with its reason where this machine lacks it. Commands are real
processes started the way run_command starts them; the network is a real server on
127.0.0.1.

The fake home and the folder "outside" live under /var/tmp, not /tmp: /tmp is the commands'
writable temp dir, where a write that should be refused would succeed.
"""

from __future__ import annotations

import asyncio
import http.server
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codecompanion_py.processes.run import ProcessResult, run_process
from codecompanion_py.sandbox import Sandbox, SandboxPolicy, available
from codecompanion_py.sandbox.hints import lacked_network
from codecompanion_py.tools.workspace import Workspace

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox's mechanisms are Linux's")

MECHANISMS = [
    pytest.param(
        name,
        marks=pytest.mark.skipif(available(name).name != name, reason=f"no {name} here: {available(name).reason}"),
    )
    for name in ("bubblewrap", "landlock")
]


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside both the project and /tmp."""
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else os.path.expanduser("~")
    path = Path(tempfile.mkdtemp(prefix="cc-sandbox-test-", dir=base))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def home(outside: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = outside / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (home / ".netrc").write_text("machine x login me password hunter2\n")
    (home / "notes.txt").write_text("just notes\n")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (root / "src").mkdir()
    return root


async def run(sandbox: Sandbox, code: str, cwd: Path) -> ProcessResult[str]:
    launch = await sandbox.launch([sys.executable, "-c", textwrap.dedent(code)], cwd=str(cwd), env=dict(os.environ))
    return await run_process(launch.argv, cwd=cwd, timeout=60, env=launch.env, preexec=launch.preexec)


def sandbox(mechanism: str, project: Path, **policy: object) -> Sandbox:
    root = str(project)
    found = Sandbox(SandboxPolicy(mechanism=mechanism, **policy), root=root)  # type: ignore[arg-type]
    assert found.availability.name == mechanism
    return found


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_a_command_writes_in_the_project_and_its_temp_dir_and_nowhere_else(mechanism, project, outside, home):
    result = await run(
        sandbox(mechanism, project),
        f"""
        import os, tempfile
        open("src/made.txt", "w").write("ok")
        with tempfile.NamedTemporaryFile() as scratch:  # the temp dir (/tmp or $TMPDIR)
            scratch.write(b"scratch")
        for path in ({str(outside / "escaped.txt")!r}, {str(home / "escaped.txt")!r}, "/usr/escaped.txt"):
            try:
                open(path, "w").write("escaped")
                print("WROTE", path)
            except OSError as error:
                print("refused", error.errno)
        """,
        project,
    )
    assert result.ok, result.output
    assert "WROTE" not in result.output and result.output.count("refused") == 3
    assert (project / "src" / "made.txt").read_text() == "ok"
    assert not (outside / "escaped.txt").exists() and not (home / "escaped.txt").exists()


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_a_command_cannot_read_denied_paths_but_reads_the_rest_of_home(mechanism, project, home):
    result = await run(
        sandbox(mechanism, project),
        f"""
        home = {str(home)!r}
        for name in ("notes.txt", ".ssh/id_ed25519", ".netrc"):
            try:
                print(name, "READ", open(home + "/" + name).read().strip())
            except OSError as error:
                print(name, "refused", error.errno)
        """,
        project,
    )
    assert "notes.txt READ just notes" in result.output
    assert "PRIVATE KEY" not in result.output and "hunter2" not in result.output
    assert ".ssh/id_ed25519 READ" not in result.output and ".netrc READ" not in result.output


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_a_users_deny_entry_is_unreadable_too(mechanism, project, home):
    (home / "work-token").write_text("tok-123\n")
    result = await run(
        sandbox(mechanism, project, deny_read=(*SandboxPolicy().deny_read, "~/work-token")),
        f"print(open({str(home / 'work-token')!r}).read())",
        project,
    )
    assert not result.ok and "tok-123" not in result.output


class Server:
    """An HTTP server on 127.0.0.1 that answers every GET with "hello"."""

    def __init__(self) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                self.send_response(200)
                self.send_header("Content-Length", "5")
                self.end_headers()
                self.wfile.write(b"hello")

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    found = Server()
    yield found
    found.close()


def connect(port: int) -> str:
    return f"""
    import socket
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
        print("CONNECTED")
    except OSError as error:
        print("refused", error)
    """


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_the_network_is_off_unless_the_policy_opens_it(mechanism, project, server):
    off = await run(sandbox(mechanism, project), connect(server.port), project)
    assert "CONNECTED" not in off.output and "refused" in off.output
    on = await run(sandbox(mechanism, project, network=True), connect(server.port), project)
    assert "CONNECTED" in on.output


FETCH = """
import os, urllib.request
try:
    print(urllib.request.urlopen("http://127.0.0.1:{port}/", timeout=10).read().decode())
except Exception as error:
    print("FAILED", error)
"""


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_a_host_list_lets_http_through_the_proxy_to_those_hosts_only(mechanism, project, server):
    allowed = sandbox(mechanism, project, network=("127.0.0.1",))
    result = await run(allowed, FETCH.format(port=server.port), project)
    assert result.output.strip() == "hello", result.output
    direct = await run(allowed, connect(server.port), project)  # around the proxy: no way
    assert "CONNECTED" not in direct.output
    unix = await run(allowed, "import socket; socket.socket(socket.AF_UNIX)", project)  # the relay's filter
    assert not unix.ok and "Permission denied" in unix.output
    other = sandbox(mechanism, project, network=("pypi.org",))
    refused = await run(other, FETCH.format(port=server.port), project)
    assert "FAILED" in refused.output and "hello" not in refused.output
    assert other.proxy is not None and other.proxy.refused[-1] == "127.0.0.1"
    assert lacked_network(refused.output, other.proxy.refused) == "127.0.0.1"


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_a_small_project_builds_and_tests_inside(mechanism, project):
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (project / "test_calc.py").write_text(
        "import multiprocessing\nfrom calc import add\n\ndef test_add():\n"
        "    multiprocessing.Lock()  # shared memory, as pytest-xdist and friends use\n"
        "    assert add(2, 3) == 5\n"
    )
    launch = await sandbox(mechanism, project).launch(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly"], cwd=str(project), env=dict(os.environ)
    )
    result = await run_process(launch.argv, cwd=project, timeout=120, env=launch.env, preexec=launch.preexec)
    assert result.ok and "1 passed" in result.output, result.output
    assert (project / ".pytest_cache").is_dir()  # it wrote its cache in the project


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_no_unix_socket_can_be_reached_whatever_its_name(mechanism, project, outside):
    """Not by hiding paths (a socket bound by a relative name, or renamed since, is listed
    under a name it no longer has): no Unix socket can be made at all."""
    os.chdir(outside)
    listening = socket.socket(socket.AF_UNIX)
    listening.bind("relative.sock")  # /proc/net/unix lists it as "relative.sock"
    listening.listen()
    os.rename(outside / "relative.sock", outside / "moved.sock")
    try:
        result = await run(
            sandbox(mechanism, project, network=True),
            f"""
            import socket
            try:
                s = socket.socket(socket.AF_UNIX); s.connect({str(outside / "moved.sock")!r}); print("SOCKET")
            except OSError as error:
                print("refused", error.errno)
            a, b = socket.socketpair(); a.send(b"x"); print("pair", b.recv(1))
            """,
            project,
        )
    finally:
        listening.close()
    assert "refused 13" in result.output and "SOCKET" not in result.output
    assert "pair b'x'" in result.output  # a process's own socket pairs still work


@pytest.mark.skipif(available("bubblewrap").name != "bubblewrap", reason="bubblewrap only")
async def test_git_can_read_the_repository_but_nothing_in_git_can_be_made_to_run_code(project):
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    box = Sandbox(SandboxPolicy(), root=str(project), readonly=Workspace(project).code_running_paths)
    result = await run(
        box,
        """
        import os, subprocess
        print("status", subprocess.run(["git", "status", "--short"], capture_output=True).returncode)
        for path in (".git/commondir", ".git/hooks/pre-commit", ".git/config", ".git/info/attributes"):
            try:
                open(path, "a").write("x")
                print("WROTE", path)
            except OSError:
                print("refused", path)
        print("caps", open("/proc/self/status").read().split("CapEff:")[1].split()[0])
        """,
        project,
    )
    assert "status 0" in result.output and "WROTE" not in result.output and result.output.count("refused") == 4
    assert "caps 0000000000000000" in result.output  # none, even for root
    assert not (project / ".git" / "commondir").exists()


@pytest.mark.skipif(available("bubblewrap").name != "bubblewrap", reason="bubblewrap only")
async def test_an_agents_loader_variables_reach_only_the_command_never_bubblewrap(project):
    (project / "marker.txt").write_text("")
    box = Sandbox(SandboxPolicy(), root=str(project))
    env = {**os.environ, "LD_PRELOAD": str(project / "missing.so"), "LD_DEBUG_OUTPUT": "x"}
    launch = await box.launch(["sh", "-c", "echo $LD_PRELOAD"], cwd=str(project), env=env)
    assert not any(name.startswith("LD_") for name in launch.env)  # bwrap's own environment
    result = await run_process(launch.argv, cwd=project, timeout=30, env=launch.env, preexec=launch.preexec)
    assert str(project / "missing.so") in result.output  # the command still got it


@pytest.mark.skipif(available("bubblewrap").name != "bubblewrap", reason="bubblewrap only")
async def test_under_bubblewrap_code_running_files_sockets_and_other_processes_are_out_of_reach(
    project, outside, tmp_path
):
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(outside / "editor.sock"))  # as Neovim's server socket would be
    listening.listen()
    hooks = project / ".git" / "hooks"
    box = Sandbox(SandboxPolicy(), root=str(project), readonly=lambda: [str(hooks), str(project / ".git" / "config")])
    code = f"""
    import os, socket
    for path in (".git/hooks/pre-commit", ".git/config", "src/ok.txt"):
        try:
            open(path, "a").write("x")
            print("wrote", path)
        except OSError as error:
            print("refused", path)
    try:  # a new .git in place of the old one would bring writable hooks
        os.rename(".git", ".git-old")
        print("RENAMED .git")
    except OSError:
        print("kept .git")
    try:
        s = socket.socket(socket.AF_UNIX); s.connect({str(outside / "editor.sock")!r}); print("SOCKET")
    except OSError:
        print("no socket")
    try:
        print("ENV", open("/proc/{os.getpid()}/environ").read()[:20])
    except OSError:
        print("no environ")
    print("pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
    """
    try:
        result = await run(box, code, project)
    finally:
        listening.close()
    assert "refused .git/hooks/pre-commit" in result.output and "refused .git/config" in result.output
    assert "wrote src/ok.txt" in result.output and "kept .git" in result.output
    assert "no socket" in result.output and "ENV" not in result.output
    pids = eval(result.output.split("pids ", 1)[1].splitlines()[0])  # noqa: S307 (our own print)
    assert len(pids) <= 3  # its own PID namespace: bubblewrap's init, python (and nothing of ours)
    assert not (hooks / "pre-commit").exists()


async def test_a_sandbox_turned_off_runs_as_before(project, outside):
    box = Sandbox(SandboxPolicy(enabled=False), root=str(project))
    assert not box.confined and "turned off" in box.describe()
    launch = await box.launch(["true"], cwd=str(project), env={})
    assert launch.argv == ["true"] and launch.preexec is None and launch.mechanism == "none"


async def test_a_timed_out_sandboxed_command_leaves_nothing_running(project):
    if available().name == "none":
        pytest.skip(f"no sandbox here: {available().reason}")
    marker = "sleep 61.75"
    box = Sandbox(SandboxPolicy(), root=str(project))
    launch = await box.launch(["sh", "-c", f"{marker} & {marker}"], cwd=str(project), env=dict(os.environ))
    result = await run_process(launch.argv, cwd=project, timeout=0.5, env=launch.env, preexec=launch.preexec)
    assert result.timed_out
    for _ in range(100):
        left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _argv_has(p, b"61.75")]
        if not left:
            break
        await asyncio.sleep(0.05)
    assert not left


def _argv_has(entry: Path, needle: bytes) -> bool:
    try:
        return needle in (entry / "cmdline").read_bytes()
    except OSError:
        return False


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_a_command_keeps_no_capability_and_cannot_read_the_engines_environment(mechanism, project):
    code = f"""
    print("caps", open("/proc/self/status").read().split("CapEff:")[1].split()[0])
    try:
        print("ENV", open("/proc/{os.getpid()}/environ").read()[:20])
    except OSError:
        print("no environ")
    """
    result = await run(sandbox(mechanism, project), code, project)
    assert "caps 0000000000000000" in result.output  # none, even when the editor runs as root
    assert "no environ" in result.output and "ENV" not in result.output
