"""Secrets in text: the one scrubber, and the credentials the engine knows of.

Every door that lets outside text in (a provider's error, an MCP server's answer, a tool's
output, a web page, a repository file, context the chat sends) scrubs it with
`scrub_secrets` before the text is cut to size and before it reaches the chat, the LLM, a
log or a saved chat. What is scrubbed is the secrets that door knows (a request's own
headers, an MCP server's configured values) plus `KNOWN`: every credential the engine has
resolved (adapter keys, MCP servers' headers and env values) and the engine's environment
variables named like one (`*_API_KEY`, `*_TOKEN`...). So a key of yours that a command
prints, a page echoes or a rules file holds goes to no provider.

Imports nothing of ours: the client, the doors and the tools all use it.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence

SHORTEST_SECRET = 8  # shorter values ("demo", "none") are placeholders, and replacing them would garble text
MAX_KNOWN = 512  # values kept in `KNOWN` (each with its encoded forms); more are not remembered
MASK = "***"

_SECRET_HEADER = re.compile(r"authorization|key|token|secret", re.IGNORECASE)
# A token no setting names: one word of 16 or more with a digit ("Bearer authentication" is prose).
_BEARER = re.compile(r"\b(bearer\s+)(?=[A-Za-z._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{16,}", re.IGNORECASE)
# Environment variables whose value is a credential: the name ends like one.
_SECRET_VARIABLE = re.compile(
    r"(^|_)(API_?KEY|KEY|TOKEN|SECRET|SECRET_?KEY|ACCESS_?KEY|PASSWORD|PASSWD|PAT|CREDENTIALS?)$", re.IGNORECASE
)
# What `KNOWN` takes for a credential: one word of 16 or more with a letter and a digit, not a
# path nor an address. A word (`postgres`, `lm-studio`, `not-needed`) or a path learned there
# would be masked in every text the engine lets in.
_CREDENTIAL_VALUE = re.compile(r"(?=[^@]*[0-9])(?=[^@]*[A-Za-z])[^\s/~@][^\s@]{15,}")


def looks_like_credential(value: str) -> bool:
    return _CREDENTIAL_VALUE.fullmatch(value) is not None


def secrets_in(headers: Mapping[str, str], values: Iterable[str] = ()) -> list[str]:
    """The secrets among credential headers (`Authorization`, `x-api-key`) and `values`
    (resolved keys, credential env values), longest first (so a secret containing another
    is replaced whole), with the percent-encoded form where that differs (a key in a URL)
    and without a `Bearer `/`Basic ` scheme."""
    found: set[str] = {str(value) for value in values if value}
    for name, value in headers.items():
        if not value or not _SECRET_HEADER.search(name):
            continue
        found.add(value.split(" ", 1)[1] if value.lower().startswith(("bearer ", "basic ")) else value)
    return _with_encodings(found)


def url_credentials(url: str) -> list[str]:
    """The password of `url`'s `user:password@` part and the Basic credential a client
    sends for it (base64 of `user:password`); none when it has no password."""
    try:
        parts = urllib.parse.urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return []
    if not password:
        return []
    user, password = urllib.parse.unquote(user or ""), urllib.parse.unquote(password)
    return [password, base64.b64encode(f"{user}:{password}".encode()).decode()]


def credential_values(named: Mapping[str, str]) -> list[str]:
    """The values of `named` (env variables, headers) whose name says they are a credential:
    `GITHUB_TOKEN`, `Authorization`, not `NODE_ENV` or `Accept`."""
    return [value for name, value in named.items() if _SECRET_VARIABLE.search(name) or _SECRET_HEADER.search(name)]


def _with_encodings(values: Iterable[str]) -> list[str]:
    found = set(values)
    for secret in list(found):
        found.add(urllib.parse.quote(secret, safe=""))
        found.add(urllib.parse.quote_plus(secret, safe=""))
    return sorted((s for s in found if len(s) >= SHORTEST_SECRET), key=len, reverse=True)


def scrub_secrets(text: str, secrets: Sequence[str], *, cut: bool = False) -> str:
    """The one scrubber: `text` with each of `secrets` (`secrets_in`) and each secret in
    `KNOWN`, what is left of one that was cut (its first 8 characters or more), and any
    bearer token replaced by `***`. `cut`: the text was cut short before it got here (a
    body read up to a limit), so even a shorter beginning of a secret at its very end goes."""
    if not text:
        return text
    every = KNOWN.values(secrets)
    text = _without(text, every)
    if cut:
        text = _without_partial_secret(text, every)
    return _BEARER.sub(r"\1" + MASK, text)


def _without(text: str, secrets: Sequence[str]) -> str:
    """`text` with each of `secrets`, and each beginning of one (8 characters or more), replaced."""
    for secret in secrets:
        if secret[:SHORTEST_SECRET] in text:
            text = text.replace(secret, MASK)
            if secret[:SHORTEST_SECRET] in text:  # what is left of it where text was cut before
                text = _without_secret_starts(text, secret)
    return text


def _without_secret_starts(text: str, secret: str) -> str:
    """`text` with each beginning of `secret` (its first 8 characters or more) replaced."""
    head = secret[:SHORTEST_SECRET]
    pieces, at = [], 0
    start = text.find(head)
    while start >= 0:
        end = start + len(head)
        while end < len(text) and end - start < len(secret) and text[end] == secret[end - start]:
            end += 1
        pieces += [text[at:start], MASK]
        at = end
        start = text.find(head, end)
    return "".join(pieces) + text[at:]


def clip(text: str, limit: int, secrets: Sequence[str] = (), *, marker: str = "…") -> str:
    """`text` scrubbed, then cut to `limit` characters (`marker` after the cut): scrubbing
    first, so a secret at the cut never leaves its first part behind."""
    text = scrub_secrets(text, secrets)
    if len(text) <= limit:
        return text
    return _without_partial_secret(text[:limit], KNOWN.values(secrets)) + marker


def _without_partial_secret(text: str, secrets: Sequence[str]) -> str:
    """`text` without a beginning of a secret (4 characters or more: fewer would eat the
    last letters of plain words) at its end: the rest of it was cut off."""
    for secret in secrets:
        for size in range(min(len(secret) - 1, len(text)), 3, -1):
            if text.endswith(secret[:size]):
                return text[: len(text) - size]
    return text


class KnownSecrets:
    """The credentials the engine has met, scrubbed from all outside text. The engine's
    environment is read the first time they are asked for."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._sorted: list[str] = []
        self._read_environment = False

    def forget(self) -> None:
        """For tests: nothing known; the environment is read again when next asked."""
        self._values, self._sorted, self._read_environment = set(), [], False

    def remember(self, values: Iterable[str]) -> None:
        """Remember the values that look like a credential (`looks_like_credential`)."""
        new = {str(v) for v in values if v and looks_like_credential(str(v))} - self._values
        if not new or len(self._values) >= MAX_KNOWN:
            return
        self._values |= set(list(new)[: MAX_KNOWN - len(self._values)])
        self._sorted = _with_encodings(self._values)

    def remember_environment(self, environ: Mapping[str, str]) -> None:
        """Remember the values of variables named like a credential (`OPENAI_API_KEY`,
        `GITHUB_TOKEN`) that look like one (one word, not a path), and the password of any
        URL that carries one (`DATABASE_URL=postgres://app:password@db/app`)."""
        self._remember_named(environ, _SECRET_VARIABLE)
        self.remember(
            secret for value in environ.values() if "@" in value for secret in url_credentials(value.strip())[:1]
        )

    def remember_headers(self, headers: Mapping[str, str]) -> None:
        """Remember the values of credential headers (`Authorization`, `x-api-key`)."""
        self._remember_named(headers, _SECRET_HEADER)

    def _remember_named(self, named: Mapping[str, str], credential_name: re.Pattern[str]) -> None:
        for name, value in named.items():
            if not credential_name.search(name):
                continue
            if value.lower().startswith(("bearer ", "basic ")):
                value = value.split(" ", 1)[1]
            self.remember((value,))

    def values(self, extra: Sequence[str] = ()) -> Sequence[str]:
        """These secrets and `extra`, longest first."""
        if not self._read_environment:
            self._read_environment = True
            self.remember_environment(os.environ)
        if not extra:
            return self._sorted
        if not self._sorted:
            return extra
        return sorted({*extra, *self._sorted}, key=len, reverse=True)

    def scrub(self, text: str) -> str:
        """`text` as a door lets it in: without these secrets or any bearer token."""
        return scrub_secrets(text, ())

    def without_known(self, text: str) -> str:
        """`text` without these secrets only: cheap enough for every request's history."""
        return _without(text, self.values()) if text else text


KNOWN = KnownSecrets()


class ScrubbingFilter(logging.Filter):
    """Scrubs each log record's text and traceback of `KNOWN` secrets (on a handler, it sees
    the records of every logger)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # arguments that do not fit the format: logging reports that itself
            return True
        cleaned = scrub_secrets(message, ())
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = scrub_secrets(logging.Formatter().formatException(record.exc_info), ())
        return True


def scrub_logs() -> None:
    """Put the scrubbing filter on every handler of the root logger and on Python's last
    resort (what prints warnings to the engine's stderr, which Neovim may show), once."""
    for handler in (*logging.getLogger().handlers, logging.lastResort):
        if handler is not None and not any(isinstance(f, ScrubbingFilter) for f in handler.filters):
            handler.addFilter(ScrubbingFilter())
