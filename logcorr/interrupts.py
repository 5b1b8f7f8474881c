"""Ctrl-C (or SIGTERM/SIGHUP, which the command turns into the same) as it surfaces from any layer.

An interrupt must end the run, whatever code it lands in: a handler that catches ``Exception`` to
carry on (one input's failure, a saved query that does not bind, a verdict the timeline can do
without) must not catch an interrupt that DuckDB turned into an exception of its own. Such handlers
call ``is_interrupt`` and raise again.
"""

from __future__ import annotations

import contextlib
import weakref


def is_interrupt(error: BaseException) -> bool:
    """True when ``error`` is Ctrl-C (or SIGTERM) as it surfaces, whichever layer it reached first.

    Python raises ``KeyboardInterrupt``; a DuckDB query running at that moment is cancelled and raises
    instead: ``duckdb.InterruptException`` from ``execute``, and (DuckDB 2.0's Python client)
    ``RuntimeError('Query interrupted')`` from a relation's ``.pl()``/``.arrow()``, with no
    ``KeyboardInterrupt`` left pending.
    """
    if isinstance(error, KeyboardInterrupt) or type(error).__name__ == "InterruptException":
        return True
    return isinstance(error, RuntimeError) and str(error).strip() == "Query interrupted"


# every DuckDB connection logcorr opens (``connect``), while it lives
_live: weakref.WeakSet = weakref.WeakSet()


def connect(*args, **kwargs):
    """``duckdb.connect(*args, **kwargs)``, watched: ``interrupt_queries`` cancels what it runs."""
    import duckdb

    con = duckdb.connect(*args, **kwargs)
    _live.add(con)
    return con


def interrupt_queries() -> None:
    """Cancel the statement each live connection of ``connect`` runs (``DuckDBPyConnection.interrupt``),
    for the command's signal handler to call before it raises ``KeyboardInterrupt``. DuckDB 2.0.1's
    client runs Python's signal handlers while a statement runs, but when the handler raises it cancels
    the statement only some of the time: otherwise the Ctrl-C is lost and the query runs on (measured:
    4 of 10 Ctrl-Cs into a long count, with ``.pl()`` and ``to_arrow_reader`` alike). An idle
    connection is not affected (its next statement runs). Never raises."""
    for con in list(_live):
        with contextlib.suppress(Exception):  # a closed connection
            con.interrupt()
