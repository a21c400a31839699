"""What an MCP server sends enters here: its messages within a size cap (a stdio line, an
HTTP body, an SSE event), its tool results cut to what `run_command` keeps, its names made
the providers' tool names, and any text of it that the chat or an approval shows put on one
printable line of bounded length. Secrets are scrubbed by `scrubber.scrub_secrets`, before
anything is cut.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Iterable

import msgspec

from ..acp.jsonrpc import MAX_LINE, PARSE_ERROR
from ..processes import capped

MAX_MESSAGE_BYTES = MAX_LINE
"""One message from a server: a stdio line, an HTTP body, one SSE event's data."""
MAX_RESULT_BYTES = 100_000
"""A tool result as the LLM and the chat get it: `run_command`'s cap, kept the same way."""
MAX_IMAGES = 8
MAX_IMAGE_BYTES = 8 << 20
"""An image of a tool result sent on to the LLM, as base64 (providers take about 5 MB)."""
MAX_INSTRUCTIONS = 16_000
"""The server's `instructions`, which go with every request of a chat using it."""
MAX_DESCRIPTION = 2_000
MAX_SHOWN = 200
"""A name, title or progress message of a server as the chat or an approval shows it."""
_DEEP = 900  # arrays and objects in a line from which its nesting is checked (msgspec reads ~1000)
MAX_TOOLS = 1_000
"""Tools, prompts or resources kept from one server's lists (pages stop being read past it)."""
MAX_TOOLS_BYTES = 1 << 20
"""A server's tools as JSON (names, descriptions, schemas): they go with every request."""
MAX_LIST_BYTES = 8 << 20
"""A server's list (tools, prompts, resources) as read: no page is asked for past it (50
pages of up to a message each were kept in memory, gigabytes)."""
MAX_SCHEMA_DEPTH = 64
"""Objects and arrays nested in a tool's schema (deeper ones, left out, overflowed the checks
every request makes of its tools)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_NAME_LIMIT = 64  # OpenAI's and Anthropic's tool names: ^[a-zA-Z0-9_-]{1,64}$
_HIDDEN = re.compile(r"[\x00-\x1f\x7f-\x9f\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def shown(value: object, limit: int = MAX_SHOWN) -> str:
    """`value` as one printable line of at most `limit` characters: control and invisible
    characters (line breaks, escapes, bidi overrides) become `\\uXXXX`."""
    text = str(value)[: limit * 8]  # escaping grows it: never more than this is looked at
    text = _HIDDEN.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def description(value: object) -> str:
    """A server's description of a tool or prompt: printable lines, capped."""
    text = str(value)[: MAX_DESCRIPTION * 2]
    text = "\n".join(shown(line, MAX_DESCRIPTION) for line in text.splitlines())
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1] + "…"


