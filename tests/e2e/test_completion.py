"""Edit predictions in a real Neovim against scripted providers on 127.0.0.1: a FIM server
(an OpenAI-compatible `/v1/completions`) and a chat model for the chat prompt. Ghost text
after the pause, accepted whole, by word and by line (one undo step each), cycled,
consumed by typing, dismissed with the request stopped on the server's side."""

from __future__ import annotations

import threading

import pytest

from codecompanion_py.demo.server import Reply, ScriptedServer, ServerThread, json_reply, sse_reply
from tests.e2e.test_chat_surface import setup

pytestmark = pytest.mark.nvim

GHOST = """
local ns = vim.api.nvim_get_namespaces().codecompanion_py_completion
if not ns then return nil end
local out = {}
for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })) do
  local lines = { (m[4].virt_text or {})[1] and m[4].virt_text[1][1] or "" }
  for _, l in ipairs(m[4].virt_lines or {}) do table.insert(lines, l[1][1]) end
  table.insert(out, table.concat(lines, "\\n"))
end
return out[1]"""


def completion_config(extra: str = "") -> str:
    """`interactions` with the chat's adapter and predictions on (a short pause, unless `extra` says)."""
    return f"interactions = {{ chat = {{ adapter = 'testllm' }}, completion = {{ enabled = true, debounce = 20, {extra} }} }},"


