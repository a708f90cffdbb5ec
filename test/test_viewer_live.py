"""--view: the live view of a running episode (robodojo.episodes.viewing.live), with real Rerun sinks: a file read
back by Rerun's own reader (every control step's links and grasp points arrived), a FIFO nobody reads (a stalled
sink: the episode runs as without a view, the view drops and counts), an address where no viewer listens, and the
CLI's --view on robodojo run."""

from __future__ import annotations

import itertools
import logging
import math
import os
import socket
import threading
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pytest
import yaml
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from rerun.chunk import RrdReader

from robodojo import PACKAGE_ROOT
from robodojo.agents.llm.client import open_llm
from robodojo.agents.move_eef.agent import MoveEefAgent
from robodojo.cli import main
from robodojo.episodes import EndReason, EpisodeSpec, WorldHost, run_episode
from robodojo.episodes.mcap_record import MCAP_FILE, TF_TOPIC
from robodojo.episodes.record_settings import RecordSettings
from robodojo.episodes.viewing import VIEW_ENV
from robodojo.episodes.viewing.episode_log import TIMELINE
from robodojo.episodes.viewing.live import STATS_LOG_KEY, LiveStats
from robodojo.episodes.viewing.settings import CONFIG_ENV, CONFIG_PATH, shipped_view_settings
from robodojo.episodes.viewing.sinks import RRD_FILE
from robodojo.robots import topic_names

REPLAY = PACKAGE_ROOT / "examples" / "replay" / "general_pickup_seed0.yaml"
SPEC = EpisodeSpec("general_pickup", 0)
FRAMES_5HZ = RecordSettings(camera_rate_hz=5.0)
# nothing can be dropped, every state is shown
ROOMY = {"queue_size": 100000, "state_rate_hz": 0.0, "trail_period_s": 0.0, "close_timeout_s": 30.0}
TIGHT = {"queue_size": 8, "close_timeout_s": 0.5, "send_timeout_s": 1.0}  # config/view.yaml's, smaller and quicker


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """Rerun's analytics config in the test's folder; the view settings read afresh."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    shipped_view_settings.cache_clear()
    yield
    shipped_view_settings.cache_clear()


def _settings(monkeypatch, tmp_path: Path, changes: dict[str, float]) -> None:
    """config/view.yaml with ``changes``, for this test's process (ROBODOJO_VIEW_CONFIG)."""
    settings = yaml.safe_load(CONFIG_PATH.read_text()) | changes
    path = tmp_path / "view.yaml"
    path.write_text(yaml.safe_dump(settings))
    monkeypatch.setenv(CONFIG_ENV, str(path))


def _run(world, out: Path, record_settings: RecordSettings | None = FRAMES_5HZ):
    with open_llm(f"replay:{REPLAY}") as llm:
        return run_episode(
            WorldHost(world), MoveEefAgent(), llm, SPEC, out, model=llm.model, record_settings=record_settings
        )


def _stats(caplog) -> list[LiveStats]:
    return [getattr(r, STATS_LOG_KEY) for r in caplog.records if hasattr(r, STATS_LOG_KEY)]


