"""What every kind of chat offers the engine, whichever backend answers it.

`ChatSession` (an HTTP provider) and `AcpChatSession` (a coding agent over ACP) both
implement `Session`; the engine routes the editor's requests through it and never asks
which kind it holds. Agent-only actions (options, earlier sessions) are part of the
interface: a chat without an agent refuses them with a `ConfigError` that tells the user
what to do instead. What only one kind keeps (an HTTP chat's settings and MCP servers, an
agent's session id) is saved, restored and changed through the interface too; a kind that
has none of it does nothing. Which kind a chat is follows from its adapter, chosen in one
place (`chat/factory.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import msgspec

from ..adapters.base import HTTPAdapter
from ..errors import ConfigError
from ..messages import Message
from ..tools.approvals import Approvals
from ..tools.workspace import Workspace
from ..ui import ops
from ..ui.ops import AdapterInfo, AgentOption, AgentSession, SettingEntry
from ..ui.view import EventView
from .context import ContextItem
from .history import Record


class SavedState(msgspec.Struct, frozen=True, kw_only=True):
    """What a chat keeps besides its messages, for the keeper to save."""

    settings: dict[str, Any] = {}
    """The settings header's values (an HTTP chat)."""
    session_id: str | None = None
    """The agent's session, loaded again when the chat is reopened (an agent's chat)."""


class PromptSetup(msgspec.Struct, frozen=True, kw_only=True):
    """What a library prompt opens its chat with."""

    system_prompts: tuple[str, ...] = ()
    ignore_system_prompt: bool = False
    tools: tuple[str, ...] | None = None
    mcp_servers: tuple[str, ...] | None = None  # in place of `mcp.opts.default_servers`


