"""What a sandboxed command may do: the user's `sandbox` options made one typed policy.

`interactions.shared.sandbox` holds the options every command-running tool and every
agent terminal share; a tool's own `opts.sandbox` is merged over them (its `network`
replaces the shared one, its lists add to the shared ones: a tool can open more, never
read a denied path again).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..errors import ConfigError

Mechanism = Literal["auto", "bubblewrap", "landlock"]
MECHANISMS: tuple[Mechanism, ...] = ("auto", "bubblewrap", "landlock")

DENY_READ: tuple[str, ...] = (
    # keys and the credentials of the usual command-line tools
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker/config.json",
    "~/.config/gh",
    "~/.config/hub",
    "~/.netrc",
    "~/.npmrc",
    "~/.git-credentials",
    "~/.config/git/credentials",
    "~/.pypirc",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.gem/credentials",
    "~/.m2/settings.xml",
    "~/.vault-token",
    "~/.terraform.d/credentials.tfrc.json",
    "~/.config/op",
    "~/.password-store",
    # the coding agents' and Copilot's logins (the plugin reads Copilot's itself)
    "~/.config/github-copilot",
    "~/.claude/.credentials.json",
    "~/.codex/auth.json",
    "~/.gemini/oauth_creds.json",
    # keyrings and browser profiles (cookies, saved passwords)
    "~/.local/share/keyrings",
    "~/.mozilla",
    "~/.config/google-chrome",
    "~/.config/chromium",
    "~/.config/BraveSoftware",
    "~/.config/microsoft-edge",
    "~/.config/vivaldi",
    "~/snap/firefox",
    "~/.var/app/org.mozilla.firefox",
    "~/Library/Keychains",
    "~/Library/Application Support/Google/Chrome",
    "~/Library/Application Support/Firefox",
)
"""Paths no sandboxed command can read (absent ones are skipped), before the user's own and
the plugin's (saved chats, the log, snapshots: `Sandbox.private`)."""

MAX_PATHS = 200


@dataclass(frozen=True)
class SandboxPolicy:
    """One command's sandbox: off, or the paths it may write, those it may not read and the
    network it may reach (False: none; True: all; a tuple: those hosts, through a proxy)."""

    enabled: bool = True
    network: bool | tuple[str, ...] = False
    writable: tuple[str, ...] = ()
    deny_read: tuple[str, ...] = DENY_READ
    mechanism: Mechanism = "auto"
    ask_network: bool = True
    problems: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def from_options(cls, shared: object = None, own: object = None) -> SandboxPolicy:
        """The policy from `interactions.shared.sandbox` and a tool's `opts.sandbox`, each a
        table, `true`/`false` (on or off), or absent. A wrong value raises ConfigError naming
        the option."""
        policy = cls()
        for where, table in (("interactions.shared.sandbox", shared), ("opts.sandbox", own)):
            policy = policy.over(where, table)
        return policy

    def over(self, where: str, table: object) -> SandboxPolicy:
        """This policy with the options table found at `where` merged over it."""
        if table is None or table == [] or table == {}:
            return self
        if isinstance(table, bool):
            return replace(self, enabled=table)
        if not isinstance(table, Mapping):
            raise ConfigError(f"{where} must be a table or a boolean")
        unknown = sorted(
            set(map(str, table)) - {"enabled", "network", "writable", "deny_read", "mechanism", "ask_network"}
        )
        if unknown:
            raise ConfigError(f"{where}: unknown option {unknown[0]!r}")
        changes: dict[str, Any] = {}
        for flag in ("enabled", "ask_network"):
            if flag in table:
                if not isinstance(table[flag], bool):
                    raise ConfigError(f"{where}.{flag} must be true or false")
                changes[flag] = table[flag]
        if "network" in table:
            changes["network"] = _network(where, table["network"])
        for name in ("writable", "deny_read"):
            if name in table:
                changes[name] = (*getattr(self, name), *_paths(f"{where}.{name}", table[name]))
        if "mechanism" in table:
            if table["mechanism"] not in MECHANISMS:
                raise ConfigError(f"{where}.mechanism must be one of {', '.join(MECHANISMS)}")
            changes["mechanism"] = table["mechanism"]
        return replace(self, **changes)

    def denying(self, paths: Iterable[str]) -> SandboxPolicy:
        """This policy with `paths` added to what may not be read."""
        return replace(self, deny_read=(*self.deny_read, *paths))

    def describe_network(self) -> str:
        if self.network is True:
            return "network on"
        if self.network is False or not self.network:
            return "no network"
        hosts = ", ".join(self.network[:3]) + (f" and {len(self.network) - 3} more" if len(self.network) > 3 else "")
        return f"network to {hosts} only"


def _network(where: str, value: object) -> bool | tuple[str, ...]:
    if isinstance(value, bool):
        return value
    if value == {}:
        return False
    if isinstance(value, (list, tuple)) and all(isinstance(host, str) and _host_ok(host) for host in value):
        return tuple(host.lower().rstrip(".") for host in value)[:MAX_PATHS]
    raise ConfigError(f'{where}.network must be false, true or a list of host names such as {{ "pypi.org" }}')


def _host_ok(host: str) -> bool:
    """A host name, `*.example.com`, or an address: nothing a proxy could misread."""
    name = host.removeprefix("*.")
    return 0 < len(name) <= 253 and all(c.isalnum() or c in "-._:[]" for c in name)


def _paths(where: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if value == {}:
        return ()
    if not isinstance(value, (list, tuple)) or not all(isinstance(path, str) and path for path in value):
        raise ConfigError(f"{where} must be a list of paths")
    return tuple(value)[:MAX_PATHS]


def expand(path: str, base: str | None = None) -> str:
    """`path` with `~` and `$VARS` expanded, absolute (a relative one under `base`, the
    project) and normalised (links not followed)."""
    if path == "~" or path.startswith("~/"):
        path = os.path.expanduser("~") + path[1:]
    path = os.path.expandvars(path)
    if base is not None and not os.path.isabs(path):
        path = os.path.join(base, path)
    return os.path.normpath(os.path.abspath(path))
