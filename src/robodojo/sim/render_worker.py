"""Camera images rendered off a real-time loop: the loop captures scenes, a worker thread rasterises them.

The loop thread calls :meth:`RenderWorker.capture` with the world's model and data: for every camera asked for, one
``mjv_updateScene`` into a scene of the worker's (it copies the poses and materials a rasteriser draws) and the camera's
calibration at that instant; about 0.3 ms for three cameras on the README's machine. The worker thread owns its own GL
context (EGL and OSMesa contexts are bound to the thread that made them current), rasterises each captured scene and
hands every image, with the stamp and calibration of the capture it came from, to ``on_frame``.

A thread, not a process, because MuJoCo's Python bindings release the GIL inside ``mjr_render`` and
``mjr_readPixels``: a pure-Python counter thread keeps most of its speed while another thread renders in a loop (96 %
on a lightly loaded 2-core machine; beside ``sum(range(10**6))``, a C call that holds the GIL, 38 %). What it loses is
CPU shared with llvmpipe's threads; benchmarks/sim_graph_loop.py measures this and the loop.

Drop policy: two capture slots, one being rendered and one waiting. A capture while an earlier one still waits takes
its slot (that older capture is dropped and counted), so :meth:`RenderWorker.capture` never waits for the GL: when
rendering cannot keep up, the camera rate falls and the loop's rate does not; the newest capture is always rendered.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import mujoco

from robodojo.observation import CameraCalibration, CameraFrame
from robodojo.sim.render import CameraRenderer, new_scene, update_scene
from robodojo.sim.settings import RenderSettings

if TYPE_CHECKING:
    from robodojo.sim.world import EmbeddedWorld

CLOSE_TIMEOUT_S = 5.0  # how long close() waits for the frame being rendered (one frame takes tens of ms)
SLOTS = 2  # one capture being rendered, one waiting: the newest capture always waits, older ones are dropped

_OPEN_WORKERS: weakref.WeakSet[RenderWorker] = weakref.WeakSet()


# Registered after robodojo.sim.render's hook (imported above), so it runs first at exit (atexit is last in, first
# out): worker threads stop before that hook frees open renderers, never while one of them is drawing.
@atexit.register
def _close_open_workers() -> None:
    for worker in list(_OPEN_WORKERS):
        worker.close()


@dataclass(frozen=True)
class CameraShot:
    """One camera to capture: its MuJoCo id, image size and calibration at the capture."""

    name: str
    camera_id: int
    width: int
    height: int
    calibration: CameraCalibration


def camera_shots(world: EmbeddedWorld, cameras: Sequence[str]) -> list[CameraShot]:
    """The shots of ``world``'s named cameras as they are now (for :meth:`RenderWorker.capture`)."""
    shots = []
    for name in cameras:
        cam = world.robot.camera(name)
        shots.append(CameraShot(name, world.camera_ids[name], cam.width, cam.height, world.calibration(name)))
    return shots


@dataclass(frozen=True)
class RenderedFrame:
    """An image rendered by the worker: the frame (image and calibration of one instant), that instant's stamp, and
    when it was captured and rendered (``time.monotonic()`` [s]; their difference is the image's age)."""

    frame: CameraFrame
    stamp_s: float
    captured_s: float
    rendered_s: float


@dataclass(frozen=True)
class RenderStats:
    """Counts since the worker started: captures taken, captures dropped unrendered, images rendered."""

    captured: int
    dropped: int
    images: int

    def since(self, before: RenderStats) -> dict[str, int]:
        """Images rendered and captures dropped (the worker could not keep up) since ``before``, for /diagnostics."""
        return {"camera_images": self.images - before.images, "camera_captures_dropped": self.dropped - before.dropped}


@dataclass
class _Slot:
    model: mujoco.MjModel | None = None
    scenes: dict[str, mujoco.MjvScene] = field(default_factory=dict)
    shots: tuple[CameraShot, ...] = ()
    stamp_s: float = 0.0
    captured_s: float = 0.0


