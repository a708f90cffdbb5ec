"""The simulator's real-time loop, apart from any transport: a :class:`ControlledWorld` stepped at its control rate in
a thread of its own, which runs what other threads post to it (commands, resets) between steps.

The world lives in the loop thread, and so does its GL context (EGL contexts are bound to the thread that made them
current; a reset's first observation renders there). The loop hands what there is to publish to its
:class:`SimOutputs` from that thread: the joint state after every physics slice, the controllers' reports and the
episode state after every control step, camera captures at their rate, the real-time factor once per window. A loop
that cannot keep real time runs slower rather than skipping steps (:class:`Pacer`), and says so in its figures.
"""

from __future__ import annotations

import queue
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Protocol, TypeVar

from robodojo.control.pacing import Pacer, RateMeter
from robodojo.control.trajectory_controller import TrajectoryReport
from robodojo.errors import BackendLostError
from robodojo.sim.controlled_world import ControlledWorld, StepProblem

T = TypeVar("T")

RTF_WINDOW_S = 1.0  # wall time over which the real-time factor is measured
RTF_WARN_RATIO = 0.9  # below this fraction of the target real-time factor, the loop counts as slow
JOIN_TIMEOUT_S = 2.0  # one control tick, normally; a node's way out stays below ros2 launch's 5 s
#: A pass that began this much later than the loop's own period allows was frozen (a stop signal, a swapping machine),
#: not merely slow: the loop settles before its next step (below).
FROZEN_AFTER_S = 0.2
#: How long a loop that was frozen runs what was posted to it before it steps again. The leases and stops its commanders
#: sent meanwhile are still unread; a step first would judge a lease on that backlog and blame a live commander for the
#: simulator's own freeze. The world's time stood still with the loop, so the wait costs nothing simulated.
SETTLE_AFTER_FREEZE_S = 0.2


@dataclass(frozen=True)
class SimRates:
    """How fast the loop runs against the wall clock, and how often it publishes what is not per step."""

    real_time_factor: float
    camera_rate_hz: float
    status_rate_hz: float  # the episode state and the holding controllers' reports at least this often


@dataclass(frozen=True)
class RealTimeFactor:
    """The real-time factor measured over the last window, against its target."""

    measured: float
    target: float
    freezes: int = 0  # times the loop has found itself frozen mid-motion since it started (SimLoop.freezes)

    @property
    def slow(self) -> bool:
        return self.measured < RTF_WARN_RATIO * self.target

    @property
    def text(self) -> str:
        return f"running at {self.measured:.2f}x real time" + (f" (target {self.target:g}x)" if self.slow else "")


class SimOutputs(Protocol):
    """What the loop hands on to be published, always from the loop thread."""

    def joint_state(self) -> None:
        """After every physics slice (the world's time is the slice's)."""

    def control_step(self, t_s: float, reports: list[TrajectoryReport], status_due: bool) -> None:
        """After every control step: the controllers' reports, and the episode state (every time if ``status_due``,
        else when it changed)."""

    def cameras(self, t_s: float) -> None:
        """Camera captures are due."""

    def real_time_factor(self, rtf: RealTimeFactor) -> None:
        """A window of RTF_WINDOW_S closed."""

    def step_problem(self, problem: StepProblem) -> None:
        """A step found the robot in trouble: trajectories stopped, arms hold."""

    def loop_error(self, text: str) -> bool:
        """A pass of the loop failed (``text``: the traceback); whether the loop goes on (not while shutting down)."""


