"""The agent node: runs a move_eef, code-cell or shell agent on the graph, with the same runner and record as
in-process, or (agent mcp) serves the graph's episode to one MCP client over streamable HTTP, as ``robodojo mcp``
serves the embedded world's.

The agent sees what it sees in process, built from topics: camera images with CameraInfo and optical-frame poses,
joint states (TCP poses by forward kinematics on the URDF, as the motion server judges them), and the episode
status (instruction, steps, the benchmark's success signal). It acts only through the MoveEef action. When the
simulator or driver stops answering, or restarts, the episode ends with end_reason backend_lost. When the node is
asked to stop (SIGINT, SIGTERM), ``close`` ends the episode as ``interrupted`` with a complete record first.
"""

from __future__ import annotations

import math
import sys
import threading
import time
import traceback
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from agent_bringup.msg import EpisodeStatus
from agent_bringup.srv import ResetEpisode
from geometry_msgs.msg import PoseStamped
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from sensor_msgs.msg import CameraInfo, Image, JointState
from visualization_msgs.msg import MarkerArray

from robodojo.agents.context_budget import check_images
from robodojo.agents.llm.client import open_llm
from robodojo.agents.llm.settings import TOOL_CHOICES, run_llm_settings
from robodojo.episodes import EndReason, EpisodeResult, EpisodeSpec, run_episode
from robodojo.episodes.clock import ClockSetting
from robodojo.episodes.factory import make_agent
from robodojo.episodes.mcp_episode import McpPlan, serve_episode
from robodojo.errors import BackendLostError, ConfigError, EpisodeInterrupted, RobodojoError
from robodojo.nodes import topics
from robodojo.nodes.agent_graph import GraphEpisodeHost, GraphView, ShutdownNotice, wait_for
from robodojo.nodes.graph_choices import MCP_AGENT
from robodojo.nodes.parameters import AgentNodeParams
from robodojo.nodes.params import declare_parameters
from robodojo.nodes.runtime import CLOSE_DEADLINE_S, LATCHED_QOS, GraphNode, run_node
from robodojo.robots.config import RobotConfig, load_robot_config
from robodojo.robots.joint_state import JointPositions

NODE_NAME = "agent_node"
#: How long close waits for the interrupted episode to write its record: within run_node's deadline for close.
EPISODE_STOP_S = CLOSE_DEADLINE_S - 0.5


