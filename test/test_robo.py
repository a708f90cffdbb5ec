"""The robo API (robodojo.agents.robo.api, .reference, .flange) on a real embedded world, motion server
and episode context.

Privileged state is used only to choose test inputs and to check answers; the scripted pick at the end uses robo
calls alone.
"""

from __future__ import annotations

import math
import pickle
import subprocess
import sys
import time

import cv2
import numpy as np
import pytest

from robodojo.agents.robo import results as R
from robodojo.agents.robo.api import Robo
from robodojo.agents.robo.flange import flange_to_tcp
from robodojo.agents.robo.reference import (
    call_robo,
    check_documented,
    robo_api_methods,
    robo_api_properties,
    robo_api_reference,
)
from robodojo.episodes import episode_context
from robodojo.perception.camera import CameraModel
from robodojo.sim.world import EmbeddedWorld


def make_robo(world: EmbeddedWorld, task: str, seed: int = 0) -> Robo:
    """An episode context built as run_episode builds it."""
    world.reset(task, seed=seed)
    context = episode_context(world, llm_call_budget=10)
    return Robo(context)


@pytest.fixture
def robo(dual_world: EmbeddedWorld) -> Robo:
    return make_robo(dual_world, "general_pickup", 0)


def head_pixel(world: EmbeddedWorld, xyz) -> tuple[float, float]:
    cam = CameraModel.from_calibration("head", world.calibration("head"))
    px = cam.project(xyz)
    assert px is not None
    return px


