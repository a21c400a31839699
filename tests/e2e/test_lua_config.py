"""A CodeCompanion 19 config pasted as it is: Lua functions in adapters (an api_key function,
a handler override, a schema default function), `require("codecompanion.adapters")`, a
system prompt function. The local server records what it received."""

from __future__ import annotations

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread, sse_reply

pytestmark = pytest.mark.nvim


def chunk(content=None, finish=None):
    delta = {} if content is None else {"content": content}
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def ok_reply(text="Hi there"):
    return sse_reply([chunk(text), chunk(finish="stop")])


def ask(editor, text: str, count: int = 1) -> None:
    editor.type_prompt(text)
    editor.nvim.input("<CR>")
    editor.wait_event("CodeCompanionChatDone", count=count)


def test_a_pasted_codecompanion_config_with_lua_functions_reaches_the_server(editor):
    with ServerThread(ScriptedServer.sequence([ok_reply()])) as server:
        editor.setup(f"""{{
          adapters = {{ http = {{ mine = function()
            return require("codecompanion.adapters").extend("openai_compatible", {{
              env = {{
                url = "{server.url}",
                api_key = function(self) return "key-from-lua-for-" .. self.name end,
              }},
              schema = {{ model = {{ default = function(self) return "model-of-" .. self.formatted_name end }} }},
              handlers = {{
                form_parameters = function(self, params, messages)
                  params.temperature = 0.25
                  params.seen = #messages .. " messages, last: " .. messages[#messages].content
                  return params
                end,
              }},
            }})
          end }} }},
          interactions = {{ chat = {{
            adapter = "mine",
            opts = {{ goto_file_action = function(path) vim.cmd.edit(path) end }},  -- only Lua uses it
          }} }},
        }}""")
        editor.nvim.command("CodeCompanionChat")
        ask(editor, "Hello")

        request = server.requests[0]
        assert request.headers["authorization"] == "Bearer key-from-lua-for-mine"
        body = request.json()
        assert body["model"] == "model-of-mine"
        assert body["temperature"] == 0.25
        assert body["seen"] == "2 messages, last: Hello"  # the system prompt and the user's message
        assert body["messages"][-1] == {
            "role": "user",
            "content": "Hello",
        }  # the built-in handlers still build the rest
        assert "Hi there" in editor.text()
        started = [e for e in editor.events() if e["event"] == "CodeCompanionRequestStarted"][0]
        assert started["data"]["adapter"]["model"] == "model-of-mine"
        # no warning about functions being ignored
        messages = editor.nvim.api.exec2("messages", {"output": True})["output"]
        assert "ignored" not in messages and "not supported" not in messages


def test_a_literal_key_is_sent_as_it_is_and_a_header_function_is_called(editor):
    with ServerThread(ScriptedServer.sequence([ok_reply()])) as server:
        editor.setup(f"""{{
          adapters = {{ http = {{ lit = function()
            return require("codecompanion.adapters").extend("openai_compatible", {{
              env = {{ url = "{server.url}", api_key = "sk-literal-123" }},
              headers = {{ ["X-Trace"] = function(self) return "trace-" .. self.schema.model.default end }},
              schema = {{ model = {{ default = "m1" }} }},
            }})
          end }} }},
          interactions = {{ chat = {{ adapter = "lit" }} }},
        }}""")
        editor.nvim.command("CodeCompanionChat")
        ask(editor, "Hi")
        headers = server.requests[0].headers
        assert headers["authorization"] == "Bearer sk-literal-123"
        assert headers["x-trace"] == "trace-m1"


def test_a_failing_lua_function_names_its_config_path_and_the_chat_stays_usable(editor):
    with ServerThread(ScriptedServer.sequence([ok_reply("Recovered")])) as server:
        editor.setup(f"""{{
          adapters = {{ http = {{ flaky = function()
            return require("codecompanion.adapters").extend("openai_compatible", {{
              env = {{
                url = "{server.url}",
                api_key = function()
                  if not _G.key_ready then error("vault is locked") end
                  return "now-open"
                end,
              }},
              schema = {{ model = {{ default = "m" }} }},
            }})
          end }} }},
          interactions = {{ chat = {{ adapter = "flaky" }} }},
        }}""")
        editor.nvim.command("CodeCompanionChat")
        ask(editor, "First")
        done = [e for e in editor.events() if e["event"] == "CodeCompanionChatDone"][0]
        assert done["data"]["status"] == "error"
        text = editor.text()
        assert "adapters.http.flaky.env.api_key failed" in text and "vault is locked" in text
        assert server.requests == []  # nothing was sent without a key

        editor.lua("_G.key_ready = true")
        ask(editor, "Second", count=2)
        assert server.requests[0].headers["authorization"] == "Bearer now-open"
        assert "Recovered" in editor.text()


