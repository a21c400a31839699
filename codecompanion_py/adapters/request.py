"""Builds one HTTP request from an adapter and the canonical history.

The body is the keep-merge (first writer wins) of, in order: `build_parameters`,
`build_messages`, `build_tools`, the adapter's static `body`, and `build_body(payload)`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ..client import HttpRequest
from ..messages import Message, ToolSpec
from .base import HTTPAdapter, merge_keep, prepare
from .handlers import call_handler

_encode = msgspec.json.Encoder().encode


async def build_request(
    adapter: HTTPAdapter,
    messages: Sequence[Message],
    *,
    tools: Sequence[ToolSpec | dict[str, Any]] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> tuple[HTTPAdapter, HttpRequest]:
    """The prepared adapter (env resolved, setup run) and the request to send."""
    ready = await prepare(adapter, settings)
    payload: dict[str, Any] = {}
    params = call_handler(ready, "build_parameters", ready.parameters, messages)
    merge_keep(payload, ready.parameters if params is None else params)
    merge_keep(payload, call_handler(ready, "build_messages", messages))
    if tools:
        merge_keep(payload, call_handler(ready, "build_tools", tools))
    merge_keep(payload, ready.body)
    merge_keep(payload, call_handler(ready, "build_body", payload))
    request = HttpRequest(
        url=ready.url,
        body=_encode(payload),
        headers=dict(ready.headers),
        stream=ready.streaming,
        provider=ready.formatted_name,
        auth_hint=_auth_hint(ready),
    )
    return ready, request


def _auth_hint(adapter: HTTPAdapter) -> str | None:
    spec = adapter.env.get("api_key")
    if isinstance(spec, str) and not spec.startswith(("cmd:", "file:")):
        return f"the {spec} environment variable" if spec.isupper() else "the adapter's env.api_key"
    return "the adapter's env.api_key" if spec is not None else None
