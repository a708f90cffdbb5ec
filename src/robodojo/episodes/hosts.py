"""Where an episode runs: the :class:`EpisodeHost` protocol, and :class:`WorldHost` for the embedded world.

A host starts the episode and answers the benchmark's questions (success, score, steps) from ground truth the agent
never sees. What the agent gets is an :class:`~robodojo.agents.base.EpisodeContext` built on the world's agent-side
backend (:class:`~robodojo.sim.agent_side.AgentSideBackend`), so nothing handed to an agent leads to the simulator.
The ROS agent node's host (robodojo.nodes.agent_graph) follows a simulator elsewhere on the graph.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

from robodojo.agents.base import EpisodeContext
from robodojo.episodes.clock import STEP_ROUNDING_S
from robodojo.episodes.recorder import StepSeen
from robodojo.episodes.spec import DEFAULT_LLM_CALL_BUDGET, EpisodeSpec
from robodojo.errors import RobodojoError
from robodojo.motion.server import MotionServer
from robodojo.observation import Observation
from robodojo.robots.config import RobotConfig
from robodojo.sim.agent_side import AgentSideBackend
from robodojo.sim.privileged import PrivilegedView
from robodojo.sim.world import EmbeddedWorld


def episode_context(world: EmbeddedWorld, *, llm_call_budget: int = DEFAULT_LLM_CALL_BUDGET) -> EpisodeContext:
    """What an agent gets for the task loaded in ``world`` (after ``reset``): its agent-side backend, a motion server
    on that backend, the task's texts and the benchmark's done signal."""
    if world.task is None:
        raise RobodojoError("no task loaded; call world.reset(task, seed) first")
    backend = AgentSideBackend(world)
    return EpisodeContext(
        task=world.task.name,
        instruction=world.instruction,
        recipe=world.task.recipe_text(),
        robot=world.robot,
        backend=backend,
        motion=MotionServer(backend),
        is_success=world.privileged().success,
        llm_call_budget=llm_call_budget,
        has_depth=True,  # AgentSideBackend.observe(depth=True): the embedded world renders depth for every camera
    )


class EpisodeHost(Protocol):
    """Where an episode runs: starts it, and answers the benchmark's questions about it while it runs."""

    robot: RobotConfig

    def start(self, spec: EpisodeSpec) -> EpisodeContext:
        """Begin the episode ``spec`` names (a reset, or joining one that runs) and give the agent its context."""
        ...

    def check(self) -> None:
        """Raise BackendLostError when the robot backend is gone or restarted (never for the embedded world), and
        EpisodeInterrupted when the episode was asked to stop from outside (the ROS agent node shutting down)."""
        ...

    def success(self) -> bool: ...

    def score(self) -> float: ...

    @property
    def steps_used(self) -> int: ...

    @property
    def steps_left(self) -> int: ...

    @property
    def step_limit(self) -> int: ...

    def state(self) -> Observation:
        """The agent-side state without images, for the record after each turn."""
        ...

    @property
    def world_time_s(self) -> float:
        """The world's (simulated) time now [s]: what the episode's clock (robodojo.episodes.clock) measures by."""
        ...

    def let_time_pass(self, seconds: float) -> float:
        """Let ``seconds`` of world time pass with every arm holding its current command and no step of the budget
        used (a model call's latency, robodojo.episodes.clock); the world time that passed [s]."""
        ...


class WorldHost:
    """The embedded world in this process; success and score come from its privileged view."""

    def __init__(self, world: EmbeddedWorld) -> None:
        self.world = world
        self.robot = world.robot
        self._truth: PrivilegedView | None = None

    def start(self, spec: EpisodeSpec) -> EpisodeContext:
        self.world.reset(spec.task, seed=spec.seed, variant=spec.variant)
        self._truth = self.world.privileged()
        return episode_context(self.world, llm_call_budget=spec.llm_call_budget)

    def check(self) -> None:
        pass

    def success(self) -> bool:
        return self._ground_truth().success()

    def score(self) -> float:
        return self._ground_truth().score()

    @property
    def steps_used(self) -> int:
        return self.world.step_count

    @property
    def steps_left(self) -> int:
        return self.world.steps_left

    @property
    def step_limit(self) -> int:
        assert self.world.task is not None
        return self.world.step_limit

    def state(self) -> Observation:
        return self.world.observe(cameras=())

    @property
    def world_time_s(self) -> float:
        return float(self.world.data.time)

    def let_time_pass(self, seconds: float) -> float:
        """Whole control steps of ``seconds`` (the rest is the clock's to carry to the next call), each uncounted: the
        arms keep their commands, as a trajectory controller holds between trajectories, objects roll and belts run,
        and the step budget is untouched (time, not an action). The time that passed [s]."""
        dt = self.world.control_dt_s
        steps = math.floor(max(0.0, seconds) / dt + STEP_ROUNDING_S / dt)
        for _ in range(steps):
            self.world.step(counted=False)
        return steps * dt

    def follow_steps(self, seen: StepSeen, camera_every_steps: int = 0) -> Callable[[], None]:
        """``seen`` gets the state after every counted control step, with every camera's frame each
        ``camera_every_steps`` steps (0: never); call the result to stop."""
        cameras = self.robot.camera_names

        def observer(world: EmbeddedWorld) -> None:
            frames = camera_every_steps > 0 and world.step_count % camera_every_steps == 0
            seen(world.observe(cameras=cameras if frames else ()))

        self.world.step_observers.append(observer)
        return lambda: self.world.step_observers.remove(observer) if observer in self.world.step_observers else None

    def _ground_truth(self) -> PrivilegedView:
        if self._truth is None:
            raise RobodojoError("the episode has not started; call start(spec) first")
        return self._truth
