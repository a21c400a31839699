"""The engine: the methods the editor calls, run as tasks on an asyncio loop.

In the editor the engine shares pynvim's own loop (`Engine(channel, loop=nvim.loop)`): a
call from Neovim becomes a task on it and a render goes straight out on Neovim's channel,
with no thread between them (a hop between two threads cost 0.1-0.8 ms each way on a
2-core machine, up to what decoding a 200-chunk reply takes). A synchronous request waits
in its pynvim greenlet while the loop runs on (`wait_in_greenlet`). Without a loop (tests,
scripts) the engine runs one on a thread of its own and calls are handed to it with
`run_coroutine_threadsafe`. Either way nothing here blocks the editor.

Every chat is a `Session` (an HTTP provider or an ACP agent, the engine does not ask
which); what it shows goes through its render sink to the `Channel` as batches of typed UI
ops. Every failure ends as a message to the user (in the chat when there is one), never as
a stack trace.

Nothing here imports pynvim: `nvim.host` and `nvim.plugin` give the engine an
`NvimChannel` and pynvim's loop, tests a recording channel.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import threading
import traceback
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Future
from typing import Any, Protocol, TypeVar

from greenlet import getcurrent

from . import adapters, config, processes, repository
from .acp import adapters as acp_adapters
from .adapters.base import HTTPAdapter
from .adapters.models import list_models
from .chat.acp.session import AcpChatSession
from .chat.context import items_of
from .chat.keeper import ChatKeeper
from .chat.protocol import Session
from .chat.session import ChatSession
from .client import HttpClient
from .errors import CodeCompanionError, ConfigError
from .inline import PLACEMENTS, InlineRequest, InlineSession, command_for
from .mcp.servers import McpServers
from .messages import Message, valid_unicode
from .tools.workspace import Workspace
from .ui import ops
from .ui.editor import PendingCalls, SinkEditor
from .ui.sink import RenderSink, Sink

log = logging.getLogger("codecompanion_py")
ENGINE_NICENESS = 10
T = TypeVar("T")


class Channel(Protocol):
    """The editor as the engine reaches it, from the engine's loop, without waiting."""

    def render(self, chat_id: Any, batch: list[ops.Op]) -> None: ...
    def notify(self, message: str, level: str = "ERROR") -> None: ...


