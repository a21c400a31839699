"""What an agent asks of the editor: permission to act, and files to read and write.

Permissions go through the same approval UI as our own tools, with the agent's options
(YOLO allows them, except for paths outside the project or protected ones). Reads see the
text of loaded buffers, unsaved changes included, and a protected file (.env*, keys) is read
only once the user allows it, in YOLO mode too; writes go through the file tools' edit
path (the buffer as one undo step when it is loaded, else an atomic write), confined to
the project, with `User CodeCompanionFileEdited` fired. Refusals travel back to the agent
as JSON-RPC errors it can read; a missing file is ACP's "resource not found", which agents
treat as a file to create.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, TypeVar

from ...acp.client import CANCELLED
from ...acp.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, RESOURCE_NOT_FOUND
from ...errors import CodeCompanionError, PathRefused, RpcError, ToolError
from ...sandbox import Launch
from ...tools.approvals import visible
from ...tools.catalog import documents
from ...tools.context import ToolsContext
from ...tools.sandboxing import chat_sandbox
from ...tools.workspace import Target
from ...ui.editor import Approval, ApprovalOption
from ...ui.view import EventView
from .updates import AgentUpdates

T = TypeVar("T")


class AgentRequests:
    def __init__(
        self, agent_name: str, *, context: ToolsContext, view: EventView, updates: AgentUpdates, adapter_name: str
    ) -> None:
        self.agent_name = agent_name  # as the user reads it: "Claude Code"
        self.adapter_name = adapter_name
        self.context = context
        self.view = view
        self.updates = updates

    async def request_permission(self, params: Mapping[str, Any]) -> dict[str, Any]:
        tool = params.get("toolCall") if isinstance(params.get("toolCall"), Mapping) else {}
        assert isinstance(tool, Mapping)
        options = [o for o in params.get("options") or [] if isinstance(o, Mapping) and "optionId" in o]
        if not options:
            return CANCELLED
        title = self.updates.title_of(tool)
        risky = self._risky_paths(tool)
        if self.context.approvals.yolo and not risky:
            allow = next((o for o in options if o.get("kind") == "allow_once"), None)
            if allow is not None:
                return _selected(allow["optionId"])
        detail = self.updates.tool_content(tool)
        if detail:
            self.updates.shown[str(tool.get("toolCallId"))] = detail
        raw = tool.get("rawInput")
        if not detail and isinstance(raw, Mapping) and raw.get("command"):
            command = raw["command"]
            detail = " ".join(command) if isinstance(command, list) else str(command)
        event = {"tool": title, "id": tool.get("toolCallId"), "adapter": self.adapter_name}
        self.view.fire("ToolApprovalRequested", event)
        offered = [
            ApprovalOption(label=visible(str(o.get("name") or o["optionId"])), choice=o["optionId"]) for o in options
        ]
        asked = Approval(
            prompt=visible(f"{self.agent_name} wants to: {title}"), detail=detail, must_ask=risky, options=offered
        )
        reply = await self.context.editor.call("approve", asked.args())
        choice = reply.get("choice") if isinstance(reply, Mapping) else None
        chosen = next((o for o in options if o["optionId"] == choice), None)
        self.view.fire("ToolApprovalFinished", {**event, "choice": chosen.get("kind") if chosen else "cancel"})
        return CANCELLED if chosen is None else _selected(chosen["optionId"])

    def _risky_paths(self, tool: Mapping[str, Any]) -> str | None:
        """Why this call must be asked even in YOLO mode: a path it touches is protected
        or outside the project."""
        paths = [loc.get("path") for loc in tool.get("locations") or [] if isinstance(loc, Mapping)]
        paths += [c.get("path") for c in tool.get("content") or [] if isinstance(c, Mapping) and c.get("path")]
        for path in paths:
            if not isinstance(path, str):
                continue
            try:
                target = self.context.workspace.resolve(path)
            except PathRefused:
                return f"{path} is outside the project"
            if target.protected:
                return f"{target.relative} is {target.protected}"
        return None

    async def read_text_file(self, params: Mapping[str, Any]) -> dict[str, Any]:
        target = self._target(params)
        if not target.exists:
            raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: {target.real}", {"path": str(target.real)})
        if target.protected:  # its secrets (.env, keys) reach the agent only if the user says so, as in YOLO
            await self._confirm_protected(target, "read")
        document = await _answerable(documents.load(self.context, target))
        self.context.reads[str(target.real)] = document.version
        text = document.text
        line, limit = params.get("line"), params.get("limit")
        if isinstance(line, int) or isinstance(limit, int):
            lines = text.splitlines(keepends=True)
            start = max(line - 1, 0) if isinstance(line, int) else 0
            end = start + limit if isinstance(limit, int) and limit >= 0 else len(lines)
            text = "".join(lines[start:end])
        return {"content": text}

    async def write_text_file(self, params: Mapping[str, Any]) -> dict[str, Any]:
        target = self._target(params)
        content = params.get("content")
        if not isinstance(content, str):
            raise RpcError(INVALID_PARAMS, "fs/write_text_file needs `content` as a string")
        content = content.replace("\r\n", "\n")
        if target.protected:
            await self._confirm_protected(target, "write")
        if target.exists:
            document = await _answerable(documents.load(self.context, target, exact=True))
            await _answerable(documents.store(self.context, document, content, tool=self.adapter_name))
        else:
            try:
                self.context.workspace.create_text(target, content)
            except CodeCompanionError as error:
                raise RpcError(INTERNAL_ERROR, str(error)) from None
            self.context.fire(
                "FileEdited", {"path": str(target.real), "relative": target.relative, "tool": self.adapter_name}
            )
        return {}

    async def _confirm_protected(self, target: Target, action: str) -> None:
        asked = Approval(
            prompt=f"{self.agent_name} wants to {action} {target.relative}",
            must_ask=f"{target.relative} is {target.protected}",
            options=[
                ApprovalOption(label=f"Allow this {action}", choice="allow"),
                ApprovalOption(label="Refuse", choice="refuse"),
            ],
        )
        reply = await self.context.editor.call("approve", asked.args())
        if not isinstance(reply, Mapping) or reply.get("choice") != "allow":
            raise RpcError(INTERNAL_ERROR, f"the user refused the {action} of {target.relative}")

    async def terminal_launch(self, argv: list[str], cwd: str, env: dict[str, str]) -> Launch:
        """A terminal's command in the chat's sandbox. Where none can run it, the user is asked
        each time (YOLO too); a refusal reaches the agent as an error."""
        try:
            sandbox = chat_sandbox(self.context, tool="terminal")
        except ToolError as error:
            raise RpcError(INVALID_PARAMS, str(error)) from None
        if sandbox.policy.enabled and not sandbox.confined:
            shown = visible(" ".join(argv), 500)
            asked = Approval(
                prompt=f"{self.agent_name} wants to run `{shown}` in a terminal, without a sandbox",
                must_ask=f"it would run with your full rights: {sandbox.availability.reason}",
                options=[
                    ApprovalOption(label="Run it unsandboxed", choice="allow"),
                    ApprovalOption(label="Refuse", choice="refuse"),
                ],
            )
            reply = await self.context.editor.call("approve", asked.args())
            if not isinstance(reply, Mapping) or reply.get("choice") != "allow":
                raise RpcError(INTERNAL_ERROR, "the user refused to run the command without a sandbox")
        return await sandbox.launch(argv, cwd=cwd, env=env)

    def _target(self, params: Mapping[str, Any]) -> Target:
        path = params.get("path")
        if not isinstance(path, str):
            raise RpcError(INVALID_PARAMS, "`path` must be an absolute path string")
        try:
            return self.context.workspace.resolve(path)
        except PathRefused as error:
            raise RpcError(INTERNAL_ERROR, str(error)) from None


def _selected(option_id: Any) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": option_id}}


async def _answerable(work: Awaitable[T]) -> T:
    """File work whose refusals the agent should read as errors."""
    try:
        return await work
    except CodeCompanionError as error:
        raise RpcError(INTERNAL_ERROR, str(error)) from None
