"""ACP messages for adapters to emit and read: JSON-RPC's own (from `acp.jsonrpc`, one
spelling for the client and the bridge) and ACP's session updates, permission outcomes
and prompts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..acp.jsonrpc import Message, error_response, notification, request, response

__all__ = [
    "Message",
    "error_response",
    "is_response",
    "json_object",
    "notification",
    "outcome_of",
    "prompt_text",
    "request",
    "response",
    "session_update",
    "text_chunk",
    "usage_from",
]


def session_update(session_id: str, update: str, /, **fields: Any) -> Message:
    """A session/update notification; `fields` are the update's own (kind, title, ...)."""
    return notification("session/update", {"sessionId": session_id, "update": {"sessionUpdate": update, **fields}})


def text_chunk(session_id: str, text: str, kind: str = "agent_message_chunk") -> Message:
    return session_update(session_id, kind, content={"type": "text", "text": text})


def is_response(message: Any, request_id: Any = None) -> bool:
    """A response message (to `request_id`, when given)."""
    return (
        isinstance(message, dict)
        and "method" not in message
        and "id" in message
        and (request_id is None or message["id"] == request_id)
    )


def json_object(value: Any) -> Mapping[str, Any]:
    """`value` when it is a JSON object, else an empty one: for the fields of messages
    whose shape nobody promised."""
    return value if isinstance(value, dict) else {}


def outcome_of(message: Message) -> dict[str, Any]:
    """The `outcome` of the client's answer to session/request_permission; an error or
    anything malformed counts as cancelled."""
    result = message.get("result")
    outcome = result.get("outcome") if isinstance(result, dict) else None
    return outcome if isinstance(outcome, dict) else {"outcome": "cancelled"}


def prompt_text(blocks: Any, *, embed_resources: bool = True) -> str:
    """An ACP prompt as plain text: text blocks as they are, links as `@uri`, embedded
    text resources wrapped in a <context> element."""
    parts: list[str] = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "resource_link":
            parts.append("@" + str(block.get("uri", "")))
        elif kind == "resource" and isinstance(block.get("resource"), dict):
            resource = block["resource"]
            uri = str(resource.get("uri", ""))
            if embed_resources and isinstance(resource.get("text"), str):
                parts.append(f'<context ref="{uri}">\n{resource["text"]}\n</context>')
            else:
                parts.append("@" + uri)
    return "\n".join(parts)


def usage_from(native: Any, names: Mapping[str, str], *, total_of: Iterable[str] = ()) -> dict[str, int] | None:
    """ACP's usage from a CLI's usage object (None when it has no numbers): `names` maps
    ACP's fields (inputTokens and outputTokens first) to the CLI's; totalTokens adds input,
    output and the fields in `total_of`."""
    if not isinstance(native, dict):
        return None
    numbers = {key: value for key, value in native.items() if isinstance(value, int)}
    if not numbers:
        return None
    result = {ours: numbers.get(theirs, 0) for ours, theirs in names.items() if ours in ("inputTokens", "outputTokens")}
    result.update({ours: numbers[theirs] for ours, theirs in names.items() if ours not in result and theirs in numbers})
    result["totalTokens"] = sum(result.get(name, 0) for name in ("inputTokens", "outputTokens", *total_of))
    return result
