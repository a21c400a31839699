"""Saved chats on disk: written whole or not at all, newest first, pruned, and a damaged
file skipped."""

from codecompanion_py.chat.history import HistoryStore, Record, title_of, transcript
from codecompanion_py.messages import Message, ToolCall, ToolResultPart


def record(store_id: str, updated: float, *messages: Message) -> Record:
    return Record(
        id=store_id, title=title_of(messages), adapter="openai", model="m", updated=updated, messages=list(messages)
    )


def test_a_chat_round_trips_with_its_tool_turns(tmp_path):
    store = HistoryStore(tmp_path)
    call = ToolCall(id="c1", name="read_file", arguments={"filepath": "a.py"})
    messages = (
        Message.of("user", "Read a.py\nplease"),
        Message(role="assistant", parts=(call,)),
        Message(role="tool", parts=(ToolResultPart(tool_call_id="c1", name="read_file", content="x = 1"),)),
        Message.of("assistant", "It sets x."),
    )
    store.save(record("one", 1.0, *messages))
    loaded = store.load("one")
    assert loaded.messages == list(messages) and loaded.title == "Read a.py"
    assert transcript(loaded.messages) == (
        [
            {"role": "user", "text": "Read a.py\nplease"},
            {"role": "assistant", "text": "It sets x."},
        ],
        0,
    )
    assert [p.name for p in tmp_path.iterdir()] == ["one.json"]  # no temporary file left


def test_newest_first_pruned_and_a_damaged_file_skipped(tmp_path):
    store = HistoryStore(tmp_path, keep=2)
    for i in range(3):
        store.save(record(f"c{i}", float(i), Message.of("user", f"message {i}")))
    (tmp_path / "broken.json").write_text("{not json")
    listed = store.summaries()
    assert [s["id"] for s in listed if "unreadable" not in s] == ["c2", "c1"]  # c0 pruned
    [broken] = [s["title"] for s in listed if "unreadable" in s]
    assert broken.startswith("unreadable: not a saved chat (JSON is malformed") and broken.endswith("(broken.json)")
    assert title_of([Message.of("user", "x" * 100)]).endswith("…")