# -- results: importable without the simulator, short reprs -------------------------------------------------------
def test_results_import_without_simulator_or_motion():
    code = (
        "import sys, pickle\n"
        "import robodojo.agents.robo.results as r\n"
        "bad = [m for m in sys.modules if m == 'mujoco' or m.startswith(('robodojo.sim', 'robodojo.motion', "
        "'robodojo.robots', 'mujoco.'))]\n"
        "assert not bad, bad\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_reprs_are_short_and_rounded():
    move = R.MoveResult(
        planned=True,
        reached=True,
        final_dist_m=0.0031234,
        final_angle_deg=0.11122,
        waypoints=25,
        steps_used=25,
        stop_reason="completed",
        terminated=False,
    )
    assert repr(move) == (
        "MoveResult(planned=True, reached=True, final_dist_m=0.0031, final_angle_deg=0.1, waypoints=25, "
        "steps_used=25, stop_reason='completed', terminated=False)"
    )
    mask = np.zeros((480, 640), bool)
    mask[10:20, 10:30] = True
    seg = R.Segment(
        found=True,
        mask=mask,
        centroid_px=(14.5, 19.5),
        area_px=200,
        world_xyz=(0.1369812, -0.17771, 0.80512),
        top_z=0.80512,
        height_m=0.04,
        footprint_xy=np.zeros((40, 2)),
    )
    text = repr(seg)
    assert "<mask 480x640, area 200 px>" in text and "<array 40x2 float64>" in text
    assert "world_xyz=(0.137, -0.1777, 0.8051)" in text and len(text) < 260
    wm = R.WorldMap(ok=True, xyz=np.zeros((480, 640, 3)))
    assert repr(wm) == "WorldMap(ok=True, xyz=<array 480x640x3 float64>)"
    assert repr(R.PlaneHit(found=False, reason="no")) == "PlaneHit(found=False, reason='no')"
    long = repr(R.TableHeight(found=False, reason="x" * 2000))
    assert "characters omitted" in long and len(long) < 500
    # Pickle round trip (the kernel unpickles them).
    assert pickle.loads(pickle.dumps(seg)).area_px == 200


def test_state_repr_and_pickle(robo: Robo):
    state = robo.state()
    text = repr(state)
    assert (
        text.startswith("State(left=ArmState(name='left', tcp_pos=(")
        and "steps_left=400, done=False, time_s=0.40)" in text
    )
    assert len(text) < 900
    again = pickle.loads(pickle.dumps(state))
    assert again.left.tcp_pos == state.left.tcp_pos


# -- state -----------------------------------------------------------------------------------------------------------
def test_state_dual_arm(robo: Robo, dual_world: EmbeddedWorld):
    state = robo.state()
    assert set(state.arms) == {"left", "right"} and state.steps_left == 400 and state.done is False
    left = state.left
    assert state.arm("left") is left
    np.testing.assert_allclose(left.tcp_pos, dual_world.arm_state("left").tcp_pos_m)
    np.testing.assert_allclose(left.approach, (0, 0, -1), atol=2e-3)  # home: fingers down
    # The flange sits 0.125 m behind the grasp point along the approach vector (ARX X5 URDF: tcp_joint).
    np.testing.assert_allclose(np.subtract(left.tcp_pos, left.eef_pos), 0.125 * np.array(left.approach), atol=1e-9)
    assert 0.95 < left.gripper <= 1.0 and len(left.joints) == 6
    with pytest.raises(AttributeError, match="'left', 'right'"):
        _ = state.middle
    with pytest.raises(ValueError, match="unknown arm 'middle'; arms: 'left', 'right'"):
        state.arm("middle")


def test_flange_frames():
    assert np.allclose(flange_to_tcp("dual_arx_x5", "left")[:3, 3], (0.125, 0, 0))
    # FR3: the flange is fr3_link8 (0.107 m beyond link7); the TCP is 0.1034 m beyond it along the hand z axis.
    assert np.allclose(flange_to_tcp("fr3", "arm")[:3, 3], (0, 0, 0.1034))


def test_task_done_and_steps_left(robo: Robo):
    assert robo.task.name == "general_pickup"
    assert robo.task.instruction == "Pick up the cyan block and lift it 10 cm above the table."
    assert "lift" in robo.task.recipe
    assert robo.done is False and robo.steps_left == 400


# -- motion ----------------------------------------------------------------------------------------------------------
def test_move_to_reaches_and_uses_steps(robo: Robo):
    start = robo.state().left
    result = robo.move_to("left", [-0.25, -0.15, 0.95], gripper=0.5)
    assert result.planned and result.reached and result.stop_reason == "completed" and not result.terminated
    assert result.final_dist_m < 0.01 and result.final_angle_deg < 1.0 and result.reason == ""
    assert result.waypoints == result.steps_used > 0
    assert robo.steps_left == 400 - result.steps_used
    after = robo.state().left
    np.testing.assert_allclose(after.tcp_pos, (-0.25, -0.15, 0.95), atol=0.01)
    np.testing.assert_allclose(after.tcp_quat, start.tcp_quat, atol=5e-3)  # orientation kept
    assert 0.4 < after.gripper < 0.6


def test_move_to_with_quat(robo: Robo):
    down = robo.state().right.tcp_quat
    yaw = math.radians(30)
    q_yaw = np.array([math.cos(yaw / 2), 0, 0, math.sin(yaw / 2)])
    w1, x1, y1, z1 = q_yaw
    w2, x2, y2, z2 = down
    quat = (
        w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
        w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
        w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
    )
    result = robo.move_to("right", (0.3, -0.2, 0.92), quat)
    assert result.reached, result
    assert abs(abs(float(np.dot(robo.state().right.tcp_quat, quat))) - 1) < 1e-3


def test_unreachable_target_moves_nothing(robo: Robo):
    before = robo.state()
    result = robo.move_to("left", (0.5, 0.35, 0.75))
    assert not result.planned and not result.reached and result.stop_reason == "plan_failed"
    assert result.steps_used == 0 and result.waypoints == 0
    assert result.reason.count("nothing moved") == 1 and "change the target" in result.reason
    assert result.reason.startswith("left target z=0.750 m is below the table surface (")  # the planner's rejection
    assert result.reason.endswith(" m); nothing moved: change the target, repeating it fails again")
    assert robo.steps_left == before.steps_left
    np.testing.assert_allclose(robo.state().left.joints, before.left.joints, atol=1e-6)


def test_grasp_on_nothing_and_release(robo: Robo):
    closed = robo.grasp("left")
    assert closed.planned and closed.holding is False and closed.gripper is not None and closed.gripper < 0.01
    assert "nothing is between them" in closed.reason
    assert closed.steps_used > closed.waypoints  # waited for the fingers
    assert "holding=False" in repr(closed)
    opened = robo.release("left")
    assert opened.planned and opened.holding is None and opened.gripper is not None and opened.gripper > 0.97
    assert "holding" not in repr(opened)
    np.testing.assert_allclose(robo.state().left.tcp_pos, closed_pos := robo.state().left.tcp_pos)  # held still
    assert closed_pos[2] > 0.85


def test_home_returns_to_the_start(robo: Robo):
    start = robo.state()
    robo.move_to("left", (-0.2, -0.1, 1.0))
    robo.move_to("right", (0.35, -0.25, 0.85))
    result = robo.home()
    assert result.planned and result.reached and result.steps_used > 0, result
    np.testing.assert_allclose(robo.state().left.joints, start.left.joints, atol=0.01)
    np.testing.assert_allclose(robo.state().right.tcp_pos, start.right.tcp_pos, atol=0.005)


def test_budget_runs_out(robo: Robo, dual_world: EmbeddedWorld):
    while dual_world.steps_left > 5:
        dual_world.step()
    result = robo.move_to("left", (-0.3, -0.1, 0.95))
    assert result.stop_reason == "budget_exhausted" and result.terminated and result.steps_used == 5
    assert "env steps ran out" in result.reason and robo.steps_left == 0


# -- argument validation ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda r: r.move_to(3, (0, 0, 1)), TypeError, "arm must be a string, one of 'left', 'right'; got 3"),
        (lambda r: r.move_to("middle", (0, 0, 1)), ValueError, "unknown arm 'middle'; arms: 'left', 'right'"),
        (lambda r: r.move_to("left", "up"), TypeError, "xyz must be 3 numbers [m], got 'up'"),
        (lambda r: r.move_to("left", (0, 1)), ValueError, "xyz must be 3 numbers [m], got 2: (0, 1)"),
        (lambda r: r.move_to("left", (0, 0, math.nan)), ValueError, "xyz must be finite"),
        (lambda r: r.move_to("left", (0.0, 0.0, 0.5)), ValueError, "xyz z=0.5 is outside the left arm's workspace"),
        (lambda r: r.move_to("left", (0, 0, 1), (1, 0, 0)), ValueError, "quat must be 4 numbers (w, x, y, z), got 3"),
        (lambda r: r.move_to("left", (0, 0, 1), (0, 0, 0, 0)), ValueError, "quat must have a non-zero norm"),
        (lambda r: r.move_to("left", (0, 0, 1), gripper=2), ValueError, "gripper must be in [0, 1] (0 closed, 1 open)"),
        (lambda r: r.move_to("left", (0, 0, 1), gripper="open"), TypeError, "gripper must be a number, got 'open'"),
        (lambda r: r.move_to("left", (0, 0, 1), gripper=True), TypeError, "gripper must be a number, got True"),
        (lambda r: r.grasp("both"), ValueError, "unknown arm 'both'"),
        (lambda r: r.release(None), TypeError, "arm must be a string"),
        (lambda r: r.image("top"), ValueError, "unknown camera 'top'; cameras: 'head', 'left_wrist', 'right_wrist'"),
        (lambda r: r.camera(0), TypeError, "camera must be a string, one of 'head', 'left_wrist', 'right_wrist'"),
        (lambda r: r.show("wrist"), ValueError, "unknown camera 'wrist'"),
        (lambda r: r.back_project(500, 10, "head"), ValueError, "pixel (row=500, col=10) is outside the 640x480"),
        (lambda r: r.back_project("a", 10, "head"), TypeError, "row must be a number, got 'a'"),
        (lambda r: r.back_project(10, 10, "head", plane_z="z"), TypeError, "plane_z must be a number, got 'z'"),
        (lambda r: r.triangulate([("head", 1, 2)]), ValueError, "needs at least two views"),
        (lambda r: r.triangulate("head"), TypeError, "observations must be a list of (camera, row, col)"),
        (lambda r: r.triangulate([("head", 1), ("left_wrist", 1, 2)]), TypeError, "must be (camera, row, col)"),
        (lambda r: r.triangulate([("head", 1, 2), ("head", 3, 4)]), ValueError, "from different cameras"),
        (lambda r: r.segment(5, "head"), TypeError, "point must be 2 numbers (row, col), got 5"),
        (lambda r: r.segment((1, 2), "head", second_view="head"), ValueError, "another camera than 'head'"),
        (lambda r: r.segment((1, 2), "head", second_view="side"), ValueError, "unknown camera 'side'"),
        (lambda r: r.world_map("depth"), ValueError, "unknown camera 'depth'"),
        (lambda r: r.wait("1"), TypeError, "seconds must be a number, got '1'"),
        (lambda r: r.wait(-1), ValueError, "seconds must be from 0 to 10"),
        (lambda r: r.wait(math.nan), ValueError, "seconds must be from 0 to 10"),
    ],
)
def test_misuse_raises_short_fixable_errors(robo: Robo, call, error, message):
    steps = robo.steps_left
    with pytest.raises(error) as info:
        call(robo)
    assert message in str(info.value)
    assert len(str(info.value)) < 160
    assert robo.steps_left == steps  # nothing moved


