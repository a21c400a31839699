"""Rules files in real Neovim: CodeCompanion's default group loads into every chat with
its `@file` imports (a loop sent once, a missing import said), is listed in the chat's
context block and reaches the LLM; `gM` removes it and `/rules` adds a group."""

from __future__ import annotations

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread
from tests.e2e.test_chat_surface import chat_config, notes, reply, send, setup
from tests.e2e.test_context import block, context_sent

pytestmark = pytest.mark.nvim


def open_chat_in(editor, project) -> int:
    """`:CodeCompanionChat` with `project` as Neovim's working directory; the chat's buffer."""
    editor.nvim.command(f"cd {project}")
    editor.nvim.command("CodeCompanionChat")
    return editor.nvim.current.buffer.number


def test_rules_load_with_imports_are_listed_sent_removed_and_added(editor, tmp_path):
    project = tmp_path / "proj"
    (project / "docs").mkdir(parents=True)
    (project / "AGENTS.md").write_text("Use tabs.\n@docs/style.md\n")  # no parser: not an import
    (project / "CLAUDE.md").write_text("Be brief.\n@docs/style.md\n@missing.md\n```\n@not/an/import.md\n```\n")
    (project / "docs" / "style.md").write_text("Style: PEP 8.\n@../CLAUDE.md\n")  # a loop back
    (project / "extra.md").write_text("Extra rule.\n")
    home = tmp_path / "home"
    home.mkdir()
    with ServerThread(ScriptedServer.sequence([reply(f"ok {i}") for i in range(3)])) as server:
        editor.lua(f"vim.env.HOME = '{home}'")
        setup(
            editor,
            server.url,
            chat_config("") + ' rules = { mine = { description = "My extras", files = { "extra.md" } } },',
        )
        chat = open_chat_in(editor, project)
        assert block(editor, chat) == [
            "> Context:",
            "> - <rules>AGENTS.md</rules>",
            "> - <rules>CLAUDE.md</rules>",
            "> - <rules>docs/style.md</rules>",
        ]
        said = "\n".join(notes(editor))
        assert "CLAUDE.md imports missing.md, which does not exist" in said
        assert "docs/style.md imports CLAUDE.md again" in said and "not/an/import" not in said

        send(editor, "hello", 1)
        sent = context_sent(server, 0)
        assert [t.split("\n")[0] for t in sent] == [
            "Context: AGENTS.md",
            "Context: CLAUDE.md",
            "Context: docs/style.md",
        ]
        assert "Style: PEP 8." in sent[2]
        body = server.requests[0].json()["messages"]
        assert body[-1] == {"role": "user", "content": "hello"}  # the rules come before the message

        editor.nvim.command("normal! G")
        editor.nvim.input("gM")
        editor.wait_for(lambda: block(editor, chat) == [], what="the rules gone from the block")
        send(editor, "again", 2)
        assert context_sent(server, 1) == []

        editor.lua("vim.ui.select = function(items, opts, on_choice) on_choice('mine', 1) end")
        editor.nvim.command("normal! G")
        editor.nvim.options["completeopt"] = "menuone,noinsert"
        editor.nvim.input("A/rul<C-x><C-o>")
        editor.wait_for(lambda: editor.nvim.call("pumvisible") == 1, what="the completion menu")
        editor.nvim.input("<C-y><Esc>")
        editor.wait_for(lambda: block(editor, chat) == ["> Context:", "> - <rules>extra.md</rules>"], what="listed")
        send(editor, "with extras", 3)
        assert context_sent(server, 2) == ["Context: extra.md\n```markdown\nExtra rule.\n```"]


