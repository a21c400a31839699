"""`/image` and `#{image:path}` in real Neovim: the picked image reaches each provider in
its own image format, and a file that is not an image is refused with the message kept."""

from __future__ import annotations

import base64

import pytest

from codecompanion_py.demo.server import Reply, ScriptedServer, ServerThread
from tests.e2e.test_chat import FIXTURES
from tests.e2e.test_chat_surface import notes

pytestmark = pytest.mark.nvim

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
DATA = base64.b64encode(PNG).decode()


def image_of(adapter: str, body: dict) -> object:
    """Where each provider's wire format carries an inline image."""
    if adapter == "openai_compatible":
        parts = [p for m in body["messages"] if isinstance(m["content"], list) for p in m["content"]]
        return next(p["image_url"]["url"] for p in parts if p["type"] == "image_url")
    if adapter == "anthropic":
        parts = [p for m in body["messages"] if isinstance(m["content"], list) for p in m["content"]]
        return next(p["source"] for p in parts if p["type"] == "image")
    if adapter == "gemini":
        return next(p["inlineData"] for c in body["contents"] for p in c["parts"] if "inlineData" in p)
    if adapter == "gemini_interactions":
        return next(c for s in body["input"] if s["type"] == "user_input" for c in s["content"] if c["type"] == "image")
    return next(m["images"] for m in body["messages"] if "images" in m)


EXPECTED = {
    "openai_compatible": f"data:image/png;base64,{DATA}",
    "anthropic": {"type": "base64", "media_type": "image/png", "data": DATA},
    "gemini": {"mimeType": "image/png", "data": DATA},
    "ollama": [DATA],
    "gemini_interactions": {"type": "image", "data": DATA, "mime_type": "image/png"},
}


@pytest.mark.parametrize(
    "adapter, fixture, content_type, override",
    [
        ("openai_compatible", "openai/text_streaming.txt", "text/event-stream", '{ env = { url = "%s" } }'),
        ("anthropic", "anthropic/thinking_streaming.txt", "text/event-stream", '{ url = "%s/v1/messages" }'),
        ("gemini", "gemini/text_streaming.txt", "text/event-stream", '{ url = "%s/v1beta/models/${model}:${method}" }'),
        ("ollama", "ollama/text_streaming.ndjson", "application/x-ndjson", '{ env = { url = "%s" } }'),
        (
            "gemini_interactions",
            "gemini_interactions/text_streaming.txt",
            "text/event-stream",
            '{ url = "%s/v1beta/interactions${stream}" }',
        ),
    ],
)
def test_an_image_reaches_each_provider_in_its_format(editor, tmp_path, adapter, fixture, content_type, override):
    (tmp_path / "shot.png").write_bytes(PNG)
    body = (FIXTURES / fixture).read_bytes()
    reply = Reply(headers={"content-type": content_type}, chunks=[body])
    with ServerThread(ScriptedServer.sequence([reply])) as server:
        editor.lua("vim.env.ANTHROPIC_API_KEY = 'k'; vim.env.GEMINI_API_KEY = 'k'; vim.env.OPENAI_API_KEY = 'k'")
        editor.setup(f"""{{ adapters = {{ http = {{ mine = function()
            return require("codecompanion_py.adapters").extend("{adapter}", {override % server.url})
          end }} }}, interactions = {{ chat = {{ adapter = "mine" }} }} }}""")
        editor.nvim.command(f"cd {tmp_path}")
        editor.nvim.command("CodeCompanionChat")
        editor.type_prompt("What is in #{image:shot.png}?")
        editor.nvim.input("<CR>")
        done = editor.wait_event("CodeCompanionChatDone")
        assert done["data"]["status"] == "success", editor.text()
        assert image_of(adapter, server.requests[0].json()) == EXPECTED[adapter]


