"""CodeCompanion's code review in real Neovim, against real git repositories made here: a chat
whose LLM (a local scripted server) edits files through the built-in tools, then
`:CodeCompanionCodeReview` and its subcommands, the quickfix keys, comments as virtual
text, `#{code_review}` in the next message, `Share`, worktrees, a folder without git and
a PATH without git."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread

from .test_tools import RECORD_UI, setup_with_tools, text_reply, tool_call_reply

pytestmark = pytest.mark.nvim

BASELINE = "refs/worktree/codecompanion/baseline"
CALC = "".join(f"line {n}\n" for n in range(1, 21))


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "calc.txt").write_text(CALC)
    (root / "notes.md").write_text("# Notes\n")
    (root / "staged.txt").write_text("one\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    (root / "staged.txt").write_text("one\ntwo, staged by the user\n")
    git(root, "add", "staged.txt")  # the user's staged change: never touched by the review
    return root


def edits(*pairs: tuple[str, str]) -> dict:
    return {"filepath": "calc.txt", "edits": [{"oldText": old, "newText": new} for old, new in pairs]}


def start(editor, url: str, cwd: Path, storage: Path, extra: str = "", review_opts: str = "") -> None:
    editor.nvim.command(f"cd {cwd}")
    review = f'code_review = {{ opts = {{ storage_dir = "{storage}" }}, {review_opts} }},'
    setup_with_tools(editor, url, extra=f"interactions = {{ {review} }}, {extra}")
    editor.lua(RECORD_UI)


def chat_turn(editor, prompt: str, done: int) -> int:
    """A message sent in the chat (opened once, YOLO on: tools run unasked); its buffer."""
    if not editor.lua("return require('codecompanion_py.chat').last_chat() ~= nil"):
        editor.nvim.command("CodeCompanionChat")
        editor.nvim.input("gty")
        editor.wait_for(lambda: any("YOLO" in n for n in editor.lua("return _G.cc_notes")), what="YOLO on")
    buf = editor.lua("return require('codecompanion_py.chat').last_chat().bufnr")
    editor.nvim.command(f"buffer {buf}")
    editor.type_prompt(prompt)
    editor.nvim.input("<CR>")
    editor.wait_event("CodeCompanionChatDone", count=done, timeout=60)
    return buf


def review(editor, *args: str) -> list[tuple[str, int]]:
    editor.nvim.command("CodeCompanionCodeReview " + " ".join(args))
    return qf(editor)[1]


def qf(editor) -> tuple[str, list[tuple[str, int]]]:
    """The quickfix list's title and entries (file name, line)."""
    title, items = editor.lua("""local got = vim.fn.getqflist({ title = 1, items = 1 })
      return { got.title, vim.tbl_map(function(i)
        return { vim.fs.basename(vim.api.nvim_buf_get_name(i.bufnr)), i.lnum } end, got.items) }""")
    return title, [tuple(item) for item in items]


def press_in_list(editor, index: int, key: str) -> None:
    editor.nvim.command("botright copen")
    editor.nvim.call("cursor", index, 1)
    editor.nvim.command(f"normal {key}")  # the list's mapping, run to its end


def comment(editor, line: int, text: str | None, *, end: int | None = None) -> None:
    """`:CodeCompanionCodeReview Comment` on `line` (or line..end) of the current file, its
    input filled with `text` (None: left as it opened) and sent with the chat's <CR>."""
    before = editor.nvim.api.get_current_win()
    rng = f"{line},{end}" if end else ""
    if not end:
        editor.nvim.call("cursor", line, 1)
    editor.nvim.command(f"{rng}CodeCompanionCodeReview Comment")
    editor.wait_for(lambda: editor.nvim.api.get_current_win() != before, what="the comment's input")
    if text is not None:
        editor.nvim.command("%delete _")
        if text:
            editor.nvim.api.buf_set_lines(0, 0, -1, False, text.split("\n"))
    editor.nvim.input("<Esc><CR>")
    editor.wait_for(lambda: editor.nvim.api.get_current_win() == before, what="the input closed")


