"""The bus emulators of a dual (or single) X5 as one process, with a control socket for state queries and faults.

The emulator must run in a process of its own: the SDK holds Python's GIL through its blocking calls (the
constructor waits for the motors' answers, ``reset_to_home()`` sleeps about 3 s), so an emulator thread in the SDK's
process would never get to answer. ``python -m robodojo.hardware.x5_bus`` starts one; :class:`EmulatorClient`
talks to it.

Files in the socket folder: ``<interface>`` (the bus, for the shim), ``<interface>.frames`` (every command frame,
records of :data:`~robodojo.hardware.x5_bus.emulator.LOG_RECORD`, flushed as they come) and ``control`` (a Unix
stream socket: one JSON request per line, one JSON answer per line):

- ``{"op": "state"}``: every arm's joints [rad], gripper width and commanded width [m], and frame counts;
- ``{"op": "silence", "interface": "can0", "motor": 5, "on": true}``: that motor stops answering (or answers again);
- ``{"op": "fault", "interface": "can0", "motor": 5, "code": 10}``: its feedback carries error ``code`` (0 clears);
- ``{"op": "mute", "interface": "can0", "on": true}``: the whole bus stops answering;
- ``{"op": "block_gripper", "interface": "can0", "width_m": 0.04}``: an object that wide between the fingers (null:
  none);
- ``{"op": "load", "interface": "can0", "motor": 2, "torque": 25.0}``: the motor reports that much more torque (its
  feedback unit) than it outputs (0 clears);
- ``{"op": "can_timeout", "interface": "can0", "timeout_s": 0.05}``: the Damiao motors' firmware CAN timeout (null:
  off, the default);
- ``{"op": "motors", "interface": "can0"}``: each motor's firmware state (``motors``: id -> enabled, fault, command).

Every answer has ``"ok"``; a failed request says why in ``"error"``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from robodojo.errors import HardwareError
from robodojo.hardware.x5_bus.emulator import LOG_RECORD, BusEmulator, BusLoop, LoggedCommand, decode_log, serve_buses

CONTROL = "control"
# A real motor answers within microseconds whatever the host does; an emulator that stalls looks like a silent motor.
# So the thread that answers the frames runs at SCHED_FIFO, above the SDK's CAN threads (config/hardware/
# dual_arx_x5.yaml bus_thread_priority), and the rest of the process at a lower niceness, where the OS allows it (root,
# or RLIMIT_RTPRIO and RLIMIT_NICE).
EMULATOR_PRIORITY = 85
EMULATOR_NICE = -5
START_TIMEOUT_S = 30.0


def frames_path(socket_dir: str | Path, interface: str) -> Path:
    return Path(socket_dir) / f"{interface}.frames"


class EmulatorServer:
    """Bus emulators for ``arms`` (interface -> start joints [rad]) and the control socket, in this process."""

    def __init__(self, socket_dir: str | Path, arms: Mapping[str, Sequence[float]], *, gripper_width_m: float = 0.0):
        self.socket_dir = Path(socket_dir)
        self.socket_dir.mkdir(parents=True, exist_ok=True)
        self.buses = {
            name: BusEmulator(
                name, self.socket_dir, joints_rad=joints, gripper_width_m=gripper_width_m,
                log_path=frames_path(self.socket_dir, name),
            )
            for name, joints in arms.items()
        }  # fmt: skip
        self._control: socket.socket | None = None
        self._loop: BusLoop | None = None
        self._closed = threading.Event()

    def start(self, priority: int = 0) -> EmulatorServer:
        """Listen and serve, the buses on a thread of SCHED_FIFO ``priority`` where allowed (0: the normal one)."""
        for bus in self.buses.values():
            bus.listen()
        self._loop = serve_buses(list(self.buses.values()), priority)
        path = self.socket_dir / CONTROL
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        control.bind(str(path))
        control.listen(8)
        self._control = control
        threading.Thread(target=self._accept, name="x5-bus-control", daemon=True).start()
        return self

    def close(self) -> None:
        self._closed.set()
        if self._control is not None:
            with contextlib.suppress(OSError):
                self._control.shutdown(socket.SHUT_RDWR)
            self._control.close()
        if self._loop is not None:
            self._loop.close()
        for bus in self.buses.values():
            bus.close()
        with contextlib.suppress(FileNotFoundError):
            (self.socket_dir / CONTROL).unlink()

    def wait(self) -> None:
        self._closed.wait()

    def _accept(self) -> None:
        assert self._control is not None
        while not self._closed.is_set():
            try:
                conn, _ = self._control.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), name="x5-bus-control-client", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rw", encoding="utf-8") as stream:
            for line in stream:
                try:
                    answer = {"ok": True, **self.handle(json.loads(line))}
                except (ValueError, KeyError, TypeError) as exc:
                    answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
                stream.write(json.dumps(answer) + "\n")
                stream.flush()

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request["op"]
        if op == "state":
            return {
                "arms": {
                    name: {
                        "joints_rad": bus.joint_positions_rad(),
                        "gripper_width_m": bus.gripper_width_m(),
                        "gripper_command_m": bus.gripper_command_m(),
                        "frames_received": bus.frames_received,
                        "frames_answered": bus.frames_answered,
                        "connections": bus.connections,
                    }
                    for name, bus in self.buses.items()
                }
            }
        ops = ("silence", "fault", "mute", "block_gripper", "load", "can_timeout", "motors")
        if op not in ops:
            raise ValueError(f"unknown op {op!r}; ops: state, {', '.join(ops)}")
        name = request["interface"]
        if name not in self.buses:
            raise ValueError(f"no bus {name!r}; buses: {', '.join(self.buses)}")
        bus = self.buses[name]
        if op == "motors":
            return {"motors": {str(m): v for m, v in bus.motor_states().items()}}
        if op == "can_timeout":
            timeout = request.get("timeout_s")
            bus.set_can_timeout(None if timeout is None else float(timeout))
            return {}
        if op == "silence":
            bus.silence(int(request["motor"]), bool(request.get("on", True)))
        elif op == "fault":
            bus.set_fault(int(request["motor"]), int(request["code"]))
        elif op == "mute":
            bus.mute(bool(request.get("on", True)))
        elif op == "load":
            bus.load(int(request["motor"]), float(request["torque"]))
        else:
            width = request.get("width_m")
            bus.block_gripper(None if width is None else float(width))
        return {}


class EmulatorClient:
    """Requests to an emulator process's control socket (one connection, thread-safe)."""

    def __init__(self, socket_dir: str | Path, *, timeout_s: float = 5.0) -> None:
        self.socket_dir = Path(socket_dir)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout_s)
        self._sock.connect(str(self.socket_dir / CONTROL))
        self._stream = self._sock.makefile("rw", encoding="utf-8")
        self._lock = threading.Lock()

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        with self._lock:
            self._stream.write(json.dumps({"op": op, **fields}) + "\n")
            self._stream.flush()
            line = self._stream.readline()
        if not line:
            raise HardwareError("the bus emulator closed its control socket")
        answer: dict[str, Any] = json.loads(line)
        if not answer.get("ok"):
            raise HardwareError(f"the bus emulator refused {op}: {answer.get('error')}")
        return answer

    def state(self) -> dict[str, Any]:
        arms: dict[str, Any] = self.request("state")["arms"]
        return arms

    def commands(self, interface: str, since: int = 0) -> list[LoggedCommand]:
        """The command frames the emulator received on ``interface``, from the ``since``-th on."""
        with frames_path(self.socket_dir, interface).open("rb") as f:
            f.seek(since * LOG_RECORD.size)
            return decode_log(f.read())

    def command_count(self, interface: str) -> int:
        """How many command frames the emulator has logged on ``interface`` (flushed as they come)."""
        return frames_path(self.socket_dir, interface).stat().st_size // LOG_RECORD.size

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._stream.close()
            self._sock.close()


