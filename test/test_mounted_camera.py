"""load_mounted_camera: each robot's cameras load their own calibration files (config/cameras/<robot>/), and a file
describing another mount is refused."""

from __future__ import annotations

import numpy as np
import pytest

from robodojo.config import CONFIG_DIR
from robodojo.errors import ConfigError, InvalidCommandError
from robodojo.perception.camera import load_camera_file
from robodojo.perception.mounted_camera import default_calibration_path, load_mounted_camera
from robodojo.robots.config import load_robot_config


@pytest.fixture(scope="module")
def fr3():
    return load_robot_config("fr3")


@pytest.fixture(scope="module")
def dual():
    return load_robot_config("dual_arx_x5")


def test_default_files_are_per_robot(fr3, dual):
    assert default_calibration_path("fr3", "head") == CONFIG_DIR / "cameras" / "fr3" / "head.yaml"
    fr3_head = load_mounted_camera(fr3, "head")
    dual_head = load_mounted_camera(dual, "head")
    assert fr3_head.path == CONFIG_DIR / "cameras" / "fr3" / "head.yaml"
    assert dual_head.path == CONFIG_DIR / "cameras" / "dual_arx_x5" / "head.yaml"
    np.testing.assert_allclose(fr3_head.T_world_cam(), load_camera_file(fr3_head.path).model.T_world_cam)
    # The two heads sit on opposite sides of the table: loading the other robot's file would be 0.8 m off.
    assert np.linalg.norm(fr3_head.T_world_cam()[:3, 3] - dual_head.T_world_cam()[:3, 3]) > 0.5
    assert fr3_head.arm is None and fr3_head.frame == "head_camera_optical_frame"


def test_fr3_wrist_camera_rides_on_its_arm(fr3):
    wrist = load_mounted_camera(fr3, "wrist")
    assert wrist.path == CONFIG_DIR / "cameras" / "fr3" / "wrist.yaml"
    assert wrist.arm == "arm" and wrist.frame == "fr3_wrist_camera_optical_frame"
    assert (wrist.width, wrist.height) == (640, 480)
    with pytest.raises(InvalidCommandError, match="needs the TCP pose"):
        wrist.T_world_cam()
    T_world_tcp = np.eye(4)
    T_world_tcp[:3, 3] = (0.1, -0.2, 1.0)
    T = wrist.T_world_cam(T_world_tcp)
    np.testing.assert_allclose(T, T_world_tcp @ wrist.file.T_tcp_cam)


def test_another_robots_file_is_refused_naming_it(fr3, dual):
    with pytest.raises(ConfigError, match=r"arm 'arm'; arms of 'dual_arx_x5': left, right"):
        load_mounted_camera(dual, "left_wrist", default_calibration_path("fr3", "wrist"))
    with pytest.raises(ConfigError, match=r"arm 'left'; arms of 'fr3': arm"):
        load_mounted_camera(fr3, "wrist", default_calibration_path("dual_arx_x5", "left_wrist"))
    with pytest.raises(ConfigError, match=r"fixed T_world_cam.*rides on arm 'arm'"):
        load_mounted_camera(fr3, "wrist", default_calibration_path("fr3", "head"))
    with pytest.raises(ConfigError, match=r"no camera 'left_wrist'; cameras: head, wrist"):
        load_mounted_camera(fr3, "left_wrist")
