"""The trajectory controller a robot runs: leases, what-played reports, and ends that are final."""

from __future__ import annotations

from pathlib import Path

import pytest

from robodojo.control.trajectory_controller import Lease, TrajectoryController, TrajectoryState
from robodojo.control.trajectory_player import JointLimit, TrajectoryCommand, TrajectoryPlayer
from robodojo.errors import InvalidCommandError

DT = 0.04
NAMES = ("j1", "j2")
LIMITS = {"j1": JointLimit(-1.0, 1.0, 2.0), "j2": JointLimit(-0.5, 2.0, 1.0)}
START = 1.0  # robot time, tick-aligned
HOLD = (0.0, 0.0)


class Clocks:
    """The controller's wall and monotonic clocks, moved by hand."""

    def __init__(self) -> None:
        self.wall = 1_000.0
        self.mono = 50.0

    def advance(self, dt_s: float) -> None:
        self.wall += dt_s
        self.mono += dt_s


@pytest.fixture
def clocks() -> Clocks:
    return Clocks()


def _controller(clocks: Clocks) -> TrajectoryController:
    player = TrajectoryPlayer(NAMES, LIMITS, 1.5)
    return TrajectoryController("arm", player, wall_clock=lambda: clocks.wall, monotonic_clock=lambda: clocks.mono)


def _cmd(n: int = 10, start: float = START, names=NAMES) -> TrajectoryCommand:
    points = tuple((0.02 * (k + 1), -0.01 * (k + 1)) for k in range(n))
    return TrajectoryCommand(tuple(names), tuple((k + 1) * DT for k in range(n)), points, start)


def _tick(controller: TrajectoryController, clocks: Clocks, tick: int, start: float = START):
    """The control tick that plays point ``tick`` (1-based) of a trajectory starting at ``start``."""
    clocks.advance(DT)
    return controller.sample(start + (tick - 1) * DT, DT)


def test_an_unleased_trajectory_plays_to_the_end_and_reports_every_point(clocks):
    c = _controller(clocks)
    assert c.status().state is TrajectoryState.IDLE
    c.submit(_cmd(5), START, HOLD, DT)
    for k in range(1, 6):
        assert _tick(c, clocks, k) is not None
        if k < 5:
            assert c.status().points_played == k and c.status().state is TrajectoryState.PLAYING
    (done,) = c.take_reports()
    assert (done.state, done.points_played, done.points, done.holding) == (TrajectoryState.FINISHED, 5, 5, True)
    assert _tick(c, clocks, 6) is None and not c.playing


def test_a_lapsed_lease_drops_the_trajectory_for_good(clocks):
    c = _controller(clocks)
    c.renew(Lease(START, clocks.wall, 0.5))
    c.submit(_cmd(40), START, HOLD, DT)
    for k in range(1, 5):
        c.renew(Lease(START, clocks.wall, 0.5))
        assert _tick(c, clocks, k) is not None
    clocks.advance(0.6)  # the commander stalls: no renewal
    assert _tick(c, clocks, 5) is None and not c.playing
    (ended,) = c.take_reports()
    assert ended.state is TrajectoryState.EXPIRED and ended.points_played == 4 and ended.points == 40
    assert "no lease from its commander" in ended.reason
    # A late renewal and a re-sent copy change nothing: an ended trajectory never plays again.
    c.renew(Lease(START, clocks.wall, 0.5))
    with pytest.raises(InvalidCommandError, match="already ended"):
        c.submit(_cmd(40), START, HOLD, DT)
    assert _tick(c, clocks, 6) is None
    assert [r.state for r in c.take_reports()] == [TrajectoryState.REFUSED]


def test_a_backlog_of_old_leases_delivered_late_does_not_revive_a_trajectory(clocks):
    """A frozen controller resumes and receives leases sent long ago: their send time gives them away."""
    c = _controller(clocks)
    sent = clocks.wall
    c.renew(Lease(START, sent, 0.5))
    c.submit(_cmd(40), START, HOLD, DT)
    assert _tick(c, clocks, 1) is not None
    clocks.advance(3.0)  # frozen
    c.renew(Lease(START, sent + 0.3, 0.5))  # sent before the commander gave up, delivered just now
    assert _tick(c, clocks, 2) is None
    (ended,) = c.take_reports()
    assert ended.state is TrajectoryState.EXPIRED and "sent" in ended.reason


def test_a_trajectory_that_arrives_after_its_lease_lapsed_never_plays(clocks):
    c = _controller(clocks)
    c.renew(Lease(START, clocks.wall, 0.5))
    clocks.advance(1.0)
    c.submit(_cmd(10), START, HOLD, DT)
    assert _tick(c, clocks, 1) is None
    (ended,) = c.take_reports()
    assert ended.state is TrajectoryState.EXPIRED and ended.points_played == 0


def test_a_replacement_reports_the_replaced_trajectory_with_what_it_played(clocks):
    c = _controller(clocks)
    c.submit(_cmd(20), START, HOLD, DT)
    for k in range(1, 4):
        _tick(c, clocks, k)
    c.submit(_cmd(3, start=0.0), START + 3 * DT, (0.06, -0.03), DT)  # a third party's, "start now"
    (replaced,) = c.take_reports()
    assert (replaced.state, replaced.start_s, replaced.points_played) == (TrajectoryState.REPLACED, START, 3)
    assert c.playing and c.status().start_s == 0.0


def test_an_empty_trajectory_stops_and_an_invalid_one_is_refused_while_the_running_one_goes_on(clocks):
    c = _controller(clocks)
    c.submit(_cmd(20), START, HOLD, DT)
    _tick(c, clocks, 1)
    bad = TrajectoryCommand(NAMES, (DT,), ((float("nan"), 0.0),), 0.0)
    with pytest.raises(InvalidCommandError, match="finite"):
        c.submit(bad, START + DT, HOLD, DT)
    with pytest.raises(InvalidCommandError, match="already playing"):
        c.submit(_cmd(20), START + DT, HOLD, DT)
    assert c.playing and _tick(c, clocks, 2) is not None
    c.submit(TrajectoryCommand(NAMES, (), (), 0.0), START + 2 * DT, HOLD, DT)
    refused, duplicate, stopped = c.take_reports()
    assert refused.state is TrajectoryState.REFUSED and refused.points_played == 0 and "finite" in refused.reason
    assert duplicate.state is TrajectoryState.REFUSED
    assert (stopped.state, stopped.points_played, stopped.start_s) == (TrajectoryState.STOPPED, 2, START)
    assert not c.playing and c.status().holding


def test_leases_with_bad_values_are_ignored(clocks):
    c = _controller(clocks)
    for timeout in (0.0, -1.0, float("nan"), float("inf")):
        c.renew(Lease(START, clocks.wall, timeout))
    c.submit(_cmd(5), START, HOLD, DT)
    clocks.advance(5.0)
    assert c.sample(START, DT) is not None  # unleased: plays as sent


def test_no_adapter_error_names_an_adapter_method():
    """A fault text reaches agents and operators: it says what an operator does (the release service), never a method
    of the adapter that neither can call (string constants of every hardware module, f-strings included)."""
    import ast

    from robodojo.hardware import adapter

    assert "/hardware/release" in adapter.RELEASE_ACTION
    for path in Path(adapter.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
        }  # fmt: skip
        texts = [
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
        ]
        assert not [t for t in texts if "recover_from_errors" in t], path.name
