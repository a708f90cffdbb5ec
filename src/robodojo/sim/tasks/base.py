"""Task definitions: instruction, recipe and score ladder, step limit, seeded layouts, success and score checkers.

A task is a subclass of :class:`Task` in its own module under robodojo.sim.tasks; defining the class registers it
(``__init_subclass__``), and the package imports every module in its folder, so adding a task touches no other file.
Checkers read the world only through :class:`TaskView`, the privileged interface (object poses, contacts), which the
episode runner and tests use and agents never see.
"""

from __future__ import annotations

import math
import zlib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

import numpy as np

from robodojo.errors import ConfigError, UnknownNameError
from robodojo.robots.config import load_robot_config
from robodojo.sim.appearance import NOMINAL, Appearance, sample_appearance
from robodojo.sim.objects import BELT_KINDS, COLORS, ObjectSpec, object_rest_z
from robodojo.sim.settings import RandomizedBounds, load_sim_settings
from robodojo.sim.variants import VARIANTS

# The capability axes tasks are grouped by (seed 002's leaderboard reports a value per axis and their unweighted mean):
# open: a choice conditioned on language or a picture (which object, which bin, which button); precise: tight contact
# (insertion, alignment, stacking); bimanual: both arms on one goal (a handover, a long object, holding while the other
# acts); dynamic: objects that move or are moved without a grasp (pushing, sweeping, rolling, a conveyor);
# long_horizon: several steps in order, or recalling a layout that changed.
CAPABILITIES = ("open", "precise", "bimanual", "dynamic", "long_horizon")
CLUTTER_DISTRACTORS = 10
MIN_GAP_M = 0.02  # free space between sampled object footprints
# Second word of the appearance generator's seed: a stream of its own, apart from the layouts' (variant indices), so
# the randomized variant's objects are exactly the standard layout's.
APPEARANCE_STREAM = 1000


@dataclass(frozen=True)
class LayoutChange:
    """The object ``name`` moved to ``pos_m`` (yaw ``yaw_rad``, at rest) once the episode has used ``at_step`` env
    steps: the layout an agent saw is changed under it, as a person moving things would (memory tasks)."""

    at_step: int
    name: str
    pos_m: tuple[float, float, float]
    yaw_rad: float = 0.0


@dataclass(frozen=True)
class Layout:
    """A seeded task instance: objects at rest (some launched with a velocity, see ObjectSpec.velocity_m_s), the
    values that fill the instruction's slots, the variant, how the scene looks (nominal except in the randomized
    variant) and the changes made to it mid-episode."""

    task: str
    seed: int
    variant: str
    objects: tuple[ObjectSpec, ...]
    slots: Mapping[str, str] = field(default_factory=dict)
    appearance: Appearance = NOMINAL
    changes: tuple[LayoutChange, ...] = ()

    def object(self, name: str) -> ObjectSpec:
        for obj in self.objects:
            if obj.name == name:
                return obj
        raise UnknownNameError("object", name, [o.name for o in self.objects])


class TaskView(Protocol):
    """Privileged read access to the world for checkers (implemented by robodojo.sim.privileged).
    ``changes_made``: how many of the layout's changes the world has made so far."""

    table_z_m: float
    arm_names: tuple[str, ...]

    @property
    def changes_made(self) -> int: ...

    def object_pos(self, name: str) -> np.ndarray: ...
    def object_quat(self, name: str) -> np.ndarray: ...
    def object_speed(self, name: str) -> float: ...
    def initial_pos(self, name: str) -> np.ndarray: ...
    def tcp_pos(self, arm: str) -> np.ndarray: ...
    def gripper_opening(self, arm: str) -> float: ...
    def touching_gripper(self, name: str, arm: str) -> bool: ...
    def touching_table(self, name: str) -> bool: ...


class GoalWriter(Protocol):
    """Privileged write access used to put a task into its goal state (tests only). ``make_changes`` makes the
    layout's pending changes at once, as the world does when their step comes."""

    table_z_m: float

    def make_changes(self) -> None: ...

    def set_object_pose(self, name: str, pos: Sequence[float], quat: Sequence[float] = (1, 0, 0, 0)) -> None: ...
    def set_gripper_opening(self, arm: str, opening: float) -> None: ...
    def tcp_pos(self, arm: str) -> np.ndarray: ...


@dataclass(frozen=True)
class Workspace:
    """Region of the table where task objects are placed, reachable by the arms."""

    x_m: tuple[float, float]
    y_m: tuple[float, float]


@dataclass(frozen=True)
class HeldAndLifted:
    """A success a real robot can see for itself, without knowing where objects are: the gripper of ``arm`` stopped
    closing on something between ``held_width_m`` (both fingers) and the grasp point then rose ``lift_m`` above where
    it closed (robodojo.episodes.observed checks it from the joint states)."""

    arm: str
    held_width_m: tuple[float, float]
    lift_m: float


