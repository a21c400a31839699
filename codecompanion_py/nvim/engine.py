"""The engine: an asyncio loop on its own thread, and the methods Lua calls.

Calls arrive on pynvim's thread and are handed to the loop with
`run_coroutine_threadsafe`; nothing here blocks Neovim. Every failure ends as a message
to the user (in the chat when there is one), never as a stack trace in the editor.
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
from typing import Any, Protocol

from .. import adapters, config, health
from ..acp import adapters as acp_adapters
from ..adapters.models import list_models
from ..chat.acp_session import AcpChatSession
from ..chat.session import ChatSession
from ..client import HttpClient
from ..errors import CodeCompanionError, ConfigError
from .editor import PendingCalls, SinkEditor
from .render import RenderSink

log = logging.getLogger("codecompanion_py")
ENGINE_NICENESS = 10


class Bridge(Protocol):
    def render(self, chat_id: Any, ops: list[dict[str, Any]]) -> None: ...
    def notify(self, message: str, level: str = "ERROR") -> None: ...


class Engine:
    def __init__(self, bridge: Bridge) -> None:
        self.bridge = bridge
        self.config = config.load({})
        self.sessions: dict[Any, ChatSession | AcpChatSession] = {}
        self._client: HttpClient | None = None
        self.pending = PendingCalls()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="codecompanion-engine", daemon=True)
        self._thread.start()
        atexit.register(self.kill_agents)  # the host exiting some other way
        self._methods: dict[str, Callable[[Mapping[str, Any]], Awaitable[None]]] = {
            "config.set": self._config_set,
            "chat.open": self._chat_open,
            "chat.submit": self._chat_submit,
            "chat.stop": self._chat_stop,
            "chat.close": self._chat_close,
            "chat.set_adapter": self._chat_set_adapter,
            "chat.models": self._chat_models,
            "chat.yolo": self._chat_yolo,
            "chat.clear_approvals": self._chat_clear_approvals,
            "chat.agent_options": self._chat_agent_options,
            "chat.set_option": self._chat_set_option,
            "chat.sessions": self._chat_sessions,
            "chat.resume": self._chat_resume,
            "editor.reply": self._editor_reply,
        }

    def _run(self) -> None:
        # The editor comes first: when a fast stream and typing compete for the CPU, the
        # engine thread yields (Linux niceness is per thread). Throughput is unaffected
        # on an idle core.
        with contextlib.suppress(AttributeError, OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), ENGINE_NICENESS)
        self.loop.run_forever()

    # --- entry points (called from pynvim's thread) ----------------------------------------

    def dispatch(self, method: str, payload: Mapping[str, Any]) -> Future[None]:
        return asyncio.run_coroutine_threadsafe(self._handle(method, payload or {}), self.loop)

    def request(self, method: str, payload: Mapping[str, Any]) -> Any:
        if method == "health":
            return asyncio.run_coroutine_threadsafe(self._health(), self.loop).result(timeout=10)
        if method == "adapters":
            return adapters.available() + acp_adapters.names()
        if method == "kill_agents":  # Neovim is exiting: no agent may outlive it
            self.kill_agents()
            return True
        raise ValueError(f"unknown request {method!r}")

    def kill_agents(self) -> None:
        """SIGKILL every agent's process group, at once, from any thread."""
        for session in list(self.sessions.values()):
            if isinstance(session, AcpChatSession):
                session.kill_now()

    def shutdown(self) -> None:
        self.kill_agents()
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
            self.bridge.render(chat_id, [{"op": "error", "message": message}])
        else:
            self.bridge.notify(message)

    @property
    def client(self) -> HttpClient:
        if self._client is None:
            self._client = HttpClient(connect_timeout=self.config.connect_timeout,
                                      read_timeout=self.config.read_timeout)
        return self._client

    async def _config_set(self, payload: Mapping[str, Any]) -> None:
        self.config = config.load(payload)
        log.setLevel(self.config.log_level)
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _chat_open(self, payload: Mapping[str, Any]) -> None:
        chat_id = payload["chat_id"]
        spec = payload.get("adapter") or self.config.chat_adapter
        sink = RenderSink(lambda ops: self.bridge.render(chat_id, ops), self.loop)
        session = self._new_session(chat_id, spec, payload.get("model") or None, sink, _workspace(payload))
        old = self.sessions.pop(chat_id, None)
        if old is not None:
            await old.close()
        self.sessions[chat_id] = session
        sink.push({"op": "ready", "adapter": session.adapter_info()})

    def _new_session(self, chat_id: Any, spec: Any, model: str | None, sink: RenderSink, workspace: Any,
                     history: list[Any] | None = None) -> ChatSession | AcpChatSession:
        editor = SinkEditor(sink, self.pending)
        name = spec.get("name") if isinstance(spec, Mapping) and set(spec) <= {"name", "model"} else spec
        if acp_adapters.is_acp(name):
            agent = acp_adapters.resolve(name)
            model = model or (spec.get("model") if isinstance(spec, Mapping) else None)
            if model:  # chosen once the agent's session says which models it has
                agent.defaults["model"] = model
            return AcpChatSession(chat_id, agent, sink=sink, editor=editor, workspace=workspace,
                                  history=[m for m in history or [] if m.role in ("user", "assistant")])
        session = ChatSession(chat_id, adapters.resolve(spec, model=model), client=self.client, sink=sink,
                              system_prompt=self.config.system_prompt, tools=self.config.tools,
                              editor=editor, workspace=workspace)
        if history:
            session.history.extend(m for m in history if m.role != "system")
        return session

    def _session(self, payload: Mapping[str, Any]) -> ChatSession | AcpChatSession:
        session = self.sessions.get(payload.get("chat_id"))
        if session is None:
            raise ConfigError("this chat is not open in the engine; open a new chat")
        return session

    async def _chat_submit(self, payload: Mapping[str, Any]) -> None:
        self._session(payload).submit(str(payload.get("text", "")))

    async def _chat_set_adapter(self, payload: Mapping[str, Any]) -> None:
        """Switch the chat's adapter and/or model. Between HTTP adapters the history carries
        over as it is; to or from an agent, the conversation's text does (an agent keeps
        its own memory, so a new one starts without it)."""
        session = self._session(payload)
        name = payload.get("adapter") or session.adapter.name
        model = payload.get("model") or None
        if isinstance(session, AcpChatSession) and name == session.adapter.name:
            if model:
                option = next((o for o in session.options() if o["id"] != "__mode" and
                               any(v["value"] == model for v in o["values"])), None)
                if option is None:
                    raise ConfigError(f"{session.adapter.formatted_name} offers no model {model!r}")
                await session.set_option(option["id"], model)
        elif isinstance(session, ChatSession) and not acp_adapters.is_acp(name):
            session.adapter = adapters.resolve(name, model=model)
        else:
            if session.busy:
                raise ConfigError("wait for the reply to finish (or press q) before switching to or from an agent")
            replacement = self._new_session(session.chat_id, name, model, session.sink, session.workspace,
                                            history=session.history)
            await session.close()
            self.sessions[session.chat_id] = replacement
            session = replacement
        session.sink.push({"op": "ready", "adapter": session.adapter_info()})
        session.sink.push({"op": "fire", "event": "ChatAdapter", "data": {"adapter": session.adapter_info()}})

    async def _chat_models(self, payload: Mapping[str, Any]) -> None:
        """The adapter's models, fetched off the UI thread, for Lua to offer. An agent's
        models are the values of its model option (known once its session started)."""
        session = self._session(payload)
        name = payload.get("adapter") or session.adapter.name
        if acp_adapters.is_acp(name):
            models: list[str] = []
            if isinstance(session, AcpChatSession) and name == session.adapter.name:
                models = [str(v["value"]) for o in session.options() if o["id"] != "__mode"
                          and o["name"].lower() == "model" for v in o["values"]]
                models += [str(m.get("modelId")) for m in session.models.get("availableModels") or []
                           if isinstance(m, Mapping) and m.get("modelId") and str(m.get("modelId")) not in models]
            session.sink.push({"op": "choose_model", "adapter": name, "models": models})
            return
        adapter = adapters.resolve(name)
        models = await list_models(adapter, self.client)
        session.sink.push({"op": "choose_model", "adapter": adapter.name, "models": models})

    def _agent(self, payload: Mapping[str, Any]) -> AcpChatSession:
        session = self._session(payload)
        if not isinstance(session, AcpChatSession):
            raise ConfigError("this chat does not talk to an agent; pick one with `ga` (codex, claude_code...)")
        return session

    async def _chat_agent_options(self, payload: Mapping[str, Any]) -> None:
        session = self._agent(payload)
        options = session.options()
        if not options:
            raise ConfigError(f"{session.adapter.formatted_name} offers no modes or options"
                              + ("" if session.session_id else " yet: send a message first"))
        session.sink.push({"op": "choose_option", "options": options})

    async def _chat_set_option(self, payload: Mapping[str, Any]) -> None:
        await self._agent(payload).set_option(str(payload.get("id")), payload.get("value"))

    async def _chat_sessions(self, payload: Mapping[str, Any]) -> None:
        session = self._agent(payload)
        found = await session.list_sessions()
        session.sink.push({"op": "choose_session", "sessions": [
            {"id": s["sessionId"], "title": s.get("title") or s["sessionId"], "updated": s.get("updatedAt")}
            for s in found]})

    async def _chat_resume(self, payload: Mapping[str, Any]) -> None:
        session = self._agent(payload)
        if session.busy:
            raise ConfigError("wait for the reply to finish before loading another session")
        session.resume(str(payload.get("session_id")))
        session.sink.push({"op": "show", "title": "**Session**",
                           "text": "The earlier session loads with your next message."})

    async def _chat_yolo(self, payload: Mapping[str, Any]) -> None:
        session = self._session(payload)
        session.approvals.yolo = not session.approvals.yolo
        state = "on: tools run without asking, except commands, deletions and protected files" \
            if session.approvals.yolo else "off"
        self.bridge.notify(f"CodeCompanion: YOLO mode {state}", "WARN" if session.approvals.yolo else "INFO")

    async def _chat_clear_approvals(self, payload: Mapping[str, Any]) -> None:
        self._session(payload).approvals.clear()
        self.bridge.notify("CodeCompanion: tool approvals cleared for this chat", "INFO")

    async def _editor_reply(self, payload: Mapping[str, Any]) -> None:
        self.pending.settle(payload)

    async def _chat_stop(self, payload: Mapping[str, Any]) -> None:
        session = self.sessions.get(payload.get("chat_id"))
        if session is not None:
            session.stop()

    async def _chat_close(self, payload: Mapping[str, Any]) -> None:
        session = self.sessions.pop(payload.get("chat_id"), None)
        if session is not None:
            await session.close()

    async def _health(self) -> dict[str, Any]:
        return health.report()

    async def _close_all(self) -> None:
        sessions = list(self.sessions.values())
        self.sessions.clear()
        await asyncio.gather(*(session.close() for session in sessions), return_exceptions=True)
        if self._client is not None:
            await self._client.aclose()


def _workspace(payload: Mapping[str, Any]) -> Any:
    from ..tools.workspace import Workspace  # the project root: Neovim's cwd when the chat opened

    return Workspace(payload.get("cwd") or os.getcwd())
