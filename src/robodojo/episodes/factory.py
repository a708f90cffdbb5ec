"""Agents by name, with their shipped configuration and the command-line overrides (used by the CLI and compare)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from robodojo.agents.base import Agent
from robodojo.errors import UnknownNameError

AGENTS = ("move_eef", "code_cell")


def make_agent(name: str, *, image_horizon: int | None = None, probes: Mapping[str, Any] | None = None) -> Agent:
    """A fresh agent. ``image_horizon`` None keeps the configured value and 0 keeps every image; ``probes`` sets
    fields of the move_eef agent's probes (seed 002 perturbations)."""
    if name not in AGENTS:
        raise UnknownNameError("agent", name, AGENTS)
    horizon: dict[str, Any] = {} if image_horizon is None else {"image_horizon": image_horizon or None}
    if name == "code_cell":
        from robodojo.agents.code_cell.agent import CodeCellAgent

        return CodeCellAgent(**horizon)
    from robodojo.agents.move_eef import MoveEefAgent, load_move_eef_config

    config = load_move_eef_config()
    config = dataclasses.replace(config, probes=dataclasses.replace(config.probes, **(probes or {})), **horizon)
    return MoveEefAgent(config)
