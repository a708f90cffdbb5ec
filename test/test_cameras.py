"""Camera calibration agrees with the rendered images and with the URDF camera frames."""

from __future__ import annotations

import numpy as np
import pytest

from robodojo.robots.urdf import load_urdf
from robodojo.sim.render import Marker

MARKER_RGBA = (1.0, 0.0, 1.0, 1.0)
# Points in each camera's optical frame (metres): spread over the image, 12 to 22 cm away (wrist cameras see the
# table about 27 cm ahead at home).
POINTS_CAM = [(0.03, -0.02, 0.20), (-0.05, 0.03, 0.15), (0.06, 0.05, 0.22), (-0.05, -0.04, 0.12)]
ARM_POSES = {  # joint offsets from home for the left/right arms, to move the wrist cameras
    "home": (0, 0, 0, 0, 0, 0),
    "turned": (0.3, -0.1, 0.05, 0.2, 0.3, -0.5),
    "reached": (-0.2, 0.2, 0.25, -0.1, -0.2, 0.8),
}


def _marker_centroid(world, camera, point):
    base = world.render(camera).rgb.astype(int)
    img = world.render(camera, markers=[Marker(tuple(point), 0.003, MARKER_RGBA)]).rgb.astype(int)
    rows, cols = np.nonzero(np.abs(img - base).sum(axis=-1) > 30)
    assert rows.size > 10, f"marker not visible in {camera}"
    return np.array([cols.mean(), rows.mean()])


def _pose_arms(world, offsets):
    """Teleport both arms to home + offsets (kinematics only; no physics step)."""
    import mujoco

    for arm in world.robot.arms:
        q = np.array(arm.home_joints_rad) + np.array(offsets)
        world.data.qpos[world.arm_qpos_adr[arm.name]] = q
    mujoco.mj_forward(world.model, world.data)


@pytest.mark.parametrize("pose", list(ARM_POSES))
@pytest.mark.parametrize("camera", ["head", "left_wrist", "right_wrist"])
def test_projection_hits_the_rendered_marker_within_one_pixel(dual_world, camera, pose):
    dual_world.reset("general_pickup", seed=0)
    _pose_arms(dual_world, ARM_POSES[pose])
    cal = dual_world.calibration(camera)
    for p_cam in POINTS_CAM:
        p_world = (cal.T_world_cam @ np.array([*p_cam, 1.0]))[:3]
        projected = cal.project(p_world)[0]
        assert 0 <= projected[0] < cal.width and 0 <= projected[1] < cal.height
        centroid = _marker_centroid(dual_world, camera, p_world)
        assert np.linalg.norm(centroid - projected) < 1.0, (camera, pose, p_cam, centroid, projected)


def test_calibration_pose_equals_the_urdf_optical_frame(dual_world):
    dual_world.reset("general_pickup", seed=0)
    _pose_arms(dual_world, ARM_POSES["turned"])
    urdf = load_urdf(dual_world.robot.scene_urdf)
    q = {}
    for arm in dual_world.robot.arms:
        q.update(zip(arm.joints, dual_world.arm_state(arm.name).joint_positions_rad, strict=True))
    poses = urdf.forward_kinematics(q)
    for cam in dual_world.robot.cameras:
        np.testing.assert_allclose(dual_world.calibration(cam.name).T_world_cam, poses[cam.frame], atol=1e-6)


def test_intrinsics_match_the_field_of_view(dual_world):
    cal = dual_world.calibration("head")
    assert (cal.width, cal.height) == (640, 480)
    fovy = np.degrees(2 * np.arctan((cal.height / 2) / cal.K[1, 1]))
    assert fovy == pytest.approx(dual_world.robot.camera("head").fovy_deg)
    assert cal.K[0, 0] == cal.K[1, 1] and cal.K[0, 2] == 319.5 and cal.K[1, 2] == 239.5


def test_depth_and_segmentation_on_request(dual_world):
    dual_world.reset("general_pickup", seed=2)
    plain = dual_world.render("head")
    assert plain.depth_m is None and plain.segmentation is None
    frame = dual_world.render("head", depth=True, segmentation=True)
    cal = frame.calibration
    truth = dual_world.privileged()
    # Depth: the pixel under the target's top-face centre lies at that point's optical-axis distance.
    top = truth.object_pos("target") + np.array([0, 0, truth.layout.object("target").height_m / 2 - 0.001])
    col, row = np.round(cal.project(top)[0]).astype(int)
    z_expected = (np.linalg.inv(cal.T_world_cam) @ np.array([*top, 1.0]))[2]
    assert frame.depth_m[row, col] == pytest.approx(z_expected, abs=0.004)
    # Segmentation: that pixel belongs to a geom of the target body.
    geom = frame.segmentation[row, col]
    assert geom >= 0
    assert dual_world.model.body(dual_world.model.geom_bodyid[geom]).name == "target"
    assert frame.rgb.shape == (480, 640, 3) and frame.depth_m.shape == (480, 640)


def test_fr3_wrist_camera_projection(fr3_world):
    fr3_world.reset("fr3_pick_cube", seed=0)
    cal = fr3_world.calibration("wrist")
    p_world = (cal.T_world_cam @ np.array([0.02, 0.04, 0.25, 1.0]))[:3]
    assert np.linalg.norm(_marker_centroid(fr3_world, "wrist", p_world) - cal.project(p_world)[0]) < 1.0
