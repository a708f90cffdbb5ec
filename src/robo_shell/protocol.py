"""The command route's wire format: one JSON request line, one JSON record line, per connection.

Request: ``{"argv": ["move", "--arm", "left", "--dz", "0.05"]}``. Reply: the command's record, a JSON object with at
least ``ok`` (bool) and ``command``. The harness parses the arguments; the client only forwards them, so the base
commands are defined once (robodojo.agents.shell.commands).
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any

from robo_shell import ROUTE_ENV

#: the harness's base commands (robodojo.agents.shell.commands runs them); anything else may be a tool
BASE_COMMANDS = ("move", "rotate", "point", "gripper", "home", "wait", "obs", "status", "done")
MAX_LINE_BYTES = 1 << 20  # a record is a few kB; anything near this is a broken peer
ENCODING = "utf-8"


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
        try:
            sock.connect(path or route_path())
        except OSError as exc:
            raise RouteError(f"cannot reach the robot's command route: {exc}") from None
        sock.sendall(encode({"argv": list(argv)}))
        line = read_line(sock)
    try:
        record = json.loads(line.decode(ENCODING))
    except ValueError as exc:
        raise RouteError(f"the command route answered something that is not JSON: {exc}") from None
    if not isinstance(record, dict):
        raise RouteError("the command route answered JSON that is not an object")
    return record
