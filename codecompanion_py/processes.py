"""Child processes, each in its own process group, stopped as a group.

Shared by the tools (run_command, git and ripgrep for the search tools), the ACP client
(agents and the terminals they ask for), the ACP bridge (the native CLIs) and the
adapters' `cmd:` env values. Everything here is asyncio: the engine's loop must never
block on a child.

* `start_in_group` starts a child as the leader of a new session, so of its own process
  group (whose id is the child's pid): signalling the group reaches the background
  children it leaves too.
* `terminate_group` sends the group SIGTERM, then SIGKILL after `KILL_GRACE` seconds (or
  at once if that wait is cancelled); `group_alive` tells whether anything live is left.
* `to_argv` runs a command string without a shell unless it uses shell syntax
  (`needs_shell`); then it runs as `/bin/sh -c COMMAND`.
* `safe_env` is the part of the engine's environment that cannot carry a credential (an
  allowlist: `SAFE_ENV_NAMES`, `LC_*`), plus the names the user allows; `normalize_command`
  is a command as its approval shows it and as it runs; `strip_ansi` removes terminal
  escapes from output shown as text.
* Every group started here is tracked until it is gone: `kill_all_groups` SIGKILLs them
  (the engine's exit), and a janitor process kills them when this process dies without
  that (SIGKILL, a crash). `die_with_parent` makes a child die with the thread that
  started it.
* `run_process_raw` runs a command to its end: stdout and stderr share one pipe (the
  output interleaved as it was written), capped with bounded memory (the first half and a
  rolling last half of `max_output` bytes, joined by a `[... N bytes omitted ...]` line);
  on timeout, or when the awaiting task is cancelled, the whole group is stopped; stdin is
  /dev/null unless bytes are given.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import fnmatch
import functools
import logging
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ToolError

log = logging.getLogger("codecompanion_py.processes")

KILL_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL when a process group is stopped."""

DRAIN_GRACE = 1.0
"""Seconds the output may stay open after the command itself has exited (background
processes that inherited the pipe); past that those processes are stopped."""

_READ_CHUNK = 64 * 1024
_POLL = 0.05

_SHELL_CHARS = frozenset("|&;<>()$`*?[]{}~!\n\r")
_SHELL_WORDS = frozenset(
    {
        # keywords
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "case",
        "esac",
        "for",
        "select",
        "while",
        "until",
        "do",
        "done",
        "function",
        "time",
        "in",
        "[[",
        "]]",
        "{",
        "}",
        "!",
        # builtins that only mean something inside a shell
        ".",
        "source",
        "cd",
        "export",
        "unset",
        "set",
        "alias",
        "unalias",
        "eval",
        "exec",
        "exit",
        "return",
        "read",
        "readonly",
        "local",
        "declare",
        "typeset",
        "shift",
        "trap",
        "ulimit",
        "umask",
        "wait",
        "jobs",
        "fg",
        "bg",
        "pushd",
        "popd",
        "dirs",
        "builtin",
        "command",
        "type",
        "hash",
        "shopt",
        "let",
        "enable",
        "getopts",
        "times",
        "history",
        "disown",
        "suspend",
        "break",
        "continue",
    }
)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_COMMENT = re.compile(r"(?:^|\s)#")

