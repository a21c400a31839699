"""The inline assistant (`:CodeCompanion <prompt>`) and command generation (`:CodeCompanionCmd`).

An inline request asks the LLM for code for the user's buffer. Its answer starts with a line
that says where the code goes (`PLACEMENT: replace`, `add`, `before`, `new` or `chat`: the
classification CodeCompanion makes), then the code alone. `InlineParser` reads that line
(a placement the user forced wins), drops Markdown fences the LLM adds anyway and passes
the code on line by line; the editor streams it into the buffer and ends in the diff review
(lua/codecompanion_py/inline.lua, diff.lua). A command request asks for one Ex command.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .adapters.base import HTTPAdapter
from .client import HttpClient
from .editor_port import Editor
from .errors import CodeCompanionError
from .events import ErrorEvent, FinalEvent, NoticeEvent, StreamEvent, TokenEvent
from .messages import Message
from .processes import hidden_character
from .stream.iterators import HttpStreamIterator
from .ui import ops
from .ui.sink import Sink

log = logging.getLogger("codecompanion_py.inline")

PLACEMENTS = ("replace", "add", "before", "new", "chat")
MAX_COMMAND_CHARS = 4000  # an Ex command for the command line; longer is not one to read and run
_PLACEMENT_LINE = re.compile(r"^\s*\**\s*placement\s*\**\s*:\s*\**\s*(\w+)", re.IGNORECASE)
_FENCE = re.compile(r"^\s*(```|~~~)")

INLINE_PROMPT = """You are an AI coding assistant working inside the Neovim text editor. You write code \
straight into the user's buffer.

Answer in exactly this form:
- the first line is `PLACEMENT: <where>`, where <where> is one of
  replace (the code replaces the selected lines),
  add (the code goes after the selection, or after the cursor line),
  before (the code goes before the selection, or before the cursor line),
  new (the code belongs in a new buffer),
  chat (the request is a question to answer in prose, not code for the buffer);
- then the code itself and nothing else: no Markdown fences, no explanations, the \
indentation the buffer uses.
When you replace lines, write all of the replacement, not only the lines that change."""

CMD_PROMPT = """You are plugged in to the Neovim text editor on the user's machine. Your task is to \
write one command that the user can run in Neovim's command line for what they ask.
- Answer with the command alone, as plain text on one line
- No Markdown, no backticks, no leading colon, no explanation
- It must be a valid Neovim Ex command"""


@dataclass
class InlineParser:
    """The LLM's answer, streamed: the placement first, then the code line by line."""

    forced: str | None = None
    placement: str | None = None
    # the text not yet split into lines, as the pieces it came in: joined once a line ends, so
    # a line streamed in 80,000 tokens costs linear time (joined at each token it took minutes)
    _head: list[str] = field(default_factory=list)
    _pending: list[str] = field(default_factory=list)
    _in_code: bool = False
    _fenced: bool = False
    _closed: bool = False  # after the closing fence: prose the LLM added, not code
    out: list[ops.Op] = field(default_factory=list)

    def feed(self, text: str) -> list[ops.Op]:
        self.out = []
        if self.placement is None:
            self._head.append(text)
            if "\n" not in text:
                return []
            head = "".join(self._head)
            first, rest = head.split("\n", 1)
            found = _PLACEMENT_LINE.match(first)
            chosen = found.group(1).lower() if found else None
            self._place(self.forced or (chosen if chosen in PLACEMENTS else "replace"))
            text = rest if found else head  # no placement line: it was code already
        if "\n" not in text:
            self._pending.append(text)
            return self.out
        *lines, last = ("".join(self._pending) + text).split("\n")
        self._pending = [last]
        for line in lines:
            self._line(line)
        return self.out

    def finish(self) -> list[ops.Op]:
        self.out = []
        pending = "".join(self._pending)
        if self.placement is None:  # an answer of one line (or none)
            head = "".join(self._head)
            found = _PLACEMENT_LINE.match(head)
            chosen = found.group(1).lower() if found else None
            self._place(self.forced or (chosen if chosen in PLACEMENTS else "replace"))
            pending = "" if found else head
        if pending and not (_FENCE.match(pending) and self._fenced):
            self._line(pending, last=True)
        self._pending = []
        return self.out

    def _place(self, placement: str) -> None:
        self.placement = placement
        self.out.append(ops.Placement(placement=placement))

    def _line(self, line: str, last: bool = False) -> None:
        if self._closed:
            return
        if _FENCE.match(line):
            if not self._in_code and not self._fenced:  # the opening fence: dropped
                self._fenced = True
                return
            if self._fenced:  # the closing one
                self._fenced, self._closed = False, True
                return
        if not self._in_code and not line.strip():
            return  # blank lines before the code
        self._in_code = True
        self.out.append(ops.Text(text=line if last else line + "\n"))


