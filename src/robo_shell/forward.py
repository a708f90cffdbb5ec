"""A TCP-to-Unix-socket forwarder, run inside the sandbox for coding agents that speak HTTP to a model endpoint.

The sandbox has no network route: the model is reached through the harness's proxy, a Unix socket bound into the
sandbox. Coding-agent CLIs expect an HTTP base URL, so this listens on the sandbox's own loopback and pipes every
connection to that socket byte for byte. It runs in the background of the agent's command and ends with the sandbox.

    python3 -m robo_shell.forward --listen 127.0.0.1:8765 --to /run/robo/model.sock
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import threading

CHUNK = 65536


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while chunk := src.recv(CHUNK):
            dst.sendall(chunk)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def _serve(client: socket.socket, target: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(target)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
    back.start()
    _pipe(client, upstream)
    back.join()
    client.close()
    upstream.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True, help="host:port on the sandbox's loopback")
    parser.add_argument("--to", required=True, help="the Unix socket to forward to")
    args = parser.parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((host, int(port)))
    server.listen(16)
    while True:
        client, _ = server.accept()
        threading.Thread(target=_serve, args=(client, args.to), daemon=True).start()


if __name__ == "__main__":
    raise SystemExit(main())
