"""episode.mcap, read back by mcap-ros2-support and by rosbags (not by our own code): a replayed move_eef episode in
the embedded world, a crash mid-episode, a file read while the episode still runs, and the message definitions."""

from __future__ import annotations

import io
import json
from collections import defaultdict
from pathlib import Path

import cv2
import numpy as np
import pytest
from mcap.exceptions import EndOfFile
from mcap.reader import NonSeekingReader, make_reader
from mcap_ros2.decoder import DecoderFactory
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from robodojo import PACKAGE_ROOT
from robodojo.agents.code_cell.agent import CodeCellAgent
from robodojo.agents.llm.client import open_llm
from robodojo.agents.move_eef.agent import MoveEefAgent
from robodojo.cli import main
from robodojo.episodes import EndReason, EpisodeSpec, WorldHost, run_episode
from robodojo.episodes.mcap_record import (
    ACTION_TOPIC,
    ERROR_TOPIC,
    INSTRUCTION_TOPIC,
    MCAP_FILE,
    OBSERVED_TOPIC,
    ROBOT_DESCRIPTION_TOPIC,
    TF_STATIC_TOPIC,
    TF_TOPIC,
    TOOL_RESULT_TOPIC,
    message_definition,
)
from robodojo.episodes.record import RecordMeta
from robodojo.episodes.record_settings import RecordSettings
from robodojo.episodes.recorder import EpisodeRecorder
from robodojo.geometry import matrix_from_quat
from robodojo.nodes import topics
from robodojo.robots.urdf import parse_urdf

REPLAY = PACKAGE_ROOT / "examples" / "replay" / "general_pickup_seed0.yaml"
SPEC = EpisodeSpec("general_pickup", 0)
NS_PER_S = 1e9
AGENT_ONLY = RecordSettings(camera_rate_hz=0.0)  # the frames the agent took, nothing rendered for the record
FRAMES_5HZ = RecordSettings(camera_rate_hz=5.0)  # config/record.yaml's default (the suite's own turns them off)


def _expected_types(robot) -> dict[str, str]:
    """Topic -> message type of a record with every camera seen; graph names from robodojo.nodes.topics."""
    types = {
        INSTRUCTION_TOPIC: "std_msgs/msg/String",
        topics.JOINT_STATES: "sensor_msgs/msg/JointState",
        ACTION_TOPIC: "std_msgs/msg/String",
        TOOL_RESULT_TOPIC: "std_msgs/msg/String",
        OBSERVED_TOPIC: "std_msgs/msg/String",
        ROBOT_DESCRIPTION_TOPIC: "std_msgs/msg/String",
        TF_TOPIC: "tf2_msgs/msg/TFMessage",
        TF_STATIC_TOPIC: "tf2_msgs/msg/TFMessage",
        topics.PLANNED_PATH: "visualization_msgs/msg/MarkerArray",
    }
    for arm in robot.arm_names:
        types[topics.tcp_pose(arm)] = "geometry_msgs/msg/PoseStamped"
    for cam in robot.camera_names:
        types[topics.camera_image(cam) + "/compressed"] = "sensor_msgs/msg/CompressedImage"
        types[topics.camera_info(cam)] = "sensor_msgs/msg/CameraInfo"
        types[topics.camera_pose(cam)] = "geometry_msgs/msg/PoseStamped"
    return types


def _stamp_ns(msg) -> int:
    return int(msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec)


