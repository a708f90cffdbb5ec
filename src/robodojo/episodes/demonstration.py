"""The move_eef agent's one-shot demonstration from a demonstration folder or from an episode record
(:func:`read_demonstration`; make_agent reads it for the agent).

A record (robodojo.episodes.record) gives one step per accepted move_eef call: the model's note and targets as text,
the grasp-point pose after the move, and the camera pictures of the observation that followed it (the next turn's;
none after the last move), named by the record's ``cameras``. A record written before meta.json named its cameras
names them as the move_eef agent chose them from its recorded settings (its ``images`` and the probes that hide
cameras); one without those settings, as the agent's defaults choose them (every camera).
"""

from __future__ import annotations

import json
from pathlib import Path

from robodojo.agents.context_budget import cameras_sent
from robodojo.agents.move_eef.probes import (
    DEMONSTRATION_FILE,
    DemonstrationStep,
    Probes,
    load_demonstration,
    read_rgb,
)
from robodojo.agents.move_eef.tools import MOVE_EEF
from robodojo.episodes.record import EpisodeRecord, RecordMeta, is_record
from robodojo.errors import ConfigError
from robodojo.robots.config import RobotConfig


def is_demonstration(folder: str | Path) -> bool:
    """Whether ``folder`` holds a demonstration: an episode record or a demonstration folder (its turns.jsonl)."""
    return is_record(Path(folder)) or (Path(folder) / DEMONSTRATION_FILE).is_file()


def read_demonstration(folder: str | Path) -> list[DemonstrationStep]:
    """The steps of the demonstration in ``folder``: an episode record, or a demonstration folder
    (robodojo.agents.move_eef.probes.load_demonstration). A ConfigError says what is wrong with it."""
    folder = Path(folder)
    if is_record(folder):
        return demonstration_from_record(EpisodeRecord.open(folder))
    return load_demonstration(folder)


def demonstration_from_record(record: EpisodeRecord) -> list[DemonstrationStep]:
    """Demonstration steps from an episode record (see the module docstring)."""
    from robodojo.motion.targets import observed_dimensions
    from robodojo.robots.config import load_robot_config

    meta = record.meta
    if not meta.robot or not record.turns:
        why = "; ".join(record.problems) or "it names no robot or has no turns"
        raise ConfigError(f"demonstration: {record.folder} is not a readable episode record: {why}")
    robot = load_robot_config(meta.robot)
    cameras = meta.cameras if meta.cameras is not None else _cameras_sent(meta, robot)
    steps = []
    for turn in record.turns:
        move = turn.move or {}
        if turn.action != MOVE_EEF or not move.get("accepted"):
            continue
        pose: dict[str, float] = {}
        for state in turn.arm_states().values():
            pose.update(observed_dimensions(robot, state))
        text = f"{turn.details.get('note', '')} -> {MOVE_EEF} {json.dumps(turn.details.get('targets', {}))}".strip()
        pictures = record.observation_images(turn.turn + 1, cameras)
        images = {camera: rgb for camera, path in pictures.items() if (rgb := read_rgb(path)) is not None}
        steps.append(DemonstrationStep(text=text, pose=pose, images=images))
    if not steps:
        raise ConfigError(f"demonstration: {record.folder} has no accepted {MOVE_EEF} turns")
    return steps


def _cameras_sent(meta: RecordMeta, robot: RobotConfig) -> tuple[str, ...]:
    """The cameras a move_eef agent with the record's settings observed (records that do not name them)."""
    settings = meta.agent_settings
    probes = settings.get("probes") or {}
    hiding = Probes(
        no_head_camera=bool(probes.get("no_head_camera")), right_wrist_only=bool(probes.get("right_wrist_only"))
    )
    return cameras_sent(str(settings.get("images", "all")), robot, hiding.visible_cameras(robot))
