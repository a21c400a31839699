"""GitHub Copilot chat: the OpenAI wire formats behind a token exchange.

Login. The user's GitHub login comes from the files copilot.vim / copilot.lua write
(`github-copilot/apps.json` or `hosts.json` under `$XDG_CONFIG_HOME`, else `%LOCALAPPDATA%`
on Windows, else `~/.config`: an `oauth_token` per `github.com...` entry), or from
`GH_COPILOT_TOKEN` / `GITHUB_COPILOT_TOKEN`. It is exchanged at `copilot_internal/v2/token`
for a short-lived Copilot token (`token`, `expires_at` in unix seconds, `refresh_in`,
`endpoints.api`), kept in memory and exchanged again a minute before it expires (or when
`refresh_in` says so). All of this runs in the adapter's `env` resolution (async callables),
so it happens in `prepare()` like `cmd:gh auth token` does for GitHub Models. The exchange
and the models list below go through the HttpClient the request is prepared with
(`prepare(client=...)`, else one of their own for the call), with its error mapping,
timeouts and cancellation. A missing login is a ConfigError saying how to sign in; a
refused exchange (401, 403, or 404 for an account without Copilot) an AuthenticationError
saying to sign in again; neither shows a token. A request that fails drops its token
(`on_exit`), so one Copilot revoked early is not reused. `opts.token_url` and
`opts.config_dir` move the exchange and the login files (tests).

Endpoint per model. `${api}/models` lists each model's `supported_endpoints`; a model that
offers `/responses` but not `/chat/completions` (the Codex models) is sent to
`${api}/responses` in the Responses wire format, every other model to
`${api}/chat/completions`. The list is cached for 30 minutes; `opts.endpoint`
("chat/completions" or "responses") forces one. The handlers below pick the openai or the
openai_responses handlers from the endpoint the request was prepared for.

Reasoning. On Chat Completions Copilot streams `reasoning_text` (shown as reasoning by the
openai handlers) and `reasoning_opaque`, an encrypted state that must come back on later
assistant turns (Gemini refuses a tool result otherwise). It is kept in the reasoning
part's `provider_data["copilot"]` and sent back as `reasoning_text` + `reasoning_opaque`
on that assistant message. On the Responses endpoint the encrypted reasoning items are
kept under the same key (not `openai_responses`: OpenAI cannot read Copilot's and the
other way round). Other adapters never see either.

Headers: `Copilot-Integration-Id: vscode-chat`, `Editor-Version`, `Editor-Plugin-Version`,
`X-Initiator` (`agent` when the request only carries tool results back, which Copilot does
not bill as a premium request; `user` otherwise) and `Copilot-Vision-Request` when images
are sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from ... import __version__
from ...client import HttpClient, HttpRequest
from ...errors import AdapterError, AuthenticationError, CodeCompanionError, ConfigError, HTTPStatusError, ProviderError
from ...messages import ImagePart, Message, ReasoningPart, ToolCall, ToolResultPart, ToolSpec
from ..base import deep_merge
from . import openai, openai_responses
from .wire import handler_table, setup_stream_flag

PROVIDER_KEY = "copilot"
TOKEN_URL = "https://api.github.com/copilot_internal/v2/token"
DEFAULT_API = "https://api.githubcopilot.com"
REFRESH_EARLY = 60.0  # seconds before `expires_at` when the token is exchanged again
MODELS_SECONDS = 30 * 60  # how long the models list (and so each model's endpoint) is kept
MODELS_RETRY_SECONDS = 60  # after a failed models request: chat/completions until then
CHAT, RESPONSES = "chat/completions", "responses"
_TOKEN_ENV = ("GH_COPILOT_TOKEN", "GITHUB_COPILOT_TOKEN")
_EDITOR_VERSION = "Neovim/0.11.0"
_PLUGIN_VERSION = f"codecompanion-py/{__version__}"
_EDITOR_HEADERS = {"Editor-Version": _EDITOR_VERSION, "Editor-Plugin-Version": _PLUGIN_VERSION}
_MODELS_API_VERSION = "2025-10-01"  # sent with the models request, as other Copilot clients do
_LOGIN_HINT = "your GitHub Copilot login (copilot.vim / copilot.lua)"
TOKEN_TIMEOUT = 20.0  # seconds without data from the token endpoint before giving up
MODELS_TIMEOUT = 10.0  # the same for the models list, which is optional

_WINDOWS = os.name == "nt"
_now = time.time  # the clock `expires_at` is read against (tests replace it)
_tokens: dict[str, dict[str, Any]] = {}  # digest of (token url, GitHub token) -> the exchanged token
_pending: dict[str, asyncio.Future[dict[str, Any]]] = {}  # exchanges under way, shared by concurrent requests
_models: dict[str, tuple[float, dict[str, dict[str, Any]]]] = {}  # api url -> (expires, id -> model entry)


def clear_caches() -> None:
    _tokens.clear()
    _pending.clear()
    _models.clear()


# --- the GitHub login -------------------------------------------------------------------


def config_dir(adapter: Any = None) -> Path:
    configured = adapter.opts.get("config_dir") if adapter is not None else None
    if configured:
        return Path(configured).expanduser()
    if os.environ.get("XDG_CONFIG_HOME"):
        return Path(os.environ["XDG_CONFIG_HOME"])
    if _WINDOWS and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"])
    return Path.home() / ".config"


def oauth_token(adapter: Any = None) -> str:
    """The user's GitHub token for Copilot; ConfigError saying how to sign in when missing."""
    for name in _TOKEN_ENV:
        if os.environ.get(name):
            return os.environ[name]
    folder = config_dir(adapter) / "github-copilot"
    for filename in ("apps.json", "hosts.json"):
        try:
            entries = json.loads((folder / filename).read_text())
        except (OSError, ValueError):
            continue
        for key, entry in entries.items() if isinstance(entries, dict) else ():
            if key.startswith("github.com") and isinstance(entry, dict) and entry.get("oauth_token"):
                return str(entry["oauth_token"])
    raise ConfigError(
        f"copilot: no GitHub Copilot login found in {folder}/apps.json or hosts.json; sign in "
        "with copilot.vim (:Copilot setup) or copilot.lua (:Copilot auth), or set GH_COPILOT_TOKEN"
    )


