"""The robo API as the model sees it: generated from :class:`~robodojo.agents.robo.api.Robo`'s signatures and
docstrings, checked, and dispatched.

- :func:`check_documented`: every public method and property has a docstring, and every parameter of every method is
  documented under ``Args:`` (and nothing else is); it runs on :class:`Robo` when this module is imported, so an
  undocumented argument fails every consumer of the API (the agent, the kernel's proxy, ``robodojo api``).
- :func:`robo_api_reference`: the reference text of the system message and of ``robodojo api``.
- :func:`robo_api_methods`, :func:`robo_api_properties`, :data:`ROBO_CONSTANTS`: what the kernel's proxy forwards.
- :func:`call_robo`: runs one forwarded call on the parent side.
"""

from __future__ import annotations

import inspect
import re
import textwrap
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import numpy as np

from robodojo.agents.context_budget import head_cameras
from robodojo.agents.robo.api import CLOSED, OPEN, Robo
from robodojo.agents.robo.flange import flange_to_tcp
from robodojo.agents.robo.results import RESULT_TYPES
from robodojo.motion.targets import dimension_bounds
from robodojo.robots.config import RobotConfig, load_robot_config

AGENT_ONLY = ("take_shown",)  # public for the agent, not part of the model's API
DEFAULT_REFERENCE_ROBOT = "dual_arx_x5"
REFERENCE_WIDTH = 120  # the generated reference wraps its own lines at this width
ROBO_CONSTANTS = {"OPEN": OPEN, "CLOSED": CLOSED}  # plain attributes the kernel's proxy defines itself


def _names(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names)


_ARGS_HEADER = re.compile(r"^\s*Args:\s*$")
_SECTION_HEADER = re.compile(r"^\s*(Returns|Raises|Examples?|Notes?):\s*$")
_ARG_LINE = re.compile(r"^\s{4}(\w+):")


def _documented_args(doc: str) -> list[str]:
    """Parameter names listed under ``Args:`` in a Google-style docstring (after inspect.cleandoc)."""
    names, inside = [], False
    for line in doc.splitlines():
        if _ARGS_HEADER.match(line):
            inside = True
            continue
        if inside and (_SECTION_HEADER.match(line) or (line and not line.startswith(" "))):
            inside = False
        if inside:
            m = _ARG_LINE.match(line)
            if m:
                names.append(m.group(1))
    return names


def _public_members(cls: type) -> dict[str, Any]:
    """Public methods and properties in the order they are defined (the reference's order)."""
    return {
        name: member
        for name, member in vars(cls).items()
        if not name.startswith("_") and name not in AGENT_ONLY and (callable(member) or isinstance(member, property))
    }


def check_documented(cls: type) -> None:
    """Raise TypeError if a public method or property of ``cls`` lacks a docstring, or a method has a parameter
    not documented under ``Args:`` (or documents one it does not have)."""
    for name, member in _public_members(cls).items():
        doc = inspect.getdoc(member.fget if isinstance(member, property) else member)
        if not doc:
            raise TypeError(f"{cls.__name__}.{name} has no docstring")
        if isinstance(member, property):
            continue
        params = [p for p in inspect.signature(member).parameters if p != "self"]
        documented = _documented_args(doc)
        for p in params:
            if p not in documented:
                raise TypeError(f"{cls.__name__}.{name}: parameter {p!r} is not documented under Args:")
        for d in documented:
            if d not in params:
                raise TypeError(f"{cls.__name__}.{name}: documents {d!r}, which is not a parameter")


check_documented(Robo)


@cache
def robo_api_methods() -> dict[str, str]:
    """The methods the model may call on ``robo``: name -> docstring (what the kernel proxy forwards)."""
    return {name: inspect.getdoc(m) or "" for name, m in _public_members(Robo).items() if not isinstance(m, property)}


@cache
def robo_api_properties() -> dict[str, str]:
    """The read-only attributes of ``robo`` (done, steps_left, task): name -> docstring."""
    return {name: inspect.getdoc(m.fget) or "" for name, m in _public_members(Robo).items() if isinstance(m, property)}


