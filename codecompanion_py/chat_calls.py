"""The `chat.*` calls: each finds the chat's `Session` and asks it, whatever its kind.

Opening a chat restores a saved one through the keeper; a switch the session cannot make
in place hands the conversation to a new session (`chat/factory.py` chooses its kind).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import calls
from .adapters.acp import AcpAdapter
from .adapters.http import copilot_stats
from .chat import share
from .chat.factory import SessionFactory, workspace_of
from .chat.keeper import ChatKeeper
from .chat.protocol import PromptSetup, Session
from .chat.rewind import Rewinder
from .errors import ConfigError
from .snapshots.checkpoints import Checkpoint
from .ui import ops
from .ui.sink import Channel, RenderSink

if TYPE_CHECKING:
    from .client import HttpClient
    from .config import Config


class ChatCalls:
    def __init__(
        self,
        sessions: dict[Any, Session],
        *,
        channel: Channel,
        loop: asyncio.AbstractEventLoop,
        config: Callable[[], Config],
        keeper: ChatKeeper,
        factory: SessionFactory,
        client: Callable[[], HttpClient],
        rewinder: Rewinder,
    ) -> None:
        self.sessions = sessions  # the engine's: it saves and closes them
        self._channel = channel
        self._loop = loop
        self._config = config
        self._keeper = keeper
        self._factory = factory
        self._client = client
        self._rewinder = rewinder
        self._refused: set[Any] = set()  # chats whose last open failed, which said why

    def session(self, chat_id: Any) -> Session:
        session = self.sessions.get(chat_id)
        if session is None:
            raise ConfigError("this chat is not open in the engine; open a new chat")
        return session

    async def open(self, call: calls.ChatOpen) -> None:
        chat_id, channel = call.chat_id, self._channel
        spec = call.adapter or self._config().chat_adapter
        sink = RenderSink(lambda batch: channel.render(chat_id, batch), self._loop)
        saved = self._keeper.begin(chat_id, call.history_id, call.resume_id)
        workspace, history = workspace_of(call.cwd), (saved.messages if saved else None)
        command = call.command or None
        if command and not self._factory.is_agent(spec):  # as CodeCompanion: for agents only
            channel.notify(
                f"CodeCompanion: command={command} picks how an agent starts; "
                "this chat's adapter is not an agent, so it is ignored",
                "WARN",
            )
            command = None
        try:
            session = self._factory.open(chat_id, spec, call.model or None, sink, workspace, history, command=command)
        except ConfigError as error:
            if saved is None:
                self._refused.add(chat_id)
                raise
            # a saved chat whose adapter is gone from the config: the default one carries it on
            session = self._factory.open(chat_id, self._config().chat_adapter, None, sink, workspace, history)
            channel.notify(
                f"CodeCompanion: the saved chat's adapter {saved.adapter} cannot be used ({error}); "
                f"it goes on with {session.adapter_info().name}",
                "WARN",
            )
        if saved is not None:
            session.restore(saved)
        source = self.sessions.get(call.fork_of) if call.fork_of is not None else None
        if source is not None:  # `/fork`: its conversation, tools and context, to go elsewhere from here
            session.fork_from(source)
        session.hooks = frozenset(call.hooks)
        session.use_prompt(
            PromptSetup(
                system_prompts=tuple(text for text in call.system_prompts if isinstance(text, str)),
                ignore_system_prompt=call.ignore_system_prompt,
                tools=tuple(call.tools) if call.tools is not None else None,
                mcp_servers=_servers(call.mcp_servers),
            )
        )
        # the new session takes the chat before the old one is closed: a message sent meanwhile
        # (a chat opened again, /command) goes to the new one
        old, self.sessions[chat_id] = self.sessions.get(chat_id), session
        self._refused.discard(chat_id)
        self._announce(session)
        if old is not None:
            await old.close()

    def _announce(self, session: Session, *, model_changed: bool = True) -> None:
        """The chat's adapter, to the buffer (header, settings) and to listeners."""
        info = session.adapter_info()
        session.view.push(ops.Ready(adapter=info, saved_id=self._keeper.saved_id(session.chat_id)))
        session.view.push(ops.Settings(entries=session.settings_header()))
        session.view.fire("ChatAdapter", {"adapter": info, "id": session.chat_id})
        if model_changed:
            session.view.fire("ChatModel", {"adapter": info, "id": session.chat_id, "model": info.model})

    def _after_refused_open(self, chat_id: Any) -> bool:
        """Whether the chat's open failed: Lua sends it with each message (and /compact) until
        one succeeds, so its error was just told; the message ends quietly, kept in the
        unlocked buffer, rather than with a second error ("not open")."""
        if chat_id in self.sessions or chat_id not in self._refused:
            return False
        self._channel.render(chat_id, [ops.Done(status="empty")])
        return True

    async def submit(self, call: calls.ChatSubmit) -> None:
        if self._after_refused_open(call.chat_id):
            return
        session = self.session(call.chat_id)
        if call.hooks is not None:  # callbacks added since the chat opened (on ChatCreated, say)
            session.hooks = frozenset(call.hooks)
        if call.settings is not None:  # the settings header: checked before anything is sent
            await session.apply_settings(call.settings)
        chain = self._keeper.checkpoints(session.chat_id)
        checkpoint = self._rewinder.before_turn(session, chain, header=call.header, text=call.typed or call.text)
        task = session.submit(call.text, call.context, [i for i in call.removed if i])
        if task is not None:  # saved as it goes, and once the turn ends, however it ends
            before = checkpoint(session.may_change_files())  # the worktree the turn starts from
            self._keeper.typed(session.chat_id, call.typed or call.text)
            self._keeper.watch(session, task)
            task.add_done_callback(lambda _task: self._turn_ended(session, before))

    def _turn_ended(self, session: Session, before: asyncio.Future[Checkpoint | None] | None) -> None:
        self._keeper.after_turn(session)
        self._rewinder.after_turn(before, lambda: self._keeper.save(session))  # saved again with it

    async def rewind(self, call: calls.ChatRewind) -> None:
        """`gz`, `/rewind`: back to before one of the chat's turns."""
        session = self.session(call.chat_id)
        chain = self._keeper.checkpoints(session.chat_id)
        if await self._rewinder.rewind(session, chain, header=call.header, restore=call.restore, dirty=call.dirty):
            self._keeper.save(session)
        else:
            self._channel.notify("CodeCompanion: the rewind was cancelled; nothing changed", "INFO")

    def checkpoints(self, call: calls.ChatCall) -> list[dict[str, Any]]:
        """`/rewind`'s list of turns to go back to."""
        return self._rewinder.listing(self._keeper.checkpoints(self.session(call.chat_id).chat_id))

    async def system_prompt(self, call: calls.ChatCall) -> None:
        on = self.session(call.chat_id).toggle_system_prompt()
        self._channel.notify(f"CodeCompanion: system prompt {'on' if on else 'off'} for this chat", "INFO")

    async def clear(self, call: calls.ChatCall) -> None:
        session = self.session(call.chat_id)
        session.clear()
        await self._rewinder.drop(self._keeper.checkpoints(session.chat_id))  # their turns are gone
        session.view.push(ops.Cleared())
        session.view.push(ops.Settings(entries=session.settings_header()))
        session.view.fire("ChatCleared", {"id": session.chat_id})

    async def regenerate(self, call: calls.ChatCall) -> None:
        self.session(call.chat_id).regenerate()

    async def follow_up(self, call: calls.ChatFollowUp) -> None:
        self.session(call.chat_id).follow_up(call.text)

    async def rename(self, call: calls.ChatRename) -> None:
        """`/rename`: the chat's title in the history from now on."""
        title = self._keeper.retitle(call.chat_id, call.title)
        self._channel.notify(f"CodeCompanion: the chat is now {title!r}", "INFO")

    async def debug(self, call: calls.ChatCall) -> None:
        session = self.session(call.chat_id)
        session.view.push(ops.Debug(text=session.debug()))

    async def copilot_stats(self, call: calls.ChatCall) -> None:
        """`gS`: the Copilot account's usage, in a float."""
        session = self.session(call.chat_id)
        stats = await copilot_stats.fetch(getattr(session, "adapter", None), self._client())
        session.view.push(ops.Debug(text="\n".join(copilot_stats.lines(stats)), title="Copilot usage"))

    def agent_commands(self, call: calls.ChatCall) -> list[str]:
        """`/command`: the names of the chat's agent's `commands` (a request: Lua picks one and
        opens the chat again with `command=` it)."""
        adapter = getattr(self.session(call.chat_id), "adapter", None)
        if not isinstance(adapter, AcpAdapter):
            raise ConfigError("/command is for agents (ACP adapters)")
        return sorted(name for name, argv in adapter.commands.items() if name != "selected" and isinstance(argv, list))

    async def set_adapter(self, call: calls.ChatSetAdapter) -> None:
        """Switch the chat's adapter and/or model. A session changes in place when it can
        (another HTTP adapter, another model of the same agent); otherwise a new session
        takes over with the conversation's history (an agent keeps its own memory, so a
        new one is told the conversation's text once)."""
        session = self.session(call.chat_id)
        before = session.adapter_info()
        name, model = call.adapter or before.name, call.model or None
        if not await session.switch(name, model, agent=self._factory.is_agent(name)):
            if session.busy:
                raise ConfigError("wait for the reply to finish (or press q) before switching to or from an agent")
            replacement = self._factory.open(
                session.chat_id, name, model, session.view.sink, session.workspace, history=session.history
            )
            replacement.hooks = session.hooks
            await session.close()
            self.sessions[session.chat_id] = replacement
            session = replacement
        self._announce(session, model_changed=session.adapter_info().model != before.model)

    async def models(self, call: calls.ChatModels) -> None:
        """The adapter's models, for Lua to offer."""
        session = self.session(call.chat_id)
        name, models = await self._factory.models(session, call.adapter or session.adapter_info().name)
        session.view.push(ops.ChooseModel(adapter=name, models=tuple(models)))

    async def agent_options(self, call: calls.ChatCall) -> None:
        session = self.session(call.chat_id)
        session.view.push(ops.ChooseOption(options=tuple(session.options())))

    async def set_option(self, call: calls.ChatSetOption) -> None:
        await self.session(call.chat_id).set_option(call.id, call.value)

    async def sessions_of_agent(self, call: calls.ChatCall) -> None:
        session = self.session(call.chat_id)
        session.view.push(ops.ChooseSession(sessions=tuple(await session.list_sessions())))

    async def resume(self, call: calls.ChatResume) -> None:
        self.session(call.chat_id).resume(call.session_id)

    async def yolo(self, call: calls.ChatCall) -> None:
        approvals = self.session(call.chat_id).approvals
        approvals.yolo = not approvals.yolo
        state = (
            "on: tools run without asking, except commands, deletions and protected files" if approvals.yolo else "off"
        )
        self._channel.notify(f"CodeCompanion: YOLO mode {state}", "WARN" if approvals.yolo else "INFO")

    async def clear_approvals(self, call: calls.ChatCall) -> None:
        self.session(call.chat_id).approvals.clear()
        self._channel.notify("CodeCompanion: tool approvals cleared for this chat", "INFO")

    async def compact(self, call: calls.ChatCall) -> None:
        if self._after_refused_open(call.chat_id):
            return
        session = self.session(call.chat_id)
        task = session.compact()
        if task is not None:
            task.add_done_callback(lambda _task: self._keeper.after_turn(session))
            for checkpoint in self._keeper.checkpoints(session.chat_id):
                checkpoint.keep = -1  # the conversation before it is a summary now: its files only

    async def share(self, call: calls.ChatShare) -> None:
        """`/share`: the chat as a secret gist; the user is told its address."""
        address = await share.share(self._client(), call)
        self._channel.notify(f"CodeCompanion: the chat is shared as a secret gist: {address}", "INFO")

    async def remove_context(self, call: calls.ChatRemoveContext) -> None:
        self.session(call.chat_id).remove_context([i for i in call.ids if i])

    async def stop(self, call: calls.ChatCall) -> None:
        session = self.sessions.get(call.chat_id)
        if session is not None:
            session.stop()

    async def close(self, call: calls.ChatCall) -> None:
        session = self.sessions.pop(call.chat_id, None)
        self._refused.discard(call.chat_id)
        self._keeper.forget(call.chat_id)
        if session is not None:
            await session.close()


def _servers(named: list[str] | str | None) -> tuple[str, ...] | None:
    """A library prompt's `mcp_servers`: its list, "none" (not even the defaults), or None
    (the defaults)."""
    if named == "none":
        return ()
    if isinstance(named, list):
        return tuple(name for name in named if isinstance(name, str))
    return None