# --- the Copilot token ------------------------------------------------------------------


@contextlib.asynccontextmanager
async def _client(adapter: Any) -> AsyncIterator[HttpClient]:
    """The HttpClient the adapter's request goes through (`prepare(client=...)`), else one
    for this call only."""
    shared = getattr(adapter, "client", None)
    if shared is not None:
        yield shared
        return
    own = HttpClient()
    try:
        yield own
    finally:
        await own.aclose()


async def copilot_token(adapter: Any, *, due_ok: bool = False) -> dict[str, Any]:
    """`{token, api, refresh_at}`: the cached token until it is due, else a new exchange
    (one at a time: concurrent requests wait for the same exchange). `due_ok` takes the
    cached token even when due: the `env` entries after `api_key`, which has just made sure
    it is fresh, so one request never exchanges twice."""
    github = oauth_token(adapter)
    url = adapter.opts.get("token_url") or TOKEN_URL
    key = hashlib.sha256(f"{url}\0{github}".encode()).hexdigest()  # no token kept as a key
    cached = _tokens.get(key)
    if cached and (due_ok or cached["refresh_at"] > _now()):
        return cached
    pending = _pending.get(key)
    if pending is None or pending.get_loop() is not asyncio.get_running_loop():
        pending = asyncio.ensure_future(_exchange(adapter, url, github))
        _pending[key] = pending
        pending.add_done_callback(lambda done: _exchanged(key, done))
    return await asyncio.shield(pending)


def _exchanged(key: str, done: asyncio.Future[dict[str, Any]]) -> None:
    if _pending.get(key) is done:
        del _pending[key]
    if not done.cancelled() and done.exception() is None:
        _tokens[key] = done.result()


