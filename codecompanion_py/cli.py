"""`codecompanion-py`: chat from the shell, replay a recorded response, check the setup.

    codecompanion-py chat --adapter NAME [--url URL] [--model M] [--events] PROMPT
    codecompanion-py replay --adapter NAME FILE
    codecompanion-py health [--json]
    codecompanion-py acp-bridge NAME [--executable CMD] [--model M] [--opt KEY=VALUE]... [--env NAME=VALUE]...

`--events` and `replay` print canonical events as NDJSON, one object per line with a
`type` of token, reasoning, tool_call, usage, final or error; a tool_call line is printed
once per call, complete, with its parsed `arguments`.

`acp-bridge` serves ACP on stdin/stdout for a CLI agent that does not speak it: NAME is
`claude` (Claude Code stream-json), `codex` (`codex exec --json`) or `package.module:Class`
(a BridgeAdapter). `--opt` values are JSON when they parse as JSON, strings otherwise.

`chat` without `--model`: for adapters whose server decides which models exist
(`openai_compatible`, `ollama` and adapters extended from them: a models endpoint and no
model list in the schema) the server is asked (`GET /v1/models`, `/api/tags`) and its
first model is used; otherwise, or when the server cannot say, the adapter's default. A
line on stderr names the model and why. `--url` for an adapter that appends a path to
its base url (`${url}/v1/chat/completions`): a url that already ends in that path, or
the start of it (`http://host/v1`), is trimmed, with a warning on stderr.

A server that cannot be reached is told once (an `error:` line, or with `--events` an
error event), exit status 1; a reader that leaves early (`| head`) ends the command
quietly, exit status 0.

`chat --adapter demo` with no server of its own (no `--url`, no CODECOMPANION_DEMO_URL)
starts the demo's scripted server on 127.0.0.1 for that one reply.

`health` prints a table (exit status 1 when something is broken), `--json` the report.

Mistakes on the command line (an unknown adapter, a file that cannot be read or is not a
response body) are one line on stderr, `error: ...`, and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import sys
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import msgspec

from . import health
from .acp_bridge import arguments as bridge_arguments
from .adapters import BUILTIN
from .adapters.base import HTTPAdapter, prepare, substitute
from .adapters.models import fetch_models
from .client import HttpClient
from .errors import CodeCompanionError, TransportError
from .events import ErrorEvent, FinalEvent, StreamEvent, TokenEvent, ToolCallEvent
from .messages import Message
from .stream.iterators import HttpStreamIterator, looks_streamed, replay_body

_encode = msgspec.json.Encoder().encode


def _printable(event: StreamEvent) -> bool:
    # Fragments of a tool call are noise on the command line; the final event is complete.
    return not isinstance(event, ToolCallEvent) or event.is_final


def write_events(events: Iterable[StreamEvent], out: TextIO) -> None:
    for event in events:
        if _printable(event):
            out.write(_encode(event).decode() + "\n")


class UsageError(Exception):
    """A mistake on the command line: one line on stderr, exit status 2."""


def _note(text: str) -> None:
    print(f"codecompanion-py: {text}", file=sys.stderr)


def _http_adapter(name: str, model: str | None = None) -> HTTPAdapter:
    if BUILTIN.kind(name) == "acp":
        raise UsageError(
            f"{name!r} is a coding agent (ACP), not an HTTP adapter: chat with it in Neovim "
            f"(:CodeCompanionChat adapter={name}); here the adapters are {', '.join(BUILTIN.names('http'))}"
        )
    return BUILTIN.http(name, model=model)


_PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


def appended_path(adapter: HTTPAdapter) -> str | None:
    """The path the adapter adds after `${url}` (`/v1/chat/completions`), when it is fixed."""
    head, sep, tail = adapter.url.partition("${url}")
    if not sep or head:
        return None
    known: dict[str, Any] = {}
    for name in _PLACEHOLDER.findall(tail):
        value = adapter.env.get(name)
        if not (isinstance(value, str) and value.startswith("/")):
            return None  # a path from the environment or a command: not known here
        known[name] = value
    path = substitute(tail, known) if known else tail
    return path if path.startswith("/") else None


def fix_url(adapter: HTTPAdapter, url: str) -> str:
    """`url` less the part of the adapter's appended path it already ends with."""
    url = url.rstrip("/")
    path = appended_path(adapter)
    parts = urlsplit(url)
    if not path or parts.query or parts.fragment:
        return url
    segments = path.split("/")[1:]
    for count in range(len(segments), 0, -1):
        tail = "/" + "/".join(segments[:count])
        if parts.path.endswith(tail):
            fixed = url[: -len(tail)]
            print(
                f"warning: --url {url} already ends in {tail}, which the {adapter.name} adapter appends "
                f"({path}); using {fixed}",
                file=sys.stderr,
            )
            return fixed
    return url