def pending_marks(editor, buf: int) -> list[tuple[int, str]]:
    return [
        (row, text)
        for row, text in editor.lua(
            """local ns = vim.api.nvim_create_namespace("codecompanion_py_review")
            local out = {}
            for _, m in ipairs(vim.api.nvim_buf_get_extmarks(..., ns, 0, -1, { details = true })) do
              for _, line in ipairs(m[4].virt_lines or {}) do table.insert(out, { m[2] + 1, line[1][1] }) end
            end
            return out""",
            buf,
        )
    ]


def test_a_round_of_review_from_the_agent_s_edits_to_its_next_round(editor, repo, tmp_path):
    index_before = (repo / ".git" / "index").read_bytes()
    cached_before = git(repo, "diff", "--cached")
    new_file = {"filepath": "made.txt", "content": "made by the agent\n"}
    replies = [
        tool_call_reply(
            ("e1", "insert_edit_into_file", edits(("line 2\n", "line two\n"), ("line 15\n", "line fifteen\n"))),
            ("e2", "create_file", new_file),
        ),
        text_reply("Done."),
        text_reply("I'll fix those."),  # the reply to the review (it makes no edit here)...
        tool_call_reply(("e3", "insert_edit_into_file", edits(("line 8\n", "line eight\n")))),
        text_reply("Round two."),
    ]
    storage = tmp_path / "storage"
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        start(editor, server.url, repo, storage)
        editor.nvim.command("CodeCompanionCodeReview Start")
        assert git(repo, "rev-parse", "--verify", "-q", BASELINE).strip()
        chat = chat_turn(editor, "Rename the lines with @{files}", done=1)
        (repo / "notes.md").write_text("# Notes\nthe user's own edit\n")  # not the agent's

        review(editor)
        title, entries = qf(editor)
        assert "one entry per hunk" in title
        assert entries == [("calc.txt", 2), ("calc.txt", 15), ("made.txt", 1)]

        # `a` accepts the hunk under the cursor, `x` ignores the file: both leave the review
        press_in_list(editor, 1, "a")
        editor.wait_for(lambda: len(qf(editor)[1]) == 2, what="the accepted hunk gone")
        assert qf(editor)[1] == [("calc.txt", 15), ("made.txt", 1)]
        press_in_list(editor, 2, "x")
        editor.wait_for(lambda: len(qf(editor)[1]) == 1, what="the ignored file gone")
        assert qf(editor)[1] == [("calc.txt", 15)]
        # All: every change since the baseline, the user's own and what was accepted or ignored
        review(editor, "All")
        assert sorted(qf(editor)[1]) == [("calc.txt", 2), ("calc.txt", 15), ("made.txt", 1), ("notes.md", 2)]
        review(editor)
        assert qf(editor)[1] == [("calc.txt", 15)]

        # `d`: the baseline's side beside the file, both in diff mode
        diffopt = editor.nvim.options["diffopt"]
        press_in_list(editor, 1, "d")
        editor.wait_for(lambda: editor.nvim.eval("&diff") == 1, what="the diff")
        windows = [w for w in editor.nvim.windows if w.options["diff"]]
        assert len(windows) == 2
        sides = {editor.nvim.api.buf_get_name(w.buffer.number).endswith("calc.txt") for w in windows}
        assert sides == {True, False}
        base = next(w.buffer for w in windows if not w.buffer.name.endswith("calc.txt"))
        assert base[14] == "line 15" and editor.nvim.current.buffer[14] == "line fifteen"
        assert editor.nvim.options["diffopt"] == diffopt
        editor.nvim.command("only")

        # `c`: a comment on the hunk, shown above its line
        calc = editor.nvim.call("bufnr", str(repo / "calc.txt"))
        editor.nvim.command("botright copen")
        editor.nvim.call("cursor", 1, 1)
        editor.nvim.input("c")
        editor.wait_for(lambda: editor.nvim.current.buffer.options["filetype"] == "markdown", what="the input")
        editor.nvim.api.buf_set_lines(0, 0, -1, False, ["Fifteen should stay a number"])
        editor.nvim.input("<Esc><CR>")
        editor.wait_for(lambda: pending_marks(editor, calc), what="the comment's virtual text")
        assert pending_marks(editor, calc) == [(15, "💬 Fifteen should stay a number")]

        # Comment on a range; then on its line again: it opens with the comment, to edit
        editor.nvim.command(f"buffer {calc}")
        comment(editor, 4, "Why these?", end=5)
        editor.wait_for(lambda: len(pending_marks(editor, calc)) == 2, what="two comments")
        comment(editor, 4, None)  # opened with its text, sent unchanged
        editor.nvim.command(f"buffer {calc}")
        comment(editor, 5, "Why these lines?")  # line 5 is in the 4-5 comment: edited, not added
        editor.wait_for(lambda: (4, "💬 Why these lines?") in pending_marks(editor, calc), what="the edit")
        assert len(pending_marks(editor, calc)) == 2
        comment(editor, 4, "")  # empty: deleted
        editor.wait_for(lambda: len(pending_marks(editor, calc)) == 1, what="the deletion")
        comment(editor, 7, "And this line")
        editor.wait_for(lambda: len(pending_marks(editor, calc)) == 2, what="a third comment")

        # Approve with comments pending: the baseline moves, the comments stay, and it says so
        old_baseline = git(repo, "rev-parse", BASELINE)
        editor.lua("_G.cc_notes = {}")
        editor.nvim.command("CodeCompanionCodeReview Approve")
        assert any("still pending" in n for n in editor.lua("return _G.cc_notes"))
        assert git(repo, "rev-parse", BASELINE) != old_baseline
        assert len(pending_marks(editor, calc)) == 2
        (repo / "notes.md").write_text("# Notes\nafter the approval\n")

        # #{code_review}: the comments go to the LLM as blocks, the chat shows them short
        chat_turn(editor, "Please action #{code_review}", done=2)
        body = server.requests[2].json()
        sent = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user" and m["content"])
        assert "Please action my comments from the code review, which I've attached" in sent
        assert "#{code_review}" not in sent
        assert '<comment file="calc.txt" lines="15-15">' in sent and "line fifteen" in sent
        assert "Fifteen should stay a number" in sent
        assert '<comment file="calc.txt" lines="7-7">' in sent and "And this line" in sent
        shown = editor.text(chat)
        turn = shown[shown.index("Please action #{code_review}") : shown.index("I'll fix those.")]
        assert "calc.txt:15\nFifteen should stay a number" in turn  # under the message, not the code
        assert "line fifteen" not in turn
        assert pending_marks(editor, calc) == []  # sent: no longer pending
        after_send = git(repo, "rev-parse", BASELINE)
        assert review(editor, "All") == []  # the baseline advanced past the change made before it

        # a message with the tag and nothing pending: the tag does nothing; the agent edits
        # again, and the next review shows only that round
        chat_turn(editor, "Next round #{code_review}", done=3)
        assert "Next round #{code_review}" in "\n".join(
            m["content"] for m in server.requests[3].json()["messages"] if m["role"] == "user"
        )
        assert git(repo, "rev-parse", BASELINE) == after_send
        review(editor)
        assert qf(editor)[1] == [("calc.txt", 8)]

    assert (repo / ".git" / "index").read_bytes() == index_before  # the user's index, byte for byte
    assert git(repo, "diff", "--cached") == cached_before


