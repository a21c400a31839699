"""run_process: shell detection, secrets kept out, capped output, and no orphans on
timeout or cancel."""

import asyncio
import os
import signal
import sys

import pytest

from codecompanion_py import processes
from codecompanion_py.errors import ToolError
from codecompanion_py.processes import safe_env, strip_ansi, to_argv
from codecompanion_py.processes.capture import Capture
from codecompanion_py.processes.commands import needs_shell
from codecompanion_py.processes.groups import live_members
from codecompanion_py.processes.run import ProcessResult, run_process
from tests.waiting import async_wait_until

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


async def group_gone(pgid):
    await async_wait_until(
        lambda: not live_members(pgid), message=lambda: f"group {pgid} to end; still running: {live_members(pgid)}"
    )


async def read_pid(path):
    await async_wait_until(lambda: path.exists() and path.read_text().strip().isdigit(), message=f"a pid in {path}")
    return int(path.read_text())


# --- needs_shell / to_argv / safe_env ---------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "pytest tests/ -q",
        "git log --format=%H -n 3",
        "git commit -m 'a message'",
        'echo "a b"',
        "make",
        "",
        "a#b",
    ],
)
def test_plain_commands_need_no_shell(command):
    assert needs_shell(command) is False


@pytest.mark.parametrize(
    "command",
    [
        "echo a | wc -l",
        "make && make test",
        "a; b",
        "cat < f",
        "echo > f",
        "(cd x)",
        "echo $HOME",
        "echo `date`",
        "ls *.py",
        "ls ?.py",
        "ls [ab].py",
        "echo {a,b}",
        "ls ~",
        "echo hi!",
        "a\nb",
        "a\rb",
        "cd src",
        "export A=1",
        "source env.sh",
        ". env.sh",
        "if true",
        "for x",
        "while true",
        "FOO=1 make",
        "echo 'unbalanced",
        'echo "unbalanced',
        "ls # comment",
        "sleep 1 &",
    ],
)
def test_shell_syntax_needs_a_shell(command):
    assert needs_shell(command) is True


def test_to_argv():
    assert to_argv("git status --short") == ["git", "status", "--short"]
    assert to_argv("git commit -m 'a message'") == ["git", "commit", "-m", "a message"]
    assert to_argv("python -c 'print(1)'") == ["/bin/sh", "-c", "python -c 'print(1)'"]
    assert to_argv("ls | wc -l") == ["/bin/sh", "-c", "ls | wc -l"]
    assert to_argv(["echo", "a | b", "$HOME"]) == ["echo", "a | b", "$HOME"]
    assert to_argv(("echo",)) == ["echo"]


