"""The inline assistant's calls (`inline.run`, `inline.stop`) and :CodeCompanionCmd's
(`cmd.run`): one request each to an HTTP adapter, rendered into the run's own target."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import calls
from .chat.factory import SessionFactory
from .chat.protocol import Session
from .client import HttpClient
from .inline import PLACEMENTS, InlineRequest, InlineSession, command_for
from .ui import ops
from .ui.editor import PendingCalls, SinkEditor
from .ui.sink import Channel, RenderSink

if TYPE_CHECKING:
    from .config import Config


@dataclass
class InlineCalls:
    channel: Channel
    loop: asyncio.AbstractEventLoop
    config: Callable[[], Config]
    client: Callable[[], HttpClient]
    factory: SessionFactory
    pending: PendingCalls
    chats: Mapping[Any, Session]  # for `#{chat}`
    runs: dict[str, InlineSession] = field(default_factory=dict)

    async def run(self, call: calls.InlineRun) -> None:
        inline_id, channel = str(call.chat_id), self.channel
        config = self.config()
        spec = call.adapter or config.inline_adapter or config.chat_adapter
        adapter = self.factory.http_adapter(spec, call.model or None, "the inline assistant")
        sink = RenderSink(lambda batch: channel.render(inline_id, batch), self.loop)
        session = InlineSession(
            inline_id, adapter, client=self.client(), sink=sink, editor=SinkEditor(sink, self.pending)
        )
        context: list[Mapping[str, Any]] = [item for item in call.context if isinstance(item, Mapping)]
        chat = self.chats.get(call.chat) if call.chat is not None else None
        if chat is not None:  # #{chat}: the last chat's messages
            turns = [f"{m.role}: {m.text}" for m in chat.history if m.role in ("user", "assistant") and m.text]
            context.append({"label": "The last chat", "content": "\n\n".join(turns)})
        request = InlineRequest(
            prompt=call.prompt,
            filetype=call.filetype,
            path=call.path,
            selection=call.selection,
            lines=call.lines,
            placement=call.placement if call.placement in PLACEMENTS else None,
            context=context,
        )
        self.runs[inline_id] = session
        session.start(request).add_done_callback(lambda _task: self.runs.pop(inline_id, None))

    async def stop(self, call: calls.ChatCall) -> None:
        session = self.runs.get(str(call.chat_id))
        if session is not None:
            session.stop()

    async def command(self, call: calls.CmdRun) -> None:
        config = self.config()
        spec = call.adapter or config.cmd_adapter or config.chat_adapter
        adapter = self.factory.http_adapter(spec, call.model or None, ":CodeCompanionCmd")

        def events(op: ops.Op) -> None:
            self.channel.render(call.chat_id, [op])

        command = await command_for(adapter, self.client(), call.prompt, events)
        self.channel.render(call.chat_id, [ops.Text(text=command), ops.Done(status="success")])
