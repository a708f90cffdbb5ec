"""The robot's command route: the Unix socket the sandboxed ``robo`` command talks to (robo_shell.protocol).

It is served in the thread that runs the acting agent's command (the episode's thread, where the robot backend lives),
while that command runs: :meth:`CommandRoute.serve_while` runs one selector loop over the listening socket and every
open connection. A connection's request is read as it arrives, into a buffer of its own (at most
``MAX_REQUEST_BYTES``), so a client that connects and sends nothing, or half a line, or floods bytes, holds up no one:
the others are read and answered meanwhile, and it is answered with an error and closed at its deadline
(``READ_TIMEOUT_S``) or its size limit. Commands themselves run one at a time, in the order their requests
completed, so commands from one shell command (or from tools, or from commands started in the background) are
executed strictly in sequence. Replies are sent without blocking (a client that does not read its reply is dropped
at its deadline). Every command is logged with its arguments, its record and its wall time.
"""

from __future__ import annotations

import contextlib
import json
import logging
import selectors
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robo_shell import protocol

log = logging.getLogger(__name__)

SOCKET_NAME = "route.sock"
#: a client has this long to send its request line once connected (and to read its reply), not counting the time
#: the route spent running other commands meanwhile
READ_TIMEOUT_S = 10.0
POLL_S = 0.05
#: a request is one argv as JSON (a few hundred bytes; Linux caps one argument at 128 kB): more is a broken peer
MAX_REQUEST_BYTES = 256 << 10
#: connections open at once; past it the oldest one still sending its request is dropped (a connection flood
#: cannot lock the route; each buffer is at most MAX_REQUEST_BYTES)
MAX_CLIENTS = 64
RECV_BYTES = 65536  # read per ready connection and turn of the loop, so every client gets its turn


@dataclass(frozen=True)
class RouteCall:
    """One command served on the route (the episode record's robo_calls.jsonl line)."""

    argv: list[str]
    record: dict[str, Any]
    started_s: float  # time.monotonic()
    duration_s: float
    answered: bool  # False when the client was gone before the record could be sent


