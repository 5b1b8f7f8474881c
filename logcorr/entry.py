"""The ``logcorr`` console command's entry point (``[project.scripts]``).

It loads the command's modules (typer, polars, pyarrow, DuckDB: most of a second) under a guard, so
that Ctrl-C in that time ends with one line and exit status 130, as Ctrl-C later does, not with a
``KeyboardInterrupt`` traceback. Nothing has been read or written by then.
"""

from __future__ import annotations

import sys

from logcorr.interrupts import is_interrupt


def main() -> None:
    """Run the ``logcorr`` command (``logcorr.cli.app``); exit 130 when interrupted while loading or in
    a DuckDB query no command's own handler saw."""
    try:
        from logcorr.cli import app
    except KeyboardInterrupt:
        sys.stderr.write("logcorr: interrupted while starting; nothing was read or written\n")
        raise SystemExit(130) from None
    try:
        app()
    except KeyboardInterrupt:  # while typer still builds the command, before any handler of ours is set
        sys.stderr.write("logcorr: interrupted; nothing was written\n")
        raise SystemExit(130) from None
    except Exception as e:
        if not is_interrupt(e):
            raise
        sys.stderr.write("logcorr: interrupted\n")
        raise SystemExit(130) from None
