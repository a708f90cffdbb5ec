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
import re
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
from agent_bringup.msg import EpisodeStatus, TrajectoryLease, TrajectoryStatus
from agent_bringup.srv import ResetEpisode
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, JointState
from trajectory_msgs.msg import JointTrajectory

from robodojo.control.settings import load_trajectory_limits
from robodojo.control.trajectory_controller import Lease, TrajectoryController, TrajectoryReport, TrajectoryState
from robodojo.control.trajectory_player import JointLimit, TrajectoryPlayer
from robodojo.errors import ConfigError, InvalidCommandError, RobodojoError
from robodojo.geometry import matrix_from_quat, transform
from robodojo.log_limits import RepeatLimiter
from robodojo.nodes import convert, topics
from robodojo.nodes.parameters import SimNodeParams
from robodojo.nodes.params import declare_parameters
from robodojo.nodes.runtime import LATCHED_QOS, GraphNode, run_node
from robodojo.sim.render_worker import RenderedFrame, RenderWorker, camera_shots
from robodojo.sim.world import VELOCITY_MARGIN, EmbeddedWorld
from robodojo.text import quote

NODE_NAME = "sim_node"
STATE_QOS = QoSProfile(depth=10)
IMAGE_QOS = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
REPORT_QOS = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)  # every end reaches its commander
RTF_WINDOW_S = 1.0  # wall time over which the real-time factor is measured and reported on /diagnostics
RTF_WARN_RATIO = 0.9  # below this fraction of real_time_factor, the diagnostic is a warning
RENDER_ERROR_LOG_PERIOD_S = 10.0  # a failing camera logs at most one line per this period
REFUSAL_KIND_CHARS = 80  # refusals whose reasons agree this far (numbers aside) are one kind for the log limiter
_NUMBER = re.compile(r"[-+]?\d[\d.]*(?:e[-+]?\d+)?")


def max_trajectory_bytes(points: int, joints: int) -> int:
    """The largest serialised JointTrajectory a controller reads: ``points`` points of ``joints`` joints, each with
    positions, velocities, accelerations and efforts (8-byte floats), plus the header and joint names."""
    per_point = 4 * 4 + 8 + 4 * 8 * joints  # four sequence lengths, time_from_start, four float64 per joint
    return 4096 + 256 * joints + points * per_point


@dataclass
class ArmControllers:
    arm: str
    joints: TrajectoryController
    gripper: TrajectoryController
    gripper_max_m: float

    def both(self) -> tuple[TrajectoryController, TrajectoryController]:
        return self.joints, self.gripper


