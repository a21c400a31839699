"""What `:checkhealth codecompanion_py` and `codecompanion-py health` report.

API keys are reported as present or absent, never with their values.
"""

from __future__ import annotations

import os
import shutil
import sys
from importlib import metadata
from typing import Any

from . import adapters
from .acp import adapters as acp_adapters

KNOWN_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OPENAI_COMPATIBLE_API_KEY")


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _env_names(adapter: adapters.HTTPAdapter) -> list[str]:
    """The environment variables an adapter reads its settings from."""
    return [
        spec
        for spec in adapter.env.values()
        if isinstance(spec, str) and spec.isupper() and spec.replace("_", "").isalnum()
    ]


def report() -> dict[str, Any]:
    names = adapters.available()
    keys = dict.fromkeys(KNOWN_KEYS)
    problems: dict[str, str] = {}
    for name in names:
        try:
            adapter = adapters.resolve(name)
        except Exception as exc:  # a broken user adapter is a health error, not a crash
            problems[name] = str(exc)
            continue
        for key in _env_names(adapter):
            keys.setdefault(key)
    agents: dict[str, Any] = {}
    for name in acp_adapters.names():
        try:
            agent = acp_adapters.resolve(name)
            command = agent.command()[0]
        except Exception as exc:
            problems[name] = str(exc)
            continue
        agents[name] = {"command": command, "found": shutil.which(command) is not None, "install": agent.install}
    return {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "versions": {pkg: _version(pkg) for pkg in ("codecompanion-py", "pynvim", "httpx", "msgspec")},
        "adapters": names,
        "adapter_errors": problems,
        "agents": agents,
        "keys": {key: bool(os.environ.get(key)) for key in sorted(keys)},
    }
