"""The command route on its own (no sandbox): clients that send nothing, half a request, a flood, or too many
connections hold up no other client; a long command does not eat the time of the clients waiting behind it."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from robo_shell import protocol
from robodojo.agents.shell import route as route_module
from robodojo.agents.shell.route import MAX_CLIENTS, MAX_REQUEST_BYTES, CommandRoute

DEADLINE_S = 60.0  # generous: only a stalled route comes near it


def status(argv):
    if argv[:1] == ["slow"]:
        time.sleep(float(argv[1]))
    return {"ok": True, "command": argv[0], "verdict": "executed"}


@pytest.fixture
def route(tmp_path):
    r = CommandRoute(tmp_path / "robo", status)
    yield r
    r.close()


def clients(route, argvs):
    """Send each argv from a thread of its own; serve until all are answered (or the deadline). Their records."""
    records: dict[int, dict] = {}

    def send(i, argv):
        records[i] = protocol.call(argv, path=str(route.path), timeout_s=DEADLINE_S)

    threads = [threading.Thread(target=send, args=(i, a), daemon=True) for i, a in enumerate(argvs)]
    for t in threads:
        t.start()
    route.serve_while(lambda: any(t.is_alive() for t in threads), time.monotonic() + DEADLINE_S)
    return [records.get(i) for i in range(len(argvs))]


def connect(route, first: bytes = b"") -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(route.path))
    if first:
        s.sendall(first)
    return s


def test_silent_half_and_flooding_clients_hold_up_no_one(route):
    silent, half = connect(route), connect(route, b'{"argv": ["st')
    flood = connect(route)
    flood.setblocking(False)
    stop = threading.Event()

    def pour():  # as fast as the route reads it, until the route cuts it
        while not stop.is_set():
            try:
                flood.send(b"x" * 65536)
            except BlockingIOError:
                time.sleep(0.001)
            except OSError:
                return

    pourer = threading.Thread(target=pour, daemon=True)
    pourer.start()

    def flood_cut():
        return any(f"more than {MAX_REQUEST_BYTES} bytes" in c.record["reason"] for c in route.calls if not c.argv)

    try:
        records = clients(route, [["status"], ["home"], ["status"]])
        route.serve_while(lambda: not flood_cut(), time.monotonic() + DEADLINE_S)  # the flood goes on meanwhile
    finally:
        stop.set()
        pourer.join(5)
    assert [r and r["command"] for r in records] == ["status", "home", "status"]
    assert route.peak_buffered_bytes <= MAX_REQUEST_BYTES + 2 * route_module.RECV_BYTES
    route.close_clients()
    bad = [c.record["reason"] for c in route.calls if not c.argv]
    assert len(bad) == 3 and any(f"more than {MAX_REQUEST_BYTES} bytes" in r for r in bad)
    for s in (silent, half, flood):
        s.close()


def test_a_flood_of_connections_cannot_lock_the_route(route):
    idle: list[socket.socket] = []
    answered: list[dict] = []

    def flood_then_ask():  # more silent connections than the route keeps open, then one real request
        for _ in range(MAX_CLIENTS + 8):
            idle.append(connect(route))  # blocks while the backlog is full: the route must go on accepting
        answered.append(protocol.call(["status"], path=str(route.path), timeout_s=DEADLINE_S))

    thread = threading.Thread(target=flood_then_ask, daemon=True)
    thread.start()
    try:
        route.serve_while(thread.is_alive, time.monotonic() + DEADLINE_S)
        assert answered and answered[0]["ok"]
        dropped = [c for c in route.calls if not c.argv]
        assert len(dropped) >= 8 and all("connections open" in c.record["reason"] for c in dropped)
    finally:
        for s in idle:
            s.close()


def test_a_silent_client_is_answered_at_its_deadline(route, monkeypatch):
    monkeypatch.setattr(route_module, "READ_TIMEOUT_S", 0.2)
    silent = connect(route)
    silent.settimeout(DEADLINE_S)
    route.serve_while(lambda: not route.calls, time.monotonic() + DEADLINE_S)
    assert "no complete request within 0.2 s" in protocol.read_line(silent).decode()
    (call,) = route.take_calls()
    assert call.argv == [] and not call.answered and call.record["verdict"] == "usage"
    silent.close()


def test_a_long_command_does_not_use_up_the_time_of_the_clients_behind_it(tmp_path, monkeypatch):
    monkeypatch.setattr(route_module, "READ_TIMEOUT_S", 0.5)
    slow_started = threading.Event()

    def handler(argv):
        if argv == ["slow"]:
            slow_started.set()
            time.sleep(1.5)  # longer than the read timeout
        return {"ok": True, "command": argv[0], "verdict": "executed"}

    route = CommandRoute(tmp_path / "robo", handler)
    try:
        waiting = []

        def behind():  # connects and sends its whole request while the slow command runs
            slow_started.wait(DEADLINE_S)
            waiting.append(connect(route, protocol.encode({"argv": ["status"]})))

        thread = threading.Thread(target=behind, daemon=True)
        thread.start()
        first = connect(route, protocol.encode({"argv": ["slow"]}))
        route.serve_while(lambda: len(route.calls) < 2, time.monotonic() + DEADLINE_S)
        assert [c.argv for c in route.calls] == [["slow"], ["status"]]
        assert all(c.answered for c in route.calls)  # not dropped: nothing was read while the slow one ran
        for s in (first, *waiting):
            s.close()
    finally:
        route.close()
