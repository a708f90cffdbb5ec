"""The move_eef agent end to end: a scripted LLM (a list of ChatReply objects), the embedded world and motion server."""

from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from robodojo import PACKAGE_ROOT
from robodojo.agents.base import TurnRecord
from robodojo.agents.conversation import OMITTED_IMAGE_TEXT, Conversation
from robodojo.agents.llm.client import image_part
from robodojo.agents.llm.types import ChatReply, Message, ToolCall, Usage
from robodojo.agents.move_eef import MoveEefAgent, MoveEefConfig, Probes, load_move_eef_config
from robodojo.agents.move_eef.agent import parse_move_eef_config
from robodojo.agents.move_eef.observation import observation_message
from robodojo.agents.move_eef.probes import DemonstrationStep, load_demonstration, write_demonstration
from robodojo.agents.move_eef.prompts import Embodiment
from robodojo.agents.move_eef.tools import GIVE_UP_TEXT, NO_TOOL_CALL_TEXT
from robodojo.episodes import episode_context
from robodojo.errors import ConfigError
from robodojo.geometry import quat_from_matrix
from robodojo.motion.orientation import DownAngles, down_angles_from_rotation, rotation_from_down_angles
from robodojo.motion.rejection import BelowTable, OutOfBounds
from robodojo.observation import ArmState, CameraCalibration, CameraFrame, Observation
from robodojo.sim.agent_side import AgentSideBackend
from robodojo.sim.scripted import plan_top_down_grasp

REPLAY_FILE = PACKAGE_ROOT / "examples" / "replay" / "general_pickup_seed0.yaml"
EMBODIMENT = Embodiment(name="robodojo-arx-x5", reach_forward_m=0.45, reach_sideways_m=0.30)
ACCEPTED = "Accepted: playing {n} waypoints ({s}s). The next observation reports how close the grasp point landed."


# -- a scripted LLM -----------------------------------------------------------------------------------------------
class ScriptedLlm:
    """An LlmCaller that returns the given replies in order and records every request."""

    def __init__(self, replies: list[ChatReply]) -> None:
        self.replies = list(replies)
        self.requests: list[list[Message]] = []
        self.tools: list[list[dict]] = []
        self.tool_choices: list[str] = []

    def chat(self, messages: list[Message], tools: list[dict], *, tool_choice: str = "required") -> ChatReply:
        self.requests.append(json.loads(json.dumps(messages)))  # a deep copy as sent
        self.tools.append(tools)
        self.tool_choices.append(tool_choice)
        return self.replies.pop(0)


def reply(*calls: tuple[str, object], content: str | None = None) -> ChatReply:
    """A reply with tool calls (name, arguments); arguments that are not strings are JSON-encoded."""
    tool_calls = tuple(
        ToolCall(id=f"call_{i}", name=name, arguments=args if isinstance(args, str) else json.dumps(args))
        for i, (name, args) in enumerate(calls)
    )
    return ChatReply(
        content=content,
        tool_calls=tool_calls,
        usage=Usage(),
        model="scripted",
        finish_reason="tool_calls" if tool_calls else "stop",
        latency_s=0.0,
        attempts=1,
    )


def move(targets: object, note: str = "test") -> ChatReply:
    return reply(("move_eef", {"targets": targets, "note": note}))


class RecordingBackend(AgentSideBackend):
    """The world's agent-side backend, keeping the last observation the agent took (and the world, for checks)."""

    def __init__(self, world) -> None:
        super().__init__(world)
        self.world = world
        self.last = None

    def observe(self, cameras=None, *, depth=False):
        self.last = super().observe(cameras, depth=depth)
        return self.last


def start(world, probes: Probes | None = None, *, seed: int = 0, image_horizon: int | None = 2, **config):
    """Reset general_pickup, build the episode context and an agent, call begin."""
    world.reset("general_pickup", seed=seed)
    backend = RecordingBackend(world)
    ctx = dataclasses.replace(episode_context(world), backend=backend)  # the agent observes through the recorder
    cfg = MoveEefConfig(
        image_horizon=image_horizon,
        probes=probes or Probes(),
        embodiments={"dual_arx_x5": EMBODIMENT},
        **config,
    )
    agent = MoveEefAgent(cfg)
    agent.begin(ctx)
    return agent, backend


def run(agent: MoveEefAgent, replies: list[ChatReply]) -> tuple[list[TurnRecord], ScriptedLlm]:
    llm = ScriptedLlm(replies)
    records = [agent.turn(llm, t) for t in range(len(replies))]
    return records, llm


def snapshot(world):
    return world.data.qpos.copy(), world.data.ctrl.copy(), world.step_count


def assert_unmoved(world, before) -> None:
    after = snapshot(world)
    np.testing.assert_array_equal(before[0], after[0])
    np.testing.assert_array_equal(before[1], after[1])
    assert before[2] == after[2]


def text_of(message: Message) -> str:
    content = message["content"]
    return content if isinstance(content, str) else content[0]["text"]


