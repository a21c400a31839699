"""Which kind of session a chat gets, chosen from its adapter's name in one place.

An HTTP adapter gives a `ChatSession`, an agent an `AcpChatSession`; nothing else asks
which kind an adapter or a session is (`is_agent` answers the engine's few questions:
may a session switch in place, may the inline assistant use this adapter). The registries
are the config's one registry (`Config.adapters`), which an HTTP chat also reads to switch
adapters by name (`ChatSession.switch`, its settings' model), as the keeper does for titles.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..adapters.base import HTTPAdapter
from ..adapters.models import list_models
from ..client import HttpClient
from ..errors import ConfigError
from ..mcp.servers import McpServers
from ..messages import Message
from ..tools.workspace import Workspace
from ..ui.editor import PendingCalls, SinkEditor
from ..ui.sink import Sink
from .protocol import Session
from .session import ChatSession

if TYPE_CHECKING:
    from ..config import Config


class SessionFactory:
    def __init__(
        self,
        config: Callable[[], Config],
        client: Callable[[], HttpClient],
        mcp: Callable[[], McpServers],
        pending: PendingCalls,
    ) -> None:
        """Each read when it is needed: the engine replaces its config, client and MCP
        servers when the user's config changes."""
        self._config = config
        self._client = client
        self._mcp = mcp
        self._pending = pending

    def is_agent(self, spec: Any) -> bool:
        """Whether the adapter `spec` (a name, or a table with one) names an agent."""
        name = spec.get("name") if isinstance(spec, Mapping) else spec
        return isinstance(name, str) and self._config().adapters.kind(name) == "acp"

    def open(
        self,
        chat_id: Any,
        spec: Any,
        model: str | None,
        sink: Sink,
        workspace: Workspace,
        history: list[Message] | None = None,
        *,
        command: str | None = None,
    ) -> Session:
        """A session for adapter `spec` that carries on `history`; an agent started with its
        `commands[command]` when that is given (CodeCompanion's `command=`)."""
        editor = SinkEditor(sink, self._pending)
        if isinstance(spec, Mapping) and set(spec) <= {"name", "model"} and self.is_agent(spec):
            model, spec = model or spec.get("model"), spec.get("name")  # an agent is named, no more
        if isinstance(spec, str) and self.is_agent(spec):
            agent = self._config().adapters.agent(spec)
            agent.editor = editor  # for Lua functions in its env
            if command:
                agent.select(command)
            if model:  # chosen once the agent's session says which models it has
                agent.defaults["model"] = model
            from .acp.session import AcpChatSession  # the ACP stack, loaded by the first agent chat only

            return AcpChatSession(
                chat_id,
                agent,
                sink=sink,
                editor=editor,
                workspace=workspace,
                history=[m for m in history or [] if m.role in ("user", "assistant")],
                mcp=self._mcp(),
                sandbox=self._config().tools.sandbox,
            )
        if command:
            name = spec.get("name") if isinstance(spec, Mapping) else spec
            raise ConfigError(f"command={command} picks how an agent starts; {name} is not an agent (adapter=NAME)")
        config = self._config()
        session = ChatSession(
            chat_id,
            config.adapters.http(spec, model=model),
            client=self._client,
            sink=sink,
            system_prompt=config.chat_system_prompt(str(workspace.root)),
            tools=config.tools,
            editor=editor,
            workspace=workspace,
            context_management=config.context_management,
            mcp=self._mcp(),
            registry=lambda: self._config().adapters,
            judge=replace(config.judge, adapter=config.judge.adapter or config.background_adapter),
            diff_threshold_for_chat=config.diff_threshold_for_chat,
        )
        if history:
            session.history.extend(m for m in history if m.role != "system")
        return session

    def http_adapter(self, spec: Any, model: str | None, what: str) -> HTTPAdapter:
        """The adapter for `what` (the inline assistant, :CodeCompanionCmd): never an agent."""
        if self.is_agent(spec):
            name = spec.get("name") if isinstance(spec, Mapping) else spec
            raise ConfigError(f"{what} needs an HTTP adapter, not the agent {name} (adapter=NAME on the command line)")
        return self._config().adapters.http(spec, model=model)

    async def models(self, session: Session, name: str) -> tuple[str, list[str]]:
        """Adapter `name`'s models (and its name as the registry spells it), fetched off
        the UI thread. An agent lists its own models, known once its session started."""
        models = session.own_models(name)
        if models is not None:
            return name, models
        if self.is_agent(name):
            return name, []  # another agent: its models are known once it runs
        config = self._config()
        adapter = config.adapters.http(name)
        return adapter.name, await list_models(
            adapter, self._client(), session.editor, cache_seconds=config.models_cache_seconds
        )


def workspace_of(cwd: str | None) -> Workspace:
    """The project root: the editor's cwd when the chat opened."""
    return Workspace(cwd or os.getcwd())
