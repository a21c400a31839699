"""adapter_health.py: each way an adapter's key can be given, checked without reading it
into the report or running anything."""

from __future__ import annotations

from codecompanion_py import config
from codecompanion_py.adapter_health import entries


def checked(monkeypatch, env: dict, **variables: str) -> list[tuple[str, str]]:
    """The entries for a chat whose adapter is openai with `env`, as (level, text)."""
    for name in ("MY_OWN_VAR", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    loaded = config.load({
        "adapters": {"http": {"mine": {"__extends": "openai", "env": env}}},
        "interactions": {"chat": {"adapter": "mine"}},
    })  # fmt: skip
    return [(entry.level, entry.text) for entry in entries(loaded, {})]


def test_a_variable_set_empty_or_unset(monkeypatch):
    assert checked(monkeypatch, {"api_key": "MY_OWN_VAR"}, MY_OWN_VAR="x") == [
        ("info", "chat, inline and cmd use mine"),
        ("ok", "mine: env.api_key: MY_OWN_VAR is set"),
    ]
    assert checked(monkeypatch, {"api_key": "MY_OWN_VAR"}, MY_OWN_VAR=" ")[1] == (
        "error",
        "mine: env.api_key: MY_OWN_VAR is set but empty",
    )
    assert checked(monkeypatch, {"api_key": "MY_OWN_VAR"})[1] == ("error", "mine: env.api_key: MY_OWN_VAR is not set")


def test_a_file_a_command_and_a_literal_key(monkeypatch, tmp_path):
    missing = tmp_path / "key.txt"
    assert checked(monkeypatch, {"api_key": f"file:{missing}"})[1] == (
        "error",
        f"mine: env.api_key is read from {missing}, which is not a readable file",
    )
    missing.write_text("sk-x")
    assert checked(monkeypatch, {"api_key": f"file:{missing}"})[1] == (
        "ok",
        f"mine: env.api_key is read from {missing}",
    )
    ran = tmp_path / "ran"
    level, text = checked(monkeypatch, {"api_key": f"cmd:touch {ran}"})[1]
    assert level == "info" and "run when the chat first needs the key (not run here)" in text
    assert not ran.exists()  # checkhealth runs nothing
    assert checked(monkeypatch, {"api_key": "cmd:no-such-program-here --key"})[1] == (
        "error",
        "mine: env.api_key comes from `no-such-program-here ...`, which is not on PATH",
    )
    assert checked(monkeypatch, {"api_key": "sk-literal-in-the-config"})[1] == (
        "ok",
        "mine: env.api_key is written in the config",
    )


def test_an_adapter_without_a_key_and_one_that_does_not_load(monkeypatch):
    loaded = config.load({"interactions": {"chat": {"adapter": "ollama"}, "inline": {"adapter": "nope"}}})
    found = [(entry.level, entry.text) for entry in entries(loaded, {})]
    assert ("ok", "ollama: needs no key") in found
    assert found[2][0] == "info" and found[2][1] == "the inline interaction uses nope"
    assert found[3][0] == "error" and "unknown adapter 'nope'" in found[3][1]