def comments_on_disk(storage: Path) -> dict[str, str]:
    return {str(p.relative_to(storage)): p.read_text() for p in storage.rglob("comments.md")}


def test_share_writes_review_md_copies_its_path_and_starts_a_new_round(editor, repo, tmp_path):
    storage = tmp_path / "storage"
    start(editor, "http://127.0.0.1:9", repo, storage)
    editor.nvim.command("CodeCompanionCodeReview Start")
    # an agent outside Neovim (a CLI in another terminal) changes the file
    (repo / "calc.txt").write_text(CALC.replace("line 3\n", "line III\n"))
    assert review(editor) == []  # not through our tools: only `All` has it
    assert review(editor, "All") == [("calc.txt", 3)]
    editor.nvim.command(f"edit {repo / 'calc.txt'}")
    comment(editor, 3, "Roman numerals? Really?")
    calc = editor.nvim.current.buffer.number
    editor.wait_for(lambda: pending_marks(editor, calc), what="virtual text")

    editor.nvim.command("CodeCompanionCodeReview Share")
    path = Path(editor.nvim.call("getreg", '"'))
    assert path.name == "review.md" and path.is_relative_to(storage)
    shared = path.read_text()
    assert '<comment file="calc.txt" lines="3-3">' in shared and "line III" in shared
    assert "Roman numerals? Really?" in shared
    assert pending_marks(editor, calc) == [] and comments_on_disk(storage) == {}
    assert review(editor, "All") == []  # the baseline advanced: the next round starts empty

    # the next round's review.md is the same file
    (repo / "calc.txt").write_text(CALC.replace("line 4\n", "line IV\n"))
    comment(editor, 4, "Again")
    editor.lua("_G.cc_notes = {}")
    editor.nvim.command("CodeCompanionCodeReview Share")
    assert Path(editor.nvim.call("getreg", '"')) == path and "Again" in path.read_text()
    assert "Roman" not in path.read_text()
    editor.nvim.command("CodeCompanionCodeReview Share")  # nothing pending: said, nothing written
    assert any("no comments to share" in n for n in editor.lua("return _G.cc_notes"))


