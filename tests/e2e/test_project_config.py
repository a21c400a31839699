"""Config CodeCompanion users carry over, in real Neovim: `opts.per_project_config` (a
project's Lua file runs only through Neovim's trust database) and editor context of their own
(`interactions.chat.editor_context.<name>`)."""

from __future__ import annotations

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread
from tests.e2e.test_chat_surface import chat_config, notes, reply, send, setup
from tests.e2e.test_context import context_sent

pytestmark = pytest.mark.nvim

PROJECT_FILE = """-- the project's own
_G.project_file_ran = (_G.project_file_ran or 0) + 1
return { interactions = { chat = { opts = { register = "p" } } }, opts = { language = "Klingon" } }
"""
PER_PROJECT = 'opts = { per_project_config = { files = { ".codecompanion.lua" } } },'


def start(editor, project, answer: int) -> None:
    """setup() in `project`, Neovim's trust question answered with `answer` (1 ignore, 3 deny,
    4 allow) and recorded in _G.asked."""
    editor.nvim.command(f"cd {project}")
    editor.lua(
        "local answer = ...; _G.asked = {}; _G.early = {}"
        " vim.fn.confirm = function(msg) table.insert(_G.asked, msg); return answer end"
        " vim.notify = function(msg) table.insert(_G.early, msg) end",
        answer,
    )
    setup(editor, "http://127.0.0.1:9", PER_PROJECT)


def early(editor) -> list[str]:
    """What setup() notified."""
    return editor.lua("return _G.early")


def option(editor, path: str):
    return editor.lua(f"return vim.tbl_get(require('codecompanion_py').config, {path})")


def test_a_project_file_runs_only_once_trusted_and_is_asked_again_when_it_changes(editor, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".codecompanion.lua").write_text(PROJECT_FILE)

    start(editor, project, 1)  # ignored: not run, and said so
    assert len(editor.lua("return _G.asked")) == 1 and ".codecompanion.lua is not trusted" in editor.lua(
        "return _G.asked[1]"
    )
    assert editor.lua("return _G.project_file_ran") is None and option(editor, "'opts', 'language'") is None
    assert any("is not trusted, so it was not run (:trust it" in n for n in early(editor))

    start(editor, project, 4)  # allowed: merged over setup()'s
    assert editor.lua("return _G.project_file_ran") == 1
    assert option(editor, "'opts', 'language'") == "Klingon"
    assert option(editor, "'interactions', 'chat', 'opts', 'register'") == "p"

    start(editor, project, 1)  # trusted now: not asked again
    assert editor.lua("return _G.asked") == [] and editor.lua("return _G.project_file_ran") == 2

    (project / ".codecompanion.lua").write_text(PROJECT_FILE + "-- changed\n")
    start(editor, project, 1)  # changed since: asked again, and not run
    assert len(editor.lua("return _G.asked")) == 1 and editor.lua("return _G.project_file_ran") == 2


def test_a_denied_project_file_is_never_run_nor_asked_about(editor, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".codecompanion.lua").write_text(PROJECT_FILE)
    editor.lua("vim.secure.trust({ action = 'deny', path = ... })", str(project / ".codecompanion.lua"))
    start(editor, project, 4)
    assert editor.lua("return _G.asked") == [] and editor.lua("return _G.project_file_ran") is None
    assert option(editor, "'opts', 'language'") is None
    assert any("is not trusted, so it was not run" in n for n in early(editor))


def test_a_broken_project_file_is_named_and_the_rest_of_the_config_loads(editor, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".codecompanion.lua").write_text("return 42\n")
    start(editor, project, 4)
    assert any(".codecompanion.lua must return a table" in n for n in early(editor))
    assert option(editor, "'interactions', 'chat', 'adapter'") is None  # setup()'s own, no chat adapter set
    assert editor.lua("return require('codecompanion_py').config.adapters.http.testllm ~= nil")


def test_per_project_paths_apply_in_their_directory_only(editor, tmp_path):
    mine, other = tmp_path / "mine", tmp_path / "other"
    mine.mkdir()
    other.mkdir()
    extra = (
        f'opts = {{ per_project_config = {{ paths = {{ ["{mine}"] = {{ opts = {{ language = "Latin" }} }},'
        f' ["{other}/"] = "not a table" }} }} }},'
    )
    for where, language in ((mine, "Latin"), (other, None)):
        editor.nvim.command(f"cd {where}")
        editor.lua("_G.early = {}; vim.notify = function(msg) table.insert(_G.early, msg) end")
        setup(editor, "http://127.0.0.1:9", extra)
        assert option(editor, "'opts', 'language'") == language
    assert early(editor) == [f'CodeCompanion: per_project_config.paths["{other}/"] must be a table']


def test_editor_context_of_your_own_reaches_the_llm(editor, tmp_path):
    (tmp_path / "ticket.lua").write_text(
        "return function(self) return 'ticket ' .. (self.params or 'none') .. ' from ' .. self.config.name end\n"
    )
    own = f"""editor_context = {{
      ticket = {{ description = "A ticket", callback = "{tmp_path / "ticket.lua"}" }},
      empty = {{ callback = function() return nil end }},
    }},"""
    # CodeCompanion 19 reads them from interactions.shared; its docs say interactions.chat
    shared = """interactions = { shared = { editor_context = {
      branch = { description = "The git branch", callback = function(self) return "on branch main" end },
    } } },"""
    with ServerThread(ScriptedServer.sequence([reply("ok 1"), reply("ok 2")])) as server:
        setup(editor, server.url, chat_config(own).replace("interactions = {", "strategies = {") + shared)
        assert (
            editor.lua(
                "return #require('codecompanion_py.config_check').unsupported(require('codecompanion_py').user_opts)"
            )
            == 0
        )
        editor.nvim.command("terminal echo from-the-terminal")
        editor.wait_for(lambda: "from-the-terminal" in "\n".join(editor.lines(0)), what="the terminal's output")
        editor.nvim.command("CodeCompanionChat")
        chat = editor.nvim.current.buffer.number
        complete = editor.lua("return require('codecompanion_py.chat.completion').items(nil, '#')")
        words = {item["word"]: item.get("menu", item.get("info")) for item in complete}
        assert "#{branch}" in words and "#{ticket}" in words

        send(editor, "Look at #{branch} and #{ticket:T-42}", 1)
        sent = "\n".join(context_sent(server, 0))
        assert "on branch main" in sent and "ticket T-42 from ticket" in sent

        # a callback that gives no text is said, and nothing is sent
        editor.type_prompt("#{empty} please")
        editor.nvim.input("<CR>")
        editor.wait_for(lambda: any("#{empty}: its callback returned no text" in n for n in notes(editor)))
        assert len(server.requests) == 1 and editor.lines(chat)[-1] == "#{empty} please"

        # the built-ins still beside them
        editor.nvim.command("normal! Gdd")
        send(editor, "#{terminal}", 2)
        assert "from-the-terminal" in "\n".join(context_sent(server, 1))
