"""Builds one HTTP request from an adapter and the canonical history.

The body is the keep-merge (first writer wins) of, in order: `build_parameters`,
`build_messages`, `build_tools`, the adapter's static `body`, and `build_body(payload)`.
The request carries the adapter's `secrets` (scrubbed from every error about it) and its
`opts.retries` when set (the client's otherwise). Text from outside (context, tool
results) goes out scrubbed of every secret the engine knows (`scrubber.KNOWN`). The handlers run where Lua functions can
be called (`lua.run_sync`), so any of them may be a Lua override from setup().
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ..client import HttpClient, HttpRequest
from ..editor_port import Editor
from ..errors import ConfigError
from ..messages import Message, ToolResultPart, ToolSpec, cleaned
from ..scrubber import KNOWN, SHORTEST_SECRET
from .base import _ENV_NAME, HTTPAdapter, merge_keep, prepare
from .handlers import call_handler
from .lua import run_sync

_encode = msgspec.json.Encoder().encode


async def build_request(
    adapter: HTTPAdapter,
    messages: Sequence[Message],
    *,
    tools: Sequence[ToolSpec | dict[str, Any]] | None = None,
    settings: Mapping[str, Any] | None = None,
    client: HttpClient | None = None,
    editor: Editor | None = None,
) -> tuple[HTTPAdapter, HttpRequest]:
    """The prepared adapter (env resolved, setup run) and the request to send. `client` is
    the HttpClient that will send it, for `env` values that make requests of their own;
    `editor` is what Lua functions are called through."""
    ready = await prepare(adapter, settings, client=client, editor=editor)
    body = _encode(await run_sync(ready.lua_editor, _payload, ready, messages, tools))
    if _may_hold_known_secret(body):  # rare, so the common request pays one scan of its bytes
        body = _encode(await run_sync(ready.lua_editor, _payload, ready, _outside_scrubbed(messages), tools))
    request = HttpRequest(
        url=ready.url,
        body=body,
        headers=dict(ready.headers),
        stream=ready.streaming,
        provider=ready.formatted_name,
        auth_hint=_auth_hint(ready),
        model=str(ready.model) if ready.model else None,
        secrets=ready.secrets,
        retries=_retries(ready),
    )
    return ready, request


def _may_hold_known_secret(body: bytes) -> bool:
    """Whether the body holds the beginning of a secret the engine knows (a byte search)."""
    return any(secret[:SHORTEST_SECRET].encode() in body for secret in KNOWN.values())


def _outside_scrubbed(messages: Sequence[Message]) -> Sequence[Message]:
    """`messages` with the text that came from outside (context, tool results, the model's
    replies: a provider may echo a key, and the next request may go to another) scrubbed of
    the secrets known now: a key this very request resolved (a literal, a `cmd:`) was not
    known yet when a file or a command's output came in at its door."""
    if not KNOWN.values():
        return messages
    return [
        cleaned(message, KNOWN.without_known, arguments=True) if _from_outside(message) else message
        for message in messages
    ]


def _from_outside(message: Message) -> bool:
    return (
        message.role == "assistant"
        or message.context_id is not None
        or any(isinstance(part, ToolResultPart) for part in message.parts)
    )


def _payload(
    ready: HTTPAdapter, messages: Sequence[Message], tools: Sequence[ToolSpec | dict[str, Any]] | None
) -> dict[str, Any]:
    payload: dict[str, Any] = {}
    params = call_handler(ready, "build_parameters", ready.parameters, messages)
    merge_keep(payload, ready.parameters if params is None else _table(params))
    merge_keep(payload, _table(call_handler(ready, "build_messages", messages)))
    if tools:
        merge_keep(payload, _table(call_handler(ready, "build_tools", tools)))
    merge_keep(payload, ready.body)
    merge_keep(payload, _table(call_handler(ready, "build_body", payload)))
    return payload


def _table(value: Any) -> Any:
    """A Lua handler's empty table arrives as an empty list: it means no fields."""
    return {} if value == [] else value


def _retries(adapter: HTTPAdapter) -> int | None:
    """`opts.retries` of the adapter, when it sets one (else the client's)."""
    value = adapter.opts.get("retries")
    if value is None or isinstance(value, bool):
        return None
    try:
        return max(int(value), 0)
    except (TypeError, ValueError):
        raise ConfigError(f"{adapter.name}: opts.retries must be a number, not {value!r}") from None


def _auth_hint(adapter: HTTPAdapter) -> str | None:
    """Where the key comes from, for 401/403 messages: an environment variable (and whether
    it is set), a command, a file, or the adapter's own setting; never the key itself.
    `opts.auth_hint` overrides it (GitHub Models: the `gh` login)."""
    if adapter.opts.get("auth_hint"):
        return str(adapter.opts["auth_hint"])
    spec = adapter.env.get("api_key")
    if spec is None:
        return None
    unset = not adapter.env_replaced.get("api_key")
    if isinstance(spec, str) and spec.startswith("cmd:"):
        program = spec[4:].split()[0] if spec[4:].split() else "?"
        printed = " (it printed nothing)" if unset else ""
        return f"the token printed by the env.api_key command (`{program} ...`){printed}"
    if isinstance(spec, str) and spec.startswith("file:"):
        return f"the key in {spec[5:].strip()} (env.api_key)"
    if isinstance(spec, str) and _ENV_NAME.match(spec):
        return f"the {spec} environment variable{' (it is not set)' if unset else ''}"
    if callable(spec):
        return f"the key returned by the function {getattr(spec, 'path', 'env.api_key')}"
    return "the adapter's env.api_key"
