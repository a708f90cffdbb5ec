"""The simulator's real-time loop without ROS (sim/sim_loop.py): a real ControlledWorld stepped in its own thread."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from robodojo.control.trajectory_controller import ControllerNames, TrajectoryState
from robodojo.control.trajectory_player import TrajectoryCommand
from robodojo.errors import BackendLostError, RobodojoError
from robodojo.sim.controlled_world import ARM, ControlledWorld
from robodojo.sim.sim_loop import RealTimeFactor, SimLoop, SimRates

SLICES = 2
WAIT_S = 60.0  # generous: a loaded machine runs the loop slower, never differently


def names(arm: str) -> ControllerNames:
    return ControllerNames(f"{arm}_arm_controller", f"{arm}_gripper_controller")


def build(seed: int = 0) -> ControlledWorld:
    return ControlledWorld("dual_arx_x5", "general_pickup", "standard", seed, names, joint_state_slices=SLICES)


class Outputs:
    """Records what the loop hands on, in order, with the thread it came from."""

    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []
        self.threads: set[str] = set()
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.errors: list[str] = []

    def _add(self, kind: str, value: object = None) -> None:
        with self.changed:
            self.events.append((kind, value))
            self.threads.add(threading.current_thread().name)
            self.changed.notify_all()

    def count(self, kind: str) -> int:
        with self.lock:
            return sum(k == kind for k, _ in self.events)

    def wait_for(self, predicate, what: str) -> None:
        with self.changed:
            assert self.changed.wait_for(predicate, timeout=WAIT_S), what

    def joint_state(self) -> None:
        self._add("joint_state")

    def control_step(self, t_s, reports, status_due) -> None:
        self._add("control_step", (t_s, list(reports), status_due))

    def cameras(self, t_s) -> None:
        self._add("cameras", t_s)

    def real_time_factor(self, rtf: RealTimeFactor) -> None:
        self._add("rtf", rtf)

    def step_problem(self, problem) -> None:
        self._add("problem", problem)

    def loop_error(self, text: str) -> bool:
        self.errors.append(text)
        self._add("error", text)
        return True


@pytest.fixture
def running():
    outputs = Outputs()
    loop = SimLoop(build, outputs, SimRates(real_time_factor=1.0, camera_rate_hz=12.5, status_rate_hz=2.0))
    yield loop, outputs
    assert loop.close()
    loop.sim.close()


def test_a_bad_world_is_raised_by_the_constructor_and_no_thread_is_left_running():
    before = {t.name for t in threading.enumerate()}
    with pytest.raises(RobodojoError, match="unknown robot 'no_such_robot'"):
        SimLoop(lambda: ControlledWorld("no_such_robot", "general_pickup", "standard", 0, names), Outputs(),
                SimRates(1.0, 25.0, 2.0))  # fmt: skip
    assert "sim_loop" not in {t.name for t in threading.enumerate()} - before


def test_every_output_comes_from_the_loop_thread_at_its_rate(running):
    loop, outputs = running
    outputs.wait_for(lambda: sum(k == "control_step" for k, _ in outputs.events) >= 30, "30 control steps")
    outputs.wait_for(lambda: any(k == "rtf" for k, _ in outputs.events), "a real-time factor window")
    assert outputs.threads == {"sim_loop"}
    with outputs.lock:
        events = list(outputs.events)
    steps = [v for k, v in events if k == "control_step"]
    times = np.array([t for t, _, _ in steps])
    assert np.allclose(np.diff(times), loop.sim.control_dt_s)  # simulated time whole: no step skipped or repeated
    # Each control step follows its physics slices, each with its joint state.
    first, last = events.index(("control_step", steps[0])), events.index(("control_step", steps[-1]))
    assert sum(k == "joint_state" for k, _ in events[first + 1 : last + 1]) == SLICES * (len(steps) - 1)
    cameras = np.array([v for k, v in events if k == "cameras"])
    assert np.all(np.diff(cameras) >= 1 / 12.5 - 1e-9)  # at the camera rate, never faster than the steps allow
    assert steps[0][2]  # the first step publishes the status and the holding controllers
    assert 0 < sum(due for _, _, due in steps) < len(steps)


def test_calls_and_posts_run_in_the_loop_thread_in_order_between_steps(running):
    loop, outputs = running
    assert loop.call(lambda: threading.current_thread().name) == "sim_loop"
    with pytest.raises(ZeroDivisionError):
        loop.call(lambda: 1 / 0)  # the caller gets the error; the loop goes on
    order: list[int] = []
    done = threading.Event()
    for i in range(5):
        loop.post(lambda i=i: order.append(i))
    loop.post(done.set)
    assert done.wait(WAIT_S)
    assert order == [0, 1, 2, 3, 4]
    loop.post(lambda: 1 / 0)  # a post's error is the loop's to report, and it goes on
    outputs.wait_for(lambda: any(k == "error" for k, _ in outputs.events), "the post's error")
    assert "ZeroDivisionError" in outputs.errors[0]
    steps = outputs.count("control_step")
    outputs.wait_for(lambda: sum(k == "control_step" for k, _ in outputs.events) > steps + 3, "steps after it")


def test_a_posted_trajectory_plays_and_its_reports_reach_the_outputs(running):
    loop, outputs = running
    sim = loop.sim

    def submit() -> None:
        joints = sim.robot.arm("left").joints
        state = dict(zip(*sim.joint_state()[:2], strict=True))
        q0 = np.array([state[j] for j in joints])
        rows = tuple(tuple(q0 + 0.01 * (k + 1)) for k in range(5))
        times = tuple(sim.control_dt_s * (k + 1) for k in range(5))
        sim.submit("left", ARM, TrajectoryCommand(tuple(joints), times, rows, 0.0))

    loop.post(submit)

    def finished() -> bool:
        return any(
            k == "control_step" and any(r.state == TrajectoryState.FINISHED for r in v[1]) for k, v in outputs.events
        )

    outputs.wait_for(finished, "the trajectory's end report")
    with outputs.lock:
        played = [r.points_played for k, v in outputs.events if k == "control_step" for r in v[1]
                  if r.controller == "left_arm_controller" and r.state == TrajectoryState.PLAYING]  # fmt: skip
    assert played == sorted(played) and played[-1] <= 5


def test_a_call_after_close_is_refused_not_left_waiting():
    loop = SimLoop(build, Outputs(), SimRates(1.0, 25.0, 2.0))
    try:
        assert loop.call(lambda: 7) == 7
    finally:
        assert loop.close()
        loop.sim.close()
    with pytest.raises(BackendLostError, match="the simulation loop has stopped"):
        loop.call(lambda: 7)
