"""Shared context as the LLM reads it, and as it leaves the history when the user removes it."""

import base64

import pytest

from codecompanion_py.chat import context
from codecompanion_py.chat.context import ContextItem, items_of
from codecompanion_py.errors import ConfigError
from codecompanion_py.messages import ImagePart, Message

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def test_each_item_is_a_message_of_its_own_fenced_with_its_language_and_label():
    history = [Message.of("user", "earlier")]
    context.add(
        history,
        items_of(
            [
                {
                    "id": "<buf>calc.py</buf>",
                    "kind": "buffer",
                    "label": "calc.py (2 lines)",
                    "filetype": "python",
                    "content": "x = 1\ny = 2\n",
                    "bufnr": 3,
                },  # what Lua keeps for itself is ignored
                {"id": "<messages>m</messages>", "kind": "messages", "label": "Neovim's :messages", "content": "E492"},
            ]
        ),
    )
    assert [m.text for m in history[1:]] == [
        "Context: calc.py (2 lines)\n```python\nx = 1\ny = 2\n```",
        "Context: Neovim's :messages\n```\nE492\n```",
    ]
    assert [m.context_id for m in history] == [None, "<buf>calc.py</buf>", "<messages>m</messages>"]


def test_content_cannot_close_its_fence():
    assert (
        context.text_of(ContextItem(id="x", label="md", content="a\n````\nb"))
        == "Context: md\n`````\na\n````\nb\n`````"
    )


def test_a_followed_buffer_sends_its_changes_after_or_its_whole_text_in_place():
    history: list[Message] = []
    context.add(history, [ContextItem(id="<buf>a</buf>", kind="buffer", label="a", content="one")])
    context.add(
        history, [ContextItem(id="<buf>a</buf>", kind="buffer", label="a", content="-one\n+two", update="diff")]
    )
    assert len(history) == 2 and "what changed since it was last shared\n```diff\n-one\n+two" in history[1].text
    context.add(history, [ContextItem(id="<buf>a</buf>", kind="buffer", label="a", content="three", update="all")])
    assert [m.text for m in history] == ["Context: a (updated)\n```\nthree\n```"]


def test_removing_an_item_removes_everything_it_sent():
    history = [Message.of("user", "q")]
    context.add(history, [ContextItem(id="<buf>a</buf>", content="1"), ContextItem(id="<rules>R</rules>", content="2")])
    context.add(history, [ContextItem(id="<buf>a</buf>", content="d", update="diff")])
    kept = context.without(history, ["<buf>a</buf>"])
    assert [m.context_id for m in kept] == [None, "<rules>R</rules>"]
    assert context.shared(history) == [
        {"id": "<buf>a</buf>", "label": "context"},
        {"id": "<rules>R</rules>", "label": "context"},
    ]


def test_an_image_goes_as_an_image_part_and_a_bad_one_is_refused(tmp_path):
    image = tmp_path / "shot.png"
    image.write_bytes(PNG)
    message = context.message_of(
        ContextItem(id="<image>shot.png</image>", kind="image", label="shot.png", path=str(image))
    )
    part = message.parts[1]
    assert isinstance(part, ImagePart) and part.media_type == "image/png" and base64.b64decode(part.data) == PNG
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ConfigError, match="not an image"):
        context.message_of(ContextItem(id="i", kind="image", path=str(tmp_path / "notes.txt")))
    with pytest.raises(ConfigError, match="cannot be read"):
        context.message_of(ContextItem(id="i", kind="image", path=str(tmp_path / "gone.png")))
    with pytest.raises(ConfigError, match="cannot read"):
        items_of([{"kind": "buffer"}])  # no id: a bug on the Lua side, said as such
