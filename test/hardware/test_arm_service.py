"""ArmService without ROS (robodojo.hardware.arm_service), against franky-sim: what a driver node publishes, from the
service's threads, through a host that records it. Waits are generous and no test asserts a duration."""

from __future__ import annotations

import threading

import pytest
from conftest import FrankySim, start_franky_sim

from robodojo.control.trajectory_controller import ControllerNames, TrajectoryReport
from robodojo.hardware.arm_service import ArmService, DrivenArm, Health, JointRows, ServiceRates, driven_arm
from robodojo.hardware.franka import FrankaArm
from robodojo.hardware.settings import load_fr3_settings

SETTINGS = load_fr3_settings()
WAIT_S = 30.0
RATES = ServiceRates(state_rate_hz=100.0, status_rate_hz=4.0, gripper_rate_hz=2.0, reconnect_period_s=0.5)


class RecordingHost:
    """An ArmServiceHost that keeps what it is handed (the driver node publishes it instead)."""

    def __init__(self, ip: str) -> None:
        self.ip = ip
        self.rows: list[JointRows] = []
        self.reports: list[TrajectoryReport] = []
        self.health: list[tuple[Health, str]] = []
        self.lines: list[tuple[str, str]] = []
        self.changed = threading.Condition()
        self.service: ArmService | None = None

    def _add(self, items: list, item: object) -> None:
        with self.changed:
            items.append(item)
            self.changed.notify_all()

    def wait(self, predicate, what: str) -> None:
        with self.changed:
            assert self.changed.wait_for(predicate, timeout=WAIT_S), what

    def connect_arm(self, arm: DrivenArm) -> None:
        arm.adapter.connect(self.ip)

    def finger_position_m(self, arm: DrivenArm) -> float | None:
        width = arm.driver.gripper_width_m()
        return None if width is None else width / 2.0

    def publish_joint_rows(self, rows: JointRows) -> None:
        self._add(self.rows, rows)

    def publish_report(self, report: TrajectoryReport) -> None:
        self._add(self.reports, report)

    def publish_health(self, *, periodic: bool) -> None:
        assert self.service is not None
        for arm in self.service.arms:
            health = ArmService.health(arm)
            self._add(self.health, (health.level, health.message))

    def log(self, level: str, text: str) -> None:
        self._add(self.lines, (level, text))

    def loop_error(self, text: str) -> bool:
        self._add(self.lines, ("error", text))
        return True


@pytest.fixture
def served(killable_franky_sim: FrankySim):
    host = RecordingHost(killable_franky_sim.host)
    arm = driven_arm(SETTINGS.arm, FrankaArm(SETTINGS), "fr3@test", ControllerNames("arm_ac", "arm_gc"))
    service = ArmService([arm], host, RATES)
    host.service = service
    service.start()
    yield service, host, killable_franky_sim
    service.close()


def test_the_arm_s_joints_and_finger_are_published_at_the_state_rate_and_its_health_is_ok(served):
    service, host, _ = served
    joints = tuple(SETTINGS.joint_names)
    host.wait(lambda: any(len(r.names) == len(joints) + 1 for r in host.rows), "joint rows with the finger joint")
    row = next(r for r in host.rows if len(r.names) == len(joints) + 1)
    assert tuple(row.names[: len(joints)]) == joints and row.names[-1] == service.arms[0].joint_names[-1]
    assert len(row.position) == len(row.velocity) == len(row.effort) == len(row.names)
    host.wait(lambda: any(level is Health.OK for level, _ in host.health), "an OK health")
    # The idle controllers report holding at the status rate (a commander confirming a stop sees it).
    host.wait(lambda: any(r.holding and r.controller == "arm_ac" for r in host.reports), "a holding report")


def test_lost_contact_takes_the_arm_out_of_the_joint_states_says_error_and_contact_comes_back(served, tmp_path):
    service, host, sim = served
    host.wait(lambda: bool(host.rows), "joint rows")
    sim.kill()
    host.wait(lambda: any(level is Health.ERROR and "lost contact" in m for level, m in host.health), "ERROR health")
    assert any(level == "error" and "reconnecting every 0.5 s" in text for level, text in host.lines)
    with host.changed:
        published = len(host.rows)
    # Contact is lost: no joint rows come while the arm's state is unknown.
    host.wait(lambda: sum(level is Health.ERROR for level, _ in host.health) >= 3, "health at the status rate")
    assert len(host.rows) == published
    back = start_franky_sim(sim.host, tmp_path)  # the control box is back
    try:
        host.wait(lambda: any("restored: serving again" in text for _, text in host.lines), "contact restored")
        host.wait(lambda: len(host.rows) > published, "joint rows again")
        assert ArmService.health(service.arms[0]).level is Health.OK
    finally:
        service.close()  # before franky-sim goes: the arm's shutdown talks to it
        back.kill()
