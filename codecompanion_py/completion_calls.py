"""Edit predictions' calls (`completion.request`, `completion.cancel`): the adapter of
`interactions.completion` (else the chat's), a `Predictor` that asks it, and the answer sent
straight to the editor as one `Suggestions` op, with no render sink between (its frames
would add up to 33 ms to a prediction that must be drawn in a few)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from . import calls
from .adapters.base import HTTPAdapter, substitute
from .chat.factory import SessionFactory
from .checkhealth import Entry, Section
from .client import HttpClient
from .completion import fim
from .completion.context import CompletionContext, Snippet
from .completion.predictor import Predictor, Quiet
from .errors import CodeCompanionError
from .ui import ops
from .ui.editor import PendingCalls, SinkEditor
from .ui.sink import Channel

if TYPE_CHECKING:
    from .config import Config

CHANNEL_ID = "completion"  # the chat id Lua's apply() hands to completion.lua
HEALTH = "codecompanion_py: edit predictions (interactions.completion)"


@dataclass
class CompletionCalls:
    channel: Channel
    config: Callable[[], Config]
    client: Callable[[], HttpClient]
    factory: SessionFactory
    pending: PendingCalls = field(default_factory=PendingCalls)
    quiet: Quiet = field(default_factory=Quiet)
    lanes: dict[bool, Predictor] = field(init=False)  # the menus' (True) and the ghost text's
    _adapter: tuple[Any, HTTPAdapter] | None = None  # the config it was made from, and it

    def __post_init__(self) -> None:
        editor = SinkEditor(_Straight(self.channel), self.pending)  # Lua functions of the adapter, if any

        def send(op: ops.Suggestions) -> None:
            self.channel.render(CHANNEL_ID, [op])

        # a menu's request and the ghost text's do not cancel each other
        self.lanes = {menu: Predictor(send, self.client, editor, self.quiet) for menu in (False, True)}

    def adapter(self) -> HTTPAdapter:
        config = self.config()
        if self._adapter is None or self._adapter[0] is not config:
            settings = config.completion
            spec = settings.adapter or config.chat_adapter
            adapter = self.factory.http_adapter(spec, settings.model, "completion")
            chosen = settings.model or (isinstance(settings.adapter, dict) and settings.adapter.get("model"))
            if not chosen and fim.kind_of(adapter) == "codestral":  # its FIM endpoint serves codestral models only
                adapter = self.factory.http_adapter(spec, fim.CODESTRAL_MODEL, "completion")
            self._adapter = (config, adapter)
        return self._adapter[1]

    async def request(self, call: calls.CompletionRequest) -> None:
        settings = self.config().completion
        try:
            adapter = self.adapter()
        except CodeCompanionError as error:  # a bad adapter goes quiet too: :checkhealth says it
            self.quiet.last_error, self.quiet.last_error_at = str(error), time.time()
            self.channel.render(CHANNEL_ID, [ops.Suggestions(id=call.id, error=str(error))])
            return
        recent = tuple(Snippet(s.path, s.text) for s in call.recent)
        context = CompletionContext(call.prefix, call.suffix, call.filetype, call.path, recent)
        await self.lanes[call.menu].predict(call.id, adapter, context, settings.n_completions, settings.context_window)

    async def cancel(self, call: calls.CompletionCancel) -> None:
        for lane in self.lanes.values():
            lane.cancel(call.id)

    def health(self, on: bool | None = None) -> Section:
        """Where predictions send code, and why they went quiet last; `on`: whether the editor
        has them on now (else the config's `enabled`)."""
        settings, known = self.config().completion, self.quiet
        enabled = settings.enabled if on is None else on
        entries = []
        target = known.target
        if not enabled:
            entries.append(Entry("info", "off: no code is sent (interactions.completion.enabled = true turns it on)"))
        elif target is not None:
            model = f" ({target.model})" if target.model else ""
            how = "a chat prompt" if target.kind == "chat" else f"fill-in-the-middle ({target.kind})"
            entries.append(
                Entry("ok", f"sends the code around the cursor to {target.adapter}{model} at {target.host}, by {how}")
            )
        else:
            try:
                adapter = self.adapter()
            except CodeCompanionError as error:
                entries.append(Entry("error", f"on, but its adapter cannot be used: {error}"))
            else:
                where = f" at {host}" if (host := url_host(adapter)) else ""
                entries.append(
                    Entry("ok", f"on: sends the code around the cursor to {adapter.name}{where} as you type")
                )
        if known.last_error is not None:
            when = time.strftime("%H:%M:%S", time.localtime(known.last_error_at or time.time()))
            quiet = max(known.quiet_until - time.monotonic(), 0)
            advice = [f"predictions pause for {quiet:.0f} s more"] if quiet else None
            entries.append(Entry("warn", f"the last request failed at {when}: {known.last_error}", advice))
        return Section(HEALTH, entries)


def url_host(adapter: HTTPAdapter) -> str | None:
    """The host `adapter` sends to, when its URL says it without running anything (its `env`
    entries that are URLs or paths); None when only a request would tell."""
    plain = ("http://", "https://", "/")  # URLs and paths, not the names of variables or commands
    urls = {k: v for k, v in adapter.env.items() if isinstance(v, str) and v.startswith(plain)}
    try:
        return urlsplit(substitute(adapter.url, urls)).hostname
    except (KeyError, ValueError):
        return None


@dataclass
class _Straight:
    """A sink that sends each op at once (an editor call of the adapter's)."""

    channel: Channel

    def push(self, op: ops.Op) -> None:
        self.channel.render(CHANNEL_ID, [op])
