"""Incremental Server-Sent Events decoder over bytes.

Framing follows the WHATWG HTML spec, "Interpreting an event stream":

* lines end in CRLF, LF or a lone CR; a CR that ends one chunk and an LF that starts the
  next are one line ending;
* a blank line dispatches the frame; a frame without any ``data`` field dispatches
  nothing (and its ``event`` name does not carry over to the next frame);
* lines starting with ``:`` are comments (``: keep-alive``, ``: OPENROUTER PROCESSING``);
* other lines are ``name:value`` with one space after the colon stripped if present; a
  line without a colon is a field name with an empty value;
* ``data`` lines join with LF; ``event`` names the current frame only; ``id`` is the
  spec's "last event ID": it stays on later frames until another ``id`` replaces it (an
  ``id`` whose value contains NUL is ignored); ``retry`` and unknown fields are ignored;
* one UTF-8 BOM at the very start of the stream is dropped.

``data`` stays ``bytes``. Chunks are only ever cut at CR/LF bytes, which never occur
inside a UTF-8 multibyte sequence, so characters split across network chunks come out
intact and the payload can go straight to msgspec. ``[DONE]`` is not special-cased.

Each chunk is split into lines by a `LineSplitter` (which keeps the pieces of an
incomplete last line between calls); the decoder keeps the fields of the frame in progress.

``max_line`` (bytes, 0 for none) caps both one line and the data of one frame: a server
that sends a line without end (or a frame without its blank line) cannot grow the decoder
past it; ``feed`` raises ``ResponseTooLarge`` instead.
"""

from __future__ import annotations

from .lines import LineSplitter, line_too_long

__all__ = ["SSEDecoder", "ServerSentEvent"]

_BOM = b"\xef\xbb\xbf"


class ServerSentEvent:
    """One dispatched frame: the ``data`` lines joined by LF (raw bytes), the frame's
    ``event`` name (``None`` without an ``event`` field) and the last event ``id``."""

    __slots__ = ("event", "data", "id")

    def __init__(self, data: bytes, event: str | None = None, id: str | None = None) -> None:
        self.data = data
        self.event = event
        self.id = id

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ServerSentEvent):
            return NotImplemented
        return self.data == other.data and self.event == other.event and self.id == other.id

    def __repr__(self) -> str:
        return f"ServerSentEvent(event={self.event!r}, data={self.data!r}, id={self.id!r})"


class SSEDecoder:
    """Feed the response body in chunks cut anywhere; get back the completed frames."""

    __slots__ = (
        "_lines",
        "_data",
        "_data_size",
        "_event",
        "_id",
        "_at_start",
        "_after_cr",
        "_special",
        "_limit",
    )

    def __init__(self, max_line: int = 0) -> None:
        self._limit = max_line  # the longest line, and the most data in one frame; 0: no cap
        self._reset()

    def _reset(self) -> None:
        self._lines = LineSplitter(self._limit)  # its pending pieces hold no CR or LF
        self._data: list[bytes] = []  # the data lines of the frame in progress
        self._data_size = 0
        self._event: str | None = None
        self._id: str | None = None
        self._at_start = True  # nothing but a (possible) BOM prefix seen yet
        self._after_cr = False  # the last chunk ended in CR, so an LF opening the next pairs with it
        self._special = True  # _at_start or _after_cr: feed() must look at the chunk's head first

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        if self._special:
            chunk = self._head(chunk)
        if b"\r" in chunk:
            lines = self._split_cr(chunk)
        else:
            # Fast path: a chunk that is exactly one single-line `data: ...` frame, the
            # usual shape of a token-by-token stream.
            if (
                chunk[:6] == b"data: "
                and chunk[-2:] == b"\n\n"
                and chunk.find(b"\n", 6) == len(chunk) - 2
                and not self._data
                and not self._lines.pending
            ):
                event = self._event
                self._event = None
                return [ServerSentEvent(chunk[6:-2], event, self._id)]
            lines = self._lines.split(chunk)
            if not lines:  # no line ending in this chunk (or an empty chunk)
                return []

        events: list[ServerSentEvent] = []
        data = self._data
        size = self._data_size
        event = self._event
        for line in lines:
            if not line:  # blank line: dispatch the frame
                if data:
                    events.append(ServerSentEvent(data[0] if len(data) == 1 else b"\n".join(data), event, self._id))
                    data = []
                    size = 0
                event = None
            elif line[:6] == b"data: ":  # the common field, checked first
                data.append(line[6:])
                size += len(line)
            elif line[0] != 0x3A:  # lines opening with b":" are comments
                colon = line.find(b":")
                if colon < 0:
                    name = line
                    value = b""
                else:
                    name = line[:colon]
                    value = line[colon + 1 :]
                    if value[:1] == b" ":
                        value = value[1:]
                if name == b"data":
                    data.append(value)
                    size += len(value)
                elif name == b"event":
                    event = value.decode("utf-8", "replace")
                elif name == b"id":
                    if b"\x00" not in value:
                        self._id = value.decode("utf-8", "replace")
                # `retry` and unknown fields are ignored
        if self._limit and size > self._limit:
            raise line_too_long(self._limit, frame=True)
        self._data = data
        self._data_size = size
        self._event = event
        return events

    def flush(self) -> list[ServerSentEvent]:
        """End of the stream: finish an unterminated last line, dispatch a frame that has
        data but no closing blank line, and reset the decoder for a new stream."""
        self._after_cr = False
        self._special = self._at_start
        try:
            events = self.feed(b"\n\n") if self._lines.pending or self._data else []
        finally:
            self._reset()
        return events

    def _head(self, chunk: bytes) -> bytes:
        """Drop a BOM opening the stream, or an LF completing a CRLF cut after its CR."""
        if self._at_start:
            pending = self._lines.pending
            if pending:  # a BOM prefix held back from earlier chunks
                pending.append(chunk)
                chunk = b"".join(pending)
                pending.clear()
            if len(chunk) < 3 and _BOM.startswith(chunk):
                if chunk:
                    pending.append(chunk)  # too short to tell yet
                return b""
            self._at_start = False
            if chunk[:3] == _BOM:
                chunk = chunk[3:]
        elif chunk:
            self._after_cr = False
            if chunk[0] == 0x0A:
                chunk = chunk[1:]
        self._special = self._after_cr
        return chunk

    def _split_cr(self, chunk: bytes) -> list[bytes]:
        """The complete lines of a chunk holding a CR (CRLF or lone-CR line endings)."""
        pending = self._lines.pending
        if pending:
            pending.append(chunk)
            chunk = b"".join(pending)
            pending.clear()
        if chunk[-1] == 0x0D:
            self._after_cr = self._special = True
        lines = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        self._lines.keep_last(lines)
        if self._limit and lines and len(lines[0]) > self._limit:
            raise line_too_long(self._limit)
        return lines