class SimLoop:
    """A :class:`ControlledWorld` stepped in real time in a thread of its own; :meth:`call` and :meth:`post` run code
    in that thread, between steps."""

    def __init__(self, build: Callable[[], ControlledWorld], outputs: SimOutputs, rates: SimRates) -> None:
        """Start the thread and build the world in it with ``build``; re-raises what ``build`` raised (a bad robot,
        task or seed), so that a node ends with the message."""
        self._outputs, self._rates = outputs, rates
        self._calls: queue.Queue[tuple[Callable[[], object], Future | None]] = queue.Queue()
        self._running = True
        self._lock = threading.Lock()  # a call is queued only while the loop runs; close fails those left
        #: How many times the loop found itself frozen and settled before stepping on.
        self.freezes = 0
        self.sim: ControlledWorld
        built: Future = Future()
        self._thread = threading.Thread(target=self._loop, args=(build, built), name="sim_loop", daemon=True)
        self._thread.start()
        built.result()

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` in the loop thread before its next step and return its result (or raise its exception);
        BackendLostError once the loop is closed (a call then would wait forever)."""
        done: Future = Future()
        with self._lock:
            if not self._running:
                raise BackendLostError("the simulation loop has stopped")
            self._calls.put((fn, done))
        return done.result()

    def post(self, fn: Callable[[], object]) -> None:
        """Queue ``fn`` to run in the loop thread before its next step, in order with the other posts and calls;
        what it raises is reported as a loop error. Dropped once the loop is closed (nothing would run it)."""
        with self._lock:
            if self._running:
                self._calls.put((fn, None))

    def close(self) -> bool:
        """Stop the loop and fail the calls still waiting; whether its thread ended within JOIN_TIMEOUT_S."""
        with self._lock:
            self._running = False
        self._thread.join(timeout=JOIN_TIMEOUT_S)
        with self._lock:
            while not self._calls.empty():
                _, future = self._calls.get_nowait()
                if future is not None:
                    future.set_exception(BackendLostError("the simulation loop stopped before this call ran"))
        return not self._thread.is_alive()

    def _run_calls(self) -> None:
        while not self._calls.empty():
            self._run(*self._calls.get_nowait())

    def _settle(self) -> None:
        """Run what is posted for SETTLE_AFTER_FREEZE_S without stepping: the loop was frozen, and what was sent to
        it meanwhile reaches it now."""
        self.freezes += 1
        end = time.monotonic() + SETTLE_AFTER_FREEZE_S
        while self._running and (left := end - time.monotonic()) > 0:
            try:
                self._run(*self._calls.get(timeout=left))
            except queue.Empty:
                break

    @staticmethod
    def _run(fn: Callable[[], object], future: Future | None) -> None:
        try:
            result = fn()
            if future is not None:
                future.set_result(result)
        except BaseException as exc:
            if future is None:
                raise
            future.set_exception(exc)

    def _loop(self, build: Callable[[], ControlledWorld], built: Future) -> None:
        try:
            self.sim = sim = build()
        except BaseException as exc:
            built.set_exception(exc)
            return
        built.set_result(None)
        outputs, rates = self._outputs, self._rates
        camera_period, status_period = 1.0 / rates.camera_rate_hz, 1.0 / rates.status_rate_hz
        now = sim.now_s
        pacer = Pacer(sim.control_dt_s, start_s=now, time_scale=rates.real_time_factor)
        rtf = RateMeter(RTF_WINDOW_S, now)
        next_camera, next_status = now + sim.control_dt_s, now  # cameras from the first step on, a period apart
        frozen_after_s = sim.control_dt_s / rates.real_time_factor + FROZEN_AFTER_S
        pass_began = time.monotonic()
        while self._running:
            try:
                began, pass_began = pass_began, time.monotonic()
                if pass_began - began > frozen_after_s and sim.playing:  # only a playing arm could be wronged
                    self._settle()
                self._run_calls()
                problem = sim.step(outputs.joint_state)
                if problem is not None:
                    outputs.step_problem(problem)
                now = sim.now_s
                status_due = now >= next_status
                outputs.control_step(now, sim.reports(holding_too=status_due), status_due)
                if status_due:
                    next_status = now + status_period
                measured = rtf.update(now)
                if measured is not None:
                    outputs.real_time_factor(RealTimeFactor(measured, rates.real_time_factor, self.freezes))
                if now + 1e-9 >= next_camera:
                    outputs.cameras(now)
                    next_camera += camera_period
                    if next_camera < now:  # fell behind: skip rather than burst
                        next_camera = now + camera_period
            except Exception:  # the loop is the robot: report and go on
                if not self._running or not outputs.loop_error(traceback.format_exc()):
                    return
                now = sim.now_s
            pacer.wait(now)  # more than a few steps late: it runs slower than real time instead of catching up