class Task(ABC):
    """Base class. Subclasses set the class attributes and implement layout, success, score and goal.

    ``observed_success``: where set, the success an episode on a real robot judges from the robot's own sensing
    (episode_node), beside the operator's verdict.
    """

    name: ClassVar[str]
    capability: ClassVar[str]  #: one of CAPABILITIES
    robot: ClassVar[str] = "dual_arx_x5"
    step_limit: ClassVar[int]
    instruction_template: ClassVar[str]
    recipe: ClassVar[str]
    score_ladder: ClassVar[tuple[tuple[float, str], ...]]
    # Where top-down grasps are reachable for the ARX X5 layout (mapped with the IK: 3 cm to 15 cm above the table).
    workspace: ClassVar[Workspace] = Workspace(x_m=(-0.42, 0.42), y_m=(-0.32, -0.1))
    observed_success: ClassVar[HeldAndLifted | None] = None

    registry: ClassVar[dict[str, type[Task]]] = {}

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if getattr(cls, "name", None):
            if cls.name in Task.registry:
                raise ConfigError(f"task {cls.name!r} is defined twice")
            if getattr(cls, "capability", None) not in CAPABILITIES:
                raise ConfigError(
                    f"task {cls.name!r} has capability {getattr(cls, 'capability', None)!r}; "
                    f"expected one of {', '.join(CAPABILITIES)}"
                )
            Task.registry[cls.name] = cls

    def __init__(self, table_z_m: float) -> None:
        self.table_z_m = table_z_m

    # -- layout -----------------------------------------------------------------------------------------------
    def layout(self, seed: int, variant: str = "standard", *, bounds: RandomizedBounds | None = None) -> Layout:
        """Deterministic per (task, seed, variant); different seeds give different layouts. The randomized variant
        has the standard layout's objects and an appearance drawn within ``bounds`` (default: sim.yaml's)."""
        if variant not in VARIANTS:
            raise UnknownNameError("variant", variant, VARIANTS)
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")
        task_key = zlib.crc32(self.name.encode())
        objects_variant = "standard" if variant == "randomized" else variant
        rng = np.random.default_rng([task_key, int(seed), VARIANTS.index(objects_variant)])
        objects, slots = self.sample_objects(rng)
        placer = _Placer(self, rng, objects)
        if variant == "cluttered":
            placer.add_distractors(CLUTTER_DISTRACTORS, reserved_colors=set(slots.values()))
        changes = self.sample_changes(rng, placer.placed)
        appearance = NOMINAL
        if variant == "randomized":
            appearance = sample_appearance(
                np.random.default_rng([task_key, int(seed), APPEARANCE_STREAM]),
                bounds or load_sim_settings().randomized,
                {o.name: COLORS[o.color] for o in placer.placed},
                load_robot_config(self.robot).camera_names,
            )
        return Layout(
            task=self.name,
            seed=int(seed),
            variant=variant,
            objects=tuple(placer.placed),
            slots=slots,
            appearance=appearance,
            changes=changes,
        )

    @abstractmethod
    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        """The task's own objects (already placed, e.g. with :meth:`place`) and the instruction's slot values."""

    def sample_changes(self, rng: np.random.Generator, placed: Sequence[ObjectSpec]) -> tuple[LayoutChange, ...]:
        """Changes made to the layout mid-episode (none by default); ``placed`` is every object, distractors too."""
        return ()

    def keep_clear(self, objects: Sequence[ObjectSpec]) -> tuple[Workspace, ...]:
        """Table regions no other object may be placed in (distractors included): by default every belt's top. A
        task whose objects travel (a rolling ball's lane) adds its paths."""
        return tuple(belt_region(o) for o in objects if o.kind in BELT_KINDS)

    def instruction(self, layout: Layout) -> str:
        return self.instruction_template.format(**layout.slots)

    def recipe_text(self) -> str:
        ladder = "\n".join(f"  {score:.2f}  {text}" for score, text in self.score_ladder)
        return f"{self.recipe}\nProcess score ladder:\n{ladder}"

    # -- checking ---------------------------------------------------------------------------------------------
    @abstractmethod
    def success(self, layout: Layout, view: TaskView) -> bool:
        """The benchmark's own success signal."""

    @abstractmethod
    def score(self, layout: Layout, view: TaskView) -> float:
        """Process score in [0, 1]: the highest rung of the ladder reached now (1.0 exactly when successful)."""

    @abstractmethod
    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        """Teleport objects so that :meth:`success` holds (tests of the checkers)."""

    # -- helpers for subclasses -------------------------------------------------------------------------------
    def rest_object(
        self,
        name: str,
        kind: str,
        color: str,
        size: tuple[float, ...],
        xy: Sequence[float],
        yaw: float = 0.0,
        mass: float = 0.08,
    ) -> ObjectSpec:
        z = object_rest_z(kind, size, self.table_z_m)
        return ObjectSpec(
            name=name,
            kind=kind,
            color=color,
            size_m=size,
            pos_m=(float(xy[0]), float(xy[1]), z),
            yaw_rad=float(yaw),
            mass_kg=mass,
        )

    def lifted_by(self, view: TaskView, name: str) -> float:
        return float(view.object_pos(name)[2] - view.initial_pos(name)[2])


