"""A seccomp filter every sandboxed command runs under: no Unix socket can be made (so no
socket on the machine can be reached, whatever its name or where it was bound: Neovim's
server, Docker, the ssh agent, X11, D-Bus, abstract ones too) and the kernel's keyrings
cannot be read. `socketpair` (a process's own pipes) stays allowed, and so does every
other socket family; the network is the namespace's or Landlock's business.

Only x86_64 and arm64 have a filter; a system call made through another ABI (32-bit
`int 0x80`, x32) is refused whole.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct
from collections.abc import Callable

_LD_ABS_W, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_AF_UNIX = 1
_X32_BIT = 0x40000000

# (audit arch, socket, keyctl, add_key, request_key)
_ABIS = {
    "x86_64": (0xC000003E, 41, 250, 248, 249),
    "aarch64": (0xC00000B7, 198, 219, 217, 218),
}

_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2


def program() -> bytes | None:
    """The filter as `struct sock_filter[]` bytes, or None on an architecture without one."""
    abi = _ABIS.get(platform.machine())
    if abi is None:
        return None
    arch, socket, *keyrings = abi
    refuse = _ERRNO | errno.EACCES
    # (code, jump if true, jump if false, k); jumps count the instructions to skip
    steps: list[tuple[int, int, int, int]] = [
        (_LD_ABS_W, 0, 0, 4),  # the ABI of the call
        (_JEQ, 1, 0, arch),
        (_RET, 0, 0, _ERRNO | errno.ENOSYS),  # another ABI: refused
        (_LD_ABS_W, 0, 0, 0),  # the call's number
        (_JGE, 0, 1, _X32_BIT),
        (_RET, 0, 0, _ERRNO | errno.ENOSYS),  # x32
    ]
    for number in keyrings:
        steps += [(_JEQ, 0, 1, number), (_RET, 0, 0, refuse)]
    steps += [
        (_JEQ, 0, 3, socket),
        (_LD_ABS_W, 0, 0, 16),  # the domain: args[0], low half
        (_JEQ, 0, 1, _AF_UNIX),
        (_RET, 0, 0, refuse),
        (_RET, 0, 0, _ALLOW),
    ]
    return b"".join(struct.pack("<HBBI", *step) for step in steps)


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def installer(filter_bytes: bytes) -> Callable[[], None]:
    """A `preexec_fn` putting the child (and all it starts) under the filter. The program
    and libc are made ready here, in the parent: the child only makes two calls."""
    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(filter_bytes, len(filter_bytes))
    prog = _Fprog(len(filter_bytes) // 8, ctypes.addressof(buffer))

    def install() -> None:
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")

    install.keep = buffer  # type: ignore[attr-defined]  # the program lives as long as the function
    return install


def install(filter_bytes: bytes) -> None:
    """Put this process under the filter now (the relay, for its command)."""
    installer(filter_bytes)()
