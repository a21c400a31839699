"""The engine's entry: the calls Lua makes, decoded once and routed, run as tasks on an
asyncio loop.

In the editor the engine shares pynvim's own loop (`Engine(channel, loop=nvim.loop)`): a
call from Neovim becomes a task on it and a render goes straight out on Neovim's channel,
with no thread between them (a hop between two threads cost 0.1-0.8 ms each way on a
2-core machine, up to what decoding a 200-chunk reply takes). A synchronous request waits
in its pynvim greenlet while the loop runs on (`wait_in_greenlet`). Without a loop (tests,
scripts) the engine runs one on a thread of its own and calls are handed to it with
`run_coroutine_threadsafe`. Either way nothing here blocks the editor.

Each call is decoded at `dispatch` / `request` into its struct (`calls.py`) and handed to
the handler the tables below name: the chats' (`chat_calls.py`), the inline assistant's
(`inline_calls.py`), MCP's for the editor (`mcp_calls.py`), the keeper's (saved chats).
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
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import msgspec
from greenlet import getcurrent

from . import calls, config, logfile, processes, project_files, prompt_library, prompt_trust, repository
from .calls import Call
from .chat.factory import SessionFactory
from .chat.keeper import ChatKeeper
from .chat.protocol import Session
from .chat.rewind import Rewinder
from .chat_calls import ChatCalls
from .client import HttpClient
from .completion_calls import CompletionCalls
from .errors import CodeCompanionError, ConfigError
from .inline_calls import InlineCalls
from .mcp.servers import McpServers
from .mcp_calls import McpCalls
from .messages import valid_unicode
from .review_calls import ReviewCalls, answering
from .snapshots.checkpoints import Checkpoints
from .snapshots.stores import Stores
from .terminal_agents import prepare as prepare_cli
from .ui import ops
from .ui.editor import PendingCalls
from .ui.sink import Channel

log = logging.getLogger("codecompanion_py")
ENGINE_NICENESS = 10
T = TypeVar("T")


class Engine:
    def __init__(self, channel: Channel, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """On `loop`, run by the thread that makes every call (the host's); without one, on a
        loop of the engine's own thread."""
        self.channel = channel
        self.config = config.load({})
        self.sessions: dict[Any, Session] = {}
        self._client: HttpClient | None = None
        self._retired: list[HttpClient] = []  # clients replaced by a config change, closed at the end
        self.mcp = McpServers()
        self.keeper = ChatKeeper(lambda: self.config, lambda: self.client, self.channel.notify)
        self.stores = Stores(lambda: self.config.editor.get("data_dir"))  # checkpoints, the review's baseline
        self.rewinder = Rewinder(Checkpoints(self.stores), self.channel.notify)
        self.pending = PendingCalls()
        self._thread: threading.Thread | None = None
        if loop is None:
            self.loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._run, name="codecompanion-engine", daemon=True)
            self._thread.start()
        else:
            self.loop = loop  # its thread is the caller's: whether it yields is the caller's choice
        atexit.register(self.kill_agents)  # the host exiting some other way
        self.keeper.dropped = lambda checkpoints: asyncio.run_coroutine_threadsafe(
            self.rewinder.checkpoints.drop(checkpoints), self.loop
        )
        factory = SessionFactory(lambda: self.config, lambda: self.client, lambda: self.mcp, self.pending)
        chats = ChatCalls(
            self.sessions,
            channel=channel,
            loop=self.loop,
            config=lambda: self.config,
            keeper=self.keeper,
            factory=factory,
            client=lambda: self.client,
            rewinder=self.rewinder,
        )
        self.inline = InlineCalls(
            channel=channel,
            loop=self.loop,
            config=lambda: self.config,
            client=lambda: self.client,
            factory=factory,
            pending=self.pending,
            chats=self.sessions,
        )
        self.completion = CompletionCalls(
            channel=channel,
            config=lambda: self.config,
            client=lambda: self.client,
            factory=factory,
            pending=self.pending,
        )
        mcp = McpCalls(channel=channel, servers=lambda: self.mcp, chats=self.sessions)
        review = ReviewCalls(self.stores)
        # Adding a call: its struct in calls.py and one line in one of these two tables.
        self._notifications: dict[str, Callable[[Any], Awaitable[None]]] = {
            "config.set": self._config_set,
            "chat.open": chats.open,
            "chat.submit": chats.submit,
            "chat.stop": chats.stop,
            "chat.remove_context": chats.remove_context,
            "chat.compact": chats.compact,
            "chat.close": chats.close,
            "chat.set_adapter": chats.set_adapter,
            "chat.models": chats.models,
            "chat.yolo": chats.yolo,
            "chat.clear_approvals": chats.clear_approvals,
            "chat.agent_options": chats.agent_options,
            "chat.set_option": chats.set_option,
            "chat.sessions": chats.sessions_of_agent,
            "chat.resume": chats.resume,
            "chat.share": chats.share,
            "chat.system_prompt": chats.system_prompt,
            "chat.clear": chats.clear,
            "chat.regenerate": chats.regenerate,
            "chat.follow_up": chats.follow_up,
            "chat.rename": chats.rename,
            "chat.debug": chats.debug,
            "chat.copilot_stats": chats.copilot_stats,
            "chat.rewind": chats.rewind,
            "inline.run": self.inline.run,
            "inline.stop": self.inline.stop,
            "cmd.run": self.inline.command,
            "mcp.control": mcp.control,
            "completion.request": self.completion.request,
            "completion.cancel": self.completion.cancel,
            "review.track": review.one_at_a_time(review.track),  # an agent's edit, in the review's scope
            "review.baseline": review.one_at_a_time(review.baseline),  # a CLI agent's prompt
            "editor.reply": self._editor_reply,
            "log": self._log,
        }
        self._requests: dict[str, Callable[[Any], Any]] = {
            "health": lambda call: self._wait(self._health(call.completion), timeout=10),
            "tools": lambda _call: self.config.tools.mentionable() + self.mcp.mentionable(),
            "adapters": lambda _call: config.adapter_names(self.config),
            # the repository door reads what the editor names (no waiting)
            "rules.read": lambda call: repository.load_rules(msgspec.structs.asdict(call)),
            "files.read": lambda call: repository.read_named(msgspec.structs.asdict(call)),
            "files.list": lambda call: self._wait(project_files.list_files(call.cwd), timeout=10),  # /file's picker
            "prompts.read": prompt_library.read_prompts,  # the library's markdown prompts, parsed
            "prompts.trust": lambda call: prompt_trust.remember(call.file, call.root, call.trusted),
            "history.list": lambda call: self.keeper.summaries(call.dir),
            "history.load": lambda call: self.keeper.load(call.dir, call.id),
            "history.rename": lambda call: self.keeper.rename(call.dir, call.id, call.title),
            "history.delete": lambda call: self.keeper.delete(call.dir, call.id),
            "chat.agent_commands": chats.agent_commands,
            "chat.checkpoints": chats.checkpoints,  # /rewind's turns
            "mcp.status": self._waited(mcp.status),  # a server's data, as Lua can take it
            "mcp.prompt": self._waited(mcp.prompt),
            "mcp.resource": self._waited(mcp.resource),
            "mcp.resources": self._waited(mcp.resources),
            "kill_agents": self._exiting,
            "cli.prepare": prepare_cli,  # the CLI interaction's agent and prompt
            **{
                f"review.{name}": self._waited(answering(review.one_at_a_time(getattr(review, name))))
                for name in (
                    "open accept ignore approve comment comments save_comments share pending consume baseline_text"
                ).split()
            },
        }

    def _run(self) -> None:
        yield_to_editor()
        self.loop.run_forever()

    # --- entry points (called from pynvim's thread) ----------------------------------------

    def dispatch(self, method: str, payload: Any) -> asyncio.Future[None] | Future[None]:
        """Start `method`; the returned future ends with it."""
        payload = valid_unicode(payload)  # the one repair of text from Neovim
        if self._thread is None:  # on the loop's own thread: a task, run from its next step
            return self.loop.create_task(self._handle(method, payload))
        return asyncio.run_coroutine_threadsafe(self._handle(method, payload), self.loop)

    def request(self, method: str, payload: Any) -> Any:
        call = calls.decode(method, valid_unicode(payload))
        answer = self._requests.get(method)
        if answer is None:
            raise ConfigError(f"{method} is a notification, not a request")
        return answer(call)

    def _wait(self, work: Awaitable[T], timeout: float) -> T:
        """`work`'s result, for a synchronous request."""
        if self._thread is None:
            return wait_in_greenlet(self.loop, work, timeout)
        return asyncio.run_coroutine_threadsafe(_awaited(work), self.loop).result(timeout=timeout)

    def _waited(self, handler: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Any]:
        return lambda call: ops.for_lua(self._wait(handler(call), timeout=60))

    def _exiting(self, _call: Call) -> bool:
        """Neovim is exiting: save every chat; no agent may outlive it."""
        with contextlib.suppress(Exception):  # the agents go whatever happens to the saving
            self._on_loop(self._save_all, timeout=2)
        self.kill_agents()
        return True

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

    async def _handle(self, method: str, payload: Any) -> None:
        try:
            call = calls.decode(method, payload)
            handler = self._notifications.get(method)
            if handler is None:
                raise ConfigError(f"{method} is a request, not a notification")
            await handler(call)
        except CodeCompanionError as error:
            log.error("%s: %s", method, error)
            self._report(payload, str(error))
        except Exception as error:  # the one boundary that turns bugs into a message
            log.error("internal error in %s:\n%s", method, traceback.format_exc())
            self._report(payload, f"internal error in {method}: {type(error).__name__}: {error}")

    def _report(self, payload: Any, message: str) -> None:
        chat_id = calls.chat_of(payload)
        if chat_id is not None:
            self.channel.render(chat_id, [ops.Error(message=message)])
        else:
            self.channel.notify(message)

    @property
    def client(self) -> HttpClient:
        if self._client is None:
            self._client = HttpClient(read_timeout=self.config.read_timeout, settings=self.config.http)
        return self._client

    async def _config_set(self, call: calls.ConfigSet) -> None:
        self.config = config.load(call.data)
        if self.config.mcp != self.mcp.config:  # other servers: the running ones stop
            await self.mcp.close()
            self.mcp = McpServers(self.config.mcp)
        self.mcp.cmd_timeout, self.mcp.http = self.config.adapters.cmd_timeout, self.config.http
        problem = logfile.configure(self.config.editor.get("log_file"), self.config.log_level)
        if problem is not None:
            self.channel.notify(f"CodeCompanion: {problem}", "WARN")
        for problem in self.config.problems:
            self.channel.notify(f"CodeCompanion: {problem}", "WARN")
        if self._client is not None:  # new requests get a client with the new settings;
            self._retired.append(self._client)  # replies streaming on the old one finish on it
            self._client = None

    async def _log(self, call: calls.LogRecord) -> None:
        level = logfile.LEVELS.get(call.level.upper(), logging.ERROR)
        logging.getLogger("codecompanion_py.lua").log(level, "%s", logfile.loggable(call.message))

    async def _editor_reply(self, call: calls.EditorReply) -> None:
        self.pending.settle(call.id, call.result, call.error)

    async def _health(self, completion: bool | None = None) -> list[dict[str, Any]]:
        # only for :checkhealth: it reads package metadata, 10 ms of every start
        from . import adapter_health, checkhealth, health

        report = await health.report_async(self.config.adapters)
        in_use = adapter_health.entries(self.config, report["agents"])
        log_line = checkhealth.log_entry(logfile.path(), self.config.log_level)
        sandbox = await asyncio.to_thread(checkhealth.sandbox_entries, self.config.tools.sandbox)
        sections = checkhealth.for_lua(report, self.mcp.status(), in_use, log_line, sandbox)
        return [*sections, msgspec.to_builtins(self.completion.health(completion))]

    async def _close_all(self) -> None:
        sessions = list(self.sessions.values())
        self.sessions.clear()
        await asyncio.gather(*(session.close() for session in sessions), self.rewinder.close(), return_exceptions=True)
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