class RenderWorker:
    """A thread that renders captured camera scenes with a GL context of its own; see the module docstring.

    ``capture`` is called from one thread (the loop's); ``on_frame`` and ``on_error`` run in the worker thread.
    """

    def __init__(
        self,
        settings: RenderSettings,
        on_frame: Callable[[RenderedFrame], None],
        on_error: Callable[[BaseException], None],
        *,
        name: str = "render_worker",
    ) -> None:
        """``on_error`` receives what rendering or ``on_frame`` raised; the worker goes on with the next capture."""
        self.settings = settings
        self._on_frame = on_frame
        self._on_error = on_error
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._free = [_Slot() for _ in range(SLOTS)]
        self._waiting: _Slot | None = None
        self._closing = False
        self._captured = self._dropped = self._images = 0
        # capture() runs in another thread than the renderer: its own option and camera structs
        self._option = mujoco.MjvOption()
        self._camera = mujoco.MjvCamera()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        _OPEN_WORKERS.add(self)

    # -- the capturing thread -----------------------------------------------------------------------------------
    def capture(self, model: mujoco.MjModel, data: mujoco.MjData, stamp_s: float, shots: Sequence[CameraShot]) -> None:
        """Capture what ``shots`` see of ``data`` now, to be rendered and handed to ``on_frame`` with ``stamp_s``.

        Never waits for rendering: if a capture is still waiting to be rendered, it is dropped for this one.
        """
        if not shots:
            return
        with self._lock:
            if self._closing:
                return
            self._captured += 1
            if self._waiting is not None:  # not rendered yet: this capture replaces it (the worker takes the newest)
                slot, self._waiting = self._waiting, None
                self._dropped += 1
            else:  # with no capture waiting, at most one slot is being rendered: another is free
                slot = self._free.pop()
        # Filled outside the lock: the worker never touches a slot that is neither waiting nor being rendered.
        if slot.model is not model:  # a new model (a reset): new scenes
            slot.model, slot.scenes = model, {}
        for shot in shots:
            scene = slot.scenes.get(shot.name)
            if scene is None:
                scene = slot.scenes[shot.name] = new_scene(model, self.settings)
            update_scene(model, data, shot.camera_id, scene, self._option, self._camera)
        slot.shots, slot.stamp_s, slot.captured_s = tuple(shots), stamp_s, time.monotonic()
        with self._lock:
            self._waiting = slot
            self._wake.notify()

    @property
    def stats(self) -> RenderStats:
        with self._lock:
            return RenderStats(self._captured, self._dropped, self._images)

    @property
    def alive(self) -> bool:
        """Whether the worker thread runs (it ends only on :meth:`close`)."""
        return self._thread.is_alive()

    def close(self, timeout_s: float = CLOSE_TIMEOUT_S) -> bool:
        """Stop the worker after the frame it is rendering (a waiting capture is dropped) and free its GL context;
        False if the thread was still running after ``timeout_s`` (it is a daemon: it never holds up the exit)."""
        with self._lock:
            self._closing = True
            self._wake.notify()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout_s)
        ended = not self._thread.is_alive()
        if ended:  # else the exit hook tries again, before the renderers are freed
            _OPEN_WORKERS.discard(self)
        return ended

    # -- the worker thread --------------------------------------------------------------------------------------
    def _run(self) -> None:
        renderers: dict[tuple[int, int], CameraRenderer] = {}
        try:
            while True:
                with self._lock:
                    while self._waiting is None and not self._closing:
                        self._wake.wait()
                    if self._closing:
                        return
                    slot, self._waiting = self._waiting, None
                    assert slot is not None
                try:
                    self._render(slot, renderers)
                finally:
                    with self._lock:
                        self._free.append(slot)
        finally:
            for renderer in renderers.values():  # in this thread: the contexts are current here
                with contextlib.suppress(Exception):
                    renderer.close()

    def _render(self, slot: _Slot, renderers: dict[tuple[int, int], CameraRenderer]) -> None:
        for shot in slot.shots:
            try:
                key = (shot.width, shot.height)
                renderer = renderers.get(key)
                if renderer is None:
                    renderer = renderers[key] = CameraRenderer(shot.width, shot.height, self.settings)
                if renderer.model is not slot.model:
                    assert slot.model is not None
                    renderer.bind(slot.model)
                rgb = renderer.rgb_of_scene(slot.scenes[shot.name])
                with self._lock:
                    self._images += 1
                frame = CameraFrame(name=shot.name, rgb=rgb, calibration=shot.calibration)
                self._on_frame(RenderedFrame(frame, slot.stamp_s, slot.captured_s, time.monotonic()))
            except Exception as exc:  # one bad frame (or publisher) must not end the cameras
                self._on_error(exc)
