"""The models a provider offers, from its models endpoint, cached for a while.

`opts.models_url` names the endpoint (with `${name}` placeholders like the chat url). The
answer is read in either common shape: `{"data": [{"id": ...}]}` (OpenAI, Anthropic,
OpenAI-compatible servers) or `{"models": [{"name": ...}]}` (Gemini, Ollama's
`/api/tags`). When the endpoint cannot be reached, the schema's list is the answer. How long
an answer is kept is the caller's (`adapters.http.opts.cache_models_for`, `Config`).
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

from ..client import HttpClient, HttpRequest, read_at_most
from ..editor_port import Editor
from ..errors import CodeCompanionError
from .base import HTTPAdapter, prepare, substitute
from .lua import run_sync

DEFAULT_CACHE_SECONDS = 30 * 60
MAX_BYTES = 4 << 20  # of a models list: a larger answer is no list (the schema's is used)
MAX_MODELS = 1_000  # names kept, each a printable line of at most MAX_NAME characters
MAX_NAME = 200
_cache: dict[str, tuple[float, list[str]]] = {}


async def list_models(
    adapter: HTTPAdapter,
    client: HttpClient,
    editor: Editor | None = None,
    *,
    cache_seconds: float = DEFAULT_CACHE_SECONDS,
) -> list[str]:
    """The adapter's models, its current one first; a list fetched in the last
    `cache_seconds` is not fetched again. `editor`: what the adapter's Lua functions (a
    `choices` or `default` function, an api_key function) are called through."""
    template = adapter.opts.get("models_url")
    if not template:
        return await _schema_choices(adapter, editor)
    try:
        ready = await prepare(adapter, client=client, editor=editor)
        url = substitute(template, ready.env_replaced)
    except (CodeCompanionError, KeyError):
        return await _schema_choices(adapter, editor)
    adapter = ready
    cached = _cache.get(url)
    if cached and time.monotonic() - cached[0] < cache_seconds:
        names = cached[1]
    else:
        try:
            names = await fetch_models(ready, url, client)
        except (CodeCompanionError, ValueError):
            return await _schema_choices(adapter, editor)
        _cache[url] = (time.monotonic(), names)
    current = adapter.model
    return ([current] if current else []) + sorted(n for n in names if n != current)


def model_choices(adapter: HTTPAdapter) -> list[str]:
    """The models the adapter's schema lists, its current one first."""
    entry = adapter.schema.get("model", {})
    choices = entry.get("choices") or []
    if callable(choices):
        choices = choices(adapter)
    names = list(choices)
    current = adapter.model
    return ([current] if current else []) + [n for n in names if n != current]


async def _schema_choices(adapter: HTTPAdapter, editor: Editor | None) -> list[str]:
    try:
        return await run_sync(editor, model_choices, adapter)
    except CodeCompanionError:
        current = adapter.model
        return [current] if current else []


async def fetch_models(ready: HTTPAdapter, url: str, client: HttpClient) -> list[str]:
    """The names the models endpoint `url` lists, in its order, its body read up to
    MAX_BYTES (a `ResponseTooLarge` past it)."""
    headers = {k: v for k, v in ready.headers.items() if k.lower() != "content-type"}
    request = HttpRequest(
        url=url,
        body=b"",
        headers=headers,
        method="GET",
        stream=False,
        provider=ready.formatted_name,
        secrets=ready.secrets,
    )
    async with client.open(request) as response:
        body = await read_at_most(response, MAX_BYTES, request=request, limit_name="a models list's limit")
    return parse_models(body)


def parse_models(body: bytes) -> list[str]:
    try:
        data: Any = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError("not a models list")
    entries = data.get("data") or data.get("models") or []
    names = []
    for entry in entries:
        if isinstance(entry, dict):
            name = entry.get("id") or entry.get("name")
            if isinstance(name, str) and 0 < len(name) <= MAX_NAME and name.isprintable():
                names.append(name.removeprefix("models/"))  # Gemini names are "models/<id>"
                if len(names) == MAX_MODELS:
                    break
    return names


def clear_cache() -> None:
    _cache.clear()
