"""A chat with a coding agent over ACP, in headless Neovim: the scripted fake agent streams,
thinks, plans, asks permission, writes through a loaded buffer, runs a terminal, is
cancelled with `q`, crashes, and never outlives its chat."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from .test_tools import RECORD_UI

FAKE_AGENT = str(Path(__file__).parents[1] / "acp" / "fake_agent.py")


def processes(marker: bytes = b"fake_agent.py") -> list[int]:
    """Live processes whose command line contains `marker`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state not in ("Z", "X"):
            found.append(int(pid))
    return found


agent_processes = processes


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("first line\n")
    return root


def open_agent_chat(editor, project, prompt: str, answers=(), env_lua: str = "", interactions: str = ""):
    editor.nvim.command(f"cd {project}")
    editor.lua(RECORD_UI)
    editor.lua("_G.cc_answers = ...", list(answers))
    editor.setup(f"""{{
      adapters = {{ acp = {{ fake = {{
        formatted_name = "Fake Agent",
        commands = {{ default = {{ "{sys.executable}", "{FAKE_AGENT}" }} }},
        defaults = {{ timeout = 10000 }}, env = {{ {env_lua} }},
      }} }} }},
      interactions = {{ chat = {{ adapter = "fake" }}, {interactions} }},
    }}""")
    editor.nvim.command(f"CodeCompanionChat {prompt}")
    return editor.nvim.current.buffer.number


def test_streamed_reply_with_reasoning_from_an_agent(editor, project):
    chat = open_agent_chat(editor, project, "stream please")
    editor.wait_event("CodeCompanionChatDone")
    text = editor.text(chat)
    assert "## CodeCompanion (Fake Agent)" in text
    assert "### Reasoning\n\nLet me think." in text
    assert "Hello from the fake agent." in text
    assert "a late word" not in text  # sent after the turn's answer: not written into the user's part
    # the agent's slash commands complete after `\` (omnifunc, <C-x><C-o>)
    completed = editor.lua("""
      local chat = require("codecompanion_py.chat")
      vim.api.nvim_buf_set_lines(0, -2, -1, false, { "\\\\re" })
      vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(0), 3 })
      local start = chat.omnifunc(1, "")
      return { start, chat.omnifunc(0, "\\\\re") }""")
    assert completed == [0, [{"word": "\\review", "menu": "Review"}]]
    editor.nvim.command("normal! S")
    editor.type_prompt("plan")
    editor.nvim.input("<CR>")
    editor.wait_event("CodeCompanionChatDone", count=2)
    text = editor.text(chat)
    # the plan is one checklist, updated in place
    assert text.count("**Plan**") == 1
    assert "- [x] Read the code" in text and "- [~] Write the fix" in text


def test_permission_then_the_write_goes_through_the_loaded_buffer(editor, project):
    editor.nvim.command(f"edit {project / 'notes.txt'}")
    chat = open_agent_chat(editor, project, "permission notes.txt", answers=["Allow"])
    editor.wait_event("CodeCompanionChatDone")
    prompt = editor.lua("return _G.cc_prompts")[0]
    assert prompt["prompt"].startswith("Fake Agent wants to: Write notes.txt")
    assert prompt["items"] == ["Allow", "Always allow", "Reject", "Never allow", "Cancel"]
    notes = editor.nvim.call("bufnr", str(project / "notes.txt"))
    assert editor.nvim.api.buf_get_lines(notes, 0, -1, False) == ["hello from the agent"]
    assert (project / "notes.txt").read_text() == "hello from the agent\n"  # a clean buffer is saved
    names = editor.event_names()
    [edited] = [e["data"] for e in editor.events() if e["event"] == "CodeCompanionFileEdited"]
    assert edited["path"].endswith("notes.txt") and edited["tool"]  # the agent's adapter, as CodeCompanion names it
    assert names.index("CodeCompanionToolApprovalRequested") < names.index("CodeCompanionToolApprovalFinished")
    text = editor.text(chat)
    assert "**Tool** ✓ Write notes.txt" in text and "**Tool** ○" not in text  # one line, updated in place
    assert "+hello from the agent" in text  # the diff is shown


def test_a_rejected_permission_leaves_the_file_alone(editor, project):
    chat = open_agent_chat(editor, project, "permission notes.txt", answers=["Reject"])
    editor.wait_event("CodeCompanionChatDone")
    assert (project / "notes.txt").read_text() == "first line\n"
    assert "The user rejected the write." in editor.text(chat)
    assert "**Tool** ✗ Write notes.txt" in editor.text(chat)


def test_writes_outside_the_project_are_refused(editor, project, tmp_path):
    outside = tmp_path / "outside.txt"
    chat = open_agent_chat(editor, project, f"write_outside {outside}")
    editor.wait_event("CodeCompanionChatDone")
    assert not outside.exists()
    assert "outside the project" in editor.text(chat)


