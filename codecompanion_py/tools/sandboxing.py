"""The sandbox of a chat's commands (run_command, the tools built on it, an agent's
terminals): the shared policy, the tool's own options over it, and the network the user
opened to this chat; and the question asked when a command failed for lack of network.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..errors import ConfigError, ToolError
from ..sandbox import Sandbox, SandboxPolicy
from ..sandbox.hints import lacked_network
from .approvals import visible
from .context import ToolsContext


def chat_sandbox(context: ToolsContext, own: object = None, *, tool: str = "run_command") -> Sandbox:
    """The sandbox a command of `tool` runs in, in this chat."""
    try:
        policy = context.sandbox.over(f"interactions.chat.tools.{tool}.opts.sandbox", own)
    except ConfigError as error:
        raise ToolError(f"the sandbox options are wrong: {error}") from None
    policy = widened(policy, context)
    return Sandbox(policy, root=str(context.workspace.root), readonly=context.workspace.code_running_paths)


def widened(policy: SandboxPolicy, context: ToolsContext) -> SandboxPolicy:
    """`policy` with the network the user opened to this chat."""
    approvals = context.approvals
    if approvals.network and policy.network is not True:
        return replace(policy, network=True)
    if approvals.hosts and policy.network is not True:
        hosts = policy.network if isinstance(policy.network, tuple) else ()
        return replace(policy, network=tuple(dict.fromkeys((*hosts, *sorted(approvals.hosts)))))
    return policy


def refusals(sandbox: Sandbox) -> int:
    """Where the sandbox's proxy count of refused hosts stands, before a command runs."""
    proxy = sandbox.proxy
    return proxy.refusals if proxy is not None else 0


async def offer_network(
    context: ToolsContext, sandbox: Sandbox, command: str, output: str, mark: int = 0
) -> Sandbox | None:
    """After `command` failed in `sandbox` (its proxy's `refusals` at `mark` before it ran):
    when it seems to have lacked the network (and the policy says to ask), ask the user
    whether to run it again with it. The sandbox to run it again in, or None."""
    policy = sandbox.policy
    if policy.network is True or not policy.ask_network or not sandbox.confined:
        return None
    proxy = sandbox.proxy
    refused = proxy.refused_since(mark) if proxy is not None else []
    lacked = lacked_network(output, refused)
    if lacked is None:
        return None
    host = None if lacked == "the network" else lacked
    options = [{"label": "Run it again with the network on", "choice": "once"}]
    if host is not None:
        options.append({"label": f"Allow {visible(host, 253)} for this chat and run it again", "choice": "host"})
    options += [
        {"label": "Allow the network for this chat and run it again", "choice": "chat"},
        {"label": "No", "choice": "no"},
    ]
    what = f"reach {visible(host, 253)}" if host is not None else "reach the network"
    request: dict[str, Any] = {
        "prompt": f"`{visible(command, 200)}` failed and seems to have tried to {what}, which its sandbox "
        f"does not allow ({policy.describe_network()}). Run it again with the network?",
        "must_ask": "the sandbox keeps this command off the network",
        "options": options,
    }
    reply = await context.editor.call("approve", request)
    choice = reply.get("choice") if isinstance(reply, Mapping) else None
    approvals = context.approvals
    if choice == "once":
        return Sandbox(replace(policy, network=True), root=sandbox.root, readonly=sandbox.readonly)
    if choice == "chat":
        approvals.network = True
    elif choice == "host" and host is not None:
        approvals.hosts.add(host.lower())
    else:
        return None
    return Sandbox(widened(policy, context), root=sandbox.root, readonly=sandbox.readonly)