def decode(part: dict) -> np.ndarray:
    url = part["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    data = np.frombuffer(base64.b64decode(url.split(",", 1)[1]), np.uint8)
    return cv2.cvtColor(cv2.imdecode(data, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


# -- prompts and tools --------------------------------------------------------------------------------------------
def test_system_goal_and_tools(dual_world):
    agent, _ = start(dual_world)
    _, llm = run(agent, [move({"left_z": 0.5})])
    system, goal, obs = llm.requests[0][:3]
    assert system["role"] == "system" and goal["role"] == "user" and obs["role"] == "user"
    assert system["content"].startswith(
        "You are controlling a real robot embodiment named 'robodojo-arx-x5'. You receive RGB camera images, the "
        "current world-frame grasp-point state of both arms in the same 14 dimensions move_eef takes, arm joint angles "
        "as context you cannot command, and a task instruction."
    )
    for fact in (
        "Respond with exactly one tool call per turn.",
        "100 LLM calls, one per turn",
        "left arm at (-0.300, -0.450, 0.765) facing +y; right arm at (0.300, -0.450, 0.765) facing +y",
        "The left arm sits at negative x, the right arm at positive x.",
        "The table top is at z = 0.765 m",
        "about 0.45 m in front of an arm's base and about 0.30 m to either side",
        "Gripper: 1 is fully open (about 88 mm between the fingers) and 0 is closed.",
        "All zero points the fingers straight down, opening along the world x axis.",
        "move an idle arm so that its wrist camera looks at the work area",
        "move in small steps of a few centimetres",
        "returning both arms to their starting poses",
        "control runs at 25 Hz",
    ):
        assert fact in system["content"], fact
    assert goal["content"] == (
        "Goal: Pick up the cyan block and lift it 10 cm above the table.\n"
        "TASK RECIPE: Find the named object among the others. Approach it from above with one gripper open, close the "
        "gripper around it, then lift it straight up at least 10 cm. Use the arm on the object's side of the table.\n"
        "Process score ladder:\n"
        "  0.25  a gripper is within 5 cm of the object\n"
        "  0.50  the object is held between the fingers\n"
        "  0.75  the object is lifted 3 cm\n"
        "  1.00  the object is lifted 10 cm (success)\n"
        "The Goal instruction is authoritative for this episode's specifics. The environment alone judges success; "
        "the process-score ladder lists its partial-credit scores and is no substitute for full success."
    )
    assert llm.tool_choices == ["required"]
    move_eef, give_up = llm.tools[0]
    assert move_eef["function"]["name"] == "move_eef" and give_up["function"]["name"] == "give_up"
    description = move_eef["function"]["description"]
    assert (
        "Bounds: left_x [-1.1, 0.5], left_y [-1.25, 0.35], left_z [0.7, 1.565], left_pitch_deg [-180, 180], "
        "left_roll_deg [-90, 90], left_yaw_deg [-180, 180], left_gripper [0, 1], right_x [-0.5, 1.1], "
        "right_y [-1.25, 0.35], right_z [0.7, 1.565], right_pitch_deg [-180, 180], right_roll_deg [-90, 90], "
        "right_yaw_deg [-180, 180], right_gripper [0, 1]."
    ) in description
    params = move_eef["function"]["parameters"]
    assert params["required"] == ["targets"] and set(params["properties"]) == {"targets", "note"}
    assert params["properties"]["targets"]["properties"]["left_z"] == {
        "type": "number",
        "minimum": 0.7,
        "maximum": 1.565,
        "description": "[0.7, 1.565]",
    }
    assert give_up["function"]["parameters"]["required"] == ["reason"]


# -- observation text ---------------------------------------------------------------------------------------------
def _arm(name: str, pos, angles: DownAngles, joints, gripper: float) -> ArmState:
    R = rotation_from_down_angles(angles, (-1.0, 0.0, 0.0))
    return ArmState(
        name=name,
        joint_names=tuple(f"{name}_joint{i}" for i in range(1, 7)),
        joint_positions_rad=tuple(joints),
        tcp_pos_m=tuple(pos),
        tcp_quat_wxyz=tuple(quat_from_matrix(R)),
        gripper_opening=gripper,
    )


def test_observation_message_golden_synthetic(dual_world):
    calib = CameraCalibration(K=np.eye(3), T_world_cam=np.eye(4), width=16, height=8)
    rgb = np.zeros((8, 16, 3), np.uint8)
    rgb[:, :8] = (255, 0, 0)
    obs = Observation(
        step=12,
        steps_left=388,
        time_s=0.48,
        arms={
            "left": _arm(
                "left", (-0.3004, -0.2, 0.9), DownAngles(10.0, -0.02, 45.26), [0, 1.49, 1.23, -1.31, 0, 0], 1.0
            ),
            "right": _arm(
                "right", (0.1234, -0.1779, 0.7851), DownAngles(0, 0, -4.1), [0.1, 1.5, 1.1, -1.2, 0, -0.0001], 0.127
            ),
        },
        cameras={"head": CameraFrame("head", rgb, calib), "right_wrist": CameraFrame("right_wrist", rgb, calib)},
    )
    message = observation_message(
        instruction="Pick up the cyan block and lift it 10 cm above the table.",
        robot=dual_world.robot,
        obs=obs,
        probes=Probes(),
        arrival="right 20 mm and 0.0 deg away",
        jpeg_quality=90,
    )
    assert message["role"] == "user"
    parts = message["content"]
    assert parts[0] == {
        "type": "text",
        "text": "Instruction: Pick up the cyan block and lift it 10 cm above the table.\n"
        "World-frame grasp-point state (metres; degrees from straight down): left_x=-0.300 left_y=-0.200 left_z=0.900 "
        "left_pitch_deg=10.0 left_roll_deg=0.0 left_yaw_deg=45.3 left_gripper=1.00 right_x=0.123 right_y=-0.178 "
        "right_z=0.785 right_pitch_deg=0.0 right_roll_deg=0.0 right_yaw_deg=-4.1 right_gripper=0.13\n"
        "Arm joint angles, radians, for context; not commandable: left_joint1=0.000 left_joint2=1.490 "
        "left_joint3=1.230 left_joint4=-1.310 left_joint5=0.000 left_joint6=0.000 right_joint1=0.100 "
        "right_joint2=1.500 right_joint3=1.100 right_joint4=-1.200 right_joint5=0.000 right_joint6=0.000\n"
        "Arrival check for the previous move_eef target: right 20 mm and 0.0 deg away.\n"
        "Env steps remaining before the episode ends: 388",
    }
    assert parts[1] == {"type": "text", "text": "camera 'head' (step 12):"}
    assert parts[3] == {"type": "text", "text": "camera 'right_wrist' (step 12):"}
    assert parts[2]["type"] == parts[4]["type"] == "image_url" and len(parts) == 5
    image = decode(parts[2])
    assert image.shape == (8, 16, 3) and image[4, 2, 0] > 200 and image[4, 12, 0] < 50
    assert parts[2] == image_part(rgb, 90)
    # No move yet: no arrival line.
    message = observation_message(
        instruction="x", robot=dual_world.robot, obs=obs, probes=Probes(), arrival=None, jpeg_quality=90
    )
    assert "Arrival check" not in message["content"][0]["text"]


FIRST_OBSERVATION = (
    "Instruction: Pick up the cyan block and lift it 10 cm above the table.\n"
    "World-frame grasp-point state (metres; degrees from straight down): left_x=-0.301 left_y=-0.200 left_z=0.901 "
    "left_pitch_deg=0.0 left_roll_deg=0.0 left_yaw_deg=0.0 left_gripper=1.00 right_x=0.299 right_y=-0.200 "
    "right_z=0.901 right_pitch_deg=0.0 right_roll_deg=0.0 right_yaw_deg=0.0 right_gripper=1.00\n"
    "Arm joint angles, radians, for context; not commandable: left_joint1=0.000 left_joint2=1.490 left_joint3=1.230 "
    "left_joint4=-1.310 left_joint5=0.000 left_joint6=0.000 right_joint1=0.000 right_joint2=1.490 right_joint3=1.230 "
    "right_joint4=-1.310 right_joint5=0.000 right_joint6=0.000\n"
    "Env steps remaining before the episode ends: 400"
)


def test_observations_and_tool_results_golden_in_the_world(dual_world):
    agent, _ = start(dual_world)
    records, llm = run(agent, [move({"right_z": 0.85}), move({"left_z": 0.5}), move({"left_gripper": 0.5})])
    first = llm.requests[0][2]
    assert first["content"][0]["text"] == FIRST_OBSERVATION
    labels = [p["text"] for p in first["content"][1:] if p["type"] == "text"]
    assert labels == ["camera 'head' (step 0):", "camera 'left_wrist' (step 0):", "camera 'right_wrist' (step 0):"]
    assert [p["type"] for p in first["content"]] == ["text"] + ["text", "image_url"] * 3
    assert decode(first["content"][2]).shape == (480, 640, 3)

    assert records[0].action == "move_eef" and records[0].move.accepted
    assert records[0].tool_results == [ACCEPTED.format(n=12, s="0.48")]
    assert records[0].details == {
        "targets": {"right_z": 0.85},
        "world_targets": {"right_z": 0.85},
        "note": "test",
    }
    # The second request ends: observation 1, assistant call, tool result, observation 2.
    second = llm.requests[1]
    assert second[3]["role"] == "assistant" and second[3]["tool_calls"][0]["function"]["name"] == "move_eef"
    assert second[4] == {"role": "tool", "tool_call_id": "call_0", "content": ACCEPTED.format(n=12, s="0.48")}
    text = second[5]["content"][0]["text"]
    assert "right_z=0.851 right_pitch_deg=-0.1" in text
    assert "Arrival check for the previous move_eef target: right 1 mm and 0.1 deg away.\n" in text
    assert text.endswith("Env steps remaining before the episode ends: 388")
    assert second[5]["content"][1]["text"] == "camera 'head' (step 12):"
    # An invalid target: an error turn with the target parser's text and its facts; nothing moved, and the arrival
    # check still reports the last accepted move.
    assert records[1].action == "error" and records[1].move is None
    assert records[1].tool_results == ["target for 'left_z' is outside [0.7, 1.565]; nothing moved"]
    assert records[1].details["rejection"] == OutOfBounds("left_z", 0.5, (0.7, 1.565))
    assert records[1].details["error"] == records[1].tool_results[0]
    third = llm.requests[2][-1]["content"][0]["text"]
    assert "Arrival check for the previous move_eef target: right 1 mm and 0.1 deg away.\n" in third
    assert third.endswith("Env steps remaining before the episode ends: 388")
    assert records[2].tool_results == [ACCEPTED.format(n=6, s="0.24")]  # half the gripper stroke


# -- context policy -----------------------------------------------------------------------------------------------
def _image_count(message: Message) -> int:
    content = message["content"]
    return sum(p["type"] == "image_url" for p in content) if isinstance(content, list) else 0


@pytest.mark.parametrize("horizon", [1, 2, None])
def test_image_horizon_replaces_exactly_the_older_images(dual_world, horizon):
    agent, _ = start(dual_world, image_horizon=horizon)
    _, llm = run(agent, [move({"left_z": 0.5}) for _ in range(4)])
    last = llm.requests[-1]
    history = agent.conversation.history[: len(last)]  # the history also holds the last reply and its result
    assert len(last) == 2 + 4 + 3 * 2  # system, goal, 4 observations, 3 x (assistant, tool)
    observations = [i for i, m in enumerate(history) if m["role"] == "user" and isinstance(m["content"], list)]
    assert len(observations) == 4
    kept = 4 if horizon is None else horizon
    for rank, index in enumerate(observations):
        sent, full = last[index], history[index]
        assert _image_count(full) == 3
        if rank >= 4 - kept:
            assert sent == full
        else:
            assert _image_count(sent) == 0
            assert [p["text"] for p in sent["content"]] == [
                p["text"] if p["type"] == "text" else OMITTED_IMAGE_TEXT for p in full["content"]
            ]
    for index, message in enumerate(history):  # everything else is sent as it is
        if index not in observations:
            assert last[index] == message


def test_conversation_rejects_a_bad_horizon():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ConfigError, match="image_horizon must be a positive integer or None"):
            Conversation(bad)


# -- malformed replies --------------------------------------------------------------------------------------------
MALFORMED = [
    ("no tool call", reply(content="I will move the left arm."), [NO_TOOL_CALL_TEXT]),
    (
        "two calls",
        reply(("move_eef", {"targets": {"left_z": 0.8}}), ("give_up", {"reason": "x"})),
        ["Your reply called 2 tools (move_eef, give_up); call exactly one tool per turn; none was executed and "
         "nothing moved"] * 2,
    ),
    ("unknown tool", reply(("pick", {"object": "cube"})), ["unknown tool 'pick'; the tools are move_eef and give_up; "
                                                          "nothing moved"]),
    (
        "invalid JSON",
        reply(("move_eef", '{"targets": {"left_z": 0.8}')),
        ["arguments of move_eef are not valid JSON (Expecting ',' delimiter: line 1 column 28 (char 27)); "
         "nothing moved"],
    ),
    ("arguments not an object", reply(("move_eef", "[1, 2]")),
     ["arguments of move_eef must be a JSON object, got array; nothing moved"]),
    ("missing targets", reply(("move_eef", {"note": "go"})),
     ["move_eef needs 'targets' (an object mapping dimension names to numbers); nothing moved"]),
    ("empty arguments", reply(("move_eef", "")),
     ["move_eef needs 'targets' (an object mapping dimension names to numbers); nothing moved"]),
    ("targets not an object", reply(("move_eef", {"targets": "left_z=0.8"})),
     ["'targets' must be an object mapping dimension names to numbers, got string; nothing moved"]),
    ("note not a string", reply(("move_eef", {"targets": {"left_z": 0.8}, "note": 3})),
     ["'note' must be a string, got number; nothing moved"]),
    ("extra key", reply(("move_eef", {"targets": {"left_z": 0.8}, "speed": 2})),
     ["unexpected argument 'speed' for move_eef; its arguments are targets and note; nothing moved"]),
    ("give_up without reason", reply(("give_up", {"hindsight": "x"})),
     ["give_up needs 'reason' (a string); the episode continues"]),
    ("give_up reason not a string", reply(("give_up", {"reason": ["x"]})),
     ["'reason' must be a string, got array; the episode continues"]),
]  # fmt: skip


@pytest.mark.parametrize(("case", "bad", "texts"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_replies_return_the_error_and_move_nothing(dual_world, case, bad, texts):
    agent, _ = start(dual_world)
    before = snapshot(dual_world)
    records, llm = run(agent, [bad, move({"left_z": 0.5})])
    assert_unmoved(dual_world, before)
    record = records[0]
    assert record.action == "error" and record.move is None and not record.gave_up
    assert record.tool_results == texts and record.details == {"error": texts[0]}
    answered = llm.requests[1][4:-1]  # after system, goal, observation, assistant; before the next observation
    assert llm.requests[1][3]["role"] == "assistant"
    if bad.tool_calls:
        assert answered == [
            {"role": "tool", "tool_call_id": c.id, "content": t} for c, t in zip(bad.tool_calls, texts, strict=True)
        ]
    else:
        assert llm.requests[1][3]["content"] == "I will move the left arm."
        assert answered == [{"role": "user", "content": NO_TOOL_CALL_TEXT}]
    assert "Arrival check" not in text_of(llm.requests[1][-1])
    assert len(llm.requests) == 2  # every malformed reply is one LLM call


@pytest.mark.parametrize(
    ("targets", "text"),
    [
        ({}, "targets must name at least one dimension; nothing moved"),
        ({"left_q": 1}, "unknown dimension 'left_q'; dimensions are {left,right}_{x,y,z,pitch_deg,roll_deg,yaw_deg,"
                        "gripper}; nothing moved"),
        ({"right_x": "0.2"}, "'right_x' must be a finite number; nothing moved"),
        ({"left_z": 2.0}, "target for 'left_z' is outside [0.7, 1.565]; nothing moved"),
    ],
)  # fmt: skip
def test_invalid_targets_are_error_turns_with_the_target_parsers_message(dual_world, targets, text):
    agent, _ = start(dual_world)
    before = snapshot(dual_world)
    records, _ = run(agent, [move(targets)])
    assert_unmoved(dual_world, before)
    assert records[0].action == "error" and records[0].move is None
    assert records[0].tool_results == [text] and records[0].details["error"] == text
    assert records[0].details["targets"] == targets and records[0].details["note"] == "test"
    assert agent.arrival is None


def test_a_raw_newline_inside_a_json_string_is_accepted_and_resent_as_strict_json(dual_world):
    agent, _ = start(dual_world)
    raw = '{"targets": {"left_z": 0.95}, "note": "above\nthe cube"}'  # a real newline inside the note string
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)  # what strict parsing refused
    records, _ = run(agent, [reply(("move_eef", raw))])
    assert records[0].action == "move_eef" and records[0].move is not None and records[0].move.accepted
    assert "above" in records[0].details["note"] and "cube" in records[0].details["note"]
    (stored,) = agent.conversation.history[-2]["tool_calls"]  # the assistant message, before its tool result
    assert json.loads(stored["function"]["arguments"])["targets"] == {"left_z": 0.95}  # strict JSON when sent back


def test_a_refused_plan_is_a_move_with_the_planners_message(dual_world):
    agent, _ = start(dual_world)
    before = snapshot(dual_world)
    records, _ = run(agent, [move({"right_z": 0.75})])
    assert_unmoved(dual_world, before)
    assert records[0].action == "move_eef" and not records[0].move.accepted
    assert records[0].tool_results == ["right target z=0.750 m is below the table surface (0.765 m); nothing moved"]
    rejection = records[0].move.rejection
    assert isinstance(rejection, BelowTable) and rejection.arm == "right" and rejection.z_m == 0.75
    assert rejection.table_z_m == pytest.approx(0.765, abs=5e-4)
    assert agent.arrival is None


def test_give_up_ends_the_turn_without_motion(dual_world):
    agent, _ = start(dual_world)
    before = snapshot(dual_world)
    records, llm = run(agent, [reply(("give_up", {"reason": "the block fell off", "hindsight": "grip lower"}))])
    assert_unmoved(dual_world, before)
    record = records[0]
    assert record.gave_up and record.action == "give_up" and record.move is None
    assert record.tool_results == [GIVE_UP_TEXT]
    assert record.details == {"reason": "the block fell off", "hindsight": "grip lower"}
    assert agent.conversation.history[-1] == {"role": "tool", "tool_call_id": "call_0", "content": GIVE_UP_TEXT}
    assert record.request == llm.requests[0]


class RecordingMotion:
    """The motion server, keeping the notes it was given."""

    def __init__(self, motion) -> None:
        self.motion = motion
        self.notes: list[str] = []

    def move_eef(self, targets, *, is_success=None, note=""):
        self.notes.append(note)
        return self.motion.move_eef(targets, is_success=is_success, note=note)


def test_a_huge_note_is_cleaned_cut_and_the_model_told(dual_world):
    agent, _ = start(dual_world)
    motion = RecordingMotion(agent.episode.motion)
    agent._ctx = dataclasses.replace(agent.episode, motion=motion)
    note = "cube\u202e left\x00\x07 of the bowl " + "n" * 10_000_000
    records, llm = run(agent, [move({"left_z": 0.95}, note=note), move({"left_z": 0.9}, note="short")])
    used = ("cube left of the bowl " + "n" * 2000)[:2000]
    assert motion.notes == [used, "short"]  # what reached the motion server
    first = records[0]
    assert first.details["note"] == used
    assert first.details["text_limits"] == {
        "note": {"cut": True, "sent_chars": len(note), "removed_chars": 3, "max_chars": 2000}
    }
    assert first.tool_results[0].startswith("Accepted") and first.tool_results[0].endswith(
        "\n[3 control or invisible character(s) removed from 'note'; 'note' cut to 2000 characters (it had 10000022)]"
    )
    sent_again = llm.requests[1][3]
    assert json.loads(sent_again["tool_calls"][0]["function"]["arguments"])["note"] == used
    assert len(json.dumps(sent_again)) < 2500  # not 10 MB in every later request
    assert llm.requests[1][4]["content"] == first.tool_results[0]
    assert "text_limits" not in records[1].details and records[1].tool_results[0].startswith("Accepted")


@pytest.mark.parametrize(
    "targets",
    [
        {f"junk_{i}": 0.5 for i in range(120_000)},  # 2.3 MB of entries: refused before parsing
        {"left_z": [[0.5] * 1000] * 500},  # a small name holding 2.5 MB: refused before it reaches the server
    ],
    ids=["many-entries", "huge-value"],
)
def test_a_huge_targets_object_moves_nothing_and_is_not_resent(dual_world, targets):
    agent, _ = start(dual_world)
    before = snapshot(dual_world)
    llm = ScriptedLlm([move(targets), move({"left_z": 0.9}, note="short")])
    records = [agent.turn(llm, 0)]
    assert_unmoved(dual_world, before)
    records.append(agent.turn(llm, 1))
    limits = agent.text_limits
    sent = len(json.dumps({"targets": targets, "note": "test"}))
    assert sent > 1_500_000
    first = records[0]
    assert first.details["error"].startswith("'targets' is ") and "nothing moved" in first.details["error"]
    assert first.tool_results[0].endswith(
        f"[the arguments of your tool call (in this chat) cut to {limits.max_call_chars} characters (it had {sent})]"
    )
    assert first.details["text_limits"]["arguments"]["cut"]
    kept = llm.requests[1][3]["tool_calls"][0]["function"]["arguments"]
    assert len(kept) < limits.max_call_chars + 100 and "characters omitted" in kept
    assert sum(len(json.dumps(m)) for m in llm.requests[1] if m["role"] == "assistant") < 2 * limits.max_call_chars
    assert records[1].tool_results[0].startswith("Accepted")


def test_give_up_reason_and_reply_text_are_bounded(dual_world):
    agent, _ = start(dual_world)
    reason = "\u2066stuck\u2069 " + "r" * 5000
    bad = reply(("give_up", {"reason": reason, "hindsight": "grip lower\x00"}), content="x" * 9000)
    records, _ = run(agent, [bad])
    record = records[0]
    assert record.details["reason"] == ("stuck " + "r" * 5000)[:2000] and record.details["hindsight"] == "grip lower"
    assert set(record.details["text_limits"]) == {"content", "reason", "hindsight"}
    assert record.tool_results[0].startswith(GIVE_UP_TEXT + "\n[your reply's text cut to 8000 characters")
    assert "'reason' cut to 2000 characters" in record.tool_results[0]
    assert agent.conversation.history[-2]["content"] == "x" * 8000


# -- solving the task ---------------------------------------------------------------------------------------------
def _privileged_solution(world) -> list[dict[str, float]]:
    """move_eef targets from the target's privileged pose (allowed in tests): above, down, close, lift."""
    g = plan_top_down_grasp(world, "target")
    a = down_angles_from_rotation(g.rotation, world.robot.motion.zero_orientation_finger_axis)
    arm = g.arm
    return [
        {
            f"{arm}_x": float(g.pregrasp_pos_m[0]),
            f"{arm}_y": float(g.pregrasp_pos_m[1]),
            f"{arm}_z": float(g.pregrasp_pos_m[2]),
            f"{arm}_pitch_deg": a.pitch_deg,
            f"{arm}_roll_deg": a.roll_deg,
            f"{arm}_yaw_deg": a.yaw_deg,
            f"{arm}_gripper": 1.0,
        },
        {f"{arm}_z": float(g.grasp_pos_m[2])},
        {f"{arm}_gripper": 0.0},
        {f"{arm}_z": float(g.grasp_pos_m[2]) + 0.15},
    ]


def test_a_scripted_sequence_from_privileged_poses_solves_general_pickup(dual_world):
    agent, _ = start(dual_world)
    solution = _privileged_solution(dual_world)
    records, _ = run(agent, [move(t) for t in solution])
    assert all(r.action == "move_eef" and r.move.accepted for r in records)
    assert dual_world.privileged().success()
    assert records[-1].move.stop_reason.value == "task_success"
    assert agent.arrival is not None and agent.arrival.startswith("right ")


def _replies_from_file(path: Path) -> list[ChatReply]:
    items = yaml.safe_load(path.read_text())
    assert isinstance(items, list) and items
    replies = []
    for item in items:
        assert set(item) == {"content", "tool_calls"}
        calls = [(c["name"], c["arguments"]) for c in item["tool_calls"]]
        assert all(isinstance(args, dict | str) for _, args in calls)
        replies.append(reply(*calls, content=item["content"]))
    return replies


def test_the_replay_file_solves_general_pickup_seed_0(dual_world):
    agent, _ = start(dual_world)
    replies = _replies_from_file(REPLAY_FILE)
    assert len(replies) == 4
    records, _ = run(agent, replies)
    assert [r.action for r in records] == ["move_eef"] * 4
    assert all(r.move.accepted for r in records), [r.tool_results for r in records]
    truth = dual_world.privileged()
    assert truth.success() and truth.score() == 1.0


# -- probes -------------------------------------------------------------------------------------------------------
def test_negate_xyz_transforms_state_targets_bounds_and_errors(dual_world):
    agent, backend = start(dual_world, Probes(negate_xyz=True))
    records, llm = run(
        agent,
        [
            move({"right_x": -0.2, "right_z": -0.85}),
            move({"right_z": 0.85}),
            move({"right_z": -0.75}),
        ],
    )
    description = llm.tools[0][0]["function"]["description"]
    assert "left_x [-0.5, 1.1], left_y [-0.35, 1.25], left_z [-1.565, -0.7], left_pitch_deg [-180, 180]" in description
    assert "right_x [-1.1, 0.5], right_y [-0.35, 1.25], right_z [-1.565, -0.7]" in description
    targets_schema = llm.tools[0][0]["function"]["parameters"]["properties"]["targets"]["properties"]
    assert (targets_schema["right_z"]["minimum"], targets_schema["right_z"]["maximum"]) == (-1.565, -0.7)
    first = text_of(llm.requests[0][-1])
    assert "left_x=0.301 left_y=0.200 left_z=-0.901 left_pitch_deg=0.0" in first
    assert "right_x=-0.299 right_y=0.200 right_z=-0.901" in first
    # The model's target (-0.2, ., -0.85) is the world point (0.2, ., 0.85).
    assert records[0].move.accepted
    assert records[0].details["world_targets"] == {"right_x": 0.2, "right_z": 0.85}
    tcp = backend.world.arm_state("right").tcp_pos_m
    assert abs(tcp[0] - 0.2) < 0.005 and abs(tcp[2] - 0.85) < 0.005
    second = text_of(llm.requests[1][-1])
    assert "right_x=-0.201 right_y=0.200 right_z=-0.850" in second
    assert "Arrival check for the previous move_eef target: right 1 mm and 0.1 deg away." in second
    assert records[0].tool_results == [ACCEPTED.format(n=18, s="0.72")]
    assert records[1].action == "error"
    assert records[1].tool_results == ["target for 'right_z' is outside [-1.565, -0.7]; nothing moved"]
    assert records[2].tool_results == ["right target z=-0.750 m is below the table surface (-0.765 m); nothing moved"]
    assert records[2].move.tool_text == "right target z=0.750 m is below the table surface (0.765 m); nothing moved"


@pytest.mark.parametrize(
    ("probes", "flip"),
    [
        (Probes(flip_vision_ud=True), lambda rgb: rgb[::-1]),
        (Probes(flip_vision_lr=True), lambda rgb: rgb[:, ::-1]),
        (Probes(flip_vision_ud=True, flip_vision_lr=True), lambda rgb: rgb[::-1, ::-1]),
    ],
)
def test_image_flips_transform_what_the_model_sees(dual_world, probes, flip):
    agent, backend = start(dual_world, probes)
    _, llm = run(agent, [move({"left_z": 0.5})])
    parts = llm.requests[0][-1]["content"]
    assert [p["text"] for p in parts[1::2]] == [
        "camera 'head' (step 0):",
        "camera 'left_wrist' (step 0):",
        "camera 'right_wrist' (step 0):",
    ]
    for name, part in zip(("head", "left_wrist", "right_wrist"), parts[2::2], strict=True):
        rendered = backend.last.camera(name).rgb
        assert part == image_part(np.ascontiguousarray(flip(rendered)), 85)
        assert part != image_part(rendered, 85)


@pytest.mark.parametrize(
    ("probes", "cameras"),
    [
        (Probes(no_head_camera=True), ["left_wrist", "right_wrist"]),
        (Probes(right_wrist_only=True), ["right_wrist"]),
    ],
)
def test_camera_masks(dual_world, probes, cameras):
    agent, backend = start(dual_world, probes)
    _, llm = run(agent, [move({"left_z": 0.5})])
    parts = llm.requests[0][-1]["content"]
    assert [p["text"] for p in parts[1::2]] == [f"camera '{c}' (step 0):" for c in cameras]
    assert list(backend.last.cameras) == cameras  # masked cameras are not even rendered
    assert _image_count(llm.requests[0][-1]) == len(cameras)


def test_pose_jitter_offsets_positions_and_reports_the_miss(dual_world):
    agent, backend = start(dual_world, Probes(pose_jitter_m=0.05, pose_jitter_seed=3))
    records, llm = run(agent, [move({"right_x": 0.3, "right_y": -0.2, "right_z": 0.85}), move({"right_gripper": 0.5})])
    details = records[0].details
    offset = np.array(details["jitter_m"]["right"])
    assert offset[2] == 0.0 and 0.0 < np.linalg.norm(offset) <= 0.1
    sent = details["world_targets"]
    np.testing.assert_allclose(
        [sent["right_x"], sent["right_y"], sent["right_z"]], np.array([0.3, -0.2, 0.85]) + offset
    )
    tcp = np.array(backend.world.arm_state("right").tcp_pos_m)
    assert np.linalg.norm(tcp - (np.array([0.3, -0.2, 0.85]) + offset)) < 0.01  # the arm went to the jittered point
    # The arrival check compares with the model's request, so the miss shows.
    miss_mm = np.linalg.norm(tcp - np.array([0.3, -0.2, 0.85])) * 1e3
    assert f"Arrival check for the previous move_eef target: right {miss_mm:.0f} mm and" in text_of(llm.requests[1][-1])
    assert miss_mm > 10
    # A gripper-only move names no position: no jitter.
    assert "jitter_m" in records[1].details and records[1].details["jitter_m"] == {}


def test_pose_jitter_is_seeded(dual_world):
    offsets = []
    for _ in range(2):
        agent, _ = start(dual_world, Probes(pose_jitter_m=0.10, pose_jitter_seed=7))
        records, _ = run(agent, [move({"left_z": 0.85}), move({"left_z": 0.87})])
        offsets.append([r.details["jitter_m"]["left"] for r in records])
    assert offsets[0] == offsets[1] and offsets[0][0] != offsets[0][1]


# -- one-shot demonstrations --------------------------------------------------------------------------------------
def _demo_folder(world, tmp_path: Path) -> Path:
    world.reset("general_pickup", seed=5)
    obs = world.observe(["head", "right_wrist"])
    pose = {"right_x": 0.1, "right_y": -0.2, "right_z": 0.885, "right_gripper": 1.0}
    steps = [
        DemonstrationStep("open the right gripper above the block", pose, {c: obs.camera(c).rgb for c in obs.cameras}),
        DemonstrationStep("close the gripper", {**pose, "right_z": 0.785, "right_gripper": 0.0}, {}),
    ]
    return write_demonstration(tmp_path / "demo", steps)


@pytest.mark.parametrize("mode", ["images", "text"])
def test_demonstration_follows_the_goal_message(dual_world, tmp_path, mode):
    folder = _demo_folder(dual_world, tmp_path)
    assert len(load_demonstration(folder)) == 2
    agent, _ = start(dual_world, Probes(demonstration=folder, demonstration_mode=mode, negate_xyz=True))
    _, llm = run(agent, [move({"left_z": -0.85})])
    demo = llm.requests[0][2]
    assert demo["role"] == "user" and text_of(llm.requests[0][1]).startswith("Goal: ")
    texts = [p["text"] for p in demo["content"] if p["type"] == "text"]
    assert texts[0].startswith("DEMONSTRATION: one successful episode of this task, recorded on a different layout.")
    step1 = (
        "Step 1: open the right gripper above the block\n"
        "Pose: right_x=-0.100 right_y=0.200 right_z=-0.885 right_gripper=1.00"
    )
    step2 = "Step 2: close the gripper\nPose: right_x=-0.100 right_y=0.200 right_z=-0.785 right_gripper=0.00"
    if mode == "images":
        assert texts == [
            texts[0],
            step1,
            "demonstration step 1, camera 'head':",
            "demonstration step 1, camera 'right_wrist':",
            step2,
        ]
        assert _image_count(demo) == 2
    else:
        assert texts == [texts[0], step1, step2] and _image_count(demo) == 0
    assert llm.requests[0][3]["content"][0]["text"].startswith("Instruction: ")


def test_demonstration_errors(tmp_path):
    with pytest.raises(ConfigError, match=r"turns\.jsonl not found"):
        load_demonstration(tmp_path)
    (tmp_path / "turns.jsonl").write_text('{"text": "x", "pose": {"left_x": "a"}}\n')
    with pytest.raises(ConfigError, match=r"turns.jsonl:1: 'pose' must be an object of dimension names to finite"):
        load_demonstration(tmp_path)
    (tmp_path / "turns.jsonl").write_text('{"pose": {"left_x": 0.1}, "images": {"head": "missing.jpg"}}\n')
    with pytest.raises(ConfigError, match="cannot read image"):
        load_demonstration(tmp_path)


# -- configuration ------------------------------------------------------------------------------------------------
def test_the_config_file_loads_with_everything_off():
    config = load_move_eef_config()
    assert config.image_horizon == 2 and config.jpeg_quality == 85 and config.tool_choice == "required"
    assert config.probes == Probes()
    assert config.embodiments["dual_arx_x5"] == EMBODIMENT


def test_config_parsing_and_errors():
    base = {"robots": {"dual_arx_x5": {"embodiment_name": "r", "reach_forward_m": 0.4, "reach_sideways_m": 0.3}}}
    cfg = parse_move_eef_config(
        {**base, "image_horizon": None, "probes": {"negate_xyz": True, "pose_jitter": {"enabled": True}}}, "t"
    )
    assert cfg.image_horizon is None and cfg.probes.negate_xyz and cfg.probes.pose_jitter_m == 0.10
    bad = [
        ({"image_horizon": 0}, "t.image_horizon: must be > 0"),
        ({"jpeg_quality": 101}, "jpeg_quality must be an integer in"),
        ({"tool_choice": "none"}, "tool_choice must be one of required, auto"),
        ({"colour": 1}, "t: unknown key 'colour'"),
        ({"probes": {"negate": True}}, "t.probes: unknown key 'negate'"),
        ({"probes": {"flip_vision_ud": "yes"}}, "t.probes.flip_vision_ud: expected true or false"),
        ({"probes": {"demonstration_mode": "video"}}, "demonstration_mode: expected one of images, text"),
        ({"probes": {"pose_jitter": {"enabled": True, "mean_m": -1}}}, "mean_m: must be > 0"),
    ]
    for extra, message in bad:
        with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(".", r"\.")):
            parse_move_eef_config({**base, **extra}, "t")
