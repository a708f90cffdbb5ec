"""MotionGate: one motion at a time, and waiting for its end without polling."""

from __future__ import annotations

import threading

from robodojo.motion.gate import MotionGate


def test_one_motion_at_a_time_and_none_once_closed():
    gate = MotionGate()
    assert gate.try_enter() and gate.busy
    assert not gate.try_enter()  # busy
    gate.leave()
    assert not gate.busy and gate.try_enter()
    gate.leave()
    gate.close()
    assert gate.closed and not gate.try_enter()


def test_a_waiter_wakes_when_the_motion_ends_and_a_bounded_wait_says_it_did_not():
    gate = MotionGate()
    assert gate.wait_idle(0.0)  # nothing running
    assert gate.try_enter()
    assert not gate.wait_idle(0.01)  # still running: the bound ends the wait
    entered, woke = threading.Event(), []

    def waiter() -> None:
        entered.set()
        woke.append(gate.wait_idle(60.0))

    thread = threading.Thread(target=waiter)
    thread.start()
    entered.wait()
    gate.close()  # closing admits nothing new; the running motion still ends as usual
    gate.leave()
    thread.join(timeout=60.0)
    assert woke == [True]
