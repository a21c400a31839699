"""Editor context blocks as the LLM reads them."""

from codecompanion_py.chat.context import with_context


def test_each_item_follows_the_message_fenced_with_its_language_and_label():
    text = with_context(
        "Explain #{buffer}",
        [
            {"kind": "buffer", "label": "calc.py (2 lines)", "filetype": "python", "content": "x = 1\ny = 2\n"},
            {"kind": "messages", "label": "Neovim's :messages", "content": "E492"},
        ],
    )
    assert text == (
        "Explain #{buffer}\n\nContext: calc.py (2 lines)\n```python\nx = 1\ny = 2\n```"
        "\n\nContext: Neovim's :messages\n```\nE492\n```"
    )


def test_content_cannot_close_its_fence_and_junk_items_are_skipped():
    text = with_context("see", [{"label": "md", "content": "a\n````\nb"}, {"label": "bad", "content": 3}, "x"])
    assert text == "see\n\nContext: md\n`````\na\n````\nb\n`````"
    assert with_context("plain", None) == "plain" and with_context("plain", []) == "plain"
