"""The content blocks of a prompt to an agent, built from what the user typed.

`#{file:path}` attaches the file as a resource (the buffer's text when it is loaded) or
as a link when the agent takes no embedded context, `#{image:path}` attaches an image,
a leading `\\command` becomes the agent's `/command`, and a conversation carried over from
another backend goes first, once. Editor context the user shared (`#{buffer}`, `#{selection}`...)
goes as resources of the file it came from (its text as the editor has it), else as text.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...acp.client import AcpClient
from ...errors import AgentError, PathRefused
from ...messages import Message
from ...tools.catalog import documents
from ...tools.context import ToolsContext
from ..context import IMAGE_TYPES, MAX_IMAGE_BYTES, ContextItem, text_of

_FILE_MENTION = re.compile(r"#\{file:([^}]+)\}")
_IMAGE_MENTION = re.compile(r"#\{image:([^}]+)\}")
_CARRIED_CHARS = 20_000

Block = dict[str, Any]


async def prompt_blocks(
    text: str,
    *,
    client: AcpClient,
    context: ToolsContext,
    agent_name: str,
    commands: set[str],
    earlier: Sequence[Message] = (),
    shared: Sequence[ContextItem] = (),
) -> list[Block]:
    attached: list[Block] = [_shared_block(item, client) for item in shared]
    for raw in dict.fromkeys(m.strip() for m in _IMAGE_MENTION.findall(text)):
        attached.append(_image_block(raw, client=client, context=context, agent_name=agent_name))
    for raw in dict.fromkeys(m.strip() for m in _FILE_MENTION.findall(text)):
        target = context.workspace.resolve(raw)
        uri = target.real.as_uri()
        if client.supports("promptCapabilities", "embeddedContext"):
            document = await documents.load(context, target)
            attached.append(
                {"type": "resource", "resource": {"uri": uri, "text": document.text, "mimeType": "text/plain"}}
            )
        else:
            attached.append({"type": "resource_link", "uri": uri, "name": target.relative})
    text = _FILE_MENTION.sub(lambda m: f"`{m.group(1).strip()}`", text)
    text = _IMAGE_MENTION.sub(lambda m: f"`{m.group(1).strip()}`", text)
    first_word = text[1:].split(maxsplit=1)[:1]
    if text.startswith("\\") and first_word and first_word[0] in commands:
        text = "/" + text[1:]
    return [*_earlier_conversation(earlier), {"type": "text", "text": text}, *attached]


def _shared_block(item: ContextItem, client: AcpClient) -> Block:
    if not item.path or item.kind != "buffer" or item.update == "diff":
        return {"type": "text", "text": text_of(item)}
    uri = Path(item.path).as_uri()
    if client.supports("promptCapabilities", "embeddedContext"):
        return {"type": "resource", "resource": {"uri": uri, "text": item.content or "", "mimeType": "text/plain"}}
    return {"type": "resource_link", "uri": uri, "name": Path(item.path).name}


def _image_block(raw: str, *, client: AcpClient, context: ToolsContext, agent_name: str) -> Block:
    if not client.supports("promptCapabilities", "image"):
        raise AgentError(f"{agent_name} does not accept images")
    target = context.workspace.resolve(raw)
    mime = IMAGE_TYPES.get(target.real.suffix.lower())
    if mime is None:
        raise PathRefused(f"{target.relative} is not an image this chat can send ({', '.join(sorted(IMAGE_TYPES))})")
    data, _ = context.workspace.read_bytes(target, max_bytes=MAX_IMAGE_BYTES)
    return {"type": "image", "mimeType": mime, "data": base64.b64encode(data).decode(), "uri": target.real.as_uri()}


def _earlier_conversation(carried: Sequence[Message]) -> list[Block]:
    """The chat so far with another backend (its end, if long: agents have their own
    context to fill)."""
    lines = [f"{'User' if m.role == 'user' else 'Assistant'}: {m.text}" for m in carried if m.text]
    if not lines:
        return []
    transcript = "\n\n".join(lines)[-_CARRIED_CHARS:]
    return [{"type": "text", "text": "The conversation so far, with another assistant, for context:\n\n" + transcript}]
