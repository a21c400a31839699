"""A chat whose replies come from a coding agent over ACP (Claude Code, Codex, Gemini CLI...).

It is a `Session` like the HTTP chat: the agent's updates become canonical events
(`updates`) shown through the same `EventView`, so an agent's text, reasoning, tool
calls and plan render as any reply does. What the agent asks of the editor (permissions,
file reads and writes) is answered by `requests`; the prompt's content blocks come
from `prompt`; the agent's modes, options and models are kept in `state`.

The agent starts with the first message and lives until the chat closes; if it dies, the
next message starts a new one (the agent's memory of the conversation is then gone, and
the chat says so).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Literal

from ...acp.client import AcpClient
from ...adapters.acp import AcpAdapter
from ...adapters.base import HTTPAdapter
from ...editor_port import Editor
from ...errors import AgentError, CodeCompanionError, ConfigError, RpcError
from ...events import NoticeEvent, PlanEvent, ReasoningEvent, StreamEvent, TokenEvent, ToolResultEvent
from ...mcp.servers import McpServers
from ...messages import Message
from ...sandbox import Launch, SandboxPolicy
from ...tools.approvals import Approvals
from ...tools.context import ChatHandle, ToolsContext
from ...tools.workspace import Workspace
from ...ui import ops
from ...ui.editor import BufferReload, SessionPre
from ...ui.ops import AdapterInfo, AgentOption, AgentSession
from ...ui.sink import Sink
from ...ui.view import EventView
from ..context import ContextItem
from ..debug import debug_text
from ..history import Record
from ..protocol import PromptSetup, SavedState, Session, refuse_turn
from .prompt import prompt_blocks
from .requests import AgentRequests
from .state import MODE_OPTION, AgentState
from .updates import REPLY_UPDATES, AgentUpdates

log = logging.getLogger("codecompanion_py.acp")
MAX_TURN_CHARS = 64 * 1024 * 1024
# An agent's prompt waits this long for the turn's checkpoint (seconds); past it the prompt goes
# and what the agent asks the editor to change waits instead (`changes_allowed`): a change it
# made by itself, unasked, would have to come before its model's first answer.
PROMPT_WAITS_FOR_CHECKPOINT = 0.05
"""What a turn may show (reply, thoughts, tool output, plans): an agent that streams past it
is stopped and the rest dropped, so it cannot fill the editor's memory (a provider's reply
is capped the same way, by `max_response_bytes`)."""

Status = Literal["success", "error", "stopped"]


class AcpChatSession:
    """A `Session` whose replies come from an ACP agent."""

    def __init__(
        self,
        chat_id: Any,
        adapter: AcpAdapter,
        *,
        sink: Sink,
        editor: Editor,
        workspace: Workspace,
        history: list[Message] | None = None,
        mcp: McpServers | None = None,
        sandbox: SandboxPolicy | None = None,
    ) -> None:
        self.chat_id = chat_id
        self.adapter = adapter
        self.mcp = mcp
        self.view = EventView(sink)
        self.editor = editor
        self.workspace = workspace
        self.history: list[Message] = list(history or [])  # kept canonical, for a switch to an HTTP adapter
        self.hooks: frozenset[str] = frozenset()  # an agent runs its own tools: none apply
        self.before_changes: asyncio.Future[Any] | None = None
        self._carried = len(self.history)  # messages from before this agent: told to it once
        self.approvals = Approvals()
        self.context = ToolsContext(
            chat=ChatHandle(),
            editor=editor,
            approvals=self.approvals,
            workspace=workspace,
            chat_id=chat_id,
            surface=self.view,
            sandbox=sandbox or SandboxPolicy(),
        )
        self.state = AgentState()
        self.updates = AgentUpdates(self.state, relative=self._relative, terminal_output=self._terminal_output)
        self.requests = AgentRequests(
            adapter.formatted_name,
            adapter_name=adapter.name,
            context=self.context,
            view=self.view,
            updates=self.updates,
        )
        self.client: AcpClient | None = None
        self.session_id: str | None = None
        self.resume_id: str | None = None  # a session to load instead of starting a new one
        self.saved_session: str | None = None  # a reopened chat's session, loaded when the agent can
        self._replaying = False
        self.task: asyncio.Task[None] | None = None
        self._begun: asyncio.Task[Any] | None = None  # the last turn that started running
        self._reply: list[str] = []
        self._shown = 0  # characters the turn has shown (MAX_TURN_CHARS)
        self._lost_agent = False
        self._background: set[asyncio.Future[Any]] = set()
        self._titles: dict[str, str] = {}  # earlier sessions' titles, for ACPChatRestored
        self._streaming: dict[str, Any] | None = None  # the turn's event data until RequestStreaming

    # --- the Session interface --------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self.task is not None and not self.task.done()

    def adapter_info(self) -> AdapterInfo:
        return AdapterInfo(
            name=self.adapter.name,
            formatted_name=self.adapter.formatted_name,
            model=self.state.current_model(),
            type="acp",
        )

    def submit(
        self, text: str, context: Sequence[ContextItem] = (), removed: Sequence[str] = ()
    ) -> asyncio.Task[None] | None:
        if refuse_turn(self, text, "the agent is still working; press q to stop it"):
            return None
        self.task = asyncio.get_running_loop().create_task(self._turn(text, context))
        self.task.add_done_callback(self._end_unstarted)
        return self.task

    def snapshot(self) -> list[Message]:
        if self.busy and self._reply:
            return [*self.history, Message.of("assistant", "".join(self._reply))]
        return list(self.history)

    def remove_context(self, ids: Sequence[str]) -> None:
        """An agent keeps what it was shown in its own session: nothing to take back here."""

    def compact(self) -> asyncio.Task[None] | None:
        raise ConfigError(
            f"{self.adapter.formatted_name} keeps its own context: send \\compact if it offers that command"
        )

    def stop(self) -> bool:
        """`q`: ask the agent to cancel the turn; the turn ends when the agent says so."""
        if not self.busy:
            return False
        if self.client is None or self.session_id is None:  # still starting: give up on it
            assert self.task is not None
            self.task.cancel()
        else:
            self._spawn(self.client.cancel(self.session_id))
        return True

    async def close(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if self.client is not None:
            client, self.client = self.client, None
            await client.close()

    def kill_now(self) -> None:
        if self.client is not None:
            self.client.kill_now()

    async def switch(self, name: str, model: str | None, *, agent: bool) -> bool:
        if not agent or name != self.adapter.name:
            return False
        if model:
            option = self.state.model_option(model)
            if option is None:
                raise AgentError(f"{self.adapter.formatted_name} offers no model {model!r}")
            await self.set_option(option.id, model)
        return True

    def saved_state(self) -> SavedState:
        return SavedState(session_id=self.session_id)

    def restore(self, saved: Record) -> None:
        if saved.session_id:
            self.saved_session = saved.session_id

    def use_prompt(self, setup: PromptSetup) -> None:
        """An agent keeps its own system prompt and tools."""

    def attach_mcp(self, server: str) -> None:
        """The agent gets the editor's MCP servers when its session starts."""

    def detach_mcp(self, server: str) -> None:
        """(As `attach_mcp`.)"""

    def title_adapter(self) -> HTTPAdapter | None:
        return None

    def own_models(self, name: str) -> list[str] | None:
        if name == self.adapter.name:
            return self.state.model_names()
        return None

    def settings_header(self) -> tuple[ops.SettingEntry, ...]:
        return ()  # an agent has no schema parameters

    async def apply_settings(self, raw: Mapping[str, Any]) -> None:
        if raw:
            raise AgentError(
                f"{self.adapter.formatted_name} takes no settings from the header; use `gao` for its options"
            )

    def toggle_system_prompt(self) -> bool:
        raise AgentError(f"{self.adapter.formatted_name} uses its own system prompt; `gs` applies to HTTP adapters")

    def clear(self) -> None:
        """Forget the conversation: the next message starts a new session of the agent."""
        if self.busy:
            raise AgentError("wait for the reply to finish (or press q) to clear the chat")
        self.history.clear()
        self._carried = 0
        self.session_id = None
        self.resume_id = None

    def may_change_files(self) -> bool:
        return True

    def rewind(self, keep: int) -> None:
        kept = [m for m in self.history if m.role != "system"][:keep]
        self.clear()
        self.history[:] = kept
        self._carried = len(kept)  # told to the agent's new session with the next message

    def regenerate(self) -> asyncio.Task[None] | None:
        raise AgentError(
            f"{self.adapter.formatted_name} remembers its replies itself, so one cannot be regenerated; "
            "send your message again instead"
        )

    def fork_state(self) -> tuple[list[Message], dict[str, Any], set[str]]:
        raise AgentError("an agent keeps its conversation itself; /fork copies chats with HTTP adapters")

    def fork_from(self, source: Session) -> None:
        raise AgentError("an agent keeps its conversation itself; /fork copies chats with HTTP adapters")

    def follow_up(self, text: str) -> bool:
        return False  # an agent's turn takes no message midway: it is sent when the turn ends

    def debug(self) -> str:
        state = self.state
        details = {
            "session_id": self.session_id,
            "mode": state.modes.get("currentModeId"),
            "capabilities": self.client.capabilities if self.client is not None else None,
        }
        return debug_text(
            self.adapter_info(),
            details={k: v for k, v in details.items() if v is not None},
            history=self.history,
            no_request="An agent receives prompts over ACP, not as HTTP requests.",
        )

    def options(self) -> list[AgentOption]:
        found = self.state.options()
        if not found:
            raise AgentError(
                f"{self.adapter.formatted_name} offers no modes or options"
                + ("" if self.session_id else " yet: send a message first")
            )
        return found

    async def set_option(self, option_id: str, value: Any) -> None:
        model = self.state.current_model()
        if option_id == MODE_OPTION:
            await self.set_mode(str(value))
        else:
            client, session_id = self._session()
            result = await client.set_config_option(session_id, option_id, value)
            self.state.set_config_options(result.get("configOptions"))
        self.view.push(ops.Ready(adapter=self.adapter_info()))
        if self.state.current_model() != model:
            info = self.adapter_info()
            self.view.fire("ChatModel", {"adapter": info, "id": self.chat_id, "model": info.model})

    async def set_mode(self, mode_id: str) -> None:
        client, session_id = self._session()
        await client.set_mode(session_id, mode_id)
        self.state.modes["currentModeId"] = mode_id
        self.view.fire("ChatACPModeChanged", {"id": self.chat_id, "session_id": session_id, "mode": mode_id})

    async def list_sessions(self) -> list[AgentSession]:
        client = await self._start_agent()
        found = [
            AgentSession(
                id=str(s["sessionId"]),
                title=str(s.get("title") or s["sessionId"]),
                updated=s.get("updatedAt") if isinstance(s.get("updatedAt"), str) else None,
            )
            for s in await client.list_sessions()
        ]
        self._titles.update((s.id, s.title) for s in found)
        return found

    def resume(self, session_id: str) -> None:
        """Load an earlier session of the agent with the next message."""
        if self.busy:
            raise AgentError("wait for the reply to finish before loading another session")
        self.resume_id = session_id
        self.session_id = None
        self.view.show(NoticeEvent(title="**Session**", text="The earlier session loads with your next message."))

    # --- a turn ---------------------------------------------------------------------------

    def _end_unstarted(self, task: asyncio.Task[None]) -> None:
        """A turn stopped before its first step never runs (nor its `finally`): end it here,
        or the chat would wait for a `Done` forever."""
        if self._begun is not task:
            self.view.push(ops.Done(status="stopped"))

    async def _turn(self, text: str, shared: Sequence[ContextItem] = ()) -> None:
        self._begun = asyncio.current_task()
        view = self.view
        view.push(ops.Begin(adapter=self.adapter_info()))
        info = ops.request_info(self.adapter_info(), "chat")
        status: Status = "success"
        message: str | None = None
        tokens: int | None = None
        self._reply, self._shown = [], 0
        try:
            client, session_id = await self._ensure_session()
            info["adapter"] = self.adapter_info()  # the model is known once the session is
            view.fire("RequestStarted", info)
            self._streaming = info
            carried, self._carried = self.history[: self._carried], 0
            blocks = await prompt_blocks(
                text,
                client=client,
                context=self.context,
                agent_name=self.adapter.formatted_name,
                commands=self.state.command_names(),
                earlier=carried,
                shared=shared,
            )
            self.history.append(Message.of("user", text))
            if self.before_changes is not None:  # the checkpoint first, unless it takes long
                await asyncio.wait([self.before_changes], timeout=PROMPT_WAITS_FOR_CHECKPOINT)
            result = await client.prompt(session_id, blocks)
            stop = result.get("stopReason")
            if stop == "cancelled":
                status = "stopped"
            elif stop in ("refusal", "max_tokens", "max_turn_requests"):
                status, message = "error", f"{self.adapter.formatted_name} stopped: {stop.replace('_', ' ')}"
            usage = result.get("usage")
            if isinstance(usage, Mapping) and isinstance(usage.get("totalTokens"), int):
                tokens = usage["totalTokens"]
        except asyncio.CancelledError:
            status = "stopped"
        except CodeCompanionError as error:
            status, message = "error", str(error)
            if self.client is not None and not self.client.alive:
                await self._drop_agent()
        finally:
            self._streaming = None
            if self._shown > MAX_TURN_CHARS:
                status, message = "error", self._too_much()
            if self._reply:
                self.history.append(Message.of("assistant", "".join(self._reply)))
            view.fire("RequestFinished", {**info, "status": status})
            if tokens is None and isinstance(self.state.usage.get("used"), int):
                tokens = self.state.usage["used"]
            view.push(ops.Done(status=status, tokens=tokens, message=message or None))

    async def _ensure_session(self) -> tuple[AcpClient, str]:
        if self.client is not None and self.session_id is not None:
            return self.client, self.session_id
        client = await self._start_agent()
        if self.mcp is not None:  # the editor's MCP servers, for the agent to use itself
            http = client.supports("mcpCapabilities", "http")
            client.mcp_servers = await self.mcp.for_agent(http=http, editor=self.editor)
        pre = SessionPre(
            id=self.chat_id, agent_capabilities=client.capabilities or None, mcp_servers=client.mcp_servers
        )
        if self.mcp is None or not self.mcp.specs:
            self.view.fire("ACPSessionPre", pre.args())
        else:  # the editor fires it and lets its handlers change the servers the agent gets
            changed = await self.editor.call("acp.session_pre", pre.args())
            servers = changed.get("mcp_servers") if isinstance(changed, Mapping) else None
            if isinstance(servers, list):
                client.mcp_servers = [dict(s) for s in servers if isinstance(s, Mapping) and s.get("name")]
        restored, self.resume_id = self.resume_id, None
        saved, self.saved_session = self.saved_session, None
        if restored is None and saved is not None and client.supports("loadSession"):
            restored = await self._load_saved(client, saved)
        if restored is not None:
            session_id = self.session_id = restored
            if restored != saved:
                self.state.remember_session(await client.load_session(session_id))
        else:
            session = await client.new_session()
            session_id = self.session_id = str(session["sessionId"])
            self.state.remember_session(session)
        self.view.fire("ACPSessionPost", {"id": self.chat_id, "session_id": session_id})
        if restored is not None:
            title = self._titles.get(restored) or self.state.title
            self.view.fire("ACPChatRestored", {"id": self.chat_id, "session_id": session_id, "title": title})
        if self._lost_agent:
            self._lost_agent = False
            self.view.show(
                NoticeEvent(
                    title="**Note**",
                    text=f"{self.adapter.formatted_name} was restarted: it does not remember the earlier turns.",
                )
            )
        mode = self.adapter.defaults.get("mode")
        if isinstance(mode, str) and mode:
            await self.set_mode(mode)
        model = self.adapter.defaults.get("model")
        if isinstance(model, str) and model and model != self.state.current_model():
            await self.switch(self.adapter.name, model, agent=True)
        self.view.push(ops.Ready(adapter=self.adapter_info()))
        self.view.fire("ChatACPSession", {"adapter": self.adapter_info(), "session_id": session_id})
        return client, session_id

    async def _load_saved(self, client: AcpClient, session_id: str) -> str | None:
        """A chat reopened from the history: its agent session loaded (the agent remembers
        it, so the transcript is not told again; its replay is not drawn, the transcript is
        on screen already). None when the agent cannot load it: the chat goes on in a new
        session that is told the transcript."""
        self._replaying = True
        try:
            self.state.remember_session(await client.load_session(session_id))
        except (AgentError, RpcError) as error:
            log.info("%s: the saved session %s did not load: %s", self.adapter.name, session_id, error)
            return None
        finally:
            self._replaying = False
        self._carried = 0
        return session_id

    async def _start_agent(self) -> AcpClient:
        """The agent's process, started unless one is running (sessions come and go on it)."""
        if self.client is not None and self.client.alive:
            return self.client
        if self.client is not None:  # dead: make sure nothing of it is left
            await self.client.close()
        self.client = AcpClient(self.adapter, self, cwd=str(self.workspace.root))
        await self.client.start()
        self.view.fire("ACPConnected", {"id": self.chat_id, "adapter": self.adapter_info()})
        return self.client

    async def _drop_agent(self) -> None:
        self._lost_agent = self.session_id is not None
        client, self.client, self.session_id = self.client, None, None
        if client is not None:
            await client.close()

    def _session(self) -> tuple[AcpClient, str]:
        if self.client is None or self.session_id is None:
            raise AgentError(f"{self.adapter.formatted_name} has not started yet: send a message first")
        return self.client, self.session_id

    # --- what the agent tells and asks (the client's handler) -------------------------------

    async def session_update(self, params: dict[str, Any]) -> None:
        update = params.get("update")
        if not isinstance(update, Mapping):
            return
        kind = update.get("sessionUpdate")
        if kind in REPLY_UPDATES and not (self.client is not None and self.client.in_turn):
            # after the turn's answer: the chat is the user's again
            log.debug("%s: dropped a late %s", self.adapter.name, kind)
            return
        if kind in REPLY_UPDATES and self._shown > MAX_TURN_CHARS:  # past the cap: not even kept
            return
        if kind in REPLY_UPDATES and self._streaming is not None:
            self.view.fire("RequestStreaming", self._streaming)
            self._streaming = None
        translation = self.updates.translate(update)
        if not self._replaying and not self._within_cap(translation.events):
            return
        if translation.text and not self._replaying:
            self._reply.append(translation.text)
        for event in translation.events if not self._replaying else ():  # a reopened chat's: on screen already
            self.view.show(event)
        if translation.commands_changed:
            listed = tuple(
                ops.AgentCommand(name=c["name"], description=str(c.get("description") or ""))
                for c in self.state.commands
            )
            self.view.push(ops.Commands(commands=listed))
            self.view.fire("ChatACPCommands", {"commands": [c.name for c in listed]})
        if translation.options_changed:
            self.view.push(ops.Ready(adapter=self.adapter_info()))
        if translation.edited_paths:  # agents that write files themselves leave loaded buffers stale
            self._spawn(self.editor.call("buffer.reload", BufferReload(paths=list(translation.edited_paths)).args()))

    def _within_cap(self, events: Sequence[StreamEvent]) -> bool:
        """Whether these events may be shown: past MAX_TURN_CHARS in a turn, the agent is
        asked to stop (once) and what it still sends is dropped."""
        before = self._shown
        self._shown += sum(_chars(event) for event in events)
        if self._shown <= MAX_TURN_CHARS:
            return True
        if before <= MAX_TURN_CHARS:
            log.warning("%s: %s", self.adapter.name, self._too_much())
            self.stop()
        return False

    def _too_much(self) -> str:
        return f"{self.adapter.formatted_name} sent more than {MAX_TURN_CHARS} characters in one turn; it was stopped"

    async def request_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        return await self.requests.request_permission(params)

    async def read_text_file(self, params: dict[str, Any]) -> dict[str, Any]:
        return await self.requests.read_text_file(params)

    async def write_text_file(self, params: dict[str, Any]) -> dict[str, Any]:
        return await self.requests.write_text_file(params)

    async def changes_allowed(self) -> None:
        if self.before_changes is not None:
            await asyncio.shield(self.before_changes)

    async def terminal_launch(self, argv: list[str], cwd: str, env: dict[str, str]) -> Launch:
        return await self.requests.terminal_launch(argv, cwd, env)

    def _spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # a failure here is not the turn's

    def _relative(self, path: str) -> str:
        root = str(self.workspace.root) + "/"
        return path[len(root) :] if path.startswith(root) else path

    def _terminal_output(self, terminal_id: str) -> str | None:
        return self.client.terminals.output_of(terminal_id) if self.client is not None else None


def _chars(event: StreamEvent) -> int:
    """How much of the chat `event` fills."""
    if isinstance(event, (TokenEvent, ReasoningEvent, ToolResultEvent)):
        return len(event.content)
    if isinstance(event, PlanEvent):
        return sum(len(entry.content) + 8 for entry in event.entries)
    return 0
