"""The MCP door's helpers: the one scrubber before any cut, names in the providers' set,
text shown on one line, over-long stdio lines dropped with their call failed."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from codecompanion_py.errors import ConfigError
from codecompanion_py.mcp.client import McpServer
from codecompanion_py.mcp.door import CappedLines, shown, tool_names
from codecompanion_py.scrubber import clip, scrub_secrets, secrets_in

SECRET = "abcdefgh-SECRET-0123456789"


def test_a_secret_is_scrubbed_before_the_cut_and_its_start_at_a_cut_goes():
    text = "x" * 95 + SECRET + " tail"
    assert clip(text, 100, [SECRET]) == "x" * 95 + "*** tail"[:5] + "…"
    assert scrub_secrets("cut at " + SECRET[:12] + "…, said", [SECRET]) == "cut at ***…, said"
    assert scrub_secrets("body ending in " + SECRET[:5], [SECRET], cut=True) == "body ending in "
    assert scrub_secrets("body ending in " + SECRET[:5], [SECRET]) == "body ending in " + SECRET[:5]
    assert scrub_secrets("Authorization: Bearer some-unknown-token-123", []) == "Authorization: Bearer ***"
    assert secrets_in({"X-Api-Token": SECRET})[0] == SECRET
    assert secrets_in({"Accept": "application/json, text/event-stream"}) == []  # a header, no secret
    assert secrets_in({"Authorization": "Bearer " + SECRET})[0] == SECRET


def test_names_are_the_providers_and_taken_ones_get_a_stable_hash():
    names = tool_names("read", ["file", "a\nb", "a b"], taken={"read_file"})
    assert names["file"].startswith("read_file_") and len(names["file"]) == len("read_file_") + 6
    assert names == tool_names("read", ["file", "a\nb", "a b"], taken={"read_file"})  # the same every time
    assert names["a\nb"] == "read_a_b" and names["a b"].startswith("read_a_b_")
    assert all(len(n) <= 64 for n in tool_names("s", ["x" * 200, "x" * 201]).values())


def test_shown_text_is_one_line_escaped_and_capped():
    assert shown("a\nb\u202ec") == "a\\u000ab\\u202ec"
    assert len(shown("z" * 10_000)) == 200


async def test_an_over_long_line_becomes_an_error_answer_to_its_call_and_reading_goes_on():
    reader = asyncio.StreamReader()
    reader.feed_data(b'{"jsonrpc":"2.0","id":1,"result":{}}\n')
    reader.feed_data(b'{"result":{"text":"' + b"y" * 5000 + b'"},"jsonrpc":"2.0","id":7}\n')
    reader.feed_data(b'{"jsonrpc":"2.0","id":8,"result":{}}\n')
    reader.feed_eof()
    lines = CappedLines(reader, 1000, "s")
    assert json.loads(await lines.readline())["id"] == 1
    error = json.loads(await lines.readline())
    assert error["id"] == 7 and "over the 1,000 bytes" in error["error"]["message"]
    assert json.loads(await lines.readline())["id"] == 8
    assert await lines.readline() == b""


async def test_an_over_long_request_of_the_server_fails_none_of_ours():
    reader = asyncio.StreamReader()
    reader.feed_data(
        b'{"method":"sampling/createMessage","params":{"x":"' + b"y" * 5000 + b'"},"jsonrpc":"2.0","id":1}\n'
    )
    reader.feed_eof()
    assert await CappedLines(reader, 1000, "s").readline() == b"{}\n"


async def test_a_server_that_never_answers_initialize_is_given_up_on_in_its_timeout():
    spec = {"cmd": [sys.executable, "-c", "import sys; sys.stdin.read()"], "timeout": 500}
    server = McpServer("mute", spec, cwd=".", notice=lambda event, data: None)
    with pytest.raises(ConfigError, match="MCP server mute did not start: no answer in time"):
        await asyncio.wait_for(server.ensure(), 10)
    assert not server.alive
