"""table_plane on a synthetic scene: a textured table plane seen by two calibrated cameras."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from robo_shell.api import ObsFolder
from robodojo.geometry import look_at
from robodojo.observation import CameraCalibration
from robodojo.perception.camera import CameraModel

TABLE_Z = 0.765
K = np.array([[400.0, 0.0, 319.5], [0.0, 400.0, 239.5], [0.0, 0.0, 1.0]])


def _tool():
    spec = importlib.util.spec_from_file_location("table_plane_tool", Path(__file__).with_name("tool.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _view(name: str, eye, target, texture: np.ndarray) -> tuple[np.ndarray, CameraModel]:
    camera = CameraModel.from_calibration(name, CameraCalibration(K, look_at(eye, target), 640, 480))
    rows, cols = np.mgrid[0:480, 0:640]
    rays = camera.pixel_rays(rows.ravel(), cols.ravel())
    t = (TABLE_Z - camera.position_m[2]) / rays[:, 2]
    xy = camera.position_m[:2] + t[:, None] * rays[:, :2]
    # the texture covers x, y in [-1, 1] m at 2 mm a texel
    u = np.clip(((xy[:, 0] + 1.0) / 0.002).astype(int), 0, texture.shape[1] - 1)
    v = np.clip(((xy[:, 1] + 1.0) / 0.002).astype(int), 0, texture.shape[0] - 1)
    image = texture[v, u].reshape(480, 640, 3)
    return image, camera


class FakeApi:
    """Observations of the synthetic scene; counts how often the tool looked."""

    def __init__(self) -> None:
        rng = np.random.default_rng(1)
        texture = (rng.random((1000, 1000, 1)) * 255).repeat(3, axis=2).astype(np.uint8)
        views = {
            "head": _view("head", (0.0, -0.41, 1.308), (0.0, 0.0, TABLE_Z), texture),
            "left_wrist": _view("left_wrist", (-0.15, -0.15, 1.05), (0.0, 0.05, TABLE_Z), texture),
        }
        self.obs = ObsFolder({n: v[0] for n, v in views.items()}, {n: v[1] for n, v in views.items()}, {}, 0, 100)
        self.looks = 0

    def observe(self) -> ObsFolder:
        self.looks += 1
        return self.obs


def test_measures_the_table_once_then_reads_it_back(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    tool, api = _tool(), FakeApi()
    first = tool.run(api, "measure", {"refresh": False})
    assert first["ok"] and first["table_z_m"] == pytest.approx(TABLE_Z, abs=0.002) and not first["cached"]
    second = tool.run(api, "measure", {"refresh": False})
    assert second["cached"] and second["table_z_m"] == first["table_z_m"] and api.looks == 1
    third = tool.run(api, "measure", {"refresh": True})
    assert not third["cached"] and api.looks == 2


def test_a_blank_view_is_reported_not_guessed(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    api = FakeApi()
    for name in api.obs.images:
        api.obs.images[name][:] = 128  # no texture: no pair can agree on a plane
    result = _tool().run(api, "measure", {"refresh": False})
    assert not result["ok"] and result["reason"]
