"""What every ``logcorr`` command shares on the terminal, for ``logcorr/cli.py`` (the only module that
imports this one; with it, the only ones that import typer): a failure as one line on stderr and an
exit code (``fail``), an interrupt's exit 130 naming the file left as it was (``Group``, ``writes``),
arguments shown by name in help (``Command``), progress lines (``Progress``), and the checks made
before a command reads OUT or writes ``-o`` (``checked_out``, ``readable``, ``output_file``), OUT's
DuckDB file re-pointed when OUT moved (``repoint``)."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

from logcorr.interrupts import interrupt_queries, is_interrupt
from logcorr.render.terminal import clean, shown_name


def _interrupt(signum, frame) -> None:
    interrupt_queries()  # DuckDB's own reaction to the signal is not reliable (interrupts.interrupt_queries)
    raise KeyboardInterrupt


# Ctrl-C, SIGTERM (a timeout, systemd stopping a job) and SIGHUP (the terminal closed): one handler
TERMINATING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


_writing: list[object] = []  # the file the running command replaces (``writes``), for the interrupt's line


def writes(target: object) -> None:
    """Note the file the running command writes (atomically), for the interrupt's line to name."""
    _writing[:] = [target]


class Group(TyperGroup):
    """The ``logcorr`` group: one rule for an interrupt in every command. Ctrl-C, SIGTERM and SIGHUP
    unwind the same way (``KeyboardInterrupt``: temporary files are removed on the way out), and the
    command ends with one line on stderr and exit status 130, whichever layer the interrupt surfaced in
    (``interrupts.is_interrupt``: DuckDB cancels its query and raises its own exception). Without this,
    typer ends a ``KeyboardInterrupt`` silently (0.29) or with 'Aborted!' and 1 (older releases), and
    SIGTERM kills the process with its temporary files left."""

    def invoke(self, ctx):
        # (a handler can be set in the main thread only: the app called from another, as a test may, keeps them)
        main = threading.current_thread() is threading.main_thread()
        previous = {s: signal.signal(s, _interrupt) for s in TERMINATING} if main else {}
        _writing.clear()
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            interrupted()
        except Exception as e:
            if is_interrupt(e):
                interrupted()
            if said := _unreadable_table(e):
                fail(
                    f"OUT's tables cannot be read ({said}): a damaged file? ingest the inputs again into a new folder"
                )
            raise
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)


def _unreadable_table(error: Exception) -> str | None:
    """The first line of a DuckDB or polars error that reading a damaged Parquet part raises (damaged
    inside, past the ends ``check_intact`` reads: DuckDB's IO, invalid input or bare ``Error`` such as
    'Out of buffer'; any error naming Parquet), else None: a query's own mistakes are other types."""
    said = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    library = type(error).__module__.lstrip("_").split(".")[0]
    reading = type(error).__name__ in ("Error", "IOException", "InvalidInputException")
    if library == "duckdb" and reading or library in ("duckdb", "polars") and "parquet" in said.lower():
        return said
    return None


def interrupted() -> None:
    """Fail with exit 130: ``interrupted``, naming the file the command was replacing (``writes``)."""
    fail(f"interrupted; {_writing[0]} left as it was" if _writing else "interrupted", 130)


class PlainArgument(TyperArgument):
    """An argument shown in help by its name alone, as click shows one (``PATH...``, ``[NAME_OR_SQL]``),
    not with typer's braces and Python type (``{PATH}...``, ``PATH <list[Path]>``, ``<int>``)."""

    def shown(self) -> str:
        name = self.metavar or (self.name or "").upper()
        return f"{name}..." if self.nargs != 1 else name

    def display_type_rich(self, ctx) -> None:
        return None

    def get_usage_pieces(self, ctx) -> list[str]:
        return [self.shown() if self.required else f"[{self.shown()}]"]

    def get_help_record(self, ctx) -> tuple[str, str] | None:
        record = super().get_help_record(ctx)
        return record and (self.shown(), record[1])


class Command(TyperCommand):
    """A command whose arguments are ``PlainArgument``s (give it as ``@app.command(cls=Command)``)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, TyperArgument):
                param.__class__ = PlainArgument


def fail(message: str, code: int = 1) -> None:
    """End the command: ``logcorr: MESSAGE`` (cleaned for a terminal) on stderr, exit status ``code``."""
    typer.echo(clean(f"logcorr: {message}"), err=True)
    raise typer.Exit(code)


class Progress:
    """Progress lines on stderr: rewritten in place on a terminal; in a log file or a pipe at most
    one every ``every`` seconds, so a day's ingest leaves a handful of lines, not hundreds."""

    def __init__(self, every: float = 10.0) -> None:
        self.tty = sys.stderr.isatty()
        self.every = every
        self.last = time.monotonic()
        self.shown = False

    def __call__(self, text: str) -> None:
        if self.tty:  # cut to the terminal's width: a wrapped line is not rewritten in place
            width = shutil.get_terminal_size().columns - 5
            sys.stderr.write(f"\r\x1b[K  … {text if len(text) <= width else text[: width - 1] + '…'}")
            sys.stderr.flush()
            self.shown = True
        elif time.monotonic() - self.last >= self.every:
            self.last = time.monotonic()
            typer.echo(clean(f"  … {text}"), err=True)

    def done(self) -> None:
        if self.tty and self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def readable(out: Path) -> None:
    """Fail (one line, exit 1, as docs/reliability.md says) when OUT exists but this user cannot read
    it; typer's own check (``readable``, off on every OUT option) would answer with a usage error."""
    if out.is_dir() and not os.access(out, os.R_OK | os.X_OK):  # (a file is refused as no folder later)
        fail(
            f"{shown_name(str(out))}: permission denied: this user cannot read OUT (run as its owner, or give "
            "another folder)"
        )


def checked_out(out: Path) -> Path:
    """``-d OUT``'s check, before any command reads it: an OUT this user cannot read is refused (exit
    1); a folder combined from two separate ingests of one origin is refused (exit 1, naming both
    parts), not read with every record twice."""
    from logcorr.analysis.database import DatabaseError, refuse_two_ingests_of_one_origin
    from logcorr.store.output import OutputError, check_intact, reading, stable_out

    readable(out)
    try:
        check_intact(stable_out(out))
        with reading(out):
            refuse_two_ingests_of_one_origin(out)
    except (DatabaseError, OutputError) as e:
        fail(str(e))
    return out


def repoint(out: Path) -> None:
    """Re-point ``OUT/logcorr.duckdb`` when OUT was copied or moved since it was written (its views
    would read the original's files, or none), saying so on stderr; queries themselves never read it."""
    from logcorr.analysis import database as db

    old = db.points_elsewhere(out)
    if old is None:
        return
    try:
        db.write(out, embed=False)
        typer.echo(
            f"logcorr: re-pointed {out}/logcorr.duckdb at {out} (it read the tables of {old})", err=True
        )
    except Exception as e:  # noqa: BLE001 — a read-only copy still answers queries; say what to do
        if is_interrupt(e):
            raise
        typer.echo(
            f"logcorr: {out}/logcorr.duckdb reads {old}; run logcorr database -d {out} ({e})", err=True
        )


def output_file(path: Path) -> Path:
    """``-o``'s file checked before any work (``render.outputs.check_output_file``: exit 1 and one line),
    and noted for an interrupt's line to name."""
    from logcorr.render.outputs import RenderOptionError, check_output_file

    try:
        check_output_file(path)
    except RenderOptionError as e:
        fail(str(e))
    writes(path)
    return path
