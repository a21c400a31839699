"""What `:checkhealth codecompanion_py` and `codecompanion-py health` report.

`report()` returns one plain dict (the `--json` form; checkhealth.py words it for
`:checkhealth`, `format_table()` for the terminal):

    python, executable     the Python running the engine
    versions               {package: version or None}
    adapters               the HTTP adapters' names
    adapter_errors         {name: message} for adapters (HTTP, ACP or bridge) that do not load
    agents                 {name: agent} for each ACP adapter, see below
    keys                   {VARIABLE: bool}, sorted: the environment variables the adapters
                           read, set or not; their values are never read into the report

An agent is `{command, found, install}` plus, only when they apply, `path` (where `command`
was found), `version` (the first line `command --version` printed) or `version_error`
(why there is none), and `bridge` (the bridge adapter, for agents that run through
`codecompanion-py acp-bridge`). For those the command is the CLI the bridge drives
(`claude`, `codex`, or what `--executable` names), not the bridge itself: the bridge is
this package, the CLI is what the user has to install.

Each `--version` runs in its own process group with a short timeout, all at once in
threads, and once per executable in a health run (agents that share a CLI share the
answer); a CLI that hangs is killed with its children. `report()` blocks for at most
about `VERSION_TIMEOUT` seconds; `report_async()` runs it off the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from typing import Any

from .adapters import BUILTIN, Adapters
from .adapters.acp import AcpAdapter
from .processes import strip_ansi

KNOWN_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OPENAI_COMPATIBLE_API_KEY")
PACKAGES = ("codecompanion-py", "pynvim", "httpx", "msgspec")

VERSION_TIMEOUT = 3.0
"""Seconds a `<command> --version` may take before it is reported as not answering."""

BRIDGE_CLIS = {"claude": "claude", "codex": "codex"}
"""The CLI each built-in bridge adapter drives when no `--executable` is given."""

_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_MAX_VERSION = 120


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _env_names(env: Any) -> list[str]:
    """The environment variables an adapter's `env` table reads its settings from."""
    if not isinstance(env, dict):
        return []
    return [spec for spec in env.values() if isinstance(spec, str) and _ENV_NAME.match(spec)]


# --- versions ---------------------------------------------------------------------------


