"""The `acp-bridge` command line: `NAME [--executable CMD] [--model M] [--opt KEY=VALUE]...
[--env NAME=VALUE]... [--verbose]`, and the adapter options it makes.

The CLI adds these arguments to its `acp-bridge` subcommand; health reads an agent's
command with the same parser to find the CLI the bridge would drive.
"""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

import msgspec


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("name", help="claude, codex, or package.module:Class")
    parser.add_argument("--executable", help="the native command to run instead of the default (split like a shell)")
    parser.add_argument("--model")
    parser.add_argument("--opt", action="append", type=_option, metavar="KEY=VALUE", help="an adapter option")
    parser.add_argument(
        "--env", action="append", type=_env_pair, metavar="NAME=VALUE", help="environment for the native process"
    )
    parser.add_argument("--verbose", action="store_true", help="log debug output to stderr")
    return parser


class _RaisingParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ValueError(message)


def parse(argv: list[str]) -> argparse.Namespace:
    """`acp-bridge` arguments read as the bridge reads them; a bad command line is a
    ValueError and nothing is printed."""
    return add_arguments(_RaisingParser(prog="codecompanion-py acp-bridge", add_help=False)).parse_args(argv)


def options(args: argparse.Namespace) -> dict[str, Any]:
    """The adapter's opts: `--opt` pairs, then `--executable`, `--model` and `--env` over them."""
    opts: dict[str, Any] = dict(args.opt or [])
    if args.executable:
        opts["executable"] = args.executable
    if args.model:
        opts["model"] = args.model
    if args.env:
        env = opts.get("env")
        opts["env"] = {**(env if isinstance(env, dict) else {}), **dict(args.env)}
    return opts


def _option(text: str) -> tuple[str, object]:
    """KEY=VALUE, the value as JSON when it parses as JSON, else the string."""
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
