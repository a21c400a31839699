import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from codecompanion_py.client import HttpClient
from codecompanion_py.demo.server import Reply, ScriptedServer

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def fixture_bytes():
    def read(name: str) -> bytes:
        return (FIXTURES / name).read_bytes()

    return read


@pytest.fixture
async def client():
    """An HttpClient without retries, closed after the test: these tests check what each
    failure says (tests/reliability tests retrying). A module may define its own."""
    http = HttpClient(read_timeout=5, connect_timeout=2, retries=0)
    yield http
    await http.aclose()


@pytest.fixture
async def scripted_server():
    """`await scripted_server(*replies)`: a started `ScriptedServer` answering with `replies`
    in turn; every server started so is closed after the test."""
    servers: list[ScriptedServer] = []

    async def start(*replies: Reply) -> ScriptedServer:
        server = ScriptedServer.sequence(list(replies))
        await server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.close()


@pytest.fixture(scope="session")
def tls_server_context(tmp_path_factory) -> ssl.SSLContext:
    """A server's TLS context, its certificate for 127.0.0.1 made by openssl (so no client
    trusts it unless told not to verify)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: no certificate for the TLS test")
    folder = tmp_path_factory.mktemp("tls")
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


@pytest.fixture(autouse=True)
def no_known_secrets():
    """Each test starts knowing only the secrets of its own environment and adapters
    (`scrubber.KNOWN` otherwise keeps every key an earlier test resolved)."""
    from codecompanion_py.scrubber import KNOWN

    KNOWN.forget()
    yield


@pytest.fixture
def openai_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    return "sk-test-not-real"


@pytest.fixture(scope="session", autouse=True)
def demo_server():
    """The `demo` adapter's scripted server, named in CODECOMPANION_DEMO_URL for the whole
    run as `make demo` names it for the Neovim it opens (the Neovim children of the e2e
    tests inherit it)."""
    from codecompanion_py.adapters.http.demo import URL_ENV
    from codecompanion_py.demo.provider import serve

    with serve() as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv(URL_ENV, server.url)
        yield server.url


# Agents started by the tests (scripted or real) must all be gone when the run ends:
# a leftover means some path does not kill an agent's process group.
AGENT_MARKERS = (b"fake_agent.py", b"codex-acp", b"claude-agent-acp", b"fake_cli")


def _agent_processes() -> list[str]:
    found = []
    for pid in (p for p in Path("/proc").iterdir() if p.name.isdigit()):
        try:
            cmdline = (pid / "cmdline").read_bytes()
            state = (pid / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X") and any(marker in cmdline for marker in AGENT_MARKERS):
            shown = cmdline.replace(b"\0", b" ").decode(errors="replace")[:120]
            found.append(f"{pid.name}: {shown}")
    return found


def pytest_sessionfinish(session, exitstatus):
    if not Path("/proc").is_dir():
        return
    import time

    deadline = time.monotonic() + 5  # a group being stopped gets its grace period
    while (left := _agent_processes()) and time.monotonic() < deadline:
        time.sleep(0.1)
    if left:
        print("\nagent processes left behind by the tests:\n  " + "\n  ".join(left))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