def test_the_comments_file_is_edited_by_hand_and_saved_by_bw(editor, repo, tmp_path):
    storage = tmp_path / "storage"
    start(editor, "http://127.0.0.1:9", repo, storage)
    editor.nvim.command(f"edit {repo / 'calc.txt'}")
    calc = editor.nvim.current.buffer.number
    comment(editor, 2, "First thought")
    comment(editor, 9, "Second thought")
    editor.wait_for(lambda: len(pending_marks(editor, calc)) == 2, what="two comments")
    window = editor.nvim.api.get_current_win()
    editor.nvim.call("cursor", 5, 1)
    editor.nvim.command("CodeCompanionCodeReview Comment")
    editor.nvim.api.buf_set_lines(0, 0, -1, False, ["never mind"])
    editor.nvim.input("<Esc>q")  # left: nothing saved
    editor.wait_for(lambda: editor.nvim.api.get_current_win() == window, what="the input left")
    assert "never mind" not in "".join(comments_on_disk(storage).values())

    editor.nvim.command("CodeCompanionCodeReview Comments")
    text = editor.text()
    assert "## calc.txt:2-2" in text and "line 2" in text and "First thought" in text
    lines = [line.replace("First thought", "A better thought") for line in editor.lines()]
    editor.nvim.api.buf_set_lines(0, 0, -1, False, lines)
    editor.nvim.command("bw")
    editor.wait_for(lambda: (2, "💬 A better thought") in pending_marks(editor, calc), what="the edit saved")
    assert "A better thought" in "".join(comments_on_disk(storage).values())

    # text that is no comment is kept aside, never dropped; the comments go on
    editor.nvim.command("CodeCompanionCodeReview Comments")
    editor.nvim.api.buf_set_lines(0, 0, 0, False, ["stray words before any heading"])
    editor.nvim.command("bw")
    editor.wait_for(lambda: list(storage.rglob("comments.md.kept-*")), what="the kept text")
    [kept] = storage.rglob("comments.md.kept-*")
    assert "stray words before any heading" in kept.read_text()
    assert len(pending_marks(editor, calc)) == 2


def test_a_broken_state_file_is_kept_aside_and_the_review_goes_on(editor, repo, tmp_path):
    storage = tmp_path / "storage"
    start(editor, "http://127.0.0.1:9", repo, storage)
    editor.nvim.command("CodeCompanionCodeReview Start")
    (repo / "calc.txt").write_text(CALC.replace("line 3\n", "line III\n"))
    review(editor, "All")
    press_in_list(editor, 1, "x")
    [state] = storage.rglob("state.json")
    editor.wait_for(lambda: "calc.txt" in state.read_text(), what="the file ignored")
    state.write_text("{not json")
    editor.lua("_G.cc_notes = {}")
    assert review(editor, "All") == [("calc.txt", 3)]
    notes = editor.lua("return _G.cc_notes")
    assert any("state.json" in n and "kept as" in n for n in notes), notes
    [aside] = storage.rglob("state.json.broken-*")
    assert aside.read_text() == "{not json"


