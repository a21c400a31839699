"""A chat with an HTTP provider: its history and its turns, independent of Neovim.

A turn sends the history through the adapter and shows the canonical events through the
chat's `EventView`; when the reply calls tools, the orchestrator runs them and the results
go back to the LLM in the same turn, round after round, until it answers without tool
calls (or the round limit is hit). Stopping keeps what streamed so far and gives every
tool call a result; an error leaves the chat usable. The sink behind the view decides how
ops reach the user (batched RPC in Neovim, a list in tests).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

import msgspec

from .. import web
from ..adapters import BUILTIN, Adapters
from ..adapters.base import HTTPAdapter
from ..adapters.lua import LuaFunction, adapter_table
from ..client import HttpClient, HttpRequest
from ..editor_port import Editor
from ..errors import CodeCompanionError, ConfigError
from ..events import ErrorEvent, FinalEvent, NoticeEvent
from ..mcp.servers import McpServers
from ..messages import Message, ToolCall, ToolResultPart, ToolStatus, Usage
from ..stream.iterators import HttpStreamIterator, joined_tokens
from ..tools.approvals import Approvals, Verdict
from ..tools.context import ChatHandle, ToolsContext
from ..tools.orchestrator import Orchestrator
from ..tools.registry import ToolSettings, mentions
from ..tools.workspace import Workspace
from ..ui import ops
from ..ui.ops import AdapterInfo
from ..ui.sink import Sink
from ..ui.view import EventView
from . import compaction, judge
from . import context as shared_context
from . import settings as settings_header
from .context import ContextItem
from .debug import debug_text
from .history import Record
from .judge import JudgeSettings
from .mcp_tools import ChatMcpTools
from .protocol import PromptSetup, SavedState, Session, WithoutAgent, refuse_turn

log = logging.getLogger("codecompanion_py.chat")

DEFAULT_SYSTEM_PROMPT = (
    "You are an AI programming assistant working inside the Neovim text editor. "
    "Answer concisely, use Markdown, and put code in fenced code blocks with the language name."
)

Status = Literal["success", "error", "stopped"]


class ChatSession(WithoutAgent):
    """A `Session` whose replies come from an HTTP adapter."""

    def __init__(
        self,
        chat_id: Any,
        adapter: HTTPAdapter,
        *,
        client: HttpClient | Callable[[], HttpClient],
        sink: Sink,
        system_prompt: str | LuaFunction | None = DEFAULT_SYSTEM_PROMPT,
        settings: Mapping[str, Any] | None = None,
        tools: ToolSettings | None = None,
        editor: Editor | None = None,
        workspace: Workspace | None = None,
        context_management: compaction.Settings | None = None,
        mcp: McpServers | None = None,
        registry: Adapters | Callable[[], Adapters] = BUILTIN,
        judge: JudgeSettings | None = None,
        diff_threshold_for_chat: int = 0,
    ) -> None:
        self.chat_id = chat_id
        self.adapter = adapter
        # what a switch or a compaction adapter resolves through: the engine's current
        # config's registry (a callable, as the client), so a setup() again is seen
        self._registry = registry
        # the engine's current client: a callable, so a chat opened before a config change
        # (which replaces the client) sends its next request through the new one
        self._client = client
        self.view = EventView(sink)
        self.settings = dict(settings or {})
        self.history: list[Message] = []
        # A system prompt function (CodeCompanion's `function(ctx)`) is called before each request.
        self._system_prompt_fn = system_prompt if isinstance(system_prompt, LuaFunction) else None
        self._system_message: Message | None = None  # the system prompt (not a tool's)
        if system_prompt and self._system_prompt_fn is None:
            self._system_message = Message.of("system", str(system_prompt))
            self.history.append(self._system_message)
        self.system_prompt_on = True  # `gs`
        self._last_prompt: Message | None = None  # the user's last message, for `gr`
        self._follow_up: str | None = None  # `gm` while the reply streams, for its next request
        self.hooks: frozenset[str] = frozenset()
        self.before_changes: asyncio.Future[Any] | None = None
        self.last_request: HttpRequest | None = None  # for `gd`
        self.task: asyncio.Task[None] | None = None
        self._begun: asyncio.Task[Any] | None = None  # the last turn that started running
        self.tool_settings = tools or ToolSettings()
        self.editor = editor
        self.workspace = workspace or Workspace(".")
        self.approvals = Approvals()
        self.file_reads: dict[str, str] = {}  # what the LLM has seen, so edits to stale reads are refused
        self.tools: dict[str, Any] = {}  # enabled tool definitions by name
        self._prompted: set[str] = set()
        self.context_management = context_management or compaction.Settings()
        self._last_tokens = 0  # the provider's count after the last request
        self._stream: HttpStreamIterator | None = None  # the reply streaming now
        self.mcp = mcp
        self.mcp_tools = ChatMcpTools(mcp, self.view, chat_id)
        self.judge_settings = judge or JudgeSettings(enabled=False)
        self.diff_threshold_for_chat = diff_threshold_for_chat
        self.enable(self.tool_settings.default_tools)

    @property
    def busy(self) -> bool:
        return self.task is not None and not self.task.done()

    @property
    def client(self) -> HttpClient:
        return self._client() if callable(self._client) else self._client

    @property
    def registry(self) -> Adapters:
        return self._registry() if callable(self._registry) else self._registry

    def adapter_info(self) -> AdapterInfo:
        adapter = self.adapter
        name, shown, model = adapter.name, adapter.formatted_name, adapter.model
        return AdapterInfo(name=name, formatted_name=shown, model=model, vision=adapter.vision)

    async def switch(self, name: str, model: str | None, *, agent: bool) -> bool:
        if agent:
            return False
        if name != self.adapter.name:
            self.settings = {}  # another schema
        self.adapter = self.registry.http(name, model=model)
        return True

    def settings_header(self) -> tuple[ops.SettingEntry, ...]:
        return settings_header.header(self.adapter, self.settings)

    async def apply_settings(self, raw: Mapping[str, Any]) -> None:
        """The values of the settings header, for the next request; a wrong one raises
        (and nothing is sent). A new model there switches the model."""
        settings = settings_header.validate(self.adapter, raw)
        model = settings.pop("model", None)
        if model is not None and model != self.adapter.model:
            self.adapter = self.registry.http(self.adapter.name, model=str(model))
            self.view.push(ops.Ready(adapter=self.adapter_info()))
            self.view.fire("ChatModel", {"adapter": self.adapter_info(), "id": self.chat_id, "model": model})
        self.settings = settings

    def toggle_system_prompt(self) -> bool:
        self.system_prompt_on = not self.system_prompt_on
        return self.system_prompt_on

    def clear(self) -> None:
        """Forget the conversation; the system prompts (and enabled tools) stay."""
        self.rewind(0)

    def may_change_files(self) -> bool:
        return bool(self.tools) or bool(self.mcp_tools.names)

    def rewind(self, keep: int) -> None:
        self._refuse_while_busy("rewind the chat" if keep else "clear the chat")
        gone = {id(m) for m in [m for m in self.history if m.role != "system"][keep:]}  # system prompts stay
        self.history[:] = [m for m in self.history if id(m) not in gone]
        self._last_prompt = None
        self.file_reads.clear()

    def regenerate(self) -> asyncio.Task[None] | None:
        """Drop the last reply (with its tool turns) and send the last message again."""
        self._refuse_while_busy("regenerate")
        users = [i for i, m in enumerate(self.history) if m.role == "user"]
        # the message the user sent last; after a change of backend, the last user message
        index = next((i for i in users if self.history[i] is self._last_prompt), users[-1] if users else None)
        if index is None:
            raise ConfigError("there is no message to send again yet")
        del self.history[index + 1 :]
        self.view.push(ops.Rewind())
        return self._start()

    def debug(self) -> str:
        details = {
            "parameters": self.adapter.parameters,
            "settings": self.settings,
            "system_prompt": "on" if self.system_prompt_on else "off",
            "tools": sorted(self.tools),
        }
        return debug_text(self.adapter_info(), details=details, history=self.history, request=self.last_request)

    def _refuse_while_busy(self, what: str) -> None:
        if self.busy:
            raise ConfigError(f"wait for the reply to finish (or press q) to {what}")

    def own_models(self, name: str) -> list[str] | None:
        return None

    def kill_now(self) -> None:
        """Nothing of an HTTP chat outlives the host: its requests die with the loop."""

    def saved_state(self) -> SavedState:
        return SavedState(settings=dict(self.settings))

    def restore(self, saved: Record) -> None:
        if saved.settings and saved.adapter == self.adapter.name:  # another adapter has another schema
            self.settings = dict(saved.settings)

    def use_prompt(self, setup: PromptSetup) -> None:
        """In place of the default system prompt with `ignore_system_prompt`."""
        if setup.ignore_system_prompt:
            self.system_prompt_on = False
        for text in setup.system_prompts:
            if text.strip():
                self.history.append(Message.of("system", text))
        if setup.tools is not None:
            self.enable(list(setup.tools))
        if setup.mcp_servers is not None:  # an unknown name is said when the turn loads it
            self.mcp_tools.names = list(setup.mcp_servers)

    def attach_mcp(self, server: str) -> None:
        self.mcp_tools.attach(server)

    def detach_mcp(self, server: str) -> None:
        self.mcp_tools.detach(server)

    def title_adapter(self) -> HTTPAdapter | None:
        return self.adapter

    def enable(self, names: list[str]) -> list[str]:
        """Enable tools and groups for this chat; their system prompts join the history once."""
        added: list[str] = []
        for name in names:
            group = self.tool_settings.groups.get(name)
            if group is not None:
                self._add_prompt(f"group:{name}", group.get("system_prompt"))
            for tool in self.tool_settings.expand(name):
                if tool in self.tools:
                    continue
                definition = self.tool_settings.definition(tool)
                self.tools[tool] = definition
                added.append(tool)
                # CodeCompanion fires ChatToolAdded and documents ToolAdded: both, for either listener
                for event in ("ChatToolAdded", "ToolAdded"):
                    self.view.fire(event, {"id": self.chat_id, "tool": tool})
                self._add_prompt(f"tool:{tool}", definition.prompt_text())
        return added

    def _add_prompt(self, key: str, prompt: Any) -> None:
        if prompt and isinstance(prompt, str) and key not in self._prompted:
            self._prompted.add(key)
            self.history.append(Message.of("system", prompt))

    def submit(
        self, text: str, context: Sequence[ContextItem] = (), removed: Sequence[str] = ()
    ) -> asyncio.Task[None] | None:
        """Start a turn for the user's `text` with the context shared with it (and without
        the context items the user removed); refused (with an error op) while one runs."""
        if refuse_turn(self, text, "a request is already running; press q to stop it"):
            return None
        images = [item.label or item.path for item in context if item.kind == "image"]
        if images and not self.adapter.vision:  # CodeCompanion's `opts.vision`
            said = f"{self.adapter.formatted_name} ({self.adapter.model}) does not read images (its opts.vision): "
            self.view.push(ops.Error(message=said + f"remove {', '.join(map(str, images))} or pick another with `ga`"))
            return None  # gives the message back to edit
        pages = [item for item in context if item.kind == "fetch"]  # read in the turn, not here
        self.remove_context([*removed, *(page.id for page in pages if page.update == "all")])
        try:
            shared_context.add(self.history, [item for item in context if item.kind != "fetch"])
        except ConfigError as error:
            self.view.push(ops.Error(message=str(error)))  # gives the message back to edit
            return None
        text = self.mcp_tools.mentions(text)
        tools, _groups, text = mentions(text, self.tool_settings)
        self.enable(tools)
        self._last_prompt = Message.of("user", text)
        self.history.append(self._last_prompt)
        return self._start(pages)

    def fork_state(self) -> tuple[list[Message], dict[str, Any], set[str]]:
        return self.snapshot(), dict(self.tools), set(self._prompted)  # messages are frozen: shared

    def fork_from(self, source: Session) -> None:
        history, tools, prompted = source.fork_state()
        self.history[:] = history
        self.tools.update(tools)
        self._prompted |= prompted

    def follow_up(self, text: str) -> bool:
        self._follow_up = text if self.busy else None  # the latest wins, as CodeCompanion keeps one
        return self.busy

    def _take_follow_up(self) -> bool:
        """Put a queued follow-up into the history and the buffer; whether there was one."""
        text, self._follow_up = self._follow_up, None
        if text:
            self.history.append(Message.of("user", text))
            self.view.push(ops.FollowUp(text=text))
        return bool(text)

    def snapshot(self) -> list[Message]:
        """The history with the part of the reply that has streamed so far (for saving mid-stream)."""
        partial = self._stream.partial_message() if self._stream is not None else None
        return [*self.history, partial] if partial is not None else list(self.history)

    def remove_context(self, ids: Sequence[str]) -> None:
        """Forget what the context items `ids` sent (the user deleted them from the block, or `gM`)."""
        if ids:
            self.history[:] = shared_context.without(self.history, ids)

    def _start(self, pages: Sequence[ContextItem] = ()) -> asyncio.Task[None]:
        self.task = asyncio.get_running_loop().create_task(self._turn(pages))
        self.task.add_done_callback(self._end_unstarted)
        return self.task

    def stop(self) -> bool:
        if not self.busy:
            return False
        assert self.task is not None
        self.task.cancel()
        return True

    async def close(self) -> None:
        self.stop()

    def _end_unstarted(self, task: asyncio.Task[None]) -> None:
        """A turn stopped before its first step never runs (nor its `finally`): end it here,
        or the chat would wait for a `Done` forever."""
        if self._begun is not task:
            self.view.push(ops.Done(status="stopped"))

    async def _turn(self, pages: Sequence[ContextItem] = ()) -> None:
        self._begun = asyncio.current_task()
        push = self.view.push
        push(ops.Begin(adapter=self.adapter_info()))
        status: Status = "success"
        message: str | None = None
        usage: Usage | None = None
        rounds = 0
        try:
            await self._read_pages(pages)
            await self.mcp_tools.load(
                self.tools,
                configured=set(self.tool_settings.names()),
                cwd=str(self.workspace.root),
                editor=self.editor,
                add_prompt=self._add_prompt,
            )
            while True:
                status, message, round_usage = await self._round()
                usage = round_usage or usage
                calls = self._pending_calls() if status == "success" else ()
                if not calls:
                    break
                rounds += 1
                if rounds > self.tool_settings.max_rounds:
                    status = "error"
                    message = (
                        f"stopped after {self.tool_settings.max_rounds} rounds of tool calls "
                        "(interactions.chat.tools.opts.max_rounds)"
                    )
                    self._answer_all(calls, "error", f"Not run: {message}.")
                    break
                if await self._run_tools(calls):
                    status = "stopped"
                    break
                followed = self._take_follow_up()  # `gm`: the user's words go with the tool results
                push(ops.Begin(adapter=self.adapter_info(), continued=not followed))
        except CodeCompanionError as error:  # a page of /fetch that could not be read
            status, message = "error", str(error)
        except asyncio.CancelledError:  # stopped while a page was read
            status = "stopped"
        finally:
            self._follow_up = None  # one the turn had no request for: the editor sends it
            push(
                ops.Done(
                    status=status, tokens=usage.total_tokens if usage is not None else None, message=message or None
                )
            )

    async def _read_pages(self, pages: Sequence[ContextItem]) -> None:
        """The pages `/fetch` shared, read now (the engine's loop, never the editor's) and put
        before the message that shared them."""
        if not pages:
            return
        read = []
        for page in pages:  # a URL the user typed: redirects elsewhere are followed
            text = await web.page_text(page.path or "", settings=self.client.settings, cached=True, elsewhere=True)
            read.append(msgspec.structs.replace(page, content=text, label=page.label or page.path or "a web page"))
        at = next((i for i, m in enumerate(self.history) if m is self._last_prompt), len(self.history))
        added: list[Message] = []
        shared_context.add(added, read)
        self.history[at:at] = added

    async def _round(self) -> tuple[Status, str | None, Usage | None]:
        """One request and its stream; (status, error message, usage)."""
        try:
            await self._refresh_system_prompt()
            await self._manage_context()
            model = self.adapter.schema.get("model", {}).get("default")
            if isinstance(model, LuaFunction):  # what RequestStarted says (prepare() calls it again)
                await model.call_async(self.editor, self.adapter)
        except CodeCompanionError as error:
            return "error", str(error), None
        info = ops.request_info(self.adapter_info(), "chat")
        view = self.view
        view.fire("RequestStarted", info)
        specs = [definition.spec() for definition in self.tools.values()]
        system = None if self.system_prompt_on else self._system_message
        stream = HttpStreamIterator(
            self.adapter,
            shared_context.seen_by(self.adapter.vision, [m for m in self.history if m is not system]),
            client=self.client,
            settings=self.settings,
            tools=specs or None,
            editor=self.editor,
        )
        status: Status = "success"
        message: str | None = None
        usage: Usage | None = None
        streaming = False
        self._stream = stream
        try:
            while batch := await stream.next_batch():
                if not streaming and batch[0].__class__ is not NoticeEvent:  # a retry's notice is no reply yet
                    streaming = True
                    view.fire("RequestStreaming", info)
                for event in joined_tokens(batch):
                    view.show(event)
                    if isinstance(event, FinalEvent):
                        self.history.append(event.message)
                        usage = event.usage
                        if usage is not None:
                            self._last_tokens = usage.total_tokens or usage.prompt_tokens + usage.completion_tokens
                    elif isinstance(event, ErrorEvent):
                        status, message = "error", event.message
                        log.error("chat %s: %s", self.chat_id, message)
                        self._keep_partial(stream)
        except asyncio.CancelledError:
            status = "stopped"
            self._keep_partial(stream)
        finally:
            self._stream = None
            self.last_request = stream._request or self.last_request  # what `gd` shows
            await stream.close()
            view.fire("RequestFinished", {**info, "status": status})
        return status, message, usage

    def compact(self) -> asyncio.Task[None] | None:
        """`/compact`: summarise the earlier turns now, as a turn of its own."""
        if self.busy:
            self.view.push(ops.Error(message="a request is already running; press q to stop it"))
            return None
        self.task = asyncio.get_running_loop().create_task(self._compact_turn())
        self.task.add_done_callback(self._end_unstarted)
        return self.task

    async def _compact_turn(self) -> None:
        self._begun = asyncio.current_task()
        self.view.push(ops.Begin(adapter=self.adapter_info()))
        status: Status = "success"
        message: str | None = None
        try:
            await self._manage_context(force=True)
        except CodeCompanionError as error:
            status, message = "error", str(error)
        except asyncio.CancelledError:
            status = "stopped"
        finally:
            self.view.push(ops.Done(status=status, message=message))

    async def _manage_context(self, *, force: bool = False) -> None:
        """Keep the chat inside its model's window (compaction.py): old tool output cut
        first, then the earlier turns summarised; the chat says what happened."""
        settings = self.context_management
        if not settings.enabled and not force:
            return
        window = compaction.context_window(self.adapter)
        edit_at = compaction.threshold(settings.editing_trigger, window)
        compact_at = compaction.threshold(settings.compaction_trigger, window)
        if not force and edit_at is None and compact_at is None:
            return  # shares of a window this model does not declare: nothing to measure against
        size = max(self._last_tokens, compaction.estimate(self.history))
        if not force and edit_at is not None and size >= edit_at:
            removed = compaction.trim_tool_outputs(self.history, settings.keep_cycles, settings.exclude_tools)
            if removed:
                size = compaction.estimate(self.history)
                self._say_context(
                    f"Cut the output of older tool calls (~{removed // compaction.CHARS_PER_TOKEN:,} tokens) "
                    f"to keep the chat within {self._window_words(window)}."
                )
        if not force and (compact_at is None or size < compact_at):
            return
        system, older, kept = compaction.split_for_summary(self.history)
        saved = compaction.estimate(older)
        if not older or (not force and saved < settings.min_token_savings):
            if force:
                self._say_context("There is nothing to compact yet: the chat is its last turns.")
            return
        self.view.fire("ChatCompacting", {"id": self.chat_id, "tokens": size, "messages": len(older)})
        adapter = self.registry.http(settings.adapter) if settings.adapter else self.adapter
        text = await compaction.summarise(adapter, self.client, older, self.editor)
        summary = compaction.summary_message(text, len(older))
        self.history[:] = [*system, summary, *kept]
        self._last_tokens = 0
        self._say_context(
            f"Compacted: the {len(older)} earlier messages (~{saved:,} tokens) are now a summary of "
            f"~{compaction.estimate([summary]):,} tokens; the chat was ~{size:,} tokens of "
            f"{self._window_words(window)}."
        )

    @staticmethod
    def _window_words(window: int | None) -> str:
        return f"the model's {window:,}-token window" if window else "the configured limit"

    def _say_context(self, text: str) -> None:
        self.view.show(NoticeEvent(title="**Context**", text=text))

    async def _refresh_system_prompt(self) -> None:
        """The system prompt function's answer as the first message (none when it returns nothing)."""
        if self._system_prompt_fn is None:
            return
        context = {
            "default_system_prompt": DEFAULT_SYSTEM_PROMPT,
            "adapter": adapter_table(self.adapter),
            "cwd": str(self.workspace.root),
        }
        text = await self._system_prompt_fn.call_async(self.editor, context, context="system_prompt")
        if text is not None and not isinstance(text, str):
            raise ConfigError(f"{self._system_prompt_fn.path} must return a string, not {type(text).__name__}")
        old = self._system_message
        index = next((i for i, m in enumerate(self.history) if m is old), None)
        if index is not None:
            del self.history[index]
        self._system_message = Message.of("system", text) if text else None
        if self._system_message is not None:
            self.history.insert(0 if index is None else index, self._system_message)

    def _pending_calls(self) -> tuple[ToolCall, ...]:
        last = self.history[-1] if self.history else None
        return last.tool_calls if last is not None and last.role == "assistant" else ()

    async def _run_tools(self, calls: tuple[ToolCall, ...]) -> bool:
        """Run a batch of tool calls; True when the user stopped it."""
        if self.before_changes is not None:  # the worktree's checkpoint first
            await asyncio.shield(self.before_changes)
        if self.editor is None:
            self._answer_all(calls, "error", "Tools are not available in this chat.")
            return False
        context = ToolsContext(
            chat=ChatHandle(),
            editor=self.editor,
            approvals=self.approvals,
            workspace=self.workspace,
            chat_id=self.chat_id,
            reads=self.file_reads,
            http=self.client.settings,
            hooks=self.hooks,
            judge=self._judge() if self.judge_settings.enabled else None,
            diff_threshold_for_chat=self.diff_threshold_for_chat,
            sandbox=self.tool_settings.sandbox,
        )
        orchestrator = Orchestrator(
            self.tools, {n: self.tool_settings.config_of(n) for n in self.tools}, context, self.view
        )
        try:
            batch = await orchestrator.run(calls)
        except asyncio.CancelledError:  # stopped outside a tool: still answer every call
            self._answer_all(calls, "cancelled", "The user stopped the turn; the tool did not run.")
            return True
        self.history.append(Message(role="tool", parts=tuple(batch.results)))
        for extra in batch.messages:
            self.history.append(Message.of("user", str(extra.get("content", ""))))
        return batch.cancelled

    def _judge(self) -> Callable[[str, str], Awaitable[Verdict]]:
        spec = self.judge_settings.adapter
        chosen = (lambda: self.registry.http(spec)) if spec is not None else (lambda: self.adapter)
        return functools.partial(judge.verdict, self.judge_settings, chosen, self.client, self.editor)

    def _answer_all(self, calls: tuple[ToolCall, ...], status: ToolStatus, text: str) -> None:
        parts = tuple(ToolResultPart(tool_call_id=c.id, name=c.name, content=text, status=status) for c in calls)
        self.history.append(Message(role="tool", parts=parts))

    def _keep_partial(self, stream: HttpStreamIterator) -> None:
        partial = stream.partial_message()
        if partial is not None:
            self.history.append(partial)