class Session(Protocol):
    chat_id: Any
    view: EventView
    editor: Any
    """The editor's side of the chat (`tools.orchestrator.Editor`), for what asks Neovim."""
    """Where the chat's events and ops go (its sink is `view.sink`)."""
    workspace: Workspace
    approvals: Approvals
    history: list[Message]
    """The conversation in the canonical model; it carries over when the backend changes."""

    @property
    def busy(self) -> bool:
        """A turn is running."""
        ...

    def adapter_info(self) -> AdapterInfo: ...

    def submit(
        self, text: str, context: Sequence[ContextItem] = (), removed: Sequence[str] = ()
    ) -> asyncio.Task[None] | None:
        """Start a turn with the context shared with it, without the context items the
        user removed; None (and an op saying why) when it cannot start."""
        ...

    def remove_context(self, ids: Sequence[str]) -> None:
        """Forget what the context items `ids` sent."""
        ...

    def snapshot(self) -> list[Message]:
        """The history with what the running turn has shown so far (saved mid-stream)."""
        ...

    def compact(self) -> asyncio.Task[None] | None:
        """`/compact`: summarise the earlier turns now (a `ConfigError` where the backend
        keeps its own context)."""
        ...

    def stop(self) -> bool:
        """`q`: stop the running turn, keeping what arrived; False when idle."""
        ...

    async def close(self) -> None: ...

    def kill_now(self) -> None:
        """Neovim is exiting: end every process of this chat at once, from any thread."""
        ...

    async def switch(self, name: str, model: str | None, *, agent: bool) -> bool:
        """Use adapter `name` (and `model`) from the next turn if this session can do so
        in place; False when the engine must replace the session. `agent`: whether `name`
        is an agent (the adapter registry says)."""
        ...

    def saved_state(self) -> SavedState:
        """What the keeper saves with the messages."""
        ...

    def restore(self, saved: Record) -> None:
        """A reopened saved chat: take back what `saved_state` kept (its messages came in
        with the session)."""
        ...

    def use_prompt(self, setup: PromptSetup) -> None:
        """A library prompt's system messages and tools (an agent brings its own)."""
        ...

    def attach_mcp(self, server: str) -> None:
        """`/mcp start`: the server's tools join the chat with the next message."""
        ...

    def detach_mcp(self, server: str) -> None:
        """`/mcp stop`: the server's tools leave the chat."""
        ...

    def title_adapter(self) -> HTTPAdapter | None:
        """The adapter that writes the chat's title when none is configured (None: an agent
        cannot be asked for one)."""
        ...

    def own_models(self, name: str) -> list[str] | None:
        """The models of adapter `name` when this session knows them (an agent lists its
        own); None to ask the provider."""
        ...

    def settings_header(self) -> tuple[SettingEntry, ...]:
        """The adapter's schema parameters for the settings header (none for an agent)."""
        ...

    async def apply_settings(self, raw: Mapping[str, Any]) -> None:
        """Use the settings header's values from the next request; a wrong one raises a
        `ConfigError` naming it."""
        ...

    def toggle_system_prompt(self) -> bool:
        """`gs`: leave the system prompt out of the next requests, or put it back; the new state."""
        ...

    def clear(self) -> None:
        """`gx`: forget the conversation (an agent starts a new session)."""
        ...

    def may_change_files(self) -> bool:
        """Whether the turn being sent can change files (it has tools or MCP servers; an
        agent always): only such a turn's checkpoint snapshots the worktree."""
        ...

    def rewind(self, keep: int) -> None:
        """`gz`: the conversation as it was with its first `keep` messages, system prompts
        aside (an agent starts a new session, told those)."""
        ...

    def regenerate(self) -> asyncio.Task[None] | None:
        """`gr`: drop the last reply and send the last message again (pushes `Rewind` first)."""
        ...

    hooks: frozenset[str]
    """The chat's Lua callbacks the engine calls ("on_tool_output"), as the editor says."""
    before_changes: asyncio.Future[Any] | None
    """The turn's checkpoint being taken (set by the engine as the turn starts), while the
    request or the agent's prompt goes out: nothing that may change a file (tools; an agent's
    writes, terminals and permission requests) runs before it is done."""

    def fork_state(self) -> tuple[list[Message], dict[str, Any], set[str]]:
        """What a fork of this chat starts from: its messages, tools and the system prompts
        they brought (an agent keeps its conversation itself: `AgentError`)."""
        ...

    def fork_from(self, source: Session) -> None:
        """`/fork`: start from `source`'s conversation, tools and shared context (HTTP chats;
        an agent keeps its history itself: `AgentError`)."""
        ...

    def follow_up(self, text: str) -> bool:
        """`gm` while a reply streams: True when `text` goes to the LLM with the next request of
        this turn (after its tool results, pushing `FollowUp`); False when the turn has none of
        its own to give (an agent's), and the editor sends it as the next message instead."""
        ...

    def debug(self) -> str:
        """`gd`: what the chat holds, as Markdown."""
        ...

    def options(self) -> list[AgentOption]: ...

    async def set_option(self, option_id: str, value: Any) -> None: ...

    async def list_sessions(self) -> list[AgentSession]: ...

    def resume(self, session_id: str) -> None: ...


def refuse_turn(session: Session, text: str, while_busy: str) -> bool:
    """Whether a turn for `text` cannot start now, said in the chat: one runs (`while_busy`
    says what to do), or there is nothing to send."""
    if session.busy:
        session.view.push(ops.Error(message=while_busy))
        return True
    if not text.strip():
        session.view.push(ops.Done(status="empty"))
        return True
    return False


_NO_AGENT = "this chat does not talk to an agent; pick one with `ga` (codex, claude_code...)"


class WithoutAgent:
    """The agent actions of a chat without an agent: each refused, saying what to do instead."""

    def options(self) -> list[AgentOption]:
        raise ConfigError(_NO_AGENT)

    async def set_option(self, option_id: str, value: Any) -> None:
        raise ConfigError(_NO_AGENT)

    async def list_sessions(self) -> list[AgentSession]:
        raise ConfigError(_NO_AGENT)

    def resume(self, session_id: str) -> None:
        raise ConfigError(_NO_AGENT)
