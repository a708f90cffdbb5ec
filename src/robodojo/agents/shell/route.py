"""The robot's command route: the Unix socket the sandboxed ``robo`` command talks to (robo_shell.protocol).

It is served in the thread that runs the acting agent's command (the episode's thread, where the robot backend lives),
while that command runs: :meth:`CommandRoute.serve_while` accepts connections one at a time, so commands from one
shell command (or from tools, or from commands started in the background) are executed strictly in sequence. Every
command is logged with its arguments, its record and its wall time.
"""

from __future__ import annotations

import json
import logging
import selectors
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robo_shell import protocol

log = logging.getLogger(__name__)

SOCKET_NAME = "route.sock"
READ_TIMEOUT_S = 10.0  # a client has this long to send its request line once connected
POLL_S = 0.05


@dataclass(frozen=True)
class RouteCall:
    """One command served on the route (the episode record's robo_calls.jsonl line)."""

    argv: list[str]
    record: dict[str, Any]
    started_s: float  # time.monotonic()
    duration_s: float
    answered: bool  # False when the client was gone before the record could be sent


class CommandRoute:
    """A listening Unix socket in ``folder``; ``handler(argv) -> record`` runs each command."""

    def __init__(self, folder: Path, handler: Callable[[list[str]], dict[str, Any]]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / SOCKET_NAME
        self.path.unlink(missing_ok=True)
        self.handler = handler
        self.calls: list[RouteCall] = []
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(self.path))
        self._sock.listen(16)
        self._sock.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._sock, selectors.EVENT_READ)

    def serve_while(self, alive: Callable[[], bool], deadline_s: float | None = None) -> bool:
        """Serve commands while ``alive()`` is true; False when ``deadline_s`` (time.monotonic) passed first.
        A command being executed when the deadline passes is finished (a motion is never cut off mid-way)."""
        while alive():
            if deadline_s is not None and time.monotonic() >= deadline_s:
                return False
            for _ in self._selector.select(timeout=POLL_S):
                self.serve_one()
        self.drain()
        return True

    def drain(self) -> None:
        """Serve the connections already waiting (a command sent just before its process ended)."""
        while self._selector.select(timeout=0):
            if not self.serve_one():
                break

    def serve_one(self) -> bool:
        """Accept and answer one connection; False when none was waiting."""
        try:
            conn, _ = self._sock.accept()
        except BlockingIOError:
            return False
        with conn:
            conn.setblocking(True)
            conn.settimeout(READ_TIMEOUT_S)
            started = time.monotonic()
            argv: list[str] = []
            try:
                request = json.loads(protocol.read_line(conn).decode(protocol.ENCODING))
                sent = request.get("argv") if isinstance(request, dict) else None
                if not isinstance(sent, list) or not all(isinstance(a, str) for a in sent):
                    raise ValueError('expected {"argv": [strings]}')
                argv = sent
            except (OSError, ValueError, protocol.RouteError) as exc:
                record = {"ok": False, "command": "", "verdict": "usage", "reason": f"bad request: {exc}"}
            else:
                record = self._run(argv)
            try:
                payload = protocol.encode(record)
            except ValueError as exc:  # a NaN or an object JSON cannot carry
                reason = f"the harness produced a record JSON cannot carry: {exc}"
                payload = protocol.encode({"ok": False, "command": record.get("command", ""), "verdict": "error",
                                           "reason": reason})  # fmt: skip
            try:
                conn.sendall(payload)
                answered = True
            except OSError:
                answered = False  # the client was killed or timed out; the command's effect is in the record
            self.calls.append(RouteCall(argv, record, started, time.monotonic() - started, answered))
        return True

    def _run(self, argv: list[str]) -> dict[str, Any]:
        try:
            return self.handler(argv)
        except Exception as exc:  # a harness bug must not end the episode's command loop
            log.exception("robo %s failed in the harness", argv)
            reason = f"the harness failed: {type(exc).__name__}: {exc}; nothing more moved"
            return {"ok": False, "command": argv[0] if argv else "", "verdict": "error", "reason": reason}

    def take_calls(self) -> list[RouteCall]:
        calls, self.calls = self.calls, []
        return calls

    def close(self) -> None:
        self._selector.close()
        self._sock.close()
        self.path.unlink(missing_ok=True)
