"""gS's text from GitHub's `copilot_internal/user`: a free account's quotas live in other
fields than a paid one's, and fields of the wrong type read as none."""

from __future__ import annotations

from codecompanion_py.adapters.http import copilot_stats


def test_a_free_accounts_monthly_quotas_are_shown_used_of_entitled():
    stats = {
        "access_type_sku": "free_limited_copilot",
        "monthly_quotas": {"chat": 50, "completions": 2000},
        "limited_user_quotas": {"chat": 40, "completions": 1000},
        "limited_user_reset_date": "2026-12-10",
    }
    lines = copilot_stats.lines(stats)
    assert lines[0] == "## Limited Copilot"
    assert "- Used: 10 / 50 (20.0%)" in lines and "- Used: 1000 / 2000 (50.0%)" in lines
    assert lines[-1] == "Quotas reset on 2026-12-10"


def test_fields_of_the_wrong_type_read_as_none():
    stats = {"quota_snapshots": {"premium_interactions": {"entitlement": "lots", "remaining": True}, "chat": []}}
    assert copilot_stats.lines(stats) == ["GitHub gave no usage for this account"]
