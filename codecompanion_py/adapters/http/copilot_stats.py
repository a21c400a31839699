"""`gS`: the Copilot account's usage, as CodeCompanion's `copilot_stats` keymap shows it. It is
read from GitHub's `copilot_internal/user` with the user's GitHub login (the same login the
token exchange uses; `opts.stats_url` moves it, for tests) and written as Markdown for a
float. The endpoint is GitHub's own and undocumented: a field that is missing or not a
number reads as none, and what is shown is only numbers and GitHub's words, never the token.
"""

from __future__ import annotations

from typing import Any

from ...client import HttpClient
from ...errors import ConfigError
from . import copilot

STATS_URL = "https://api.github.com/copilot_internal/user"
BAR_WIDTH = 20


def is_copilot(adapter: Any) -> bool:
    """Whether `adapter` is Copilot's (or made from it with `extend`): its `env` is Copilot's
    token exchange."""
    env = getattr(adapter, "env", None) or {}
    return any(getattr(value, "__module__", "") == copilot.__name__ for value in env.values())


async def fetch(adapter: Any, client: HttpClient) -> dict[str, Any]:
    if not is_copilot(adapter):
        raise ConfigError("usage statistics are only available when using the Copilot adapter")
    headers = {"Authorization": f"Bearer {copilot.oauth_token(adapter)}", "User-Agent": "CodeCompanion.nvim"}
    url = adapter.opts.get("stats_url") or STATS_URL
    data = await client.fetch_json(copilot._get_json(url, headers, "Copilot usage", copilot.MODELS_TIMEOUT))
    return data if isinstance(data, dict) else {}


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _bar(percent: float) -> str:
    filled = max(0, min(BAR_WIDTH, int(BAR_WIDTH * percent / 100)))
    return "█" * filled + "░" * (BAR_WIDTH - filled)


def _quota(title: str, entitlement: float, remaining: float, unlimited: bool) -> list[str]:
    if unlimited:
        return [f"## {title}", "- Status: Unlimited", ""]
    if entitlement <= 0:
        return []
    used = entitlement - remaining
    percent = used / entitlement * 100
    return [f"## {title}", f"- Used: {used:.0f} / {entitlement:.0f} ({percent:.1f}%)", f"  {_bar(percent)}", ""]


def lines(stats: dict[str, Any]) -> list[str]:
    """The statistics as Markdown: premium requests, chat and completions (a free account's
    monthly quotas are in other fields), and when the quotas reset."""
    out: list[str] = []
    if stats.get("access_type_sku") == "free_limited_copilot":
        monthly, left = _table(stats.get("monthly_quotas")), _table(stats.get("limited_user_quotas"))
        out += ["## Limited Copilot", ""]
        for name, title in (("chat", "Chat"), ("completions", "Completions")):
            out += _quota(title, _number(monthly.get(name)), _number(left.get(name)), False)
        reset = stats.get("limited_user_reset_date")
    else:
        snapshots = _table(stats.get("quota_snapshots"))
        for name, title in (
            ("premium_interactions", "Premium Interactions"),
            ("chat", "Chat"),
            ("completions", "Completions"),
        ):
            quota = _table(snapshots.get(name))
            unlimited = quota.get("unlimited") is True
            block = _quota(title, _number(quota.get("entitlement")), _number(quota.get("remaining")), unlimited)
            if name == "premium_interactions" and block and not unlimited:
                overage = "Permitted" if quota.get("overage_permitted") is True else "Not Permitted"
                block.insert(-1, f"- Overage: {overage}")
            out += block
        reset = stats.get("quota_reset_date")
    if isinstance(reset, str) and reset:
        out.append(f"Quotas reset on {reset}")
    return out or ["GitHub gave no usage for this account"]
