"""Whether a failed sandboxed command lacked the network.

Two signs, the first exact: the sandbox's proxy refused a host while it ran (a policy with
a host list); else its output says what programs say when a name cannot be resolved or no
route exists, which is what a network namespace of its own (or Landlock's TCP rule) makes
every connection do (a refused connection counts: in a namespace of its own, even a server
on the machine's 127.0.0.1 is out of reach). Only the last 64 KiB of output are searched, in one linear pass.
"""

from __future__ import annotations

import re

TAIL = 64 * 1024

_SIGNS = re.compile(
    r"Could not resolve host|Temporary failure in name resolution|Name or service not known"
    r"|nodename nor servname provided|\bENOTFOUND\b|\bEAI_AGAIN\b|Network is unreachable|\bENETUNREACH\b"
    r"|No address associated with hostname|Failed to establish a new connection|dial tcp: lookup"
    r"|Could not resolve hostname|no such host|Connection refused|\bECONNREFUSED\b"
)
_HOST = re.compile(r"\b((?:[A-Za-z0-9-]{1,63}\.)+[A-Za-z]{2,63})\b")
_AROUND = 160  # characters after the sign, on its line, where the host's name is looked for


def lacked_network(output: str, refused: list[str]) -> str | None:
    """What the command seemed to lack ("pypi.org", "the network"), or None."""
    if refused:
        return refused[-1]
    found = _SIGNS.search(output[-TAIL:])
    if found is None:
        return None
    tail = output[-TAIL:]
    line_end = tail.find("\n", found.end())
    near = _HOST.search(tail, found.end(), min(found.end() + _AROUND, line_end if line_end >= 0 else len(tail)))
    return near.group(1) if near else "the network"