def _set_url(adapter: HTTPAdapter, url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"--url {url} is not an http:// or https:// url")
    if "${url}" in adapter.url:
        adapter.env["url"] = fix_url(adapter, url)
    else:
        adapter.url = url


def _server_decides_models(adapter: HTTPAdapter) -> bool:
    """A local or self-hosted server (openai_compatible, ollama): a models endpoint and no
    list of models in the schema, so the schema's default is only a guess."""
    entry = adapter.schema.get("model")
    choices = entry.get("choices") if isinstance(entry, dict) else None
    return bool(adapter.opts.get("models_url")) and not choices


async def server_models(adapter: HTTPAdapter, client: HttpClient) -> tuple[str, list[str]]:
    """The models endpoint's url and the names it lists, in the server's order."""
    ready = await prepare(adapter, client=client)
    try:
        url = substitute(str(adapter.opts["models_url"]), ready.env_replaced)
    except KeyError as missing:
        raise CodeCompanionError(f"the models url needs {missing}, which is not set") from None
    return url, await fetch_models(ready, url, client)


async def _choose_model(adapter: HTTPAdapter, client: HttpClient) -> None:
    """No --model: ask the server when it decides, else the adapter's default; say which."""
    default = adapter.model
    if not _server_decides_models(adapter):
        _note(f"model {default} (the {adapter.name} adapter's default; choose another with --model)")
        return
    try:
        url, names = await server_models(adapter, client)
    except TransportError:
        raise  # the server cannot be reached: the chat would fail the same way, so say it once
    except (CodeCompanionError, ValueError) as error:
        _note(f"model {default} (the adapter's default: the server's model list could not be read: {error})")
        return
    if not names:
        _note(f"model {default} (the adapter's default: {url} lists no models)")
        return
    adapter.set_model(names[0])
    others = f" of {len(names)}" if len(names) > 1 else ""
    _note(f"model {names[0]} (the first{others} listed at {url}; choose another with --model)")


@contextlib.asynccontextmanager
async def _demo_server(adapter: HTTPAdapter, args: argparse.Namespace) -> AsyncIterator[None]:
    """The `demo` adapter with no server of its own (no --url, no CODECOMPANION_DEMO_URL):
    its scripted server on 127.0.0.1 for this one reply, so the example works as written."""
    from .adapters.http.demo import URL_ENV

    if args.adapter != "demo" or args.url or os.environ.get(URL_ENV):
        yield
        return
    from .demo.provider import respond
    from .demo.server import ScriptedServer

    server = ScriptedServer(respond)
    await server.start()
    adapter.env["url"] = server.url
    _note(f"the demo adapter's scripted server answers on {server.url} (no network, no key)")
    try:
        yield
    finally:
        await server.close()


async def _chat(args: argparse.Namespace) -> int:
    adapter = _http_adapter(args.adapter, model=args.model)
    if args.url:
        _set_url(adapter, args.url)
    if args.no_stream:
        adapter.opts["stream"] = False
    async with _demo_server(adapter, args):
        return await _stream_reply(adapter, args)


