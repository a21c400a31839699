"""A user opens a chat in real Neovim, submits, watches the reply stream, stops it."""

from __future__ import annotations

import json
import re

import pytest

from codecompanion_py.demo.server import Reply, ScriptedServer, ServerThread, json_reply, sse_reply

pytestmark = pytest.mark.nvim


def chunk(content=None, finish=None, **extra):
    delta = {} if content is None else {"content": content}
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


def usage(total):
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": {"prompt_tokens": total - 2, "completion_tokens": 2, "total_tokens": total},
    }


def setup_local(editor, url: str, name: str = "testllm") -> None:
    editor.setup(f"""{{
      adapters = {{ http = {{ {name} = function()
        return require("codecompanion_py.adapters").extend("openai_compatible", {{
          env = {{ url = "{url}" }}, schema = {{ model = {{ default = "test-model" }} }},
        }})
      end }} }},
      interactions = {{ chat = {{ adapter = "{name}" }} }},
    }}""")


def test_submit_streams_the_reply_into_the_buffer_with_events_and_tokens(editor):
    reply = sse_reply(
        [chunk("Hello"), chunk(", **world**"), chunk("!\n\n```lua\nprint(1)\n```"), chunk(finish="stop"), usage(42)],
        delay=0.01,
    )
    with ServerThread(ScriptedServer.sequence([reply])) as server:
        setup_local(editor, server.url)
        editor.nvim.command("CodeCompanionChat")
        buf = editor.nvim.current.buffer.number
        assert editor.nvim.current.buffer.options["filetype"] == "codecompanion"
        editor.type_prompt("Say hello")
        editor.nvim.input("<CR>")
        done = editor.wait_event("CodeCompanionChatDone")

        text = editor.text()
        assert text.startswith(
            "## Me\n\nSay hello\n\n## CodeCompanion (testllm)\n\nHello, **world**!\n\n```lua\nprint(1)\n```"
        )
        assert editor.lines()[-3:] == ["## Me", "", ""]  # ready for the next message
        assert editor.nvim.current.buffer.options["modifiable"]
        assert " (42 tokens)" in editor.virtual_text()
        assert done["data"]["bufnr"] == buf and done["data"]["tokens"] == 42

        # the adapter and model events come from the engine as the chat opens (test_chat_actions)
        names = [n for n in editor.event_names() if n not in ("CodeCompanionChatAdapter", "CodeCompanionChatModel")]
        assert names == [  # CodeCompanion's order: the window opens before the chat is created
            "CodeCompanionChatOpened",
            "CodeCompanionChatCreated",
            "CodeCompanionChatSubmitted",
            "CodeCompanionRequestStarted",
            "CodeCompanionRequestStreaming",
            "CodeCompanionRequestFinished",
            "CodeCompanionChatDone",
        ]
        started = editor.wait_event("CodeCompanionRequestStarted")["data"]
        assert started["adapter"]["name"] == "testllm" and started["adapter"]["model"] == "test-model"
        assert started["bufnr"] == buf and started["interaction"] == "chat"
        assert editor.wait_event("CodeCompanionRequestFinished")["data"]["status"] == "success"

        sent = server.requests[0].json()
        assert sent["model"] == "test-model" and sent["stream"] is True
        assert sent["messages"][-1] == {"role": "user", "content": "Say hello"}
        assert sent["messages"][0]["role"] == "system"
        # the cursor followed the stream to the end
        assert editor.nvim.current.window.cursor[0] == len(editor.lines())


def test_second_turn_sends_the_whole_history(editor):
    replies = [
        sse_reply([chunk("First answer"), chunk(finish="stop")]),
        sse_reply([chunk("Second answer"), chunk(finish="stop")]),
    ]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup_local(editor, server.url)
        editor.nvim.command("CodeCompanionChat one")  # a prompt on the command line is sent at once
        editor.wait_event("CodeCompanionChatDone")
        editor.type_prompt("two")
        editor.nvim.input("<C-s>")
        editor.wait_event("CodeCompanionChatDone", count=2)
        roles = [(m["role"], m["content"]) for m in server.requests[1].json()["messages"][1:]]
        assert roles == [("user", "one"), ("assistant", "First answer"), ("user", "two")]
        assert "Second answer" in editor.text()


