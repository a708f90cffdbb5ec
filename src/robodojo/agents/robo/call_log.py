"""The robo call log: every call made on ``robo``, as the episode record keeps it (robo_calls.jsonl).

The caller (the code-cell agent, for each call its kernel forwards: a method, or an attribute read such as
``robo.done``) runs it through :meth:`RoboCallLog.run`, which times it and keeps one :class:`RoboCall`: the method,
its arguments and its result (or the error it raised) as JSON-safe summaries, and its duration. The caller drains the
log into each turn's record.

Summaries keep numbers exact and small arrays whole, so a cell can be replayed and debugged call by call; larger
arrays (images, masks, world maps) become a shape and dtype (a mask also its area), long strings keep head and tail
with a marker, and a result dataclass becomes its fields plus ``type``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from robodojo.agents.robo.results import SMALL_ARRAY_SIZE
from robodojo.text import trim_text

MAX_STRING_CHARS = 400  # longer strings keep head and tail around an omission marker
MAX_ITEMS = 64  # longer lists and tuples are summarised by their length


@dataclass(frozen=True)
class RoboCall:
    """One robo call as recorded: what was asked, what came back (or the error), how long it took [s]."""

    method: str
    args: list[Any]
    kwargs: dict[str, Any]
    result: Any
    error: str
    duration_s: float


def _string(text: str) -> str:
    return trim_text(text, MAX_STRING_CHARS)


def summarize(value: Any) -> Any:
    """``value`` as JSON-safe data for the log (see the module docstring)."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        shape = "x".join(str(n) for n in value.shape)
        if value.dtype == bool and value.ndim == 2:
            return f"<mask {shape}, area {int(value.sum())} px>"
        if value.size <= SMALL_ARRAY_SIZE and value.dtype.kind in "fiub":
            return value.tolist()
        return f"<array {shape} {value.dtype}>"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: summarize(getattr(value, f.name)) for f in dataclasses.fields(value) if f.repr}
        return {"type": type(value).__name__, **fields}
    if isinstance(value, Mapping):
        return {str(k): summarize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if len(value) > MAX_ITEMS:
            return f"<{type(value).__name__} of {len(value)} items>"
        return [summarize(v) for v in value]
    return _string(repr(value))


class RoboCallLog:
    """Times and records robo calls until :meth:`drain` hands them over."""

    def __init__(self) -> None:
        self._calls: list[RoboCall] = []

    def run(self, method: str, args: Sequence[Any], kwargs: Mapping[str, Any], call: Callable[[], Any]) -> Any:
        """Run ``call`` (the robo call ``method(*args, **kwargs)``), record it, and return its value or re-raise."""
        start = time.perf_counter()
        try:
            value = call()
        except BaseException as exc:  # EpisodeOver and KeyboardInterrupt too: the record shows where it stopped
            self._add(method, args, kwargs, None, f"{type(exc).__name__}: {exc}", start)
            raise
        self._add(method, args, kwargs, summarize(value), "", start)
        return value

    def _add(
        self, method: str, args: Sequence[Any], kwargs: Mapping[str, Any], result: Any, error: str, start: float
    ) -> None:
        self._calls.append(
            RoboCall(
                method=method,
                args=[summarize(a) for a in args],
                kwargs={str(k): summarize(v) for k, v in kwargs.items()},
                result=result,
                error=_string(error),
                duration_s=time.perf_counter() - start,
            )
        )

    def drain(self) -> list[RoboCall]:
        """The calls recorded since the last drain, in order; the log is emptied."""
        calls, self._calls = self._calls, []
        return calls