SAFE_ENV_NAMES = frozenset(
    {
        # who and where: names and paths
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "TMPDIR",
        # language and time (and every LC_*, see SAFE_ENV_PREFIXES)
        "LANG",
        "LANGUAGE",
        "TZ",
        # the terminal type and colour wishes (the output is read as text anyway)
        "TERM",
        "COLORTERM",
        "NO_COLOR",
        # XDG base directories: where configuration and caches live. Not XDG_RUNTIME_DIR:
        # the session's sockets (keyrings, the ssh agent, D-Bus) are there.
        "XDG_CONFIG_HOME",
        "XDG_CACHE_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CONFIG_DIRS",
        "XDG_DATA_DIRS",
        # toolchains: install locations and search paths, never their registries' settings
        # (GOPROXY, PIP_INDEX_URL, NPM_CONFIG_*, BUNDLE_*, JAVA_TOOL_OPTIONS can hold
        # credentials)
        "GOPATH",
        "GOROOT",
        "GOBIN",
        "GOCACHE",
        "GOMODCACHE",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "RUSTUP_TOOLCHAIN",
        "JAVA_HOME",
        "NODE_PATH",
        "NVM_DIR",
        "NVM_BIN",
        "GEM_HOME",
        "GEM_PATH",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "CONDA_DEFAULT_ENV",
        "PYENV_ROOT",
        "PYENV_VERSION",
        "PYTHONPATH",
        # certificate bundles: public certificates, the ones a proxied network needs
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
        # git: which configuration files, and who commits. Not GIT_CONFIG_COUNT/KEY_n/
        # VALUE_n (an http.extraHeader can be a token), GIT_ASKPASS or GIT_SSH_COMMAND.
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_CEILING_DIRECTORIES",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
    }
)
"""The environment variables a command gets without asking: each holds a name, a path or a
setting, never a credential. Left out on purpose: PWD (the engine's, not the command's;
the shell sets its own), EDITOR/VISUAL/PAGER (nothing here has a terminal to open them
in), SSH_AUTH_SOCK and DBUS_SESSION_BUS_ADDRESS (they hand out the user's keys), the
proxies (`http://user:password@host`), DISPLAY and XAUTHORITY. Anything else is passed
only when the user names it (`run_command`'s `env_allow`)."""

SAFE_ENV_PREFIXES = ("LC_",)

_ANSI = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC ... BEL / ST (titles, hyperlinks)
    r"|\x1b[P^_X][^\x1b]*(?:\x1b\\)?"  # DCS / PM / APC / SOS ... ST
    r"|\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor movement)
    r"|\x1b[ -/]*[0-~]"  # other escapes: ESC ( B, ESC =, ESC M ...
    r"|\x1b"  # a stray or cut-off ESC
)


@dataclass(frozen=True)
class RawProcessResult:
    """`run_process_raw`'s result: the output as bytes (markers included)."""

    argv: tuple[str, ...]
    exit_code: int | None
    """The exit status; negative (-signal) when a signal other than ours ended it, None
    when it was killed on timeout."""
    output: bytes
    stderr: bytes
    """Empty unless `merge_stderr=False`."""
    timed_out: bool
    truncated: bool

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


# --- commands and environment -----------------------------------------------------------


def needs_shell(command: str) -> bool:
    """True when `command` uses shell syntax that only `/bin/sh -c` can run as meant."""
    if any(char in _SHELL_CHARS for char in command):
        return True
    if _COMMENT.search(command):
        return True
    try:
        words = shlex.split(command)
    except ValueError:  # unbalanced quotes: let the shell report it
        return True
    if not words:
        return False
    return words[0] in _SHELL_WORDS or bool(_ASSIGNMENT.match(words[0]))


def to_argv(command: str | Sequence[str]) -> list[str]:
    """The argv that runs `command`: a list as is, a string split like the shell would, or
    `["/bin/sh", "-c", command]` when it needs a shell."""
    if isinstance(command, str):
        if needs_shell(command):
            return ["/bin/sh", "-c", command]
        return shlex.split(command)
    return [os.fspath(part) for part in command]