def test_a_long_message_after_a_long_reply_is_sent_whole(editor):
    """The message is what stands below the last `## Me`, found reading the chat backwards
    in slices: a message longer than a slice, after a reply longer than one, goes whole."""
    long_reply = "\n".join(f"reply line {i}" for i in range(150))
    replies = [sse_reply([chunk(long_reply), chunk(finish="stop")]), sse_reply([chunk("ok"), chunk(finish="stop")])]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup_local(editor, server.url)
        editor.nvim.command("CodeCompanionChat one")
        editor.wait_event("CodeCompanionChatDone")
        message = [f"message line {i}" for i in range(100)]
        editor.nvim.api.buf_set_lines(0, -1, -1, False, message)
        editor.nvim.input("<C-s>")
        editor.wait_event("CodeCompanionChatDone", count=2)
        assert server.requests[1].json()["messages"][-1]["content"] == "\n".join(message)


def test_a_failing_user_autocmd_leaves_the_chat_working(editor):
    """A `User CodeCompanionRequestFinished` handler of the user's that errors (Neovim shows
    its error): the reply still ends, the buffer is editable again, the next turn works."""
    editor.lua("""
      vim.api.nvim_create_autocmd("User", { pattern = "CodeCompanionRequestFinished", callback = function()
        error("my handler broke")
      end })""")
    replies = [sse_reply([chunk("first"), chunk(finish="stop")]), sse_reply([chunk("second"), chunk(finish="stop")])]
    with ServerThread(ScriptedServer.sequence(replies)) as server:
        setup_local(editor, server.url)
        editor.nvim.command("CodeCompanionChat one")
        editor.wait_event("CodeCompanionChatDone")
        assert editor.nvim.current.buffer.options["modifiable"] and "first" in editor.text()
        editor.type_prompt("two")
        editor.nvim.input("<C-s>")
        editor.wait_event("CodeCompanionChatDone", count=2)
        assert "second" in editor.text()


def test_q_stops_mid_stream_keeps_partial_text_and_closes_the_connection(editor):
    slow = sse_reply([chunk(f"w{i} ") for i in range(400)] + [chunk(finish="stop")], delay=0.02)
    after = sse_reply([chunk("fresh reply"), chunk(finish="stop")])
    with ServerThread(ScriptedServer.sequence([slow, after])) as server:
        setup_local(editor, server.url)
        editor.nvim.command("CodeCompanionChat count to 400")
        editor.wait_for(lambda: "w5 " in editor.text(), what="some streamed text")
        assert not editor.nvim.current.buffer.options["modifiable"]  # read-only while the LLM writes
        editor.nvim.input("q")
        stopped = editor.wait_event("CodeCompanionChatStopped")
        assert stopped["data"]["status"] == "stopped"
        partial = editor.text()
        assert "w5 " in partial and "w399" not in partial
        assert " (stopped)" in editor.virtual_text()
        assert editor.nvim.current.buffer.options["modifiable"]
        editor.wait_for(lambda: server.disconnects >= 1, what="the server to see the client go away")
        finished = [e for e in editor.events() if e["event"] == "CodeCompanionRequestFinished"]
        assert finished[0]["data"]["status"] == "stopped"

        # the chat stays usable, and the partial reply is part of the history
        editor.type_prompt("again")
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone")
        history = server.requests[1].json()["messages"]
        assert history[-2]["role"] == "assistant" and history[-2]["content"].startswith("w0 w1 ")
        assert "fresh reply" in editor.text()


