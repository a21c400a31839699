"""The scripted provider behind the `demo` adapter: an OpenAI-compatible server on 127.0.0.1.

It answers each chat request with a Markdown reply that quotes the user's message,
streamed word by word in the exact OpenAI wire format, usage included. The demo launcher
runs it (`serve()`) and points the adapter at it through CODECOMPANION_DEMO_URL;

    python -m codecompanion_py.demo.provider [--port P]

serves it until interrupted and prints the `CODECOMPANION_DEMO_URL=...` setting.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
from typing import Any

from ..adapters.http.demo import URL_ENV
from .server import Reply, Request, ScriptedServer, ServerThread, json_reply, sse_reply

WORD_DELAY = 0.015

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

This is message {turn} of this chat. To talk to a real model, set `OPENAI_API_KEY` and run \
`:CodeCompanionChat adapter=openai`, or define your own adapter in `setup()`. Press `q` \
while a reply streams to stop it."""


def _last_user_text(messages: list[dict[str, Any]]) -> tuple[str, int]:
    users = [m for m in messages if m.get("role") == "user"]
    content = users[-1].get("content", "") if users else ""
    if isinstance(content, list):
        content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content), len(users)


def reply_text(body: dict[str, Any]) -> str:
    prompt, turn = _last_user_text(body.get("messages", []))
    quoted = "\n> ".join(prompt.strip().splitlines()) or "(nothing)"
    return _REPLY.format(prompt=quoted, turn=turn)


def respond(request: Request) -> Reply:
    body = request.json()
    text = reply_text(body)
    model = body.get("model", "demo-1")
    base = {"id": "chatcmpl-demo", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
    usage = {
        "prompt_tokens": sum(len(str(m.get("content", "")).split()) for m in body.get("messages", [])),
        "completion_tokens": len(text.split()),
    }
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    if not body.get("stream"):
        message = {"role": "assistant", "content": text}
        return json_reply(
            {
                **base,
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": usage,
            }
        )
    pieces = re.findall(r"\s*\S+", text) + ([text[len(text.rstrip()) :]] if text != text.rstrip() else [])
    frames: list[dict[str, Any]] = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}
    ]
    frames += [{**base, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in pieces]
    frames.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
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

    async def run() -> None:
        server = ScriptedServer(respond)
        await server.start(args.port)
        print(f"{URL_ENV}={server.url}", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
