"""`/share`: the chat as a secret GitHub gist (CodeCompanion's `slash_commands.share`, its
token in `opts.token`). What goes is the chat as its buffer shows it, scrubbed of every
secret the engine knows, the token itself and any bearer token first; the answer is the
gist's address, which the user is told. `opts.url` moves the gists API (tests, GitHub
Enterprise).
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from ..client import HttpClient, HttpRequest
from ..errors import ConfigError, ProviderError
from ..scrubber import scrub_secrets

GIST_API_URL = "https://api.github.com/gists"
TIMEOUT = 20.0  # seconds without an answer from GitHub


class ShareRequest(Protocol):
    """What `/share` sends (`calls.ChatShare`), read only."""

    @property
    def text(self) -> str: ...
    @property
    def token(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def filename(self) -> str: ...
    @property
    def url(self) -> str: ...


async def share(client: HttpClient, call: ShareRequest) -> str:
    """The secret gist's address."""
    if not call.token:
        raise ConfigError(
            "/share needs interactions.chat.slash_commands.share.opts.token: a GitHub token with the gist scope"
        )
    content = scrub_secrets(call.text, [call.token])
    if not content.strip():
        raise ConfigError("/share: the chat has nothing to share yet")
    files = {call.filename or "codecompanion-chat.md": {"content": content}}
    request = HttpRequest(
        url=call.url or GIST_API_URL,
        body=msgspec.json.encode(
            {"description": call.description or "CodeCompanion Chat", "files": files, "public": False}
        ),
        headers={
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {call.token}",
            "Content-Type": "application/json",
            "User-Agent": "CodeCompanion.nvim",
        },
        method="POST",
        stream=False,
        provider="GitHub gists",
        auth_hint="slash_commands.share.opts.token (a token with the gist scope)",
        read_timeout=TIMEOUT,
        secrets=(call.token,),
    )
    data: Any = await client.fetch_json(request)
    address = data.get("html_url") if isinstance(data, dict) else None
    if not isinstance(address, str) or not address.startswith("https://"):
        raise ProviderError("GitHub answered without the gist's address")
    return address
