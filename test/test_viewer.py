"""robodojo view: a replayed move_eef episode in the embedded world (with the record's 5 Hz camera frames) turned into
a .rrd, read back by Rerun's own reader (rerun.chunk.RrdReader) and checked against the episode.mcap as the mcap
package reads it (not our reader); hostile input (missing, not MCAP, cut short, links, FIFOs); Rerun's analytics
turned off by its own CLI."""

from __future__ import annotations

import json
import os
import subprocess
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from rerun.chunk import RrdReader

from robodojo import PACKAGE_ROOT
from robodojo.agents.llm.client import open_llm
from robodojo.agents.move_eef.agent import MoveEefAgent
from robodojo.cli import main
from robodojo.episodes import EndReason, EpisodeSpec, WorldHost, run_episode
from robodojo.episodes.mcap_record import (
    ACTION_TOPIC,
    MCAP_FILE,
    TF_TOPIC,
    TOOL_RESULT_TOPIC,
    McapCutShort,
    McapReadError,
    read_mcap,
)
from robodojo.episodes.record_settings import RecordSettings
from robodojo.episodes.viewing.analytics import analytics_config_path, analytics_disabled
from robodojo.episodes.viewing.episode_log import TIMELINE
from robodojo.episodes.viewing.sinks import RRD_FILE
from robodojo.robots import topic_names
from robodojo.robots.urdf import parse_urdf

REPLAY = PACKAGE_ROOT / "examples" / "replay" / "general_pickup_seed0.yaml"
SPEC = EpisodeSpec("general_pickup", 0)
FRAMES_5HZ = RecordSettings(camera_rate_hz=5.0)  # config/record.yaml's default (the suite's own turns them off)
NS_PER_S = 1_000_000_000
FIRST_TARGET = (0.137, -0.178, 0.885)  # the replay's first move_eef target (right arm), examples/replay/...
TCP_AGREEMENT_M = 0.005  # the trail's last point (URDF frames of the recorded joints) vs the world's own grasp point


def _config_folder(monkeypatch: pytest.MonkeyPatch, folder: Path) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(folder / "data"))
    return folder


