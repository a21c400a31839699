"""Saved chats enter the engine through one door (`chat/history.py`'s `read_saved`), in real
Neovim through `:CodeCompanionHistory`:

* a corrupt file (bytes that are not UTF-8, JSON nested 100000 deep, truncated JSON, a file
  over the 20 MB cap, a FIFO) is listed as "unreadable: <reason>", the others list and open
  as ever; before, one such file made the whole list fail;
* a chat whose adapter is gone from the config reopens with the default one, after a
  one-line notice, and carries on with its whole history;
* a long saved chat shows its latest turns only, and the editor stays responsive.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import msgspec
import pytest

from codecompanion_py.chat.history import Record
from codecompanion_py.demo.server import ScriptedServer, ServerThread
from codecompanion_py.messages import Message
from tests.e2e import conftest as e2e
from tests.e2e.test_chat_surface import chat_config, reply, send, setup

pytestmark = pytest.mark.nvim
editor, nvim_home = e2e.editor, e2e.nvim_home  # the fixtures: a real headless Neovim with the plugin

PICK = """
_G.cc_picked = {}
vim.ui.select = function(items, opts, on_choice)
  local labels = vim.tbl_map(opts.format_item, items)
  table.insert(_G.cc_picked, labels)
  for i, label in ipairs(labels) do
    if label:find(_G.cc_want, 1, true) then return on_choice(items[i], i) end
  end
  on_choice(nil, nil)
end
"""


def saved_chat(folder: Path, chat_id: str, title: str, adapter: str = "testllm", turns: int = 1, size: int = 0) -> None:
    messages = []
    for i in range(turns):
        messages += [Message.of("user", f"{title} question {i}"), Message.of("assistant", f"answer {i}" + "x" * size)]
    record = Record(id=chat_id, title=title, adapter=adapter, updated=time.time(), messages=messages)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{chat_id}.json").write_bytes(msgspec.json.encode(record))


def open_history(editor, folder: Path, url: str) -> None:
    editor.lua(f"require('codecompanion_py.rpc').history_dir = function() return '{folder}' end")
    setup(editor, url, chat_config(""))
    editor.lua(PICK)


def pick(editor, want: str) -> list[str]:
    editor.lua("_G.cc_want = ...", want)
    editor.nvim.command("CodeCompanionHistory")
    return editor.lua("return _G.cc_picked")[-1]


def test_corrupt_saved_chats_are_listed_as_unreadable_and_the_others_open(editor, tmp_path):
    folder = tmp_path / "history"
    saved_chat(folder, "good", "A good chat")
    good = json.loads((folder / "good.json").read_text())
    (folder / "latin1.json").write_bytes(
        json.dumps({**good, "id": "latin1", "title": "Caf_"}).encode().replace(b"_", b"\xe9")
    )
    (folder / "deep.json").write_bytes(
        b'{"id": "deep", "title": "t", "adapter": "a", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    )
    (folder / "cut.json").write_bytes((folder / "good.json").read_bytes()[:50])
    with open(folder / "huge.json", "wb") as huge:  # sparse: 25 MB that take no room
        huge.truncate(25 * 1024 * 1024)
    if sys.platform != "win32":
        os.mkfifo(folder / "pipe.json")
    with ServerThread(ScriptedServer.sequence([reply("Goes on.")])) as server:
        open_history(editor, folder, server.url)
        labels = pick(editor, "A good chat")
        editor.wait_for(lambda: "A good chat question 0" in editor.text(), what="the good chat reopened")
        send(editor, "more", 1)
        assert "Goes on." in editor.text()

    joined = "\n".join(labels)
    assert any(label.startswith("A good chat  (testllm") for label in labels), joined
    assert any(label.startswith("Caf\ufffd  (testllm") for label in labels), joined  # replaced, listed
    assert "unreadable: nested too deep (deep.json)" in joined
    assert "(cut.json)" in joined and "unreadable: not a saved chat" in joined
    assert "unreadable: too large to open (25 MB; the limit is 20 MB) (huge.json)" in joined
    if sys.platform != "win32":
        assert "unreadable: not a regular file (pipe.json)" in joined
    assert len(labels) == 6 - (sys.platform == "win32")

    # picking an unreadable one: one line saying why, and nothing else happens
    before = len(editor.nvim.buffers)
    pick(editor, "(huge.json)")
    notes = editor.lua("return _G.cc_notes")
    assert any("the saved chat huge cannot be read: too large to open" in note for note in notes), notes
    assert len(editor.nvim.buffers) == before


def test_a_chat_whose_adapter_is_gone_reopens_with_the_default_one(editor, tmp_path):
    folder = tmp_path / "history"
    saved_chat(folder, "old", "An old chat", adapter="removed_llm")
    with ServerThread(ScriptedServer.sequence([reply("Still here.")])) as server:
        open_history(editor, folder, server.url)
        pick(editor, "An old chat")
        editor.wait_for(lambda: "An old chat question 0" in editor.text(), what="the chat reopened")
        editor.wait_event("CodeCompanionChatAdapter")
        send(editor, "and now?", 1)
        sent = [(m["role"], m["content"]) for m in server.requests[0].json()["messages"] if m["role"] != "system"]
    assert sent == [("user", "An old chat question 0"), ("assistant", "answer 0"), ("user", "and now?")]
    notes = [n for n in editor.lua("return _G.cc_notes") if "removed_llm" in n]
    assert len(notes) == 1 and "it goes on with testllm" in notes[0] and "\n" not in notes[0]
    assert "Still here." in editor.text()


def test_a_long_saved_chat_shows_its_latest_turns_and_sends_them_all(editor, tmp_path):
    folder = tmp_path / "history"
    saved_chat(folder, "long", "A long chat", turns=400, size=20_000)  # 8 MB of replies
    with ServerThread(ScriptedServer.sequence([reply("Read it all.")])) as server:
        open_history(editor, folder, server.url)
        pick(editor, "A long chat")
        editor.wait_for(lambda: "answer 399" in editor.text(), timeout=30, what="the chat reopened")
        lines = editor.lines()
        assert lines[0].startswith("> (") and "earlier messages are not shown; the LLM still has them" in lines[0]
        assert len(editor.text()) < 300_000
        send(editor, "summarise", 1)
        sent = server.requests[0].json()["messages"]
    assert len([m for m in sent if m["role"] == "user"]) == 401  # every turn went to the LLM


# --- the engine restarts ------------------------------------------------------------------------


@pytest.fixture
def own_host(tmp_path, monkeypatch):
    """Headless Neovim with the plugin and no remote-plugin manifest: the engine runs in the
    plugin's own RPC job (this Python, importing this checkout), which a test can kill."""
    import pynvim

    from codecompanion_py.demo.launch import nvim_binary, write_init

    for name in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    init = write_init(tmp_path / "init.lua")
    nvim = pynvim.attach("child", argv=[nvim_binary(), "--embed", "--headless", "-u", str(init)])
    pid = nvim.call("getpid")
    ed = e2e.Editor(nvim)
    ed.lua(e2e.RECORD_EVENTS)
    try:
        yield ed
    finally:
        e2e.quit_nvim(nvim, pid)


