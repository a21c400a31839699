"""The engine's own host (`nvim/host.py`, the job the plugin starts): what reaches it on
Neovim's channel besides the engine's calls."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("pynvim")

from codecompanion_py.nvim.host import Host  # noqa: E402


class Told:
    def __init__(self) -> None:
        self.notes: list[tuple[str, str]] = []

    def notify(self, message: str, level: str = "ERROR") -> None:
        self.notes.append((message, level))


def test_a_lua_error_in_what_the_engine_sent_is_told_as_a_lua_error():
    """Neovim answers a failed `exec_lua` notification with `nvim_error_event`: the user is
    told what failed in Lua, not that the engine got an unknown notification."""
    host = Host.__new__(Host)
    told = Told()
    host.engine = SimpleNamespace(channel=told)  # type: ignore[assignment]
    host.on_notification("nvim_error_event", [0, "render.lua:9: attempt to get length of a nil value"])
    host.on_notification("something_else", [])
    assert told.notes == [
        (
            "CodeCompanion: a Lua error while showing the engine's work: render.lua:9: attempt to get length of a nil value",
            "ERROR",
        ),
        ("CodeCompanion: the engine got an unknown RPC notification 'something_else'", "ERROR"),
    ]