def test_keyword_only_options(robo: Robo):
    with pytest.raises(TypeError):
        robo.move_to("left", (-0.3, -0.2, 0.95), None, 0.5)  # type: ignore[misc]
    with pytest.raises(TypeError):
        robo.back_project(10, 10, "head", 0.8)  # type: ignore[misc]


# -- cameras ---------------------------------------------------------------------------------------------------------
def test_image_camera_and_show(robo: Robo, dual_world: EmbeddedWorld):
    image = robo.image("head")
    assert image.shape == (480, 640, 3) and image.dtype == np.uint8
    head = robo.camera("head")
    np.testing.assert_allclose(head.T_world_cam[:3, 3], (0, -0.41, 1.308), atol=1e-6)
    assert head.width == 640 and head.height == 480 and head.K.shape == (3, 3)
    assert repr(head).startswith("CameraInfo(name='head', width=640, height=480, fx=")
    before = robo.camera("left_wrist").T_world_cam
    robo.move_to("left", (-0.25, -0.15, 0.95))
    after = robo.camera("left_wrist").T_world_cam
    assert np.linalg.norm(after[:3, 3] - before[:3, 3]) > 0.03  # wrist camera pose is now
    robo.show("head")
    robo.show("left_wrist")
    shown = robo.take_shown()
    assert [name for name, _ in shown] == ["head", "left_wrist"]
    assert all(rgb.shape == (480, 640, 3) and rgb.dtype == np.uint8 for _, rgb in shown)
    assert robo.take_shown() == []