@dataclass
class _Client:
    sock: socket.socket
    deadline_s: float
    started_s: float = 0.0
    request: bytearray = field(default_factory=bytearray)
    reply: bytes = b""  # what is left to send; set once the command ran
    argv: list[str] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)
    finished_s: float = 0.0  # when the command's record was ready


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
        self._sock.listen(MAX_CLIENTS)
        self._sock.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._sock, selectors.EVENT_READ)
        self._clients: dict[int, _Client] = {}  # by file descriptor
        self.peak_buffered_bytes = 0  # the most request bytes held at once (benchmarks/shell.py, tests)

    def serve_while(self, alive: Callable[[], bool], deadline_s: float | None = None) -> bool:
        """Serve commands while ``alive()`` is true; False when ``deadline_s`` (time.monotonic) passed first.
        A command being executed when the deadline passes is finished (a motion is never cut off mid-way)."""
        while alive():
            if deadline_s is not None and time.monotonic() >= deadline_s:
                return False
            self._turn(POLL_S)
        self.drain()
        return True

    def drain(self) -> None:
        """Serve what is already waiting (a command sent just before its process ended); connections still open
        stay open (a coding agent's process lives on between its turns)."""
        while self._turn(0.0):
            pass

    def close_clients(self) -> None:
        """Drop every open connection (its process ended): a command already run is logged as not answered."""
        for client in list(self._clients.values()):
            self._drop(client, "the command ended before its request was complete")

    def _turn(self, timeout_s: float) -> bool:
        """One pass of the loop; False when nothing was ready."""
        events = self._selector.select(timeout=timeout_s)
        for key, mask in events:
            if key.fileobj is self._sock:
                self._accept()
            elif (client := self._clients.get(key.fd)) is not None:
                if mask & selectors.EVENT_WRITE:
                    self._send(client)
                elif mask & selectors.EVENT_READ:
                    self._receive(client)
        now = time.monotonic()
        for client in [c for c in self._clients.values() if c.deadline_s <= now]:
            self._drop(client, f"no complete request within {READ_TIMEOUT_S:g} s" if not client.reply else "")
        return bool(events)

    # -- connections ---------------------------------------------------------------------------------------------
    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except BlockingIOError:
                return
            if len(self._clients) >= MAX_CLIENTS:
                waiting = [c for c in self._clients.values() if not c.reply]
                if waiting:
                    self._drop(min(waiting, key=lambda c: c.started_s), f"more than {MAX_CLIENTS} connections open")
            conn.setblocking(False)
            now = time.monotonic()
            client = _Client(conn, now + READ_TIMEOUT_S, now)
            self._clients[conn.fileno()] = client
            self._selector.register(conn, selectors.EVENT_READ)

    def _receive(self, client: _Client) -> None:
        try:
            chunk = client.sock.recv(RECV_BYTES)
        except BlockingIOError:
            return
        except OSError as exc:
            self._drop(client, f"bad request: {exc}")
            return
        end = chunk.find(b"\n")
        client.request += chunk if end < 0 else chunk[:end]
        self.peak_buffered_bytes = max(self.peak_buffered_bytes, sum(len(c.request) for c in self._clients.values()))
        if end < 0 and len(client.request) > MAX_REQUEST_BYTES:
            self._answer(client, [], _bad(f"more than {MAX_REQUEST_BYTES} bytes without a line end"))
        elif end < 0 and not chunk:
            self._answer(client, [], _bad("the connection closed before the request's line end"))
        elif end >= 0:
            self._request(client)

    def _request(self, client: _Client) -> None:
        started = time.monotonic()
        argv: list[str] = []
        try:
            request = json.loads(bytes(client.request).decode(protocol.ENCODING))
            sent = request.get("argv") if isinstance(request, dict) else None
            if not isinstance(sent, list) or not all(isinstance(a, str) for a in sent):
                raise ValueError('expected {"argv": [strings]}')
            argv = sent
        except (ValueError, RecursionError) as exc:
            record = _bad(str(exc))
        else:
            record = self._run(argv)
            busy_s = time.monotonic() - started
            for other in self._clients.values():  # nothing was read while the command ran: their time stands still
                if other is not client:
                    other.deadline_s += busy_s
        client.started_s = started
        self._answer(client, argv, record)

    def _answer(self, client: _Client, argv: list[str], record: dict[str, Any]) -> None:
        try:
            payload = protocol.encode(record)
        except ValueError as exc:  # a NaN or an object JSON cannot carry
            reason = f"the harness produced a record JSON cannot carry: {exc}"
            record = {"ok": False, "command": record.get("command", ""), "verdict": "error", "reason": reason}
            payload = protocol.encode(record)
        client.argv, client.record, client.reply = argv, record, payload
        client.request = bytearray()
        client.finished_s = time.monotonic()
        client.deadline_s = client.finished_s + READ_TIMEOUT_S
        self._selector.modify(client.sock, selectors.EVENT_WRITE)
        self._send(client)

    def _send(self, client: _Client) -> None:
        try:
            sent = client.sock.send(client.reply)
        except BlockingIOError:
            return
        except OSError:
            self._finish(client, answered=False)  # the client was killed or gave up; the effect is in the record
            return
        client.reply = client.reply[sent:]
        if not client.reply:
            self._finish(client, answered=True)

    def _drop(self, client: _Client, reason: str) -> None:
        """Close a connection before its answer was delivered; a request cut short is answered with ``reason``
        if the client still listens, and logged."""
        if client.reply:
            self._finish(client, answered=False)
            return
        record = _bad(reason)
        with contextlib.suppress(OSError):
            client.sock.send(protocol.encode(record))
        client.argv, client.record, client.finished_s = [], record, time.monotonic()
        self._finish(client, answered=False)

    def _finish(self, client: _Client, *, answered: bool) -> None:
        self._clients.pop(client.sock.fileno(), None)
        self._selector.unregister(client.sock)
        client.sock.close()
        duration = client.finished_s - client.started_s
        self.calls.append(RouteCall(client.argv, client.record, client.started_s, duration, answered))

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
        self.close_clients()
        self._selector.close()
        self._sock.close()
        self.path.unlink(missing_ok=True)


def _bad(reason: str) -> dict[str, Any]:
    return {"ok": False, "command": "", "verdict": "usage", "reason": f"bad request: {reason}"}
