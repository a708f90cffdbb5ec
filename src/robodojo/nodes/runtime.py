"""Start, spin and stop a node the same way in every executable, as a node under ``ros2 launch`` should behave.

Signals: rclpy is initialised without its own signal handlers. SIGINT and SIGTERM only set a flag that the main thread
polls (and mark the node ``stop_signaled``, for its worker threads). ``stop_signaled`` is true from the instant the
signal reaches the process, before the main thread has run its Python handler: Python's C-level handler writes the
signal number to a wakeup pipe at delivery, and the node reads it (a main thread starved on a loaded machine runs
the handler late, and a worker that saw the rest of the graph stop would take that for a lost robot). A further
signal (a terminal's Ctrl-C reaches the whole process group and ros2 launch forwards another) logs one line and is
otherwise ignored, so no KeyboardInterrupt can land in the middle of the shutdown.

Shutdown, in order: ``node.close()`` runs while the executor is still spinning (in its own thread), so a node can
finish work on the way out (receive joint states, send an action result, answer a service); close is given
:data:`CLOSE_DEADLINE_S`. Then the executor stops and shuts down, the node is destroyed and rclpy shut down (executor
before rclpy: ROS_ON_PYPI.md, otherwise the process can abort).

Exit codes: 0 after a signal; ``node.exit_code`` when the node finished itself; 2 for bad configuration (one line on
stderr); 1 when a callback raised (its traceback is logged).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from types import FrameType
from typing import NoReturn, Protocol, TypeVar

import rclpy
from rclpy.executors import Executor, ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.impl.rcutils_logger import RcutilsLogger
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from rclpy.signals import SignalHandlerOptions

from robodojo.errors import BackendLostError, RobodojoError

T = TypeVar("T")
#: Status-like topics: late joiners get the last message (the episode status, the planned path).
LATCHED_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: ros2 launch sends SIGINT, then SIGTERM this long after, then SIGKILL as long again: a node's whole way out (close,
#: the executor's stop, rclpy's shutdown) stays below it, so that launch never has to escalate.
LAUNCH_SIGTERM_AFTER_S = 5.0
#: How long :meth:`GraphNode.close` may take before run_node shuts the node down regardless (and logs it).
CLOSE_DEADLINE_S = 3.5
#: How long the executor may take to stop after close (its spin thread), and again for callbacks still running.
EXECUTOR_STOP_S = 0.5
#: The whole way out from the stop signal: the spin thread may use what close left of it (below launch's SIGTERM).
SHUTDOWN_BUDGET_S = LAUNCH_SIGTERM_AFTER_S - 0.5
POLL_S = 0.05  # how often the main thread looks at the stop flag (a signal handler must not take locks)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
STOP_SIGNAL_NUMBERS = frozenset(int(s) for s in STOP_SIGNALS)


class GraphNode(Node):
    """A node that can end its own process (``finish``) and release resources on the way out (``close``)."""

    exit_code: int | None = None
    _stop_marked: bool = False
    _stop_arrived: Callable[[], bool] | None = None  # run_node's: reads the signal wakeup pipe

    @property
    def stop_signaled(self) -> bool:
        """True from the moment a stop signal reached the process (close runs only once the main thread has polled
        it). Set by the signal handler (a plain attribute write, the one thing a handler may safely do), and read
        from the wakeup pipe before the handler has run."""
        return self._stop_marked or (self._stop_arrived is not None and self._stop_arrived())

    @stop_signaled.setter
    def stop_signaled(self, value: bool) -> None:
        self._stop_marked = value

    #: How long :meth:`close` may take; a node whose close waits on the robot (the motion server) sets its own.
    close_timeout_s: float = CLOSE_DEADLINE_S

    def finish(self, exit_code: int = 0) -> None:
        """Ask :func:`run_node` to stop spinning and exit with ``exit_code``."""
        self.exit_code = exit_code

    def close(self) -> None:
        """End what the node is doing and release what it holds (threads, renderers); called once, from a thread of
        its own, before the node is destroyed.

        The executor still spins while close runs: subscriptions, services and action results are still served, so
        close may wait for them (end a running goal, join a worker that waits on an action result). It must return
        within :attr:`close_timeout_s`; past that, run_node logs it and shuts the node down anyway. Entities the
        executor waits on (action clients) are destroyed in ``destroy_node``, after the executor stopped.
        """


class _StopFlag:
    """SIGINT and SIGTERM counted, for the main thread to poll.

    A plain counter, not a threading.Event: a handler runs in the main thread between bytecodes, possibly while that
    thread holds the Event's lock, and taking it again would deadlock.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.received = 0
        #: The node to mark as stop_signaled, once it is built.
        self.node: GraphNode | None = None
        self._wakeup: tuple[int, int] | None = None
        self._arrived = False

    def install(self) -> None:
        """Our handlers for SIGINT and SIGTERM, and the wakeup pipe (main thread only, as signal.signal is)."""
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        self._wakeup = (read_fd, write_fd)
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._on_signal)

    def arrived(self) -> bool:
        """Whether a stop signal reached the process, even one whose Python handler has not run yet (any thread)."""
        if self._arrived or self.received:
            return True
        if self._wakeup is None:
            return False
        try:
            numbers = os.read(self._wakeup[0], 64)
        except (BlockingIOError, OSError):
            return False
        # Only ours come through the pipe (signals with a Python handler), but say which counts.
        self._arrived = any(n in STOP_SIGNAL_NUMBERS for n in numbers)
        return self._arrived

    def ignore(self) -> None:
        """Ignore further signals: at exit Python resets its own handlers to the default, and a late second SIGINT
        would then kill the process (exit -2) while it is already on its way out."""
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        wakeup, self._wakeup = self._wakeup, None
        if wakeup is not None:
            signal.set_wakeup_fd(-1)
            for fd in wakeup:
                os.close(fd)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.received += 1
        if self.node is not None:
            self.node.stop_signaled = True
        if self.received > 1:
            # os.write, not print: print from a handler can re-enter a write the main thread was in the middle of
            line = f"[{self.name}] {signal.Signals(signum).name} received: already shutting down\n"
            os.write(sys.stderr.fileno(), line.encode())


