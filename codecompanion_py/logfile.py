"""The log a CodeCompanion user knows: `stdpath("log")/codecompanion.log`, at `opts.log_level`.

Levels as CodeCompanion names them, ERROR (its default, and ours) the least said:

    ERROR  what failed and was told to the user: a request, a tool, an engine call
    WARN   a tool that misbehaved, a line an agent sent that is not JSON-RPC
    INFO   each request (method, url, provider, model, size) and its answer's status (a failed
           one with its error), each tool call
    DEBUG  request bodies and replies, tool arguments and results, each message sent to an
           agent or an MCP server, each cut at `CUT` characters
    TRACE  each chunk of a streamed reply and each message from an agent as it arrives, cut likewise

CodeCompanion appends to its file for ever; here it is rotated: past `MAX_BYTES` it becomes
`codecompanion.log.1` (the one older file kept) and a new one begins, so a week of TRACE
cannot fill a disk. The file is opened on the first record, so a level that has nothing to
say writes nothing. Every record passes the scrubber (`ScrubbingFilter`: the keys the
engine knows, bearer tokens), and `loggable()` cuts and scrubs what callers put in a record.
"""

from __future__ import annotations

import logging
import os
from logging.handlers import RotatingFileHandler
from pathlib import Path

from .scrubber import ScrubbingFilter, clip, scrub_secrets

TRACE = 5
LEVELS = {
    "TRACE": TRACE,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "WARNING": logging.WARNING,
    "ERROR": logging.ERROR,
}
NAMES = {TRACE: "TRACE", logging.DEBUG: "DEBUG", logging.INFO: "INFO", logging.WARNING: "WARN"}
FILE_NAME = "codecompanion.log"
MAX_BYTES = 10 * 1024 * 1024
CUT = 4000
"""Characters of a body, reply or tool output that one record holds."""

logging.addLevelName(TRACE, "TRACE")
_handler: RotatingFileHandler | None = None


class _Format(logging.Formatter):
    """`[LEVEL] 2026-11-26 18:40:07,123 logger: message`, CodeCompanion's level names."""

    def format(self, record: logging.LogRecord) -> str:
        level = NAMES.get(record.levelno, record.levelname)
        return f"[{level}] {self.formatTime(record)} {record.name}: {super().format(record)}"


def loggable(text: str | bytes, secrets: tuple[str, ...] | list[str] = ()) -> str:
    """`text` as a record may hold it: without `secrets` or a known key, cut at `CUT`."""
    if isinstance(text, bytes):  # a body: decoded as far as one record could hold, a key cut there scrubbed too
        text = scrub_secrets(text[: CUT * 4].decode("utf-8", errors="replace"), secrets, cut=len(text) > CUT * 4)
    return clip(text, CUT, secrets)


def configure(path: str | None, level: str, *, max_bytes: int = MAX_BYTES) -> str | None:
    """The engine's logs at `level` (a name of `LEVELS`), written to `path` (None: nowhere);
    why the file cannot be written, or None. Called again, it moves to the new path."""
    global _handler
    logger = logging.getLogger("codecompanion_py")
    logger.setLevel(LEVELS.get(level.upper(), logging.ERROR))
    target = os.path.abspath(path) if path else None
    if _handler is not None and (_handler.baseFilename != target or _handler.maxBytes != max_bytes):
        logger.removeHandler(_handler)
        _handler.close()
        _handler = None
    if target is None or _handler is not None:
        return None
    try:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        handler = RotatingFileHandler(target, maxBytes=max_bytes, backupCount=1, encoding="utf-8", delay=True)
    except OSError as error:
        return f"the log cannot be written to {target}: {error.strerror or error}"
    handler.setFormatter(_Format())
    handler.addFilter(ScrubbingFilter())
    logger.addHandler(handler)
    _handler = handler
    return None


def path() -> str | None:
    """Where the log is written, None when nowhere."""
    return _handler.baseFilename if _handler is not None else None


__all__ = ["CUT", "FILE_NAME", "LEVELS", "TRACE", "configure", "loggable", "path"]
