"""The demo provider's script, without Neovim: which step each request gets, decided from
the request alone, and the exact OpenAI wire format of its replies."""

import json

import httpx

from codecompanion_py.adapters import resolve
from codecompanion_py.demo.provider import (
    APPENDED,
    DEMO_FILE,
    HELLO_PY,
    TIDY_GREET,
    next_step,
    read_body,
    serve,
    tool_results,
)
from codecompanion_py.events import FinalEvent, TokenEvent, ToolCallEvent
from codecompanion_py.stream.iterators import replay_body
from codecompanion_py.tools.edits import Edit, apply_edits, apply_mode

FILE_TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("read_file", "insert_edit_into_file", "file_search")
]


def read_result(text: str) -> str:
    """A `read_file` result as the tool writes it."""
    lines = text.removesuffix("\n").split("\n")
    return f"{DEMO_FILE}, lines 0-{len(lines) - 1} of {len(lines)} (0-based):\n```\n" + "\n".join(lines) + "\n```"


def call(call_id: str, name: str, arguments: dict) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def conversation(*results: tuple[str, str]) -> list[dict]:
    """A user message, then for each (tool, result) an assistant call and its result."""
    messages = [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "Tidy up hello.py"}]
    for n, (name, result) in enumerate(results):
        messages.append({"role": "assistant", "content": "...", "tool_calls": [call(f"c{n}", name, {})]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": result})
    return messages


def body(messages: list[dict], tools=FILE_TOOLS, stream=True) -> dict:
    return {"model": "demo-1", "messages": messages, "tools": tools, "stream": stream}


def apply(text: str, arguments: dict) -> str:
    if arguments.get("mode") == "append":
        return apply_mode(text, "append", arguments["content"]).text
    edits = [Edit.from_args(raw, i) for i, raw in enumerate(arguments["edits"], 1)]
    return apply_edits(text, edits).text


# --- the steps ------------------------------------------------------------------------


def test_without_the_file_tools_a_message_gets_the_plain_reply():
    messages = [{"role": "user", "content": "What can you do?"}]
    for tools in (None, [], FILE_TOOLS[:1]):
        step = next_step(body(messages, tools=tools))
        assert step.kind == "plain" and not step.calls
        assert "Hello from the **demo** adapter" in step.text and "> What can you do?" in step.text
        assert "@{files}" in step.text  # says how to see the tools


def test_a_message_with_the_file_tools_starts_the_loop_with_a_read():
    step = next_step(body(conversation()))
    assert step.kind == "read" and "read_file" in step.text
    [read] = step.calls
    assert (read.name, read.arguments) == ("read_file", {"filepath": DEMO_FILE})
    # a later message starts it again, with an id of its own
    later = conversation(("read_file", read_result(HELLO_PY)), ("insert_edit_into_file", "hello.py was edited."))
    later += [{"role": "assistant", "content": "Done."}, {"role": "user", "content": "again"}]
    [again] = next_step(body(later)).calls
    assert again.name == "read_file" and again.id != read.id


def test_the_read_leads_to_an_edit_that_applies_to_the_file():
    step = next_step(body(conversation(("read_file", read_result(HELLO_PY)))))
    assert step.kind == "edit" and "**g2** to keep it" in step.text and "**g3** to reject it" in step.text
    [edit] = step.calls
    assert edit.name == "insert_edit_into_file" and edit.arguments["filepath"] == DEMO_FILE
    tidied = apply(HELLO_PY, edit.arguments)
    assert TIDY_GREET in tidied and tidied.endswith('print(greet("world"))\n')
    compile(tidied, DEMO_FILE, "exec")

    # once tidied, the next loop appends a comment line instead
    [again] = next_step(body(conversation(("read_file", read_result(tidied))))).calls
    assert again.arguments["mode"] == "append" and apply(tidied, again.arguments) == tidied + APPENDED


def test_a_failed_read_ends_the_loop_with_the_reason():
    error = "Error in the `read_file` tool: hello.py does not exist"
    step = next_step(body(conversation(("read_file", error))))
    assert step.kind == "report" and not step.calls
    assert "does not exist" in step.text and "make demo" in step.text


def test_the_report_says_what_happened_and_how_to_undo():
    def report(result: str) -> str:
        step = next_step(body(conversation(("read_file", read_result(HELLO_PY)), ("insert_edit_into_file", result))))
        assert step.kind == "report" and not step.calls
        return step.text

    in_buffer = report("hello.py was edited in the open buffer and saved.")
    assert "hello.py was edited in the open buffer and saved." in in_buffer
    assert "press `u`" in in_buffer and "one undo step" in in_buffer and "`?`" in in_buffer
    on_disk = report("hello.py was edited on disk.")
    assert ":edit hello.py" in on_disk and "press `u`" not in on_disk

    rejected = report("The user rejected the `insert_edit_into_file` tool call.\n\nThe user's reason: not now")
    assert "You rejected the edit, so `hello.py` is as it was. Your reason: *not now*." in rejected
    assert "You rejected" in report("The user rejected the `insert_edit_into_file` tool call.")
    cancelled = report("The user cancelled the `insert_edit_into_file` tool call; it did not run.")
    assert "You cancelled the edit" in cancelled
    failed = report("Error in the `insert_edit_into_file` tool: hello.py changed since it was read")
    assert "did not apply" in failed and "changed since it was read" in failed


def test_tool_results_are_named_through_the_last_assistant_message():
    messages = conversation(("read_file", "first"))
    messages[-2]["tool_calls"].append(call("x2", "file_search", {}))
    messages.append({"role": "tool", "tool_call_id": "x2", "content": "second"})
    messages.append({"role": "tool", "tool_call_id": "unknown", "content": "ignored"})
    assert tool_results(messages) == {"read_file": "first", "file_search": "second"}
    assert tool_results([{"role": "user", "content": "hi"}]) == {}
    assert read_body(read_result(HELLO_PY)) == HELLO_PY.removesuffix("\n")
    assert read_body("Error in the `read_file` tool: nope") is None


# --- the wire ---------------------------------------------------------------------------


def post(url: str, request: dict) -> httpx.Response:
    return httpx.post(url + "/v1/chat/completions", json=request, timeout=10)


def test_the_streamed_tool_call_is_the_openai_wire_format_and_parses():
    with serve() as server:
        raw = post(server.url, body(conversation(("read_file", read_result(HELLO_PY))))).content
    frames = [f.removeprefix(b"data: ") for f in raw.split(b"\n\n") if f]
    assert frames[-1] == b"[DONE]"
    chunks = [json.loads(f) for f in frames[:-1]]
    for chunk in chunks:
        assert chunk["object"] == "chat.completion.chunk" and chunk["model"] == "demo-1"
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    head, *rest = calls
    assert head["index"] == 0 and head["type"] == "function" and head["id"].startswith("call_")
    assert head["function"] == {"name": "insert_edit_into_file", "arguments": ""}
    assert all(set(c) == {"index", "function"} and set(c["function"]) == {"arguments"} for c in rest)
    arguments = json.loads("".join(c["function"]["arguments"] for c in rest))
    assert arguments["filepath"] == DEMO_FILE and arguments["edits"]
    assert [c["choices"][0]["finish_reason"] for c in chunks[-2:-1]] == ["tool_calls"]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0

    events = replay_body(resolve("openai_compatible"), raw)
    [final_call] = [e for e in events if isinstance(e, ToolCallEvent) and e.is_final]
    assert final_call.name == "insert_edit_into_file" and final_call.arguments == arguments
    assert "".join(e.content for e in events if isinstance(e, TokenEvent)).startswith("I read `hello.py`")
    assert isinstance(events[-1], FinalEvent)


def test_the_unstreamed_reply_carries_the_tool_calls():
    with serve() as server:
        answer = post(server.url, body(conversation(), stream=False)).json()
        plain = post(server.url, {"model": "demo-1", "messages": [{"role": "user", "content": "hi"}]}).json()
    [choice] = answer["choices"]
    assert choice["finish_reason"] == "tool_calls"
    [tool_call] = choice["message"]["tool_calls"]
    assert tool_call["type"] == "function" and tool_call["function"]["name"] == "read_file"
    assert json.loads(tool_call["function"]["arguments"]) == {"filepath": DEMO_FILE}
    assert plain["choices"][0]["finish_reason"] == "stop" and "> hi" in plain["choices"][0]["message"]["content"]
