"""Ctrl-C (or SIGTERM/SIGHUP, which the command turns into the same) as it surfaces from any layer.

An interrupt must end the run, whatever code it lands in: a handler that catches ``Exception`` to
carry on (one input's failure, a saved query that does not bind, a verdict the timeline can do
without) must not catch an interrupt that DuckDB turned into an exception of its own. Such handlers
call ``is_interrupt`` and raise again.
"""

from __future__ import annotations


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
