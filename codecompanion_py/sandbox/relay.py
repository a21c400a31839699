"""Run inside bubblewrap's network namespace (standard library only, started with -I -S):
listen on the namespace's own 127.0.0.1:3128, carry each connection to the engine's proxy
through the Unix socket bound in at argv[1], and run the command (argv[2:]) to its end.

    python -I -S relay.py SOCKET -- COMMAND...

The proxy outside decides which hosts may be reached; this only carries bytes.
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
    path, command = sys.argv[1], sys.argv[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(ADDRESS)
    listener.listen(64)
    threading.Thread(target=serve, args=(listener, path), daemon=True).start()
    try:
        return subprocess.call(command)
    except OSError as error:
        print(f"cannot run {command[0]}: {error.strerror}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.stdout.flush()
    os._exit(main())