def probe_version(argv: Sequence[str], timeout: float) -> dict[str, str]:
    """`argv --version`: `{"version": first line}` or `{"version_error": why not}`."""
    command = " ".join([*argv, "--version"])
    try:
        proc = subprocess.Popen(
            [*argv, "--version"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group: a timeout stops its children too
        )
    except OSError as error:
        return {"version_error": f"cannot run `{command}`: {error.strerror or error}"}
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        try:
            proc.communicate(timeout=1.0)
        except subprocess.TimeoutExpired:  # something outside the group holds the pipes
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
            proc.wait()
        return {"version_error": f"`{command}` did not answer within {timeout:g} s"}
    first = _first_line(out) or _first_line(err)
    if proc.returncode != 0:
        detail = f": {first}" if first else ""
        return {"version_error": f"`{command}` exited with status {proc.returncode}{detail}"}
    if not first:
        return {"version_error": f"`{command}` printed nothing"}
    return {"version": first}


def _first_line(data: bytes) -> str:
    for line in strip_ansi(data.decode("utf-8", errors="replace")).splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= _MAX_VERSION else line[: _MAX_VERSION - 1] + "…"
    return ""


def probe_versions(argvs: Sequence[tuple[str, ...]], timeout: float) -> dict[tuple[str, ...], Any]:
    """Each distinct argv's `probe_version`, all at once."""
    unique = list(dict.fromkeys(argvs))
    if not unique:
        return {}
    with ThreadPoolExecutor(max_workers=min(16, len(unique)), thread_name_prefix="cc-health") as pool:
        futures = {argv: pool.submit(probe_version, argv, timeout) for argv in unique}
        return {argv: future.result() for argv, future in futures.items()}


# --- agents -----------------------------------------------------------------------------


def bridge_cli(argv: Sequence[str]) -> tuple[str, list[str] | None] | None:
    """For an agent command that runs `codecompanion-py acp-bridge NAME ...`: NAME and the
    argv of the CLI the bridge will drive (None when the adapter does not say). None for an
    agent that is not run through the bridge."""
    if "acp-bridge" not in argv:
        return None
    from .acp_bridge import arguments, load_adapter
    from .acp_bridge.environment import executable_argv

    args = arguments.parse(list(argv[list(argv).index("acp-bridge") + 1 :]))
    opts = arguments.options(args)
    default = BRIDGE_CLIS.get(args.name)
    if default or opts.get("executable"):
        return args.name, executable_argv(opts, default or "")
    command = load_adapter(args.name).command(opts)  # a user adapter: its argv, if it has one
    if isinstance(command, list) and command:
        return args.name, [command[0]]
    return args.name, None


def _agent(agent: AcpAdapter, problems: dict[str, str]) -> tuple[dict[str, Any], tuple[str, ...] | None]:
    """The agent's entry, and the argv to ask for its version (None: nothing to ask)."""
    name = agent.name
    argv = agent.command()
    entry: dict[str, Any] = {"command": argv[0], "found": False, "install": agent.install}
    try:
        bridge = bridge_cli(argv)
    except Exception as exc:  # a user bridge adapter that does not load, a bad --opt
        problems[name] = f"bridge: {exc}"
        bridge = None
    cli: list[str] = [argv[0]]
    if bridge is not None:
        entry["bridge"] = bridge[0]
        if shutil.which(argv[0]) is None:  # the bridge's own launcher (our Python) is gone
            return entry, None
        if bridge[1] is None:  # a bridge adapter whose CLI health cannot know: the bridge is there
            entry.update(found=True, path=shutil.which(argv[0]))
            return entry, None
        cli = bridge[1]
        entry["command"] = cli[0]
    path = shutil.which(cli[0])
    if path is None:
        return entry, None
    entry.update(found=True, path=path)
    return entry, (path, *cli[1:])


def report(registry: Adapters = BUILTIN) -> dict[str, Any]:
    """The report on the adapters of `registry` (the engine's: its config's)."""
    names = registry.names("http")
    keys = dict.fromkeys(KNOWN_KEYS)
    problems: dict[str, str] = {}
    for name in names:
        try:
            adapter = registry.http(name)
        except Exception as exc:  # a broken user adapter is a health error, not a crash
            problems[name] = str(exc)
            continue
        keys.update(dict.fromkeys(_env_names(adapter.env)))
    agents: dict[str, Any] = {}
    probes: dict[str, tuple[str, ...]] = {}
    for name in registry.names("acp"):
        try:
            agent = registry.agent(name)
            agents[name], probe = _agent(agent, problems)
        except Exception as exc:
            problems[name] = str(exc)
            continue
        keys.update(dict.fromkeys(_env_names(agent.env)))
        if probe is not None:
            probes[name] = probe
    versions = probe_versions(list(probes.values()), VERSION_TIMEOUT)
    for name, probe in probes.items():
        agents[name].update(versions[probe])
    return {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "versions": {pkg: _version(pkg) for pkg in PACKAGES},
        "adapters": names,
        "adapter_errors": dict(sorted(problems.items())),
        "agents": agents,
        "keys": {key: bool(os.environ.get(key)) for key in sorted(keys)},
    }


async def report_async(registry: Adapters = BUILTIN) -> dict[str, Any]:
    """`report()` in a worker thread, for callers on an event loop (the engine)."""
    return await asyncio.to_thread(report, registry)


def broken(data: dict[str, Any]) -> list[str]:
    """What in a report is an error (the CLI exits with status 1 for these)."""
    found = [f"{pkg} is not installed" for pkg, version in data["versions"].items() if version is None]
    found += [f"adapter {name}: {message}" for name, message in data["adapter_errors"].items()]
    return found


def format_table(data: dict[str, Any]) -> str:
    """The report for people: aligned sections, keys as set / not set."""
    lines = [f"Python {data['python']} ({data['executable']})", "", "Packages"]
    lines += _rows([(pkg, version or "NOT INSTALLED") for pkg, version in data["versions"].items()])
    lines += ["", "HTTP adapters"]
    lines += textwrap.wrap(", ".join(data["adapters"]), 88, initial_indent="  ", subsequent_indent="  ")
    if data["adapter_errors"]:
        lines += ["", "Errors"]
        lines += _rows(list(data["adapter_errors"].items()))
    lines += ["", "Coding agents (ACP)"]
    rows = []
    for name, agent in sorted(data["agents"].items()):
        command = agent["command"] + (f" (via acp-bridge {agent['bridge']})" if agent.get("bridge") else "")
        if not agent["found"]:
            status = "not found" + (f"; install: {agent['install']}" if agent.get("install") else "")
        elif agent.get("version"):
            status = agent["version"]
        elif agent.get("version_error"):
            status = f"found, version unknown: {agent['version_error']}"
        else:
            status = "found"
        rows.append((name, command, status))
    lines += _rows(rows)
    lines += ["", "Environment variables (values are never shown)"]
    lines += _rows([(key, "set" if present else "not set") for key, present in data["keys"].items()])
    return "\n".join(lines) + "\n"


def _rows(rows: Sequence[tuple[str, ...]]) -> list[str]:
    if not rows:
        return ["  (none)"]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  " + "  ".join([*(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)), row[-1]]) for row in rows
    ]
