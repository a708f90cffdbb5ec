"""Agents: the LLM layer and the two ways to act (move_eef tool calling and code cells).

Agents see only the agent-side view (robodojo.observation, through the backend in their EpisodeContext) and act
through the motion server; they never import a backend. The episode runner that drives them is robodojo.episodes.
"""
