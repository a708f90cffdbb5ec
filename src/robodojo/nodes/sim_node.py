"""The simulator node: the embedded MuJoCo world as a robot on the ROS graph, in real time.

Publishes /clock (simulation time; other nodes run with use_sim_time), /joint_states after every physics slice
(100 Hz), each arm's grasp-point pose, every camera's CameraInfo and optical-frame pose at camera_rate_hz with its
image when someone subscribes to it (an image nobody reads is not rendered), and the episode status. Accepts joint
trajectories on the joint_trajectory_controller topics of each arm and gripper and plays them one point per 25 Hz
control step (robodojo.sim.sim_loop: the loop, its thread and pacing); each step that plays a point uses one step of
the episode's budget, time between motions does not. The /episode/reset service starts a new episode.

Images are rendered by a worker thread from scenes the loop captures (robodojo.sim.render_worker): a slow render
lowers the camera rate, never the control rate; an image, its CameraInfo and its pose carry the stamp of the captured
instant and are published together. /diagnostics reports the images rendered and the captures dropped per window.
"""

from __future__ import annotations

import sys

from agent_bringup.msg import EpisodeStatus, TrajectoryLease, TrajectoryStatus
from agent_bringup.srv import ResetEpisode
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from robodojo.control.trajectory_controller import Lease, TrajectoryReport
from robodojo.errors import RobodojoError
from robodojo.geometry import matrix_from_quat, transform
from robodojo.log_limits import RefusalLog
from robodojo.nodes import convert, topics
from robodojo.nodes.camera_topics import CameraTopics
from robodojo.nodes.parameters import SimNodeParams
from robodojo.nodes.params import declare_parameters
from robodojo.nodes.runtime import LATCHED_QOS, GraphNode, run_node
from robodojo.observation import EpisodeState
from robodojo.perception.calibrate.sim_board import calibration_board
from robodojo.sim.controlled_world import ARM, GRIPPER, ControlledWorld, StepProblem
from robodojo.sim.render_worker import RenderedFrame, RenderWorker, camera_shots
from robodojo.sim.sim_loop import RealTimeFactor, SimLoop, SimRates
from robodojo.text import quote

NODE_NAME = "sim_node"
STATE_QOS = QoSProfile(depth=10)
IMAGE_QOS = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
REPORT_QOS = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)  # every end reaches its commander
RENDER_ERROR_LOG_PERIOD_S = 10.0  # a failing camera logs at most one line per this period