def _read_mcap_ros2(path: Path) -> dict[str, list]:
    """topic -> [(log_time, publish_time, schema name, message)] in file order, by mcap-ros2-support's decoder.

    (Through mcap's reader, which mcap_ros2.reader.read_ros2_messages wraps: that module is deprecated.)"""
    out: dict[str, list] = defaultdict(list)
    with path.open("rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        for schema, channel, message, decoded in reader.iter_decoded_messages(log_time_order=False):
            out[channel.topic].append((message.log_time, message.publish_time, schema.name, decoded))
    return out


def _read_rosbags(path: Path) -> dict[str, list]:
    """topic -> [(timestamp, msgtype, message)] in file order, by rosbags (a bare .mcap: no metadata.yaml needed)."""
    out: dict[str, list] = defaultdict(list)
    with AnyReader([path]) as reader:
        for connection, timestamp, raw in reader.messages():
            out[connection.topic].append((timestamp, connection.msgtype, reader.deserialize(raw, connection.msgtype)))
    return out


def _jsonl(folder: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (folder / name).read_text().splitlines()]


def _run(world, out: Path, agent=None, record_settings: RecordSettings | None = None):
    with open_llm(f"replay:{REPLAY}") as llm:
        host, agent = WorldHost(world), agent or MoveEefAgent()
        return run_episode(host, agent, llm, SPEC, out, model=llm.model, record_settings=record_settings)


def _frame_steps(world, agent_steps: list[int], steps_used: int) -> list[int]:
    """The steps of a camera's frames: those the agent took, and those of the 5 Hz record frames in between."""
    every = FRAMES_5HZ.camera_every_steps(world.robot.control_dt_s)
    return sorted({*agent_steps, *range(every, steps_used + 1, every)})


@pytest.fixture(scope="module")
def replayed(dual_world, tmp_path_factory):
    """One replayed move_eef episode (4 turns, success): its result, and the world's state at its end."""
    result = _run(dual_world, tmp_path_factory.mktemp("episodes"), record_settings=FRAMES_5HZ)
    assert result.end_reason is EndReason.SUCCESS and result.llm_calls == 4
    return result, dual_world.observe(cameras=())


def test_both_readers_see_the_expected_topics_and_counts(replayed, dual_world):
    replayed, _ = replayed
    robot = dual_world.robot
    path = replayed.folder / MCAP_FILE
    turns = replayed.llm_calls
    by_mcap, by_rosbags = _read_mcap_ros2(path), _read_rosbags(path)
    expected = _expected_types(robot)
    assert set(by_mcap) == set(by_rosbags) == set(expected)
    for topic, datatype in expected.items():
        assert {schema for _, _, schema, _ in by_mcap[topic]} == {datatype}, topic
        assert {msgtype for _, msgtype, _ in by_rosbags[topic]} == {datatype}, topic
        assert len(by_mcap[topic]) == len(by_rosbags[topic]), topic
    # joints and moving frames: the first state, then one after every control step; grasp points after each turn
    assert len(by_mcap[topics.JOINT_STATES]) == len(by_mcap[TF_TOPIC]) == replayed.steps_used + 1
    assert all(len(by_mcap[topics.tcp_pose(arm)]) == turns + 1 for arm in robot.arm_names)
    assert len(by_mcap[TF_STATIC_TOPIC]) == len(by_mcap[ROBOT_DESCRIPTION_TOPIC]) == 1
    # the move_eef agent observes every camera at the start of each turn, the first of them the initial state; the
    # record renders every camera at the shipped rate besides, and lists the agent's observations on their own
    agent_steps = [json.loads(m.data)["step"] for *_, m in by_mcap[OBSERVED_TOPIC]]
    assert len(agent_steps) == turns and agent_steps[0] == 0
    frames = _frame_steps(dual_world, agent_steps, replayed.steps_used)
    assert len(frames) > turns + 5
    for cam in robot.camera_names:
        for topic in (topics.camera_image(cam) + "/compressed", topics.camera_info(cam), topics.camera_pose(cam)):
            assert len(by_mcap[topic]) == len(frames), topic
    assert len(by_mcap[ACTION_TOPIC]) == len(by_mcap[TOOL_RESULT_TOPIC]) == turns
    assert [m.data for *_, m in by_mcap[INSTRUCTION_TOPIC]] == [dual_world.instruction]
    assert [m.data for *_, m in by_rosbags[INSTRUCTION_TOPIC]] == [dual_world.instruction]


def test_each_motion_played_is_drawn_from_where_the_grasp_point_was_to_its_target(replayed, dual_world):
    replayed, _ = replayed
    by_mcap = _read_mcap_ros2(replayed.folder / MCAP_FILE)
    moves = [t["move"] for t in _jsonl(replayed.folder, "turns.jsonl") if t.get("move")]
    played = [m for m in moves if m["accepted"] and m["steps_used"] > 0]
    assert played and len(by_mcap[topics.PLANNED_PATH]) == len(played)
    joints = {log_time: msg for log_time, _, _, msg in by_mcap[topics.JOINT_STATES]}
    tcp = {
        arm: {t: msg.pose.position for t, _, _, msg in by_mcap[topics.tcp_pose(arm)]}
        for arm in dual_world.robot.arm_names
    }
    for (log_time, _, _, array), move in zip(by_mcap[topics.PLANNED_PATH], played, strict=True):
        assert log_time in joints  # stamped with the joint state the motion started from
        lines = {m.id: m for m in array.markers if m.ns == "planned_path"}
        spheres = {m.id: m for m in array.markers if m.ns == "target"}
        assert set(lines) == set(spheres) and len(lines) == len(move["arms"])
        for marker_id, line in lines.items():
            assert line.type == 4 and line.header.frame_id == "world"
            assert len(line.points) == move["waypoints"] + 1  # the start state and every point played
            end, target = line.points[-1], spheres[marker_id].pose.position
            # a completed move's planned path ends at its target (the planner's IK tolerance)
            if move["stop_reason"] == "completed":
                assert np.linalg.norm([end.x - target.x, end.y - target.y, end.z - target.z]) < 0.005
        # the path starts at a grasp point the record holds (the state after the turn before)
        starts = [(p.x, p.y, p.z) for p in (line.points[0] for line in lines.values())]
        recorded = [(q.x, q.y, q.z) for arm in tcp for t, q in tcp[arm].items() if t <= log_time]
        assert all(min(np.linalg.norm(np.subtract(s, r)) for r in recorded) < 0.002 for s in starts)


def test_stamps_are_simulation_time_and_never_go_back(replayed, dual_world):
    replayed, _ = replayed
    path = replayed.folder / MCAP_FILE
    dt_s = dual_world.robot.control_dt_s
    by_mcap, by_rosbags = _read_mcap_ros2(path), _read_rosbags(path)
    for topic, messages in by_mcap.items():
        log_times = [log for log, *_ in messages]
        assert log_times == sorted(log_times), topic
        assert [log for log, *_ in messages] == [publish for _, publish, *_ in messages], topic
        assert [t for t, *_ in by_rosbags[topic]] == log_times, topic
        for log, _, _, msg in messages:
            if hasattr(msg, "header"):
                assert _stamp_ns(msg) == log, topic
    # every stamp is a whole number of control periods; the last state is at steps_used x period
    for topic, messages in by_mcap.items():
        for log, *_ in messages:
            steps = log / NS_PER_S / dt_s
            assert steps == pytest.approx(round(steps), abs=1e-6), (topic, log)
    end_ns = round(replayed.steps_used * dt_s * NS_PER_S)
    assert by_mcap[topics.JOINT_STATES][0][0] == 0 and by_mcap[topics.JOINT_STATES][-1][0] == end_ns
    assert by_mcap[TOOL_RESULT_TOPIC][-1][0] == end_ns
    every_step = [round(k * dt_s * NS_PER_S) for k in range(replayed.steps_used + 1)]
    assert [log for log, *_ in by_mcap[topics.JOINT_STATES]] == [log for log, *_ in by_mcap[TF_TOPIC]] == every_step
    steps_left = [t["steps_left"] for t in _jsonl(replayed.folder, "turns.jsonl")]
    step_limit = json.loads((replayed.folder / "meta.json").read_text())["env_step_limit"]
    after_turns = [round((step_limit - left) * dt_s * NS_PER_S) for left in steps_left]
    assert [log for log, *_ in by_mcap[topics.tcp_pose("left")][1:]] == after_turns
    # each turn's action at the state it began from, its result at the state after it
    assert [log for log, *_ in by_mcap[ACTION_TOPIC]] == [0, *after_turns[:-1]]
    assert [log for log, *_ in by_mcap[OBSERVED_TOPIC]] == [0, *after_turns[:-1]]
    dt_ns = dt_s * NS_PER_S
    agent_steps = [round(log / dt_ns) for log, *_ in by_mcap[OBSERVED_TOPIC]]
    frames = [round(log / dt_ns) for log, *_ in by_mcap[topics.camera_image("head") + "/compressed"]]
    assert frames == _frame_steps(dual_world, agent_steps, replayed.steps_used)


def test_images_joints_and_poses_match_the_robot(replayed, dual_world):
    replayed, final = replayed
    robot = dual_world.robot
    path = replayed.folder / MCAP_FILE
    by_mcap, by_rosbags = _read_mcap_ros2(path), _read_rosbags(path)
    for cam in robot.camera_names:
        config = robot.camera(cam)
        images = by_rosbags[topics.camera_image(cam) + "/compressed"]
        for _, _, msg in images:
            assert msg.format == "jpeg" and msg.header.frame_id == config.frame
            rgb = cv2.imdecode(np.frombuffer(bytes(msg.data), np.uint8), cv2.IMREAD_COLOR)
            assert rgb.shape == (config.height, config.width, 3)
            assert rgb.std() > 5  # a rendered scene, not a blank frame
        K = dual_world.calibration(cam).K  # intrinsics do not move with the wrists
        for _, _, info in by_rosbags[topics.camera_info(cam)]:
            assert (info.width, info.height, info.header.frame_id) == (config.width, config.height, config.frame)
            np.testing.assert_allclose(np.asarray(info.k).reshape(3, 3), K)
            np.testing.assert_allclose(np.asarray(info.p).reshape(3, 4)[:, :3], K)
        for *_, info in by_mcap[topics.camera_info(cam)]:
            np.testing.assert_allclose(np.asarray(info.k).reshape(3, 3), K)
    # the head camera does not move: its pose is the world's calibration
    T = dual_world.calibration("head").T_world_cam
    for _, _, pose in by_rosbags[topics.camera_pose("head")]:
        p, q = pose.pose.position, pose.pose.orientation
        np.testing.assert_allclose([p.x, p.y, p.z], T[:3, 3], atol=1e-9)
        assert pose.header.frame_id == topics.WORLD_FRAME and q.w**2 + q.x**2 + q.y**2 + q.z**2 == pytest.approx(1)
    # the last joint state and grasp-point poses are the world's state at the end
    *_, joints = by_rosbags[topics.JOINT_STATES][-1]
    names = [n for a in robot.arms for n in (*a.joints, a.gripper_joint)]
    assert list(joints.name) == names
    for arm in robot.arms:
        state = final.arm(arm.name)
        q = [joints.position[list(joints.name).index(j)] for j in arm.joints]
        np.testing.assert_allclose(q, state.joint_positions_rad, atol=1e-12)
        gripper = joints.position[list(joints.name).index(arm.gripper_joint)]
        assert gripper == pytest.approx(state.gripper_opening * arm.gripper_max_m)
        *_, tcp = by_rosbags[topics.tcp_pose(arm.name)][-1]
        p, q_ = tcp.pose.position, tcp.pose.orientation
        np.testing.assert_allclose([p.x, p.y, p.z], state.tcp_pos_m, atol=1e-12)
        np.testing.assert_allclose([q_.w, q_.x, q_.y, q_.z], state.tcp_quat_wxyz, atol=1e-12)


def test_tool_calls_and_results_are_the_records_texts(replayed):
    replayed, _ = replayed
    folder = replayed.folder
    turns, responses = _jsonl(folder, "turns.jsonl"), _jsonl(folder, "responses.jsonl")
    by_mcap, by_rosbags = _read_mcap_ros2(folder / MCAP_FILE), _read_rosbags(folder / MCAP_FILE)
    actions = [json.loads(m.data) for *_, m in by_mcap[ACTION_TOPIC]]
    assert [json.loads(m.data) for *_, m in by_rosbags[ACTION_TOPIC]] == actions
    assert [a["turn"] for a in actions] == [t["turn"] for t in turns]
    assert [a["action"] for a in actions] == [t["action"] for t in turns]
    assert [a["content"] for a in actions] == [r["content"] for r in responses]
    assert [a["tool_calls"] for a in actions] == [r["tool_calls"] for r in responses]
    results = [json.loads(m.data) for *_, m in by_rosbags[TOOL_RESULT_TOPIC]]
    assert [r["tool_results"] for r in results] == [t["tool_results"] for t in turns]
    assert results[0]["tool_results"][0].startswith("Accepted: playing")


class CrashingAgent(MoveEefAgent):
    """The move_eef agent with a bug that strikes at the start of one turn; just before, it copies episode.mcap as a
    killed process would leave it (no index or footer yet)."""

    def __init__(self, crash_at: int, out_root: Path) -> None:
        super().__init__()
        self.crash_at = crash_at
        self.out_root = out_root
        self.partial = b""

    def turn(self, llm, turn):
        if turn == self.crash_at:
            [path] = self.out_root.glob(f"*/{MCAP_FILE}")
            self.partial = path.read_bytes()
            raise RuntimeError("agent bug")
        return super().turn(llm, turn)


def test_a_crash_mid_episode_leaves_a_readable_file(dual_world, tmp_path):
    agent = CrashingAgent(crash_at=3, out_root=tmp_path)
    with pytest.raises(RuntimeError, match="agent bug"):
        _run(dual_world, tmp_path, agent, AGENT_ONLY)
    [path] = tmp_path.glob(f"*/{MCAP_FILE}")
    by_mcap, by_rosbags = _read_mcap_ros2(path), _read_rosbags(path)
    assert {t: len(m) for t, m in by_mcap.items()} == {t: len(m) for t, m in by_rosbags.items()}
    assert len(by_mcap[ACTION_TOPIC]) == len(by_mcap[TOOL_RESULT_TOPIC]) == 2  # the turns before the crash
    assert len(by_mcap[topics.tcp_pose("left")]) == 3  # the first state and one after each of those turns
    assert len(by_mcap[topics.camera_image("head") + "/compressed"]) == 2
    [(_, _, error)] = by_rosbags[ERROR_TOPIC]
    assert json.loads(error.data) == {"turn": 3, "error": "RuntimeError: agent bug"}
    # the metrics as metrics.json has them, in the file's metadata
    with path.open("rb") as stream:
        metadata = {m.name: m.metadata for m in make_reader(stream).iter_metadata()}
    metrics = json.loads((path.parent / "metrics.json").read_text())
    assert metadata["metrics"]["end_reason"] == metrics["end_reason"] == "crashed"
    assert json.loads(metadata["metrics"]["steps_used"]) == metrics["steps_used"] > 0
    assert len(by_mcap[topics.JOINT_STATES]) == metrics["steps_used"] + 1  # the first state and every step's
    assert metadata["episode"]["task"] == "general_pickup"

    # While the episode ran, every finished turn was already in the file: a streaming reader gets them up to the end
    # of what was written (no footer: EndOfFile), as after a kill.
    partial: dict[str, int] = defaultdict(int)
    reader = NonSeekingReader(io.BytesIO(agent.partial), decoder_factories=[DecoderFactory()])
    with pytest.raises(EndOfFile):
        for _, channel, _, _ in reader.iter_decoded_messages(log_time_order=False):
            partial[channel.topic] += 1
    assert partial[ACTION_TOPIC] == partial[TOOL_RESULT_TOPIC] == 2 and partial[topics.tcp_pose("left")] == 3
    assert partial[topics.JOINT_STATES] == partial[TF_TOPIC] == metrics["steps_used"] + 1  # the crash moved nothing


def test_code_cells_record_the_frames_robo_took(dual_world, tmp_path):
    """robo's pictures (image, show, world_map with depth) are the record's frames: one per camera and step."""
    script = tmp_path / "cells.py"
    cells = [
        "robo.image('head'); robo.show('head'); robo.world_map('head').ok",  # one step: one head frame
        "robo.image('left_wrist').shape",
        "robo.move_to('left', np.add(robo.state().arm('left').tcp_pos, [0, 0, 0.03])).reached",
        "robo.image('head').shape",
    ]
    script.write_text("".join(f"# %%\n{cell}\n" for cell in cells))
    agent = CodeCellAgent()
    try:
        with open_llm(f"replay:{script}") as llm:
            # the frames robo took only: no camera rate
            result = run_episode(WorldHost(dual_world), agent, llm, SPEC, tmp_path / "eps", record_settings=AGENT_ONLY)
    finally:
        agent.close()
    assert result.end_reason is EndReason.FINISHED and result.llm_calls == len(cells) + 1
    turns = _jsonl(result.folder, "turns.jsonl")
    assert turns[0]["tool_results"][0].startswith("True"), turns[0]  # world_map got its depth through the record
    by_rosbags = _read_rosbags(result.folder / MCAP_FILE)
    dt_ns = dual_world.robot.control_dt_s * NS_PER_S
    head = [round(t / dt_ns) for t, *_ in by_rosbags[topics.camera_image("head") + "/compressed"]]
    assert head == [0, result.steps_used]
    assert [round(t / dt_ns) for t, *_ in by_rosbags[topics.camera_image("left_wrist") + "/compressed"]] == [0]
    assert topics.camera_image("right_wrist") + "/compressed" not in by_rosbags  # never looked at
    assert (
        len(by_rosbags[ACTION_TOPIC]) == len(cells) + 1 and len(by_rosbags[topics.tcp_pose("left")]) == len(cells) + 2
    )
    assert len(by_rosbags[topics.JOINT_STATES]) == result.steps_used + 1  # the first state and every control step
    calls = [json.loads(m.data)["tool_calls"][0] for *_, m in by_rosbags[ACTION_TOPIC]]
    assert [c["name"] for c in calls] == ["python"] * len(cells) + ["finish"]
    assert [json.loads(c["arguments"])["code"].strip() for c in calls[: len(cells)]] == cells


def test_mcap_off_writes_no_file(dual_world, tmp_path):
    recorder = EpisodeRecorder(tmp_path / "ep", RecordMeta(task="x"), dual_world.robot, mcap=False)
    recorder.record_observation(dual_world.observe(cameras=("head",)))
    recorder.close()
    assert not (tmp_path / "ep" / MCAP_FILE).exists() and (tmp_path / "ep" / "meta.json").exists()


def test_message_definitions_are_jazzys(dual_world):
    """Our .msg texts parse to the same fields as the ROS 2 Jazzy definitions rosbags ships (what ros2 bag plays)."""
    jazzy = get_typestore(Stores.ROS2_JAZZY)
    for datatype in set(_expected_types(dual_world.robot).values()):
        parsed = get_types_from_msg(message_definition(datatype), datatype)
        assert datatype in parsed
        for name, definition in parsed.items():
            assert jazzy.fielddefs[name] == definition, name


def _messages(path: Path) -> list[tuple[str, int, bytes]]:
    """(topic, log time, raw data) of every message, in file order, by the mcap package's indexed reader."""
    with path.open("rb") as stream:
        return [(c.topic, m.log_time, m.data) for _, c, m in make_reader(stream).iter_messages(log_time_order=False)]


@pytest.mark.parametrize("keep", [0.97, 0.6, 0.3])
def test_a_record_cut_short_is_refused_by_indexed_readers_and_repaired_to_what_came_before_the_cut(
    replayed, tmp_path, keep
):
    from robodojo.episodes.mcap_record import CUT_SUFFIX

    result, _ = replayed
    whole = result.folder / MCAP_FILE
    original = _messages(whole)
    data = whole.read_bytes()
    cut = tmp_path / MCAP_FILE
    cut.write_bytes(data[: int(len(data) * keep)])  # what a kill leaves: the file ends mid-record, no footer
    with pytest.raises(Exception):  # noqa: B017 - the mcap reader's error depends on where the cut falls
        _messages(cut)
    done = main(["record", "repair", str(tmp_path)])
    assert done == 0
    repaired = _messages(cut)
    # every message before the cut, byte for byte and in order; the partial chunk at the cut dropped
    assert 0 < len(repaired) < len(original) and repaired == original[: len(repaired)]
    assert (tmp_path / (MCAP_FILE + CUT_SUFFIX)).read_bytes() == data[: int(len(data) * keep)]
    # and ROS tooling reads it: rosbags decodes every message with the file's own schemas
    by_rosbags = _read_rosbags(cut)
    assert sum(len(v) for v in by_rosbags.values()) == len(repaired)
    with cut.open("rb") as stream:
        assert "episode" in {m.name for m in make_reader(stream).iter_metadata()}  # the metadata before the cut


def test_repair_leaves_an_intact_record_as_it_is(replayed, tmp_path, capsys):
    result, _ = replayed
    path = tmp_path / MCAP_FILE
    path.write_bytes((result.folder / MCAP_FILE).read_bytes())
    assert main(["record", "repair", str(path)]) == 0
    assert "intact" in capsys.readouterr().out
    assert path.read_bytes() == (result.folder / MCAP_FILE).read_bytes()
    assert not list(tmp_path.glob("*.cut"))


def _matrix(transform) -> np.ndarray:
    t, r = transform.translation, transform.rotation
    T = np.eye(4)
    T[:3, :3] = matrix_from_quat((r.w, r.x, r.y, r.z))
    T[:3, 3] = (t.x, t.y, t.z)
    return T


def test_the_frames_follow_the_urdf_and_put_each_grasp_point_where_its_pose_says(replayed, dual_world):
    """What Foxglove's 3D panel and RViz draw from the file alone: /robot_description is the robot's URDF, /tf_static
    its fixed joints, /tf its moving ones at each joint state; chained from the world they are the URDF's forward
    kinematics of the recorded joints, and put each grasp point where its recorded pose says."""
    replayed, _ = replayed
    robot = dual_world.robot
    by_rosbags = _read_rosbags(replayed.folder / MCAP_FILE)
    [(_, _, description)] = by_rosbags[ROBOT_DESCRIPTION_TOPIC]
    assert description.data == robot.scene_urdf.read_text()
    urdf = parse_urdf(description.data)
    [(_, _, static)] = by_rosbags[TF_STATIC_TOPIC]
    assert {t.child_frame_id for t in static.transforms} == {j.child for j in urdf.joints.values() if not j.movable}
    for (stamp, _, moving), (joints_stamp, _, joints) in zip(
        by_rosbags[TF_TOPIC][::20], by_rosbags[topics.JOINT_STATES][::20], strict=True
    ):
        assert stamp == joints_stamp and all(_stamp_ns(t) == stamp for t in moving.transforms)
        assert {t.child_frame_id for t in moving.transforms} == {j.child for j in urdf.movable_joints}
        parent = {
            t.child_frame_id: (t.header.frame_id, _matrix(t.transform))
            for t in (*static.transforms, *moving.transforms)
        }
        fk = urdf.forward_kinematics(dict(zip(joints.name, joints.position, strict=True)))
        for link in fk:
            frame, T = link, np.eye(4)
            while frame != topics.WORLD_FRAME:
                frame, T_parent = parent[frame]
                T = T_parent @ T
            np.testing.assert_allclose(T, fk[link], atol=1e-9, err_msg=link)
    # the grasp points after the last turn: within a millimetre (the world reports them from MuJoCo's body poses,
    # computed at the start of its last physics substep, the joints at its end)
    *_, last = by_rosbags[topics.JOINT_STATES][-1]
    fk = urdf.forward_kinematics(dict(zip(last.name, last.position, strict=True)))
    for arm in robot.arm_names:
        *_, tcp = by_rosbags[topics.tcp_pose(arm)][-1]
        p = tcp.pose.position
        assert np.linalg.norm(fk[urdf.joint(f"{arm}_tcp_joint").child][:3, 3] - [p.x, p.y, p.z]) < 1e-3


def test_the_frames_the_agent_took_are_told_apart_from_those_rendered_for_the_record(replayed, dual_world):
    from robodojo.episodes.mcap_record import camera_frames

    replayed, _ = replayed
    path = replayed.folder / MCAP_FILE
    dt_ns = dual_world.robot.control_dt_s * NS_PER_S
    seen = [json.loads(m.data) for *_, m in _read_rosbags(path)[OBSERVED_TOPIC]]
    every = [(c, round(t / dt_ns)) for c, t, _ in camera_frames(path, dual_world.robot.camera_names)]
    taken = [(c, round(t / dt_ns)) for c, t, _ in camera_frames(path, dual_world.robot.camera_names, seen_only=True)]
    assert sorted(taken) == sorted((c, s["step"]) for s in seen for c in s["cameras"])
    assert set(taken) < set(every) and len(every) > 2 * len(taken)


@pytest.mark.parametrize(
    "text, error",
    [
        ("camera_rate_hz: -1\n", "camera_rate_hz must be >= 0"),
        ("camera_rate_hz: 5\nfps: 3\n", "fps"),
        ("{}\n", "camera_rate_hz"),
    ],
)
def test_record_settings_refuse_what_they_cannot_mean(tmp_path, text, error):
    from robodojo.episodes.record_settings import load_record_settings
    from robodojo.errors import ConfigError

    path = tmp_path / "record.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=error):
        load_record_settings(path)
    assert RecordSettings(5.0).camera_every_steps(0.04) == 5 and RecordSettings(0.0).camera_every_steps(0.04) == 0
    assert load_record_settings() == FRAMES_5HZ  # the shipped default


def test_the_foxglove_layout_shows_topics_the_record_has(replayed):
    """config/foxglove/episode.json (Foxglove's layout format; Foxglove itself cannot run here): every panel it lays
    out exists, and every topic it names is in a recorded episode.mcap."""
    replayed, _ = replayed
    layout = json.loads((PACKAGE_ROOT / "config" / "foxglove" / "episode.json").read_text())
    panels = set(layout["configById"])

    def leaves(node) -> set[str]:
        return {node} if isinstance(node, str) else leaves(node["first"]) | leaves(node["second"])

    assert leaves(layout["layout"]) == panels
    named = {c["imageMode"]["imageTopic"] for c in layout["configById"].values() if "imageMode" in c}
    named |= {c["topicPath"] for c in layout["configById"].values() if "topicPath" in c}
    three_d = layout["configById"]["3D!robot"]
    named |= set(three_d["topics"]) | {layer["topic"] for layer in three_d["layers"].values() if "topic" in layer}
    recorded = set(_read_rosbags(replayed.folder / MCAP_FILE))
    assert named <= recorded, named - recorded