@pytest.fixture(scope="module", autouse=True)
def module_rerun_config(tmp_path_factory):
    """Rerun's analytics config in a folder of the module's own: the real CLI writes it, the user's stays untouched."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield _config_folder(monkeypatch, tmp_path_factory.mktemp("xdg"))


@pytest.fixture
def rerun_config(tmp_path_factory, monkeypatch):
    """A fresh analytics config folder for one test."""
    return _config_folder(monkeypatch, tmp_path_factory.mktemp("xdg"))


@pytest.fixture(scope="module")
def episode(dual_world, tmp_path_factory) -> Path:
    """One replayed move_eef episode (4 turns, success) with camera frames at 5 Hz: its record folder."""
    with open_llm(f"replay:{REPLAY}") as llm:
        result = run_episode(
            WorldHost(dual_world), MoveEefAgent(), llm, SPEC, tmp_path_factory.mktemp("episodes"), model=llm.model,
            record_settings=FRAMES_5HZ,
        )  # fmt: skip
    assert result.end_reason is EndReason.SUCCESS and result.llm_calls == 4
    return result.folder


def _mcap_messages(path: Path) -> dict[str, list]:
    """topic -> [(log_time, decoded)] by the mcap package's own reader."""
    out: dict[str, list] = defaultdict(list)
    with path.open("rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        for _schema, channel, message, decoded in reader.iter_decoded_messages(log_time_order=False):
            out[channel.topic].append((message.log_time, decoded))
    return out


def _rrd_rows(path: Path) -> dict[str, list[dict]]:
    """entity path -> its rows (column name -> value; sim_time in ns) of the .rrd's recording, by Rerun's own
    reader."""
    rows: dict[str, list[dict]] = defaultdict(list)
    for chunk in RrdReader(path).stream():
        batch = chunk.to_record_batch()
        if "log_time" in batch.schema.names:  # the live view's wall clock (nanosecond timestamps): not checked here
            batch = batch.drop_columns(["log_time"])
        if TIMELINE in batch.schema.names:  # duration[ns]; to_pylist would give microseconds
            i = batch.schema.get_field_index(TIMELINE)
            batch = batch.set_column(i, TIMELINE, batch.column(i).cast(pa.int64()))
        rows[chunk.entity_path] += batch.to_pylist()
    return rows


def _sim_ns(row: dict) -> int:
    return int(row[TIMELINE])


def _view(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["view", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def converted(episode):
    """``robodojo view EPISODE`` (default: episode.rrd beside it), its output, and the .rrd's rows."""
    code = main(["view", str(episode)])
    assert code == 0
    rrd = episode / RRD_FILE
    return rrd, _rrd_rows(rrd), _mcap_messages(episode / MCAP_FILE)


def test_every_camera_frame_of_the_record_is_an_image_at_its_stamp(converted):
    _rrd, rows, messages = converted
    robot_cameras = ("head", "left_wrist", "right_wrist")
    for camera in robot_cameras:
        frames = messages[topic_names.camera_image_compressed(camera)]
        images = rows[f"/world/cameras/{camera}/image"]
        assert len(frames) > 4 and len(images) == len(frames), camera  # the agent's 4 observations and the 5 Hz ones
        assert [_sim_ns(r) for r in images] == [t for t, _ in frames]
        assert [bytes(r["EncodedImage:blob"][0]) for r in images] == [bytes(m.data) for _, m in frames]
        # each frame with the pose and calibration recorded with it (Rerun keeps 3x3 matrices column-major)
        poses = rows[f"/world/cameras/{camera}"]
        assert len(poses) == len(frames)
        _, info = messages[topic_names.camera_info(camera)][0]
        K = np.asarray(poses[0]["Pinhole:image_from_camera"][0], dtype=float).reshape(3, 3).T
        assert np.allclose(K, np.reshape(info.k, (3, 3)), rtol=1e-6)
        assert poses[0]["Pinhole:resolution"][0] == [info.width, info.height]
        _, pose = messages[topic_names.camera_pose(camera)][0]
        p = pose.pose.position
        assert np.allclose(poses[0]["Transform3D:translation"][0], (p.x, p.y, p.z), atol=1e-6)


def test_the_robot_is_drawn_from_its_urdf_and_every_moving_link_follows_tf(converted):
    _rrd, rows, messages = converted
    (_, description), *_ = messages["/robot_description"]
    urdf = parse_urdf(description.data)
    geometry = [entity for entity in rows if entity.startswith(f"/robot/{urdf.name}/visual_geometries/")]
    assert geometry, "the URDF loader drew nothing"
    tf_rows = rows["/tf"]
    recorded = [(t, tr.child_frame_id) for t, m in messages[TF_TOPIC] for tr in m.transforms]
    assert len(tf_rows) == len(recorded)
    assert {r["Transform3D:child_frame"][0] for r in tf_rows} == {j.child for j in urdf.movable_joints}
    assert sorted((_sim_ns(r), r["Transform3D:child_frame"][0]) for r in tf_rows) == sorted(recorded)
    # the URDF's root hangs under the world entity's frame
    (link,) = rows["/world/robot"]
    assert link["Transform3D:parent_frame"] == ["tf#/world"] and link["Transform3D:child_frame"] == [urdf.root]


def test_each_arm_leaves_a_trail_that_ends_where_its_grasp_point_ended(converted):
    _rrd, rows, messages = converted
    for arm in ("left", "right"):
        poses = messages[topic_names.tcp_pose(arm)]
        strips = rows[f"/world/tcp/{arm}"]
        assert strips, arm
        last = np.asarray(strips[-1]["LineStrips3D:strips"][0], dtype=float)
        lengths = [len(r["LineStrips3D:strips"][0]) for r in strips]
        assert lengths == sorted(lengths)  # the line grows
        p = poses[-1][1].pose.position
        assert np.linalg.norm(last[-1] - (p.x, p.y, p.z)) < TCP_AGREEMENT_M
    # the right arm moved, one point per control step of its motion at least
    right = rows["/world/tcp/right"][-1]["LineStrips3D:strips"][0]
    assert len(right) > len(messages[topic_names.tcp_pose("right")])


def test_the_agents_text_and_its_targets_are_on_the_timeline(converted):
    _rrd, rows, messages = converted
    assert [r["TextLog:text"][0] for r in rows["/log/instruction"]] == [
        m.data for _, m in messages["/episode/instruction"]
    ]
    actions = [json.loads(m.data) for _, m in messages[ACTION_TOPIC]]
    expected_agent = sum(bool(a["content"]) + len(a["tool_calls"]) for a in actions)
    assert len(rows["/log/agent"]) == expected_agent == 4 + 1  # 4 move_eef calls, the first with a text
    results = [r for _, m in messages[TOOL_RESULT_TOPIC] for r in json.loads(m.data)["tool_results"]]
    assert [r["TextLog:text"][0] for r in rows["/log/tool_result"]] == [
        f"turn {i + 1}: {t}" for i, t in enumerate(results)
    ]
    # every move_eef call that names a position (the third only closes the gripper), at its turn's start
    moves = [t for t, m in messages[ACTION_TOPIC] if any(k in m.data for k in ('"right_x', '"right_y', '"right_z'))]
    targets = rows["/world/targets/right"]
    assert len(targets) == len(moves) == 3 and not rows.get("/world/targets/left")
    assert np.allclose(targets[0]["Points3D:positions"][0], FIRST_TARGET)
    assert [_sim_ns(r) for r in targets] == moves
    assert len(rows["/world/targets/right/move"]) == 3


def test_the_file_has_a_layout_and_no_wall_clock(converted):
    rrd, rows, _ = converted
    reader = RrdReader(rrd)
    assert len(reader.recordings()) == 1 and len(reader.blueprints()) == 1
    assert not any("log_time" in r for entity in rows.values() for r in entity)


def test_the_output_says_what_was_converted_and_how_to_open_it(episode, capsys):
    code, out, _ = _view(capsys, str(episode / MCAP_FILE), "--save", str(episode / "other.rrd"))
    assert code == 0
    assert f"Open it with: rerun {episode / 'other.rrd'}" in out
    assert "camera frames (head, left_wrist, right_wrist)" in out and "robot dual_arx_x5" in out
    assert "warning" not in out
    assert (episode / "other.rrd").stat().st_size > 0


def test_rerun_analytics_are_off_in_the_users_config_after_a_view(episode, capsys, rerun_config):
    assert not analytics_disabled()  # a fresh config folder (the fixture's)
    code, out, _ = _view(capsys, str(episode), "--save", str(rerun_config / "a.rrd"))
    assert code == 0
    assert analytics_config_path().is_relative_to(rerun_config)
    config = json.loads(analytics_config_path().read_text())
    assert config["analytics_enabled"] is False  # written by Rerun's own `rerun analytics disable`
    assert "analytics are off" in out


# -- hostile input ----------------------------------------------------------------------------------------------------
def test_a_missing_folder_or_a_folder_without_a_record_is_a_clear_error(tmp_path, capsys):
    code, _, err = _view(capsys, str(tmp_path / "nowhere"))
    assert code == 2 and "no episode folder or episode.mcap at" in err and "Traceback" not in err
    code, _, err = _view(capsys, str(tmp_path))
    assert code == 2 and f"{tmp_path} has no episode.mcap" in err


def test_a_file_that_is_not_mcap_is_a_clear_error(tmp_path, capsys):
    (tmp_path / MCAP_FILE).write_bytes(b"not an mcap file at all" * 10)
    code, _, err = _view(capsys, str(tmp_path))
    assert code == 2 and "is not an MCAP file" in err and "Traceback" not in err
    assert not (tmp_path / RRD_FILE).exists() and not list(tmp_path.glob("*.part"))


def test_a_record_cut_short_shows_what_came_before_the_cut_and_says_to_repair_it(episode, converted, tmp_path, capsys):
    data = (episode / MCAP_FILE).read_bytes()
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / MCAP_FILE).write_bytes(data[: len(data) * 2 // 3])  # what a kill leaves: no footer, a partial chunk
    with pytest.raises(McapCutShort) as caught:
        for _ in read_mcap(cut / MCAP_FILE):
            pass
    assert "robodojo record repair" in str(caught.value)
    readable = caught.value.messages
    assert 0 < readable < sum(len(v) for v in _mcap_messages(episode / MCAP_FILE).values())
    code, out, err = _view(capsys, str(cut))
    assert code == 0, err
    assert "warning:" in out and "ends early" in out and "robodojo record repair" in out
    assert f"{readable} messages" in out
    rows = _rrd_rows(cut / RRD_FILE)
    _, full, _ = converted  # the whole episode's recording
    assert 0 < len(rows["/world/cameras/head/image"]) < len(full["/world/cameras/head/image"])


def test_a_symbolic_link_or_a_fifo_is_refused_and_nothing_is_followed(episode, tmp_path, capsys):
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / MCAP_FILE).symlink_to(episode / MCAP_FILE)
    code, _, err = _view(capsys, str(linked))
    assert code == 2 and "is a symbolic link" in err and "Traceback" not in err
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / MCAP_FILE)
    code, _, err = _view(capsys, str(fifo))  # a FIFO would hang a reader: refused before it is opened
    assert code == 2 and "not a regular file" in err
    # A folder named through a link of the user's own is theirs to give; a planted episode.rrd link is replaced,
    # never written through.
    folder = tmp_path / "episode"
    folder.mkdir()
    (folder / MCAP_FILE).write_bytes((episode / MCAP_FILE).read_bytes())
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (folder / RRD_FILE).symlink_to(victim)
    (tmp_path / "alias").symlink_to(folder)
    code, _, err = _view(capsys, str(tmp_path / "alias"))
    assert code == 0, err
    assert victim.read_text() == "keep me"
    assert not (folder / RRD_FILE).is_symlink() and (folder / RRD_FILE).stat().st_size > 0


def test_messages_that_do_not_fit_their_topic_are_skipped_and_named(tmp_path):
    """A file written by someone else: a /tf message of another type, an action that is not JSON."""
    from mcap_ros2.writer import Writer

    from robodojo.episodes.mcap_record import message_definition
    from robodojo.episodes.viewing.convert import log_episode_mcap
    from robodojo.episodes.viewing.episode_log import EpisodeLog
    from robodojo.episodes.viewing.sinks import file_sink, new_recording, open_recording

    path = tmp_path / MCAP_FILE
    with path.open("wb") as f:
        writer = Writer(f)
        string = writer.register_msgdef("std_msgs/msg/String", message_definition("std_msgs/msg/String"))
        writer.write_message(TF_TOPIC, string, {"data": "not a transform"}, log_time=1, publish_time=1)
        writer.write_message(ACTION_TOPIC, string, {"data": "{not json"}, log_time=2, publish_time=2)
        writer.write_message("/episode/instruction", string, {"data": "pick it"}, log_time=3, publish_time=3)
        writer.finish()
    rec = new_recording("hostile")
    open_recording(rec, [file_sink(tmp_path / RRD_FILE)])
    summary = log_episode_mcap(path, EpisodeLog(rec, trail_period_s=0.0))
    rec.flush()
    assert summary.messages == 3 and summary.counts.texts == 1 and not summary.cut_short
    assert [line.split(":")[0] for line in summary.skipped] == ["/tf at 0.000 s", "/agent/action at 0.000 s"]
    assert summary.robot is None


def test_read_mcap_refuses_a_file_that_is_not_mcap(tmp_path):
    path = tmp_path / MCAP_FILE
    path.write_bytes(b"\x89MCAP0\r\n" + b"\xff" * 64)  # the magic, then garbage
    with pytest.raises(McapReadError):
        list(read_mcap(path))


def test_the_rerun_cli_itself_reports_analytics_off_after_disable(rerun_config):
    from robodojo.episodes.viewing.analytics import disable_rerun_analytics, rerun_binary

    disable_rerun_analytics()
    shown = subprocess.run(
        [str(rerun_binary()), "analytics", "config"], capture_output=True, text=True, timeout=60,
        env={**os.environ, "CI": "1"}, check=True,
    )  # fmt: skip
    assert json.loads(shown.stdout)["analytics_enabled"] is False


def test_live_targets_read_back_as_given_and_unknown_ones_list_the_valid_ones():
    from robodojo.episodes.viewing.sinks import parse_live_target
    from robodojo.errors import ConfigError

    for text in ("rrd", "rerun+http://127.0.0.1:9876/proxy", "/tmp/live.rrd"):
        assert parse_live_target(text).text() == text
    with pytest.raises(ConfigError, match="rerun\\+http://HOST:PORT/proxy"):
        parse_live_target("campaign.yaml")


@pytest.mark.parametrize("robot", ["dual_arx_x5", "fr3"])
def test_the_live_views_link_frames_equal_the_records_joint_transforms(robot):
    """LinkFrames (all joints at once, quaternion products) against joint_transforms (4x4 matrices per joint, as
    episode.mcap's /tf is written), at random joint positions."""
    from robodojo.episodes.viewing.episode_log import LinkFrames, joint_transforms
    from robodojo.robots.config import load_robot_config

    urdf = parse_urdf(load_robot_config(robot).scene_urdf.read_text())
    frames = LinkFrames(urdf)
    rng = np.random.default_rng(7)
    for _ in range(20):
        q = {j.name: float(rng.uniform(j.lower if np.isfinite(j.lower) else -3, j.upper if np.isfinite(j.upper) else 3))
             for j in urdf.movable_joints}  # fmt: skip
        expected = joint_transforms(urdf, urdf.movable_joints, q)
        translations, quats = frames.at(q)
        assert [child for _, child, _, _ in expected] == frames.children
        assert np.allclose(translations, [t for _, _, t, _ in expected], atol=1e-12)
        reference = np.array([r for _, _, _, r in expected])
        signs = np.sign(np.sum(reference * quats, axis=1))[:, None]  # q and -q are one rotation
        assert np.allclose(quats * signs, reference, atol=1e-12)


def test_the_view_settings_load_and_bad_values_name_the_file(tmp_path):
    from robodojo.episodes.viewing.settings import CONFIG_PATH, load_view_settings
    from robodojo.errors import ConfigError

    shipped = load_view_settings(CONFIG_PATH)
    assert shipped.queue_size > 0 and shipped.camera_rate_hz == 5.0 and shipped.port == 9876
    bad = tmp_path / "view.yaml"
    bad.write_text(CONFIG_PATH.read_text().replace("camera_rate_hz: 5.0", "camera_rate_hz: -1"))
    with pytest.raises(ConfigError, match=f"{bad}: camera_rate_hz must be >= 0"):
        load_view_settings(bad)
    bad.write_text(CONFIG_PATH.read_text() + "\nqueue: 3\n")
    with pytest.raises(ConfigError, match="queue"):
        load_view_settings(bad)


def test_an_absent_viewer_is_a_clear_error_after_send_timeout(episode, tmp_path, capsys, monkeypatch):
    import socket

    from robodojo.episodes.viewing.settings import CONFIG_ENV, CONFIG_PATH, shipped_view_settings

    config = tmp_path / "view.yaml"
    config.write_text(CONFIG_PATH.read_text().replace("send_timeout_s: 30.0", "send_timeout_s: 1.0"))
    monkeypatch.setenv(CONFIG_ENV, str(config))
    shipped_view_settings.cache_clear()
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        url = f"rerun+http://127.0.0.1:{s.getsockname()[1]}/proxy"
    try:
        code, _, err = _view(capsys, str(episode), "--connect", url)
    finally:
        shipped_view_settings.cache_clear()
    assert code == 2 and f"no Rerun viewer took the recording at {url} within send_timeout_s (1 s" in err