def test_a_terminal_runs_and_its_output_is_shown(editor, project):
    chat = open_agent_chat(editor, project, "terminal")
    editor.wait_event("CodeCompanionChatDone")
    text = editor.text(chat)
    assert "exit=0 truncated=False output=terminal says hi" in text
    assert "**Tool** ✓ Run python" in text


def test_q_cancels_the_turn_and_the_chat_goes_on(editor, project):
    chat = open_agent_chat(editor, project, "slow")
    editor.wait_for(lambda: "chunk5" in editor.text(chat), what="streaming")
    editor.nvim.input("q")
    stopped = editor.wait_event("CodeCompanionChatStopped")
    assert stopped["data"]["status"] == "stopped"
    assert "chunk399" not in editor.text(chat)
    editor.type_prompt("stream")
    editor.nvim.input("<CR>")
    editor.wait_event("CodeCompanionChatDone")
    assert "Hello from the fake agent." in editor.text(chat)


def test_a_crash_is_shown_and_the_next_message_starts_a_new_agent(editor, project):
    chat = open_agent_chat(editor, project, "crash")
    done = editor.wait_event("CodeCompanionChatDone")
    assert done["data"]["status"] == "error"
    text = editor.text(chat)
    assert "exited with code 3" in text and "the fake agent fell over" in text
    editor.wait_for(lambda: not agent_processes(), what="crashed agent reaped")
    editor.type_prompt("stream")
    editor.nvim.input("<CR>")
    editor.wait_event("CodeCompanionChatDone", count=2)
    text = editor.text(chat)
    assert "Hello from the fake agent." in text and "was restarted" in text


STUBBORN = 'FAKE_AGENT_STUBBORN = "1"'  # a child process, SIGTERM ignored, alive after EOF


def test_closing_the_chat_stops_the_agent_and_its_children(editor, project):
    chat = open_agent_chat(editor, project, "stream", env_lua=STUBBORN)
    editor.wait_event("CodeCompanionChatDone")
    assert len(agent_processes()) == 2
    editor.nvim.command(f"bwipeout! {chat}")
    editor.wait_for(lambda: not agent_processes(), what="agent stopped after the chat closed")


def test_quitting_neovim_stops_the_agent(nvim_home, monkeypatch, project):
    import pynvim

    from codecompanion_py.demo.launch import nvim_binary

    from .conftest import RECORD_EVENTS, Editor

    init, env = nvim_home
    for key in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(key, env[key])
    nvim = pynvim.attach("child", argv=[nvim_binary(), "--embed", "--headless", "-u", str(init)])
    editor = Editor(nvim)
    editor.lua(RECORD_EVENTS)
    open_agent_chat(editor, project, "stream", env_lua=STUBBORN)
    editor.wait_event("CodeCompanionChatDone")
    assert len(agent_processes()) == 2
    try:
        nvim.command("qa!")
    except Exception:
        pass
    nvim.close()
    editor.wait_for(lambda: not agent_processes(), what="agent stopped with Neovim")


# --- a CLI without ACP, through the bridge ------------------------------------------------

FAKE_CODEX_CLI = str(Path(__file__).parents[1] / "acp_bridge" / "fake_cli_codex.py")


def test_a_cli_without_acp_chats_through_the_bridge(editor, project):
    import shlex

    editor.nvim.command(f"cd {project}")
    editor.lua(RECORD_UI)
    editor.setup(f"""{{
      adapters = {{ acp = {{ codex_cli = {{ commands = {{ default = {{
        "{sys.executable}", "-m", "codecompanion_py.cli", "acp-bridge", "codex",
        "--executable", "{shlex.join([sys.executable, FAKE_CODEX_CLI])}" }} }} }} }} }},
    }}""")
    editor.nvim.command("CodeCompanionChat adapter=codex_cli fix the tests")
    chat = editor.nvim.current.buffer.number
    done = editor.wait_event("CodeCompanionChatDone", timeout=30)
    assert done["data"]["status"] == "success", editor.text(chat)
    text = editor.text(chat)
    assert "## CodeCompanion (Codex (CLI))" in text
    assert "**Tool** ✓" in text and "**Plan**" in text
    editor.nvim.command(f"bwipeout! {chat}")
    editor.wait_for(lambda: not processes(b"acp-bridge"), what="the bridge stopped with its chat")


# --- a real agent: Codex over ACP, its LLM played by our server -------------------------

from codecompanion_py.demo.server import ScriptedServer, ServerThread  # noqa: E402

from ..acp.real_agents import codex_acp, codex_home, codex_llm  # noqa: E402