def test_after_the_engine_is_killed_the_next_message_carries_the_earlier_turns(own_host, tmp_path):
    import signal

    editor = own_host
    replies = [reply("Paris."), reply("Blue."), reply("The Seine.")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup(editor, server.url, chat_config(f'opts = {{ python = "{sys.executable}" }},'))
        editor.nvim.command("CodeCompanionChat")
        send(editor, "Capital of France?", 1)
        send(editor, "Sky colour?", 2)
        host = editor.lua("return require('codecompanion_py.rpc').host()")
        assert host is not None, "the engine runs in its own job"
        os.kill(host["pid"], signal.SIGKILL)
        editor.wait_for(
            lambda: any("the Python engine stopped" in n for n in editor.lua("return _G.cc_notes")),
            what="the engine's exit to be noticed",
        )
        send(editor, "Its river?", 3)
        sent = [(m["role"], m["content"]) for m in server.requests[2].json()["messages"] if m["role"] != "system"]
        new_host = editor.lua("return require('codecompanion_py.rpc').host()")
    assert new_host["pid"] != host["pid"]
    assert sent == [
        ("user", "Capital of France?"),
        ("assistant", "Paris."),
        ("user", "Sky colour?"),
        ("assistant", "Blue."),
        ("user", "Its river?"),
    ]
    assert "The Seine." in editor.text()


def test_a_chat_resumed_without_a_readable_saved_chat_starts_afresh(tmp_path):
    """The engine may stop before a chat's first save, or its file may be damaged: the chat
    opens again all the same (with a notice for a damaged one), as a new saved chat."""
    from types import SimpleNamespace

    from codecompanion_py.chat.keeper import ChatKeeper

    folder = tmp_path / "history"
    folder.mkdir()
    (folder / "damaged.json").write_bytes(b'{"id": "damaged", "title": ')
    notes: list[str] = []
    settings = SimpleNamespace(editor={"history_dir": str(folder)})
    keeper = ChatKeeper(lambda: settings, lambda: None, lambda text, level: notes.append(text))  # type: ignore[arg-type,return-value]

    assert keeper.begin(1, None, "never-saved") is None and notes == []
    assert keeper.begin(2, None, "damaged") is None
    assert len(notes) == 1 and "earlier turns cannot be restored" in notes[0]
    assert keeper.saved_id(2) not in (None, "damaged")  # the damaged file is left as it is
    with pytest.raises(Exception, match="cannot be read"):  # picked by the user: an error
        keeper.begin(3, "damaged", None)


def test_a_saved_chats_checkpoints_that_would_reach_git_as_commands_are_dropped(tmp_path):
    """A checkpoint's ref name and object ids go to `git update-ref --stdin`: a saved file with
    a newline in one (a command of its own: `delete refs/heads/main`) loses that checkpoint,
    never the chat."""
    from types import SimpleNamespace

    from codecompanion_py.chat.keeper import ChatKeeper

    folder = tmp_path / "history"
    folder.mkdir()
    good = {"ref": "00001700000000-abcdef", "root": str(tmp_path), "header": 1, "keep": 0, "before": "a" * 40}
    hostile = [
        {**good, "ref": "00001700000000-abcdef\ndelete refs/heads/main"},
        {**good, "before": "a" * 40 + "\ndelete refs/heads/main"},
        {**good, "after": "HEAD"},
        {**good, "root": "relative/path"},
    ]
    record = {"id": "c", "title": "t", "adapter": "a", "messages": [], "checkpoints": [good, *hostile]}
    (folder / "c.json").write_text(json.dumps(record))
    settings = SimpleNamespace(editor={"history_dir": str(folder)})
    keeper = ChatKeeper(lambda: settings, lambda: None, lambda text, level: None)  # type: ignore[arg-type,return-value]
    assert keeper.begin(1, "c", None) is not None
    assert [c.ref for c in keeper.checkpoints(1)] == [good["ref"]]
