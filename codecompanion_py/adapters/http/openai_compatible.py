"""Any server that speaks OpenAI Chat Completions: `${url}${chat_url}`.

The key defaults to OPENAI_COMPATIBLE_API_KEY rather than OPENAI_API_KEY, so an OpenAI
key is never sent to a server the user pointed at for another purpose; with no key set
no Authorization header is sent (local servers rarely want one).
"""

from __future__ import annotations

from typing import Any

from ..base import deep_merge
from .openai import ADAPTER as _OPENAI

ADAPTER: dict[str, Any] = deep_merge(
    _OPENAI,
    {
        "name": "openai_compatible",
        "formatted_name": "OpenAI Compatible",
        "url": "${url}${chat_url}",
        "env": {
            "url": "http://localhost:11434",
            "chat_url": "/v1/chat/completions",
            "models_endpoint": "/v1/models",
            "api_key": "OPENAI_COMPATIBLE_API_KEY",
        },
        "opts": {"required_env": [], "models_url": "${url}${models_endpoint}"},
        "schema": {"model": {"default": "llama3.1", "choices": []}},
    },
)