def start_emulator_process(
    socket_dir: str | Path,
    arms: Mapping[str, Sequence[float]],
    *,
    log: Path | None = None,
    timeout_s: float = START_TIMEOUT_S,
) -> subprocess.Popen[bytes]:
    """``python -m robodojo.hardware.x5_bus`` serving ``arms`` in ``socket_dir``; returns once its control socket
    answers. HardwareError (the process killed) when it does not within ``timeout_s``."""
    args = [sys.executable, "-m", "robodojo.hardware.x5_bus", "--socket-dir", str(socket_dir)]
    for name, joints in arms.items():
        args += ["--arm", f"{name}={','.join(f'{q:.6f}' for q in joints)}"]
    out = open(log, "wb") if log is not None else subprocess.DEVNULL  # noqa: SIM115
    process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise HardwareError(f"the bus emulator exited with {process.returncode} (log: {log})")
        try:
            EmulatorClient(socket_dir, timeout_s=1.0).close()
            return process
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise HardwareError(f"the bus emulator did not answer within {timeout_s:g} s (log: {log})")


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m robodojo.hardware.x5_bus",
        description="Emulate the motor buses of ARX X5 arms for the SDK behind the SocketCAN shim.",
    )
    parser.add_argument("--socket-dir", required=True, help="folder of the bus sockets (ROBODOJO_CAN_SOCKET_DIR)")
    parser.add_argument(
        "--arm", action="append", required=True, metavar="IFACE=Q1,..,Q6",
        help="an arm's interface and start joints [rad], e.g. can0=0,0.01,0.01,0,0,0; repeat per arm",
    )  # fmt: skip
    args = parser.parse_args(argv)
    arms: dict[str, list[float]] = {}
    for spec in args.arm:
        name, _, joints = spec.partition("=")
        if not name.startswith("can"):
            parser.error(f"--arm {spec!r}: the SDK only opens interfaces named can*")
        arms[name] = [float(q) for q in joints.split(",")]
    with contextlib.suppress(OSError):  # motors answer in hardware: ahead of the SDK's processes where allowed
        os.nice(EMULATOR_NICE)
    server = EmulatorServer(args.socket_dir, arms).start(EMULATOR_PRIORITY)
    signal.signal(signal.SIGTERM, lambda *_: server._closed.set())
    print(f"x5 bus emulator: {', '.join(arms)} in {args.socket_dir} (pid {os.getpid()})", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.wait()
    server.close()
    return 0
