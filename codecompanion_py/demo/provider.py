"""The scripted provider behind the `demo` adapter: an OpenAI-compatible server on 127.0.0.1.

When the chat offers the file tools (`read_file` and `insert_edit_into_file`, as the chat
`make demo` opens does), each message of the user starts the scripted tool loop, so a
new user sees the edit and review flow:

1. a short explanation and a `read_file` call on `hello.py`, the demo project's file;
2. after the read's result, an `insert_edit_into_file` call that tidies `greet()` (or,
   once tidied, appends a comment line): the edit is written, then reviewed in the file's
   buffer (g2 keeps it, g3 rejects it);
3. after the edit's result, a text reply that says what happened (applied, rejected,
   cancelled or failed) and how to undo it.

The server is stateless: `next_step` decides from the request's messages, by the tool
results at the end of the conversation. Without the tools (the CLI, a chat without them)
it answers with a Markdown reply that quotes the user's message. Either way the reply is
streamed word by word in the exact OpenAI Chat Completions wire format (tool calls as
`delta.tool_calls` fragments, `finish_reason` "tool_calls"), usage included. The demo
launcher runs it (`serve()`) and points the adapter at it through CODECOMPANION_DEMO_URL;

    python -m codecompanion_py.demo.provider [--port P]

serves it until interrupted and prints the `CODECOMPANION_DEMO_URL=...` setting.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from ..adapters.http.demo import URL_ENV
from .server import Reply, Request, ScriptedServer, ServerThread, json_reply, serve_forever, sse_reply

WORD_DELAY = 0.015

DEMO_FILE = "hello.py"
TOOLS = ("read_file", "insert_edit_into_file")

# The demo project's file, as the launcher writes it, and what the scripted edit makes of it.
HELLO_PY = """\
def greet(name):
    return "Hello, " + name + "!"


if __name__ == "__main__":
    print(greet("world"))
"""
ORIGINAL_GREET = 'def greet(name):\n    return "Hello, " + name + "!"'
TIDY_GREET = (
    'def greet(name: str) -> str:\n    """Return a friendly greeting for `name`."""\n    return f"Hello, {name}!"'
)
APPENDED = "# Edited by the CodeCompanion demo: press u in this buffer to undo it.\n"

_REPLY = """Hello from the **demo** adapter. No API key is needed: this reply comes from a \
scripted server on 127.0.0.1, through the same HTTP, SSE and rendering path a real \
provider uses.

You wrote:

> {prompt}

Code renders like this:

```python
def greet(name: str) -> str:
    return f"Hello, {{name}}!"
```

This is message {turn} of this chat. To see tools at work, mention `@{{files}}` in a message: \
the demo then reads `hello.py`, edits it and lets you review the change. To talk to a real model, set \
`OPENAI_API_KEY` and run `:CodeCompanionChat adapter=openai`, or define your own adapter in \
`setup()`. Press `q` while a reply streams to stop it."""

_READ_TEXT = f"""This is the scripted demo, so whatever you ask, I show you how tools work here. \
First I read `{DEMO_FILE}` with the `read_file` tool: reading needs no approval."""

_EDIT_TEXT = """I read `{file}` ({lines} lines). Now I {change}. The edit goes into the file, then \
you review it in the file's buffer: press **g2** to keep it, **g3** to reject it (or **g5** / \
**g6** on one hunk), **gv** for a side-by-side diff."""

_DONE_TEXT = """Done: {result}

That was the whole loop: I read `{file}` without asking (reading is harmless), then edited it \
and you kept the change in the review.

**To undo it**, {undo}

More to try: press `?` in this chat for its keymaps, `gty` for YOLO mode (edits kept without \
a review), `ga` to switch to another adapter and model. Send another message to run the loop again."""

_UNDO_IN_BUFFER = f"""go to `{DEMO_FILE}`'s window and press `u`: the whole edit is one undo step \
(then `:w` to save the file again)."""
_UNDO_ON_DISK = f"""open it with `:edit {DEMO_FILE}` and change it back: it was written on disk, \
as it was not open in a buffer. When a file is open, the edit goes to its buffer as one undo step."""

_REJECTED_TEXT = """You rejected the edit, so `{file}` is as it was.{reason}

That is the other half of the loop: nothing stays in your files without your say-so. Send \
another message to see the review again (or press `gty` for YOLO mode, where edits are \
kept without a review)."""

_CANCELLED_TEXT = """You cancelled the edit, so `{file}` is unchanged, and the rest of that \
round was called off. Send another message to run the loop again."""

_FAILED_TEXT = """The edit did not apply:

> {result}

Send another message to try again."""

_UNREADABLE_TEXT = """I could not read `{file}`:

> {result}

The demo edits `{file}` in the small project that `make demo` creates and opens Neovim in \
(file tools reach only the directory Neovim was in when the chat opened)."""


@dataclass
class ScriptedCall:
    """A tool call the scripted provider makes in one of its replies."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class Step:
    """One reply of the script: `kind` is plain, read, edit or report."""

    kind: str
    text: str
    calls: list[ScriptedCall] = field(default_factory=list)


def _text_of(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _last_user_text(messages: list[dict[str, Any]]) -> tuple[str, int]:
    users = [m for m in messages if m.get("role") == "user"]
    return _text_of(users[-1].get("content", "") if users else ""), len(users)


def reply_text(body: dict[str, Any]) -> str:
    prompt, turn = _last_user_text(body.get("messages", []))
    quoted = "\n> ".join(prompt.strip().splitlines()) or "(nothing)"
    return _REPLY.format(prompt=quoted, turn=turn)


def offered_tools(body: dict[str, Any]) -> set[str]:
    """The names of the functions the request offers."""
    names = set()
    for tool in body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.add(function["name"])
    return names


def tool_results(messages: list[dict[str, Any]]) -> dict[str, str]:
    """The results at the end of the conversation, by tool name: the `tool` messages after
    the last assistant message, named through that message's `tool_calls`."""
    assistants = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if not assistants:
        return {}
    last = assistants[-1]
    names = {
        call.get("id"): (call.get("function") or {}).get("name")
        for call in messages[last].get("tool_calls") or []
        if isinstance(call, dict)
    }
    results: dict[str, str] = {}
    for message in messages[last + 1 :]:
        if message.get("role") == "tool":
            name = names.get(message.get("tool_call_id"))
            if isinstance(name, str):
                results[name] = _text_of(message.get("content"))
    return results


