"""Commands as they run and as their approval shows them, and what they may see.

* `to_argv` runs a command string without a shell unless it uses shell syntax
  (`needs_shell`); then it runs as `/bin/sh -c COMMAND`.
* `safe_env` is the part of the engine's environment that cannot carry a credential (an
  allowlist: `SAFE_ENV_NAMES`, `LC_*`), plus the names the user allows.
* `normalize_command` is a command as its approval shows it and as it runs;
  `hidden_character` finds what an approval would not show; `strip_ansi` removes terminal
  escapes from output shown as text.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import unicodedata
from collections.abc import Iterable, Mapping, Sequence

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