def safe_env(base: Mapping[str, str] | None = None, *, allow: Iterable[str] = ()) -> dict[str, str]:
    """The variables of `base` (default `os.environ`) that cannot carry a credential
    (`SAFE_ENV_NAMES`, `LC_*`), plus those `allow` names: exact names, or shell-style
    patterns such as `NPM_CONFIG_*`. An allowlist: a secret under a name nobody thought of
    (`OP_SESSION_x`, `DATABASE_URL`, `SENTRY_DSN`) stays out."""
    patterns = [str(item) for item in allow]
    exact = {item for item in patterns if not any(char in item for char in "*?[")}
    wildcards = [item for item in patterns if item not in exact]
    source = os.environ if base is None else base
    return {
        name: value
        for name, value in source.items()
        if name in SAFE_ENV_NAMES
        or name.startswith(SAFE_ENV_PREFIXES)
        or name in exact
        or any(fnmatch.fnmatchcase(name, pattern) for pattern in wildcards)
    }


_INVISIBLE = frozenset({"Cc", "Cf", "Zl", "Zp", "Zs"})


def hidden_character(command: str) -> str | None:
    """The first character of `command` that an approval prompt would not show as itself
    (controls other than tab and newline, format characters, Unicode spaces other than the
    plain one, line and paragraph separators), or None."""
    for char in command:
        if char not in " \t\n" and unicodedata.category(char) in _INVISIBLE:
            return char
    return None


_SEPARATORS = frozenset(";&|()<>")


def normalize_command(command: str) -> str:
    """`command` with the blanks the shell ignores removed: each run of spaces and tabs
    outside quotes (and outside `\\` escapes) becomes one space, blank lines and the blanks
    around a line break go, and so do leading and trailing blanks. To the shell it is the
    same command, so it is what the approval shows and what runs: nothing can be pushed
    past the edge of the prompt by padding (`ls      ...      ; rm -rf x`).

    Quotes are followed as POSIX sh reads them: '...', "..." (with `$(...)` and `...`
    inside), backslash escapes, comments. A here-document's lines are left as they are."""
    out: list[str] = []
    separator: list[bool] = []  # out[i] is a blank or line break this function chose

    def emit(text: str, is_separator: bool = False) -> None:
        out.append(text)
        separator.append(is_separator)

    def trim() -> None:  # drop separators just emitted (before a line break, at the end)
        while separator and separator[-1]:
            out.pop()
            separator.pop()

    contexts: list[str] = []  # open '"', '`', '$(' and '(' (inside a substitution)
    heredoc = False
    i, n = 0, len(command)
    while i < n:
        char = command[i]
        top = contexts[-1] if contexts else ""
        if top == '"':
            if char == "\\" and i + 1 < n:
                emit(command[i : i + 2])
                i += 2
                continue
            if command.startswith("$(", i):
                contexts.append("$(")
                emit("$(")
                i += 2
                continue
            if char == '"':
                contexts.pop()
            elif char == "`":
                contexts.append("`")
            emit(char)
            i += 1
            continue
        # unquoted: the top level, or inside $(...) or `...`
        if char in " \t\n":
            j = i
            while j < n and command[j] in " \t\n":
                j += 1
            if "\n" in command[i:j]:
                trim()
                if heredoc:  # its body starts on the next line: the rest is kept as it is
                    return "".join(out) + command[command.index("\n", i) :]
                if out:
                    emit("\n", True)
            elif out and j < n:
                emit(" ", True)
            i = j
            continue
        if char == "\\" and i + 1 < n:
            emit(command[i : i + 2])
            i += 2
            continue
        if char == "'":
            end = command.find("'", i + 1)
            end = n - 1 if end < 0 else end
            emit(command[i : end + 1])
            i = end + 1
            continue
        if char == "#" and (not out or out[-1][-1] in " \t\n" or out[-1][-1] in _SEPARATORS):
            end = command.find("\n", i)
            end = n if end < 0 else end
            emit(re.sub(r"[ \t]+", " ", command[i:end]).rstrip())
            i = end
            continue
        if char == '"':
            contexts.append('"')
        elif char == "`":
            if top == "`":
                contexts.pop()
            else:
                contexts.append("`")
        elif command.startswith("$(", i):
            contexts.append("$(")
            emit("$(")
            i += 2
            continue
        elif char == "(" and top in ("$(", "("):
            contexts.append("(")
        elif char == ")" and top in ("$(", "("):
            contexts.pop()
        elif command.startswith("<<", i):
            heredoc = True
            emit("<<")
            i += 2
            continue
        emit(char)
        i += 1
    trim()
    return "".join(out)


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