class SimNode(GraphNode):
    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        p = declare_parameters(self, SimNodeParams)
        self.params = p
        # The world lives in the loop thread, and so does its GL context (EGL contexts are bound to the thread that
        # made them current; a reset's first observation renders there). Camera images have a GL context of their
        # own, in the render worker's thread.
        self._calls: queue.Queue[tuple[Callable[[], object], Future]] = queue.Queue()
        self._trajectories: queue.Queue[tuple[str, str, JointTrajectory] | TrajectoryLease] = queue.Queue()
        self._running = True
        self.trajectory_limits = load_trajectory_limits()
        self._log_limit = RepeatLimiter()
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
        self.world = EmbeddedWorld(p.robot)
        self.robot = self.world.robot
        substeps, slices = self.world.substeps, p.joint_state_slices
        if slices < 1 or substeps % slices:
            raise ConfigError(
                f"parameter 'joint_state_slices' must divide the {substeps} physics steps of a control step, "
                f"got {slices}"
            )
        self._reset(p.task, p.variant, p.seed)
        limits = {name: JointLimit(*limit) for name, limit in self.world.joint_limits.items()}
        self.controllers: dict[str, ArmControllers] = {}
        self.status_pubs = {}
        for arm in self.robot.arms:
            self.controllers[arm.name] = ArmControllers(
                arm.name,
                TrajectoryController(
                    topics.arm_controller_name(arm.name), TrajectoryPlayer(arm.joints, limits, VELOCITY_MARGIN)
                ),
                TrajectoryController(
                    topics.gripper_controller_name(arm.name),
                    TrajectoryPlayer((arm.gripper_joint,), limits, VELOCITY_MARGIN),
                ),
                arm.gripper_max_m,
            )
            for c in self.controllers[arm.name].both():
                self.status_pubs[c.name] = self.create_publisher(
                    TrajectoryStatus, topics.trajectory_status(c.name), REPORT_QOS
                )
            for kind, topic in (
                ("arm", topics.arm_controller(arm.name)),
                ("gripper", topics.gripper_controller(arm.name)),
            ):
                # raw: an oversized message is refused on its byte count, before rclpy builds its Python objects
                self.create_subscription(JointTrajectory, topic, self._on_trajectory(arm.name, kind), 10, raw=True)
        self.create_subscription(TrajectoryLease, topics.MOTION_LEASE, self._trajectories.put, 10)
        self._joint_names = [j for a in self.robot.arms for j in (*a.joints, a.gripper_joint)]
        m = self.world.model
        self._qpos_adr = np.array([m.joint(j).qposadr[0] for j in self._joint_names])
        self._dof_adr = np.array([m.joint(j).dofadr[0] for j in self._joint_names])

        self.clock_pub = self.create_publisher(Clock, topics.CLOCK, STATE_QOS)
        self.joint_pub = self.create_publisher(JointState, topics.JOINT_STATES, STATE_QOS)
        self.status_pub = self.create_publisher(EpisodeStatus, topics.EPISODE_STATUS, LATCHED_QOS)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, STATE_QOS)
        self.tcp_pubs = {
            a: self.create_publisher(PoseStamped, topics.tcp_pose(a), STATE_QOS) for a in self.robot.arm_names
        }
        self.camera_pubs = {
            c.name: (
                self.create_publisher(Image, topics.camera_image(c.name), IMAGE_QOS),
                self.create_publisher(CameraInfo, topics.camera_info(c.name), IMAGE_QOS),
                self.create_publisher(PoseStamped, topics.camera_pose(c.name), IMAGE_QOS),
            )
            for c in self.robot.cameras
        }
        self.render_worker = RenderWorker(
            self.world.settings.render, self._publish_frame, self._on_render_error, name="sim_render"
        )

    # -- episode ------------------------------------------------------------------------------------------------
    @property
    def now_s(self) -> float:
        """Simulation time on the graph: it keeps counting across resets, so /clock never runs backwards."""
        return self._time_offset_s + self.world.data.time

    def _reset(self, task: str, variant: str, seed: int) -> None:
        before = self.now_s if hasattr(self, "_time_offset_s") else 0.0
        self.world.reset(task, seed=seed, variant=variant or "standard")
        # the new episode's time 0 continues one control period after the old episode's last step
        self._time_offset_s = before + self.world.control_dt_s - self.world.data.time
        self.truth = self.world.privileged()
        self.episode_id = uuid.uuid4().hex[:12]
        self.episode = (task, variant or "standard", seed)
        self._last_status: tuple | None = None

    def _on_reset(self, request: ResetEpisode.Request, response: ResetEpisode.Response) -> ResetEpisode.Response:
        def reset() -> None:
            self._stop_all(TrajectoryState.STOPPED, "a new episode started")
            self._reset(request.task, request.variant, request.seed)
            self._publish_status(force=True)

        done: Future = Future()
        self._calls.put((reset, done))
        try:
            done.result()
        except RobodojoError as exc:
            response.success, response.message = False, str(exc)
            self.get_logger().error(f"reset refused, the episode goes on: {exc}")
            return response
        response.success, response.episode_id = True, self.episode_id
        response.instruction = self.world.instruction
        self.get_logger().info(f"reset: {request.task} seed {request.seed} -> episode {self.episode_id}")
        return response

    # -- commands -----------------------------------------------------------------------------------------------
    def _on_trajectory(self, arm: str, kind: str):
        """A controller topic's callback: size-check and deserialise here, validate in the loop thread."""
        joints = len(self.robot.arm(arm).joints) if kind == "arm" else 1
        max_bytes = max_trajectory_bytes(self.trajectory_limits.max_points(self.world.control_dt_s), joints)

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
                lease = Lease(convert.seconds(item.start), convert.seconds(item.sent), item.timeout_s)
                for arm_controllers in self.controllers.values():
                    for controller in arm_controllers.both():
                        controller.renew(lease)
                continue
            arm, kind, msg = item
            c = self.controllers[arm]
            if kind == "arm":
                commanded = self.world.data.ctrl[self.world.arm_ctrl_ids[arm]]
                self._submit(c.joints, msg, commanded, f"{arm} arm")
            else:
                commanded = [self.world.data.ctrl[self.world.gripper_ctrl_ids[arm]]]
                self._submit(c.gripper, msg, commanded, f"{arm} gripper")

    def _submit(self, controller: TrajectoryController, msg: JointTrajectory | str, commanded, what: str) -> None:
        """Hand a trajectory to its controller; a refusal is reported on its status topic and logged, repeats of it
        summarised (a flood of bad messages costs one line per controller per window, not one per message)."""
        try:
            if isinstance(msg, str):
                controller.refuse(0.0, 0, msg)
                raise InvalidCommandError(msg)
            start_s = convert.seconds(msg.header.stamp)
            controller.check_sizes(msg.joint_names, len(msg.points), self.world.control_dt_s, start_s)
            cmd = convert.trajectory_command(msg)
            controller.submit(cmd, self.now_s, commanded, self.world.control_dt_s)
        except RobodojoError as exc:
            kind = _NUMBER.sub("#", str(exc))[:REFUSAL_KIND_CHARS]  # repeats differ in their numbers only
            line = self._log_limit.message((what, kind), f"{what} trajectory refused, nothing moves: {exc}")
            if line is not None:
                self.get_logger().error(line)
            return
        if cmd.positions and 0.0 < cmd.start_s < self.now_s - 1e-6:
            self.get_logger().warning(
                f"{what} trajectory arrived {self.now_s - cmd.start_s:.3f} s after its start time; it starts now"
            )
        elif cmd.positions:
            self.get_logger().info(
                f"{what}: {len(cmd.positions)} points from t={cmd.start_s:.3f} s (now {self.now_s:.3f} s)"
            )

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
        while self._running and not hasattr(self, "controllers"):
            self._run_calls()  # setup first; it may fail, and then the node ends
            time.sleep(0.01)
        dt = self.world.control_dt_s
        rtf = self.params.real_time_factor
        camera_period = 1.0 / self.params.camera_rate_hz
        status_period = 1.0 / self.params.status_rate_hz
        slices = self.params.joint_state_slices
        wall0, sim0 = time.monotonic(), self.now_s
        next_camera, next_status = sim0, sim0
        rtf_wall0, rtf_sim0 = wall0, sim0
        self._render_stats0 = self.render_worker.stats
        while self._running:
            try:
                self._run_calls()
                self._take_trajectories()
                self._control_step(slices)
                now = self.now_s
                self._publish_tcp(now)
                self._publish_trajectory_reports(now, holding_too=now >= next_status)
                self._publish_status(force=now >= next_status)
                if now >= next_status:
                    next_status = now + status_period
                if time.monotonic() - rtf_wall0 >= RTF_WINDOW_S:
                    self._publish_real_time_factor((now - rtf_sim0) / (time.monotonic() - rtf_wall0), rtf)
                    rtf_wall0, rtf_sim0 = time.monotonic(), now
                    self._log_repeats()
                if now + 1e-9 >= next_camera:
                    self._publish_cameras(now)
                    next_camera += camera_period
                    if next_camera < now:  # fell behind: skip rather than burst
                        next_camera = now + camera_period
            except Exception:  # the loop is the robot: log and go on, unless shutting down
                if not self.context.ok():
                    return
                self.get_logger().error(f"simulation step failed:\n{traceback.format_exc()}")
                now = self.now_s
            delay = wall0 + (now - sim0) / rtf - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -5 * dt:  # more than 5 steps late: run slower than real time instead of catching up
                wall0, sim0 = time.monotonic(), now

    def _control_step(self, slices: int) -> None:
        w, dt = self.world, self.world.control_dt_s
        tick = self.now_s
        joints, grippers = {}, {}
        for arm, c in self.controllers.items():
            q = c.joints.sample(tick, dt)
            if q is not None:
                joints[arm] = q
            g = c.gripper.sample(tick, dt)
            if g is not None:
                grippers[arm] = float(np.clip(g[0] / c.gripper_max_m, 0.0, 1.0))
        counted = bool(joints or grippers)
        if counted and w.steps_left <= 0:
            self.get_logger().warning("the episode's env steps are used up: trajectories stopped, arms hold")
            self._stop_all(TrajectoryState.STOPPED, "the episode's env steps are used up")
            joints, grippers, counted = {}, {}, False
        try:
            w.step(joints, grippers, counted=counted, slices=slices, on_slice=self._publish_joint_state)
        except RobodojoError as exc:
            self.get_logger().error(f"control step refused, trajectories stopped: {exc}")
            self._stop_all(TrajectoryState.STOPPED, f"the simulator refused the control step: {exc}")
            w.hold()
            w.step(counted=False, slices=slices, on_slice=self._publish_joint_state)

    def _log_repeats(self) -> None:
        """Summarise refusals that were held back and that no later line reported (the flood stopped)."""
        for key, decision in self._log_limit.due():
            what = key[0] if isinstance(key, tuple) else key
            self.get_logger().error(
                f"{what}: {decision.suppressed} more trajectories refused in the last {decision.since_s:.1f} s "
                "(each with its reason on the controller's trajectory_status topic)"
            )

    def _stop_all(self, state: TrajectoryState, reason: str) -> None:
        for arm_controllers in self.controllers.values():
            for controller in arm_controllers.both():
                controller.stop(state, reason)

    # -- publishing ---------------------------------------------------------------------------------------------
    def _publish_trajectory_reports(self, t: float, *, holding_too: bool) -> None:
        """Every end and refusal since the last tick; the running trajectories' progress every tick; the holding
        controllers' state at the status rate (a commander confirming a stop sees it)."""
        for arm_controllers in self.controllers.values():
            for controller in arm_controllers.both():
                reports = controller.take_reports()
                if controller.playing or holding_too:
                    reports.append(controller.status())
                for report in reports:
                    self.status_pubs[controller.name].publish(self._trajectory_status(report, t))

    @staticmethod
    def _trajectory_status(report: TrajectoryReport, t: float) -> TrajectoryStatus:
        return TrajectoryStatus(
            header=convert.header(t, ""), controller=report.controller, start=convert.time_msg(report.start_s),
            state=int(report.state), points_played=report.points_played, points=report.points,
            holding=report.holding, reason=report.reason,
        )  # fmt: skip

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
        self.diagnostics_pub.publish(
            DiagnosticArray(
                header=convert.header(self.now_s, ""),
                status=[
                    DiagnosticStatus(
                        level=DiagnosticStatus.WARN if slow else DiagnosticStatus.OK,
                        name=f"{NODE_NAME}: real-time factor",
                        message=f"running at {measured:.2f}x real time" + (f" (target {target:g}x)" if slow else ""),
                        hardware_id=self.robot.name,
                        values=[
                            KeyValue(key="real_time_factor", value=f"{measured:.3f}"),
                            KeyValue(key="target", value=f"{target:g}"),
                            *self._camera_figures(),
                        ],
                    )
                ],
            )
        )

    def _camera_figures(self) -> list[KeyValue]:
        """Images rendered and captures dropped (the render worker could not keep up) since the last report."""
        stats, before = self.render_worker.stats, self._render_stats0
        self._render_stats0 = stats
        return [
            KeyValue(key="camera_images", value=str(stats.images - before.images)),
            KeyValue(key="camera_captures_dropped", value=str(stats.dropped - before.dropped)),
        ]

    def _publish_joint_state(self) -> None:
        d = self.world.data
        t = self.now_s
        self.clock_pub.publish(Clock(clock=convert.time_msg(t)))
        self.joint_pub.publish(
            convert.joint_state_msg(self._joint_names, d.qpos[self._qpos_adr], d.qvel[self._dof_adr], t)
        )

    def _publish_tcp(self, t: float) -> None:
        for arm in self.robot.arm_names:
            s = self.world.arm_state(arm)
            T = transform(matrix_from_quat(s.tcp_quat_wxyz), s.tcp_pos_m)
            self.tcp_pubs[arm].publish(convert.pose_stamped(T, t, topics.WORLD_FRAME))

    def _publish_cameras(self, t: float) -> None:
        """Capture the cameras someone reads images of, for the render worker (it publishes their image, info and
        pose together when the image is ready); publish the others' info and pose now."""
        watched = []
        for cam in self.robot.cameras:
            image_pub, info_pub, pose_pub = self.camera_pubs[cam.name]
            # Rendering costs more than a control step on a slow CPU: a camera nobody subscribes to is not drawn.
            if image_pub.get_subscription_count() > 0:
                watched.append(cam.name)
                continue
            calibration = self.world.calibration(cam.name)
            info_pub.publish(convert.camera_info_msg(calibration, t, cam.frame))
            pose_pub.publish(convert.pose_stamped(calibration.T_world_cam, t, topics.WORLD_FRAME))
        self.render_worker.capture(self.world.model, self.world.data, t, camera_shots(self.world, watched))

    def _publish_frame(self, rendered: RenderedFrame) -> None:
        """One rendered image with the CameraInfo and pose of its captured instant (in the render worker's thread)."""
        frame, t = rendered.frame, rendered.stamp_s
        cam = self.robot.camera(frame.name)
        image_pub, info_pub, pose_pub = self.camera_pubs[frame.name]
        info_pub.publish(convert.camera_info_msg(frame.calibration, t, cam.frame))
        pose_pub.publish(convert.pose_stamped(frame.calibration.T_world_cam, t, topics.WORLD_FRAME))
        image_pub.publish(convert.image_msg(frame.rgb, t, cam.frame))

    def _on_render_error(self, exc: BaseException) -> None:
        if not self.context.ok():  # shutting down: the publishers are going away
            return
        self.get_logger().error(f"camera image failed: {exc!r}", throttle_duration_sec=RENDER_ERROR_LOG_PERIOD_S)

    def _publish_status(self, *, force: bool) -> None:
        w = self.world
        key = (self.episode_id, w.step_count, self.truth.success(), round(self.truth.score(), 6))
        if not force and key == self._last_status:
            return
        self._last_status = key
        task, variant, seed = self.episode
        assert w.task is not None
        self.status_pub.publish(
            EpisodeStatus(
                header=convert.header(self.now_s, topics.WORLD_FRAME),
                episode_id=self.episode_id, robot=self.robot.name, task=task, variant=variant, seed=seed,
                instruction=w.instruction, recipe=w.task.recipe_text(), steps_used=w.step_count,
                step_limit=w.task.step_limit, steps_left=w.steps_left, success=key[2], score=float(key[3]),
            )
        )  # fmt: skip

    def close(self) -> None:
        self._running = False
        self._thread.join(timeout=2.0)  # one control tick, normally; the node's way out stays below launch's 5 s
        if hasattr(self, "render_worker") and not self.render_worker.close():
            self.get_logger().warning("the render worker was still publishing an image at close")
        if hasattr(self, "world"):
            self.world.close()


def main() -> int:
    # One executor thread: its callbacks only queue work for the simulation thread, and rclpy's multi-threaded
    # executor costs far more per message (under a 100 Hz flood it took the simulator to 0.37x real time; flood.py).
    return run_node(SimNode, NODE_NAME, threads=1)


if __name__ == "__main__":
    sys.exit(main())