# -- perception ------------------------------------------------------------------------------------------------------
def test_table_height_is_measured_once(robo: Robo):
    t0 = time.perf_counter()
    first = robo.table_height()
    t1 = time.perf_counter()
    second = robo.table_height()
    t2 = time.perf_counter()
    assert first.found and abs(first.z - 0.765) < 0.002, first
    assert second.z == first.z and (t2 - t1) < 0.2 * (t1 - t0)


def test_back_project_round_trip(robo: Robo, dual_world: EmbeddedWorld):
    point = (0.05, -0.05, 0.765)
    row, col = head_pixel(dual_world, point)
    hit = robo.back_project(row, col, "head")  # the measured table plane
    assert hit.found and np.linalg.norm(np.subtract(hit.xyz, point)) < 0.004, hit
    exact = robo.back_project(row, col, "head", plane_z=0.765)
    np.testing.assert_allclose(exact.xyz, point, atol=1e-6)
    assert exact.distance_m > 0.5
    above = robo.back_project(row, col, "head", plane_z=2.0)
    assert not above.found and "behind" in above.reason


def test_triangulate_head_and_wrist(robo: Robo, dual_world: EmbeddedWorld):
    point = np.array([0.30, -0.26, 0.765])  # on the table below the right wrist camera (it looks back and down)
    cams = {n: CameraModel.from_calibration(n, dual_world.calibration(n)) for n in ("head", "right_wrist")}
    observations = [(n, *cams[n].project(point)) for n in cams]
    result = robo.triangulate(observations)
    assert result.found and np.linalg.norm(np.subtract(result.xyz, point)) < 1e-3, result
    assert result.reprojection_px < 0.5
    wrong = [observations[0], ("right_wrist", observations[1][1] + 60, observations[1][2] + 60)]
    bad = robo.triangulate(wrong)
    assert not bad.found and "do not show one point" in bad.reason and bad.ray_gap_mm > 5


