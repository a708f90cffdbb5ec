"""The command route's wire format: one JSON request line, one JSON record line, per connection.

Request: ``{"argv": ["move", "--arm", "left", "--dz", "0.05"]}``. Reply: the command's record, a JSON object with at
least ``ok`` (bool) and ``command``. The harness parses the arguments; the client only forwards them, so the base
commands are defined once (robodojo.agents.shell.commands).
"""

from __future__ import annotations

import json
import os
import socket
import time
from typing import Any

from robo_shell import ROUTE_ENV

#: the harness's base commands (robodojo.agents.shell.commands runs them); anything else may be a tool
BASE_COMMANDS = ("move", "rotate", "point", "gripper", "home", "wait", "obs", "status", "done")
MAX_LINE_BYTES = 1 << 20  # a record is a few kB; anything near this is a broken peer
ENCODING = "utf-8"
#: How often a client retries a connection the route's full backlog refused (a flood of connections: the route accepts
#: and sheds them as fast as it can, so room comes back within milliseconds) [s].
CONNECT_RETRY_S = 0.005


class RouteError(ConnectionError):
    """The command route cannot be reached or answered nonsense."""


def route_path() -> str:
    path = os.environ.get(ROUTE_ENV, "")
    if not path:
        raise RouteError(f"{ROUTE_ENV} is not set: robo runs inside the shell harness's sandbox")
    return path


def encode(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n").encode(ENCODING)


def read_line(sock: socket.socket) -> bytes:
    """Bytes up to the first newline (without it); raises RouteError on a closed or oversized stream."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            raise RouteError("the command route closed the connection without an answer")
        end = chunk.find(b"\n")
        if end >= 0:
            chunks.append(chunk[:end])
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_LINE_BYTES:
            raise RouteError(f"the command route sent more than {MAX_LINE_BYTES} bytes without a line end")


def call(argv: list[str], *, path: str | None = None, timeout_s: float | None = None) -> dict[str, Any]:
    """Send one command to the harness and return its record (blocks while the robot moves)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout_s)
        _connect(sock, path or route_path(), timeout_s)
        sock.sendall(encode({"argv": list(argv)}))
        line = read_line(sock)
    try:
        record = json.loads(line.decode(ENCODING))
    except ValueError as exc:
        raise RouteError(f"the command route answered something that is not JSON: {exc}") from None
    if not isinstance(record, dict):
        raise RouteError("the command route answered JSON that is not an object")
    return record


def _connect(sock: socket.socket, path: str, timeout_s: float | None) -> None:
    """Connect, waiting for room while the route's backlog is full: a Unix socket with a timeout refuses at once
    (EAGAIN) where a blocking one would wait, and another client's flood of connections must not fail this one."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        try:
            sock.connect(path)
            return
        except BlockingIOError:
            if deadline is not None and time.monotonic() >= deadline:
                why = f"its backlog stayed full for {timeout_s} s"
                raise RouteError(f"cannot reach the robot's command route: {why}") from None
            time.sleep(CONNECT_RETRY_S)
        except OSError as exc:
            raise RouteError(f"cannot reach the robot's command route: {exc}") from None