def test_each_worktree_has_its_own_baseline_and_comments(editor, repo, tmp_path):
    storage = tmp_path / "storage"
    git(repo, "commit", "-q", "-m", "staged")
    other = tmp_path / "other"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(other))
    start(editor, "http://127.0.0.1:9", repo, storage)
    editor.nvim.command("CodeCompanionCodeReview Start")
    main_baseline = git(repo, "rev-parse", BASELINE)
    editor.nvim.command(f"edit {repo / 'calc.txt'}")
    comment(editor, 1, "main's comment")

    editor.nvim.command(f"cd {other}")
    assert subprocess.run(["git", "rev-parse", "-q", "--verify", BASELINE], cwd=other).returncode != 0
    (other / "calc.txt").write_text(CALC.replace("line 6\n", "line six\n"))
    editor.nvim.command("CodeCompanionCodeReview Start")
    other_baseline = git(other, "rev-parse", BASELINE)
    assert other_baseline != main_baseline and git(repo, "rev-parse", BASELINE) == main_baseline
    (other / "calc.txt").write_text(CALC.replace("line 6\n", "line six\n").replace("line 9\n", "line nine\n"))
    assert review(editor, "All") == [("calc.txt", 9)]  # the feature branch's round, from its own baseline
    editor.nvim.command(f"edit {other / 'calc.txt'}")
    comment(editor, 9, "feature's comment")
    on_disk = comments_on_disk(storage)
    assert len(on_disk) == 2  # one per repository root and branch
    [mine] = [text for text in on_disk.values() if "feature's" in text]
    assert "main's" not in mine

    editor.nvim.command(f"cd {repo}")
    editor.nvim.command("CodeCompanionCodeReview Comments")
    assert "main's comment" in editor.text() and "feature's" not in editor.text()


def test_a_folder_without_git_is_reviewed_through_a_shadow_store(editor, tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "notes.txt").write_text("alpha\nbeta\n")
    start(editor, "http://127.0.0.1:9", folder, tmp_path / "storage")
    editor.nvim.command("CodeCompanionCodeReview Start")
    (folder / "notes.txt").write_text("alpha\nBETA\n")
    (folder / "new.txt").write_text("new\n")
    assert review(editor, "All") == [("new.txt", 1), ("notes.txt", 2)]
    assert not (folder / ".git").exists()
    press_in_list(editor, 2, "d")
    editor.wait_for(lambda: editor.nvim.eval("&diff") == 1, what="the diff")
    base = next(w.buffer for w in editor.nvim.windows if w.options["diff"] and w != editor.nvim.current.window)
    assert base[:] == ["alpha", "beta"]


def test_options_turn_it_off_unmap_keys_and_take_a_diff_provider(editor, repo, tmp_path):
    storage = tmp_path / "storage"
    provider = "function(target) _G.target = target end"
    mine = f"keymaps = {{ ignore = false }}, display = {{ diff = {{ provider = {provider} }} }},"
    start(editor, "http://127.0.0.1:9", repo, storage, review_opts=mine)
    editor.nvim.command("CodeCompanionCodeReview Start")
    (repo / "calc.txt").write_text(CALC.replace("line 5\n", "line five\n"))
    assert review(editor, "All") == [("calc.txt", 5)]
    press_in_list(editor, 1, "d")
    editor.wait_for(lambda: editor.lua("return _G.target ~= nil"), what="the provider called")
    target = editor.lua("return _G.target")
    assert target["path"] == str(repo / "calc.txt") and target["line"] == 5
    assert target["baseline_ref"] == BASELINE and target["root"] == str(repo) and target["id"]
    editor.nvim.command("botright copen")  # in the list: `x` is not mapped, `a` is
    assert editor.nvim.call("maparg", "x", "n") == "" and editor.nvim.call("maparg", "a", "n") != ""
    assert review(editor, "All") == [("calc.txt", 5)]
    assert "calc.txt" not in "".join(p.read_text() for p in storage.rglob("state.json"))

    editor.lua("require('codecompanion_py').config.interactions.code_review.enabled = false")
    editor.lua("_G.cc_notes = {}")
    editor.nvim.command("cclose | CodeCompanionCodeReview All")
    assert any("code review is off" in n for n in editor.lua("return _G.cc_notes"))
    got = editor.lua("return require('codecompanion_py.chat.context').capture({}, '#{code_review}')")
    assert got == []


