"""GitHub Copilot chat: the OpenAI Chat Completions wire format behind a token exchange.

The user's GitHub login comes from the files copilot.vim / copilot.lua write
(`github-copilot/apps.json` or `hosts.json` under the config dir: an `oauth_token` per
`github.com...` entry), or from `GH_COPILOT_TOKEN` / `GITHUB_COPILOT_TOKEN`. It is exchanged
at `copilot_internal/v2/token` for a short-lived Copilot token (`token`, `expires_at` in unix
seconds, `endpoints.api`), cached in memory and exchanged again a minute before it expires.
Requests go to `<endpoints.api>/chat/completions` with the editor headers Copilot requires.
Copilot's `reasoning_text` deltas are read as reasoning by the openai handlers.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import httpx

from ... import __version__
from ...errors import AuthenticationError, ConfigError, ProviderError
from ..base import deep_merge
from .openai import ADAPTER as _OPENAI

TOKEN_URL = "https://api.github.com/copilot_internal/v2/token"
DEFAULT_API = "https://api.githubcopilot.com"
REFRESH_EARLY = 60.0  # seconds before `expires_at` when the token is exchanged again
_TOKEN_ENV = ("GH_COPILOT_TOKEN", "GITHUB_COPILOT_TOKEN")

_cache: dict[str, dict[str, Any]] = {}  # oauth token -> the exchanged token


def config_dir(adapter: Any = None) -> Path:
    configured = (adapter.opts.get("config_dir") if adapter is not None else None)
    if configured:
        return Path(configured).expanduser()
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"])
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


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
    raise ConfigError(f"copilot: no GitHub Copilot login found in {folder}/apps.json or hosts.json; sign in "
                      "with copilot.vim (:Copilot setup) or copilot.lua (:Copilot auth), or set GH_COPILOT_TOKEN")


async def copilot_token(adapter: Any) -> dict[str, Any]:
    """The exchanged token (cached until a minute before it expires)."""
    github = oauth_token(adapter)
    cached = _cache.get(github)
    if cached and cached["expires_at"] - REFRESH_EARLY > time.time():
        return cached
    url = adapter.opts.get("token_url") or TOKEN_URL
    headers = {"Authorization": f"Bearer {github}", "Accept": "application/json",
               "Editor-Version": _EDITOR_VERSION, "Editor-Plugin-Version": _PLUGIN_VERSION}
    try:
        async with httpx.AsyncClient(timeout=20.0) as client:
            response = await client.get(url, headers=headers)
    except httpx.HTTPError as error:
        raise ProviderError(f"copilot: could not reach the token endpoint: {error}") from None
    if response.status_code in (401, 403, 404):
        raise AuthenticationError(
            f"copilot: GitHub refused the Copilot token exchange (HTTP {response.status_code}); sign in again "
            "with copilot.vim / copilot.lua, and check that this account has Copilot",
            status=response.status_code, provider="Copilot")
    if response.status_code != 200:
        raise ProviderError(f"copilot: the token exchange failed with HTTP {response.status_code}")
    try:
        data = response.json()
        exchanged = {"token": str(data["token"]), "expires_at": float(data.get("expires_at") or 0),
                     "api": str((data.get("endpoints") or {}).get("api") or DEFAULT_API).rstrip("/")}
    except (ValueError, KeyError, TypeError):
        raise ProviderError("copilot: the token endpoint answered without a token") from None
    _cache[github] = exchanged
    return exchanged


async def _token(adapter: Any) -> str:
    return (await copilot_token(adapter))["token"]


async def _api(adapter: Any) -> str:
    # resolved right after `api_key`: the token it just exchanged names the endpoint
    return (_cache.get(oauth_token(adapter)) or await copilot_token(adapter))["api"]


_EDITOR_VERSION = "Neovim/0.11.0"
_PLUGIN_VERSION = f"codecompanion-py/{__version__}"

ADAPTER: dict[str, Any] = deep_merge(_OPENAI, {
    "name": "copilot",
    "formatted_name": "Copilot",
    "url": "${api}/chat/completions",
    "env": {"api_key": _token, "api": _api},
    "headers": {"Authorization": "Bearer ${api_key}", "Copilot-Integration-Id": "vscode-chat",
                "Editor-Version": _EDITOR_VERSION, "Editor-Plugin-Version": _PLUGIN_VERSION,
                "X-Initiator": "user"},
    "opts": {"models_url": "${api}/models", "required_env": ["api_key"],
             "auth_hint": "your GitHub Copilot login (copilot.vim / copilot.lua)"},
    "schema": {"model": {"default": "gpt-4.1", "choices": ["gpt-4.1", "gpt-5-mini", "claude-sonnet-4.5",
                                                             "gemini-2.5-pro"]},
               "reasoning_effort": {"mapping": None}},
})
