"""What a tool sees of the chat it runs in: `ToolsContext`, the `tools` argument of every
tool callable, with the editor, the approvals, the workspace, the chat's handle and the
surface that shows results and fires `User` autocmds.

It sits between the contract (below) and the catalog and the orchestrator (above): the
catalog's tools reach the workspace and the editor through it without importing the
orchestrator, which builds one per batch and sets `invoke`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..editor_port import Editor
from ..events import ToolResultEvent
from ..outbound import ClientSettings
from ..sandbox import SandboxPolicy
from .approvals import Approvals, Verdict
from .contract import ToolRun

if TYPE_CHECKING:
    from .workspace import Workspace


class Surface(Protocol):
    """Where the chat shows things (a `ui.view.EventView`): tool results, and `User`
    autocmds in order with them."""

    def show(self, event: ToolResultEvent) -> None: ...

    def fire(self, event: str, data: Mapping[str, Any] | None = None) -> None: ...


class ChatHandle:
    """`tools.chat` for tool authors: `add_tool_output(tool, for_llm, for_user)`."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def add_tool_output(self, tool: ToolRun, for_llm: Any, for_user: Any = None) -> None:
        tool.add_output(for_llm, for_user)

    def add_message(self, message: Mapping[str, Any]) -> None:
        """Extra context for the LLM, sent after this batch's results."""
        self.messages.append(dict(message))


@dataclass
class ToolsContext:
    """The `tools` argument of every tool callable."""

    chat: ChatHandle
    editor: Editor
    approvals: Approvals
    workspace: Workspace
    chat_id: Any = None
    surface: Surface | None = None  # where `fire` goes
    reads: dict[str, str] = field(default_factory=dict)  # real path -> hash of what the LLM last read
    http: ClientSettings = field(default_factory=ClientSettings)  # the config's, for fetch_webpage
    # `await invoke(run, fn, *args)` calls a tool's function, Lua or Python (set by the
    # orchestrator): for Python tools that call back into a Lua part (run_command's extensions).
    invoke: Callable[..., Any] | None = None
    hooks: frozenset[str] = frozenset()  # the chat's Lua callbacks the engine must call: "on_tool_output"
    # `await judge(tool, action)`: the tools judge's verdict (chat/judge.py); None when it is off.
    judge: Callable[[str, str], Awaitable[Verdict]] | None = None
    # `display.diff.threshold_for_chat`: an edit of this many changed lines or fewer is asked
    # about in the chat, its diff shown there, instead of reviewed in the file (0: never).
    diff_threshold_for_chat: int = 0
    # interactions.shared.sandbox: what the commands the tools start may read, write and reach
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)

    def fire(self, event: str, data: Mapping[str, Any]) -> None:
        if self.surface is not None:
            self.surface.fire(event, data)


__all__ = ["ChatHandle", "Surface", "ToolsContext"]