PATCH = "\n".join(
    [
        "apply_patch <<'PATCH'",
        "*** Begin Patch",
        "*** Update File: notes.txt",
        "@@",
        "-first line",
        "+changed by codex",
        "*** End Patch",
        "PATCH",
        "",
    ]
)


@pytest.mark.skipif(codex_acp() is None, reason="codex-acp is not installed: `make agents` needs npm")
def test_a_real_codex_agent_edits_a_loaded_file_through_an_approval(editor, project, tmp_path):
    with ServerThread(ScriptedServer(codex_llm(PATCH, "Updated notes.txt for you."))) as server:
        env = codex_home(tmp_path, server.url, approval="untrusted", sandbox="danger-full-access")
        env_lua = ", ".join(f'{key} = "{value}"' for key, value in env.items())
        editor.nvim.command(f"edit {project / 'notes.txt'}")
        editor.nvim.command(f"cd {project}")
        editor.lua(RECORD_UI)
        editor.lua("_G.cc_answers = ...", ["Yes"])
        editor.setup(f"""{{
          adapters = {{ acp = {{ codex = {{
            commands = {{ default = {{ "{codex_acp()}" }} }}, env = {{ {env_lua} }},
          }} }} }},
        }}""")
        editor.nvim.command("CodeCompanionChat adapter=codex RUNTOOL please change notes.txt")
        chat = editor.nvim.current.buffer.number
        done = editor.wait_event("CodeCompanionChatDone", timeout=60)
        assert done["data"]["status"] == "success", editor.text(chat)
        prompt = editor.lua("return _G.cc_prompts")[0]
        assert prompt["prompt"].startswith("Codex wants to: Edit") and prompt["items"][0] == "Yes"
        assert (project / "notes.txt").read_text() == "changed by codex\n"
        notes = editor.nvim.call("bufnr", str(project / "notes.txt"))
        editor.wait_for(
            lambda: editor.nvim.api.buf_get_lines(notes, 0, -1, False) == ["changed by codex"],
            what="the loaded buffer re-read",
        )
        text = editor.text(chat)
        assert "## CodeCompanion (Codex)" in text and "Updated notes.txt for you." in text
        assert "+changed by codex" in text  # the diff was shown
        assert "**Tool** ✓" in text
        lines = editor.lines(chat)
        [answer] = [i for i, line in enumerate(lines) if line.strip() == "Updated notes.txt for you."]
        assert lines[answer - 1] == "" and lines[answer - 2] == "```"  # its own paragraph, after the diff
        assert text.count("+changed by codex") == 1  # shown for the approval, not again when done
        tool_lines = [line for line in lines if line.startswith("**Tool**")]
        assert len(tool_lines) == len(set(tool_lines)), tool_lines  # updated in place, never repeated
        assert not [note for note in editor.lua("return _G.cc_notes") if "now using" in note]
        names = editor.event_names()
        assert "CodeCompanionToolApprovalRequested" in names and "CodeCompanionToolApprovalFinished" in names

        # a second turn in the same session, then the chat closes and codex is gone
        editor.type_prompt("thanks")
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone", count=2, timeout=60)
        assert editor.text(chat).count("Updated notes.txt for you.") == 2
        assert processes(b"codex-acp")
        editor.nvim.command(f"bwipeout! {chat}")
        editor.wait_for(lambda: not processes(b"codex-acp"), what="codex stopped with its chat")


# --- a real agent: Claude Code over ACP, its LLM played by our server --------------------

from ..acp.real_agents import claude_agent_acp, claude_env, claude_llm  # noqa: E402


@pytest.mark.skipif(claude_agent_acp() is None, reason="claude-agent-acp is not installed: `make agents` needs npm")
def test_a_real_claude_agent_writes_a_file_and_its_tool_line_is_updated_in_place(editor, project, tmp_path):
    target = project / "made_by_claude.txt"
    editor.lua("vim.env.IS_SANDBOX = nil")  # before the engine starts; see tests/acp/real_agents.py
    responder = claude_llm("Write", {"file_path": str(target), "content": "hello from claude\n"}, "Wrote it.")
    with ServerThread(ScriptedServer(responder)) as server:
        env_lua = ", ".join(f'{key} = "{value}"' for key, value in claude_env(tmp_path, server.url).items())
        editor.nvim.command(f"cd {project}")
        editor.lua(RECORD_UI)
        editor.lua("_G.cc_answers = ...", ["Allow"])
        editor.setup(f"""{{
          adapters = {{ acp = {{ claude_code = {{
            commands = {{ default = {{ "{claude_agent_acp()}" }} }}, env = {{ {env_lua} }},
            defaults = {{ timeout = 30000 }},
          }} }} }},
        }}""")
        editor.nvim.command("CodeCompanionChat adapter=claude_code RUNTOOL write the file")
        chat = editor.nvim.current.buffer.number
        done = editor.wait_event("CodeCompanionChatDone", timeout=60)
        assert done["data"]["status"] == "success", editor.text(chat)
        assert target.read_text() == "hello from claude\n"
        lines = editor.lines(chat)
        tool_lines = [line for line in lines if line.startswith("**Tool**")]
        # claude-agent-acp sends tool_call and then several tool_call_updates: one line, last status
        assert len(tool_lines) == 1 and tool_lines[0].startswith("**Tool** ✓"), "\n".join(lines)
        [answer] = [i for i, line in enumerate(lines) if line.strip() == "Wrote it."]
        assert lines[answer - 1] == "" and lines[answer - 2] != ""  # its own paragraph
        assert not [note for note in editor.lua("return _G.cc_notes") if "now using" in note]
        editor.nvim.command(f"bwipeout! {chat}")
        editor.wait_for(lambda: not processes(b"claude-agent-acp"), what="claude stopped with its chat")


