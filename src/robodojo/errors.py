"""One error hierarchy for the whole library; messages name the bad value and list the valid alternatives."""

from __future__ import annotations

from collections.abc import Iterable


class RobodojoError(Exception):
    """Base class of every error raised by robodojo."""


class ConfigError(RobodojoError):
    """A configuration file or value is missing or invalid."""


class UnknownNameError(RobodojoError, KeyError):
    """A name (task, robot, camera, arm, joint, ...) that does not exist."""

    def __init__(self, kind: str, name: object, available: Iterable[str]) -> None:
        self.kind = kind
        self.name = name
        self.available = sorted(available)
        super().__init__(f"unknown {kind} {name!r}; available: {', '.join(self.available)}")

    def __str__(self) -> str:  # KeyError would otherwise quote the whole message
        return self.args[0]


class InvalidCommandError(RobodojoError, ValueError):
    """A command (joint target, gripper value, ...) that was rejected before anything moved."""


class BackendLostError(RobodojoError):
    """The robot backend stopped answering (on the ROS graph: no joint states or episode status), or restarted."""


class EpisodeInterrupted(RobodojoError):
    """The episode was asked to stop from outside (the agent node is shutting down); it ends as ``interrupted``."""


class HardwareError(RobodojoError):
    """A real arm (or its protocol simulator) refused or failed a command; the message says what to do next."""


class ContactLostError(HardwareError, BackendLostError):
    """The connection to a real arm's controller was lost; nothing is sent until it is connected again."""
