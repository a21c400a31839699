"""Every exception the engine raises on purpose.

    CodeCompanionError
    ├── ConfigError              a setting, an adapter definition or a missing API key
    │   └── NativeStartError     the ACP bridge could not start the native CLI (missing,
    │                            not executable)
    ├── AdapterError             data that does not fit the canonical model or a wire format
    │   └── StreamError          the provider reported an error inside a 200 stream
    ├── ProviderError            the request did not produce a (whole, usable) response;
    │   │                        also an HTML page where the API should answer
    │   ├── HTTPStatusError      the provider answered with an HTTP error status
    │   │   ├── AuthenticationError   401 / 403
    │   │   └── RateLimitError        429
    │   ├── ResponseTooLarge     a line, an event or the whole response over its cap
    │   └── TransportError       connect or read failed or timed out
    │       ├── RequestTimeout
    │       └── IncompleteResponse    the body ended (or the connection was reset) before
    │                                 the stream's own end marker: the reply is cut off
    ├── AgentError               an ACP agent crashed, hung, or answered with an error
    ├── RpcError                 a JSON-RPC error answer (code, message, data), ours to
    │                            send or the peer's to us
    ├── ConnectionClosed         the JSON-RPC peer closed its end before answering
    ├── SnapshotError            a checkpoint or a review baseline could not be taken or
    │                            restored (no git, a folder too large, a git failure)
    └── ToolError                a tool could not do what the LLM asked (the message goes
        ├── PathRefused          back to the LLM): a path outside the project, a FIFO...
        └── EditRefused          an edit that does not match, is ambiguous or unsafe

Messages never contain secrets: errors name the environment variable or setting that is
wrong, never its value.
"""

from __future__ import annotations

from typing import Any


class CodeCompanionError(Exception):
    """Root of the tree; `str(error)` is what the user is shown."""


class ConfigError(CodeCompanionError):
    """The user's configuration cannot be used as written."""


class NativeStartError(ConfigError):
    """The ACP bridge could not start the native CLI (missing, not executable): the same
    failure an agent's own command gives as a ConfigError, apart so the bridge can report
    it to its client."""


class AdapterError(CodeCompanionError, ValueError):
    """Data that does not fit the canonical model or the provider's wire format."""


class StreamError(AdapterError):
    """An error object delivered inside a successful (200) streamed response."""

    def __init__(self, message: str, *, provider: str = "", code: str | None = None) -> None:
        super().__init__(f"{provider}: {message}" if provider else message)
        self.provider = provider
        self.code = code


class ProviderError(CodeCompanionError):
    """The request to the provider failed before a usable response arrived."""


class HTTPStatusError(ProviderError):
    def __init__(self, message: str, *, status: int, provider: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.provider = provider


class AuthenticationError(HTTPStatusError):
    pass


class RateLimitError(HTTPStatusError):
    pass


class ResponseTooLarge(ProviderError):
    """A line, an event or the whole response went over its configured cap; reading
    stopped there."""


class TransportError(ProviderError):
    pass


class RequestTimeout(TransportError):
    pass


class IncompleteResponse(TransportError):
    """The response ended before the stream's own end marker (`[DONE]`, a finish reason,
    `message_stop`, `"done": true`...): cut off by a proxy, a reset connection or a crash.
    What it said is not the whole reply; its tool calls are never run."""


class AgentError(CodeCompanionError):
    """An ACP agent crashed, exited, hung past a timeout, or answered with an error."""

    def __init__(self, message: str, *, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class RpcError(CodeCompanionError):
    """A JSON-RPC error answer, ours to send or the peer's to us."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_wire(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ConnectionClosed(CodeCompanionError):
    """The JSON-RPC peer closed its end (exited, crashed) before answering."""


class ToolError(CodeCompanionError):
    pass


class PathRefused(ToolError):
    pass


class FileTooLarge(PathRefused):
    """A file above the size a read may take; `limit` in bytes."""

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class EditRefused(ToolError):
    pass


class SnapshotError(CodeCompanionError):
    """A snapshot of the project (a checkpoint, the review's baseline) could not be taken,
    read or restored; `str()` says why and what still works."""


__all__ = [
    "AdapterError",
    "AgentError",
    "AuthenticationError",
    "CodeCompanionError",
    "ConfigError",
    "ConnectionClosed",
    "EditRefused",
    "HTTPStatusError",
    "IncompleteResponse",
    "NativeStartError",
    "PathRefused",
    "ProviderError",
    "RateLimitError",
    "RequestTimeout",
    "ResponseTooLarge",
    "RpcError",
    "SnapshotError",
    "StreamError",
    "ToolError",
    "TransportError",
]
