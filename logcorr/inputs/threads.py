"""Run one stage of the ingest on a background thread, so the stages (read and parse, re-join and
classify, build tables, write) overlap and use both cores.

Polars, pyarrow and DuckDB release the GIL while they work, so a stage that is mostly their calls
runs truly in parallel with the next one.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")
_DONE = object()


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def ahead(items: Iterable[T], depth: int = 2, name: str = "logcorr-ahead") -> Iterator[T]:
    """Yield ``items`` in order while a background thread computes up to ``depth`` of them ahead.

    An exception raised by ``items`` is raised here, at the item where it happened. When the
    consumer stops early (an error of its own, ``close()``, garbage collection), the thread stops
    at its next item and closes ``items`` (so a generator's ``finally`` runs, e.g. killing a child
    process).
    """
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: object) -> bool:
        while not stop.is_set():
            with contextlib.suppress(queue.Full):
                q.put(item, timeout=0.1)
                return True
        return False

    def pump() -> None:
        it = iter(items)
        try:
            for item in it:
                if not put(item):
                    break
            else:
                put(_DONE)
        except BaseException as e:  # handed to the consumer, raised there
            put(_Failed(e))
        finally:
            getattr(it, "close", lambda: None)()

    thread = threading.Thread(target=pump, name=name, daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        stop.set()
        thread.join(timeout=5)