def read_body(result: str) -> str | None:
    """The file's text in a `read_file` result (`<file>, lines a-b of n (0-based):` and a
    fenced block), None when the read failed."""
    lines = result.split("\n")
    if len(lines) < 3 or not lines[0].startswith(f"{DEMO_FILE}, lines ") or not lines[1].startswith("```"):
        return None
    fence = lines[1]
    closing = max(i for i, line in enumerate(lines) if line == fence)
    return "\n".join(lines[2:closing]) if closing > 1 else None


def _quote(text: str) -> str:
    return "\n> ".join(text.strip().splitlines()) or "(no details)"


def next_step(body: dict[str, Any]) -> Step:
    """What the scripted assistant says next, decided from the request alone."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    ident = f"call_demo_{len(messages)}"
    if last.get("role") == "tool":
        results = tool_results(messages)
        if "insert_edit_into_file" in results:
            return _report(results["insert_edit_into_file"])
        if "read_file" in results:
            return _edit(results["read_file"], ident)
        return Step("report", "The tools ran. Send another message to run the demo's loop again.")
    if last.get("role") == "user" and set(TOOLS) <= offered_tools(body):
        return Step("read", _READ_TEXT, [ScriptedCall(ident, "read_file", {"filepath": DEMO_FILE})])
    return Step("plain", reply_text(body))


def _edit(result: str, ident: str) -> Step:
    text = read_body(result)
    if text is None:
        return Step("report", _UNREADABLE_TEXT.format(file=DEMO_FILE, result=_quote(result)))
    lines = len(text.split("\n")) if text else 0
    arguments: dict[str, Any] = {"filepath": DEMO_FILE}
    if ORIGINAL_GREET in text:
        change = "tidy up `greet()`: type hints, a docstring and an f-string"
        arguments["edits"] = [{"oldText": ORIGINAL_GREET, "newText": TIDY_GREET}]
        arguments["explanation"] = "type hints, a docstring and an f-string for greet()"
    else:
        change = "append a comment line at its end"
        arguments["mode"] = "append"
        arguments["content"] = APPENDED
        arguments["explanation"] = "a comment line at the end"
    edit_text = _EDIT_TEXT.format(file=DEMO_FILE, lines=lines, change=change)
    return Step("edit", edit_text, [ScriptedCall(ident, "insert_edit_into_file", arguments)])


def _report(result: str) -> Step:
    if "rejected the `insert_edit_into_file`" in result or "and rejected it" in result:
        reason = re.search(r"The user's reason: (.*)", result)
        said = f" Your reason: *{reason.group(1).strip()}*." if reason and reason.group(1).strip() else ""
        return Step("report", _REJECTED_TEXT.format(file=DEMO_FILE, reason=said))
    if "cancelled the `insert_edit_into_file`" in result:
        return Step("report", _CANCELLED_TEXT.format(file=DEMO_FILE))
    if result.startswith("Error in the") or " was edited " not in result:
        return Step("report", _FAILED_TEXT.format(result=_quote(result)))
    undo = _UNDO_IN_BUFFER if "open buffer" in result else _UNDO_ON_DISK
    return Step("report", _DONE_TEXT.format(result=result.strip(), file=DEMO_FILE, undo=undo))


def _usage(body: dict[str, Any], step: Step) -> dict[str, int]:
    prompt = sum(len(_text_of(m.get("content")).split()) for m in body.get("messages", []))
    completion = len(step.text.split()) + sum(len(json.dumps(c.arguments).split()) for c in step.calls)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def respond(request: Request) -> Reply:
    body = request.json()
    step = next_step(body)
    model = body.get("model", "demo-1")
    base = {"id": "chatcmpl-demo", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
    usage = _usage(body, step)
    finish = "tool_calls" if step.calls else "stop"
    if not body.get("stream"):
        message: dict[str, Any] = {"role": "assistant", "content": step.text or None}
        if step.calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for c in step.calls
            ]
        return json_reply(
            {
                **base,
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            }
        )

    def frame(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    text = step.text
    words = re.findall(r"\s*\S+", text) + ([text[len(text.rstrip()) :]] if text != text.rstrip() else [])
    frames = [frame({"role": "assistant", "content": ""})]
    frames += [frame({"content": w}) for w in words]
    for index, call in enumerate(step.calls):
        head = {"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        frames.append(frame({"tool_calls": [head]}))
        for piece in _pieces(json.dumps(call.arguments), 24):
            frames.append(frame({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    frames.append(frame({}, finish))
    frames.append({**base, "choices": [], "usage": usage})
    return sse_reply(frames, delay=WORD_DELAY)


def serve() -> ServerThread:
    """The demo server on a free port of 127.0.0.1, in a thread: `with serve() as server:`
    (`server.url` is what CODECOMPANION_DEMO_URL should say)."""
    return ServerThread(ScriptedServer(respond))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the demo adapter's scripted provider on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0, help="port (default: any free one)")
    args = parser.parse_args(argv)

    serve_forever(ScriptedServer(respond), args.port, announce=URL_ENV + "={url}")


if __name__ == "__main__":
    main()