class AgentNode(GraphNode):
    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        p = declare_parameters(self, AgentNodeParams)
        self.params = p
        self.spec = EpisodeSpec(p.task, p.seed, p.variant or "standard", p.llm_call_budget)
        # Unknown agents, bad images or context values and bad LLM settings fail here, before anything runs.
        if p.images:
            check_images(p.images, "parameter 'images'")
        if p.context_tokens < 0:
            raise ConfigError(f"parameter 'context_tokens' must be >= 0 (0: unknown), got {p.context_tokens}")
        self.clock = ClockSetting.parse(p.clock)  # a bad clock fails here, before anything runs
        if p.agent == MCP_AGENT:
            McpPlan(self.spec, p.mcp_tools, "http", Path(p.out), port=p.mcp_port)  # bad tools or port fail here
        else:
            make_agent(p.agent, **self.agent_options)
        self.llm_settings = run_llm_settings(
            p.llm_config or None,
            timeout_s=p.llm_timeout_s or None,
            retries=None if p.llm_retries == -1 else p.llm_retries,
            max_output_tokens=p.llm_max_output_tokens or None,
            reasoning_effort=p.llm_reasoning_effort or None,
        )
        if p.tool_choice not in TOOL_CHOICES:
            choices = ", ".join(TOOL_CHOICES)
            raise ConfigError(f"parameter 'tool_choice' must be one of {choices}, got {p.tool_choice!r}")
        self.view = GraphView()
        inputs = MutuallyExclusiveCallbackGroup()
        self.create_subscription(
            EpisodeStatus, topics.EPISODE_STATUS, self.view.on_status, LATCHED_QOS, callback_group=inputs
        )
        self.create_subscription(JointState, topics.JOINT_STATES, self.view.on_joint_state, 50, callback_group=inputs)
        self.create_subscription(
            MarkerArray, topics.PLANNED_PATH, self.view.on_planned_path, LATCHED_QOS, callback_group=inputs
        )
        self._camera_subscriptions: set[str] = set()
        self.reset_client = self.create_client(ResetEpisode, topics.EPISODE_RESET)
        self.result: EndReason | None = None
        #: Set by the stop signal (or close): the episode ends as interrupted, waits that come before it give up.
        self.interrupted = ShutdownNotice(self)
        self._hosts: list[GraphEpisodeHost] = []
        self._worker = threading.Thread(target=self._work, name="episode", daemon=True)
        self._worker.start()

    def _subscribe_robot(self, robot: RobotConfig) -> None:
        self.view.joints = JointPositions(robot)
        group = MutuallyExclusiveCallbackGroup()
        for cam in robot.camera_names:
            if cam in self._camera_subscriptions:
                continue
            self._camera_subscriptions.add(cam)
            for msg_type, topic, part in (
                (Image, topics.camera_image(cam), "image"),
                (CameraInfo, topics.camera_info(cam), "info"),
                (PoseStamped, topics.camera_pose(cam), "pose"),
            ):
                self.create_subscription(msg_type, topic, self.view.on_camera(cam, part), 5, callback_group=group)

    def current_status(self, *, newer_than: str = "") -> EpisodeStatus:
        """The latest episode status (one with another episode id than ``newer_than``), waiting for it."""
        deadline = time.monotonic() + self.params.status_timeout_s * 10
        with self.view.changed:
            while (status := self.view.status) is None or status.episode_id == newer_than:
                self.check_interrupted()
                if time.monotonic() > deadline:
                    raise BackendLostError(f"no episode status on {topics.EPISODE_STATUS}: is the simulator running?")
                self.view.changed.wait(timeout=0.1)
            return status

    def check_interrupted(self) -> None:
        """Raise EpisodeInterrupted once close has asked the episode to stop."""
        if self.interrupted.is_set():
            raise EpisodeInterrupted("the agent node is shutting down (SIGINT or SIGTERM)")

    def close(self) -> None:
        """End a running episode as interrupted: no new motions, the running one cancelled (its result still arrives:
        the executor spins while close runs), the record written."""
        self.interrupted.set()
        for host in self._hosts:
            host.motion.stop()
        self._worker.join(timeout=EPISODE_STOP_S)
        if self._worker.is_alive():
            self.get_logger().error(f"the episode did not end within {EPISODE_STOP_S:.0f} s of the interruption")

    def destroy_node(self) -> None:
        # Here, not in close: the executor, which waits on the action clients, has stopped by now.
        for host in self._hosts:
            host.motion.client.destroy()
        super().destroy_node()

    def _wait_for_robot(self, robot: RobotConfig) -> None:
        """Wait until every arm's joints and every camera's first frame arrived (new subscriptions need discovery)."""
        timeout = self.params.status_timeout_s * 5
        deadline = time.monotonic() + timeout
        joints = self.view.joints
        assert joints is not None
        with self.view.changed:
            while True:
                missing = [f"{a} arm joints" for a in robot.arm_names if joints.arm_q(a) is None]
                missing += [f"camera {c}" for c in robot.camera_names if self.view.frame(c, -math.inf) is None]
                if not missing:
                    return
                self.check_interrupted()
                if time.monotonic() > deadline:
                    raise BackendLostError(f"nothing received within {timeout:.0f} s for: {', '.join(missing)}")
                self.view.changed.wait(timeout=0.1)

    def _reset(self) -> None:
        timeout = self.params.reset_timeout_s
        deadline = time.monotonic() + timeout
        # In short waits, so that an interruption is noticed (wait_for_service itself cannot be interrupted)
        while not self.reset_client.wait_for_service(timeout_sec=0.2):
            self.check_interrupted()
            if time.monotonic() > deadline:
                raise BackendLostError(f"no {topics.EPISODE_RESET} service: is the simulator running?")
        old = self.view.status.episode_id if self.view.status else ""
        request = ResetEpisode.Request(task=self.spec.task, variant=self.spec.variant, seed=self.spec.seed)
        response = wait_for(
            self.reset_client.call_async(request), timeout, "the episode reset", interrupted=self.interrupted
        )
        if not response.success:
            raise ConfigError(f"the simulator refused the reset: {response.message}")
        self.current_status(newer_than=old)

    def _serve_mcp(self, spec: EpisodeSpec, host: GraphEpisodeHost) -> int:
        """Serve the graph's episode to one MCP client over streamable HTTP (robodojo mcp's server, this graph's
        host); the exit code."""
        p = self.params
        plan = McpPlan(spec, p.mcp_tools, "http", Path(p.out), port=p.mcp_port, clock=self.clock)
        self.get_logger().info(f"serving {spec.task} seed {spec.seed} to one MCP client ({p.mcp_tools} tools)")
        result = serve_episode(plan, open_host=lambda robot: nullcontext(host), interrupted=self.interrupted)
        if result is None:
            self.get_logger().info("no episode ran: no MCP client came, or the node is shutting down")
            return 0
        return self._ended(spec, result, f"{result.llm_calls} calls of the MCP client")

    @property
    def agent_options(self) -> dict[str, Any]:
        """make_agent's options from the parameters (empty or 0: the agent's own configuration)."""
        p = self.params
        return {"images": p.images or None, "context_tokens": p.context_tokens or None}

    def _work(self) -> None:
        code = 1
        try:
            if self.params.reset:
                self._reset()
            status = self.current_status()
            # The record names the episode the simulator runs (without a reset it may not be the one in the params).
            spec = EpisodeSpec(status.task, status.seed, status.variant, self.params.llm_call_budget)
            robot = load_robot_config(status.robot)
            self._subscribe_robot(robot)
            self._wait_for_robot(robot)
            host = GraphEpisodeHost(self, robot)
            self._hosts.append(host)
            code = self._serve_mcp(spec, host) if self.params.agent == MCP_AGENT else self._run_agent(spec, host)
        except EpisodeInterrupted:
            self.get_logger().info("episode not started: the node is shutting down")
            code = 0
        except RobodojoError as exc:
            self.get_logger().error(f"episode not run: {exc}")
        except Exception:
            self.get_logger().error(f"episode crashed:\n{traceback.format_exc()}")
        if self.params.exit_when_done:
            self.finish(code)

    def _run_agent(self, spec: EpisodeSpec, host: GraphEpisodeHost) -> int:
        """Run the agent's episode with its model; the exit code."""
        with open_llm(
            self.params.llm,
            base_url=self.params.base_url or None,
            settings=self.llm_settings,
            tool_choice=self.params.tool_choice,
        ) as llm:
            agent = make_agent(self.params.agent, **self.agent_options, reply_reserve_tokens=llm.max_output_tokens)
            try:
                result = run_episode(host, agent, llm, spec, Path(self.params.out), model=llm.model, clock=self.clock)
            finally:
                getattr(agent, "close", lambda: None)()
        return self._ended(spec, result, f"{result.llm_calls} LLM calls")

    def _ended(self, spec: EpisodeSpec, result: EpisodeResult, calls: str) -> int:
        """Log the episode's outcome; the node's exit code (3: the backend went away or the episode crashed)."""
        self.result = result.end_reason
        self.get_logger().info(
            f"episode {spec.task} seed {spec.seed}: {'success' if result.success else 'no success'}, "
            f"score {result.score:.2f}, ended by {result.end_reason.value}, {calls}, "
            f"{result.steps_used} steps; record in {result.folder}"
        )
        return 0 if result.end_reason not in (EndReason.CRASHED, EndReason.BACKEND_LOST) else 3


def main() -> int:
    # One executor thread: the action client must send from it (call_in_executor); the episode has its own thread.
    return run_node(AgentNode, NODE_NAME, threads=1)


if __name__ == "__main__":
    sys.exit(main())
