"""The editor as the engine sees it: one port for every question the engine asks Neovim.

Approvals, buffers, diff reviews, Lua-defined tools and the user's Lua functions all go
through `Editor.call`, which sends the question and awaits the answer Lua sends back later
(`editor.reply`); nothing waits on Neovim. `ui/editor.py`'s `SinkEditor` is the one in
Neovim; tests and the CLI pass their own. It sits beside the model (`messages.py`) and
imports nothing of ours, so the tools, the adapters and the chats can all depend on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class Editor(Protocol):
    """Where the engine's questions to the editor go; each answer comes back later."""

    reviews_edits: bool
    """Whether the editor reviews an edit after it is written (Neovim's diff review):
    then a tool that asks for confirmation writes first and asks in the review."""

    async def call(self, method: str, args: Mapping[str, Any]) -> Any: ...


__all__ = ["Editor"]
