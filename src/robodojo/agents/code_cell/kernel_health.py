"""Child side of the code-cell kernel: what the kernel itself needs, recorded before the first cell and checked after
every cell, so that a cell that breaks it (``sys.modules['numpy'] = None``, ``builtins.len = ...``, a patched
``pickle.loads``, the import blocker removed from ``sys.meta_path``) costs one kernel restart instead of every later
cell failing.

Best effort, like everything else inside the kernel process: the check runs in the interpreter the cell ran in, so
code written to defeat it can (it is reachable through frames). It exists to recover from accidents and ordinary
monkeypatching; the boundaries that hold whatever a cell does are the process and the parent's limits (see the parent
module :mod:`robodojo.agents.code_cell.kernel`).

Standard library only; imported by :mod:`robodojo.agents.code_cell.kernel_main` in the child.
"""

from __future__ import annotations

import pickle
import sys
import threading
from collections.abc import Callable, Mapping
from types import BuiltinFunctionType, BuiltinMethodType, FunctionType, MethodType, ModuleType
from typing import Any

MAX_PROBLEMS = 5  # problems named in one report; the rest are counted
_CODE_TYPES = (type, FunctionType, BuiltinFunctionType, BuiltinMethodType, MethodType, ModuleType, staticmethod,
               classmethod, property)  # fmt: skip


class KernelHealth:
    """A snapshot of the kernel's essentials; :meth:`problems` names what changed since.

    ``objects``: label -> module, class or instance whose functions, classes and modules (the values of ``vars()``
    that are code) must stay the same objects; ``mutable``: (label, name) pairs cells may legitimately rebind
    (``threading.excepthook``). ``sample``: a pickle made by the parent of the kinds of value robo calls return;
    loading and re-pickling it must give the same bytes as before the first cell. ``first_meta_path``: the import
    blocker that must stay first in ``sys.meta_path``.
    """

    def __init__(
        self,
        objects: Mapping[str, object],
        *,
        sample: bytes,
        first_meta_path: object,
        mutable: frozenset[tuple[str, str]] = frozenset(),
    ) -> None:
        self._modules_dict = sys.modules
        self._modules = dict(sys.modules)
        self._objects = dict(objects)
        self._code = {}
        for label, obj in objects.items():
            for name in _names(obj):
                value = _lookup(obj, name)
                if isinstance(value, _CODE_TYPES) and (label, name) not in mutable:
                    self._code[(label, name)] = value
        self._first_meta_path = first_meta_path
        self._sample = sample
        self._loads, self._dumps = pickle.loads, pickle.dumps
        self._sample_again = self._round_trip()

    def _round_trip(self) -> bytes:
        return self._dumps(self._loads(self._sample), protocol=pickle.HIGHEST_PROTOCOL)

    def problems(self) -> list[str]:
        """What a cell changed that the kernel needs; empty when the kernel is sound. Never raises."""
        found: list[str] = []
        try:
            self._check(found.append)
        except BaseException as exc:  # the check itself broke: that is a finding too
            found.append(f"the kernel's self-check failed ({type(exc).__name__})")
        if len(found) > MAX_PROBLEMS:
            found[MAX_PROBLEMS:] = [f"{len(found) - MAX_PROBLEMS} more"]
        return found

    def _check(self, report: Callable[[str], Any]) -> None:
        if sys.modules is not self._modules_dict:
            report("sys.modules was replaced")
        current = self._modules_dict
        for name, module in self._modules.items():
            if current.get(name) is not module:
                report(f"sys.modules[{name!r}] was {'removed' if name not in current else 'replaced'}")
        for (label, name), value in self._code.items():
            now = _lookup(self._objects[label], name)
            if now is not value:
                report(f"{label}.{name} was {'deleted' if now is _MISSING else 'replaced'}")
        if not sys.meta_path or sys.meta_path[0] is not self._first_meta_path:
            report("the kernel's import blocker is no longer first in sys.meta_path")
        try:
            if self._round_trip() != self._sample_again:
                report("robo results no longer load in the kernel (the pickle round trip changed)")
        except Exception as exc:
            report(f"robo results no longer load in the kernel ({type(exc).__name__}: {exc})"[:300])


_MISSING = object()


def _names(obj: object) -> set[str]:
    """Attribute names of a module or instance (its ``vars()``), or of a class and its bases but ``object``."""
    if isinstance(obj, type):
        return {name for klass in obj.__mro__ if klass is not object for name in vars(klass)}
    return set(vars(obj))


def _lookup(obj: object, name: str) -> Any:
    """What ``obj.name`` resolves to without calling descriptors: for a class the first base that defines it, so an
    attribute set on a subclass to shadow its base's method counts as a replacement."""
    if isinstance(obj, type):
        for klass in obj.__mro__:
            if name in vars(klass):
                return vars(klass)[name]
        return _MISSING
    return vars(obj).get(name, _MISSING)


def leftover_threads(own: frozenset[threading.Thread], grace_s: float) -> list[str]:
    """Names of the Python threads still alive after waiting up to ``grace_s`` for them, except the kernel's ``own``.

    Threads started with ``_thread.start_new_thread`` and native threads are invisible here; the parent counts the
    process's tasks in /proc as well.
    """
    import time

    deadline = time.monotonic() + grace_s
    alive = []
    for thread in threading.enumerate():
        if thread in own or isinstance(thread, threading._DummyThread):
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            alive.append(f"{thread.name}{' (daemon)' if thread.daemon else ''}")
    return alive


__all__ = ["KernelHealth", "leftover_threads"]
