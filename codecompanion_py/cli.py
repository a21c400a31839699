"""`codecompanion-py`: chat from the shell, replay a recorded response, check the setup.

    codecompanion-py chat --adapter NAME [--url URL] [--model M] [--events] PROMPT
    codecompanion-py replay --adapter NAME FILE
    codecompanion-py health
    codecompanion-py acp-bridge NAME [--executable CMD] [--model M] [--opt KEY=VALUE]... [--env NAME=VALUE]...

`--events` and `replay` print canonical events as NDJSON, one object per line with a
`type` of token, reasoning, tool_call, usage, final or error; a tool_call line is printed
once per call, complete, with its parsed `arguments`.

`acp-bridge` serves ACP on stdin/stdout for a CLI agent that does not speak it: NAME is
`claude` (Claude Code stream-json), `codex` (`codex exec --json`) or `package.module:Class`
(a BridgeAdapter). `--opt` values are JSON when they parse as JSON, strings otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

import msgspec

from . import adapters, health
from .client import HttpClient
from .errors import CodeCompanionError
from .events import ErrorEvent, FinalEvent, StreamEvent, TokenEvent, ToolCallEvent
from .messages import Message
from .stream.iterators import HttpStreamIterator, replay_body

_encode = msgspec.json.Encoder().encode


def _printable(event: StreamEvent) -> bool:
    # Fragments of a tool call are noise on the command line; the final event is complete.
    return not isinstance(event, ToolCallEvent) or event.is_final


def write_events(events: Iterable[StreamEvent], out: TextIO) -> None:
    for event in events:
        if _printable(event):
            out.write(_encode(event).decode() + "\n")


async def _chat(args: argparse.Namespace) -> int:
    adapter = adapters.resolve(args.adapter, model=args.model)
    if args.url:
        if "${url}" in adapter.url:
            adapter.env["url"] = args.url
        else:
            adapter.url = args.url
    if args.no_stream:
        adapter.opts["stream"] = False
    client = HttpClient()
    status = 0
    try:
        stream = HttpStreamIterator(adapter, [Message.of("user", args.prompt)], client=client)
        async for event in stream:
            if args.events:
                write_events([event], sys.stdout)
                sys.stdout.flush()
            elif isinstance(event, TokenEvent):
                sys.stdout.write(event.content)
                sys.stdout.flush()
            elif isinstance(event, ToolCallEvent) and event.is_final:
                sys.stdout.write(f"\n[tool call {event.name} {_encode(event.arguments or {}).decode()}]")
            elif isinstance(event, FinalEvent):
                sys.stdout.write("\n")
            if isinstance(event, ErrorEvent):
                if not args.events:
                    print(f"\nerror: {event.message}", file=sys.stderr)
                status = 1
    finally:
        await client.aclose()
    return status


def _replay(args: argparse.Namespace) -> int:
    adapter = adapters.resolve(args.adapter)
    events = replay_body(adapter, Path(args.file).read_bytes())
    write_events(events, sys.stdout)
    return 1 if any(isinstance(e, ErrorEvent) for e in events) else 0


def _option(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, msgspec.json.decode(value)
    except msgspec.DecodeError:
        return key, value


def _env_pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def _acp_bridge(args: argparse.Namespace) -> int:
    import logging

    from .acp.bridge import load_adapter
    from .acp.bridge.server import serve_stdio

    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(name)s %(levelname)s: %(message)s",
    )
    adapter = load_adapter(args.name)
    opts: dict[str, object] = dict(args.opt or [])
    if args.executable:
        opts["executable"] = args.executable
    if args.model:
        opts["model"] = args.model
    if args.env:
        env = opts.get("env")
        opts["env"] = {**(env if isinstance(env, dict) else {}), **dict(args.env)}
    return asyncio.run(serve_stdio(adapter, opts))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="codecompanion-py", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    chat = commands.add_parser("chat", help="send one prompt and stream the reply")
    chat.add_argument("--adapter", default="openai")
    chat.add_argument("--url", help="the endpoint (or base url for adapters with an env.url)")
    chat.add_argument("--model")
    chat.add_argument("--events", action="store_true", help="print canonical events as NDJSON")
    chat.add_argument("--no-stream", action="store_true", help="ask for one JSON response")
    chat.add_argument("prompt")
    replay = commands.add_parser("replay", help="parse a recorded raw response body")
    replay.add_argument("--adapter", required=True)
    replay.add_argument("file")
    commands.add_parser("health", help="report versions, adapters and which API keys are set")
    bridge = commands.add_parser("acp-bridge", help="serve ACP on stdio for a CLI agent that does not speak it")
    bridge.add_argument("name", help="claude, codex, or package.module:Class")
    bridge.add_argument("--executable", help="the native command to run instead of the default (split like a shell)")
    bridge.add_argument("--model")
    bridge.add_argument("--opt", action="append", type=_option, metavar="KEY=VALUE", help="an adapter option")
    bridge.add_argument(
        "--env", action="append", type=_env_pair, metavar="NAME=VALUE", help="environment for the native process"
    )
    bridge.add_argument("--verbose", action="store_true", help="log debug output to stderr")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "chat":
            return asyncio.run(_chat(args))
        if args.command == "replay":
            return _replay(args)
        if args.command == "acp-bridge":
            return _acp_bridge(args)
        print(_encode(health.report()).decode())
        return 0
    except CodeCompanionError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader (e.g. `| head`) went away: not an error of ours
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
