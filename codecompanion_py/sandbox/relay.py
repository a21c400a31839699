"""Run inside bubblewrap's network namespace (standard library only, started with -I -S):
listen on the namespace's own 127.0.0.1:3128, carry each connection to the engine's proxy
through the Unix socket bound in at argv[1], and run the command (argv[2:]) to its end.

    python -I -S relay.py SOCKET FILTER -- COMMAND...

The proxy outside decides which hosts may be reached; this only carries bytes. FILTER is
the seccomp program (hex; empty for none) the command runs under: the relay itself needs
the Unix socket the filter forbids, so it puts only the command under it.
"""

import os
import socket
import subprocess
import sys
import threading

ADDRESS = ("127.0.0.1", 3128)


def pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (sink, source):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def carry(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        return
    threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
    pipe(client, upstream)


def serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=carry, args=(client, path), daemon=True).start()


def main() -> int:
    path, program, command = sys.argv[1], bytes.fromhex(sys.argv[2]), sys.argv[4:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # seccomp.py beside: standard library only
    from seccomp import install  # type: ignore[import-not-found,unused-ignore]

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(ADDRESS)
    listener.listen(64)
    threading.Thread(target=serve, args=(listener, path), daemon=True).start()
    try:
        return subprocess.call(command, preexec_fn=(lambda: install(program)) if program else None)
    except OSError as error:
        print(f"cannot run {command[0]}: {error.strerror}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.stdout.flush()
    os._exit(main())
