"""DroppingFeed: a producer that never waits for its consumer; the oldest items dropped, counted, when it falls
behind (the graph's record of control steps and the live viewer stand on it)."""

from __future__ import annotations

import threading

import pytest

from robodojo.episodes.feed import DroppingFeed

GENEROUS_S = 30.0  # a bound for a thread that should end at once, never a measured time


def test_items_reach_the_consumer_in_order_and_close_drains_what_is_queued():
    got: list[int] = []
    feed: DroppingFeed[int] = DroppingFeed(got.append, capacity=1000, name="t")
    for i in range(500):
        feed.put(i)
    assert feed.close(GENEROUS_S)
    assert got == list(range(500)) and feed.dropped == 0 and feed.consumed == 500


def test_a_stalled_consumer_never_holds_up_the_producer_and_loses_the_oldest_counted():
    release, first_taken = threading.Event(), threading.Event()
    got: list[int] = []

    def consume(item: int) -> None:
        first_taken.set()
        release.wait()
        got.append(item)

    feed: DroppingFeed[int] = DroppingFeed(consume, capacity=10, name="t")
    feed.put(-1)
    assert first_taken.wait(GENEROUS_S)  # the consumer holds item -1 and waits
    producer = threading.Thread(target=lambda: [feed.put(i) for i in range(100)])
    producer.start()
    producer.join(GENEROUS_S)
    assert not producer.is_alive()  # all 100 puts returned while the consumer was stuck
    release.set()
    assert feed.close(GENEROUS_S)
    assert got == [-1, *range(90, 100)]  # the newest ten; the ninety before them dropped and counted
    assert feed.dropped == 90 and feed.consumed == 11


def test_a_failing_consumer_is_kept_and_the_feed_goes_on():
    got: list[int] = []

    def consume(item: int) -> None:
        if item == 3:
            raise RuntimeError("disk full")
        got.append(item)

    feed: DroppingFeed[int] = DroppingFeed(consume, capacity=100, name="t")
    for i in range(6):
        feed.put(i)
    assert feed.close(GENEROUS_S)
    assert got == [0, 1, 2, 4, 5] and isinstance(feed.failure, RuntimeError)


def test_after_close_puts_are_ignored_and_capacity_must_be_positive():
    got: list[int] = []
    feed: DroppingFeed[int] = DroppingFeed(got.append, capacity=1, name="t")
    assert feed.close(GENEROUS_S)
    feed.put(1)
    assert got == []
    with pytest.raises(ValueError):
        DroppingFeed(got.append, capacity=0, name="t")