class Engine:
    def __init__(self, channel: Channel, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """On `loop`, run by the thread that makes every call (the host's); without one, on a
        loop of the engine's own thread."""
        self.channel = channel
        self.config = config.load({})
        self.sessions: dict[Any, Session] = {}
        self._client: HttpClient | None = None
        self._retired: list[HttpClient] = []  # clients replaced by a config change, closed at the end
        self.inlines: dict[str, InlineSession] = {}
        self.mcp = McpServers()
        self.keeper = ChatKeeper(lambda: self.config, lambda: self.client, self.channel.notify)
        self.pending = PendingCalls()
        self._thread: threading.Thread | None = None
        if loop is None:
            self.loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._run, name="codecompanion-engine", daemon=True)
            self._thread.start()
        else:
            self.loop = loop  # its thread is the caller's: whether it yields is the caller's choice
        atexit.register(self.kill_agents)  # the host exiting some other way
        self._methods: dict[str, Callable[[Mapping[str, Any]], Awaitable[None]]] = {
            "config.set": self._config_set,
            "chat.open": self._chat_open,
            "chat.submit": self._chat_submit,
            "chat.stop": self._chat_stop,
            "chat.remove_context": self._chat_remove_context,
            "chat.compact": self._chat_compact,
            "inline.run": self._inline_run,
            "inline.stop": self._inline_stop,
            "cmd.run": self._cmd_run,
            "mcp.control": self._mcp_control,
            "chat.close": self._chat_close,
            "chat.set_adapter": self._chat_set_adapter,
            "chat.models": self._chat_models,
            "chat.yolo": self._chat_yolo,
            "chat.clear_approvals": self._chat_clear_approvals,
            "chat.agent_options": self._chat_agent_options,
            "chat.set_option": self._chat_set_option,
            "chat.sessions": self._chat_sessions,
            "chat.resume": self._chat_resume,
            "chat.system_prompt": self._chat_system_prompt,
            "chat.clear": self._chat_clear,
            "chat.regenerate": self._chat_regenerate,
            "chat.debug": self._chat_debug,
            "editor.reply": self._editor_reply,
        }

    def _run(self) -> None:
        yield_to_editor()
        self.loop.run_forever()

    # --- entry points (called from pynvim's thread) ----------------------------------------

    def dispatch(self, method: str, payload: Mapping[str, Any]) -> asyncio.Future[None] | Future[None]:
        """Start `method`; the returned future ends with it."""
        payload = valid_unicode(payload)
        if self._thread is None:  # on the loop's own thread: a task, run from its next step
            return self.loop.create_task(self._handle(method, payload or {}))
        return asyncio.run_coroutine_threadsafe(self._handle(method, payload or {}), self.loop)

    def _wait(self, work: Awaitable[T], timeout: float) -> T:
        """`work`'s result, for a synchronous request."""
        if self._thread is None:
            return wait_in_greenlet(self.loop, work, timeout)
        return asyncio.run_coroutine_threadsafe(_awaited(work), self.loop).result(timeout=timeout)

    def request(self, method: str, payload: Mapping[str, Any]) -> Any:
        payload = valid_unicode(payload)
        if method == "health":
            return self._wait(self._health(), timeout=10)
        if method.startswith("history."):
            return self.keeper.request(method, payload)
        if method == "tools":  # for `@` completion in the chat
            return self.config.tools.mentionable() + self.mcp.mentionable()
        if method == "adapters":
            return config.adapter_names(self.config)
        if method == "rules.read":  # a chat's rules files, through the repository door (no waiting)
            return repository.load_rules(payload)
        if method == "files.read":  # files the user names (#{file:}, the prompt library), through it too
            return repository.read_named(payload)
        if method.startswith("mcp."):  # `/mcp`, MCP prompts and resources (mcp/servers.py)
            return ops.for_lua(self._wait(self._mcp_request(method, payload), timeout=60))  # a server's data
        if method == "kill_agents":  # Neovim is exiting: save every chat; no agent may outlive it
            with contextlib.suppress(Exception):  # the agents go whatever happens to the saving
                self._on_loop(self._save_all, timeout=2)
            self.kill_agents()
            return True
        raise ValueError(f"unknown request {method!r}")

    def _on_loop(self, work: Callable[[], Any], timeout: float) -> Any:
        if self._thread is None:  # this is the loop's thread, between two of its steps
            return work()

        async def run() -> Any:
            return work()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout=timeout)

    def _save_all(self) -> None:
        self.keeper.save_all(list(self.sessions.values()))

    def kill_agents(self) -> None:
        """SIGKILL every agent's process group, at once, from any thread; and with them
        every other group the engine started (commands and what they left running in the
        background, terminals): nothing we started may outlive the editor."""
        for session in list(self.sessions.values()):
            session.kill_now()
        self.mcp.kill_now()
        processes.kill_all_groups()

    def shutdown(self) -> None:
        """Agents first, at once; then up to 2 s to close the sessions. On a shared loop: run
        on it once pynvim's has stopped (the host), or waited for in the calling handler's
        greenlet while it runs (Neovim's Python host calls the shutdown hook so)."""
        self.kill_agents()
        if self._thread is None:
            with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
                if self.loop.is_closed():
                    return
                if not self.loop.is_running():
                    self.loop.run_until_complete(asyncio.wait_for(self._close_all(), 2))
                elif getcurrent().parent is not None:
                    wait_in_greenlet(self.loop, self._close_all(), 2)
                else:
                    self.loop.create_task(self._close_all())
            return
        future = asyncio.run_coroutine_threadsafe(self._close_all(), self.loop)
        try:
            future.result(timeout=2)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)

    # --- on the engine loop --------------------------------------------------------------

    async def _handle(self, method: str, payload: Mapping[str, Any]) -> None:
        try:
            handler = self._methods.get(method)
            if handler is None:
                raise CodeCompanionError(f"unknown method {method!r}")
            await handler(payload)
        except CodeCompanionError as error:
            self._report(payload, str(error))
        except Exception as error:  # the one boundary that turns bugs into a message
            log.error("internal error in %s:\n%s", method, traceback.format_exc())
            self._report(payload, f"internal error in {method}: {type(error).__name__}: {error}")

    def _report(self, payload: Mapping[str, Any], message: str) -> None:
        chat_id = payload.get("chat_id") if isinstance(payload, Mapping) else None
        if chat_id is not None:
            self.channel.render(chat_id, [ops.Error(message=message)])
        else:
            self.channel.notify(message)

    @property
    def client(self) -> HttpClient:
        if self._client is None:
            self._client = HttpClient(read_timeout=self.config.read_timeout)  # connect: config.http
        return self._client

    async def _config_set(self, payload: Mapping[str, Any]) -> None:
        self.config = config.load(payload)
        if self.config.mcp != self.mcp.config:  # other servers: the running ones stop
            await self.mcp.close()
            self.mcp = McpServers(self.config.mcp)
        log.setLevel(self.config.log_level)
        for problem in self.config.problems:
            self.channel.notify(f"CodeCompanion: {problem}", "WARN")
        if self._client is not None:  # new requests get a client with the new settings;
            self._retired.append(self._client)  # replies streaming on the old one finish on it
            self._client = None

    async def _chat_open(self, payload: Mapping[str, Any]) -> None:
        chat_id = payload["chat_id"]
        spec = payload.get("adapter") or self.config.chat_adapter
        sink = RenderSink(lambda batch: self.channel.render(chat_id, batch), self.loop)
        saved = self.keeper.begin(chat_id, payload.get("history_id"), payload.get("resume_id"))
        workspace, history = _workspace(payload), (saved.messages if saved else None)
        try:
            session = self._new_session(chat_id, spec, payload.get("model") or None, sink, workspace, history)
        except ConfigError as error:
            if saved is None:
                raise
            # a saved chat whose adapter is gone from the config: the default one carries it on
            session = self._new_session(chat_id, self.config.chat_adapter, None, sink, workspace, history)
            self.channel.notify(
                f"CodeCompanion: the saved chat's adapter {saved.adapter} cannot be used ({error}); "
                f"it goes on with {session.adapter_info().name}",
                "WARN",
            )
        if saved is not None and saved.session_id and isinstance(session, AcpChatSession):
            session.saved_session = saved.session_id
        if saved is not None and saved.settings and isinstance(session, ChatSession):
            if saved.adapter == session.adapter.name:  # another adapter has another schema
                session.settings = dict(saved.settings)
        if isinstance(session, ChatSession):
            _from_prompt(session, payload)
        old = self.sessions.pop(chat_id, None)
        if old is not None:
            await old.close()
        self.sessions[chat_id] = session
        self._announce(session)

    def _announce(self, session: Session, *, model_changed: bool = True) -> None:
        """The chat's adapter, to the buffer (header, settings) and to listeners."""
        info = session.adapter_info()
        session.view.push(ops.Ready(adapter=info, saved_id=self.keeper.saved_id(session.chat_id)))
        session.view.push(ops.Settings(entries=session.settings_header()))
        session.view.fire("ChatAdapter", {"adapter": info, "id": session.chat_id})
        if model_changed:
            session.view.fire("ChatModel", {"adapter": info, "id": session.chat_id, "model": info.model})

    def _new_session(
        self,
        chat_id: Any,
        spec: Any,
        model: str | None,
        sink: Sink,
        workspace: Workspace,
        history: list[Message] | None = None,
    ) -> Session:
        editor = SinkEditor(sink, self.pending)
        name = spec.get("name") if isinstance(spec, Mapping) and set(spec) <= {"name", "model"} else spec
        if isinstance(name, str) and acp_adapters.is_acp(name):
            agent = acp_adapters.resolve(name)
            agent.editor = editor  # for Lua functions in its env
            model = model or (spec.get("model") if isinstance(spec, Mapping) else None)
            if model:  # chosen once the agent's session says which models it has
                agent.defaults["model"] = model
            return AcpChatSession(
                chat_id,
                agent,
                sink=sink,
                editor=editor,
                workspace=workspace,
                history=[m for m in history or [] if m.role in ("user", "assistant")],
                mcp=self.mcp,
            )
        session = ChatSession(
            chat_id,
            adapters.resolve(spec, model=model),
            client=lambda: self.client,
            sink=sink,
            system_prompt=self.config.chat_system_prompt(str(workspace.root)),
            tools=self.config.tools,
            editor=editor,
            workspace=workspace,
            context_management=self.config.context_management,
            mcp=self.mcp,
        )
        if history:
            session.history.extend(m for m in history if m.role != "system")
        return session

    def _session(self, payload: Mapping[str, Any]) -> Session:
        session = self.sessions.get(payload.get("chat_id"))
        if session is None:
            raise ConfigError("this chat is not open in the engine; open a new chat")
        return session

    async def _chat_submit(self, payload: Mapping[str, Any]) -> None:
        session = self._session(payload)
        settings = payload.get("settings")
        if isinstance(settings, Mapping):  # the settings header: checked before anything is sent
            await session.apply_settings(settings)
        removed = [str(i) for i in payload.get("removed") or () if i]
        task = session.submit(str(payload.get("text", "")), items_of(payload.get("context")), removed)
        if task is not None:  # saved as it goes, and once the turn ends, however it ends
            self.keeper.watch(session, task)
            task.add_done_callback(lambda _task: self.keeper.after_turn(session))

    async def _chat_system_prompt(self, payload: Mapping[str, Any]) -> None:
        on = self._session(payload).toggle_system_prompt()
        self.channel.notify(f"CodeCompanion: system prompt {'on' if on else 'off'} for this chat", "INFO")

    async def _chat_clear(self, payload: Mapping[str, Any]) -> None:
        session = self._session(payload)
        session.clear()
        session.view.push(ops.Cleared())
        session.view.push(ops.Settings(entries=session.settings_header()))
        session.view.fire("ChatCleared", {"id": session.chat_id})

    async def _chat_regenerate(self, payload: Mapping[str, Any]) -> None:
        self._session(payload).regenerate()

    async def _chat_debug(self, payload: Mapping[str, Any]) -> None:
        session = self._session(payload)
        session.view.push(ops.Debug(text=session.debug()))

    async def _chat_set_adapter(self, payload: Mapping[str, Any]) -> None:
        """Switch the chat's adapter and/or model. A session changes in place when it can
        (another HTTP adapter, another model of the same agent); otherwise a new session
        takes over with the conversation's history (an agent keeps its own memory, so a
        new one is told the conversation's text once)."""
        session = self._session(payload)
        before = session.adapter_info()
        name = str(payload.get("adapter") or before.name)
        model = payload.get("model") or None
        if not await session.switch(name, model):
            if session.busy:
                raise ConfigError("wait for the reply to finish (or press q) before switching to or from an agent")
            replacement = self._new_session(
                session.chat_id, name, model, session.view.sink, session.workspace, history=session.history
            )
            await session.close()
            self.sessions[session.chat_id] = replacement
            session = replacement
        self._announce(session, model_changed=session.adapter_info().model != before.model)

    async def _chat_models(self, payload: Mapping[str, Any]) -> None:
        """The adapter's models, fetched off the UI thread, for Lua to offer. An agent
        lists its own models (known once its session started)."""
        session = self._session(payload)
        name = str(payload.get("adapter") or session.adapter_info().name)
        models = session.own_models(name)
        if models is None and acp_adapters.is_acp(name):
            models = []  # another agent: its models are known once it runs
        elif models is None:
            adapter = adapters.resolve(name)
            name = adapter.name
            models = await list_models(adapter, self.client, getattr(session, "editor", None))
        session.view.push(ops.ChooseModel(adapter=name, models=tuple(models)))

    async def _chat_agent_options(self, payload: Mapping[str, Any]) -> None:
        session = self._session(payload)
        session.view.push(ops.ChooseOption(options=tuple(session.options())))

    async def _chat_set_option(self, payload: Mapping[str, Any]) -> None:
        await self._session(payload).set_option(str(payload.get("id")), payload.get("value"))

    async def _chat_sessions(self, payload: Mapping[str, Any]) -> None:
        session = self._session(payload)
        session.view.push(ops.ChooseSession(sessions=tuple(await session.list_sessions())))

    async def _chat_resume(self, payload: Mapping[str, Any]) -> None:
        self._session(payload).resume(str(payload.get("session_id")))

    async def _chat_yolo(self, payload: Mapping[str, Any]) -> None:
        session = self._session(payload)
        session.approvals.yolo = not session.approvals.yolo
        state = (
            "on: tools run without asking, except commands, deletions and protected files"
            if session.approvals.yolo
            else "off"
        )
        self.channel.notify(f"CodeCompanion: YOLO mode {state}", "WARN" if session.approvals.yolo else "INFO")

    async def _chat_clear_approvals(self, payload: Mapping[str, Any]) -> None:
        self._session(payload).approvals.clear()
        self.channel.notify("CodeCompanion: tool approvals cleared for this chat", "INFO")

    async def _editor_reply(self, payload: Mapping[str, Any]) -> None:
        self.pending.settle(payload)

    # --- the inline assistant and :CodeCompanionCmd (inline.py) ---------------------------

    def _http_adapter(self, payload: Mapping[str, Any], configured: Any, what: str) -> HTTPAdapter:
        spec = payload.get("adapter") or configured or self.config.chat_adapter
        name = spec.get("name") if isinstance(spec, Mapping) else spec
        if isinstance(name, str) and acp_adapters.is_acp(name):
            raise ConfigError(f"{what} needs an HTTP adapter, not the agent {name} (adapter=NAME on the command line)")
        return adapters.resolve(spec, model=payload.get("model") or None)

    async def _inline_run(self, payload: Mapping[str, Any]) -> None:
        inline_id = str(payload["chat_id"])
        adapter = self._http_adapter(payload, self.config.inline_adapter, "the inline assistant")
        sink = RenderSink(lambda batch: self.channel.render(inline_id, batch), self.loop)
        session = InlineSession(
            inline_id, adapter, client=self.client, sink=sink, editor=SinkEditor(sink, self.pending)
        )
        context = [item for item in payload.get("context") or () if isinstance(item, Mapping)]
        chat = self.sessions.get(payload.get("chat"))
        if chat is not None:  # #{chat}: the last chat's messages
            turns = [f"{m.role}: {m.text}" for m in chat.history if m.role in ("user", "assistant") and m.text]
            context.append({"label": "The last chat", "content": "\n\n".join(turns)})
        lines = payload.get("lines")
        request = InlineRequest(
            prompt=str(payload.get("prompt") or ""),
            filetype=str(payload.get("filetype") or ""),
            path=str(payload.get("path") or ""),
            selection=payload.get("selection") if isinstance(payload.get("selection"), str) else None,
            lines=(int(lines[0]), int(lines[1])) if isinstance(lines, list) and len(lines) == 2 else None,
            placement=payload.get("placement") if payload.get("placement") in PLACEMENTS else None,
            context=context,
        )
        self.inlines[inline_id] = session
        session.start(request).add_done_callback(lambda _task: self.inlines.pop(inline_id, None))

    async def _inline_stop(self, payload: Mapping[str, Any]) -> None:
        session = self.inlines.get(str(payload.get("chat_id")))
        if session is not None:
            session.stop()

    async def _cmd_run(self, payload: Mapping[str, Any]) -> None:
        target = payload["chat_id"]
        adapter = self._http_adapter(payload, self.config.cmd_adapter, ":CodeCompanionCmd")
        command = await command_for(adapter, self.client, str(payload.get("prompt") or ""))
        self.channel.render(target, [ops.Text(text=command), ops.Done(status="success")])

    # --- MCP servers for the editor: /mcp, prompts, resources -------------------------------

    async def _mcp_request(self, method: str, payload: Mapping[str, Any]) -> Any:
        if method == "mcp.status":
            return self.mcp.status()
        server = self.mcp.server(str(payload.get("server")), cwd=str(_workspace(payload).root), notice=self._mcp_said)
        if method == "mcp.prompt":
            arguments = payload.get("arguments")
            given = {str(k): str(v) for k, v in arguments.items()} if isinstance(arguments, Mapping) else {}
            return await server.get_prompt(str(payload.get("name")), given)
        if method == "mcp.resource":
            return await server.read_resource(str(payload.get("uri")))
        if method == "mcp.resources":
            await server.ensure()
            return server.status()["resources"]
        raise ValueError(f"unknown request {method!r}")

    def _mcp_said(self, event: str, data: Mapping[str, Any]) -> None:
        """A server's events when no chat asked for it (/mcp): as User autocmds of no chat."""
        if event != "MCPProgress":
            self.channel.render(None, [ops.fire(event, data)])

    async def _mcp_control(self, payload: Mapping[str, Any]) -> None:
        """`/mcp`: start (its tools join the chat), stop or restart a server."""
        name, action = str(payload.get("server")), payload.get("action")
        session = self.sessions.get(payload.get("chat_id"))
        server = self.mcp.server(name, cwd=str(_workspace(payload).root), notice=self._mcp_said)
        if action in ("stop", "restart"):
            await server.stop()
            if isinstance(session, ChatSession) and name in session.mcp_servers:
                session.mcp_servers.remove(name)
        if action in ("start", "restart"):
            await server.ensure()
            if isinstance(session, ChatSession) and name not in session.mcp_servers:
                session.mcp_servers.append(name)  # its tools load with the next message
            self.channel.notify(f"CodeCompanion: MCP server {name} runs: {len(server.tools)} tools", "INFO")
        elif action == "stop":
            self.channel.notify(f"CodeCompanion: MCP server {name} stopped", "INFO")

    async def _chat_compact(self, payload: Mapping[str, Any]) -> None:
        session = self._session(payload)
        task = session.compact()
        if task is not None:
            task.add_done_callback(lambda _task: self.keeper.after_turn(session))

    async def _chat_remove_context(self, payload: Mapping[str, Any]) -> None:
        self._session(payload).remove_context([str(i) for i in payload.get("ids") or () if i])

    async def _chat_stop(self, payload: Mapping[str, Any]) -> None:
        session = self.sessions.get(payload.get("chat_id"))
        if session is not None:
            session.stop()

    async def _chat_close(self, payload: Mapping[str, Any]) -> None:
        session = self.sessions.pop(payload.get("chat_id"), None)
        self.keeper.forget(payload.get("chat_id"))
        if session is not None:
            await session.close()

    async def _health(self) -> dict[str, Any]:
        from . import health  # only for :checkhealth: it reads package metadata, 10 ms of every start

        return await health.report_async()

    async def _close_all(self) -> None:
        sessions = list(self.sessions.values())
        self.sessions.clear()
        await asyncio.gather(*(session.close() for session in sessions), return_exceptions=True)
        await self.keeper.close()
        await self.mcp.close()
        for retired in [*self._retired, *([self._client] if self._client is not None else [])]:
            await retired.aclose()


