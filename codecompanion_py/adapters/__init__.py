"""Adapters: HTTP providers (`HTTPAdapter`, data plus handlers) and agents (`AcpAdapter`).

The registry (registry.py) resolves a name or table to either kind; the config holds the
one built from the user's `setup()` (`Config.adapters`). `resolve()` and `extend()` here
are the built-ins' registry, for code that has no config (the CLI, tests).
"""

from __future__ import annotations

from .base import HTTPAdapter, prepare
from .handlers import call_handler, get_handler
from .registry import BUILTIN, EXTENDS_KEY, Adapters, Definition, merge_over

resolve = BUILTIN.http
extend = BUILTIN.extend


__all__ = [
    "BUILTIN",
    "EXTENDS_KEY",
    "Adapters",
    "Definition",
    "HTTPAdapter",
    "call_handler",
    "extend",
    "get_handler",
    "merge_over",
    "prepare",
    "resolve",
]