class RequestEvents:
    """CodeCompanion's RequestStarted, RequestStreaming (once the reply begins: a retry's notice
    is no reply) and RequestFinished for one inline or cmd request, which spinner plugins
    follow as they follow a chat's."""

    def __init__(self, adapter: HTTPAdapter, interaction: Literal["inline", "cmd"], push: Callable[[ops.Op], Any]):
        info = ops.AdapterInfo(name=adapter.name, formatted_name=adapter.formatted_name, model=adapter.model)
        self.info = ops.request_info(info, interaction)
        self._push = push
        self._streaming = False
        push(ops.fire("RequestStarted", self.info))

    def saw(self, event: StreamEvent) -> None:
        if not self._streaming and not isinstance(event, (NoticeEvent, ErrorEvent)):
            self._streaming = True
            self._push(ops.fire("RequestStreaming", self.info))

    def finished(self, status: Literal["success", "error", "stopped"]) -> None:
        self._push(ops.fire("RequestFinished", {**self.info, "status": status}))


@dataclass
class InlineRequest:
    prompt: str
    filetype: str = ""
    path: str = ""
    selection: str | None = None
    lines: tuple[int, int] | None = None
    placement: str | None = None
    context: list[Mapping[str, Any]] = field(default_factory=list)

    def messages(self) -> list[Message]:
        parts = [f"The buffer's file type is {self.filetype or 'unknown'}"]
        if self.path:
            parts[0] += f", its file is {self.path}"
        parts[0] += "."
        if self.selection is not None and self.lines:
            parts.append(
                f"The selected lines {self.lines[0]}-{self.lines[1]}:\n```{self.filetype}\n{self.selection}\n```"
            )
        elif self.lines:
            parts.append(f"Nothing is selected; the cursor is on line {self.lines[0]}.")
        for item in self.context:
            label, content = str(item.get("label") or item.get("kind") or "context"), item.get("content")
            if isinstance(content, str):
                parts.append(f"{label}:\n```\n{content}\n```")
        if self.placement:
            parts.append(f"Use PLACEMENT: {self.placement}.")
        parts.append(f"The request: {self.prompt}")
        return [Message.of("system", INLINE_PROMPT), Message.of("user", "\n\n".join(parts))]


