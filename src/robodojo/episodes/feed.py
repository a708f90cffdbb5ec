"""A hand-off from a thread that must never wait (a ROS callback, the control loop) to a consumer on a thread of its
own: :class:`DroppingFeed`. A consumer that falls behind loses the oldest items, counted, and never slows the
producer: a record or a viewer is worth less than the robot's timing."""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class DroppingFeed(Generic[T]):
    """Items put here reach ``consume``, in order, on a daemon thread named ``name``; at most ``capacity`` wait, and
    a put beyond that drops the oldest waiting item (``dropped`` counts them). An exception from ``consume`` is kept
    in ``failure`` (the first one) and the feed goes on with the next item."""

    def __init__(self, consume: Callable[[T], None], *, capacity: int, name: str) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, not {capacity}")
        self._consume = consume
        self._items: collections.deque[T] = collections.deque(maxlen=capacity)
        self._ready = threading.Condition()
        self._closing = False
        self.dropped = 0
        self.consumed = 0
        self.failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def put(self, item: T) -> None:
        """Queue ``item`` without waiting for the consumer (after :meth:`close`: ignored)."""
        with self._ready:
            if self._closing:
                return
            if len(self._items) == self._items.maxlen:
                self.dropped += 1  # the deque drops the oldest itself
            self._items.append(item)
            self._ready.notify()

    def close(self, timeout_s: float) -> bool:
        """Consume what is queued, then stop the thread; False if it did not end within ``timeout_s`` (a consumer
        stuck in I/O: the daemon thread is left behind, and nothing more is put)."""
        with self._ready:
            self._closing = True
            self._ready.notify()
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._items and not self._closing:
                    self._ready.wait()
                if not self._items:
                    return
                item = self._items.popleft()
            try:
                self._consume(item)
                self.consumed += 1
            except Exception as exc:  # kept for the owner: a feed thread has no one to raise to
                if self.failure is None:
                    self.failure = exc
