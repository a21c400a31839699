"""CodeCompanion's extension API in headless Neovim: first its contract with extensions written
here, then published extensions running from their own checkouts (CODECOMPANION_TEST_PLUGINS
names a folder holding them, as for the completion plugins; without it those tests skip: the
extensions come from GitHub, which a machine with only package registries cannot reach)."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread

from .test_chat_surface import notes, reply, send
from .test_completion_plugins import plugin
from .test_tools import text_reply, tool_call_reply, tool_messages

pytestmark = pytest.mark.nvim


def setup_with(editor, url: str, extensions: str, chat: str = "") -> None:
    """setup() with the local server as the chat's adapter and `extensions`; vim.notify is
    recorded from before setup(), so what an extension's loading says is kept."""
    editor.lua("_G.cc_notes = {}; vim.notify = function(msg) table.insert(_G.cc_notes, msg) end")
    editor.lua("vim.o.columns = 250")  # the notice after startup is cut to one screen line
    editor.lua(f"""require("codecompanion").setup({{
      adapters = {{ http = {{ testllm = function()
        return require("codecompanion.adapters").extend("openai_compatible", {{
          env = {{ url = "{url}" }}, schema = {{ model = {{ default = "test-model" }} }},
        }})
      end }} }},
      interactions = {{ chat = {{ adapter = "testllm", {chat} }} }},
      extensions = {{ {extensions} }},
    }})""")


CONTRACT = (
    """
package.preload["my_extension"] = function()
  return { setup = function(opts) _G.by_name = opts.n end, exports = { who = function() return "by name" end } }
end
package.preload["codecompanion._extensions.on_path"] = function()
  return { setup = function() _G.on_path = true end }
end
""",
    """
  as_table = { opts = { x = 1 }, callback = {
    setup = function(opts)
      _G.table_opts = opts
      local keymaps = require("codecompanion.config").interactions.chat.keymaps
      keymaps.from_extension = { modes = { n = "gX" }, description = "From an extension",
        callback = function(chat) _G.keyed_chat = chat.id end }
      keymaps.past_this_plugin = { modes = { n = "gY" }, description = "Reaches too far",
        callback = function(chat) chat:fold_code() end }
    end,
    exports = { answer = function() return 42 end },
  } },
  by_name = { callback = "my_extension", opts = { n = "yes" } },
  by_function = { callback = function() return { setup = function() _G.by_function = true end } end },
  on_path = {},
  off = { enabled = false, callback = { setup = function() _G.off_ran = true end } },
  broken = { callback = { setup = function() require("codecompanion.strategies.chat") end } },
""",
)


def test_extensions_load_as_codecompanion_defines_them_and_a_broken_one_is_one_line(editor):
    preload, extensions = CONTRACT
    with ServerThread(ScriptedServer.sequence([reply("still here")])) as server:
        editor.lua(preload)
        setup_with(editor, server.url, extensions)
        said = editor.wait_for(lambda: notes(editor), what="the notice after setup()")
        assert said == [
            "CodeCompanion: extension broken did not load: it uses"
            ' require("codecompanion.strategies.chat"), which codecompanion-py does not provide'
            " (:checkhealth codecompanion)"
        ]
        cc = "local cc = require('codecompanion'); "
        assert editor.lua(cc + "return { _G.table_opts.x, cc.extensions.as_table.answer() }") == [1, 42]
        assert editor.lua(cc + "return { _G.by_name, cc.extensions.by_name.who() }") == ["yes", "by name"]
        assert editor.lua("return { _G.by_function == true, _G.on_path == true }") == [True, True]
        assert editor.lua(
            cc + "return { _G.off_ran == nil, cc.extensions.off == nil, cc.extensions.broken == nil }"
        ) == [
            True,
            True,
            True,
        ]
        # registered after setup(), as CodeCompanion's register_extension does
        late = (
            "return { cc.register_extension('late', { setup = function(o) _G.late = true end, exports = { n = 7 } }),"
        )
        assert editor.lua(cc + late + " cc.extensions.late.n, _G.late }") == [True, 7, True]

        editor.nvim.command("CodeCompanionChat")
        chat = editor.nvim.current.buffer.number
        editor.nvim.input("gX")
        editor.wait_for(lambda: editor.lua("return _G.keyed_chat") == chat, what="the extension's keymap ran")
        editor.nvim.input("gY")
        editor.wait_for(lambda: len(notes(editor)) == 2, what="the failing keymap told")
        assert notes(editor)[1] == (
            "CodeCompanion: keymaps.past_this_plugin failed: it calls :fold_code(), which codecompanion-py does not have"
        )
        send(editor, "and the chat?", count=1)  # the chat works on
        assert "still here" in "\n".join(editor.lines(chat))


