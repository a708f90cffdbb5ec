"""The command watchdog alone: fires once when armed and not fed, never when fed or disarmed."""

from __future__ import annotations

import threading
import time

import pytest

from robodojo.hardware.watchdog import POLLS_PER_TIMEOUT, CommandWatchdog

TIMEOUT_S = 0.1


@pytest.fixture
def fired():
    event = threading.Event()
    dog = CommandWatchdog(TIMEOUT_S, event.set)
    yield dog, event
    dog.close()


def test_fires_once_when_not_fed(fired):
    dog, event = fired
    dog.arm()
    assert event.wait(TIMEOUT_S * 20)
    time.sleep(TIMEOUT_S * 3)
    assert dog.expirations == 1 and not dog.armed


def test_feeding_keeps_it_quiet_and_disarmed_never_fires():
    """On a clock of the test's own: time passes only when the test moves it, so a loaded machine's late wake-ups
    cannot starve the feeding (its verdict once depended on them); the watchdog's thread polls in real time."""
    now = [0.0]
    event = threading.Event()
    dog = CommandWatchdog(TIMEOUT_S, event.set, clock=lambda: now[0])
    try:
        dog.arm()
        for _ in range(25):  # five timeouts, fed every fifth of one
            now[0] += TIMEOUT_S / 5
            dog.feed()
            time.sleep(TIMEOUT_S / POLLS_PER_TIMEOUT)  # a poll of the watchdog's thread in between
        assert not event.is_set() and dog.expirations == 0
        dog.disarm()
        now[0] += TIMEOUT_S * 10
        time.sleep(TIMEOUT_S * 3)
        assert not event.is_set() and dog.expirations == 0
        dog.feed()  # feeding a disarmed watchdog does not arm it
        now[0] += TIMEOUT_S * 10
        time.sleep(TIMEOUT_S * 3)
        assert not event.is_set()
        dog.arm()  # and the same clock does fire it, unfed
        now[0] += TIMEOUT_S
        assert event.wait(TIMEOUT_S * 50) and dog.expirations == 1
    finally:
        dog.close()


def test_a_bad_timeout_is_refused():
    with pytest.raises(ValueError, match="timeout"):
        CommandWatchdog(0.0, lambda: None)
