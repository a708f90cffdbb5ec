"""The command watchdog alone: fires once when armed and not fed, never when fed or disarmed."""

from __future__ import annotations

import threading
import time

import pytest

from robodojo.hardware.watchdog import CommandWatchdog

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


def test_feeding_keeps_it_quiet_and_disarmed_never_fires(fired):
    dog, event = fired
    dog.arm()
    end = time.monotonic() + TIMEOUT_S * 5
    while time.monotonic() < end:
        dog.feed()
        time.sleep(TIMEOUT_S / 5)
    dog.disarm()
    time.sleep(TIMEOUT_S * 3)
    assert not event.is_set() and dog.expirations == 0
    dog.feed()  # feeding a disarmed watchdog does not arm it
    time.sleep(TIMEOUT_S * 3)
    assert not event.is_set()


def test_a_bad_timeout_is_refused():
    with pytest.raises(ValueError, match="timeout"):
        CommandWatchdog(0.0, lambda: None)
