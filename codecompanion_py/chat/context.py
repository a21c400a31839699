"""Shared context (`#{buffer}`, `#{diagnostics}`, `/image`, rules...) as it goes to the LLM.

Lua reads each item from the editor when the user sends (lua/codecompanion_py/chat/context.lua)
and keeps the chat's context list; here each item becomes a message of its own, before the
user's words, tagged with the item's id (`Message.context_id`) so that removing the item
from the chat's context block removes what it sent. A text item is headed with what it is,
its text fenced so that nothing in it can close the fence early; an image becomes an image
part. A followed buffer that changed comes again as `update = "all"` (the whole buffer,
replacing what it sent before) or `update = "diff"` (only the changes, added after it).
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec

from ..errors import ConfigError, FileTooLarge, PathRefused
from ..messages import ImagePart, Message, TextPart, ToolResultPart
from ..scrubber import KNOWN
from ..tools.workspace import read_regular

_BACKTICKS = re.compile(r"`{3,}")

IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
MAX_IMAGE_BYTES = 10_000_000


class ContextItem(msgspec.Struct, kw_only=True):
    id: str
    kind: str = "context"
    label: str = ""
    content: str | None = None
    filetype: str = ""
    path: str | None = None
    update: Literal["diff", "all"] | None = None
    system_prompt: str | None = None  # a rules file's `## System Prompt` section


def items_of(raw: Any) -> list[ContextItem]:
    """The items the editor sent; one that is not an item is a bug on the Lua side, said as such."""
    if not raw:
        return []
    try:
        items = msgspec.convert(raw, list[ContextItem])
    except msgspec.ValidationError as error:
        raise ConfigError(f"the editor sent context the engine cannot read: {error}") from None
    return items  # bytes that were not UTF-8 were replaced as they came in (Engine.dispatch)


def fenced(content: str, language: str = "") -> str:
    longest = max((len(run) for run in _BACKTICKS.findall(content)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{language}\n{content}\n{fence}"


def text_of(item: ContextItem) -> str:
    """The item as the LLM reads it, scrubbed of the secrets the engine knows (scrubber.py)."""
    return KNOWN.scrub(_text_of(item))


def _text_of(item: ContextItem) -> str:
    label = item.label or item.kind
    if item.update == "diff":
        return f"Context: {label}, what changed since it was last shared\n{fenced(item.content or '', 'diff')}"
    heading = f"Context: {label}" + (" (updated)" if item.update == "all" else "")
    return f"{heading}\n{fenced((item.content or '').rstrip(), item.filetype)}"


def image_part(path: str) -> ImagePart:
    """An image file the user chose, inline as base64 (what every provider takes)."""
    file = Path(path).expanduser()
    media_type = IMAGE_TYPES.get(file.suffix.lower())
    if media_type is None:
        raise ConfigError(f"{file.name} is not an image this chat can send ({', '.join(sorted(IMAGE_TYPES))})")
    try:  # a regular file only: a FIFO or a link to /dev/zero must not stall the engine's loop
        data = read_regular(Path(os.path.realpath(file)), file.name, MAX_IMAGE_BYTES)
    except FileTooLarge:
        raise ConfigError(f"{file.name} is above {MAX_IMAGE_BYTES:,} bytes, the most an image may be") from None
    except PathRefused as refused:
        raise ConfigError(f"the image {path} cannot be read: {refused}") from None
    return ImagePart(data=base64.b64encode(data).decode(), media_type=media_type)


def message_of(item: ContextItem) -> Message:
    if item.kind == "image":
        if not item.path:
            raise ConfigError("an image needs a path")
        label = TextPart(text=f"Context: the image {item.label or item.path}")
        return Message(role="user", parts=(label, image_part(item.path)), context_id=item.id)
    return Message(role="user", parts=(TextPart(text=text_of(item)),), context_id=item.id)


def seen_by(vision: bool, history: list[Message]) -> list[Message]:
    """The history for a model that reads images or not: images shared earlier (with another
    model) become a line that says so, as CodeCompanion leaves them out for such a model."""
    if vision:
        return history
    return [msgspec.structs.replace(m, parts=tuple(map(_unseen, m.parts))) if _has_image(m) else m for m in history]


def _has_image(message: Message) -> bool:
    return any(isinstance(p, ImagePart) or (isinstance(p, ToolResultPart) and p.images) for p in message.parts)


def _unseen(part: Any) -> Any:
    if isinstance(part, ToolResultPart):  # its `content` describes them
        return msgspec.structs.replace(part, images=())
    if isinstance(part, ImagePart):
        return TextPart(text="[an image, left out: this model does not read images]")
    return part


def without(history: Iterable[Message], ids: Iterable[str]) -> list[Message]:
    gone = set(ids)
    return [m for m in history if m.context_id is None or m.context_id not in gone]


def add(history: list[Message], items: Sequence[ContextItem]) -> None:
    """Append each item's message (reading images now: a bad one raises before anything is
    added); an item re-sent whole replaces what it sent before."""
    messages = []
    for item in items:
        if item.system_prompt:  # a system message of its own beside the default, as CodeCompanion sends it
            text = KNOWN.scrub(item.system_prompt)
            messages.append(Message(role="system", parts=(TextPart(text=text),), context_id=item.id))
        messages.append(message_of(item))
    replaced = [item.id for item in items if item.update == "all"]
    if replaced:
        history[:] = without(history, replaced)
    history.extend(messages)


def shared(history: Iterable[Message]) -> list[dict[str, str]]:
    """The context items a history holds, in the order first shared (for a reopened chat's block)."""
    seen: dict[str, str] = {}
    for message in history:
        if message.context_id and message.context_id not in seen and message.role != "system":
            first = message.text.split("\n", 1)[0]
            seen[message.context_id] = first.removeprefix("Context: ")
    return [{"id": key, "label": label} for key, label in seen.items()]