def test_segment_target(robo: Robo, dual_world: EmbeddedWorld):
    truth = dual_world.privileged()
    centre = truth.object_pos("target")
    px = head_pixel(dual_world, centre + [0, 0, 0.02])  # the top face
    seg = robo.segment(px, "head")
    assert seg.found, seg
    assert np.linalg.norm(np.subtract(seg.world_xyz[:2], centre[:2])) < 0.01
    assert abs(seg.top_z - (centre[2] + 0.02)) < 0.01 and abs(seg.height_m - 0.04) < 0.01
    assert seg.mask.shape == (480, 640) and seg.mask[round(px[0]), round(px[1])]
    assert seg.area_px == int(seg.mask.sum()) and seg.footprint_xy.shape[1] == 2
    table = robo.segment(head_pixel(dual_world, (-0.4, 0.2, 0.765)), "head")
    assert not table.found and "table or background" in table.reason


def test_segment_with_second_view(robo: Robo, dual_world: EmbeddedWorld):
    centre = dual_world.privileged().object_pos("target")
    robo.move_to("right", (centre[0], centre[1] + 0.05, 0.95))  # the wrist camera looks back at it from above
    seg = robo.segment(head_pixel(dual_world, centre + [0, 0, 0.02]), "head", second_view="right_wrist")
    assert seg.found, seg
    assert np.linalg.norm(np.subtract(seg.world_xyz, centre + [0, 0, 0.02])) < 0.01


def test_world_map_from_depth(robo: Robo, dual_world: EmbeddedWorld):
    wm = robo.world_map("head")
    assert wm.ok and wm.xyz.shape == (480, 640, 3)
    point = (0.05, -0.05, 0.765)
    row, col = (round(v) for v in head_pixel(dual_world, point))
    np.testing.assert_allclose(wm.xyz[row, col], point, atol=0.005)


class _NoDepthBackend:
    """A backend whose observe() has no depth option (a real robot without RGB-D): asking it for depth would fail."""

    def __init__(self, world: EmbeddedWorld) -> None:
        self._world = world
        self.robot = world.robot

    def observe(self, cameras=None):
        return self._world.observe(cameras)

    @property
    def steps_left(self) -> int:
        return self._world.steps_left


def test_world_map_follows_the_declared_depth_capability(robo: Robo, dual_world: EmbeddedWorld):
    """Depth is declared by the episode context (the embedded world's has it), not probed by calling observe."""
    import dataclasses

    assert robo._ctx.has_depth
    ctx = dataclasses.replace(robo._ctx, backend=_NoDepthBackend(dual_world), has_depth=False)
    wm = Robo(ctx).world_map("head")
    assert not wm.ok and wm.xyz is None and "has no depth" in wm.reason
    undeclared = dataclasses.replace(robo._ctx, has_depth=False)  # the cameras could give depth; it is not declared
    assert not Robo(undeclared).world_map("head").ok
    misdeclared = dataclasses.replace(ctx, has_depth=True)  # a wrong declaration fails loudly, not as "no depth"
    with pytest.raises(TypeError, match="depth"):
        Robo(misdeclared).world_map("head")


# -- the API reference -----------------------------------------------------------------------------------------------
def test_reference_lists_every_method_with_documented_parameters():
    import inspect

    text = robo_api_reference()
    methods = robo_api_methods()
    assert list(methods) == [
        "state",
        "move_to",
        "grasp",
        "release",
        "wait",
        "home",
        "image",
        "camera",
        "show",
        "table_height",
        "back_project",
        "triangulate",
        "segment",
        "world_map",
    ]
    assert set(robo_api_properties()) == {"done", "steps_left", "task"}
    assert "take_shown" not in text
    for name in methods:
        assert f"robo.{name}(" in text
        params = [p for p in inspect.signature(getattr(Robo, name)).parameters if p != "self"]
        for p in params:
            assert f"\n    {p}: " in methods[name], (name, p)
    assert "robo.move_to(arm, xyz, quat=None, *, gripper=None) -> MoveResult" in text
    assert "robo.back_project(row, col, camera, *, plane_z=None) -> PlaneHit" in text
    assert "robo.segment(point, camera, *, second_view=None) -> Segment" in text
    for cls in R.RESULT_TYPES:
        assert f"{cls.__name__}(" in text
    assert "Arms: 'left', 'right'. Cameras: 'head', 'left_wrist', 'right_wrist'." in text
    fr3 = robo_api_reference("fr3")
    assert "Arms: 'arm'. Cameras: 'head', 'wrist'." in fr3 and "arm 0.1034 m" in fr3
    assert max(len(line) for line in text.splitlines()) <= 120


