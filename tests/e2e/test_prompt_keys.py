"""CodeCompanion 19's built-in prompts this plugin lacked, and the markdown prompt keys
`pre_hook`, `context` and `mcp_servers`, in real Neovim against a local server: the Code
workflow (the user finishes its first step, the next two go by themselves), Upgrade Tools
(the tool's buffer sent with it), the Inline prompt (asked for, then written into the
buffer); a prompt's context listed and sent, its MCP servers in place of the defaults (and
`none`), a pre_hook's buffer written into, and a project's pre_hook run only once trusted."""

from __future__ import annotations

import sys

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread
from tests.e2e.test_chat_surface import chat_config, notes, reply, send, setup
from tests.e2e.test_inline import answer
from tests.e2e.test_mcp import FAKE
from tests.e2e.test_prompts import PICK_NAMED, messages

pytestmark = pytest.mark.nvim


def prompt_file(folder, name: str, front: str, body: str = "## user\n\nGo.\n") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(f"---\n{front}---\n\n{body}")


def pick(editor, label: str) -> None:
    editor.lua(PICK_NAMED)
    editor.lua("_G.cc_pick = ...", label)


def test_the_code_workflow_waits_for_the_users_task_then_reviews_and_revises(editor, tmp_path):
    (tmp_path / "add.py").write_text("x = 1\n")
    replies = [reply("def add(a, b): return a + b"), reply("Name it better."), reply("def plus(a, b): ...")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup(editor, server.url, chat_config(""))
        editor.nvim.command(f"edit {tmp_path / 'add.py'}")
        pick(editor, "Code workflow")
        editor.nvim.command("CodeCompanionActions")
        editor.wait_for(lambda: editor.lines()[-1] == "I want you to", what="the first step, not sent")
        assert server.requests == []
        send(editor, " write an add function", 1)
        editor.wait_event("CodeCompanionChatDone", count=3)
        first, second, third = (messages(server, i) for i in range(3))
        assert any(m["role"] == "system" and "careful python engineer" in m["content"] for m in first)
        assert first[-1]["content"] == "I want you to write an add function"
        assert second[-1]["content"].startswith("Now review the code you wrote")
        assert third[-1]["content"].startswith("Apply those improvements")


def test_upgrade_tools_waits_then_sends_the_tools_buffer(editor, tmp_path):
    tool = tmp_path / "my_tool.lua"
    tool.write_text("return { cmds = { function(self, args, input) return input end } }\n")
    with ServerThread(ScriptedServer.sequence([reply("Ported.")])) as server:
        setup(editor, server.url, chat_config(""))
        editor.nvim.command(f"edit {tool}")
        pick(editor, "Upgrade Tools")
        editor.nvim.command("CodeCompanionActions")
        editor.wait_for(lambda: editor.lines()[-1] == "My tool is in #{buffer}.", what="the prompt, not sent")
        assert server.requests == []
        editor.nvim.command("normal! G")
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone")
        sent = "\n".join(str(m["content"]) for m in messages(server, 0))
        assert "opts.output_cb" in sent and "function(self, args, input) return input end" in sent


def test_the_inline_prompt_asks_then_writes_into_the_buffer(editor, tmp_path):
    path = tmp_path / "page.py"
    path.write_text("x = 1\n")
    with ServerThread(ScriptedServer.sequence([answer("PLACEMENT: add\n```python\ny = 2\n```\n")])) as server:
        setup(editor, server.url, chat_config(""))
        editor.nvim.command(f"edit {path}")
        editor.lua("vim.ui.input = function(opts, on_done) _G.cc_asked = opts.prompt; on_done('add y') end")
        pick(editor, "Inline prompt")
        editor.nvim.command("CodeCompanionActions")
        editor.wait_event("CodeCompanionInlineFinished")
        assert editor.lua("return _G.cc_asked") == "Inline prompt: "
        sent = messages(server, 0)
        assert any(
            "senior python developer" in str(m["content"]) and "raw code only" in str(m["content"]) for m in sent
        )
        assert "add y" in sent[-1]["content"]
        editor.wait_for(lambda: "y = 2" in editor.lines(), what="the code in the buffer")


def test_a_prompts_context_and_rules_are_listed_and_sent_with_it(editor, tmp_path):
    work = tmp_path / "work"  # the project; the prompts are the user's own, outside it
    work.mkdir()
    (work / "notes.txt").write_text("NOTE-ALPHA\n")
    (work / "RULES.md").write_text("RULE-BETA\n")
    (work / "shapes.lua").write_text("local M = {}\nfunction M.area(r)\n  return r * r\nend\nreturn M\n")
    prompts = tmp_path / "prompts"
    prompt_file(
        prompts,
        "ctx.md",
        "name: With context\ninteraction: chat\nopts:\n  alias: withctx\n  auto_submit: true\n"
        "context:\n  - type: file\n    path:\n      - notes.txt\n  - type: symbols\n    path: shapes.lua\n"
        "  - type: nothing\nrules:\n  - mine\n",
        "## user\n\nUse the context.\n",
    )
    with ServerThread(ScriptedServer.sequence([reply("Used.")])) as server:
        setup(
            editor,
            server.url,
            chat_config("")
            + f'prompt_library = {{ markdown = {{ dirs = {{ "{prompts}" }} }} }},'
            + ' rules = { mine = { description = "Mine", files = { "RULES.md" } } },',
        )
        editor.nvim.command(f"cd {work}")
        editor.nvim.command("CodeCompanion /withctx")
        editor.wait_event("CodeCompanionChatDone")
        sent = "\n".join(str(m["content"]) for m in messages(server, 0))
        assert "NOTE-ALPHA" in sent and "RULE-BETA" in sent  # its rules too
        assert "area" in sent  # the outline of shapes.lua
        assert messages(server, 0)[-1]["content"] == "Use the context."
        assert "notes.txt" in editor.text()  # listed in the chat's context block
        assert any("context type" in n and "nothing" in n for n in notes(editor)), notes(editor)


@pytest.mark.parametrize("servers", ["fake", "none"])
def test_a_prompts_mcp_servers_replace_the_default_ones(editor, tmp_path, servers):
    prompts = tmp_path / "prompts"
    named = "\n  - fake\n" if servers == "fake" else " none\n"
    prompt_file(
        prompts,
        "mcp.md",
        f"name: With MCP\ninteraction: chat\nopts:\n  alias: withmcp\n  auto_submit: true\nmcp_servers:{named}",
    )
    default = "" if servers == "fake" else ', opts = { default_servers = { "fake" } }'
    with ServerThread(ScriptedServer.sequence([reply("ok")])) as server:
        setup(
            editor,
            server.url,
            chat_config("")
            + f'prompt_library = {{ markdown = {{ dirs = {{ "{prompts}" }} }} }},'
            + f'mcp = {{ servers = {{ fake = {{ cmd = {{ "{sys.executable}", "{FAKE}" }} }} }}{default} }},',
        )
        editor.nvim.command("CodeCompanion /withmcp")
        done = editor.wait_event("CodeCompanionChatDone", timeout=60)
        assert done["data"]["status"] == "success", editor.text()
        tools = {t["function"]["name"] for t in server.requests[0].json().get("tools") or []}
        assert ("fake_echo" in tools) == (servers == "fake"), tools


def test_a_pre_hooks_buffer_is_where_an_inline_prompt_writes(editor, tmp_path):
    prompts = tmp_path / "prompts"
    prompt_file(
        prompts,
        "html.md",
        "name: Boilerplate HTML\ninteraction: inline\npre_hook: hooks.scratch\nopts:\n  alias: html\n",
        "## user\n\nWrite HTML boilerplate.\n",
    )
    (prompts / "hooks.lua").write_text(
        "return { scratch = function()\n  local buf = vim.api.nvim_create_buf(true, false)\n"
        "  vim.api.nvim_set_current_buf(buf)\n  vim.bo[buf].filetype = 'html'\n  _G.cc_hooked = buf\n"
        "  return buf\nend }\n"
    )
    prompt_file(prompts, "bad.md", "name: Bad hook\ninteraction: chat\npre_hook: hooks.missing\nopts:\n  alias: bad\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    with ServerThread(ScriptedServer.sequence([answer("PLACEMENT: add\n```html\n<html></html>\n```\n")])) as server:
        setup(
            editor, server.url, chat_config("") + f'prompt_library = {{ markdown = {{ dirs = {{ "{prompts}" }} }} }},'
        )
        editor.nvim.command(f"edit {tmp_path / 'a.py'}")
        editor.nvim.command("CodeCompanion /html")
        editor.wait_event("CodeCompanionInlineFinished")
        hooked = editor.lua("return _G.cc_hooked")
        editor.wait_for(lambda: "<html></html>" in editor.lines(hooked), what="the code in the hook's buffer")
        assert editor.nvim.current.buffer.number == hooked
        assert "<html></html>" not in editor.text(editor.nvim.funcs.bufnr(str(tmp_path / "a.py")))

        editor.nvim.command("CodeCompanion /bad")
        assert any("Bad hook: pre_hook" in n and "hooks.missing" in n for n in notes(editor)), notes(editor)
        assert len(server.requests) == 1  # the prompt whose hook failed sent nothing


def test_a_projects_pre_hook_runs_only_once_the_project_is_trusted(editor, tmp_path):
    project = tmp_path / "repo"
    marker = tmp_path / "ran"
    prompt_file(
        project / ".prompts",
        "hooked.md",
        "name: Hooked\ninteraction: chat\npre_hook: setup.mark\nopts:\n  alias: hooked\n",
    )
    (project / ".prompts" / "setup.lua").write_text(
        f"return {{ mark = function() io.open({str(marker)!r}, 'w'):close() end }}\n"
    )
    with ServerThread(ScriptedServer.sequence([])) as server:
        setup(editor, server.url, chat_config("") + 'prompt_library = { markdown = { dirs = { ".prompts" } } },')
        editor.nvim.command(f"cd {project}")
        pick(editor, "no answer")  # the question is dismissed: not trusted, asked again later
        editor.nvim.command("CodeCompanion /hooked")
        editor.wait_for(lambda: editor.lua("return #_G.cc_offered") >= 1, what="the trust question")
        assert any("no prompt in the library has the alias" in n for n in notes(editor)), notes(editor)
        assert not marker.exists()

        pick(editor, "Trust them")
        editor.lua("require('codecompanion_py.prompts').items(true)")
        editor.wait_for(
            lambda: editor.lua("return require('codecompanion_py.prompts').find('hooked') ~= nil"),
            what="the trusted prompts",
        )
        editor.nvim.command("CodeCompanion /hooked")
        editor.wait_for(marker.exists, what="the pre_hook ran")