def call_robo(robo: Robo, name: str, args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None) -> Any:
    """Run one call the kernel forwarded: a method with its arguments, or a property read (no arguments).

    Names outside the model's API (private helpers, take_shown) raise AttributeError listing the valid ones.
    """
    kwargs = kwargs or {}
    if name in robo_api_properties():
        if args or kwargs:
            raise TypeError(f"robo.{name} is an attribute, not a method: read it without ()")
        return getattr(robo, name)
    if name in robo_api_methods():
        return getattr(robo, name)(*args, **kwargs)
    if name in ROBO_CONSTANTS:
        return ROBO_CONSTANTS[name]
    valid = [*robo_api_methods(), *robo_api_properties(), *ROBO_CONSTANTS]
    raise AttributeError(f"robo has no attribute {name!r}; it has: {', '.join(valid)}")


def _signature(name: str, fn: Callable[..., Any]) -> str:
    """``robo.move_to(arm, xyz, quat=None, *, gripper=None) -> MoveResult``: names and defaults, no annotations."""
    sig = inspect.signature(fn)
    parts: list[str] = []
    star = False
    for p in list(sig.parameters.values())[1:]:
        if p.kind is inspect.Parameter.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        parts.append(p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}")
    ret = sig.return_annotation
    ret_text = "" if ret is inspect.Signature.empty else f" -> {ret if isinstance(ret, str) else ret.__name__}"
    return f"robo.{name}({', '.join(parts)}){ret_text}"


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())


#: robo methods left out of the model's API when the run sends no pictures (``images: none``)
PICTURE_METHODS = ("show",)


def robo_api_reference(robot_config: RobotConfig | str | None = None, *, images: str = "all") -> str:
    """The robo API reference shown to the model (system message, ``robodojo api``), generated from the signatures
    and docstrings of :class:`Robo` and the result types. ``robot_config`` (or a robot name) fills in its arm and
    camera names; default: the dual-arm robot. ``images`` none leaves out robo.show and says pictures are for code
    only; head says which camera robo.show accepts."""
    if isinstance(robot_config, RobotConfig):
        robot = robot_config
    else:
        robot = load_robot_config(robot_config or DEFAULT_REFERENCE_ROBOT)
    arms = _names(robot.arm_names)
    cameras = _names(robot.camera_names)
    flange = ", ".join(
        f"{arm} {float(np.linalg.norm(flange_to_tcp(robot.name, arm)[:3, 3])):.4g} m" for arm in robot.arm_names
    )
    lines = [
        f"robo: the robot ({robot.name}: {robot.description}).",
        f"Arms: {arms}. Cameras: {cameras}. Gripper: robo.CLOSED = 0.0 .. robo.OPEN = 1.0.",
        "",
        inspect.getdoc(Robo) or "",
        "",
        f"Flange (eef) to grasp point (TCP) along the approach vector: {flange}.",
        "",
        "Methods",
        "-------",
    ]
    for name, member in _public_members(Robo).items():
        if isinstance(member, property) or (images == "none" and name in PICTURE_METHODS):
            continue
        doc = inspect.getdoc(member) or ""
        if images == "none":  # robo.image's pointer to show would promise pictures this run never sends
            doc = doc.replace("(not shown to you; use show for that)", "(for your code; no pictures are sent to you)")
        elif images == "head" and name == "show":
            heads = _names(head_cameras(robot))
            doc += f"\n\nThis run sends only the pictures of {heads}; other cameras raise ValueError."
        lines += [_signature(name, member), _indent(doc), ""]
    lines += ["Attributes", "----------"]
    for name, doc in robo_api_properties().items():
        ret = inspect.signature(getattr(Robo, name).fget).return_annotation
        lines += [f"robo.{name} -> {ret}", _indent(doc), ""]
    lines += ["Result types (frozen dataclasses; print them, read their fields)", "-----------------------------"]
    for cls in RESULT_TYPES:
        field_names = ", ".join(f for f in cls.__dataclass_fields__ if not f.startswith("_"))
        header = textwrap.fill(f"{cls.__name__}({field_names})", REFERENCE_WIDTH, subsequent_indent="    ")
        lines += [header, _indent(inspect.getdoc(cls) or ""), ""]
    bounds = dimension_bounds(robot)
    lines.append("Workspace bounds of the grasp point [m] (targets outside raise ValueError):")
    for arm in robot.arm_names:
        ranges = ", ".join(f"{ax} [{bounds[f'{arm}_{ax}'][0]:g}, {bounds[f'{arm}_{ax}'][1]:g}]" for ax in "xyz")
        lines.append(f"    {arm}: {ranges}")
    return "\n".join(lines).rstrip() + "\n"