class Fim:
    """A FIM server: each request's answers are the next of `script` (a list of texts), and
    every prompt and suffix it was asked is kept."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)
        self.asked: list[dict] = []

    def __call__(self, request):
        if request.path != "/v1/completions":
            return json_reply({"error": {"message": f"unexpected {request.path}"}}, status=404)
        self.asked.append(request.json())
        texts = self.answers.pop(0) if self.answers else []
        return json_reply({"choices": [{"index": i, "text": t} for i, t in enumerate(texts)]})


def start_editing(editor, tmp_path, url: str, extra: str = "", text: str = "") -> None:
    setup(editor, url, completion_config(extra))
    path = tmp_path / "app.py"
    path.write_text(text)
    editor.nvim.command(f"edit {path}")


def ghost(editor):
    return editor.lua(GHOST)


def wait_ghost(editor, expected: str) -> None:
    editor.wait_for(lambda: ghost(editor) == expected, what=f"ghost text {expected!r} (shown: {ghost(editor)!r})")


def test_ghost_text_is_accepted_whole_in_one_undo_step(editor, tmp_path):
    fim = Fim(["(a, b):\n    return a + b"])
    with ServerThread(ScriptedServer(fim)) as server:
        start_editing(editor, tmp_path, server.url)
        editor.nvim.input("idef add")
        wait_ghost(editor, "(a, b):\n    return a + b")
        assert fim.asked[0]["prompt"].endswith("def add") and fim.asked[0]["suffix"] == ""
        assert "app.py" in fim.asked[0]["prompt"]  # the file's name goes along
        assert editor.events()[-1]["event"] == "CodeCompanionCompletionShown"
        editor.nvim.command("colorscheme default")  # it clears highlights; the link comes back
        assert editor.lua("return vim.api.nvim_get_hl(0, { name = 'CodeCompanionGhostText' }).link") == "Comment"
        editor.nvim.input("<M-l>")
        editor.wait_for(lambda: editor.lines() == ["def add(a, b):", "    return a + b"], what="accepted")
        assert editor.nvim.api.win_get_cursor(0) == [2, 16]
        assert ghost(editor) is None
        assert editor.wait_event("CodeCompanionCompletionAccepted")["data"]["kind"] == "whole"
        editor.nvim.input("<Esc>u")
        editor.wait_for(lambda: editor.lines() == ["def add"], what="one undo: the accepted text alone")


def test_accept_by_word_and_by_line_each_one_undo_step(editor, tmp_path):
    fim = Fim(["total = first + second\nprint(total)"])
    with ServerThread(ScriptedServer(fim)) as server:
        start_editing(editor, tmp_path, server.url, "keymaps = { accept_word = '<M-w>', accept_line = '<M-j>' }")
        editor.nvim.input("ix = 1<CR>")
        wait_ghost(editor, "total = first + second\nprint(total)")
        editor.nvim.input("<M-w>")
        editor.wait_for(lambda: editor.lines()[-1] == "total", what="a word accepted")
        wait_ghost(editor, " = first + second\nprint(total)")  # the rest stays shown
        editor.nvim.input("<M-j>")
        editor.wait_for(lambda: editor.lines()[-1] == "total = first + second", what="the line accepted")
        wait_ghost(editor, "\nprint(total)")
        editor.nvim.input("<Esc>u")
        editor.wait_for(lambda: editor.lines() == ["x = 1", "total"], what="undo: the line's accept alone")
        editor.nvim.input("u")
        editor.wait_for(lambda: editor.lines() == ["x = 1", ""], what="undo: the word's accept alone")


def test_candidates_cycle_and_typing_them_consumes_without_a_request(editor, tmp_path):
    fim = Fim(["alpha()", "beta()", "alpha()"])  # the answers of one request (n = 3 asked); one repeats
    with ServerThread(ScriptedServer(fim)) as server:
        start_editing(editor, tmp_path, server.url, "n_completions = 3")
        fim.answers = [["alpha()", "beta()", "alpha()"]]
        editor.nvim.input("icall_")
        wait_ghost(editor, "alpha()")
        assert fim.asked[0]["n"] == 3
        editor.nvim.input("<M-]>")
        wait_ghost(editor, "beta()")
        editor.nvim.input("<M-]>")
        wait_ghost(editor, "alpha()")  # two distinct candidates: round again
        editor.nvim.input("<M-[>")
        wait_ghost(editor, "beta()")
        editor.nvim.input("be")
        wait_ghost(editor, "ta()")
        assert editor.lua("return require('codecompanion').completion_status()")["state"] == "shown"
        assert len(fim.asked) == 1  # typed as shown: no new request
        editor.nvim.input("<M-l>")
        editor.wait_for(lambda: editor.lines() == ["call_beta()"], what="accepted the rest")


def test_another_key_dismisses_and_the_server_sees_the_request_stop(editor, tmp_path):
    arrived = threading.Event()
    release = threading.Event()

    def slow(request):
        if request.path != "/v1/completions":
            return json_reply({}, status=404)
        arrived.set()
        # headers and a first piece now, the rest never before the client leaves
        return Reply(headers={"content-type": "application/json"}, chunks=[b'{"choices": '], hang=True)

    fim = Fim(["print(value)"])

    def respond(request):
        return fim(request) if release.is_set() else slow(request)

    with ServerThread(ScriptedServer(respond)) as server:
        start_editing(editor, tmp_path, server.url)
        editor.nvim.input("ival")
        editor.wait_for(arrived.is_set, what="the request at the server")
        assert editor.lua("return require('codecompanion').completion_status()")["state"] == "waiting"
        release.set()
        editor.nvim.input("<Left>")  # not typing: the cursor moved
        editor.wait_for(lambda: server.disconnects == 1, what="the server to see the client leave")
        wait_ghost(editor, "print(value)")  # the next pause asks again, over a new connection
        editor.nvim.input("x")  # not what is shown: dismissed
        editor.wait_for(lambda: ghost(editor) != "print(value)", what="dismissed")


def test_a_chat_model_gets_the_prompt_and_its_fenced_answer_is_cleaned(editor, tmp_path):
    asked = []

    def chat(request):
        asked.append(request.json())
        text = "```python\nreturn x * 2\x1b[31m\n```"
        return sse_reply(
            [{"choices": [{"delta": {"content": text}}]}, {"choices": [{"delta": {}, "finish_reason": "stop"}]}]
        )

    with ServerThread(ScriptedServer(chat)) as server:
        setup(editor, server.url, completion_config())
        chatty = (
            'function() return require("codecompanion.adapters").extend("openai_compatible", '
            f'{{ env = {{ url = "{server.url}" }}, opts = {{ fim = false }}, schema = {{ model = {{ default = "m" }} }} }}) end'
        )
        editor.lua(f"""local cfg = require("codecompanion_py").config
          cfg.adapters.http.chatty = {chatty}
          cfg.interactions.completion.adapter = "chatty"
          require("codecompanion_py").setup(cfg)""")
        (tmp_path / "double.py").write_text("def double(x):\n    \n")
        editor.nvim.command(f"edit {tmp_path / 'double.py'}")
        editor.nvim.command("normal! 2G$")
        editor.nvim.input("a")
        wait_ghost(editor, "return x * 2")
        user = asked[0]["messages"][-1]["content"]
        assert "def double(x):\n    <|cursor|>" in user and "double.py" in user
        editor.nvim.input("<M-l>")
        editor.wait_for(lambda: editor.lines()[1] == "    return x * 2", what="indentation kept")


def test_off_by_default_and_toggled_by_the_command(editor, tmp_path):
    fim = Fim(["1"])
    with ServerThread(ScriptedServer(fim)) as server:
        setup(
            editor,
            server.url,
            "interactions = { chat = { adapter = 'testllm' }, completion = { debounce = 20, filetypes = { text = false } } },",
        )
        assert editor.lua("return require('codecompanion').completion_status()") == {"enabled": False, "state": "off"}
        editor.nvim.command(f"edit {tmp_path / 'a.py'}")
        editor.nvim.command("CodeCompanionCompletion toggle")
        editor.nvim.input("ix = ")
        wait_ghost(editor, "1")
        editor.nvim.input("<Esc>")
        wanted = "return require('codecompanion_py.completion').wanted(vim.api.nvim_get_current_buf())"
        assert editor.lua(wanted) is True
        editor.nvim.command(f"edit {tmp_path / 'notes.txt'}")  # filetype text: turned off
        assert editor.lua(wanted) is False
        editor.nvim.command("setlocal buftype=nofile filetype=python")  # not a file's buffer
        assert editor.lua(wanted) is False
        editor.nvim.command(f"edit {tmp_path / 'b.py'}")
        editor.lua(
            "require('codecompanion_py.options').get('interactions.completion').filetypes.python = "
            "function(buf) return vim.api.nvim_buf_get_name(buf):match('b%.py$') ~= nil end"
        )
        assert editor.lua(wanted) is True  # a function of the buffer decides
        editor.nvim.command(f"edit {tmp_path / 'c.py'}")
        assert editor.lua(wanted) is False
        editor.nvim.command("CodeCompanionCompletion disable")
        assert editor.lua("return require('codecompanion').completion_status()")["state"] == "off"


def test_an_adapter_whose_key_is_a_lua_function_predicts_too(editor, tmp_path):
    keys = []

    def fim(request):
        keys.append(request.headers.get("authorization"))
        return json_reply({"choices": [{"index": 0, "text": "42"}]})

    with ServerThread(ScriptedServer(fim)) as server:
        keyed = (
            'function() return require("codecompanion.adapters").extend("openai_compatible", '
            f'{{ env = {{ url = "{server.url}", api_key = function() return "from-lua" end }} }}) end'
        )
        editor.lua(f"""require("codecompanion").setup({{ adapters = {{ http = {{ keyed = {keyed} }} }},
          interactions = {{ completion = {{ enabled = true, debounce = 20, adapter = "keyed" }} }} }})""")
        editor.nvim.command(f"edit {tmp_path / 'a.py'}")
        editor.nvim.input("ianswer = ")
        wait_ghost(editor, "42")
        assert keys[-1] == "Bearer from-lua"


def test_errors_go_quiet_and_checkhealth_says_where_and_why(editor, tmp_path):
    def refused(request):
        return json_reply({"error": {"message": "invalid api key"}}, status=401)

    with ServerThread(ScriptedServer(refused)) as server:
        start_editing(editor, tmp_path, server.url)
        editor.lua("""_G.asked = 0; local rpc = require("codecompanion_py.rpc"); local notify = rpc.notify
          rpc.notify = function(method, payload)
            if method == "completion.request" then _G.asked = _G.asked + 1 end
            return notify(method, payload)
          end""")
        editor.nvim.input("ix = ")
        editor.wait_for(lambda: len(server.requests) >= 1, what="the request")
        status = editor.wait_for(
            lambda: (s := editor.lua("return require('codecompanion').completion_status()"))["state"] == "error" and s,
            what="the error state",
        )
        assert "invalid api key" in status["error"]
        asked = editor.lua("return _G.asked")
        editor.nvim.input("1")  # the next pause comes while predictions are quiet: the provider is not asked
        editor.wait_for(lambda: editor.lua("return _G.asked") > asked, what="the next pause's request")
        editor.wait_for(
            lambda: editor.lua("return require('codecompanion').completion_status()")["state"] == "error",
            what="its answer: still quiet",
        )
        assert len(server.requests) == 1
        assert editor.lua("return _G.cc_notes") == []  # no notification at a keystroke
        editor.nvim.command("checkhealth codecompanion")
        report = "\n".join(editor.lines())
        assert "sends the code around the cursor to testllm (test-model) at 127.0.0.1" in report
        assert "the last request failed" in report and "invalid api key" in report


def test_a_completion_menu_opening_dismisses_the_request_unless_configured(editor, tmp_path):
    def answer(request):
        if len(server.requests) == 1:  # the first answer starts, then waits for the client to leave
            return Reply(headers={"content-type": "application/json"}, chunks=[b'{"choices": '], hang=True)
        return json_reply({"choices": [{"index": 0, "text": "pha_value"}]})

    with ServerThread(ScriptedServer(answer)) as server:
        start_editing(editor, tmp_path, server.url)
        editor.nvim.input("ial")
        editor.wait_for(lambda: server.requests, what="the request at the server")
        editor.nvim.input("<Cmd>set completeopt=menuone,noinsert,noselect<CR><Cmd>call complete(1, ['alpha'])<CR>")
        editor.wait_for(lambda: server.disconnects == 1, what="the request stopped as the menu opened")
        assert editor.nvim.funcs.pumvisible() == 1 and ghost(editor) is None
        editor.nvim.input("<C-e>p")  # the menu closed, typing goes on: predictions come back
        wait_ghost(editor, "pha_value")
        assert editor.lines() == ["alp"]


def test_ghost_text_shows_with_the_menu_open_when_configured(editor, tmp_path):
    with ServerThread(ScriptedServer(Fim(["pha_value"], ["pha_value"]))) as server:
        start_editing(editor, tmp_path, server.url, "show_with_menu = true, debounce = 20")
        editor.nvim.input("ial<Cmd>set completeopt=menuone,noinsert,noselect<CR><Cmd>call complete(1, ['alpha'])<CR>")
        editor.wait_for(lambda: editor.nvim.funcs.pumvisible() == 1, what="the menu")
        wait_ghost(editor, "pha_value")
        assert editor.nvim.funcs.pumvisible() == 1


def test_text_of_turned_off_buffers_never_goes_along(editor, tmp_path):
    fim = Fim(["1"])
    with ServerThread(ScriptedServer(fim)) as server:
        start_editing(editor, tmp_path, server.url, "filetypes = { markdown = false }")
        for buffer, typed in (
            (f"edit {tmp_path / 'notes.md'}", "password = hunter2"),
            ("enew | setl bt=nofile", "t=ABC123"),
        ):
            editor.nvim.command(buffer)
            editor.nvim.input("i" + typed)  # its own typeahead: TextChangedI fires before the <Esc>
            editor.wait_for(lambda typed=typed: editor.lines() == [typed], what="typed")
            editor.nvim.command("doautocmd TextChangedI")
            editor.nvim.input("<Esc>")
        editor.nvim.command(f"edit {tmp_path / 'b.py'}")
        editor.nvim.input("ix = ")
        wait_ghost(editor, "1")
        assert "hunter2" not in fim.asked[-1]["prompt"] and "ABC123" not in fim.asked[-1]["prompt"]
        assert not any("hunter2" in a["prompt"] for a in fim.asked)


def test_keys_with_nothing_shown_do_what_they_did_and_user_mappings_come_back(editor, tmp_path):
    with ServerThread(ScriptedServer(Fim())) as server:
        editor.nvim.command("inoremap <M-]> USERNEXT")
        editor.nvim.command("iabbrev teh the")
        start_editing(editor, tmp_path, server.url, "debounce = 100000")
        assert editor.nvim.call("maparg", "<M-]>", "i") != "USERNEXT"  # the plugin's, while on
        editor.nvim.input("ix<M-]> teh<C-]>")
        editor.wait_for(
            lambda: editor.lines() == ["xUSERNEXT the"], what=f"the user's map, the abbreviation: {editor.lines()}"
        )
        editor.nvim.input("<Esc>")
        editor.nvim.command("CodeCompanionCompletion disable")
        assert editor.nvim.call("maparg", "<M-]>", "i") == "USERNEXT"
        editor.nvim.command("CodeCompanionCompletion enable")
        editor.nvim.input("ccab<M-l>")  # unmapped before: Neovim's own <M-l> (<Esc>l), not a stray "l"
        editor.wait_for(lambda: editor.nvim.api.get_mode()["mode"] == "n", what="normal mode")
        assert editor.lines() == ["ab"]


@pytest.mark.parametrize(("keys", "expected"), [("x<M-l>", ["v = abx"]), ("<CR><M-l>", ["v = ab", ""])])
def test_keys_just_before_an_accept_in_the_same_typeahead_dismiss_it(editor, tmp_path, keys, expected):
    with ServerThread(ScriptedServer(Fim(["SUGGESTION"]))) as server:
        start_editing(editor, tmp_path, server.url)
        editor.nvim.input("iv = ab")
        wait_ghost(editor, "SUGGESTION")
        editor.nvim.input(keys)
        editor.wait_for(lambda: editor.nvim.api.get_mode()["mode"] == "n", what="<M-l> as Neovim's own: normal mode")
        assert editor.lines() == expected and ghost(editor) is None
        assert editor.nvim.eval("v:errmsg") == ""


def test_long_lines_are_cut_to_the_budget_before_they_leave_the_editor(editor, tmp_path):
    fim = Fim(["1"])
    wide = "é" * 5000  # 10,000 bytes a line
    text = "\n".join([wide] * 300 + ["x = "] + [wide] * 300)
    with ServerThread(ScriptedServer(fim)) as server:
        start_editing(editor, tmp_path, server.url, "context_window = 1000", text=text)
        editor.lua("""_G.sent = {}; local rpc = require("codecompanion_py.rpc"); local notify = rpc.notify
          rpc.notify = function(method, payload)
            if method == "completion.request" then table.insert(_G.sent, #payload.prefix + #payload.suffix) end
            return notify(method, payload)
          end""")
        editor.nvim.command("normal! 301G$")
        editor.nvim.input("a")
        wait_ghost(editor, "1")
        assert 0 < max(editor.lua("return _G.sent")) <= 2 * 4000 + 10  # 4 bytes a token each side
        assert fim.asked[0]["prompt"].endswith("\nx = ") and fim.asked[0]["suffix"].startswith("\né")


def test_ghost_text_shows_in_the_current_window_only(editor, tmp_path):
    with ServerThread(ScriptedServer(Fim(["1"]))) as server:
        start_editing(editor, tmp_path, server.url)
        editor.nvim.command("split")  # two windows on the buffer
        editor.nvim.input("ix = ")
        wait_ghost(editor, "1")
        visible = "return vim.api.nvim__ns_get(vim.api.nvim_get_namespaces().codecompanion_py_completion).wins"
        assert editor.lua(visible) == [editor.nvim.api.get_current_win().handle]


def test_checkhealth_follows_the_command_not_the_config(editor, tmp_path):
    with ServerThread(ScriptedServer(Fim(["1"]))) as server:
        setup(editor, server.url, "interactions = { chat = { adapter = 'testllm' }, completion = { debounce = 20 } },")

        def report():
            editor.nvim.command("checkhealth codecompanion")
            text = "\n".join(editor.lines())
            editor.nvim.command("bwipeout")
            return text

        editor.nvim.command("CodeCompanionCompletion enable")  # the config says off
        assert "sends the code around the cursor to testllm" in report()
        editor.nvim.command(f"edit {tmp_path / 'a.py'}")
        editor.nvim.input("ix = ")
        wait_ghost(editor, "1")
        editor.nvim.input("<Esc>")
        editor.nvim.command("CodeCompanionCompletion disable")
        text = report()
        assert "off: no code is sent" in text and "sends the code" not in text


def test_accept_word_takes_a_non_ascii_identifier_whole(editor, tmp_path):
    with ServerThread(ScriptedServer(Fim(["café_crème + (1)"]))) as server:
        start_editing(editor, tmp_path, server.url, "keymaps = { accept_word = '<M-w>' }")
        editor.nvim.input("ix = ")
        wait_ghost(editor, "café_crème + (1)")
        editor.nvim.input("<M-w>")
        editor.wait_for(lambda: editor.lines() == ["x = café_crème"], what=f"the word accepted: {editor.lines()}")
        editor.nvim.input("<M-w>")
        editor.wait_for(lambda: editor.lines() == ["x = café_crème +"], what=f"punctuation: {editor.lines()}")
        editor.nvim.input("<M-w><M-w>")
        editor.wait_for(
            lambda: editor.lines() == ["x = café_crème + (1"], what=f"punctuation, a word: {editor.lines()}"
        )


def test_leading_tabs_follow_expandtab(editor, tmp_path):
    with ServerThread(ScriptedServer(Fim([":\n\treturn 1"]))) as server:
        start_editing(editor, tmp_path, server.url)
        editor.nvim.command("setlocal expandtab shiftwidth=4 tabstop=8")
        editor.nvim.input("iif x")
        wait_ghost(editor, ":\n    return 1")
        editor.nvim.input("<M-l>")
        editor.wait_for(lambda: editor.lines() == ["if x:", "    return 1"], what=f"spaces: {editor.lines()}")