class Spinner:
    """Spins the executor in a thread of its own until stopped; remembers an exception a callback raised."""

    def __init__(self, executor: Executor, name: str) -> None:
        self.executor = executor
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, name=f"{name}_spin", daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _spin(self) -> None:
        try:
            while not self._stop.is_set() and self.executor.context.ok():
                self.executor.spin_once(timeout_sec=POLL_S)
        except ExternalShutdownException:
            pass
        except Exception:
            self.error = traceback.format_exc()

    def stop(self, timeout_s: float) -> bool:
        """Stop spinning; whether the thread ended within ``timeout_s``."""
        self._stop.set()
        self._thread.join(timeout=timeout_s)
        return not self._thread.is_alive()


def _close_within(node: GraphNode, deadline_s: float) -> None:
    """``node.close()`` in a thread of its own, given ``deadline_s``; a failure or overrun is logged."""

    def close() -> None:
        try:
            node.close()
        except Exception:
            node.get_logger().error(f"close failed:\n{traceback.format_exc()}")

    thread = threading.Thread(target=close, name="close", daemon=True)
    thread.start()
    thread.join(timeout=deadline_s)
    if thread.is_alive():
        node.get_logger().error(f"close() did not return within {deadline_s:.0f} s: shutting down regardless")


def run_node(factory: Callable[[], GraphNode], name: str, *, threads: int = 4) -> int:
    """Build the node with ``factory`` and spin it until a signal or until it finishes; the process exit code.

    ``threads=1`` spins a SingleThreadedExecutor: every callback, and every call_in_executor, in one thread.
    """
    stop = _StopFlag(name)
    stop.install()
    try:
        return _run(factory, name, threads, stop)
    finally:
        stop.ignore()


def _run(factory: Callable[[], GraphNode], name: str, threads: int, stop: _StopFlag) -> int:
    rclpy.init(args=sys.argv, signal_handler_options=SignalHandlerOptions.NO)
    try:
        node = factory()
    except RobodojoError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        rclpy.try_shutdown()
        return 2
    stop.node = node
    node._stop_arrived = stop.arrived
    node.stop_signaled = stop.received > 0  # a signal that came while the node was being built
    executor = SingleThreadedExecutor() if threads == 1 else MultiThreadedExecutor(num_threads=threads)
    executor.add_node(node)
    spinner = Spinner(executor, name)
    while not stop.received and node.exit_code is None and spinner.alive and rclpy.ok():
        time.sleep(POLL_S)
    by_signal = stop.received > 0 and node.exit_code is None
    log = node.get_logger()
    if by_signal:
        log.info("stop signal received: shutting down")
    stopping_s = time.monotonic()
    _close_within(node, node.close_timeout_s)
    # On a loaded machine (a whole graph stopping at once on 2 cores) the spin thread can take longer than
    # EXECUTOR_STOP_S to leave a callback: it gets what is left of the way out, and rclpy is never shut down under it.
    spin_wait_s = max(EXECUTOR_STOP_S, stopping_s + SHUTDOWN_BUDGET_S - time.monotonic())
    if not spinner.stop(spin_wait_s) or not executor.shutdown(timeout_sec=EXECUTOR_STOP_S):
        _exit_under_a_callback(log, time.monotonic() - stopping_s, spinner.error)
    if spinner.error is not None:  # before the stop or during close
        log.error(f"a callback raised:\n{spinner.error}")
    node.destroy_node()
    rclpy.try_shutdown()
    if spinner.error is not None:
        return 1
    return 0 if by_signal else (node.exit_code or 0)


def _exit_under_a_callback(log: RcutilsLogger, waited_s: float, error: str | None) -> NoReturn:
    """A callback still runs: destroying the node or shutting rclpy down under it aborts the process (SIGABRT, a
    core, "terminate called without an active exception"), so the process ends here, with exit code 1."""
    if error is not None:
        log.error(f"a callback raised:\n{error}")
    log.error(
        f"a callback was still running {waited_s:.1f} s after the stop began: exiting without shutting rclpy down"
    )
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)


class SpunNode(Protocol):
    """A node as :func:`call_in_executor` sees it: the executor that spins it, and its name."""

    @property
    def executor(self) -> Executor | None: ...

    def get_name(self) -> str: ...


def call_in_executor(node: SpunNode, fn: Callable[[], T], timeout_s: float) -> T:
    """Run ``fn`` in the thread that spins ``node`` and return its result.

    rclpy 7.1's ActionClient records a goal or result request only after sending it, unlocked: sent from another
    thread, a fast response can arrive first, be dropped ("Ignoring unexpected goal response") and leave the future
    pending forever. With a SingleThreadedExecutor, running the send as an executor task closes that gap.
    """
    executor = node.executor
    if executor is None:
        raise RuntimeError(f"node {node.get_name()} is not spinning")
    task = executor.create_task(fn)
    done = threading.Event()
    task.add_done_callback(lambda _: done.set())
    if not done.wait(timeout_s):
        raise BackendLostError(f"the node's executor did not run a call within {timeout_s:.0f} s")
    return task.result()
