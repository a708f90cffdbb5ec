"""Real-time scheduling for the threads that stand between a robot and its motors.

A control loop starved of the CPU for a few hundred milliseconds looks, from the other side of the cable, like a
dead controller: the motors go silent or the robot aborts. Such threads run at SCHED_FIFO where the OS allows it
(root, or an RLIMIT_RTPRIO); elsewhere they run as before, which is what a laptop without privileges gets.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def threads_started_at(priority: int) -> Iterator[None]:
    """Threads started inside run at SCHED_FIFO ``priority`` (they inherit the caller's policy); the caller gets its
    own back afterwards. ``priority`` 0, or an OS that refuses (no root, no rtprio limit): nothing changes."""
    if priority <= 0 or not hasattr(os, "sched_setscheduler"):
        yield
        return
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except OSError:
        yield  # not permitted: they run at the normal priority
        return
    try:
        yield
    finally:
        os.sched_setscheduler(0, policy, param)


@contextlib.contextmanager
def scheduling_kept(keep: bool = True) -> Iterator[None]:
    """With ``keep``, the calling thread's scheduling policy is restored afterwards, whatever the code inside set."""
    if not keep or not hasattr(os, "sched_getscheduler"):
        yield
        return
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, policy, param)
