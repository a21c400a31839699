"""The built-in `demo` adapter: `openai_compatible` pointed at a scripted server that the
engine starts on 127.0.0.1 the first time the adapter is used. No key, no network, and
the whole real path runs: HTTP, SSE, the normalizer and the rendering.
"""

from __future__ import annotations

from typing import Any

from ..base import deep_merge
from .openai_compatible import ADAPTER as _COMPATIBLE


def _server_url(self: Any) -> str:
    from ...demo.provider import ensure_demo_server

    return ensure_demo_server()


ADAPTER: dict[str, Any] = deep_merge(
    _COMPATIBLE,
    {
        "name": "demo",
        "formatted_name": "Demo",
        "env": {"url": _server_url, "api_key": "demo"},
        "schema": {"model": {"default": "demo-1", "choices": ["demo-1"]}},
    },
)
