"""Editor context in a message (`#{buffer}`, `#{selection}`...), in real Neovim: what the
server receives, what the chat shows, and a message that names what cannot be read."""

from __future__ import annotations

import json
import subprocess

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread
from tests.e2e.test_chat_surface import chat_config, notes, reply, send, setup

pytestmark = pytest.mark.nvim


def llm_requests(server) -> list:
    return [r for r in server.requests if r.method == "POST"]


def user_message(server, index: int) -> str:
    return [m["content"] for m in llm_requests(server)[index].json()["messages"] if m["role"] == "user"][-1]


def context_sent(server, index: int) -> list[str]:
    """The user messages of request `index` to the LLM that carry shared context, in order."""
    users = [m["content"] for m in llm_requests(server)[index].json()["messages"] if m["role"] == "user"]
    return [text for text in users if isinstance(text, str) and text.startswith("Context: ")]


def block(editor, buf: int) -> list[str]:
    """The context block the chat shows at the top of the user's last message."""
    lines = editor.lines(buf)
    last = len(lines) - 1 - lines[::-1].index("## Me")
    return [line for line in lines[last:] if line.startswith("> ")]


def test_each_kind_of_context_reaches_the_llm(editor, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n\nprint(add(1, 2))\n")
    (project / "notes.txt").write_text("remember the milk\n")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(["git", "add", "."], cwd=project, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"], cwd=project, check=True
    )
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n")
    replies = [reply(f"ok {i}") for i in range(1, 8)]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup(editor, server.url, chat_config("opts = { max_context_chars = 45 }"))
        editor.nvim.command(f"cd {project}")
        editor.nvim.command("edit notes.txt")
        editor.nvim.command("edit calc.py")
        editor.nvim.command("normal! 2GVj\x1b")  # select lines 2-3
        editor.lua(
            "vim.diagnostic.set(vim.api.nvim_create_namespace('t'), 0,"
            " {{ lnum = 1, col = 4, message = 'always 3?', severity = vim.diagnostic.severity.WARN }})"
        )
        editor.nvim.call("setqflist", [{"filename": "calc.py", "lnum": 4, "text": "the call"}])
        editor.nvim.command("CodeCompanionChat")
        chat = editor.nvim.current.buffer.number

        send(editor, "Look at #{buffer}", 1)
        assert user_message(server, 0) == "Look at #{buffer}"
        (sent,) = context_sent(server, 0)
        assert sent.startswith("Context: calc.py (4 lines), cut\n```python\ndef add(a, b):")
        assert "[... cut here: " in sent and "print(add(1, 2))" not in sent  # 45 characters at most
        assert block(editor, chat) == ["> Context:", "> - <buf>calc.py</buf> (diff)"]

        send(editor, "#{selection} and #{diagnostics} and #{quickfix}", 2)
        sent = "\n".join(context_sent(server, 1))
        assert "Context: calc.py lines 2-3\n```python\n    return a + b\n```" in sent
        assert "calc.py:2:5 WARN: always 3?\n    return a + b" in sent
        assert "calc.py:4: the call" in sent and "Context: the quickfix list (1 entry)" in sent

        send(editor, "#{buffer:notes.txt} #{diff}", 3)
        sent = "\n".join(context_sent(server, 2))
        assert "Context: notes.txt (1 line)\n```text\nremember the milk\n```" in sent
        assert "-    return a - b\n+    return a + b" in sent or "[... cut here" in sent

        send(editor, "#{viewport} #{messages}", 4)
        sent = "\n".join(context_sent(server, 3))
        assert "(visible)" in sent and "Context: Neovim's :messages" in sent

        # what cannot be read is said, and nothing is sent: the message stays to edit
        editor.type_prompt("#{terminal} please")
        editor.nvim.input("<CR>")
        editor.wait_for(lambda: any("#{terminal}: there is no terminal buffer" in n for n in notes(editor)), what="why")
        assert len(server.requests) == 4 and editor.lines(chat)[-1] == "#{terminal} please"
        assert editor.nvim.current.buffer.options["modifiable"]


def test_a_followed_buffer_sends_its_changes_and_a_removed_item_leaves_the_requests(editor, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "app.py").write_text("one = 1\ntwo = 2\nthree = 3\n")
    (project / "big.txt").write_text("alpha\n")
    replies = [reply(f"ok {i}") for i in range(1, 6)]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup(editor, server.url, chat_config(""))
        editor.nvim.command(f"cd {project}")
        editor.nvim.command("edit big.txt")
        big = editor.nvim.current.buffer
        editor.nvim.command("edit app.py")
        app = editor.nvim.current.buffer
        editor.nvim.command("CodeCompanionChat")
        chat = editor.nvim.current.buffer.number
        send(editor, "Read #{buffer:app.py} and #{buffer:big.txt}{all}", 1)
        assert len(context_sent(server, 0)) == 2
        assert block(editor, chat) == ["> Context:", "> - <buf>app.py</buf> (diff)", "> - <buf>big.txt</buf> (all)"]

        # the user edits both buffers: app.py sends its diff, big.txt itself again
        app[1] = "two = 22"
        big[0] = "beta"
        send(editor, "and now?", 2)
        later = context_sent(server, 1)
        assert len(later) == 3, later
        diff = next(t for t in later if "what changed" in t)
        assert diff.startswith("Context: app.py (3 lines), what changed since it was last shared\n```diff\n")
        assert "-two = 2\n+two = 22" in diff
        assert sum("beta" in t for t in later) == 1 and not any("alpha" in t for t in later)  # replaced, not added

        # unchanged: nothing is sent again
        send(editor, "thanks", 3)
        assert context_sent(server, 2) == later

        # the user deletes app.py's line from the block: what it sent leaves the next request
        lines = editor.lines(chat)
        row = len(lines) - 1 - lines[::-1].index("> - <buf>app.py</buf> (diff)")  # the block of this message
        editor.nvim.api.buf_set_lines(chat, row, row + 1, False, [])
        send(editor, "forget app.py", 4)
        sent = context_sent(server, 3)
        assert sent and not any("app.py" in t for t in sent) and any("beta" in t for t in sent)
        assert block(editor, chat) == ["> Context:", "> - <buf>big.txt</buf> (all)"]
        app[0] = "one = 11"  # no longer followed
        send(editor, "bye", 5)
        assert not any("app.py" in t for t in context_sent(server, 4))


def test_hash_and_at_complete_context_and_tools_with_what_they_are(editor):
    with ServerThread(ScriptedServer.sequence([])) as server:
        setup(
            editor,
            server.url,
            chat_config('tools = { groups = { mine = { description = "My tools", tools = { "read_file" } } } }'),
        )
        editor.nvim.command("CodeCompanionChat")
        editor.nvim.command("normal! G")
        editor.nvim.input("Aexplain #{sel")
        editor.wait_for(lambda: editor.lines()[-1] == "explain #{sel", what="typed")
        complete = """local chat = require("codecompanion_py.chat")
          local start = chat.omnifunc(1, "")
          local line = vim.api.nvim_get_current_line()
          return { start, chat.omnifunc(0, line:sub(start + 1, vim.api.nvim_win_get_cursor(0)[2])) }"""
        start, items = editor.lua(complete)
        assert start == len("explain ") and [i["word"] for i in items] == ["#{selection}"]
        editor.nvim.input("<C-u>use @{")
        editor.wait_for(lambda: editor.lines()[-1] == "use @{", what="typed")
        start, items = editor.lua(complete)
        words = {i["word"]: i["menu"] for i in items}
        assert start == len("use ") and words["@{mine}"] == "My tools" and words["@{read_file}"] == "tool"
        editor.nvim.input("<C-x><C-o>")  # Neovim's own completion of the chat uses the same function
        editor.wait_for(lambda: editor.nvim.call("pumvisible") == 1, what="the completion menu")


ANSWER_FIRST = """
_G.cc_prompts = {}
vim.ui.select = function(items, opts, on_choice)
  table.insert(_G.cc_prompts, { prompt = opts.prompt, items = items })
  on_choice(items[1], 1)
end
"""


def test_slash_commands_complete_run_and_share_what_they_pick(editor, tmp_path):
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("print('hi')\n")
    with ServerThread(ScriptedServer.sequence([reply("seen")])) as server:
        setup(editor, server.url, chat_config(""))
        editor.lua(ANSWER_FIRST)
        editor.nvim.command(f"cd {project}")
        editor.nvim.command("CodeCompanionChat")
        editor.nvim.command("normal! G")
        editor.nvim.options["completeopt"] = "menuone,noinsert"  # a menu even for one match, as many users set
        editor.nvim.input("ARead /fi<C-x><C-o>")
        editor.wait_for(lambda: editor.nvim.call("pumvisible") == 1, what="the completion menu")
        editor.nvim.input("<C-y><Esc>")  # accept /file: it runs, the picker answers src/app.py
        editor.wait_for(lambda: editor.lines()[-1] == "Read #{file:src/app.py}", what="the file inserted")
        assert editor.lua("return _G.cc_prompts")[0] == {"prompt": "File", "items": ["src/app.py"]}
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone")
        assert user_message(server, 0) == "Read #{file:src/app.py}"
        assert context_sent(server, 0) == ["Context: src/app.py (1 line)\n```python\nprint('hi')\n```"]
        start, items = editor.lua("local chat = require('codecompanion_py.chat') return { 0, chat.omnifunc(0, '/') }")
        words = [i["word"] for i in items]  # /mode and /resume: agents only
        assert words == [
            "/buffer", "/commit", "/compact", "/explain", "/fetch", "/file", "/fork", "/help", "/image", "/lsp", "/mcp",
            "/now", "/rename", "/rewind", "/rules", "/share", "/symbols",
        ]  # fmt: skip


def test_an_agent_gets_a_shared_buffer_as_a_resource_of_its_file(editor, tmp_path):
    from tests.e2e.test_acp import open_agent_chat

    project = tmp_path / "proj"
    project.mkdir()
    (project / "notes.txt").write_text("on disk\n")
    log = tmp_path / "agent.log"
    editor.nvim.command(f"edit {project / 'notes.txt'}")
    editor.nvim.current.buffer[0] = "unsaved edit"  # the agent gets the text as the editor has it
    open_agent_chat(editor, project, "#{buffer:notes.txt} and #{quickfix} please", env_lua=f'FAKE_AGENT_LOG = "{log}"')
    editor.wait_event("CodeCompanionChatDone")
    prompts = [
        json.loads(line)["params"]["prompt"] for line in log.read_text().splitlines() if '"session/prompt"' in line
    ]
    blocks = prompts[-1]
    resource = next(b["resource"] for b in blocks if b["type"] == "resource")
    assert resource == {"uri": (project / "notes.txt").as_uri(), "text": "unsaved edit", "mimeType": "text/plain"}
    assert any(b["type"] == "text" and b["text"].startswith("Context: the quickfix list") for b in blocks)