class SimNode(GraphNode):
    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        p = declare_parameters(self, SimNodeParams)
        self.params = p
        self._refusals = RefusalLog("nothing moves")
        # The world, its publishers and its loop's outputs are made in the loop thread (the world's GL context is
        # bound to it); camera images have a GL context of their own, in the render worker's thread. A bad robot,
        # task or seed is raised here, so the node exits with the message.
        rates = SimRates(p.real_time_factor, p.camera_rate_hz, p.status_rate_hz)
        self.loop = SimLoop(lambda: self._setup(p), self, rates)
        self.create_service(ResetEpisode, topics.EPISODE_RESET, self._on_reset)
        self.get_logger().info(
            f"{self.robot.name}: task {p.task} ({p.variant}, seed {p.seed}), "
            f"real-time factor {p.real_time_factor}, cameras at {p.camera_rate_hz} Hz"
        )

    def _setup(self, p: SimNodeParams) -> ControlledWorld:
        """Build the world, its controllers and publishers (in the loop thread)."""
        extras = [calibration_board(p.robot)] if p.calibration_board else []
        self.sim = ControlledWorld(
            p.robot, p.task, p.variant, p.seed, topics.controller_names,
            joint_state_slices=p.joint_state_slices, scene_extras=extras, step_limit=p.step_limit,
        )  # fmt: skip
        self.world, self.robot = self.sim.world, self.sim.robot
        self._last_status: EpisodeState | None = None
        self.status_pubs = {}
        for arm in self.robot.arms:
            for c in self.sim.controllers[arm.name].both():
                self.status_pubs[c.name] = self.create_publisher(
                    TrajectoryStatus, topics.trajectory_status(c.name), REPORT_QOS
                )
            for kind, topic in ((ARM, topics.arm_controller(arm.name)), (GRIPPER, topics.gripper_controller(arm.name))):
                # raw: an oversized message is refused on its byte count, before rclpy builds its Python objects
                self.create_subscription(JointTrajectory, topic, self._on_trajectory(arm.name, kind), 10, raw=True)
        self.create_subscription(TrajectoryLease, topics.MOTION_LEASE, self._on_lease, 10)

        self.clock_pub = self.create_publisher(Clock, topics.CLOCK, STATE_QOS)
        self.joint_pub = self.create_publisher(JointState, topics.JOINT_STATES, STATE_QOS)
        self.status_pub = self.create_publisher(EpisodeStatus, topics.EPISODE_STATUS, LATCHED_QOS)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, STATE_QOS)
        self.tcp_pubs = {
            a: self.create_publisher(PoseStamped, topics.tcp_pose(a), STATE_QOS) for a in self.robot.arm_names
        }
        self.camera_topics = {c.name: CameraTopics(self, c.name, c.frame, IMAGE_QOS) for c in self.robot.cameras}
        self.render_worker = RenderWorker(
            self.world.settings.render, self._publish_frame, self._on_render_error, name="sim_render"
        )
        self._render_stats0 = self.render_worker.stats
        return self.sim

    # -- episode ------------------------------------------------------------------------------------------------
    def _on_reset(self, request: ResetEpisode.Request, response: ResetEpisode.Response) -> ResetEpisode.Response:
        def reset() -> None:
            self.sim.reset(request.task, request.variant, request.seed)
            self._publish_status(force=True)

        try:
            self.loop.call(reset)
        except RobodojoError as exc:
            response.success, response.message = False, str(exc)
            self.get_logger().error(f"reset refused, the episode goes on: {exc}")
            return response
        response.success, response.episode_id = True, self.sim.episode_id
        response.instruction = self.world.instruction
        self.get_logger().info(f"reset: {request.task} seed {request.seed} -> episode {self.sim.episode_id}")
        return response

    # -- commands -----------------------------------------------------------------------------------------------
    def _on_trajectory(self, arm: str, kind: str):
        """A controller topic's callback: size-check and deserialise here, validate in the loop thread."""
        max_bytes = self.sim.max_message_bytes(arm, kind)

        def callback(data: bytes) -> None:
            if len(data) > max_bytes:
                why = f"the message is {len(data) / 1e3:.0f} kB; at most {max_bytes / 1e3:.0f} kB is accepted"
                self.loop.post(lambda: self._submit(arm, kind, why))
                return
            try:
                msg = deserialize_message(data, JointTrajectory)
            except Exception as exc:  # a malformed CDR payload: refused like any bad trajectory
                why = f"the message could not be read: {quote(str(exc))}"
                self.loop.post(lambda: self._submit(arm, kind, why))
                return
            self.loop.post(lambda: self._submit(arm, kind, msg))

        return callback

    def _on_lease(self, msg: TrajectoryLease) -> None:
        lease = Lease(convert.seconds(msg.start), convert.seconds(msg.sent), msg.timeout_s)
        self.loop.post(lambda: self.sim.renew(lease))

    def _submit(self, arm: str, kind: str, msg: JointTrajectory | str) -> None:
        """Hand a trajectory to its controller; a refusal is reported on its status topic and logged, repeats of it
        summarised (a flood of bad messages costs one line per controller per window, not one per message)."""
        what = f"{arm} {kind}"
        try:
            if isinstance(msg, str):
                self.sim.refuse(arm, kind, msg)
                return
            # the sizes first: a trajectory refused on them costs no conversion of its points
            self.sim.check_sizes(arm, kind, msg.joint_names, len(msg.points), convert.seconds(msg.header.stamp))
            cmd = convert.trajectory_command(msg)
            self.sim.submit(arm, kind, cmd)
        except RobodojoError as exc:
            line = self._refusals.refused(what, exc)
            if line is not None:
                self.get_logger().error(line)
            return
        now = self.sim.now_s
        if cmd.positions and 0.0 < cmd.start_s < now - 1e-6:
            self.get_logger().warning(
                f"{what} trajectory arrived {now - cmd.start_s:.3f} s after its start time; it starts now"
            )
        elif cmd.positions:
            self.get_logger().info(f"{what}: {len(cmd.positions)} points from t={cmd.start_s:.3f} s (now {now:.3f} s)")

    # -- the loop's outputs (SimOutputs, in the loop thread) ------------------------------------------------------
    def joint_state(self) -> None:
        t = self.sim.now_s
        self.clock_pub.publish(Clock(clock=convert.time_msg(t)))
        self.joint_pub.publish(convert.joint_state_msg(*self.sim.joint_state(), t))

    def control_step(self, t_s: float, reports: list[TrajectoryReport], status_due: bool) -> None:
        self._publish_tcp(t_s)
        for report in reports:
            self.status_pubs[report.controller].publish(convert.trajectory_status_msg(TrajectoryStatus, report, t_s))
        self._publish_status(force=status_due)

    def cameras(self, t_s: float) -> None:
        """Capture the cameras someone reads images of, for the render worker (it publishes their image, info and
        pose together when the image is ready); publish the others' info and pose now."""
        watched = []
        for name, out in self.camera_topics.items():
            if out.watched:  # an image nobody reads is not rendered
                watched.append(name)
            else:
                out.publish_calibration(self.world.calibration(name), t_s)
        self.render_worker.capture(self.world.model, self.world.data, t_s, camera_shots(self.world, watched))

    def step_problem(self, problem: StepProblem) -> None:
        # Two call sites: rclpy's logger refuses a second severity from one line.
        if problem.error:
            self.get_logger().error(f"{problem.text}: trajectories stopped, arms hold")
        else:
            self.get_logger().warning(f"{problem.text}: trajectories stopped, arms hold")

    def loop_error(self, text: str) -> bool:
        if not self.context.ok():  # shutting down: the publishers are going away
            return False
        self.get_logger().error(f"simulation step failed:\n{text}")
        return True

    def real_time_factor(self, rtf: RealTimeFactor) -> None:
        """The real-time factor over the last window on /diagnostics, with the cameras' figures; a slow simulator
        keeps simulated time consistent (it runs slower rather than skipping steps) and says so. The refusals of the
        window are summarised here too."""
        if rtf.slow:
            self.get_logger().warning(
                f"simulating at {rtf.measured:.2f}x real time (target {rtf.target:g}x): the machine is too busy; "
                "simulated time stays consistent, motions take longer in wall time",
                throttle_duration_sec=30.0,
            )
        stats, before = self.render_worker.stats, self._render_stats0
        self._render_stats0 = stats
        values = {"real_time_factor": f"{rtf.measured:.3f}", "target": f"{rtf.target:g}", **stats.since(before)}
        values["freezes_settled"] = str(rtf.freezes)
        level = DiagnosticStatus.WARN if rtf.slow else DiagnosticStatus.OK
        status = convert.diagnostic_status(level, f"{NODE_NAME}: real-time factor", rtf.text, self.robot.name, values)
        self.diagnostics_pub.publish(convert.diagnostic_array(self.sim.now_s, [status]))
        for line in self._refusals.summaries():
            self.get_logger().error(line)

    # -- publishing ---------------------------------------------------------------------------------------------
    def _publish_tcp(self, t: float) -> None:
        for arm in self.robot.arm_names:
            s = self.world.arm_state(arm)
            T = transform(matrix_from_quat(s.tcp_quat_wxyz), s.tcp_pos_m)
            self.tcp_pubs[arm].publish(convert.pose_stamped(T, t, topics.WORLD_FRAME))

    def _publish_frame(self, rendered: RenderedFrame) -> None:
        """One rendered image with the CameraInfo and pose of its captured instant (in the render worker's thread)."""
        frame = rendered.frame
        self.camera_topics[frame.name].publish(frame.rgb, frame.calibration, rendered.stamp_s)

    def _on_render_error(self, exc: BaseException) -> None:
        if not self.context.ok():  # shutting down: the publishers are going away
            return
        self.get_logger().error(f"camera image failed: {exc!r}", throttle_duration_sec=RENDER_ERROR_LOG_PERIOD_S)

    def _publish_status(self, *, force: bool) -> None:
        state = self.sim.episode_state()
        if not force and state == self._last_status:
            return
        self._last_status = state
        self.status_pub.publish(convert.episode_status_msg(EpisodeStatus, state, self.robot.name, self.sim.now_s))

    def close(self) -> None:
        if not self.loop.close():
            self.get_logger().warning("the simulation loop was still in a step at close")
        if not self.render_worker.close():
            self.get_logger().warning("the render worker was still publishing an image at close")
        self.sim.close()


def main() -> int:
    # One executor thread: its callbacks only queue work for the simulation thread, and rclpy's multi-threaded
    # executor costs far more per message (under a 100 Hz flood it took the simulator to 0.37x real time; flood.py).
    return run_node(SimNode, NODE_NAME, threads=1)


if __name__ == "__main__":
    sys.exit(main())
