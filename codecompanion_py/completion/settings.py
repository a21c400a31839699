"""`interactions.completion`, as the engine reads it (the editor reads the keys and the
timing itself)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

DEFAULT_CONTEXT_WINDOW = 4000  # tokens of context a request may carry
DEFAULT_N_COMPLETIONS = 1
MAX_N_COMPLETIONS = 5


@dataclass(frozen=True)
class CompletionSettings:
    enabled: bool = False  # the editor decides per filetype and with :CodeCompanionCompletion
    adapter: Any = None  # a name or { name, model }; None: the chat's adapter
    model: str | None = None
    n_completions: int = DEFAULT_N_COMPLETIONS
    context_window: int = DEFAULT_CONTEXT_WINDOW

    @classmethod
    def from_config(cls, table: Mapping[str, Any]) -> CompletionSettings:
        adapter = table.get("adapter") or None
        model = table.get("model") if isinstance(table.get("model"), str) else None
        if isinstance(adapter, Mapping):
            adapter = dict(adapter)
        elif adapter is not None and not isinstance(adapter, str):
            raise ConfigError("interactions.completion.adapter must be an adapter's name or { name, model }")
        return cls(
            enabled=table.get("enabled") is True,
            adapter=adapter,
            model=model,
            n_completions=_whole(table, "n_completions", DEFAULT_N_COMPLETIONS, 1, MAX_N_COMPLETIONS),
            context_window=_whole(table, "context_window", DEFAULT_CONTEXT_WINDOW, 64, 1_000_000),
        )


def _whole(table: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"interactions.completion.{key} must be a number, not {value!r}")
    return min(max(int(value), low), high)
