"""The network a sandboxed command may reach when its policy names hosts: an HTTP proxy in
the engine that lets `CONNECT host:port` (HTTPS and any TLS) and plain `http://host/...`
requests through to those hosts alone, and remembers the hosts it refused (so a failed
command can say which host it lacked).

Bubblewrap's commands reach it through a Unix socket bound into their namespace (the relay
inside turns it back into 127.0.0.1:3128); Landlock's through a TCP port on 127.0.0.1, the
one port they may connect to.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Iterable

log = logging.getLogger("codecompanion_py.sandbox")

MAX_HEAD = 16 * 1024
HEAD_TIMEOUT = 30.0
CONNECT_TIMEOUT = 15.0


def host_allowed(host: str, allowed: Iterable[str]) -> bool:
    """`host` is one of `allowed`, or under a `*.domain` of it."""
    host = host.lower().rstrip(".")
    for pattern in allowed:
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]) or host == pattern[2:]:
                return True
        elif host == pattern:
            return True
    return False


def split_target(target: str, default_port: int) -> tuple[str, int] | None:
    """("host", port) from `host:port`, `[v6]:port` or a bare host; None when malformed."""
    if target.startswith("["):
        host, _, rest = target[1:].partition("]")
        port = rest.removeprefix(":") or str(default_port)
    else:
        host, _, port = target.partition(":")
        port = port or str(default_port)
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return host, int(port)


class Proxy:
    """One host list's proxy, started on first use and kept for the engine's life."""

    def __init__(self, hosts: tuple[str, ...]) -> None:
        self.hosts = hosts
        self.refused: list[str] = []  # hosts asked for and refused, newest last (the last 32)
        self.refusals = 0  # how many ever: `refused_since` tells one command's from the others'
        self._servers: dict[str, asyncio.AbstractServer] = {}
        self._addresses: dict[str, str] = {}
        self._lock = asyncio.Lock()

    async def address(self, kind: str) -> str:
        """A Unix socket's path (`kind` "unix") or "127.0.0.1:port" ("tcp")."""
        async with self._lock:
            if kind not in self._addresses:
                if kind == "unix":
                    folder = tempfile.mkdtemp(prefix="codecompanion-proxy-")
                    atexit.register(shutil.rmtree, folder, True)
                    path = os.path.join(folder, "proxy.sock")
                    self._servers[kind] = await asyncio.start_unix_server(self._serve, path)
                    self._addresses[kind] = path
                else:
                    server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
                    self._servers[kind] = server
                    self._addresses[kind] = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
            return self._addresses[kind]

    def refused_since(self, mark: int) -> list[str]:
        """The hosts refused since `refusals` was `mark` (at most the last 32)."""
        return self.refused[len(self.refused) - min(self.refusals - mark, len(self.refused)) :]

    def close(self) -> None:
        for server in self._servers.values():
            server.close()
        self._servers.clear()
        self._addresses.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError, OSError):
            writer.close()
            return
        try:
            await self._forward(head, reader, writer)
        except (OSError, asyncio.TimeoutError):
            pass
        finally:
            with contextlib.suppress(OSError):
                writer.close()

    async def _forward(self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        if len(parts) != 3 or len(head) > MAX_HEAD:
            return await _answer(writer, 400, "Bad Request")
        method, target, _version = parts
        if method == "CONNECT":
            where = split_target(target, 443)
            rest = b""
        elif target.startswith("http://"):
            authority, _, path = target[len("http://") :].partition("/")
            where = split_target(authority.rpartition("@")[2], 80)
            rest = head.replace(target.encode("latin-1"), b"/" + path.encode("latin-1"), 1)
        else:
            return await _answer(writer, 400, "Bad Request")
        if where is None:
            return await _answer(writer, 400, "Bad Request")
        host, port = where
        if not host_allowed(host, self.hosts):
            self.refused.append(host)
            self.refusals += 1
            del self.refused[:-32]
            log.info("sandbox proxy: refused %s", host)
            return await _answer(writer, 403, f"Forbidden: the sandbox does not allow {host}")
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_TIMEOUT)
        except (OSError, asyncio.TimeoutError):
            return await _answer(writer, 502, "Bad Gateway")
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        else:
            up_writer.write(rest)
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _answer(writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    body = reason.encode() + b"\n"
    writer.write(
        b"HTTP/1.1 %d %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
        % (status, reason.split(":")[0].encode(), len(body), body)
    )
    with contextlib.suppress(OSError):
        await writer.drain()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            if writer.can_write_eof():
                writer.write_eof()


_proxies: dict[tuple[str, ...], Proxy] = {}


def proxy_for(hosts: tuple[str, ...]) -> Proxy:
    """The engine's proxy for this host list."""
    if hosts not in _proxies:
        _proxies[hosts] = Proxy(hosts)
    return _proxies[hosts]
