"""The built-in `demo` adapter: `openai_compatible` at the url in the CODECOMPANION_DEMO_URL
environment variable, with no key. `make demo` (`python -m codecompanion_py.demo.launch`)
starts a scripted server on 127.0.0.1 and sets the variable for the Neovim it opens;
`python -m codecompanion_py.demo.provider` serves it on its own and prints the setting.
No network, and the whole real path runs: HTTP, SSE, the normalizer and the rendering.
"""

from __future__ import annotations

from typing import Any

from ..base import deep_merge
from .openai_compatible import ADAPTER as _COMPATIBLE

URL_ENV = "CODECOMPANION_DEMO_URL"

ADAPTER: dict[str, Any] = deep_merge(
    _COMPATIBLE,
    {
        "name": "demo",
        "formatted_name": "Demo",
        "env": {"url": URL_ENV, "api_key": "demo"},
        "opts": {"required_env": ["url"]},
        "schema": {"model": {"default": "demo-1", "choices": ["demo-1"]}},
    },
)