def test_a_system_prompt_function_gets_codecompanions_context(editor):
    with ServerThread(ScriptedServer.sequence([ok_reply()])) as server:
        editor.setup(f"""{{
          adapters = {{ http = {{ local_llm = function()
            return require("codecompanion.adapters").extend("openai_compatible", {{
              env = {{ url = "{server.url}" }}, schema = {{ model = {{ default = "m" }} }},
            }})
          end }} }},
          opts = {{ language = "Klingon" }},
          interactions = {{ chat = {{
            adapter = "local_llm",
            opts = {{ system_prompt = function(ctx)
              return table.concat({{ "PROMPT", ctx.language, ctx.nvim_version, ctx.os, ctx.cwd, ctx.adapter.name,
                tostring(#ctx.default_system_prompt > 0), ctx.date ~= "" and "dated" or "" }}, "|")
            end }},
          }} }},
        }}""")
        editor.nvim.command("CodeCompanionChat")
        ask(editor, "Hi")
        system = server.requests[0].json()["messages"][0]
        assert system["role"] == "system"
        parts = system["content"].split("|")
        version = editor.lua("local v = vim.version() return ('%d.%d.%d'):format(v.major, v.minor, v.patch)")
        assert parts[:4] == ["PROMPT", "Klingon", version, editor.lua("return vim.uv.os_uname().sysname")]
        assert parts[4] == editor.nvim.call("getcwd") and parts[5:] == ["local_llm", "true", "dated"]


def test_a_string_system_prompt_and_an_extend_table(editor):
    with ServerThread(ScriptedServer.sequence([ok_reply()])) as server:
        editor.setup(f"""{{
          adapters = {{ http = {{
            base = function()
              return require("codecompanion.adapters").extend("openai_compatible", {{
                env = {{ url = "{server.url}" }}, schema = {{ model = {{ default = "m" }} }},
              }})
            end,
            extend = {{ base = {{ env = {{ api_key = "from-extend-table" }} }} }},
          }} }},
          interactions = {{ chat = {{ adapter = "base", opts = {{ system_prompt = "Be brief." }} }} }},
        }}""")
        editor.nvim.command("CodeCompanionChat")
        ask(editor, "Hi")
        request = server.requests[0]
        assert request.json()["messages"][0] == {"role": "system", "content": "Be brief."}
        assert request.headers["authorization"] == "Bearer from-extend-table"
        assert "extend" not in editor.lua('return vim.tbl_values(require("codecompanion_py.rpc").request("adapters"))')


def test_lua_handlers_in_both_layouts_and_a_per_chunk_chat_output(editor):
    with ServerThread(ScriptedServer.sequence([ok_reply("streamed words"), ok_reply("second")])) as server:
        editor.setup(f"""{{
          adapters = {{ http = {{
            flat = function()
              return require("codecompanion.adapters").extend("openai_compatible", {{
                env = {{ url = "{server.url}" }}, schema = {{ model = {{ default = "m" }} }},
                handlers = {{
                  setup = function(self) self.parameters.from_setup = self.opts.stream; return true end,
                  chat_output = function(self, data, tools)
                    local utils = require("codecompanion.adapters.utils")
                    local json = vim.json.decode(utils.clean_streamed_data(data))
                    local choice = json.choices[1]
                    return {{ status = "success", finish_reason = choice.finish_reason ~= vim.NIL and choice.finish_reason or nil,
                      output = {{ role = "assistant", content = choice.delta.content and choice.delta.content:upper() }} }}
                  end,
                }},
              }})
            end,
            nested = function()
              return require("codecompanion.adapters").extend("openai_compatible", {{
                env = {{ url = "{server.url}" }}, schema = {{ model = {{ default = "m" }} }},
                handlers = {{ request = {{ build_body = function(self, data) return {{ from_nested = #data.messages }} end }} }},
              }})
            end,
          }} }},
          interactions = {{ chat = {{ adapter = "flat" }} }},
        }}""")
        editor.nvim.command("CodeCompanionChat")
        ask(editor, "One")
        assert server.requests[0].json()["from_setup"] is True  # what setup() did to self reached the request
        assert "STREAMED WORDS" in editor.text()

        editor.nvim.command("CodeCompanionChat adapter=nested")
        ask(editor, "Two", count=2)
        assert server.requests[1].json()["from_nested"] == 2
