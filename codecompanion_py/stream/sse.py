"""Incremental Server-Sent Events decoder over bytes (WHATWG framing).

Lines end in LF, CRLF or a lone CR; a blank line dispatches the frame; `:` lines are
comments; `data` lines join with LF. Data stays bytes, so UTF-8 split across network
chunks is never decoded early and goes to msgspec as it is.
"""

from __future__ import annotations

__all__ = ["SSEDecoder", "ServerSentEvent"]


class ServerSentEvent:
    __slots__ = ("event", "data", "id")

    def __init__(self, data: bytes, event: str | None = None, id: str | None = None) -> None:
        self.data = data
        self.event = event
        self.id = id

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ServerSentEvent)
                and (self.data, self.event, self.id) == (other.data, other.event, other.id))

    def __repr__(self) -> str:
        return f"ServerSentEvent(event={self.event!r}, data={self.data!r}, id={self.id!r})"


class SSEDecoder:
    def __init__(self) -> None:
        self._tail = b""          # an incomplete last line
        self._cr_pending = False  # the previous chunk ended in CR: a leading LF belongs to it
        self._started = False
        self._data: list[bytes] = []
        self._event: str | None = None
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        if not chunk:
            return []
        if not self._started:
            self._started = True
            if chunk.startswith(b"\xef\xbb\xbf"):
                chunk = chunk[3:]
        if self._cr_pending:
            self._cr_pending = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        if b"\r" in chunk or (self._tail and self._tail.endswith(b"\r")):
            data = self._tail + chunk
            if data.endswith(b"\r"):
                self._cr_pending = True
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        else:
            data = self._tail + chunk
        lines = data.split(b"\n")
        self._tail = lines.pop()
        events: list[ServerSentEvent] = []
        for line in lines:
            self._line(line, events)
        return events

    def flush(self) -> list[ServerSentEvent]:
        events: list[ServerSentEvent] = []
        if self._tail:
            self._line(self._tail, events)
            self._tail = b""
        self._line(b"", events)
        return events

    def _line(self, line: bytes, events: list[ServerSentEvent]) -> None:
        if not line:
            if self._data:
                events.append(ServerSentEvent(b"\n".join(self._data), self._event, self._id))
            self._data = []
            self._event = None
            return
        if line[:6] == b"data: ":
            self._data.append(line[6:])
            return
        if line[:1] == b":":
            return
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode(errors="replace")
        elif name == b"id":
            self._id = value.decode(errors="replace")