# --- output capture ---------------------------------------------------------------------


def capped(data: bytes, limit: int) -> bytes:
    """`data` within `limit` bytes as a command's output is kept: its first half and last
    half joined by a `[... N bytes omitted ...]` line."""
    capture = _Capture(limit)
    capture.add(data)
    return capture.render()


class _Capture:
    """Bytes written by a child, kept within `limit`: the first half and a rolling last half
    (or only a head of `limit` bytes when `keep_tail` is false)."""

    def __init__(self, limit: int, *, keep_tail: bool = True) -> None:
        limit = max(0, int(limit))
        if keep_tail:
            self.head_limit = limit // 2
            self.tail_limit = limit - self.head_limit
        else:
            self.head_limit, self.tail_limit = limit, 0
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data or self.tail_limit == 0:
            return
        if len(data) >= self.tail_limit:
            self.tail[:] = data[-self.tail_limit :]
        else:
            self.tail += data
            excess = len(self.tail) - self.tail_limit
            if excess > 0:
                del self.tail[:excess]

    @property
    def omitted(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def render(self) -> bytes:
        if not self.omitted:
            return bytes(self.head + self.tail)
        return _append_line(bytes(self.head), f"[... {self.omitted} bytes omitted ...]") + bytes(self.tail)


def _append_line(data: bytes, line: str) -> bytes:
    if data and not data.endswith(b"\n"):
        data += b"\n"
    return data + line.encode() + b"\n"


async def _pump(stream: asyncio.StreamReader, capture: _Capture) -> None:
    while True:
        chunk = await stream.read(_READ_CHUNK)
        if not chunk:
            return
        capture.add(chunk)


async def _feed(stream: asyncio.StreamWriter, data: bytes) -> None:
    try:
        stream.write(data)
        await stream.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the child exited without reading all of it
    finally:
        with contextlib.suppress(Exception):
            stream.close()


# --- process groups ---------------------------------------------------------------------


async def start_in_group(argv: Sequence[str], **options: Any) -> asyncio.subprocess.Process:
    """`asyncio.create_subprocess_exec(*argv, **options)` with the child leading a new
    session, and so its own process group: its pid is the group's id. The group is tracked
    until it is gone (`kill_all_groups`); the child itself tells the janitor its group
    before it runs the command (in its `preexec_fn`, which wraps the caller's), so there is
    no moment when it could outlive a killed host unseen. OSError (a missing or unusable
    executable) is left to the caller to report."""
    options["preexec_fn"] = _announcing(_groups.janitor_fd(), options.get("preexec_fn"))
    proc = await asyncio.create_subprocess_exec(*argv, start_new_session=True, **options)
    _groups.add(proc.pid)
    return proc


def _announcing(fd: int | None, then: Callable[[], None] | None) -> Callable[[], None] | None:
    """A `preexec_fn`: `then()`, and the child's group (its pid: it leads a new session) told
    to the janitor on `fd` (the pipe is open in the child until it execs)."""
    if fd is None:
        return then

    def preexec() -> None:
        if then is not None:
            then()
        with contextlib.suppress(OSError):
            os.write(fd, b"+%d\n" % os.getpid())

    return preexec


# --- the groups we started, and what happens to them when we end ------------------------

_JANITOR_SCRIPT = r"""
import os, signal, sys
for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
    signal.signal(sig, signal.SIG_IGN)
groups = set()
for line in sys.stdin.buffer:
    try:
        op, pgid = line[:1], int(line[1:])
    except ValueError:
        continue
    if op == b"+":
        groups.add(pgid)
    elif op == b"-":
        groups.discard(pgid)
    for gone in [g for g in groups if g != pgid]:
        try:
            os.killpg(gone, 0)
        except OSError:
            groups.discard(gone)
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""
"""The janitor: a small process that reads `+PGID` and `-PGID` lines, and when its input
ends (this process has exited, however it died) SIGKILLs the groups still listed. A group
that is gone is dropped from the list at the next line, so its id, once free, is not
killed later by mistake."""

JANITOR = True
"""Start the janitor with the first group (a test host turns it off to see the rest work)."""


class _Groups:
    """The process groups started by `start_in_group` that may still have members, and the
    janitor that is told about them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pgids: set[int] = set()
        self._janitor: subprocess.Popen[bytes] | None = None
        self._janitor_pid = 0
        self._retired: list[subprocess.Popen[bytes]] = []  # kept: their fds must not be reused

    def add(self, pgid: int) -> None:
        with self._lock:
            self._pgids = {group for group in self._pgids if _group_exists(group)}
            self._pgids.add(pgid)
            self._tell(f"+{pgid}\n")

    def discard(self, pgid: int) -> None:
        with self._lock:
            if pgid in self._pgids:
                self._pgids.discard(pgid)
                self._tell(f"-{pgid}\n")

    def snapshot(self) -> set[int]:
        with self._lock:
            return set(self._pgids)

    def kill_all(self) -> list[int]:
        # at exit a daemon thread may have died holding the lock: kill without it then
        locked = self._lock.acquire(timeout=1)
        try:
            pgids, self._pgids = sorted(self._pgids), set()
            for pgid in pgids:
                signal_group(pgid, signal.SIGKILL)
                if locked:
                    self._tell(f"-{pgid}\n")
        finally:
            if locked:
                self._lock.release()
        return pgids

    def janitor_fd(self) -> int | None:
        """The write end of the janitor's input, the janitor started if it is not running;
        None when there is none."""
        with self._lock:
            return self._ensure_janitor()

    def _tell(self, line: str) -> None:
        """Tell the janitor. It is a safety net: a line it cannot take at once is dropped,
        never waited for."""
        fd = self._ensure_janitor()
        if fd is None:
            return
        try:
            os.write(fd, line.encode())
        except BlockingIOError:
            log.warning("process janitor busy; not told %r", line.strip())
        except OSError:  # it died: the next line starts another
            self._retire()

    def _ensure_janitor(self) -> int | None:
        if not JANITOR:
            return None
        janitor = self._janitor
        if janitor is None or self._janitor_pid != os.getpid() or janitor.poll() is not None:
            self._retire()
            janitor = self._start_janitor()
            if janitor is None:
                return None
            assert janitor.stdin is not None
            fd = janitor.stdin.fileno()
            with contextlib.suppress(OSError):  # a new janitor learns the whole list
                os.write(fd, "".join(f"+{pgid}\n" for pgid in sorted(self._pgids)).encode())
            self._janitor, self._janitor_pid = janitor, os.getpid()
        assert janitor.stdin is not None
        return janitor.stdin.fileno()

    def _retire(self) -> None:
        if self._janitor is not None and self._janitor_pid == os.getpid():
            self._retired.append(self._janitor)
        self._janitor = None

    @staticmethod
    def _start_janitor() -> subprocess.Popen[bytes] | None:
        if not sys.executable:
            return None
        try:
            # no preexec_fn: the janitor must outlive the thread that starts it; its input
            # is a pipe whose write end only this process holds (non-inheritable)
            janitor = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _JANITOR_SCRIPT],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as error:
            log.warning("cannot start the process janitor: %s", error)
            return None
        assert janitor.stdin is not None
        os.set_blocking(janitor.stdin.fileno(), False)
        return janitor


