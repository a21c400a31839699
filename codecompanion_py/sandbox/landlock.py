"""The Landlock mechanism (Linux 5.13+, no namespaces needed): the kernel confines the
command's own filesystem access, and from ABI 4 its TCP, once it is started.

Landlock only grants, so "read everything but the denied paths" is built as grants on every
path beside the denied ones, folder by folder down from `/`; a folder that holds a denied
path cannot itself be listed (its files and subfolders can be read). Unix sockets and the
keyrings are closed by the seccomp filter, as under bubblewrap. Not enforced here, unlike
bubblewrap, so YOLO mode still asks (`Sandbox.whole`): files that run code inside the
project stay writable, and so do denied paths inside a writable one; UDP is not filtered
and the TCP rule is by port (the proxy's port is open on any address); a process that
starts its own session can outlive the command; other processes can be seen (not read: no
capability is kept, even as root); the session's runtime folder is not hidden (its sockets
stay closed) and /dev/shm is shared. A kernel below ABI 4 has no TCP rule at all (the approval says so).
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
from collections.abc import Callable

from .confine import Confinement
from .policy import SandboxPolicy

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same on x86_64 and arm64
_VERSION = 1  # LANDLOCK_CREATE_RULESET_VERSION
_PATH_BENEATH, _NET_PORT = 1, 2
_PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_WRITES_V1 = WRITE_FILE | sum(1 << bit for bit in range(4, 13))  # remove and make anything
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_READS = EXECUTE | READ_FILE | READ_DIR
_NET_BIND, _NET_CONNECT = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1
MAX_RULES = 4096


def abi() -> int:
    """The kernel's Landlock ABI version, 0 when it has none (or this is not Linux x86_64/arm64)."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64"):
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = int(libc.syscall(_CREATE_RULESET, None, 0, _VERSION))
    except (OSError, AttributeError):
        return 0
    return max(version, 0)


def _fs_rights(version: int) -> int:
    rights = _READS | _WRITES_V1
    if version >= 2:
        rights |= _REFER
    if version >= 3:
        rights |= _TRUNCATE
    if version >= 5:
        rights |= _IOCTL_DEV
    return rights


def plan(confinement: Confinement, version: int) -> list[tuple[str, int]]:
    """(path, rights) grants: reads beside the denied paths, writes on the writable ones."""
    everything = _fs_rights(version)
    denied = set(confinement.deny_dirs) | set(confinement.deny_files)
    grants: list[tuple[str, int]] = []

    def read_around(folder: str) -> None:
        try:
            names = os.listdir(folder)
        except OSError:
            return
        for name in names:
            path = os.path.join(folder, name)
            if path in denied or os.path.islink(path):
                continue  # a link needs no grant: its target has its own (a granted link would open it whole)
            if any(d.startswith(path + "/") for d in denied):
                read_around(path)
            else:
                grants.append((path, _READS))

    if denied:
        read_around("/")
    else:
        grants.append(("/", _READS))
    for path in (confinement.root, *confinement.writable, *confinement.temp):
        grants.append((path, everything))
    for device in ("/dev/null", "/dev/zero", "/dev/full"):  # not a terminal: no keys pushed into one
        grants.append((device, WRITE_FILE | (_TRUNCATE & everything)))
    grants.append(("/dev/shm", everything))  # POSIX semaphores and shared memory (multiprocessing)
    return grants[:MAX_RULES]


def network_words(version: int, policy: SandboxPolicy) -> str:
    """What Landlock makes of the policy's network, for the approval."""
    if policy.network is True:
        return "network on"
    if version < 4:
        return "network NOT restricted (this kernel's Landlock has no TCP rules)"
    if policy.network:
        return f"TCP only through the proxy to {', '.join(policy.network[:3])}, UDP open"
    return "no TCP, UDP open"


_PR_CAPBSET_DROP = 24
_CAP_VERSION_3 = 0x20080522


def _last_capability() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as found:
            return int(found.read())
    except (OSError, ValueError):
        return 63


def _drop_capabilities(libc: ctypes.CDLL, last_cap: int) -> None:
    """Root keeps no capability (none after exec either: the bounding set is emptied first).
    With CAP_SYS_PTRACE, Landlock would let the command read other processes' memory and
    environment (the engine's keys)."""
    for cap in range(last_cap + 1):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    header = struct.pack("<Ii", _CAP_VERSION_3, 0)
    data = bytes(24)  # two {effective, permitted, inheritable}, all empty
    if libc.capset(ctypes.c_char_p(header), ctypes.c_char_p(data)) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def restrictor(confinement: Confinement, *, version: int, network: bool, proxy_port: int | None) -> Callable[[], None]:
    """A `preexec_fn` that confines the child before it runs the command. The rules are
    made here, in the parent; the child only opens each path and calls the kernel."""
    file_rights = WRITE_FILE | READ_FILE | EXECUTE | _TRUNCATE | _IOCTL_DEV  # what a file can be granted
    grants = [
        (path, rights if os.path.isdir(path) else rights & file_rights) for path, rights in plan(confinement, version)
    ]
    libc = ctypes.CDLL(None, use_errno=True)
    fs = _fs_rights(version)
    net = _NET_BIND | _NET_CONNECT if (not network and version >= 4) else 0
    scoped = _SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL if version >= 6 else 0
    size = 24 if version >= 6 else 16 if version >= 4 else 8
    ruleset_attr = struct.pack("<QQQ", fs, net, scoped)[:size]

    as_root = os.geteuid() == 0
    last_cap = _last_capability()

    def preexec() -> None:
        if as_root:
            _drop_capabilities(libc, last_cap)
        ruleset = libc.syscall(_CREATE_RULESET, ctypes.c_char_p(ruleset_attr), len(ruleset_attr), 0)
        if ruleset < 0:
            raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
        for path, rights in grants:
            try:
                fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue
            rule = struct.pack("<Qi", rights, fd)
            libc.syscall(_ADD_RULE, ruleset, _PATH_BENEATH, ctypes.c_char_p(rule), 0)
            os.close(fd)
        if net and proxy_port is not None:
            rule = struct.pack("<QQ", _NET_CONNECT, proxy_port)
            libc.syscall(_ADD_RULE, ruleset, _NET_PORT, ctypes.c_char_p(rule), 0)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.syscall(_RESTRICT_SELF, ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
        os.close(ruleset)

    return preexec
