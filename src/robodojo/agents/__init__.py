"""Agents: the LLM layer, the episode runner and recorder, and the two ways to act (move_eef tool calling and code
cells). Agents see only the agent-side view (robodojo.observation) and act through the motion server."""
