"""threads.ahead: one ingest stage on a background thread, errors and early stops handed across."""

from __future__ import annotations

import threading
import time

import pytest

from logcorr.inputs.threads import ahead


def test_items_come_in_order_computed_on_another_thread():
    seen = []

    def produce():
        for i in range(50):
            seen.append(threading.current_thread().name)
            yield i

    assert list(ahead(produce(), depth=3, name="stage")) == list(range(50))
    assert set(seen) == {"stage"}


def test_an_error_of_the_producer_is_raised_at_its_item():
    def produce():
        yield 1
        yield 2
        raise ValueError("journalctl pipe broke")

    got = []
    with pytest.raises(ValueError, match="journalctl pipe broke"):
        for item in ahead(produce()):
            got.append(item)
    assert got == [1, 2]


def test_a_consumer_that_stops_early_stops_the_producer_and_runs_its_cleanup():
    cleaned, produced = threading.Event(), []

    def produce():
        try:
            for i in range(10_000):
                produced.append(i)
                yield i
        finally:
            cleaned.set()  # e.g. killing the journalctl child

    items = ahead(produce(), depth=2)
    assert next(items) == 0
    items.close()
    assert cleaned.wait(5)
    time.sleep(0.2)
    assert len(produced) <= 4  # the item handed out, the queue (2) and one blocked put
