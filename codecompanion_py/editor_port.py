"""The editor as the engine sees it: one port for every question the engine asks Neovim.

Approvals, buffers, diff reviews, Lua-defined tools and the user's Lua functions all go
through `Editor.call`, which sends the question and awaits the answer Lua sends back later
(`editor.reply`); nothing waits on Neovim. `ui/editor.py`'s `SinkEditor` is the one in
Neovim; tests and the CLI pass their own. It sits beside the model (`messages.py`) and
imports nothing of ours, so the tools, the adapters and the chats can all depend on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol, get_args

EditorMethod = Literal[
    "acp.session_pre",  # before an agent's session starts: `User CodeCompanionACPSessionPre`
    "approve",  # may a tool run (or an agent's request go on)?
    "tool.invoke",  # a function of a Lua-defined tool
    "tool.release",  # forget finished runs of Lua-defined tools
    "buffer.get",  # a file's loaded buffer
    "buffer.set",  # replace a buffer's lines, as one undo step
    "buffer.reload",  # re-read buffers of files an agent changed on disk
    "review",  # show a written edit for the user to keep or reject
    "diagnostics",  # vim.diagnostic entries of a file
    "lua.call",  # a function of the setup() table
    "tool.output",  # the chat's `on_tool_output` callbacks, which may change a tool's output
    "rewind.conflicts",  # files the user changed since a checkpoint: keep theirs or take the checkpoint's?
]

EDITOR_METHODS: tuple[str, ...] = get_args(EditorMethod)


class Editor(Protocol):
    """Where the engine's questions to the editor go; each answer comes back later."""

    reviews_edits: bool
    """Whether the editor reviews an edit after it is written (Neovim's diff review):
    then a tool that asks for confirmation writes first and asks in the review."""

    async def call(self, method: EditorMethod, args: Mapping[str, Any]) -> Any: ...


__all__ = ["EDITOR_METHODS", "Editor", "EditorMethod"]