def test_call_robo_dispatches_methods_and_attributes(robo: Robo):
    assert call_robo(robo, "steps_left") == 400
    assert call_robo(robo, "done") is False
    assert call_robo(robo, "OPEN") == 1.0
    assert call_robo(robo, "back_project", (240, 320, "head"), {"plane_z": 0.765}).found
    with pytest.raises(TypeError, match="attribute, not a method"):
        call_robo(robo, "done", (1,))
    for hidden in ("take_shown", "_ctx", "_observe"):
        with pytest.raises(AttributeError, match=f"robo has no attribute '{hidden}'; it has: state, move_to"):
            call_robo(robo, hidden)


def test_undocumented_parameter_is_an_error():
    class Bad:
        def move(self, arm: str, speed: float) -> None:
            """Move.

            Args:
                arm: which arm.
            """

    with pytest.raises(TypeError, match=r"Bad\.move: parameter 'speed' is not documented"):
        check_documented(Bad)

    class Drifted:
        def move(self, arm: str) -> None:
            """Move.

            Args:
                arm: which arm.
                speed: gone.
            """

    with pytest.raises(TypeError, match="documents 'speed', which is not a parameter"):
        check_documented(Drifted)

    class Bare:
        def move(self) -> None:
            pass

    with pytest.raises(TypeError, match=r"Bare\.move has no docstring"):
        check_documented(Bare)


# -- single arm ------------------------------------------------------------------------------------------------------
def test_single_arm_fr3(fr3_world: EmbeddedWorld):
    robo = make_robo(fr3_world, "fr3_pick_cube", 0)
    state = robo.state()
    assert list(state.arms) == ["arm"] and state.arm() is state.arms["arm"]
    assert state.tcp_pos == state.arm().tcp_pos  # single-arm shortcut
    np.testing.assert_allclose(np.subtract(state.tcp_pos, state.eef_pos), 0.1034 * np.array(state.approach), atol=1e-9)
    assert len(state.joints) == 7
    target = np.add(state.tcp_pos, (0.05, 0.05, 0.03))
    result = robo.move_to("arm", target, gripper=robo.OPEN)
    assert result.reached, result
    assert robo.image("wrist").shape == (480, 640, 3)
    assert robo.camera("head").name == "head"
    with pytest.raises(ValueError, match="unknown arm 'left'; arms: 'arm'"):
        robo.grasp("left")
    with pytest.raises(ValueError, match="cameras: 'head', 'wrist'"):
        robo.image("left_wrist")
    assert robo.grasp("arm").holding is False
    assert robo.table_height().found


# -- a perception-only pick --------------------------------------------------------------------------------------------
COLOUR_RGB = {  # colour words of the task instructions -> nominal RGB (0..255)
    "red": (217, 31, 31),
    "green": (38, 166, 51),
    "blue": (38, 77, 217),
    "yellow": (242, 217, 26),
    "orange": (242, 128, 26),
    "purple": (128, 51, 179),
    "cyan": (26, 191, 204),
    "pink": (242, 128, 179),
}
HUE_TOLERANCE_DEG = 12.0
MIN_SATURATION = 0.35
MAX_BLOB_FRACTION = 0.03


def colour_blobs(rgb: np.ndarray, colour: str) -> list[np.ndarray]:
    """Connected regions of pixels with the colour's hue, largest first (boolean masks)."""
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV_FULL).astype(float)
    want = cv2.cvtColor(np.uint8([[COLOUR_RGB[colour]]]), cv2.COLOR_RGB2HSV_FULL)[0, 0].astype(float)
    hue_diff = np.abs((hsv[..., 0] - want[0] + 128) % 256 - 128) * 360 / 256
    match = (hue_diff < HUE_TOLERANCE_DEG) & (hsv[..., 1] > MIN_SATURATION * 255) & (hsv[..., 2] > 40)
    n, labels, stats, _ = cv2.connectedComponentsWithStats(match.astype(np.uint8))
    order = sorted(range(1, n), key=lambda i: -stats[i, cv2.CC_STAT_AREA])
    max_area = MAX_BLOB_FRACTION * rgb.shape[0] * rgb.shape[1]  # larger regions are table or background
    return [labels == i for i in order if 30 <= stats[i, cv2.CC_STAT_AREA] <= max_area]


