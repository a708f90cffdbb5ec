"""Episodes: the runner, where an episode runs (hosts), its record, the agent factory and the agent comparison.

One floor above the agents and the backends: it is the only layer that holds both an agent and the task's ground
truth (through a host), and it hands agents only their agent-side context.
"""

from robodojo.episodes.hosts import EpisodeHost, WorldHost, episode_context
from robodojo.episodes.runner import run_episode
from robodojo.episodes.spec import DEFAULT_LLM_CALL_BUDGET, EndReason, EpisodeResult, EpisodeSpec

__all__ = [
    "DEFAULT_LLM_CALL_BUDGET",
    "EndReason",
    "EpisodeHost",
    "EpisodeResult",
    "EpisodeSpec",
    "WorldHost",
    "episode_context",
    "run_episode",
]