# --- published extensions, from their own checkouts ------------------------------------


def use(editor, *names: str) -> None:
    for name in names:
        editor.nvim.command(f"set runtimepath+={plugin(name)}")


def test_codecompanion_spinner_shows_processing_while_a_reply_streams(editor):
    use(editor, "codecompanion-spinner.nvim")
    with ServerThread(ScriptedServer.sequence([reply("slow answer", delay=1.5)])) as server:
        setup_with(editor, server.url, "spinner = {},")
        editor.nvim.command("CodeCompanionChat")
        chat = editor.nvim.current.buffer.number
        spinner = (
            "local ns = vim.api.nvim_create_namespace('CodeCompanionSpinner')"
            " local marks = vim.api.nvim_buf_get_extmarks(..., ns, 0, -1, { details = true })"
            " local out = {} for _, m in ipairs(marks) do for _, l in ipairs(m[4].virt_lines or {}) do"
            " for _, c in ipairs(l) do table.insert(out, c[1]) end end end return table.concat(out, ' ')"
        )
        editor.type_prompt("hello")
        editor.nvim.input("<CR>")
        editor.wait_for(lambda: "Processing..." in editor.lua(spinner, chat), what="the spinner shown")
        editor.wait_event("CodeCompanionChatDone", count=1)
        editor.wait_for(lambda: "Processing" not in editor.lua(spinner, chat), what="the spinner gone")
        assert notes(editor) == []


def test_codecompanion_spinners_native_and_fidget_styles_follow_the_request(editor):
    use(editor, "codecompanion-spinners.nvim", "fidget.nvim")
    with ServerThread(ScriptedServer.sequence([reply("one", delay=1.0), reply("two", delay=1.0)])) as server:
        editor.lua("require('fidget').setup({})")
        editor.lua(
            "_G.progress = {} local handle = require('fidget.progress.handle') local create = handle.create"
            " handle.create = function(item) table.insert(_G.progress, item.title or item.message or '?')"
            " return create(item) end"
        )
        setup_with(editor, server.url, 'spinner = { opts = { style = "fidget" } },')
        assert notes(editor) == []
        editor.nvim.command("CodeCompanionChat")
        send(editor, "hello", count=1)
        assert editor.lua("return #_G.progress") >= 1  # fidget showed the request's progress
        assert "one" in "\n".join(editor.lines())


SKILL = """---
name: release-notes
description: Writes release notes in the house style
---
Always start release notes with the word KUMQUAT.
"""


