"""The render worker: images of captured states, stamps and calibrations kept together, the drop policy, shutdown."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from robodojo.sim.render_worker import RenderedFrame, RenderWorker, camera_shots
from robodojo.sim.world import EmbeddedWorld

WAIT_S = 60.0  # generous: the machine is shared, and a 640x480 image takes ~10 ms alone


class Sink:
    """Collects the worker's frames and errors; ``block`` holds the worker inside on_frame until released."""

    def __init__(self, *, block: bool = False) -> None:
        self.frames: list[RenderedFrame] = []
        self.errors: list[BaseException] = []
        self.changed = threading.Condition()
        self.release = threading.Event()
        self.inside = threading.Event()
        if not block:
            self.release.set()

    def on_frame(self, frame: RenderedFrame) -> None:
        self.inside.set()
        assert self.release.wait(WAIT_S)
        with self.changed:
            self.frames.append(frame)
            self.changed.notify_all()

    def on_error(self, exc: BaseException) -> None:
        with self.changed:
            self.errors.append(exc)
            self.changed.notify_all()

    def wait_for(self, n: int) -> list[RenderedFrame]:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.frames) + len(self.errors) >= n, WAIT_S), (
                f"{len(self.frames)} frames and {len(self.errors)} errors of {n} after {WAIT_S} s"
            )
            return list(self.frames)


@pytest.fixture
def world(dual_world: EmbeddedWorld) -> EmbeddedWorld:
    dual_world.reset("general_pickup", seed=0)
    return dual_world


def _move(world: EmbeddedWorld, steps: int, sign: float = 1.0) -> None:
    """Swing the left arm's first joint so that images differ from step to step."""
    arm = world.robot.arms[0]
    for _ in range(steps):
        q = world.data.ctrl[world.arm_ctrl_ids[arm.name]].copy()
        q[0] += sign * 0.05
        world.step({arm.name: q})


def _worker(world: EmbeddedWorld, sink: Sink) -> RenderWorker:
    return RenderWorker(world.settings.render, sink.on_frame, sink.on_error, name="test_render")


def test_each_image_equals_a_direct_render_of_the_state_it_was_captured_from(world):
    sink = Sink()
    worker = _worker(world, sink)
    names = world.robot.camera_names
    expected = {}
    try:
        for stamp in (1.0, 2.0):
            expected[stamp] = {n: world.render(n) for n in names}
            worker.capture(world.model, world.data, stamp, camera_shots(world, names))
            # The state moves on at once, while the worker renders the captured one.
            _move(world, 6)
            sink.wait_for(len(names) * int(stamp))
    finally:
        assert worker.close()
    assert not sink.errors
    assert [(f.stamp_s, f.frame.name) for f in sink.frames] == [(s, n) for s in (1.0, 2.0) for n in names]
    for f in sink.frames:
        direct = expected[f.stamp_s][f.frame.name]
        assert np.array_equal(f.frame.rgb, direct.rgb), f"{f.frame.name} at {f.stamp_s}"
        # The calibration is the one of the captured instant (a wrist camera moves with its arm).
        np.testing.assert_array_equal(f.frame.calibration.T_world_cam, direct.calibration.T_world_cam)
        np.testing.assert_array_equal(f.frame.calibration.K, direct.calibration.K)
        assert f.captured_s <= f.rendered_s
    left = world.robot.arms[0].name
    wrist = next(n for n in names if left in n)
    first, second = (next(f for f in sink.frames if f.stamp_s == s and f.frame.name == wrist) for s in (1.0, 2.0))
    assert not np.array_equal(first.frame.rgb, second.frame.rgb)  # the arm moved: the check above could fail
    assert not np.allclose(first.frame.calibration.T_world_cam, second.frame.calibration.T_world_cam)


def test_a_new_model_after_a_reset_is_rendered(world):
    sink = Sink()
    worker = _worker(world, sink)
    try:
        worker.capture(world.model, world.data, 1.0, camera_shots(world, ["head"]))
        sink.wait_for(1)
        world.reset("stack_blocks", seed=3)
        direct = world.render("head").rgb
        worker.capture(world.model, world.data, 2.0, camera_shots(world, ["head"]))
        frames = sink.wait_for(2)
    finally:
        assert worker.close()
    assert not sink.errors
    assert np.array_equal(frames[1].frame.rgb, direct)
    assert not np.array_equal(frames[0].frame.rgb, frames[1].frame.rgb)


