"""codecompanion-py: an AI coding assistant for Neovim whose engine is Python.

The public names are imported lazily, so `import codecompanion_py` stays cheap for the
Neovim host; `codecompanion_py.Message` and friends load their module on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "Message": "messages",
    "TextPart": "messages",
    "ImagePart": "messages",
    "ReasoningPart": "messages",
    "ToolCall": "messages",
    "ToolResultPart": "messages",
    "ToolSpec": "messages",
    "Usage": "messages",
    "TokenEvent": "events",
    "ReasoningEvent": "events",
    "ToolCallEvent": "events",
    "ToolResultEvent": "events",
    "UsageEvent": "events",
    "FinalEvent": "events",
    "ErrorEvent": "events",
    "AdapterError": "errors",
    "CodeCompanionError": "errors",
    "ConfigError": "errors",
    "resolve": "adapters",
    "extend": "adapters",
    "call_handler": "adapters",
    "generate": "generation",
    "agenerate": "generation",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'codecompanion_py' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