def top_face_pixel(rgb: np.ndarray, blob: np.ndarray) -> tuple[int, int]:
    """A pixel on the blob's brightest face (the top face, lit from above), near that face's middle."""
    rows, cols = np.nonzero(blob)
    upper = rows <= np.median(rows)  # the head camera looks down from the front: tops show in the upper half
    rows, cols = rows[upper], cols[upper]
    value = rgb[rows, cols].astype(float).sum(axis=1)
    bright = value >= np.quantile(value, 0.5)
    r, c = np.median(rows[bright]), np.median(cols[bright])
    k = int(np.argmin((rows[bright] - r) ** 2 + (cols[bright] - c) ** 2))
    return int(rows[bright][k]), int(cols[bright][k])


def footprint_yaw(footprint: np.ndarray) -> float:
    """Yaw [rad] in [-pi/4, pi/4) of the footprint's longest edge (a box's faces, up to quarter turns)."""
    edges = np.roll(footprint, -1, axis=0) - footprint
    longest = edges[int(np.argmax(np.linalg.norm(edges, axis=1)))]
    angle = math.atan2(longest[1], longest[0])
    return (angle + math.pi / 4) % (math.pi / 2) - math.pi / 4


def quat_multiply(a, b) -> tuple[float, float, float, float]:
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return (
        w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
        w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
        w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
    )


def scripted_pick(robo: Robo) -> list[str]:
    """What a code cell would do, with robo calls only: find the named colour, grasp from above, lift."""
    log = []
    colour = next(w for w in robo.task.instruction.lower().replace(".", "").split() if w in COLOUR_RGB)
    rgb = robo.image("head")
    found = None
    for blob in colour_blobs(rgb, colour)[:3]:
        seg = robo.segment(top_face_pixel(rgb, blob), "head")
        log.append(f"segment {colour}: {seg}")
        if seg.found:
            found = seg
            break
    assert found is not None, log
    x, y, top_z = found.world_xyz
    grasp_z = top_z - min(found.height_m / 2, 0.02)  # pads centred on the object, 2 cm below its top at most
    state = robo.state()
    arm = min(state.arms, key=lambda a: abs(state.arm(a).tcp_pos[0] - x))  # the arm on the object's side
    yaw = footprint_yaw(found.footprint_xy)
    # Fingers open along the gripper's y axis; turn about world z so that they close across the box's faces.
    finger = np.array(state.arm(arm).tcp_quat)
    w, qx, qy, qz = finger
    R_now = np.array(
        [
            [1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - w * qz), 2 * (qx * qz + w * qy)],
            [2 * (qx * qy + w * qz), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - w * qx)],
            [2 * (qx * qz - w * qy), 2 * (qy * qz + w * qx), 1 - 2 * (qx * qx + qy * qy)],
        ]
    )
    finger_yaw = math.atan2(R_now[1, 1], R_now[0, 1])  # the TCP y axis (finger opening direction)
    turn = (yaw - finger_yaw + math.pi / 4) % (math.pi / 2) - math.pi / 4
    quat = quat_multiply((math.cos(turn / 2), 0.0, 0.0, math.sin(turn / 2)), finger)
    steps = [
        ("above", lambda: robo.move_to(arm, (x, y, top_z + 0.10), quat, gripper=robo.OPEN)),
        ("down", lambda: robo.move_to(arm, (x, y, grasp_z))),
    ]
    for name, step in steps:
        result = step()
        log.append(f"{name}: {result}")
        assert result.reached, log
    grip = robo.grasp(arm)
    log.append(f"grasp: {grip}")
    assert grip.holding, log
    lift = robo.move_to(arm, (x, y, grasp_z + 0.15))
    log.append(f"lift: {lift}")
    return log


def test_perception_only_pick_lifts_the_target(robo: Robo, dual_world: EmbeddedWorld):
    log = scripted_pick(robo)
    lifted = dual_world.privileged().object_pos("target")[2] - dual_world.privileged().initial_pos("target")[2]
    assert robo.done, "\n".join(log) + f"\nlifted {lifted:.3f} m"
    assert "stop_reason='task_success'" in log[-1] and "terminated=True" in log[-1]