def result_capped(text: str, limit: int = MAX_RESULT_BYTES) -> str:
    """A tool result within `limit` bytes: its first and last halves around a
    `[... N bytes omitted ...]` line, as `run_command`'s output (scrub it first)."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    return capped(data, limit).decode("utf-8", "replace")


def tool_names(server: str, tools: Iterable[str], taken: Iterable[str] = ()) -> dict[str, str]:
    """Each of a server's tool names as the LLM calls it: `<server>_<tool>` in the providers'
    set, at most 64 characters; a name that is taken (a built-in tool, or another tool of
    the server that comes out the same) gets a short hash of the original to set it apart."""
    used = set(taken)
    names: dict[str, str] = {}
    for tool in tools:
        name = _UNSAFE.sub("_", f"{server}_{tool}")[:_NAME_LIMIT]
        if name in used:
            digest = hashlib.sha256(f"{server}\0{tool}".encode("utf-8", "replace")).hexdigest()
            for size in (6, 12, 64):  # longer hashes only when a short one also collides
                name = f"{name[: _NAME_LIMIT - size - 1]}_{digest[:size]}"
                if name not in used:
                    break
        used.add(name)
        names[tool] = name
    return names


def too_deep(message: bytes) -> bool:
    """Whether a JSON message nests arrays and objects deeper than msgspec reads."""
    try:
        msgspec.json.decode(message)
    except RecursionError:
        return True
    except (msgspec.DecodeError, UnicodeDecodeError):
        return False  # not JSON, or not UTF-8: the connection's reading says so
    return False


class CappedLines:
    """Lines of a server's stdout, each at most `limit` bytes, in memory bounded by it. A
    longer line is read to its end and dropped; what it answered fails with a clear error
    (its id is read from its first and last bytes), so the server stays usable."""

    def __init__(self, reader: asyncio.StreamReader, limit: int, name: str) -> None:
        self._reader = reader
        self._limit = limit
        self._name = name
        self._buffer = bytearray()
        self._searched = 0  # the buffer holds no newline before this offset

    async def readline(self) -> bytes:
        while True:
            end = self._buffer.find(b"\n", self._searched)
            if end >= 0:
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                self._searched = 0
                if end > self._limit:  # it came whole in what was read
                    return self._refused(line[:_EDGE], line[-_EDGE - 1 : -1], end)
                if line.count(b"[") + line.count(b"{") >= _DEEP and too_deep(line):
                    return self._refused(line[:_EDGE], line[-_EDGE - 1 : -1], end, "nested too deep to read")
                return line
            self._searched = len(self._buffer)
            if len(self._buffer) > self._limit:
                return await self._overlong()
            chunk = await self._reader.read(1 << 16)
            if not chunk:
                line = bytes(self._buffer)
                self._buffer.clear()
                self._searched = 0
                return line
            self._buffer += chunk

    async def _overlong(self) -> bytes:
        edge = _EDGE
        head, tail, size = bytes(self._buffer[:edge]), bytes(self._buffer[-edge:]), len(self._buffer)
        self._buffer.clear()
        while True:
            chunk = await self._reader.read(1 << 16)
            if not chunk:
                break
            end = chunk.find(b"\n")
            if end >= 0:
                size += end
                tail = (tail + chunk[:end])[-edge:]
                self._buffer += chunk[end + 1 :]
                break
            size += len(chunk)
            tail = (tail + chunk)[-edge:]
        self._searched = 0
        return self._refused(head, tail, size)

    def _refused(self, head: bytes, tail: bytes, size: int, why: str = "") -> bytes:
        """The line that stands for a dropped one: an error answer to the request it
        answered, when its id can be read, else an empty object the connection skips."""
        why = why or f"over the {self._limit:,} bytes an MCP message may have"
        message = f"the server sent a message of {size:,} bytes, {why}; it was dropped"
        request_id = _id_in(head, tail)
        if request_id is None:
            return b"{}\n"  # nothing to answer: a line the connection skips
        error = {"code": PARSE_ERROR, "message": message}
        return msgspec.json.encode({"jsonrpc": "2.0", "id": request_id, "error": error}) + b"\n"


_EDGE = 4096  # bytes kept of each end of a dropped line, to find its id
_TOP = re.compile(rb"\s*{[^{}\[\]]*")  # a message's opening, up to its first nested value
_ID_AT_END = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,100}")\s*}\s*$')
_ID_AT_START = re.compile(rb'^\s*{[^{}\[\]]*?"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,100}")')


def _id_in(head: bytes, tail: bytes) -> int | str | None:
    """The id of an answer from its first and last bytes: a top-level `id` that closes the
    message or comes before any nested value. None for the server's own requests (a
    `method` before any nested value): their ids are not ours."""
    top = _TOP.match(head)
    if top is None or b'"method"' in top.group():
        return None
    match = _ID_AT_END.search(tail) or _ID_AT_START.search(head)
    if match is None:
        return None
    value = msgspec.json.decode(match.group(1))
    return value if isinstance(value, (int, str)) else None