def test_captures_the_worker_cannot_keep_up_with_are_dropped_and_the_newest_is_rendered(world):
    sink = Sink(block=True)
    worker = _worker(world, sink)
    shots = camera_shots(world, ["head"])
    try:
        worker.capture(world.model, world.data, 1.0, shots)
        assert sink.inside.wait(WAIT_S)  # the worker is now held inside on_frame with stamp 1
        started = time.monotonic()
        for stamp in (2.0, 3.0, 4.0):
            worker.capture(world.model, world.data, stamp, shots)
        capture_s = time.monotonic() - started
        assert not sink.release.is_set() and not sink.frames  # all three returned while the worker was busy
        stats = worker.stats
        assert (stats.captured, stats.dropped) == (4, 2)
        sink.release.set()
        frames = sink.wait_for(2)
    finally:
        assert worker.close()
    assert [f.stamp_s for f in frames] == [1.0, 4.0]  # 2 and 3 were replaced by newer captures
    assert worker.stats.images == 2
    assert capture_s < 1.0  # captures copy scenes; they never wait for the GL


def test_many_quick_captures_lose_none_unaccounted_and_the_last_is_always_rendered(world):
    """Captures racing the worker at every point of its cycle: each is either rendered or counted as dropped."""
    sink = Sink()
    worker = _worker(world, sink)
    shots = camera_shots(world, ["head"])
    n = 300
    try:
        for i in range(n):
            worker.capture(world.model, world.data, float(i), shots)
            if i % 7 == 0:
                time.sleep(0.002)  # now and then let the worker finish one, so captures land at every stage
        with sink.changed:
            assert sink.changed.wait_for(lambda: sink.frames and sink.frames[-1].stamp_s == n - 1, WAIT_S)
    finally:
        assert worker.close()
    stamps = [f.stamp_s for f in sink.frames]
    assert stamps == sorted(set(stamps))  # in capture order, none twice
    stats = worker.stats
    assert stats.captured == n and len(stamps) + stats.dropped == n and stats.images == len(stamps)


def test_an_error_in_on_frame_is_reported_and_the_next_capture_still_renders(world):
    sink = Sink()
    calls = []

    def on_frame(frame: RenderedFrame) -> None:
        calls.append(frame.stamp_s)
        if len(calls) == 1:
            raise RuntimeError("publisher gone")
        sink.on_frame(frame)

    worker = RenderWorker(world.settings.render, on_frame, sink.on_error)
    try:
        worker.capture(world.model, world.data, 1.0, camera_shots(world, ["head"]))
        sink.wait_for(1)
        worker.capture(world.model, world.data, 2.0, camera_shots(world, ["head"]))
        frames = sink.wait_for(2)
    finally:
        assert worker.close()
    assert [str(e) for e in sink.errors] == ["publisher gone"]
    assert [f.stamp_s for f in frames] == [2.0]


def test_close_ends_the_thread_even_mid_frame_and_later_captures_are_ignored(world):
    sink = Sink(block=True)
    worker = _worker(world, sink)
    worker.capture(world.model, world.data, 1.0, camera_shots(world, ["head"]))
    assert sink.inside.wait(WAIT_S)
    assert not worker.close(timeout_s=0.2)  # held inside on_frame: close says so instead of hanging
    sink.release.set()
    assert worker.close()
    assert not worker.alive
    worker.capture(world.model, world.data, 2.0, camera_shots(world, ["head"]))
    assert worker.stats.captured == 1


EXIT_SCRIPT = """
import sys, threading
from robodojo.sim.render_worker import RenderWorker, camera_shots
from robodojo.sim.world import EmbeddedWorld
w = EmbeddedWorld()
w.reset("general_pickup", seed=0)
rendered = threading.Event()
worker = RenderWorker(w.settings.render, lambda f: rendered.set(), print)
for i in range(20):  # still rendering when the interpreter exits
    worker.capture(w.model, w.data, float(i), camera_shots(w, w.robot.camera_names))
assert rendered.wait(60)
print("ready", flush=True)
if sys.argv[1] == "crash":
    raise RuntimeError("the node crashed")
"""


@pytest.mark.parametrize(("how", "code"), [("exit", 0), ("crash", 1)])
def test_a_process_ending_without_close_exits_promptly_and_cleanly(how, code):
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(EXIT_SCRIPT), how], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == code, result.stderr
    assert "ready" in result.stdout
    # Only the script's own exception may be reported, once. A traceback's frames and (since Python 3.13) its source
    # lines with markers are indented; what a thread dying at exit reports ("Exception ignored in", "Exception in
    # thread", "Fatal Python error", another "...Error: ...") starts a line.
    top_level = [line for line in result.stderr.splitlines() if line and not line[0].isspace()]
    reported = [line for line in top_level if "Error" in line or "Exception" in line or line.startswith("Traceback")]
    expected = ["Traceback (most recent call last):", "RuntimeError: the node crashed"] if how == "crash" else []
    assert reported == expected, result.stderr