class InlineSession:
    """One inline request, shown through `sink` (the editor's inline.lua)."""

    def __init__(self, inline_id: str, adapter: HTTPAdapter, *, client: HttpClient, sink: Sink, editor: Editor):
        self.id = inline_id
        self.adapter = adapter
        self.client = client
        self.sink = sink
        self.editor = editor
        self.task: asyncio.Task[None] | None = None

    def start(self, request: InlineRequest) -> asyncio.Task[None]:
        self.task = asyncio.get_running_loop().create_task(self._run(request))
        return self.task

    def stop(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()

    async def _run(self, request: InlineRequest) -> None:
        push = self.sink.push
        info = {"adapter": {"name": self.adapter.name, "model": self.adapter.model}, "placement": request.placement}
        push(ops.fire("InlineStarted", info))
        requested = RequestEvents(self.adapter, "inline", push)
        parser = InlineParser(forced=request.placement)
        status: Literal["success", "error", "stopped"] = "success"
        message: str | None = None
        tokens: int | None = None
        stream = HttpStreamIterator(
            self.adapter, request.messages(), client=self.client, settings={}, tools=None, editor=self.editor
        )
        try:
            async for event in stream:
                requested.saw(event)
                if isinstance(event, TokenEvent):
                    for op in parser.feed(event.content):
                        push(op)
                elif isinstance(event, FinalEvent):
                    tokens = event.usage.total_tokens if event.usage else None
                elif isinstance(event, ErrorEvent):
                    status, message = "error", event.message
                    log.error("inline: %s", message)
            if status == "success":
                for op in parser.finish():
                    push(op)
        except asyncio.CancelledError:
            status = "stopped"
        except CodeCompanionError as error:
            status, message = "error", str(error)
        finally:
            await stream.close()
            requested.finished(status)
            push(ops.Done(status=status, message=message, tokens=tokens))
            push(ops.fire("InlineFinished", {**info, "placement": parser.placement, "status": status}))


async def command_for(
    adapter: HTTPAdapter,
    client: HttpClient,
    prompt: str,
    push: Callable[[ops.Op], Any],
    editor: Editor | None = None,
) -> str:
    """`:CodeCompanionCmd`: the LLM's one Ex command for `prompt` (never run here); its request
    events go to `push`."""
    messages = [Message.of("system", CMD_PROMPT), Message.of("user", prompt)]
    requested = RequestEvents(adapter, "cmd", push)
    stream = HttpStreamIterator(adapter, messages, client=client, settings={}, tools=None, editor=editor)
    answer = ""
    status: Literal["success", "error", "stopped"] = "error"
    try:
        async for event in stream:
            requested.saw(event)
            if isinstance(event, FinalEvent):
                answer = event.message.text
            elif isinstance(event, ErrorEvent):
                raise CodeCompanionError(event.message)
        command = one_command(answer)
        status = "success"
    except asyncio.CancelledError:
        status = "stopped"
        raise
    finally:
        await stream.close()
        requested.finished(status)
    return command


def one_command(answer: str) -> str:
    """The first line of the LLM's answer, as text for the command line: fences, backticks and
    a leading colon dropped. Lines are split at line feeds alone, so a carriage return, an
    escape or any other control character stays in the line and refuses it (typed on the
    command line, it would leave it and run the rest as Normal-mode keys), as does an
    invisible one (a bidi override, a zero-width space) that would show another command
    than the one that runs."""
    lines = [line.strip().strip("`") for line in answer.strip().split("\n") if line.strip() and not _FENCE.match(line)]
    command = lines[0].lstrip(":").strip() if lines else ""
    if not command:
        raise CodeCompanionError("the LLM gave no command")
    if len(command) > MAX_COMMAND_CHARS:
        raise CodeCompanionError(
            f"the LLM's command is {len(command)} characters long (the limit is {MAX_COMMAND_CHARS}), "
            f"so it was not put on the command line: {visible(command, 80)}"
        )
    if any(map(_hidden, command)):
        raise CodeCompanionError(
            "the LLM's command holds control or invisible characters, so it was not put on the command line: "
            + visible(command)
        )
    return command


def _hidden(ch: str) -> bool:
    return ch in "\t\n" or hidden_character(ch) is not None


def visible(text: str, limit: int = 200) -> str:
    """`text` on one line with its hidden characters shown: `^[`, `^M`, `<U+202E>`..."""
    shown = "".join(
        (f"^{chr(ord(ch) ^ 0x40)}" if ch < " " or ch == "\x7f" else f"<U+{ord(ch):04X}>") if _hidden(ch) else ch
        for ch in text[:limit]
    )
    return shown + ("..." if len(text) > limit else "")
