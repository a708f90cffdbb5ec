"""Task registry. Every module in this folder defines one task; importing the package registers them all."""

from __future__ import annotations

import importlib
import pkgutil

from robodojo.errors import UnknownNameError
from robodojo.sim.tasks.base import Task

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")


def available_tasks(robot: str | None = None) -> list[str]:
    return sorted(name for name, cls in Task.registry.items() if robot is None or cls.robot == robot)


def get_task(name: str) -> type[Task]:
    try:
        return Task.registry[name]
    except (KeyError, TypeError):
        raise UnknownNameError("task", name, Task.registry) from None