def test_without_git_on_path_the_review_lists_the_files_the_agent_edited(spawn, nvim_home, monkeypatch, tmp_path):
    init, env = nvim_home
    for key in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(key, env[key])
    bare = tmp_path / "bin"
    bare.mkdir()
    monkeypatch.setenv("PATH", str(bare))
    assert shutil.which("git") is None
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "calc.txt").write_text(CALC)
    editor = spawn(init)
    replies = [tool_call_reply(("e1", "insert_edit_into_file", edits(("line 2\n", "line two\n")))), text_reply("ok")]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        start(editor, server.url, folder, tmp_path / "storage")
        chat_turn(editor, "Edit with @{files}", done=1)
        assert (folder / "calc.txt").read_text().startswith("line 1\nline two\n")
        editor.lua("_G.cc_notes = {}")
        editor.nvim.command("CodeCompanionCodeReview")
        notes = editor.lua("return _G.cc_notes")
        assert any("git" in n and "files edited" in n for n in notes), notes
        title, entries = qf(editor)
        assert title == "Files edited by the LLM" and entries == [("calc.txt", 1)]
        # comments still work, and #{code_review} sends them
        editor.nvim.command(f"edit {folder / 'calc.txt'}")
        comment(editor, 2, "no git, still a comment")
        calc = editor.nvim.current.buffer.number
        editor.wait_for(lambda: pending_marks(editor, calc), what="the comment shown")
        got = editor.lua("return require('codecompanion_py.chat.context').capture({}, '#{code_review}')")
        assert "no git, still a comment" in got[0]["content"] and "line two" in got[0]["content"]


def test_a_cli_agent_s_prompt_takes_the_baseline_and_code_review_sends_the_comments(editor, repo, tmp_path):
    from .test_cli_interaction import AGENT, configure, received

    script, log, storage = tmp_path / "agent.py", tmp_path / "log", tmp_path / "storage"
    script.write_text(AGENT)
    editor.nvim.command(f"cd {repo}")
    configure(editor, script, log)
    editor.lua(
        "require('codecompanion_py').config.interactions.code_review = { opts = { storage_dir = ... } }", str(storage)
    )
    editor.nvim.command("CodeCompanionCLI hello")
    received(log, "hello")
    editor.wait_for(
        lambda: subprocess.run(["git", "rev-parse", "-q", "--verify", BASELINE], cwd=repo).returncode == 0,
        what="the baseline taken for the CLI agent",
    )
    first = git(repo, "rev-parse", BASELINE)

    (repo / "calc.txt").write_text(CALC.replace("line 2\n", "line 2 \n"))  # the agent's work
    editor.nvim.command(f"edit {repo / 'calc.txt'}")
    comment(editor, 2, "Spell it out")
    editor.nvim.command("CodeCompanionCLI Please action #{code_review}")
    text = received(log, "Spell it out")
    assert '<comment file="calc.txt" lines="2-2">' in text and "line 2 " in text
    assert comments_on_disk(storage) == {} and git(repo, "rev-parse", BASELINE) != first


def test_a_chat_s_first_message_takes_the_baseline_its_edits_are_reviewed_against(editor, repo, tmp_path):
    replies = [
        tool_call_reply(("e1", "insert_edit_into_file", edits(("line 12\n", "line twelve\n")))),
        text_reply("ok"),
    ]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        start(editor, server.url, repo, tmp_path / "storage")
        assert subprocess.run(["git", "rev-parse", "-q", "--verify", BASELINE], cwd=repo).returncode != 0
        chat_turn(editor, "Edit with @{files}", done=1)
        assert review(editor) == [("calc.txt", 12)]  # no Start: the chat took the baseline itself