def test_rule_entries_name_directories_globs_and_patterns_as_in_codecompanion(editor, tmp_path):
    project = tmp_path / "proj"
    for folder in ("docs/api", "guides", "team", "node_modules/pkg"):
        (project / folder).mkdir(parents=True)
    (project / "docs" / "a.md").write_text("Doc A.\n")
    (project / "docs" / "api" / "b.md").write_text("Doc B.\n")
    (project / "docs" / "skip.txt").write_text("not a match\n")
    (project / "guides" / "one.md").write_text("Guide one.\n")
    (project / "team" / "x.rules").write_text("Team rule.\n")
    (project / "node_modules" / "pkg" / "c.md").write_text("never read\n")
    (project / "top.md").write_text("Top.\n")
    home = tmp_path / "home"
    home.mkdir()
    with ServerThread(ScriptedServer.sequence([reply("ok")])) as server:
        editor.lua(f"vim.env.HOME = '{home}'")
        rules = """rules = { opts = { chat = { autoload = "mine" } }, mine = { description = "Mine", files = {
            "docs/**/*.md",                        -- a glob
            "guides",                              -- a directory: its files
            { path = ".", files = { "*.rules", "top.md" } },  -- a directory with name patterns
            { path = "nowhere", files = "*.md" },  -- not a directory: said
          } } },"""
        setup(editor, server.url, chat_config("") + rules)
        chat = open_chat_in(editor, project)
        assert block(editor, chat) == [
            "> Context:",
            "> - <rules>docs/a.md</rules>",
            "> - <rules>docs/api/b.md</rules>",
            "> - <rules>guides/one.md</rules>",
            "> - <rules>team/x.rules</rules>",
            "> - <rules>top.md</rules>",
        ]
        assert "nowhere (a rule entry with `files`) is not a directory" in "\n".join(notes(editor))
        send(editor, "hello", 1)
        assert [t.split("\n")[0] for t in context_sent(server, 0)] == [
            "Context: docs/a.md",
            "Context: docs/api/b.md",
            "Context: guides/one.md",
            "Context: team/x.rules",
            "Context: top.md",
        ]


def test_a_project_without_rules_files_opens_a_chat_without_waiting_for_the_engine(editor, tmp_path):
    """The engine finds a group's files, but a plain name that is not there is left out in
    Lua first: nothing is asked, so the chat opens while the engine still starts."""
    project = tmp_path / "empty"
    project.mkdir()
    with ServerThread(ScriptedServer.sequence([reply("ok")])) as server:
        setup(editor, server.url, chat_config(""))
        editor.lua("""local rpc = require('codecompanion_py.rpc'); _G.asked = {}
          local request = rpc.request
          rpc.request = function(method, payload) table.insert(_G.asked, method); return request(method, payload) end""")
        open_chat_in(editor, project)
        assert editor.lua("return _G.asked") == []
        (project / "AGENTS.md").write_text("Use tabs.\n")
        open_chat_in(editor, project)
        assert editor.lua("return _G.asked") == ["rules.read"]  # a file that is there: the engine reads it


def test_a_system_prompt_section_and_parsers_of_your_own_as_in_codecompanion(editor, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "RULES.md").write_text(
        "# Team\nUse tabs.\n\n## System Prompt\nYou are a terse reviewer.\n@skip.md\n\n## More\nKeep it short.\n"
    )
    (project / "notes.md").write_text("note one\n")
    (project / "inc.md").write_text("included here\n")
    (tmp_path / "outside.md").write_text("outside the project\n")
    (project / "broken.md").write_text("stays as it is\n")
    (tmp_path / "upper.lua").write_text(
        "return function(file) return { content = file.content:upper(), system_prompt = 'From ' .. file.filename,"
        " meta = { included_files = { 'inc.md', '../outside.md' } } } end\n"
    )
    rules = f"""rules = {{
      parsers = {{ upper = "{tmp_path / "upper.lua"}", boom = function() return function() error("kaput") end end }},
      mine = {{ description = "Mine", files = {{
        {{ path = "RULES.md", parser = "codecompanion" }}, {{ path = "notes.md", parser = "upper" }},
        {{ path = "broken.md", parser = "boom" }} }} }},
      opts = {{ chat = {{ autoload = "mine" }} }},
    }},"""
    with ServerThread(ScriptedServer.sequence([reply("ok")])) as server:
        setup(editor, server.url, chat_config("") + rules)
        open_chat_in(editor, project)
        said = "\n".join(notes(editor))
        assert "the boom parser failed on broken.md: " in said and "kaput" in said
        assert "outside.md" in said and "not read" in said  # an included file stays inside the project
        send(editor, "hello", 1)
        body = server.requests[0].json()["messages"]
        systems = [m["content"] for m in body if m["role"] == "system"]
        assert "You are a terse reviewer." in systems and "From notes.md" in systems
        assert not any("skip.md" in text for text in systems)
        sent = "\n".join(context_sent(server, 0))
        assert "Use tabs." in sent and "Keep it short." in sent and "terse reviewer" not in sent
        assert "NOTE ONE" in sent and "included here" in sent and "outside the project" not in sent
        assert "stays as it is" in sent