def test_slash_image_picks_a_project_image_and_a_non_image_is_refused(editor, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "shot.png").write_bytes(PNG)
    (tmp_path / "notes.txt").write_text("not an image\n")
    body = (FIXTURES / "openai/text_streaming.txt").read_bytes()
    reply = Reply(headers={"content-type": "text/event-stream"}, chunks=[body])
    with ServerThread(ScriptedServer.sequence([reply])) as server:
        editor.setup(f"""{{ adapters = {{ http = {{ mine = function()
            return require("codecompanion_py.adapters").extend("openai_compatible", {{ env = {{ url = "{server.url}" }} }})
          end }} }}, interactions = {{ chat = {{ adapter = "mine" }} }} }}""")
        editor.lua("""_G.cc_notes = {}; vim.notify = function(msg) table.insert(_G.cc_notes, msg) end
          vim.ui.select = function(items, opts, on_choice) _G.cc_offered = items; on_choice(items[1], 1) end""")
        editor.nvim.command(f"cd {tmp_path}")
        editor.nvim.command("CodeCompanionChat")
        editor.nvim.command("normal! G")
        editor.nvim.options["completeopt"] = "menuone,noinsert"
        editor.nvim.input("ASee /ima<C-x><C-o>")
        editor.wait_for(lambda: editor.nvim.call("pumvisible") == 1, what="the completion menu")
        editor.nvim.input("<C-y><Esc>")
        editor.wait_for(lambda: editor.lines()[-1] == "See #{image:docs/shot.png}", what="the image inserted")
        assert editor.lua("return _G.cc_offered") == ["docs/shot.png", "Another path..."]
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone")
        assert image_of("openai_compatible", server.requests[0].json()) == EXPECTED["openai_compatible"]
        assert "> - <image>docs/shot.png</image>" in editor.lines()  # listed in the next message's block

        # a text file named as an image: refused, the message kept to edit
        editor.type_prompt("and #{image:notes.txt}")
        editor.nvim.input("<CR>")
        editor.wait_for(lambda: any("not an image" in n for n in notes(editor)), what="the refusal")
        assert len(server.requests) == 1
        assert editor.nvim.current.buffer.options["modifiable"] and editor.lines()[-1] == "and #{image:notes.txt}"


def test_a_model_without_vision_is_offered_no_image_and_sent_none(editor, tmp_path):
    """CodeCompanion's `opts.vision = false`: /image is not offered, `#{image:}` is refused with
    the message kept, and an image shared before the switch to such a model is left out."""
    (tmp_path / "shot.png").write_bytes(PNG)
    body = (FIXTURES / "openai/text_streaming.txt").read_bytes()
    replies = [Reply(headers={"content-type": "text/event-stream"}, chunks=[body]) for _ in range(2)]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        editor.setup(f"""{{ adapters = {{ http = {{
            seeing = function() return require("codecompanion_py.adapters").extend("openai_compatible",
              {{ env = {{ url = "{server.url}" }} }}) end,
            blind = function() return require("codecompanion_py.adapters").extend("openai_compatible",
              {{ env = {{ url = "{server.url}" }}, opts = {{ vision = false }} }}) end,
          }} }}, interactions = {{ chat = {{ adapter = "seeing" }} }} }}""")
        editor.lua("_G.cc_notes = {}; vim.notify = function(msg) table.insert(_G.cc_notes, msg) end")
        editor.nvim.command(f"cd {tmp_path}")
        editor.nvim.command("CodeCompanionChat")
        chat = editor.nvim.current.buffer.number
        editor.wait_event("CodeCompanionChatAdapter")
        offered = "return vim.tbl_map(function(i) return i.word end, require('codecompanion_py.chat.slash').items(" + (
            "require('codecompanion_py.chat').chats[...], '/ima'))"
        )
        assert editor.lua(offered, chat) == ["/image"]
        editor.type_prompt("What is in #{image:shot.png}?")
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone")
        assert image_of("openai_compatible", server.requests[0].json()) == EXPECTED["openai_compatible"]

        editor.lua(
            "require('codecompanion_py.rpc').notify('chat.set_adapter', { chat_id = ..., adapter = 'blind' })", chat
        )
        editor.wait_event("CodeCompanionChatAdapter", count=2)
        assert editor.lua(offered, chat) == []
        editor.lua(
            "require('codecompanion_py.chat.slash').run(require('codecompanion_py.chat').chats[...], 'image')", chat
        )
        assert any("/image is not available in this chat: its model does not read images" in n for n in notes(editor))

        editor.type_prompt("and #{image:shot.png}")
        editor.nvim.input("<CR>")
        editor.wait_for(
            lambda: any("does not read images (its opts.vision)" in n for n in notes(editor)), what="refused"
        )
        assert len(server.requests) == 1
        assert editor.lines()[-1] == "and #{image:shot.png}"  # kept to edit

        editor.nvim.command("normal! Gdd")
        editor.type_prompt("describe it again")
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone", count=2)
        sent = server.requests[1].json()["messages"]
        assert "image_url" not in str(sent)  # the earlier image is left out for this model
        assert "[an image, left out: this model does not read images]" in str(sent)
