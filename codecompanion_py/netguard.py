"""Which network addresses a fetched web page may come from.

Refused always: link-local addresses (169.254.0.0/16, fe80::/10), where clouds answer with
their instance's credentials, the other metadata services (100.100.100.200,
fd00:ec2::254, `metadata.google.internal`), and addresses that are no destination (0.0.0.0,
::, multicast, reserved). An IPv4 address inside IPv6 (::ffff:a.b.c.d, ::a.b.c.d,
64:ff9b::a.b.c.d) is judged as itself, and the shorthand forms of IPv4 the C library
accepts (0xA9FEA9FE, 2852039166, 0251.0376.0251.0376) as the address they stand for.
Allowed: loopback and private networks, where users keep documentation servers.

A name is judged by every address it resolves to (`resolve`, the one place names are
looked up), so a name that points at a metadata service is refused as that service is.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_HOSTS = frozenset(("metadata.google.internal", "metadata.goog", "metadata"))
_METADATA = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "100.100.100.200", "fd00:ec2::254", "fd00:ec2::23")
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
_SHORTHAND_IPV4 = re.compile(r"[0-9a-fA-FxX.]{1,40}")


class Forbidden(OSError):
    """An address no fetch may reach (an OSError, so a transport reports it as a connect
    failure with this message)."""


def literal(host: str) -> Address | None:
    """The address `host` spells, in any form a resolver would read as one; None for a name."""
    bare = host.strip("[]")
    try:
        return ipaddress.ip_address(bare.split("%", 1)[0])  # fe80::1%eth0: the zone is no part of it
    except ValueError:
        pass
    if _SHORTHAND_IPV4.fullmatch(bare):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(bare))
        except OSError:
            return None
    return None


def refusal(address: Address) -> str | None:
    """What `address` is that it may not be reached ("a link-local address"), or None."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped
        if embedded is None and (address in _NAT64 or (address in _IPV4_COMPATIBLE and int(address) > 1)):
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return refusal(embedded)
    if address in _METADATA:
        return "a cloud metadata service"
    if address.is_link_local:
        return "a link-local address"
    if address.is_unspecified or address.is_multicast or (address.is_reserved and not address.is_private):
        return "no address a page can come from"
    return None


def check_host(host: str) -> Address | None:
    """Refuse a metadata name or a forbidden literal address (`Forbidden`); the address a
    literal host spells, None for a name."""
    name = host.strip("[]").rstrip(".").lower()
    if name in METADATA_HOSTS:
        raise Forbidden(f"{name} is a cloud metadata service: not fetched")
    address = literal(name)
    if address is not None and (reason := refusal(address)) is not None:
        raise Forbidden(f"{host} is {reason}: not fetched")
    return address


async def resolve(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to (the system's resolver, off the loop's thread)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def checked_addresses(host: str, port: int) -> list[str]:
    """The addresses to connect to for `host`, each checked: `Forbidden` when any of them
    may not be reached (one bad answer is enough to distrust the name)."""
    address = check_host(host)
    if address is not None:
        return [str(address)]
    found = await resolve(host, port)
    for text in found:
        reason = refusal(ipaddress.ip_address(text.split("%", 1)[0]))
        if reason is not None:
            raise Forbidden(f"{host} resolves to {text}, {reason}: not fetched")
    return found
