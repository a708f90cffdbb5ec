"""Episodes: the runner, where an episode runs (hosts), its outcome and record, the agent factory, the one-shot
demonstration, the agent comparison and the shell harness's repair loop.

One floor above the agents and the backends: it is the only layer that holds both an agent and the task's ground
truth (through a host), and it hands agents only their agent-side context.

The names below load on first use: a module that needs only a light part of this floor (the campaign report's
statistics use :mod:`robodojo.episodes.efficiency`) does not pay for the simulator and the runner.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from robodojo.episodes.hosts import EpisodeHost, WorldHost, episode_context
    from robodojo.episodes.runner import run_episode
    from robodojo.episodes.spec import DEFAULT_LLM_CALL_BUDGET, EndReason, EpisodeOutcome, EpisodeResult, EpisodeSpec

_WHERE = {
    "EpisodeHost": "hosts", "WorldHost": "hosts", "episode_context": "hosts", "run_episode": "runner",
    "DEFAULT_LLM_CALL_BUDGET": "spec", "EndReason": "spec", "EpisodeOutcome": "spec", "EpisodeResult": "spec",
    "EpisodeSpec": "spec",
}  # fmt: skip

__all__ = [
    "DEFAULT_LLM_CALL_BUDGET",
    "EndReason",
    "EpisodeHost",
    "EpisodeOutcome",
    "EpisodeResult",
    "EpisodeSpec",
    "WorldHost",
    "episode_context",
    "run_episode",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