def test_safe_env_drops_secrets_and_keeps_the_rest():
    base = {
        "PATH": "/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "TERM": "xterm",
        "USER": "u",
        "OPENAI_API_KEY": "x",
        "anthropic_api_key": "x",
        "GITHUB_TOKEN": "x",
        "DB_PASSWORD": "x",
        "MYSQL_PASSWD": "x",
        "CLIENT_SECRET": "x",
        "GOOGLE_APPLICATION_CREDENTIALS": "x",
        "AWS_REGION": "x",
        "AWS_ACCESS_KEY_ID": "x",
        "GITLAB_PAT": "x",
        "SSH_AUTH_SOCK": "/tmp/s",
    }
    # an allowlist: SSH_AUTH_SOCK hands out the user's keys, so it is out unless allowed
    assert safe_env(base) == {"PATH": "/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "TERM": "xterm", "USER": "u"}
    assert safe_env(base, allow=["GITHUB_TOKEN"])["GITHUB_TOKEN"] == "x"
    assert "OPENAI_API_KEY" in base  # the base is not modified


def test_safe_env_defaults_to_os_environ(monkeypatch):
    monkeypatch.setenv("FOO_API_KEY", "secret-value")
    monkeypatch.setenv("TZ", "plain")
    env = safe_env()
    assert "FOO_API_KEY" not in env
    assert env["TZ"] == "plain"
    assert env["PATH"] == os.environ["PATH"]


def test_strip_ansi():
    assert (
        strip_ansi("\x1b[1;31mred\x1b[0m plain \x1b]0;title\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b(Bz")
        == "red plain link z"
    )


def test_capture_keeps_head_and_tail_within_the_limit():
    capture = Capture(1000)
    for i in range(10_000):
        capture.add(f"{i:09d}\n".encode() * 10)
        assert len(capture.head) + len(capture.tail) <= 1000
    rendered = capture.render()
    assert rendered.startswith(b"".join(f"{i:09d}\n".encode() * 10 for i in range(5)))
    assert rendered.endswith(b"".join(f"{i:09d}\n".encode() * 10 for i in range(9995, 10_000)))
    assert f"\n[... {capture.total - 1000} bytes omitted ...]\n".encode() in rendered


def test_capture_without_overflow_is_the_input():
    capture = Capture(10)
    capture.add(b"abc")
    capture.add(b"defghij")
    assert capture.render() == b"abcdefghij"
    capture.add(b"k")
    assert capture.render() == b"abcde\n[... 1 bytes omitted ...]\nghijk"


# --- running ----------------------------------------------------------------------------


async def test_runs_without_a_shell(tmp_path):
    result = await run_process("echo hello   world", cwd=tmp_path)
    assert result == ProcessResult(("echo", "hello", "world"), 0, "hello world\n", False, False)
    assert result.ok


async def test_runs_in_cwd(tmp_path):
    result = await run_process(["pwd"], cwd=tmp_path)
    assert result.output.strip() == os.path.realpath(tmp_path)


async def test_shell_command_interleaves_stdout_and_stderr(tmp_path):
    result = await run_process("echo one; echo two >&2; echo three; exit 3", cwd=tmp_path)
    assert result.argv == ("/bin/sh", "-c", "echo one; echo two >&2; echo three; exit 3")
    assert result.output == "one\ntwo\nthree\n"
    assert result.exit_code == 3
    assert not result.ok and not result.timed_out


async def test_output_is_decoded_and_cleaned(tmp_path):
    result = await run_process(["printf", r"\033[32mgreen\033[0m \377 caf\303\251"], cwd=tmp_path)
    assert result.output == "green \ufffd café"


async def test_large_output_keeps_head_and_tail(tmp_path):
    result = await run_process("yes | head -c 5000000", cwd=tmp_path, max_output=1000)
    assert result.exit_code == 0 and result.truncated
    assert result.output == "y\n" * 250 + "[... 4999000 bytes omitted ...]\n" + "y\n" * 250


async def test_large_output_head_and_tail_are_the_right_ends(tmp_path):
    total = sum(len(str(i)) + 1 for i in range(1, 300_001))
    result = await run_process(["seq", "1", "300000"], cwd=tmp_path, max_output=2000)
    assert result.truncated
    head, marker, tail = result.output.partition(f"[... {total - 2000} bytes omitted ...]\n")
    assert marker
    assert head.startswith("1\n2\n3\n4\n")
    assert tail.endswith("299998\n299999\n300000\n")
    assert len(tail) == 1000


async def test_secrets_are_not_passed_to_the_child(tmp_path, monkeypatch):
    monkeypatch.setenv("FOO_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("TZ", "visible-value")
    result = await run_process(["env"], cwd=tmp_path)
    assert "TZ=visible-value" in result.output.splitlines()
    assert "FOO_API_KEY" not in result.output
    assert "sk-should-not-leak" not in result.output
    assert any(line.startswith("PATH=") for line in result.output.splitlines())


async def test_explicit_env_is_used_as_given(tmp_path):
    result = await run_process(["/usr/bin/env"], cwd=tmp_path, env={"ONLY": "this"})
    assert result.output == "ONLY=this\n"


async def test_missing_executable_is_a_result(tmp_path):
    result = await run_process("no-such-command-xyz --version", cwd=tmp_path)
    assert result.exit_code == 127
    assert "command not found: no-such-command-xyz" in result.output
    assert not result.ok


async def test_missing_cwd_raises_tool_error(tmp_path):
    with pytest.raises(ToolError, match="does not exist"):
        await run_process("echo hi", cwd=tmp_path / "nope")


async def test_empty_command_raises_tool_error(tmp_path):
    with pytest.raises(ToolError, match="empty command"):
        await run_process("   ", cwd=tmp_path)


async def test_stdin_is_dev_null_by_default(tmp_path):
    result = await run_process(["cat"], cwd=tmp_path, timeout=30)
    assert result == ProcessResult(("cat",), 0, "", False, False)
    if os.path.exists("/proc/self/fd/0"):
        result = await run_process(["readlink", "/proc/self/fd/0"], cwd=tmp_path)
        assert result.output == "/dev/null\n"


async def test_stdin_bytes_are_fed(tmp_path):
    result = await run_process(["cat"], cwd=tmp_path, stdin=b"line one\nline two\n")
    assert result.output == "line one\nline two\n"


async def test_large_stdin_and_large_output_do_not_deadlock(tmp_path):
    data = b"0123456789" * 300_000
    result = await run_process(["cat"], cwd=tmp_path, stdin=data, max_output=20, timeout=60)
    assert not result.timed_out and result.exit_code == 0
    assert result.output == "0123456789\n[... 2999980 bytes omitted ...]\n0123456789"


async def test_stdin_the_child_does_not_read(tmp_path):
    result = await run_process(["true"], cwd=tmp_path, stdin=b"x" * 1_000_000, timeout=60)
    assert result.exit_code == 0 and not result.timed_out


# --- timeout and cancellation ---------------------------------------------------------------


async def test_timeout_kills_the_whole_group(tmp_path):
    script = f"echo started; echo $$ > {tmp_path}/group; sleep 60 & echo $! > {tmp_path}/child; sleep 60"
    result = await run_process(script, cwd=tmp_path, timeout=1.5)
    assert result.timed_out
    assert result.exit_code is None
    assert not result.ok
    assert result.output == "started\n[timed out after 1.5 s]\n"
    pgid = int((tmp_path / "group").read_text())
    child = int((tmp_path / "child").read_text())
    await group_gone(pgid)
    assert not alive(child)


async def test_timeout_falls_back_to_sigkill(tmp_path, monkeypatch):
    monkeypatch.setattr(processes.run, "KILL_GRACE", 0.3)
    script = f"trap '' TERM; echo $$ > {tmp_path}/group; echo ready; sleep 60 & sleep 60"
    result = await run_process(["sh", "-c", script], cwd=tmp_path, timeout=1.5)
    assert result.timed_out
    assert result.output == "ready\n[timed out after 1.5 s]\n"
    pgid = int((tmp_path / "group").read_text())
    await group_gone(pgid)


async def test_cancel_kills_the_whole_group_and_reraises(tmp_path, monkeypatch):
    # cancel a running process, not one still being started: the pid files can be written
    # before asyncio has connected the child's pipes, and a cancel in that window is another
    # case (it came out of start_in_group, where nothing stops the group)
    started = asyncio.Event()
    start_in_group = processes.run.start_in_group

    async def start_and_tell(*args, **kwargs):
        proc = await start_in_group(*args, **kwargs)
        started.set()
        return proc

    monkeypatch.setattr(processes.run, "start_in_group", start_and_tell)
    script = f"echo $$ > {tmp_path}/group; sleep 60 & echo $! > {tmp_path}/child; sleep 60"
    task = asyncio.create_task(run_process(script, cwd=tmp_path, timeout=120))
    await asyncio.wait_for(started.wait(), 10)
    pgid = await read_pid(tmp_path / "group")
    child = await read_pid(tmp_path / "child")
    assert live_members(pgid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await group_gone(pgid)
    assert not alive(child)


async def test_background_process_holding_the_output_is_stopped(tmp_path):
    script = f"sleep 60 & echo $! > {tmp_path}/child; echo done"
    result = await run_process(["sh", "-c", script], cwd=tmp_path, timeout=30)
    assert not result.timed_out
    assert result.exit_code == 0
    assert result.output == "done\n[background processes still holding the output open were stopped]\n"
    child = int((tmp_path / "child").read_text())
    await async_wait_until(lambda: not alive(child), message=f"process {child} to be stopped")


async def test_background_process_with_its_own_output_is_left_alone(tmp_path):
    script = f"sleep 30 > /dev/null 2>&1 & echo $! > {tmp_path}/child; echo done"
    result = await run_process(["sh", "-c", script], cwd=tmp_path, timeout=30)
    child = int((tmp_path / "child").read_text())
    try:
        assert result == ProcessResult(("sh", "-c", script), 0, "done\n", False, False)
        assert alive(child)
    finally:
        os.kill(child, signal.SIGKILL)
