"""The move_eef agent of seed 002 ("LLM as policy"): every turn the model sees the camera images and the grasp-point
state and calls exactly one tool, ``move_eef(targets, note)`` or ``give_up(reason, hindsight)``.

Modules: ``prompts`` (system and Goal messages), ``tools`` (schemas and call validation), ``observation`` (the
observation message), ``context`` (history and image horizon), ``probes`` (perturbations and demonstrations),
``agent`` (:class:`MoveEefAgent` and its config, config/agents/move_eef.yaml).
"""

from robodojo.agents.move_eef.agent import MoveEefAgent, MoveEefConfig, load_move_eef_config
from robodojo.agents.move_eef.probes import Probes

__all__ = ["MoveEefAgent", "MoveEefConfig", "Probes", "load_move_eef_config"]