def yield_to_editor() -> None:
    """The editor comes first: when a fast stream and typing compete for the CPU, the thread
    running the engine yields (Linux niceness is per thread; what it starts inherits it).
    Throughput is unaffected on an idle core."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), ENGINE_NICENESS)


async def _awaited(work: Awaitable[T]) -> T:
    return await work


def wait_in_greenlet(loop: asyncio.AbstractEventLoop, work: Awaitable[T], timeout: float) -> T:
    """`work`'s result, waited for inside a pynvim handler's greenlet on `loop`'s own thread:
    the greenlet hands control back to the loop (its parent) and is resumed when `work` is
    done, as pynvim's own requests from a handler wait. `TimeoutError` after `timeout`."""
    current = getcurrent()
    if current.parent is None:
        raise RuntimeError("a synchronous engine request on its loop's thread must come from a pynvim handler")
    task = asyncio.ensure_future(work, loop=loop)
    timer = loop.call_later(timeout, task.cancel)
    task.add_done_callback(lambda _task: current.switch())
    current.parent.switch()
    timer.cancel()
    if task.cancelled():
        raise TimeoutError(f"no answer in {timeout:g} s")
    return task.result()


def _from_prompt(session: ChatSession, payload: Mapping[str, Any]) -> None:
    """A chat a library prompt opens: its system messages (in place of the default one with
    `ignore_system_prompt`) and its tools."""
    if payload.get("ignore_system_prompt"):
        session.system_prompt_on = False
    for text in payload.get("system_prompts") or ():
        if isinstance(text, str) and text.strip():
            session.history.append(Message.of("system", text))
    tools = payload.get("tools")
    if isinstance(tools, list):
        session.enable([str(tool) for tool in tools])


def _workspace(payload: Mapping[str, Any]) -> Workspace:
    """The project root: the editor's cwd when the chat opened."""
    return Workspace(payload.get("cwd") or os.getcwd())