def _mcap_counts(path: Path) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    with path.open("rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        for _schema, channel, _message, decoded in reader.iter_decoded_messages(log_time_order=False):
            if channel.topic == TF_TOPIC:
                counts[channel.topic] += len(decoded.transforms)
            elif channel.topic == topic_names.PLANNED_PATH:
                counts[channel.topic] += len(decoded.markers)
            else:
                counts[channel.topic] += 1
    return counts


def _rrd_rows(path: Path) -> dict[str, list[dict]]:
    rows: dict[str, list[dict]] = defaultdict(list)
    for chunk in RrdReader(path).stream():
        batch = chunk.to_record_batch()
        if "log_time" in batch.schema.names:  # the live view's wall clock (nanosecond timestamps): not checked here
            batch = batch.drop_columns(["log_time"])
        if TIMELINE in batch.schema.names:
            i = batch.schema.get_field_index(TIMELINE)
            batch = batch.set_column(i, TIMELINE, batch.column(i).cast(pa.int64()))
        rows[chunk.entity_path] += batch.to_pylist()
    return rows


def test_a_live_view_to_a_file_gets_every_step_of_the_episode(dual_world, tmp_path, monkeypatch, caplog):
    _settings(monkeypatch, tmp_path, ROOMY)  # a queue that cannot fill: every update must arrive
    monkeypatch.setenv(VIEW_ENV, "rrd")
    caplog.set_level(logging.INFO, logger="robodojo.episodes.viewing.live")
    result = _run(dual_world, tmp_path / "episodes")
    assert result.end_reason is EndReason.SUCCESS
    (stats,) = _stats(caplog)
    assert stats.dropped == 0 and stats.closed and not stats.failure and stats.logged == stats.queued > 0
    rows = _rrd_rows(result.folder / RRD_FILE)
    counts = _mcap_counts(result.folder / MCAP_FILE)
    # The record and the live view see the same states: every /tf transform of the record arrived live.
    assert len(rows["/tf"]) == counts[TF_TOPIC]
    for camera in ("head", "left_wrist", "right_wrist"):
        # the agent's frames and the record's 5 Hz frames, once per step (the same picture twice is shown once)
        assert len(rows[f"/world/cameras/{camera}/image"]) == counts[topic_names.camera_image_compressed(camera)]
    right = rows["/world/tcp/right"]
    assert len(right[-1]["LineStrips3D:strips"][0]) > 4  # a point per control step of the moves
    assert len(rows["/world/targets/right"]) == 3  # the moves that name a position (one only closes the gripper)
    # each motion's planned grasp-point paths and targets, as the record drew them
    planned = [e for e in rows if e.startswith("/world/planned/")]
    assert counts[topic_names.PLANNED_PATH] == sum(len(rows[e]) for e in planned) >= 4, planned
    assert rows["/log/outcome"][-1]["TextLog:text"][0].startswith("end_reason success")
    geometry = [e for e in rows if e.startswith("/robot/dual_arx_x5/visual_geometries/")]
    assert geometry


def test_the_state_rate_thins_states_on_the_control_thread_and_keeps_each_motion_s_end(
    dual_world, tmp_path, monkeypatch, caplog
):
    """config/view.yaml's state_rate_hz: states without frames come no closer than its period (each a control step
    of the record), never further apart than the step past it; every turn's last state is shown; what was left out is
    counted apart from drops."""
    rate_hz = 12.5
    _settings(monkeypatch, tmp_path, ROOMY | {"state_rate_hz": rate_hz})
    monkeypatch.setenv(VIEW_ENV, "rrd")
    caplog.set_level(logging.INFO, logger="robodojo.episodes.viewing.live")
    result = _run(dual_world, tmp_path / "episodes", record_settings=None)  # no frames: states alone
    assert result.end_reason is EndReason.SUCCESS
    (stats,) = _stats(caplog)
    assert stats.dropped == 0 and stats.closed and stats.thinned > 0
    live = sorted({row[TIMELINE] for row in _rrd_rows(result.folder / RRD_FILE)["/tf"]})
    recorded = _mcap_stamps(result.folder / MCAP_FILE)
    step_ns = round(dual_world.robot.control_dt_s * 1e9)
    assert set(live) <= set(recorded) and len(live) < len(recorded)
    assert recorded[0] == live[0] and recorded[-1] == live[-1]  # the first state, and where the last motion ended
    gaps = {b - a for a, b in itertools.pairwise(live)}
    assert max(gaps) <= math.ceil(1e9 / rate_hz / step_ns) * step_ns, sorted(gaps)


def _mcap_stamps(path: Path) -> list[int]:
    """The record's /tf stamps [ns], one per state."""
    with path.open("rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        return sorted({m.log_time for _s, _c, m in reader.iter_messages(topics=[TF_TOPIC])})


def test_a_stalled_sink_never_holds_up_the_episode_and_drops_are_counted(dual_world, tmp_path, monkeypatch, caplog):
    """A FIFO nobody reads: the view's thread blocks opening it, as on a viewer that stopped reading. The episode
    runs exactly as without a view (same steps, same outcome), and the view counts what it dropped."""
    baseline = _run(dual_world, tmp_path / "baseline", record_settings=None)
    _settings(monkeypatch, tmp_path, TIGHT)
    fifo = tmp_path / "stalled.rrd"
    os.mkfifo(fifo)
    monkeypatch.setenv(VIEW_ENV, str(fifo))
    caplog.set_level(logging.INFO, logger="robodojo.episodes.viewing.live")
    try:
        result = _run(dual_world, tmp_path / "episodes", record_settings=None)
        assert result.end_reason is baseline.end_reason is EndReason.SUCCESS
        assert result.steps_used == baseline.steps_used and result.llm_calls == baseline.llm_calls
        (stats,) = _stats(caplog)
        assert not stats.closed and stats.logged == 0
        assert stats.dropped == stats.queued > shipped_view_settings().queue_size  # every control step was handed on
        assert any("dropped" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    finally:
        _drain(fifo)  # let the view's thread, still blocked in open(), finish


def _drain(fifo: Path) -> None:
    def read() -> None:
        with fifo.open("rb") as f:
            while f.read(1 << 16):
                pass

    threading.Thread(target=read, daemon=True).start()


def test_an_absent_viewer_costs_the_episode_nothing(dual_world, tmp_path, monkeypatch, caplog):
    _settings(monkeypatch, tmp_path, TIGHT)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv(VIEW_ENV, f"rerun+http://127.0.0.1:{port}/proxy")
    caplog.set_level(logging.INFO, logger="robodojo.episodes.viewing.live")
    result = _run(dual_world, tmp_path / "episodes", record_settings=None)
    assert result.end_reason is EndReason.SUCCESS
    (stats,) = _stats(caplog)
    assert stats.queued > 0  # the view was there, and its sink's failure stayed the view's
    assert (tmp_path / "config" / "rerun" / "analytics.json").is_file()  # analytics off before connecting


def test_run_view_rrd_writes_the_episode_live_beside_its_record(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(VIEW_ENV, "")  # restored after the test: --view sets it for the process and its children
    code = main([
        "run", "--task", "general_pickup", "--llm", f"replay:{REPLAY}", "--out", str(tmp_path), "--view", "rrd",
    ])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    assert "live view: rrd" in err
    (folder,) = tmp_path.iterdir()
    rows = _rrd_rows(folder / RRD_FILE)
    assert rows["/tf"] and rows["/log/instruction"]


def test_a_file_target_is_refused_for_many_episodes(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(VIEW_ENV, "")
    code = main([
        "eval", "--tasks", "general_pickup", "--seeds", "0", "--llm", f"replay:{REPLAY}", "--out",
        str(tmp_path / "campaign"), "--view", "one.rrd",
    ])  # fmt: skip
    assert code == 2 and "a file takes one episode's stream" in capsys.readouterr().err
    assert not (tmp_path / "campaign").exists()  # refused before anything ran
