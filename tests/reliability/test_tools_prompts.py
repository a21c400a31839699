"""Approval prompts say plainly what will happen.

* run_command's prompt shows the command with the blanks the shell ignores collapsed, and
  that is the command that runs: `ls      ...      ; rm -rf x` cannot push its second
  half past the edge of the prompt. Characters the prompt cannot show are refused.
* A hard-linked file's prompt read "hardlink.txt is has other hard links".
"""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from codecompanion_py import processes
from codecompanion_py.messages import ToolCall, ToolResultPart
from codecompanion_py.sandbox import Sandbox, SandboxPolicy
from codecompanion_py.tools.approvals import Approvals
from codecompanion_py.tools.context import ChatHandle, ToolsContext
from codecompanion_py.tools.orchestrator import Orchestrator
from codecompanion_py.tools.registry import ToolSettings, enabled_definitions
from codecompanion_py.tools.workspace import Workspace

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell and hard links")

PADDING = " " * 300


class Editor:
    def __init__(self, choice: str) -> None:
        self.choice = choice
        self.asked: list[dict[str, Any]] = []

    reviews_edits = False  # no diff review after a write here

    async def call(self, method: str, args: dict[str, Any]) -> Any:
        assert method == "approve"
        self.asked.append(dict(args))
        return {"choice": self.choice}


class Surface:
    def show(self, event: Any) -> None:
        pass

    def fire(self, event: str, data: Any = None) -> None:
        pass


async def run(
    root: Path, tool: str, choice: str, approvals: Approvals | None = None, **arguments: Any
) -> tuple[ToolResultPart, Editor]:
    settings = ToolSettings()
    tools = enabled_definitions(settings, [tool])
    editor = Editor(choice)
    context = ToolsContext(
        chat=ChatHandle(), editor=editor, approvals=approvals or Approvals(), workspace=Workspace(root)
    )
    orchestrator = Orchestrator(tools, {tool: settings.config_of(tool)}, context, Surface())
    batch = await orchestrator.run([ToolCall(id="call_1", name=tool, arguments=arguments)])
    [result] = batch.results
    return result, editor


WHERE = Sandbox(SandboxPolicy(), root=".").describe()  # the approval says where the command runs


async def test_padding_before_a_second_command_is_collapsed_in_the_prompt(tmp_path):
    (tmp_path / "x").mkdir()
    result, editor = await run(tmp_path, "run_command", "reject", cmd=f"ls{PADDING};{PADDING}rm -rf x", flag=None)
    [asked] = editor.asked
    assert asked["prompt"] == f"Run the command `ls ; rm -rf x`? ({WHERE})"
    assert asked["always"] == "Always accept `ls ; rm -rf x` in this chat"
    assert result.status == "rejected"
    assert (tmp_path / "x").is_dir()


async def test_what_the_prompt_shows_is_what_runs(tmp_path):
    command = f"echo   a\t\t;{PADDING}echo 'b    c'   \"d  $(echo 'e    f')\"   "
    result, editor = await run(tmp_path, "run_command", "accept", cmd=command, flag=None)
    shown = "echo a ; echo 'b    c' \"d  $(echo 'e    f')\""
    assert editor.asked[0]["prompt"] == f"Run the command `{shown}`? ({WHERE})"
    assert result.status == "success"
    assert result.content == f"`{shown}` (exit code 0):\n```\na\nb    c d  e    f\n```"


async def test_always_accept_covers_the_same_command_however_it_is_padded(tmp_path):
    approvals = Approvals()
    approvals.remember("run_command", "echo ok")
    result, editor = await run(tmp_path, "run_command", "reject", approvals, cmd="  echo     ok ", flag=None)
    assert editor.asked == []
    assert result.status == "success"


@pytest.mark.parametrize("hidden", ["\u00a0", "\u2003", "\r", "\u202e", "\u200b", "\x0b"])
async def test_a_command_with_characters_the_prompt_cannot_show_is_refused(tmp_path, hidden):
    (tmp_path / "x").mkdir()
    result, editor = await run(tmp_path, "run_command", "accept", cmd=f"ls{hidden * 50}; rm -rf x", flag=None)
    assert editor.asked == []
    assert result.status == "error"
    assert f"U+{ord(hidden):04X}" in result.content
    assert (tmp_path / "x").is_dir()


async def test_a_multi_line_command_is_also_shown_whole_above_the_prompt(tmp_path):
    result, editor = await run(tmp_path, "run_command", "reject", cmd="ls   \n\n\n   rm -rf x   ", flag=None)
    [asked] = editor.asked
    assert asked["prompt"] == f"Run the command `ls\nrm -rf x`? ({WHERE})"
    assert "```sh\nls\nrm -rf x\n```" in asked["detail"]


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("ls    ; rm -rf x", "ls ; rm -rf x"),
        ("  git   commit -m 'a    message'  ", "git commit -m 'a    message'"),
        ('echo "a   $(echo "b    c")   d"    e', 'echo "a   $(echo "b    c")   d" e'),
        ("echo a\\   b", "echo a\\  b"),
        ("ls # it's    a comment     \n   rm   x", "ls # it's a comment\nrm x"),
        ("cat <<EOF  \n   kept   as is\n\nEOF", "cat <<EOF\n   kept   as is\n\nEOF"),
        ("x=$((1 +    2))   &&   echo `echo   $x`", "x=$((1 + 2)) && echo `echo $x`"),
    ],
)
async def test_normalised_commands_mean_the_same_to_the_shell(tmp_path, command, shown):
    assert processes.normalize_command(command) == shown
    before = await shell_words(tmp_path, command)
    assert await shell_words(tmp_path, shown) == before


async def shell_words(root: Path, command: str) -> list[str]:
    """What `sh` does with `command`, with every simple command replaced by printing its
    words (through a function named like each command)."""
    functions = "; ".join(
        f"{name}() {{ printf '<%s>' {name} \"$@\"; echo; }}" for name in ("ls", "rm", "git", "echo", "cat")
    )
    proc = await asyncio.create_subprocess_exec(
        "/bin/sh",
        "-c",
        f"{functions}\n{command}",
        cwd=root,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    return out.decode().splitlines()


# --- the hard-link prompt ----------------------------------------------------------------------


async def test_a_hard_linked_file_is_named_plainly_in_the_prompt(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (tmp_path / "shared.txt").write_text("shared\n")
    os.link(tmp_path / "shared.txt", root / "hardlink.txt")
    result, editor = await run(root, "read_file", "reject", filepath="hardlink.txt")
    [asked] = editor.asked
    assert asked["must_ask"] == "hardlink.txt is a file with other hard links"
    assert "is has" not in asked["must_ask"]
    assert result.status == "rejected"


def test_shlex_agrees_on_the_words_of_a_normalised_command():
    command = "git   commit   -m  'a    message'   --author  \"A  B <a@b>\""
    assert shlex.split(processes.normalize_command(command)) == shlex.split(command)
