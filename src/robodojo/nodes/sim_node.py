"""The simulator node: the embedded MuJoCo world as a robot on the ROS graph, in real time.

Publishes /clock (simulation time; other nodes run with use_sim_time), /joint_states after every physics slice
(100 Hz), each arm's grasp-point pose, every camera's CameraInfo and optical-frame pose at camera_rate_hz with its
image when someone subscribes to it (an image nobody reads is not rendered), and the episode status. Accepts joint
trajectories on the joint_trajectory_controller topics of each arm and gripper and plays them one point per 25 Hz
control step; each step that plays a point uses one step of the episode's budget, time between motions does not. The
/episode/reset service starts a new episode.

Images are rendered by a worker thread from scenes the loop captures (robodojo.sim.render_worker): a slow render
lowers the camera rate, never the control rate; an image, its CameraInfo and its pose carry the stamp of the captured
instant and are published together. /diagnostics reports the images rendered and the captures dropped per window.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import fields

from agent_bringup.msg import EpisodeStatus, TrajectoryLease, TrajectoryStatus
from agent_bringup.srv import ResetEpisode
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from robodojo.control.pacing import Pacer, RateMeter
from robodojo.control.trajectory_controller import Lease
from robodojo.errors import RobodojoError
from robodojo.geometry import matrix_from_quat, transform
from robodojo.log_limits import RefusalLog
from robodojo.nodes import convert, topics
from robodojo.nodes.camera_topics import CameraTopics
from robodojo.nodes.parameters import SimNodeParams
from robodojo.nodes.params import declare_parameters
from robodojo.nodes.runtime import LATCHED_QOS, GraphNode, run_node
from robodojo.sim.controlled_world import ARM, GRIPPER, ControlledWorld, EpisodeState
from robodojo.sim.render_worker import RenderedFrame, RenderWorker, camera_shots
from robodojo.text import quote

NODE_NAME = "sim_node"
STATE_QOS = QoSProfile(depth=10)
IMAGE_QOS = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
REPORT_QOS = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)  # every end reaches its commander
RTF_WINDOW_S = 1.0  # wall time over which the real-time factor is measured and reported on /diagnostics
RTF_WARN_RATIO = 0.9  # below this fraction of real_time_factor, the diagnostic is a warning
RENDER_ERROR_LOG_PERIOD_S = 10.0  # a failing camera logs at most one line per this period
SETUP_POLL_S = 0.01  # the loop thread waits this long between looks for its setup call


class SimNode(GraphNode):
    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        p = declare_parameters(self, SimNodeParams)
        self.params = p
        # The world lives in the loop thread, and so does its GL context (EGL contexts are bound to the thread that
        # made them current; a reset's first observation renders there). Camera images have a GL context of their
        # own, in the render worker's thread.
        self._calls: queue.Queue[tuple[Callable[[], object], Future]] = queue.Queue()
        self._trajectories: queue.Queue[tuple[str, str, JointTrajectory | str] | TrajectoryLease] = queue.Queue()
        self._running = True
        self._refusals = RefusalLog("nothing moves")
        self._thread = threading.Thread(target=self._loop, name="sim_loop", daemon=True)
        started: Future = Future()
        self._thread.start()
        self._calls.put((lambda: self._setup(p), started))
        started.result()  # re-raises a bad robot, task or seed here, so the node exits with the message
        self.create_service(ResetEpisode, topics.EPISODE_RESET, self._on_reset)
        self.get_logger().info(
            f"{self.robot.name}: task {p.task} ({p.variant}, seed {p.seed}), "
            f"real-time factor {p.real_time_factor}, cameras at {p.camera_rate_hz} Hz"
        )

    def _setup(self, p: SimNodeParams) -> None:
        """Build the world, its controllers and publishers (in the loop thread)."""
        self.sim = ControlledWorld(
            p.robot, p.task, p.variant, p.seed, topics.controller_names, joint_state_slices=p.joint_state_slices
        )
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
        self.create_subscription(TrajectoryLease, topics.MOTION_LEASE, self._trajectories.put, 10)

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

    # -- episode ------------------------------------------------------------------------------------------------
    def _on_reset(self, request: ResetEpisode.Request, response: ResetEpisode.Response) -> ResetEpisode.Response:
        def reset() -> None:
            self.sim.reset(request.task, request.variant, request.seed)
            self._publish_status(force=True)

        done: Future = Future()
        self._calls.put((reset, done))
        try:
            done.result()
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
                self._trajectories.put((arm, kind, why))
                return
            try:
                msg = deserialize_message(data, JointTrajectory)
            except Exception as exc:  # a malformed CDR payload: refused like any bad trajectory
                self._trajectories.put((arm, kind, f"the message could not be read: {quote(str(exc))}"))
                return
            self._trajectories.put((arm, kind, msg))

        return callback

    def _take_trajectories(self) -> None:
        """Hand the trajectories and leases that arrived since the last tick to their controllers (in the loop
        thread, so a busy loop never keeps a callback waiting for the lock)."""
        while not self._trajectories.empty():
            item = self._trajectories.get_nowait()
            if isinstance(item, TrajectoryLease):
                self.sim.renew(Lease(convert.seconds(item.start), convert.seconds(item.sent), item.timeout_s))
            else:
                self._submit(*item)

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

    # -- the real-time loop -------------------------------------------------------------------------------------
    def _run_calls(self) -> None:
        """Run what other threads asked of the world (setup, resets), passing results or errors back."""
        while not self._calls.empty():
            fn, future = self._calls.get_nowait()
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

    def _loop(self) -> None:
        while self._running and not hasattr(self, "render_worker"):
            self._run_calls()  # setup first; it may fail, and then the node ends
            time.sleep(SETUP_POLL_S)
        sim = self.sim
        camera_period = 1.0 / self.params.camera_rate_hz
        status_period = 1.0 / self.params.status_rate_hz
        now = sim.now_s
        pacer = Pacer(sim.control_dt_s, start_s=now, time_scale=self.params.real_time_factor)
        rtf = RateMeter(RTF_WINDOW_S, now)
        next_camera, next_status = now, now
        self._render_stats0 = self.render_worker.stats
        while self._running:
            try:
                self._run_calls()
                self._take_trajectories()
                problem = sim.step(self._publish_joint_state)
                # Two call sites: rclpy's logger refuses a second severity from one line.
                if problem is not None and problem.error:
                    self.get_logger().error(f"{problem.text}: trajectories stopped, arms hold")
                elif problem is not None:
                    self.get_logger().warning(f"{problem.text}: trajectories stopped, arms hold")
                now = sim.now_s
                self._publish_tcp(now)
                for report in sim.reports(holding_too=now >= next_status):
                    self.status_pubs[report.controller].publish(
                        convert.trajectory_status_msg(TrajectoryStatus, report, now)
                    )
                self._publish_status(force=now >= next_status)
                if now >= next_status:
                    next_status = now + status_period
                measured = rtf.update(now)
                if measured is not None:
                    self._publish_real_time_factor(measured, self.params.real_time_factor)
                    for line in self._refusals.summaries():
                        self.get_logger().error(line)
                if now + 1e-9 >= next_camera:
                    self._publish_cameras(now)
                    next_camera += camera_period
                    if next_camera < now:  # fell behind: skip rather than burst
                        next_camera = now + camera_period
            except Exception:  # the loop is the robot: log and go on, unless shutting down
                if not self.context.ok():
                    return
                self.get_logger().error(f"simulation step failed:\n{traceback.format_exc()}")
                now = sim.now_s
            pacer.wait(now)  # more than a few steps late: it runs slower than real time instead of catching up

    # -- publishing ---------------------------------------------------------------------------------------------
    def _publish_real_time_factor(self, measured: float, target: float) -> None:
        """The real-time factor over the last RTF_WINDOW_S on /diagnostics; a slow simulator keeps simulated time
        consistent (it runs slower rather than skipping steps) and says so here."""
        slow = measured < RTF_WARN_RATIO * target
        if slow:
            self.get_logger().warning(
                f"simulating at {measured:.2f}x real time (target {target:g}x): the machine is too busy; simulated "
                "time stays consistent, motions take longer in wall time",
                throttle_duration_sec=30.0,
            )
        status = convert.diagnostic_status(
            DiagnosticStatus.WARN if slow else DiagnosticStatus.OK,
            f"{NODE_NAME}: real-time factor",
            f"running at {measured:.2f}x real time" + (f" (target {target:g}x)" if slow else ""),
            self.robot.name,
            {"real_time_factor": f"{measured:.3f}", "target": f"{target:g}", **self._camera_figures()},
        )
        self.diagnostics_pub.publish(convert.diagnostic_array(self.sim.now_s, [status]))

    def _camera_figures(self) -> dict[str, int]:
        """Images rendered and captures dropped (the render worker could not keep up) since the last report."""
        stats, before = self.render_worker.stats, self._render_stats0
        self._render_stats0 = stats
        return {
            "camera_images": stats.images - before.images,
            "camera_captures_dropped": stats.dropped - before.dropped,
        }

    def _publish_joint_state(self) -> None:
        t = self.sim.now_s
        self.clock_pub.publish(Clock(clock=convert.time_msg(t)))
        self.joint_pub.publish(convert.joint_state_msg(*self.sim.joint_state(), t))

    def _publish_tcp(self, t: float) -> None:
        for arm in self.robot.arm_names:
            s = self.world.arm_state(arm)
            T = transform(matrix_from_quat(s.tcp_quat_wxyz), s.tcp_pos_m)
            self.tcp_pubs[arm].publish(convert.pose_stamped(T, t, topics.WORLD_FRAME))

    def _publish_cameras(self, t: float) -> None:
        """Capture the cameras someone reads images of, for the render worker (it publishes their image, info and
        pose together when the image is ready); publish the others' info and pose now."""
        watched = []
        for name, out in self.camera_topics.items():
            if out.watched:  # an image nobody reads is not rendered
                watched.append(name)
            else:
                out.publish_calibration(self.world.calibration(name), t)
        self.render_worker.capture(self.world.model, self.world.data, t, camera_shots(self.world, watched))

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
        self.status_pub.publish(
            EpisodeStatus(
                header=convert.header(self.sim.now_s, topics.WORLD_FRAME), robot=self.robot.name,
                **{f.name: getattr(state, f.name) for f in fields(EpisodeState)},
            )
        )  # fmt: skip

    def close(self) -> None:
        self._running = False
        self._thread.join(timeout=2.0)  # one control tick, normally; the node's way out stays below launch's 5 s
        if hasattr(self, "render_worker") and not self.render_worker.close():
            self.get_logger().warning("the render worker was still publishing an image at close")
        if hasattr(self, "sim"):
            self.sim.close()


def main() -> int:
    # One executor thread: its callbacks only queue work for the simulation thread, and rclpy's multi-threaded
    # executor costs far more per message (under a 100 Hz flood it took the simulator to 0.37x real time; flood.py).
    return run_node(SimNode, NODE_NAME, threads=1)


if __name__ == "__main__":
    sys.exit(main())