def test_ga_switches_an_http_chat_to_an_agent_and_back(editor, project):
    """An agent lists its models once it runs: its empty list must not break the picker."""
    from tests.e2e.test_chat_surface import reply

    with ServerThread(ScriptedServer.sequence([reply("from the provider"), reply("again")])) as llm:
        editor.nvim.command(f"cd {project}")
        editor.setup(f"""{{
          adapters = {{
            http = {{ testllm = function() return require("codecompanion_py.adapters").extend("openai_compatible",
              {{ env = {{ url = "{llm.url}" }}, schema = {{ model = {{ default = "m", choices = {{ "m" }} }} }} }}) end }},
            acp = {{ fake = {{ formatted_name = "Fake Agent",
              commands = {{ default = {{ "{sys.executable}", "{FAKE_AGENT}" }} }}, defaults = {{ timeout = 10000 }} }} }},
          }},
          interactions = {{ chat = {{ adapter = "testllm" }} }},
        }}""")
        editor.lua("_G.cc_notes = {}; vim.notify = function(msg) table.insert(_G.cc_notes, msg) end")
        editor.nvim.command("CodeCompanionChat hello")
        editor.wait_event("CodeCompanionChatDone")

        def switched_to(name: str) -> int:
            return sum(
                e["event"] == "CodeCompanionChatAdapter" and e["data"]["adapter"]["name"] == name
                for e in editor.events()
            )

        def switch_to(name: str) -> None:
            before = switched_to(name)
            editor.lua("_G.cc_pick = ...", name)
            editor.lua("vim.ui.select = function(items, opts, on_choice) on_choice(_G.cc_pick) end")
            editor.nvim.input("ga")
            editor.wait_for(lambda: switched_to(name) > before, what=f"the chat on {name}")

        switch_to("fake")
        editor.type_prompt("stream please")
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone", count=2)
        switch_to("testllm")
        editor.type_prompt("and you?")
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone", count=3)
        assert "again" in editor.text()
        assert not [n for n in editor.lua("return _G.cc_notes") if "error" in n.lower() or "unknown" in n.lower()]


def test_command_starts_the_agent_again_with_another_of_its_commands(editor, project):
    editor.nvim.command(f"cd {project}")
    editor.lua(RECORD_UI)
    editor.lua("_G.cc_answers = {}")
    editor.setup(f"""{{
      adapters = {{ acp = {{ fake = {{
        commands = {{ default = {{ "{sys.executable}", "{FAKE_AGENT}" }},
                      other = {{ "{sys.executable}", "{FAKE_AGENT}", "other-command" }} }},
        defaults = {{ timeout = 10000 }},
      }} }} }},
      strategies = {{ chat = {{ adapter = "fake" }} }},
    }}""")
    editor.nvim.command("CodeCompanionChat hello")
    editor.wait_event("CodeCompanionChatDone")
    assert processes(b"other-command") == []
    editor.lua("""vim.ui.select = function(items, opts, on_choice)
      _G.cc_commands = { prompt = opts.prompt, items = items }; on_choice("other", 2) end""")
    editor.nvim.command("normal! G")
    editor.nvim.options["completeopt"] = "menuone,noinsert"
    editor.nvim.input("A/comm<C-x><C-o>")
    editor.wait_for(lambda: editor.nvim.call("pumvisible") == 1, what="the completion menu")
    editor.nvim.input("<C-y><Esc>")
    editor.wait_for(lambda: editor.lua("return _G.cc_commands") is not None, what="the commands offered")
    assert editor.lua("return _G.cc_commands") == {"prompt": "Select Command", "items": ["default", "other"]}
    editor.type_prompt("again")
    editor.nvim.input("<CR>")
    editor.wait_event("CodeCompanionChatDone", count=2)
    assert "echo: again" in editor.text() and len(processes(b"other-command")) == 1
    assert "CodeCompanion: switched to the `other` command" in editor.lua("return _G.cc_notes")