async def _stream_reply(adapter: HTTPAdapter, args: argparse.Namespace) -> int:
    client = HttpClient()
    try:
        if not args.model:
            try:
                await _choose_model(adapter, client)
            except TransportError as error:  # where the chat's own request would have said it
                if args.events:
                    write_events([ErrorEvent(message=str(error), kind=type(error).__name__)], sys.stdout)
                else:
                    print(f"error: {error}", file=sys.stderr)
                return 1
        stream = HttpStreamIterator(adapter, [Message.of("user", args.prompt)], client=client)
        try:
            status = await _print_events(stream, args)
        finally:
            await stream.close()  # its response too, when the reader left early (`| head`)
    finally:
        await client.aclose()
    return status


async def _print_events(stream: HttpStreamIterator, args: argparse.Namespace) -> int:
    status = 0
    wrote = False
    async for event in stream:
        if args.events:
            write_events([event], sys.stdout)
            sys.stdout.flush()
        elif isinstance(event, TokenEvent):
            sys.stdout.write(event.content)
            sys.stdout.flush()
            wrote = True
        elif isinstance(event, ToolCallEvent) and event.is_final:
            sys.stdout.write(f"\n[tool call {event.name} {_encode(event.arguments or {}).decode()}]")
        elif isinstance(event, FinalEvent):
            sys.stdout.write("\n")
        if isinstance(event, ErrorEvent):
            if not args.events:
                sys.stderr.write(("\n" if wrote else "") + f"error: {event.message}\n")
            status = 1
    return status


def _replay(args: argparse.Namespace) -> int:
    adapter = _http_adapter(args.adapter)
    try:
        body = Path(args.file).read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read {args.file}: {error.strerror or error}") from None
    if not body.strip():
        raise UsageError(f"{args.file} is empty")
    if not looks_streamed(adapter, body):
        try:
            msgspec.json.decode(body)
        except msgspec.DecodeError as error:
            raise UsageError(
                f"{args.file} is not a response body: not valid JSON ({error}), nor SSE or NDJSON"
            ) from None
    events = replay_body(adapter, body)
    write_events(events, sys.stdout)
    return 1 if any(isinstance(e, ErrorEvent) for e in events) else 0


def _acp_bridge(args: argparse.Namespace) -> int:
    import logging

    from .acp_bridge import load_adapter
    from .acp_bridge.stdio import serve_stdio

    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(name)s %(levelname)s: %(message)s",
    )
    adapter = load_adapter(args.name)
    return asyncio.run(serve_stdio(adapter, bridge_arguments.options(args)))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="codecompanion-py", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    chat = commands.add_parser("chat", help="send one prompt and stream the reply")
    chat.add_argument(
        "--adapter",
        default="openai",
        metavar="NAME",
        help=f"an HTTP adapter: {', '.join(BUILTIN.names('http'))} (default: %(default)s)",
    )
    chat.add_argument("--url", help="the endpoint (or base url for adapters with an env.url)")
    chat.add_argument("--model", help="default: the server's first model where it decides, else the adapter's")
    chat.add_argument("--events", action="store_true", help="print canonical events as NDJSON")
    chat.add_argument("--no-stream", action="store_true", help="ask for one JSON response")
    chat.add_argument("prompt", help="the message to send")
    replay = commands.add_parser("replay", help="parse a recorded raw response body")
    replay.add_argument("--adapter", required=True)
    replay.add_argument("file")
    health_command = commands.add_parser("health", help="report versions, adapters, agents and which keys are set")
    health_command.add_argument("--json", action="store_true", help="print the report as JSON")
    bridge_arguments.add_arguments(
        commands.add_parser("acp-bridge", help="serve ACP on stdio for a CLI agent that does not speak it")
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        status = _run(args)
        sys.stdout.flush()  # here, not at exit, so a reader that left is handled below
        return status
    except (CodeCompanionError, UsageError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader (`| head`) went away: stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit flush has nowhere to fail
        return 0


def _run(args: argparse.Namespace) -> int:
    if args.command == "chat":
        return asyncio.run(_chat(args))
    if args.command == "replay":
        return _replay(args)
    if args.command == "acp-bridge":
        return _acp_bridge(args)
    report = health.report()
    if args.json:
        print(_encode(report).decode())
    else:
        sys.stdout.write(health.format_table(report))
    return 1 if health.broken(report) else 0


if __name__ == "__main__":
    sys.exit(main())
