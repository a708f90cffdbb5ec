"""``robodojo judge``: the operator's verdict (or "the scene is ready") sent to episode_node's /episode/judge."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import rclpy
from agent_bringup.srv import JudgeEpisode

from robodojo.errors import BackendLostError
from robodojo.nodes.episode_node import JUDGE

POLL_S = 0.05


@dataclass(frozen=True)
class JudgeAnswer:
    accepted: bool
    message: str
    episode_id: str


def send_judgement(
    *,
    ready: bool = False,
    success: bool = False,
    score: float = math.nan,
    note: str = "",
    episode_id: str = "",
    timeout_s: float = 10.0,
) -> JudgeAnswer:
    """Call /episode/judge once (in a short-lived node); BackendLostError when no episode node answers."""
    rclpy.init(args=None)
    try:
        node = rclpy.create_node("robodojo_judge")
        client = node.create_client(JudgeEpisode, JUDGE)
        if not client.wait_for_service(timeout_sec=timeout_s):
            raise BackendLostError(f"no {JUDGE} service within {timeout_s:g} s: is episode_node running (sim:=none)?")
        request = JudgeEpisode.Request(
            kind=JudgeEpisode.Request.READY if ready else JudgeEpisode.Request.VERDICT,
            episode_id=episode_id, success=success, score=score, note=note,
        )  # fmt: skip
        future = client.call_async(request)
        deadline = time.monotonic() + timeout_s
        while not future.done() and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=POLL_S)
        if not future.done():
            raise BackendLostError(f"{JUDGE} did not answer within {timeout_s:g} s")
        response = future.result()
        node.destroy_node()
        return JudgeAnswer(bool(response.accepted), response.message, response.episode_id)
    finally:
        rclpy.try_shutdown()