def _group_exists(pgid: int) -> bool:
    """Whether group `pgid` has any member (zombies included): cheaper than `group_alive`."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # the id is someone else's now
        return False
    return True


_groups = _Groups()


def tracked_groups() -> set[int]:
    """The ids of the process groups started here that may still have members."""
    return _groups.snapshot()


def forget_group(pgid: int) -> None:
    """Stop tracking group `pgid` if it has no member left."""
    if not _group_exists(pgid):
        _groups.discard(pgid)


def kill_all_groups() -> list[int]:
    """SIGKILL every process group started here that may still have members, at once,
    from any thread: commands, their background children, terminals, agents. For the
    engine's exit; returns the group ids."""
    return _groups.kill_all()


atexit.register(kill_all_groups)


def close_pipes(proc: asyncio.subprocess.Process) -> None:
    """Close our ends of the child's pipes, which a stray process of its group may still
    hold open after the child itself has exited."""
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


@functools.cache
def die_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` asking Linux to SIGKILL the child when its parent dies (None elsewhere,
    or when libc's prctl cannot be had).

    Linux fires this signal when the *thread* that forked the child ends, not only the
    process. Our children are forked by asyncio on the thread that runs the event loop
    (`create_subprocess_exec` calls Popen there, whatever thread then waits for the exit):
    the engine's loop thread, which lives as long as the engine, and whose end means the
    engine is going and its children should go too. Never start one from a short-lived
    thread (`asyncio.to_thread`). It reaches the child only: its own children are left to
    the janitor and `kill_all_groups`."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def preexec() -> None:
        prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG

    return preexec


def signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # the id was reused by someone else's group: not ours to touch
        return False
    return True


def group_alive(pgid: int) -> bool:
    """Whether a live (non-zombie) process is in group `pgid`.

    `killpg(pgid, 0)` also succeeds while only zombies are left (orphans whose reaper is
    slow or absent), so on Linux /proc tells the live ones apart."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        # after "pid (comm) ": state ppid pgrp session ...
        if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] not in (b"Z", b"X"):
            return True
    return False


async def terminate_group(pgid: int, grace: float = KILL_GRACE) -> None:
    """SIGTERM to the group, then SIGKILL to whatever is still alive after `grace` seconds
    (or at once if this wait is itself cancelled)."""
    if not signal_group(pgid, signal.SIGTERM):
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    try:
        while loop.time() < deadline:
            await asyncio.sleep(_POLL)
            if not await asyncio.to_thread(group_alive, pgid):  # a /proc scan: off the loop
                return
    finally:
        if group_alive(pgid):
            signal_group(pgid, signal.SIGKILL)
        forget_group(pgid)


async def _exited(proc: asyncio.subprocess.Process) -> None:
    """Until the child itself has exited. `Process.wait()` also waits for its pipes to close,
    which a background grandchild holding them can delay for ever."""
    wait = asyncio.ensure_future(proc.wait())
    try:
        while proc.returncode is None and not wait.done():
            await asyncio.wait([wait], timeout=_POLL)
    finally:
        if not wait.done():
            wait.cancel()


def _format_seconds(seconds: float) -> str:
    return f"{seconds:g}"


# --- running ----------------------------------------------------------------------------


async def run_process_raw(
    command: str | Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    timeout: float | None = 300.0,
    max_output: int = 100_000,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    merge_stderr: bool = True,
    keep_tail: bool = True,
    max_stderr: int = 64 * 1024,
) -> RawProcessResult:
    """Run `command` in `cwd`, in its own process group, and return its exit code and its
    capped output as bytes, with the markers appended (`[timed out after N s]`, ...): for
    callers such as git and ripgrep whose output is data, and for `tools.process.run_process`,
    which decodes it for the LLM. With `merge_stderr=False` stderr is captured apart (its
    first `max_stderr` bytes); with `keep_tail=False` only the first `max_output` bytes are
    kept.

    A missing executable is a result (exit code 127), not an exception; an empty command or
    a `cwd` that does not exist raises ToolError. Cancelling the awaiting task stops the
    process group and re-raises CancelledError."""
    argv = to_argv(command)
    if not argv:
        raise ToolError("empty command")
    if not os.path.isdir(cwd):
        raise ToolError(f"working directory does not exist: {os.fspath(cwd)}")
    child_env = safe_env() if env is None else dict(env)
    try:
        proc = await start_in_group(
            argv,
            cwd=cwd,
            env=child_env,
            preexec_fn=die_with_parent(),
            stdin=asyncio.subprocess.DEVNULL if stdin is None else asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT if merge_stderr else asyncio.subprocess.PIPE,
        )
    except FileNotFoundError:
        return RawProcessResult(tuple(argv), 127, f"command not found: {argv[0]}\n".encode(), b"", False, False)
    except PermissionError:
        return RawProcessResult(tuple(argv), 126, f"permission denied: {argv[0]}\n".encode(), b"", False, False)
    except OSError as error:  # exec format error and the like
        return RawProcessResult(
            tuple(argv), 126, f"cannot run {argv[0]}: {error.strerror or error}\n".encode(), b"", False, False
        )

    pgid = proc.pid  # the child leads its own group
    out = _Capture(max_output, keep_tail=keep_tail)
    err = _Capture(max_stderr, keep_tail=False)
    assert proc.stdout is not None
    readers = [asyncio.ensure_future(_pump(proc.stdout, out))]
    if not merge_stderr:
        assert proc.stderr is not None
        readers.append(asyncio.ensure_future(_pump(proc.stderr, err)))
    feeder = None
    if stdin is not None:
        assert proc.stdin is not None
        feeder = asyncio.ensure_future(_feed(proc.stdin, stdin))
    waiter = asyncio.ensure_future(_exited(proc))
    timed_out = False
    notes: list[str] = []
    try:
        await asyncio.wait([waiter], timeout=timeout)
        if waiter.done():
            _, pending = await asyncio.wait(readers, timeout=DRAIN_GRACE)
            if pending:  # background processes hold the pipe open
                await terminate_group(pgid)
                notes.append("[background processes still holding the output open were stopped]")
        else:
            timed_out = True
            await terminate_group(pgid)
            notes.append(f"[timed out after {_format_seconds(timeout or 0)} s]")
        await asyncio.wait(readers, timeout=DRAIN_GRACE)
        if not waiter.done():
            await asyncio.wait([waiter], timeout=KILL_GRACE)
    except asyncio.CancelledError:
        await terminate_group(pgid)
        raise
    finally:
        unfinished = [task for task in (*readers, waiter, feeder) if task is not None and not task.done()]
        for task in unfinished:
            task.cancel()
        if proc.returncode is None:
            signal_group(pgid, signal.SIGKILL)
        if any(not task.done() or task.cancelled() for task in readers):
            close_pipes(proc)  # pipes a stray process still holds
        if proc.returncode is not None:
            forget_group(pgid)  # tracked on while background processes it left run
        for io_task in (*readers, feeder):
            if io_task is not None and io_task.done() and not io_task.cancelled():
                io_task.exception()  # retrieved: a read or write error just ends that stream early

    data = out.render()
    for note in notes:
        data = _append_line(data, note)
    exit_code = None if timed_out else proc.returncode
    return RawProcessResult(tuple(argv), exit_code, data, err.render(), timed_out, bool(out.omitted or err.omitted))


__all__ = [
    "DRAIN_GRACE",
    "KILL_GRACE",
    "RawProcessResult",
    "close_pipes",
    "SAFE_ENV_NAMES",
    "die_with_parent",
    "forget_group",
    "group_alive",
    "hidden_character",
    "kill_all_groups",
    "needs_shell",
    "normalize_command",
    "run_process_raw",
    "safe_env",
    "signal_group",
    "start_in_group",
    "strip_ansi",
    "terminate_group",
    "to_argv",
    "tracked_groups",
]
