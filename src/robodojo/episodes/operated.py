"""A real robot's episode: what the simulator keeps for a simulated one, kept from the graph and the operator.

On a real robot nothing knows where the objects are, so the task gives only the text (instruction, recipe) and the
step budget; the steps are the 25 Hz trajectory points the controllers report played (as the simulator counts them:
one step per control tick in which any arm or gripper played a point); success and score come from the operator's
verdict (``robodojo judge``). The episode node publishes this as the same EpisodeStatus a simulator publishes, so
agents and records cannot tell the difference, apart from who judged.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from robodojo.control.trajectory_controller import trajectory_key
from robodojo.errors import ConfigError, InvalidCommandError
from robodojo.observation import EpisodeState
from robodojo.robots.config import RobotConfig
from robodojo.sim.tasks import get_task

#: Trajectories remembered for step counting: one motion's arm and gripper trajectories share a start stamp.
_REMEMBERED = 64


@dataclass(frozen=True)
class EpisodeText:
    """What an agent is told: the task's instruction (or the operator's free text) and recipe, and the budget."""

    task: str
    variant: str
    seed: int
    instruction: str
    recipe: str
    step_limit: int


def episode_text(
    robot: RobotConfig, task: str, variant: str, seed: int, instruction: str = "", step_limit: int = 0
) -> EpisodeText:
    """The task's text for ``robot``: its seeded instruction unless ``instruction`` is given, its step budget unless
    ``step_limit`` is > 0. ConfigError for a task of another robot or a negative limit."""
    task_cls = get_task(task)
    if task_cls.robot != robot.name:
        raise ConfigError(f"task {task!r} is for robot {task_cls.robot!r}, not {robot.name!r}")
    if step_limit < 0:
        raise ConfigError(f"step_limit must be >= 0 (0: the task's {task_cls.step_limit}), got {step_limit}")
    t = task_cls(robot.table.top_z_m)
    text = instruction.strip() or t.instruction(t.layout(seed, variant or "standard"))
    return EpisodeText(task, variant or "standard", seed, text, t.recipe_text(), step_limit or task_cls.step_limit)


@dataclass(frozen=True)
class Verdict:
    """The operator's judgement of an episode."""

    success: bool
    score: float
    note: str

    def text(self, episode_id: str) -> str:
        """One line for the log and /episode/verdict."""
        outcome = "success" if self.success else "no success"
        return f"episode {episode_id}: {outcome}, score {self.score:g}" + (f" ({self.note})" if self.note else "")


class SceneConfirmation:
    """A reset's wait for the operator to say the scene is set up again (``robodojo judge --ready``)."""

    def __init__(self) -> None:
        self._confirmed = threading.Event()
        self.waiting = False  #: a reset waits now (the task's own check pauses meanwhile)

    def confirm(self) -> bool:
        """The operator's confirmation; whether a reset was waiting for it (and now goes on)."""
        if self.waiting:
            self._confirmed.set()
        return self.waiting

    def wait(self, timeout_s: float, prompt: Callable[[], None], prompt_period_s: float) -> bool:
        """Wait up to ``timeout_s`` [s] for :meth:`confirm`, calling ``prompt`` now and every ``prompt_period_s``;
        whether it came."""
        self._confirmed.clear()
        self.waiting = True
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                prompt()
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                if self._confirmed.wait(min(prompt_period_s, left)):
                    return True
        finally:
            self.waiting = False


class OperatedEpisode:
    """One real-robot episode: its id, the steps played (from controller reports) and the operator's verdict.

    Thread-safe: reports arrive on subscription callbacks, verdicts on a service, status reads on a timer.
    """

    def __init__(self, text: EpisodeText, *, counting: bool = True) -> None:
        self.text = text
        self.episode_id = uuid.uuid4().hex[:12]
        self.verdict: Verdict | None = None
        self._counting = counting  # off while a reset homes the arms: those points are not the agent's
        self._played: dict[tuple[str, int], int] = {}  # (controller, trajectory) -> points played
        self._steps_before = 0  # steps of trajectories no longer remembered
        self._lock = threading.Lock()

    @property
    def steps_used(self) -> int:
        with self._lock:
            return self._steps()

    @property
    def steps_left(self) -> int:
        return max(0, self.text.step_limit - self.steps_used)

    def start_counting(self) -> None:
        """Count from now on (after the reset's homing)."""
        with self._lock:
            self._counting = True
            self._played.clear()

    def on_report(self, controller: str, start_s: float, points_played: int) -> bool:
        """A controller's report; True when it changed the steps used."""
        with self._lock:
            if not self._counting:
                return False
            key = (controller, trajectory_key(start_s))
            before = self._steps()
            if points_played <= self._played.get(key, 0):
                return False
            self._played[key] = points_played
            while len(self._played) > _REMEMBERED:
                oldest = next(iter(self._played))
                self._steps_before += self._trajectory_steps(oldest[1])
                for k in [k for k in self._played if k[1] == oldest[1]]:
                    del self._played[k]
            return self._steps() != before

    def judge(self, success: bool, score: float, note: str) -> Verdict:
        """Record the operator's verdict (a later one replaces it); InvalidCommandError for a score outside 0..1."""
        if math.isnan(score):
            score = 1.0 if success else 0.0
        if not 0.0 <= score <= 1.0:
            raise InvalidCommandError(f"score must be in [0, 1] (or NaN for 1 with success, 0 without), got {score}")
        if success and score != 1.0:
            raise InvalidCommandError(f"a successful episode scores 1.0, got {score}")
        self.verdict = Verdict(success, score, note)
        return self.verdict

    def state(self) -> EpisodeState:
        """What the episode status topic says of this episode now."""
        text, steps = self.text, self.steps_used
        return EpisodeState(
            self.episode_id, text.task, text.variant, text.seed, text.instruction, text.recipe, steps,
            text.step_limit, max(0, text.step_limit - steps), self.success, self.score,
        )  # fmt: skip

    @property
    def success(self) -> bool:
        return self.verdict is not None and self.verdict.success

    @property
    def score(self) -> float:
        return 0.0 if self.verdict is None else self.verdict.score

    def _trajectory_steps(self, key: int) -> int:
        """One motion's steps: the most points any of its controllers played (they play on the same ticks)."""
        return max((n for (_, k), n in self._played.items() if k == key), default=0)

    def _steps(self) -> int:
        keys = {k for _, k in self._played}
        return self._steps_before + sum(self._trajectory_steps(k) for k in keys)
