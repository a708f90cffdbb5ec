"""Agents by name, with their shipped configuration and the command-line overrides (used by the CLI and compare)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robodojo.errors import ConfigError, UnknownNameError

if TYPE_CHECKING:
    from robodojo.agents.base import Agent

AGENTS = ("move_eef", "code_cell", "shell", "mcp")
#: what `robodojo compare` compares (seed 000's ratio code_cell / move_eef) and campaigns run unless told otherwise
DEFAULT_AGENTS = ("move_eef", "code_cell")
#: shell:<cli>: the shell agent acted by a coding-agent CLI of config/agents/shell.yaml; mcp:<cli>: that CLI as the
#: MCP client of the episode's robot server
CODING_AGENT_SEP = ":"


def split_agent(name: str) -> tuple[str, str | None]:
    """An agent name as runs and campaigns take it: one of :data:`AGENTS`; ``shell:<cli>`` for the shell harness
    acted by the coding-agent CLI ``<cli>`` (``shell:codex``, ``shell:claude-code``), ``mcp:<cli>`` for that CLI as
    the MCP client of the robot server (``mcp`` needs one); (agent, cli or None). Unknown agents and CLIs are
    ConfigErrors naming the known ones."""
    agent, sep, cli = name.partition(CODING_AGENT_SEP)
    if agent not in AGENTS:
        raise UnknownNameError("agent", agent, AGENTS)
    if agent == "mcp" and not sep:
        raise ConfigError(
            "agent 'mcp' needs its client: mcp:<cli> (a coding-agent CLI of config/agents/shell.yaml); to serve the "
            "robot to an MCP client of your own, run robodojo mcp"
        )
    if not sep:
        return agent, None
    if agent not in ("shell", "mcp"):
        raise ConfigError(f"agent {name!r}: only shell and mcp take a coding-agent CLI (shell:<cli>, mcp:<cli>)")
    from robodojo.agents.shell.settings import load_shell_settings

    coding_agents = load_shell_settings().coding_agents
    coding = coding_agents.get(cli)  # an unknown CLI: ConfigError naming the configured ones
    if agent == "mcp" and coding.mcp_client is None:
        clients = [n for n, c in coding_agents.clis.items() if c.mcp_client is not None]
        raise ConfigError(f"agent {name!r}: {cli} does not run as an MCP client; those that do: {', '.join(clients)}")
    return agent, cli


def horizon_value(image_horizon: int | str) -> int | None:
    """An image-horizon override as the agents take it: a positive count, or ``"all"`` (None: every image).

    0 is refused rather than guessed at: it used to mean "keep every image", and reads as "no images"."""
    if image_horizon == "all":
        return None
    if isinstance(image_horizon, bool) or not isinstance(image_horizon, int) or image_horizon < 1:
        raise ConfigError(
            f"image horizon must be a positive number of observations or 'all', got {image_horizon!r}; "
            "to send no images use --images none"
        )
    return image_horizon


def make_agent(
    name: str,
    *,
    image_horizon: int | str | None = None,
    images: str | None = None,
    context_tokens: int | None = None,
    reply_reserve_tokens: int | None = None,
    probes: Mapping[str, Any] | None = None,
    tools_root: Path | None = None,
    coding_agent: str | None = None,
) -> Agent:
    """A fresh agent with its shipped configuration and these overrides (None keeps the configured value):
    ``image_horizon`` a positive count or ``"all"``; ``images`` none | head | all (robodojo.agents.context_budget);
    ``context_tokens`` the model's context length (the oldest turns are left out to fit, with
    ``reply_reserve_tokens`` free for the answer: pass the client's max_output_tokens); ``probes`` fields of the
    move_eef agent's probes (seed 002 perturbations; its demonstration, a folder or an episode record, is read here:
    robodojo.episodes.demonstration); ``tools_root`` the shell agent's folder of task tool folders; ``coding_agent``
    a coding-agent CLI of config/agents/shell.yaml to act for the shell agent (else the built-in shell-tool agent;
    ``shell:<cli>`` as ``name`` says the same)."""
    from robodojo.agents.context_budget import ContextBudget, check_images, check_positive_or_none

    name, cli = split_agent(name)
    coding_agent = coding_agent or cli
    overrides: dict[str, Any] = {}
    if image_horizon is not None:
        overrides["image_horizon"] = horizon_value(image_horizon)
    if images is not None:
        overrides["images"] = check_images(images, "--images")
    context_tokens = check_positive_or_none(context_tokens, "--context-tokens")
    budget: dict[str, int] = {} if context_tokens is None else {"context_tokens": context_tokens}
    if reply_reserve_tokens is not None:
        budget["reply_reserve_tokens"] = reply_reserve_tokens
    if name == "mcp":
        from robodojo.agents.mcp.cli_agent import McpCliAgent

        assert cli is not None  # split_agent
        return McpCliAgent(cli)
    if name == "shell" and coding_agent:
        from robodojo.agents.shell.external import ExternalShellAgent

        return ExternalShellAgent(coding_agent, tools_root=tools_root)
    if name == "shell":
        from robodojo.agents.shell.agent import ShellAgent

        horizon = {"image_horizon": overrides["image_horizon"]} if "image_horizon" in overrides else {}
        return ShellAgent(tools_root=tools_root, context=ContextBudget(**budget), **horizon)
    if name == "code_cell":
        from robodojo.agents.code_cell.agent import CodeCellAgent

        return CodeCellAgent(**overrides, context=ContextBudget(**budget))
    from robodojo.agents.move_eef import MoveEefAgent, load_move_eef_config
    from robodojo.episodes.demonstration import read_demonstration

    config = load_move_eef_config()
    if budget:
        overrides["context"] = dataclasses.replace(config.context, **budget)
    config = dataclasses.replace(config, probes=dataclasses.replace(config.probes, **(probes or {})), **overrides)
    shown = config.probes.demonstration
    return MoveEefAgent(config, demonstration=None if shown is None else read_demonstration(shown))
