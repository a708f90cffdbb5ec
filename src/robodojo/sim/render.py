"""Headless offscreen rendering of MuJoCo cameras: RGB, metric depth, and segmentation.

The OpenGL platform is chosen once per process: MUJOCO_GL if the user set it, else EGL when a probe in a child
process can create an EGL context (GPU or Mesa's llvmpipe), else OSMesa. The probe runs in a child because PyOpenGL
binds its platform at first import and cannot switch afterwards.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import sys
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import mujoco
import numpy as np
from numpy.typing import NDArray

from robodojo.errors import RobodojoError
from robodojo.sim.settings import RenderSettings

GL_BACKENDS = ("egl", "osmesa")
_PROBE_TIMEOUT_S = 30.0
_PROBE = "from mujoco.{0} import GLContext; c = GLContext(8, 8); c.make_current(); c.free()"


# Renderers still open at exit are closed by atexit, while the GL libraries are still loaded: freeing an OSMesa
# context during interpreter teardown prints ctypes errors.
_OPEN_RENDERERS: weakref.WeakSet[CameraRenderer] = weakref.WeakSet()


@atexit.register
def _close_open_renderers() -> None:
    for renderer in list(_OPEN_RENDERERS):
        renderer.close()


class RenderError(RobodojoError):
    """No headless OpenGL platform could be set up."""


def _probe(backend: str) -> bool:
    env = dict(os.environ, MUJOCO_GL=backend, PYOPENGL_PLATFORM=backend)
    try:
        result = subprocess.run(
            [sys.executable, "-c", _PROBE.format(backend)], env=env, capture_output=True, timeout=_PROBE_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return False
    return result.returncode == 0


@cache
def select_gl_backend() -> str:
    """The headless GL platform for this process ('egl' or 'osmesa'); sets MUJOCO_GL and PYOPENGL_PLATFORM."""
    requested = os.environ.get("MUJOCO_GL", "").strip().lower()
    if requested:
        if requested not in GL_BACKENDS:
            raise RenderError(
                f"MUJOCO_GL={requested!r} is not a headless platform; use one of {', '.join(GL_BACKENDS)}"
            )
        chosen = requested
    else:
        chosen = next((b for b in GL_BACKENDS if _probe(b)), "")
        if not chosen:
            raise RenderError(
                "neither EGL nor OSMesa can create an OpenGL context; install Mesa's libegl1 and libgl1-mesa-dri "
                "(EGL) or libosmesa6 (OSMesa), as `make setup` does"
            )
    os.environ["MUJOCO_GL"] = chosen
    os.environ.setdefault("PYOPENGL_PLATFORM", chosen)
    return chosen


def _gl_context_class():
    backend = select_gl_backend()
    if backend == "egl":
        from mujoco.egl import GLContext
    else:
        from mujoco.osmesa import GLContext
    return GLContext


@dataclass(frozen=True)
class Marker:
    """A sphere drawn into rendered images only (no physics): targets, planned waypoints, calibration checks."""

    pos_m: tuple[float, float, float]
    radius_m: float = 0.005
    rgba: tuple[float, float, float, float] = (1.0, 0.0, 1.0, 1.0)


def new_scene(model: mujoco.MjModel, settings: RenderSettings) -> mujoco.MjvScene:
    """An abstract scene for ``model`` with the render flags of ``settings`` (no shadows etc. on software GL)."""
    scene = mujoco.MjvScene(model, maxgeom=settings.max_geoms)
    flags = scene.flags
    flags[mujoco.mjtRndFlag.mjRND_SHADOW] = settings.shadows
    flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = settings.reflections
    flags[mujoco.mjtRndFlag.mjRND_SKYBOX] = settings.skybox
    return scene


def update_scene(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    camera_id: int,
    scene: mujoco.MjvScene,
    option: mujoco.MjvOption,
    camera: mujoco.MjvCamera,
) -> None:
    """Fill ``scene`` with what fixed camera ``camera_id`` sees of ``data`` (geoms, lights, the camera): everything
    a rasteriser needs, so the scene can be drawn later, in another thread, while ``data`` moves on."""
    camera.type = mujoco.mjtCamera.mjCAMERA_FIXED
    camera.fixedcamid = camera_id
    mujoco.mjv_updateScene(model, data, option, None, camera, mujoco.mjtCatBit.mjCAT_ALL, scene)


class CameraRenderer:
    """Renders the model's cameras offscreen at one image size. One GL context, reused across models and cameras.

    Call :meth:`bind` after a model is (re)compiled; rendering methods then take the MjData and a camera id.
    """

    def __init__(self, width: int, height: int, settings: RenderSettings | None = None) -> None:
        self.width = width
        self.height = height
        self.settings = settings or RenderSettings()
        self.backend = select_gl_backend()
        self._gl = _gl_context_class()(width, height)
        self._gl.make_current()
        _OPEN_RENDERERS.add(self)
        self._model: mujoco.MjModel | None = None
        self._context: mujoco.MjrContext | None = None
        self._scene: mujoco.MjvScene | None = None
        self._option = mujoco.MjvOption()
        self._camera = mujoco.MjvCamera()
        self._camera.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self._rect = mujoco.MjrRect(0, 0, width, height)
        self._rgb = np.empty((height, width, 3), dtype=np.uint8)
        self._depth = np.empty((height, width), dtype=np.float32)

    def bind(self, model: mujoco.MjModel) -> None:
        """Upload a (new) model to the GL context."""
        self._gl.make_current()
        if self._context is not None:
            self._context.free()
        self._model = model
        self._context = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_100)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._context)
        self._context.readDepthMap = mujoco.mjtDepthMap.mjDEPTH_ZEROFAR
        self._scene = new_scene(model, self.settings)

    @property
    def model(self) -> mujoco.MjModel | None:
        """The model last bound (None before :meth:`bind`)."""
        return self._model

    def _draw(
        self, data: mujoco.MjData, camera_id: int, segmentation: bool = False, markers: Sequence[Marker] = ()
    ) -> None:
        if self._model is None or self._scene is None:
            raise RenderError("CameraRenderer.bind(model) must be called before rendering")
        update_scene(self._model, data, camera_id, self._scene, self._option, self._camera)
        for marker in markers:
            if self._scene.ngeom >= self._scene.maxgeom:
                raise RenderError(f"too many markers: the scene holds at most {self._scene.maxgeom} geoms")
            mujoco.mjv_initGeom(
                self._scene.geoms[self._scene.ngeom],
                mujoco.mjtGeom.mjGEOM_SPHERE,
                np.full(3, marker.radius_m),
                np.asarray(marker.pos_m, dtype=float),
                np.eye(3).ravel(),
                np.asarray(marker.rgba, dtype=np.float32),
            )
            self._scene.ngeom += 1
        self._rasterise(self._scene, segmentation)

    def _rasterise(self, scene: mujoco.MjvScene, segmentation: bool = False) -> None:
        self._gl.make_current()
        scene.flags[mujoco.mjtRndFlag.mjRND_SEGMENT] = segmentation
        scene.flags[mujoco.mjtRndFlag.mjRND_IDCOLOR] = segmentation
        mujoco.mjr_render(self._rect, scene, self._context)

    def rgb_of_scene(self, scene: mujoco.MjvScene) -> NDArray[np.uint8]:
        """HxWx3 uint8 image of a scene filled by :func:`update_scene` (with this renderer's bound model), row 0 at
        the top: the same pixels as :meth:`rgb` of the data the scene was filled from."""
        if self._model is None:
            raise RenderError("CameraRenderer.bind(model) must be called before rendering")
        self._rasterise(scene)
        mujoco.mjr_readPixels(self._rgb, None, self._rect, self._context)
        return np.flipud(self._rgb).copy()

    def rgb(self, data: mujoco.MjData, camera_id: int, markers: Sequence[Marker] = ()) -> NDArray[np.uint8]:
        """HxWx3 uint8 image, row 0 at the top."""
        self._draw(data, camera_id, markers=markers)
        mujoco.mjr_readPixels(self._rgb, None, self._rect, self._context)
        return np.flipud(self._rgb).copy()

    def rgb_depth(
        self, data: mujoco.MjData, camera_id: int, markers: Sequence[Marker] = ()
    ) -> tuple[NDArray[np.uint8], NDArray[np.float32]]:
        """RGB and depth from one draw (half the cost of two calls)."""
        self._draw(data, camera_id, markers=markers)
        mujoco.mjr_readPixels(self._rgb, self._depth, self._rect, self._context)
        return np.flipud(self._rgb).copy(), self._metric_depth()

    def depth(self, data: mujoco.MjData, camera_id: int) -> NDArray[np.float32]:
        """HxW float32 distance along the optical axis [m] (z in the optical frame)."""
        self._draw(data, camera_id)
        mujoco.mjr_readPixels(None, self._depth, self._rect, self._context)
        return self._metric_depth()

    def _metric_depth(self) -> NDArray[np.float32]:
        assert self._model is not None
        extent = self._model.stat.extent
        near = np.float64(self._model.vis.map.znear * extent)
        far = np.float64(self._model.vis.map.zfar * extent)
        # Reversed-Z perspective depth buffer (mjDEPTH_ZEROFAR) to metric depth, as mujoco.Renderer does.
        c = -0.5 * (-(far + near) / (far - near)) - 0.5
        d = -0.5 * (-(2.0 * far * near) / (far - near))
        return np.flipud(d / (self._depth.astype(np.float64) + c)).astype(np.float32)

    def segmentation(self, data: mujoco.MjData, camera_id: int) -> NDArray[np.int32]:
        """HxW int32 geom ids, -1 where no geom is seen."""
        self._draw(data, camera_id, segmentation=True)
        mujoco.mjr_readPixels(self._rgb, None, self._rect, self._context)
        assert self._scene is not None
        rgb = self._rgb.astype(np.int32)
        segid = rgb[..., 0] + (rgb[..., 1] << 8) + (rgb[..., 2] << 16)
        lookup = np.full(self._scene.ngeom + 1, -1, dtype=np.int32)
        for i in range(self._scene.ngeom):
            geom = self._scene.geoms[i]
            if geom.segid >= 0 and geom.objtype == mujoco.mjtObj.mjOBJ_GEOM:
                lookup[geom.segid + 1] = geom.objid
        return np.flipud(lookup[np.clip(segid, 0, self._scene.ngeom)])

    def close(self) -> None:
        if self._context is not None:
            self._context.free()
            self._context = None
        if self._gl is not None:
            self._gl.free()
            self._gl = None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter shutdown the GL libraries may already be gone
            self.close()