# Colours that name a task object; the neutral ones are left to distractors so instructions stay unambiguous.
TASK_COLORS = tuple(c for c in COLORS if c not in ("black", "grey", "white", "brown"))


def pick_colors(rng: np.random.Generator, n: int) -> list[str]:
    """``n`` distinct task colours."""
    choices = list(TASK_COLORS)
    return [str(c) for c in rng.choice(choices, size=n, replace=False)]


def belt_region(belt: ObjectSpec) -> Workspace:
    """The table region a belt covers (its footprint's axis-aligned bounds)."""
    c, s = abs(math.cos(belt.yaw_rad)), abs(math.sin(belt.yaw_rad))
    half_x = (belt.size_m[0] * c + belt.size_m[1] * s) / 2
    half_y = (belt.size_m[0] * s + belt.size_m[1] * c) / 2
    x, y = belt.pos_m[0], belt.pos_m[1]
    return Workspace(x_m=(x - half_x, x + half_x), y_m=(y - half_y, y + half_y))


def _clear_of(region: Workspace, x: float, y: float, radius: float) -> bool:
    dx = max(region.x_m[0] - x, 0.0, x - region.x_m[1])
    dy = max(region.y_m[0] - y, 0.0, y - region.y_m[1])
    return math.hypot(dx, dy) >= radius + MIN_GAP_M


class _Placer:
    """Rejection sampling of non-overlapping object positions in the task's workspace, outside its clear regions
    (belts are kept apart by their regions, not by their footprint circles)."""

    MAX_TRIES = 2000

    def __init__(self, task: Task, rng: np.random.Generator, objects: list[ObjectSpec]) -> None:
        self.task = task
        self.rng = rng
        self.placed = list(objects)
        self.clear = task.keep_clear(self.placed)

    def _free(self, x: float, y: float, radius: float) -> bool:
        return all(
            math.hypot(x - o.pos_m[0], y - o.pos_m[1]) >= radius + o.footprint_radius_m + MIN_GAP_M
            for o in self.placed
            if o.kind not in BELT_KINDS
        ) and all(_clear_of(region, x, y, radius) for region in self.clear)

    def add_distractors(self, count: int, reserved_colors: set[str]) -> None:
        colors = [c for c in COLORS if c not in reserved_colors]
        ws = self.task.workspace
        # Clutter may spread a little beyond the task region, as on a busy table.
        x_range, y_range = (ws.x_m[0] - 0.1, ws.x_m[1] + 0.1), (ws.y_m[0], ws.y_m[1] + 0.1)
        for i in range(count):
            kind = str(self.rng.choice(["block", "cylinder"]))
            size: tuple[float, ...]
            if kind == "block":
                size = tuple(float(v) for v in self.rng.uniform(0.025, 0.045, size=3))
            else:
                size = (float(self.rng.uniform(0.015, 0.025)), float(self.rng.uniform(0.03, 0.07)))
            candidate = self.task.rest_object(
                f"distractor_{i}",
                kind,
                str(self.rng.choice(colors)),
                size,
                (0, 0),
                yaw=float(self.rng.uniform(-math.pi, math.pi)),
                mass=0.05,
            )
            for _ in range(self.MAX_TRIES):
                x, y = self.rng.uniform(*x_range), self.rng.uniform(*y_range)
                if self._free(x, y, candidate.footprint_radius_m):
                    self.placed.append(
                        ObjectSpec(**{**candidate.__dict__, "pos_m": (float(x), float(y), candidate.pos_m[2])})
                    )
                    break
            else:
                raise ConfigError(f"task {self.task.name!r}: no room for distractor {i}")


def free_spot(
    task: Task, rng: np.random.Generator, placed: Sequence[ObjectSpec], radius_m: float, region: Workspace
) -> tuple[float, float]:
    """A random (x, y) in ``region`` where a footprint of ``radius_m`` overlaps none of ``placed`` (nor the task's
    clear regions)."""
    placer = _Placer(task, rng, list(placed))
    for _ in range(_Placer.MAX_TRIES):
        x, y = float(rng.uniform(*region.x_m)), float(rng.uniform(*region.y_m))
        if placer._free(x, y, radius_m):
            return x, y
    raise ConfigError(f"task {task.name!r}: no free spot of radius {radius_m} m in {region}")


def place_all(
    task: Task, rng: np.random.Generator, objects: Sequence[ObjectSpec], region: Workspace | None = None
) -> list[ObjectSpec]:
    """Give each object a free random position (and keep its yaw) inside ``region`` (default: the task's)."""
    region = region or task.workspace
    placer = _Placer(task, rng, [])
    for obj in objects:
        for _ in range(_Placer.MAX_TRIES):
            x, y = rng.uniform(*region.x_m), rng.uniform(*region.y_m)
            if placer._free(x, y, obj.footprint_radius_m):
                placer.placed.append(ObjectSpec(**{**obj.__dict__, "pos_m": (float(x), float(y), obj.pos_m[2])}))
                break
        else:
            raise ConfigError(f"task {task.name!r}: no room for object {obj.name!r}")
    return placer.placed
