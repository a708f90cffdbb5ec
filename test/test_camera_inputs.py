"""robodojo.perception.camera_inputs: the shipped files load, become camera_node parameters and stand-in profiles that
agree, and every mistake a lab can make in one is refused in one line naming the key and the choices."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from robodojo.errors import ConfigError
from robodojo.perception.camera_inputs import (
    CAMERA_INPUTS_DIR,
    camera_inputs_path,
    load_camera_inputs,
    shipped_camera_inputs,
)
from robodojo.robots.config import load_robot_config

SHIPPED = {"fr3_realsense_usb_cam": "fr3", "dual_arx_x5_realsense_usb_cam": "dual_arx_x5"}


def test_the_shipped_examples_are_there():
    assert set(SHIPPED) <= set(shipped_camera_inputs())


@pytest.mark.parametrize(("name", "robot"), SHIPPED.items())
def test_a_shipped_file_gives_every_camera_its_node_parameters_and_a_matching_stand_in(name, robot):
    inputs = load_camera_inputs(name, robot)
    assert inputs.path == CAMERA_INPUTS_DIR / f"{name}.yaml" and inputs.robot == robot
    assert [e.camera for e in inputs.inputs] == list(load_robot_config(robot).camera_names)
    for entry in inputs.inputs:
        params = inputs.camera_node_parameters(entry.camera)
        assert params["robot"] == robot and params["camera"] == entry.camera
        assert set(params) == {
            "robot", "camera", "input_topic", "input_transport", "input_reliable", "intrinsics", "camera_info_topic",
            "output_width", "output_height",
        }  # fmt: skip
        profile = entry.standin_profile()
        assert profile is not None
        # the stand-in publishes the topic camera_node reads, in the transport it reads
        read = profile.compressed_topic if entry.transport == "compressed" else profile.image_topic
        assert read == entry.topic
        assert profile.calibrated or entry.intrinsics == "file"


def test_the_fr3_example_reads_the_realsense_head_raw_and_the_wrist_compressed():
    inputs = load_camera_inputs("fr3_realsense_usb_cam", "fr3")
    head, wrist = inputs.camera("head"), inputs.camera("wrist")
    assert head.camera_node_parameters() == {
        "input_topic": "/camera/camera/color/image_raw", "input_transport": "raw", "input_reliable": True,
        "intrinsics": "driver", "camera_info_topic": "", "output_width": 0, "output_height": 0,
    }  # fmt: skip
    assert head.standin_profile().size == (848, 480)
    assert (wrist.transport, wrist.output_size, wrist.standin_profile().size) == ("compressed", (640, 480), (800, 600))


def test_a_path_works_as_well_as_a_name(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text((CAMERA_INPUTS_DIR / "fr3_realsense_usb_cam.yaml").read_text())
    assert camera_inputs_path(str(path)) == path
    assert load_camera_inputs(path, "fr3").path == path


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "inputs.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _fr3(**head) -> dict:
    return {
        "robot": "fr3",
        "cameras": {"head": {"topic": "/head/image_raw", **head}, "wrist": {"topic": "/wrist/image_raw"}},
    }


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({**_fr3(), "robot": "dual_arx_x5"}, "the file is for robot 'dual_arx_x5', not 'fr3'"),
        ({"robot": "fr3", "cameras": {"head": {"topic": "/h"}}}, "no entry for camera(s) wrist"),
        ({"robot": "fr3", "cameras": {**_fr3()["cameras"], "tail": {"topic": "/t"}}}, "no camera 'tail'; cameras:"),
        ({**_fr3(), "extra": 1}, "unknown key(s) extra"),
        (_fr3(topc="/x"), "unknown key(s) topc"),
        (_fr3(transport="h264"), "'h264' is not one of: raw, compressed"),
        (_fr3(intrinsics="factory"), "'factory' is not one of: driver, file"),
        (_fr3(transport="compressed"), "compressed topics end in /compressed"),
        (_fr3(topic="/head/image_raw/compressed"), "compressed topics end in /compressed"),
        (_fr3(output=[640]), "expected [width, height]"),
        (_fr3(output=[640, 0]), "expected [width, height]"),
        (_fr3(reliable="yes"), "expected true or false"),
        (_fr3(driver={"name": "openni", "width": 1, "height": 1, "fps": 1}), "'openni' is not one of"),
        (_fr3(driver={"name": "usb_cam", "width": 800, "height": 600}), "missing key 'fps'"),
        (
            _fr3(
                topic="/camera/color/raw", driver={"name": "realsense2_camera", "width": 848, "height": 480, "fps": 30}
            ),
            "realsense2_camera publishes its colour image on",
        ),
        (
            _fr3(topic="/cam/image", driver={"name": "usb_cam", "width": 800, "height": 600, "fps": 30}),
            "usb_cam publishes <namespace>/image_raw",
        ),
        (
            _fr3(
                topic="/cam/image_raw/compressed",
                transport="compressed",
                driver={"name": "usb_cam", "width": 800, "height": 600, "fps": 30, "pixel_format": "yuyv"},
            ),
            "use transport raw or pixel_format mjpeg2rgb",
        ),
        (
            _fr3(
                topic="/cam/image_raw",
                intrinsics="driver",
                driver={"name": "usb_cam", "width": 800, "height": 600, "fps": 30, "calibrated": False},
            ),
            "publishes K = 0; use intrinsics: file",
        ),
        (
            _fr3(
                topic="/camera/camera/color/image_raw",
                output=[640, 480],
                driver={"name": "realsense2_camera", "width": 848, "height": 480, "fps": 30},
            ),
            "640x480 has another aspect ratio than the driver's 848x480 frames",
        ),
        (
            _fr3(driver={"name": "realsense2_camera", "width": 848, "height": 480, "fps": 30, "pixel_format": "yuyv"}),
            "unknown key(s) pixel_format",
        ),
    ],
)
def test_a_mistake_is_refused_in_one_line(tmp_path, data, words):
    with pytest.raises(ConfigError) as caught:
        load_camera_inputs(_write(tmp_path, data), "fr3")
    message = str(caught.value)
    assert words in message and "\n" not in message, message
    assert "inputs.yaml" in message  # names the file


def test_an_unknown_name_lists_the_shipped_files():
    with pytest.raises(ConfigError, match=r"not found in .*; shipped: .*fr3_realsense_usb_cam"):
        camera_inputs_path("fr3_kinect")
