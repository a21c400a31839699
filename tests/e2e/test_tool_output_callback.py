"""`on_tool_output` as CodeCompanion 19's docs use it: a callback added to the chat changes a
tool's output before the LLM and the buffer get it."""

from __future__ import annotations

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread

from .lua_tools import calculator_callback
from .test_tools import setup_with_tools, text_reply, tool_call_reply, tool_messages

pytestmark = pytest.mark.nvim

# as the docs add it: on CodeCompanionChatCreated, to the chat buf_get_chat gives
ADD_CALLBACK = """
vim.api.nvim_create_autocmd("User", { pattern = "CodeCompanionChatCreated", callback = function(args)
  local chat = require("codecompanion").buf_get_chat(args.data.bufnr)
  chat:add_callback("on_tool_output", function(c, data)
    _G.seen = { tool = data.tool, tokens = require("codecompanion.utils.tokens").calculate(data.for_llm) }
    data.for_llm = data.for_llm .. " (checked by the callback)"
    data.for_user = "the callback says " .. data.for_user
  end)
end })
"""


def test_a_callback_changes_what_the_llm_and_the_user_get_from_a_tool(editor):
    call = ("call_calc", "calculator", {"num1": 6, "num2": 7, "operation": "multiply"})
    with ServerThread(ScriptedServer.sequence([tool_call_reply(call), text_reply("42 it is")])) as server:
        setup_with_tools(editor, server.url, calculator_callback(""))
        editor.lua(ADD_CALLBACK)
        editor.nvim.command("CodeCompanionChat Use the @{calculator} tool for 6*7")
        editor.wait_event("CodeCompanionChatDone", timeout=30)
        [result] = tool_messages(server.requests[1])
        assert result["content"] == "42 (checked by the callback)"
        assert "the callback says 42" in editor.lines()
        assert editor.lua("return _G.seen") == {"tool": "calculator", "tokens": 1}


def test_without_the_callback_the_output_is_the_tools_own(editor):
    call = ("call_calc", "calculator", {"num1": 6, "num2": 7, "operation": "multiply"})
    with ServerThread(ScriptedServer.sequence([tool_call_reply(call), text_reply("42 it is")])) as server:
        setup_with_tools(editor, server.url, calculator_callback(""))
        editor.nvim.command("CodeCompanionChat Use the @{calculator} tool for 6*7")
        editor.wait_event("CodeCompanionChatDone", timeout=30)
        assert tool_messages(server.requests[1])[0]["content"] == "42"