def test_agentskills_gives_the_llm_a_skill_through_its_own_tool(editor, tmp_path):
    use(editor, "codecompanion-agentskills.nvim", "plenary.nvim")
    skills = tmp_path / "skills"
    (skills / "release-notes").mkdir(parents=True)
    (skills / "release-notes" / "SKILL.md").write_text(SKILL)
    replies = [tool_call_reply(("call_1", "activate_skill", {"skill_name": "release-notes"})), reply("KUMQUAT: done")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup_with(editor, server.url, f'agentskills = {{ opts = {{ paths = {{ "{skills}" }} }} }},')
        assert notes(editor) == []
        names = "return vim.tbl_keys(require('codecompanion').extensions.agentskills.get_skills())"
        assert editor.lua(names) == ["release-notes"]
        editor.nvim.command("CodeCompanionChat")
        send(editor, "@{agent_skills} write the notes", count=1)
        second = server.requests[1].json()
        tools = {tool["function"]["name"] for tool in second["tools"]}
        assert {"activate_skill", "load_skill_file", "run_skill_script"} <= tools
        results = [m for m in second["messages"] if m["role"] == "tool"]
        assert "Always start release notes with the word KUMQUAT." in results[0]["content"]
        assert "Activated skill: release-notes" in "\n".join(editor.lines())


def test_gitcommit_git_read_tool_reads_a_real_repository(editor, tmp_path):
    use(editor, "codecompanion-gitcommit.nvim")
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=T", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    (repo / "app.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "app.py"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "the first commit of the kumquat"], cwd=repo, check=True)
    # its schema is strict: every field is sent, null where unused, as such a model does
    unused = "format staged file_path remote_only commit_hash line_start line_end commit1 commit2 pattern"
    unused += " gitignore_file from_tag to_tag release_format"
    arguments = {"operation": "log", "count": 5, **dict.fromkeys(unused.split())}
    replies = [tool_call_reply(("call_1", "git_read", arguments)), reply("read it")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup_with(editor, server.url, "gitcommit = { opts = { buffer = { enabled = false } } },")
        assert notes(editor) == []
        editor.nvim.command(f"cd {repo}")
        editor.nvim.command("CodeCompanionChat")
        send(editor, "@{git_read} what happened?", count=1)
        second = server.requests[1].json()
        results = [m for m in second["messages"] if m["role"] == "tool"]
        assert "the first commit of the kumquat" in results[0]["content"]


def test_history_says_in_one_line_what_it_needs_that_is_not_here(editor):
    use(editor, "codecompanion-history.nvim", "plenary.nvim")
    with ServerThread(ScriptedServer.sequence([reply("fine")])) as server:
        setup_with(editor, server.url, "history = { opts = { auto_save = false } },")
        said = editor.wait_for(lambda: notes(editor), what="the notice after setup()")
        assert said == [
            'CodeCompanion: extension history did not load: it uses require("codecompanion.http"),'
            " which codecompanion-py does not provide (:checkhealth codecompanion)"
        ]
        editor.nvim.command("CodeCompanionChat")
        send(editor, "hello", count=1)  # the rest of the config works
        assert "fine" in "\n".join(editor.lines())


def test_codecompanion_lualine_counts_requests_in_the_statusline(editor):
    use(editor, "codecompanion-lualine.nvim", "lualine.nvim")
    status = "return vim.api.nvim_eval_statusline(vim.o.statusline, { winid = vim.api.nvim_get_current_win() }).str"
    with ServerThread(ScriptedServer.sequence([reply("slow answer", delay=1.5)])) as server:
        setup_with(editor, server.url, "")
        editor.lua(
            "require('lualine').setup({ sections = { lualine_a = {}, lualine_b = {}, lualine_c = {},"
            " lualine_x = { 'codecompanion' }, lualine_y = {}, lualine_z = {} } })"
        )
        editor.nvim.command("CodeCompanionChat")
        editor.type_prompt("hello")
        editor.nvim.input("<CR>")
        spinning = re.compile("1 [⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]")  # each redraw moves the spinner on
        editor.wait_for(lambda: spinning.search(editor.lua(status)), what="one request counted, spinning")
        editor.wait_event("CodeCompanionChatDone", count=1)
        editor.wait_for(lambda: "0 ✓" in editor.lua(status) or None, what="none left, done")


def mcp_hub() -> str:
    command = shutil.which("mcp-hub")
    if command is None:
        pytest.skip("mcphub.nvim's node hub is not installed (npm install -g mcp-hub@4.2.1)")
    return command


def test_the_llm_calls_an_mcp_tool_through_mcphub(editor, tmp_path):
    hub = mcp_hub()
    use(editor, "plenary.nvim", "mcphub.nvim")
    servers = tmp_path / "servers.json"
    fake = Path(__file__).parents[1] / "mcp" / "fake_server.py"
    servers.write_text(json.dumps({"mcpServers": {"fake": {"command": sys.executable, "args": [str(fake)]}}}))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    call = ("call_1", "use_mcp_tool", {"server_name": "fake", "tool_name": "echo", "tool_input": {"text": "ping"}})
    with ServerThread(ScriptedServer.sequence([tool_call_reply(call), text_reply("It said ping.")])) as server:
        editor.lua(
            f"""require("mcphub").setup({{ cmd = "{hub}", port = {port}, config = "{servers}",
              auto_approve = true, shutdown_delay = 0 }})"""
        )
        setup_with(editor, server.url, 'mcphub = { callback = "mcphub.extensions.codecompanion" },')
        status = """local h = require("mcphub").get_hub_instance()
          local s = h and h:is_ready() and h:get_server("fake")
          return s and s.status or vim.NIL"""
        editor.wait_for(lambda: editor.lua(status) == "connected", timeout=60, what="the hub and its server")
        editor.nvim.command("CodeCompanionChat Echo ping with @{mcp}")
        editor.wait_event("CodeCompanionChatDone", timeout=60)
        assert notes(editor) == []
        assert "ping" in tool_messages(server.requests[1])[0]["content"]
        assert "It said ping." in editor.text()