def _get_json(url: str, headers: dict[str, str], provider: str, read_timeout: float) -> HttpRequest:
    """A GET of one of GitHub's JSON bodies, sent as the editor's plugin (`headers` added);
    a refusal tells the user how to sign in again."""
    return HttpRequest(
        url=url,
        body=b"",
        headers={**headers, "Accept": "application/json", **_EDITOR_HEADERS},
        method="GET",
        stream=False,
        provider=provider,
        auth_hint=_LOGIN_HINT,
        read_timeout=read_timeout,
    )


async def _exchange(adapter: Any, url: str, github: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {github}", "User-Agent": _PLUGIN_VERSION}
    request = _get_json(url, headers, "Copilot token exchange", TOKEN_TIMEOUT)
    try:
        async with _client(adapter) as client:
            data = await client.fetch_json(request)
    except HTTPStatusError as error:
        if error.status in (401, 403, 404):
            raise AuthenticationError(
                f"copilot: GitHub refused the Copilot token exchange (HTTP {error.status}); sign in again "
                "with copilot.vim / copilot.lua, and check that this account has Copilot",
                status=error.status,
                provider="Copilot",
            ) from None
        raise
    except AdapterError:
        raise ProviderError("copilot: the token endpoint answered without a token") from None
    try:
        token = str(data["token"])
        expires_at = float(data.get("expires_at") or 0)
        refresh_at = expires_at - REFRESH_EARLY
        if data.get("refresh_in"):
            refresh_at = min(refresh_at, _now() + float(data["refresh_in"]))
        api = str((data.get("endpoints") or {}).get("api") or DEFAULT_API).rstrip("/")
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ProviderError("copilot: the token endpoint answered without a token") from None
    return {"token": token, "api": api, "refresh_at": refresh_at}


async def _token(adapter: Any) -> str:
    return (await copilot_token(adapter))["token"]


async def _api(adapter: Any) -> str:
    return (await copilot_token(adapter, due_ok=True))["api"]


# --- models and their endpoints ---------------------------------------------------------


async def model_entries(adapter: Any) -> dict[str, dict[str, Any]]:
    """`${api}/models` as id -> entry (cached); empty when the list cannot be had."""
    exchanged = await copilot_token(adapter, due_ok=True)
    api = exchanged["api"]
    cached = _models.get(api)
    if cached and cached[0] > time.monotonic():
        return cached[1]
    headers = {
        "Authorization": f"Bearer {exchanged['token']}",
        "Copilot-Integration-Id": "vscode-chat",
        "X-GitHub-Api-Version": _MODELS_API_VERSION,
    }
    request = _get_json(f"{api}/models", headers, "Copilot", MODELS_TIMEOUT)
    entries: dict[str, dict[str, Any]] = {}
    try:
        async with _client(adapter) as client:
            data = await client.fetch_json(request)
    except CodeCompanionError:  # an error status, no connection, a timeout, not JSON
        data = None
    listed = data.get("data") if isinstance(data, dict) else None
    for entry in listed if isinstance(listed, list) else ():
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            entries[entry["id"]] = entry
    keep = MODELS_SECONDS if entries else MODELS_RETRY_SECONDS
    _models[api] = (time.monotonic() + keep, entries)
    return entries


def endpoint_of(entry: dict[str, Any] | None) -> str:
    """`responses` for a model that offers only the Responses API, else `chat/completions`."""
    endpoints = (entry or {}).get("supported_endpoints") or ()
    if "/responses" in endpoints and "/chat/completions" not in endpoints:
        return RESPONSES
    return CHAT


def _forced_endpoint(adapter: Any) -> str | None:
    forced = adapter.opts.get("endpoint")
    if not forced:
        return None
    endpoint = str(forced).strip("/")
    if endpoint not in (CHAT, RESPONSES):
        raise ConfigError(f"copilot: opts.endpoint must be {CHAT!r} or {RESPONSES!r}, not {forced!r}")
    return endpoint


async def _endpoint(adapter: Any) -> str:
    return _forced_endpoint(adapter) or endpoint_of((await model_entries(adapter)).get(str(adapter.model)))


def _supports(adapter: Any) -> dict[str, Any]:
    """The current model's `capabilities.supports`, when its list has been fetched."""
    api = (adapter.env_replaced or {}).get("api")
    cached = _models.get(api) if isinstance(api, str) else None
    entry = (cached or (0, {}))[1].get(str(adapter.model)) or {}
    supports = (entry.get("capabilities") or {}).get("supports")
    return supports if isinstance(supports, dict) else {}


# --- handlers: the wire format of the request's endpoint --------------------------------


def _responses(self: Any) -> bool:
    endpoint = (getattr(self, "env_replaced", None) or {}).get("endpoint")
    return (endpoint or _forced_endpoint(self)) == RESPONSES


def setup(self: Any) -> bool:
    if _supports(self).get("streaming") is False:
        self.opts["stream"] = False  # a model Copilot does not stream: ask for the whole body
    if _responses(self):
        return setup_stream_flag(self)  # the Responses API's own setup
    return openai.setup(self)


def on_exit(self: Any, data: Any = None) -> None:
    """A request that failed drops its Copilot token: one revoked before `expires_at`
    (a 401 from Copilot) is then exchanged again by the next request, not reused."""
    if isinstance(data, dict) and data.get("status") == "error":
        token = (getattr(self, "env_replaced", None) or {}).get("api_key")
        for key in [k for k, v in _tokens.items() if v["token"] == token]:
            del _tokens[key]


def build_parameters(self: Any, params: dict[str, Any], messages: Sequence[Message]) -> dict[str, Any]:
    if _responses(self):
        return openai_responses.build_parameters(self, params, messages)
    return openai.build_parameters(self, params, messages)


def build_messages(self: Any, messages: Sequence[Message]) -> dict[str, Any]:
    _set_request_headers(self, messages)
    if _responses(self):
        return openai_responses.build_messages(self, [_as_responses(m) for m in messages])
    body = openai.build_messages(self, messages)
    # openai's build_messages gives each assistant message exactly one assistant entry, in order
    assistants = iter([m for m in messages if m.role == "assistant"])
    for entry in body["messages"]:
        if entry.get("role") == "assistant":
            message = next(assistants, None)
            if message is not None:
                _add_reasoning(entry, message)
    return body


def _set_request_headers(self: Any, messages: Sequence[Message]) -> None:
    # `prepare` drops a header the user set to None: such a header stays out.
    if "X-Initiator" in self.headers and messages:
        last = messages[-1]
        self.headers["X-Initiator"] = (
            "agent" if last.role == "tool" or (last.tool_results and not last.text) else "user"
        )
    if any(isinstance(p, ImagePart) for m in messages for p in m.parts):
        self.headers["Copilot-Vision-Request"] = "true"


def _copilot_data(message: Message, field: str) -> Any:
    for part in message.parts:
        if isinstance(part, ReasoningPart):
            value = ((part.provider_data or {}).get(PROVIDER_KEY) or {}).get(field)
            if value:
                return value
    return None


def _add_reasoning(entry: dict[str, Any], message: Message) -> None:
    opaque = _copilot_data(message, "reasoning_opaque")
    if opaque:  # only Copilot's own reasoning goes back, with all its text
        if message.reasoning:
            entry["reasoning_text"] = message.reasoning
        entry["reasoning_opaque"] = opaque


def _as_responses(message: Message) -> Message:
    """Reasoning parts carrying Copilot's Responses reasoning item under the key the
    openai_responses handlers read; any other provider's data removed."""
    if message.role != "assistant" or not any(isinstance(p, ReasoningPart) and p.provider_data for p in message.parts):
        return message
    parts = []
    for part in message.parts:
        if isinstance(part, ReasoningPart) and part.provider_data:
            item = (part.provider_data.get(PROVIDER_KEY) or {}).get("responses")
            part = msgspec.structs.replace(part, provider_data={openai_responses.PROVIDER_KEY: item} if item else None)
        parts.append(part)
    return Message(role=message.role, parts=tuple(parts))


def build_tools(self: Any, tools: Sequence[ToolSpec | dict[str, Any]] | None) -> dict[str, Any] | None:
    if _responses(self):
        return openai_responses.build_tools(self, tools)
    return openai.build_tools(self, tools)


def build_body(self: Any, data: dict[str, Any]) -> dict[str, Any] | None:
    return None


class _OpaqueDelta(msgspec.Struct):
    reasoning_opaque: str | None = None


class _OpaqueChoice(msgspec.Struct):
    delta: _OpaqueDelta | None = None
    message: _OpaqueDelta | None = None


class _OpaqueChunk(msgspec.Struct):
    choices: list[_OpaqueChoice] | None = None


_decode_opaque = msgspec.json.Decoder(_OpaqueChunk).decode


def _opaque(data: Any) -> str | None:
    """The `reasoning_opaque` of a chunk (or whole body), if it has one."""
    raw = isinstance(data, (bytes, bytearray, str))
    if raw and ("reasoning_opaque" if isinstance(data, str) else b"reasoning_opaque") not in data:
        return None  # the common case, kept cheap: this runs once per streamed token
    try:
        chunk = _decode_opaque(data) if raw else msgspec.convert(data, _OpaqueChunk)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None  # not the shape Copilot sends: there is nothing to keep
    for choice in chunk.choices or ():
        delta = choice.delta or choice.message
        if delta is not None and delta.reasoning_opaque:
            return delta.reasoning_opaque
    return None


def parse_chat(self: Any, data: Any, tools: Any = None) -> dict[str, Any] | None:
    if _responses(self):
        result = openai_responses.parse_chat(self, data, tools)
        if result is not None:
            item = (result.get("reasoning_end") or {}).get(openai_responses.PROVIDER_KEY)
            if item:
                result["reasoning_end"] = {PROVIDER_KEY: {"responses": item}}
        return result
    result = openai.parse_chat(self, data, tools)
    if result is not None and result.get("status") == "success":
        opaque = _opaque(data)  # openai's parse_chat has decoded the frame: it is valid JSON
        if opaque:
            result["reasoning_end"] = {PROVIDER_KEY: {"reasoning_opaque": opaque}}
    return result


def parse_tokens(self: Any, data: Any) -> int | None:
    if _responses(self):
        return openai_responses.parse_tokens(self, data)
    return openai.parse_tokens(self, data)


def format_calls(self: Any, tool_calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    if _responses(self):
        return openai_responses.format_calls(self, tool_calls)
    return openai.format_calls(self, tool_calls)


def format_response(self: Any, tool_call: ToolCall | ToolResultPart, output: str) -> dict[str, Any]:
    if _responses(self):
        return openai_responses.format_response(self, tool_call, output)
    return openai.format_response(self, tool_call, output)


ADAPTER: dict[str, Any] = deep_merge(
    openai.ADAPTER,
    {
        "name": "copilot",
        "formatted_name": "Copilot",
        "url": "${api}/${endpoint}",
        # resolved in this order: the exchange, then the api it names, then the model's endpoint
        "env": {"api_key": _token, "api": _api, "endpoint": _endpoint},
        "headers": {
            "Authorization": "Bearer ${api_key}",
            "Copilot-Integration-Id": "vscode-chat",
            **_EDITOR_HEADERS,
            "X-Initiator": "user",
        },
        "opts": {"models_url": "${api}/models", "required_env": ["api_key"], "auth_hint": _LOGIN_HINT},
        "schema": {
            "model": {
                "default": "gpt-4.1",
                "choices": ["gpt-4.1", "gpt-5-mini", "gpt-5-codex", "claude-sonnet-4.5", "gemini-2.5-pro"],
            },
            "reasoning_effort": {"mapping": None},
        },
    },
)
ADAPTER["handlers"] = handler_table(globals())