def test_provider_error_is_shown_in_the_chat_and_the_chat_stays_usable(editor):
    denied = Reply(
        status=401,
        headers={"content-type": "application/json"},
        chunks=[json.dumps({"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}).encode()],
    )
    ok = sse_reply([chunk("works now"), chunk(finish="stop")])
    with ServerThread(ScriptedServer.sequence([denied, ok])) as server:
        setup_local(editor, server.url)
        editor.nvim.command("CodeCompanionChat hi")
        done = editor.wait_event("CodeCompanionChatDone")
        assert done["data"]["status"] == "error"
        text = editor.text()
        assert "**Error:**" in text and "Incorrect API key provided" in text and "HTTP 401" in text
        editor.type_prompt("retry")
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone", count=2)
        assert "works now" in editor.text()
        assert len(server.requests) == 2


def test_unknown_adapter_is_reported_and_nothing_is_locked(editor):
    editor.setup("{}")
    editor.lua("_G.notes = {}; vim.notify = function(msg) table.insert(_G.notes, msg) end")
    editor.nvim.command("CodeCompanionChat adapter=does_not_exist hello")
    editor.wait_for(
        lambda: any("unknown adapter 'does_not_exist'" in n for n in editor.lua("return _G.notes")),
        what="the error message",
    )
    editor.wait_for(lambda: editor.nvim.current.buffer.options["modifiable"], what="the buffer to unlock")


def test_tokens_are_batched_not_one_rpc_per_token(editor):
    many = sse_reply([chunk(f"t{i} ") for i in range(3000)] + [chunk(finish="stop"), usage(3002)])
    with ServerThread(ScriptedServer.sequence([many])) as server:
        setup_local(editor, server.url)
        editor.lua("""
          local chat = require("codecompanion_py.chat")
          local apply = chat.apply
          _G.apply_calls = 0
          chat.apply = function(...) _G.apply_calls = _G.apply_calls + 1; return apply(...) end""")
        editor.nvim.command("CodeCompanionChat go")
        editor.wait_event("CodeCompanionChatDone")
        reply = editor.text()
        assert "t0 t1 t2" in reply and "t2999" in reply
        calls = editor.lua("return _G.apply_calls")
        assert calls < 300, f"{calls} render calls for 3000 tokens"


def test_demo_adapter_needs_no_key(editor):
    editor.setup('{ interactions = { chat = { adapter = "demo" } } }')
    editor.nvim.command("CodeCompanionChat Show me the demo")
    done = editor.wait_event("CodeCompanionChatDone", timeout=20)
    text = editor.text()
    assert "## CodeCompanion (Demo)" in text
    assert "> Show me the demo" in text and "```python" in text
    assert done["data"]["tokens"] > 0


def test_checkhealth_reports_the_host_and_keys_without_values(editor):
    editor.nvim.command("checkhealth codecompanion_py")
    report = editor.text()
    assert "codecompanion_py: Python host" in report
    assert "the engine is served by the remote plugin registered with :UpdateRemotePlugins" in report
    assert "pynvim" in report and "httpx" in report and "msgspec" in report
    assert "OPENAI_API_KEY" in report
    errors = [line for line in report.splitlines() if re.match(r"\s*- (❌ )?ERROR ", line)]
    assert all("OPENAI_API_KEY is not set" in line for line in errors), report  # the chat's adapter, if no key here


def test_checkhealth_while_a_reply_streams_answers_and_the_reply_goes_on(editor):
    """A synchronous request waits for the engine on its loop while the chat's stream runs there."""
    slow = sse_reply([chunk(f"line {i}\n") for i in range(60)] + [chunk(finish="stop")], delay=0.01)
    with ServerThread(ScriptedServer.sequence([slow])) as server:
        setup_local(editor, server.url)
        editor.nvim.command("CodeCompanionChat write lines")
        chat = editor.nvim.current.buffer.number
        editor.wait_for(lambda: "line 3" in editor.text(chat), what="streamed lines")
        editor.nvim.command("checkhealth codecompanion_py")
        assert "codecompanion_py: Python host" in editor.text()
        editor.wait_event("CodeCompanionChatDone")
        assert "line 59" in editor.text(chat)


def test_model_from_the_command_and_the_window_stops_following_when_the_user_moves(editor):
    slow = sse_reply([chunk(f"line {i}\n") for i in range(60)] + [chunk(finish="stop")], delay=0.01)
    with ServerThread(ScriptedServer.sequence([slow])) as server:
        setup_local(editor, server.url)
        editor.nvim.command("CodeCompanionChat adapter=testllm model=other-model write lines")
        editor.wait_for(lambda: "line 3" in editor.text(), what="streamed lines")
        editor.nvim.current.window.cursor = (1, 0)  # the user scrolls back up to read
        editor.wait_event("CodeCompanionChatDone")
        assert editor.nvim.current.window.cursor[0] == 1
        assert "line 59" in editor.text()
        assert server.requests[0].json()["model"] == "other-model"


def test_a_missing_python_engine_is_reported_and_nothing_is_locked(editor):
    editor.lua("vim.g.python3_host_prog = '/nonexistent/python3'")
    editor.lua("_G.notes = {}; vim.notify = function(msg) table.insert(_G.notes, msg) end")
    editor.nvim.command("CodeCompanionChat hello")
    notes = editor.lua("return _G.notes")
    assert any("the Python engine is not available" in n for n in notes), notes
    assert editor.nvim.current.buffer.options["modifiable"]
    assert "CodeCompanionChatSubmitted" not in editor.event_names()


FIXTURES = __import__("pathlib").Path(__file__).parents[1] / "fixtures"


@pytest.mark.parametrize(
    "adapter, fixture, content_type, url_override, reasoning, answer",
    [
        (
            "anthropic",
            "anthropic/thinking_streaming.txt",
            "text/event-stream",
            '{ url = "%s/v1/messages" }',
            "The user wants a greeting. Keep it short.",
            "Hello there! 👋",
        ),
        (
            "gemini",
            "gemini/text_streaming.txt",
            "text/event-stream",
            '{ url = "%s/v1beta/models/${model}:${method}" }',
            "Considering the question.",
            "The capital of France is Paris.",
        ),
        (
            "ollama",
            "ollama/text_streaming.ndjson",
            "application/x-ndjson",
            '{ env = { url = "%s" } }',
            "Let me think.",
            "Dynamic",
        ),
    ],
)
def test_chat_through_each_wire_format_shows_reasoning_then_the_answer(
    editor, monkeypatch, adapter, fixture, content_type, url_override, reasoning, answer
):
    body = (FIXTURES / fixture).read_bytes()
    reply = Reply(headers={"content-type": content_type}, chunks=[body[i : i + 40] for i in range(0, len(body), 40)])
    with ServerThread(ScriptedServer.sequence([reply])) as server:
        editor.lua("vim.env.ANTHROPIC_API_KEY = 'k'; vim.env.GEMINI_API_KEY = 'k'")
        editor.setup(f"""{{ adapters = {{ http = {{ {adapter} = function()
            return require("codecompanion_py.adapters").extend("{adapter}", {url_override % server.url})
          end }} }} }}""")
        editor.nvim.command(f"CodeCompanionChat adapter={adapter} hi")
        done = editor.wait_event("CodeCompanionChatDone")
        assert done["data"]["status"] == "success"
        text = editor.text()
        assert f"### Reasoning\n\n{reasoning}\n\n### Response\n\n{answer}" in text
        assert done["data"]["tokens"] > 0


def test_ga_switches_provider_mid_chat_and_the_history_converts(editor):
    first = sse_reply([chunk("from openai-wire"), chunk(finish="stop")])
    anthropic_body = (FIXTURES / "anthropic/thinking_streaming.txt").read_bytes()
    models = json_reply({"data": [{"id": "claude-b"}, {"id": "claude-a"}]})
    stream = Reply(headers={"content-type": "text/event-stream"}, chunks=[anthropic_body])
    with (
        ServerThread(ScriptedServer.sequence([first])) as one,
        ServerThread(ScriptedServer(lambda r: models if r.method == "GET" else stream)) as two,
    ):
        editor.lua("vim.env.ANTHROPIC_API_KEY = 'k'")
        editor.setup(f"""{{
          adapters = {{ http = {{
            testllm = function() return require("codecompanion_py.adapters").extend("openai_compatible",
              {{ env = {{ url = "{one.url}" }} }}) end,
            anthropic = function() return require("codecompanion_py.adapters").extend("anthropic",
              {{ url = "{two.url}/v1/messages", opts = {{ models_url = "{two.url}/v1/models" }} }}) end,
          }} }},
          interactions = {{ chat = {{ adapter = "testllm" }} }},
        }}""")
        editor.nvim.command("CodeCompanionChat hello")
        editor.wait_event("CodeCompanionChatDone")
        # answer the two pickers as a user would: the adapter, then a model
        editor.lua("""vim.ui.select = function(items, opts, on_choice)
          if opts.prompt:match("^Adapter") then on_choice("anthropic")
          else on_choice(items[2]) end
        end""")
        editor.nvim.input("ga")
        # (the chat fires ChatAdapter as it opens too)
        changed = editor.wait_for(
            lambda: [
                e
                for e in editor.events()
                if e["event"] == "CodeCompanionChatAdapter" and e["data"]["adapter"]["name"] == "anthropic"
            ],
            what="ChatAdapter for anthropic",
        )[0]
        model = changed["data"]["adapter"]["model"]
        assert model == "claude-a"  # the second entry of the provider's list, after the current model
        assert two.requests[0].method == "GET" and two.requests[0].headers["x-api-key"] == "k"
        editor.type_prompt("and now?")
        editor.nvim.input("<CR>")
        editor.wait_event("CodeCompanionChatDone", count=2)
        assert "## CodeCompanion (Anthropic)" in editor.text() and "Hello there! 👋" in editor.text()
        sent = two.requests[1].json()
        assert sent["model"] == model
        assert [(m["role"], [b.get("text") for b in m["content"]]) for m in sent["messages"]] == [
            ("user", ["hello"]),
            ("assistant", ["from openai-wire"]),
            ("user", ["and now?"]),
        ]
        assert sent["system"][0]["text"].startswith("You are an AI programming assistant")
