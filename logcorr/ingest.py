"""``ingest()``, the plan of an ingest: discover → read → enrich → build the tables → write OUT.

A plain function a notebook can call; the CLI only parses options and prints what it returns. This
module is the flow; each stage is a module of ``logcorr/pipeline/`` (docs/design.md):

1. ``pipeline.plan.make_plan``: the inputs found (``inputs.paths.discover``) and put in reading order,
   the options read; nothing is opened yet.
2. ``pipeline.run.Run``: OUT opened and locked (with ``--append``, what it holds already).
3. per input, ``read_input``: ``pipeline.read`` opens it and reads record chunks by format, re-joins
   multi-line records; ``pipeline.enrich.Enricher`` turns them into ``events`` rows; ``chunk_tables``
   (here) builds every other table of the chunk (``TABLE_BUILDERS``, ``pipeline.stacks``);
   ``Run.write`` writes it. Four stages, each a chunk ahead of the next on its own thread.
4. ``pipeline.finish.finish``: the tables summed up across inputs, the manifest, OUT committed whole.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterable
from pathlib import Path

import polars as pl

from logcorr.clocks import Clocks
from logcorr.inputs import paths as input_files
from logcorr.inputs import threads
from logcorr.inputs.source import ReadOptions, SourceReport
from logcorr.interrupts import is_interrupt
from logcorr.parsers import (
    collect,
    engine_stats,
    facts,
    otel,
    prometheus,
    request_log,
    router,
    sglang,
    systemd,
)
from logcorr.pipeline.enrich import records_from_text
from logcorr.pipeline.finish import IngestResult, NothingReadError, finish
from logcorr.pipeline.notes import input_notes, progress_line
from logcorr.pipeline.plan import OptionError, make_plan
from logcorr.pipeline.read import (
    batched,
    contained,
    enriched,
    input_failure,
    input_size,
    lazy,
    open_input,
    read_chunks,
    rejoined,
)
from logcorr.pipeline.run import Run, compact, first_event_id, table_schemas
from logcorr.pipeline.stacks import dump_stacks, learn_processes
from logcorr.scratch import scratch as scratch_folder
from logcorr.store import config

# The library's names for a caller of ``ingest`` (tests, notebooks), whichever stage defines them
__all__ = [
    "TABLE_BUILDERS",
    "IngestResult",
    "NothingReadError",
    "OptionError",
    "chunk_tables",
    "first_event_id",
    "ingest",
    "read_input",
    "records_from_text",
    "table_schemas",
]

PROGRESS_FROM = 64 << 20  # an input this big (bytes) is said as it is read, and then the writing steps


# What each parsed table is made from: a function of the enriched events of one chunk.
TABLE_BUILDERS: dict[str, Callable[[pl.DataFrame], pl.DataFrame]] = {
    "batches": sglang.batches,
    "aborts": sglang.aborts,
    "transfer_errors": sglang.transfer_errors,
    "requests": router.requests,
    "rooms": sglang.rooms,
    "request_log": request_log.request_log,
    "req_time_stats": sglang.req_time_stats,
    "watchdogs": sglang.watchdogs,
    "retractions": sglang.retractions,
    "tracebacks": sglang.tracebacks,
    "lifecycle": systemd.lifecycle,
    "probes": collect.probes,
    "metrics": prometheus.metrics,
    "spans": otel.spans,
    "engine_stats": engine_stats.engine_stats,
    "facts": facts.facts,
}


def ingest(
    paths: Iterable[Path],
    out: Path,
    opts: ReadOptions | None = None,
    *,
    append: bool = False,
    captured_at: str | None = None,
    origin: str | None = None,
    progress: Callable[[str], None] | None = None,
    embed: bool = False,
) -> IngestResult:
    """Read every input, parse it and write the tables under ``out``.

    Args:
        paths: journal directories, ``.journal`` files, journalctl captures, plain SGLang/router
            logs, py-spy dumps, or folders of them (formats detected from content).
        out: the output folder (``OUT/<table>/part-N.parquet`` + ``manifest.json``).
        opts: unit selection, ``--since/--until`` and ``UNIT=ROLE`` overrides.
        append: keep the tables already in ``out`` and add to them (otherwise they are replaced).
        captured_at: when the bare py-spy dump files among ``paths`` were taken (ISO time, UTC
            unless an offset is given); dumps inside logs carry their own time.
        origin: the name of the partition this ingest writes (``OUT/<table>/origin=NAME/``), which
            also tags its event ids; by default the host(s) the data names (``default_origin``), never
            this machine's name.
        progress: called with a short line now and then: on a long input (``PROGRESS_FROM`` bytes) the
            records and bytes read, of how many, the rate and the time left; then each writing step.
        embed: copy the tables into ``OUT/logcorr.duckdb`` (``database.write``), so the file opens
            alone anywhere; False (the default): views over OUT's Parquet files by paths relative to
            OUT, which open from inside any copy of OUT (``cd OUT && duckdb logcorr.duckdb``).

    Returns:
        An ``IngestResult`` with one ``SourceReport`` per input (what was read, skipped, and why).

    Raises:
        NothingReadError: no input gave a record; nothing is written and ``out`` is untouched.
        OutputError: ``out`` exists and is not a logcorr output folder, cannot be written, or
            another run holds it (``store.LockedError``, naming its pid).
        DatabaseError: the DuckDB file cannot be written; the previous ``out`` is put back.
        OSError: the tables cannot be written (disk full); ``out`` is untouched.
    """
    plan = make_plan(paths, out, opts or ReadOptions(), append=append, captured_at=captured_at, origin=origin)
    run = Run(plan)  # OUT open (and locked); with --append, what it holds already
    try:
        with scratch_folder("ingest") as scratch:  # TMPDIR/logcorr-ingest-HOST-PID-…
            for given, fmt in plan.inputs:  # journals first, then the others in the order given
                read_input(run, given, fmt, Path(scratch), progress)
            return finish(run, embed, progress or (lambda text: None))
    except BaseException:
        run.output.abort()
        raise


def read_input(
    run: Run, given: Path, known_fmt: str, scratch: Path, progress: Callable[[str], None] | None
) -> None:
    """Read one input through the pipeline into OUT's open tables, with its ``SourceReport``. An
    exception while it is opened, sniffed or read (not while OUT is written) ends this input only: named
    in its report's errors, ``unread`` (nothing kept) or ``incomplete`` (the records before it kept).
    Raises ``OptionError`` for an input ``--append`` would count twice; ``MemoryError``, an interrupt
    and errors writing OUT go up."""
    try:
        report = open_input(run, given, known_fmt, scratch)
    except MemoryError:
        raise
    except Exception as e:  # noqa: BLE001 — one hostile input costs only itself
        if is_interrupt(e):
            raise
        error = input_failure(given, e, 0, scratch)
        run.reports.append(SourceReport(str(given), "unreadable", errors=[error], unread=True))
        return
    if report is None:
        return
    path, fmt = report.path, report.format  # type: ignore[attr-defined]
    started, total = time.monotonic(), input_size(path, fmt)
    forced = "pyspy" if fmt in ("pyspy", "pyspy-json", "bundle-pyspy") else None
    # Four stages, each a chunk ahead of the next: reading, parsing and re-joining;
    # classifying; building the tables; writing them (here).
    chunks = lazy(lambda: read_chunks(run, path, fmt, report, scratch))  # unpacking too, in the stages
    parsed = threads.ahead(batched(rejoined(chunks, report, forced)), name="logcorr-read")
    built = chunk_tables(run, threads.ahead(enriched(parsed, report, forced, run.enrich)))
    for ev, tables, unknown_in_dumps in contained(
        threads.ahead(built, name="logcorr-tables"), report, given, scratch
    ):
        run.write(report, ev, tables, unknown_in_dumps)
        if progress and max(report.bytes, total or 0) > PROGRESS_FROM:
            progress(progress_line(given, report, total, time.monotonic() - started))
    if getattr(report, "unit_cmdlines", None):  # a journal: its units' launch commands
        run.config_seen.append(config.unit_observations(report.unit_cmdlines, str(given)))
    input_notes(run.plan, report, forced, run.clocks.get(report.source, Clocks()))


def chunk_tables(run: Run, classified: Generator) -> Generator:
    """Stage 3, per chunk of events: the chunk (narrowed to the window, dumps' own rows filled in), its
    rows of every other table (``{table: [frames]}``), and how many lines inside dumps had an unknown
    shape. Keeps the chunk's ``config.observations`` (the ``config`` table is one row per process
    across chunks, written at the end)."""
    plan = run.plan
    window = plan.window
    try:
        for chunk in classified:
            # a record without a time cannot be outside
            ev = chunk.filter(input_files.in_window(window).fill_null(True)) if window else chunk
            if plan.dumps_outside:
                ev = ev.filter(~((pl.col("kind") == "pyspy") & pl.col("ts").is_null()))
            learn_processes(ev, run.processes)
            ev, tables, unknown_in_dumps = dump_stacks(ev, run.processes, plan.captured_at)
            for name, build in TABLE_BUILDERS.items():
                tables[name] = [build(ev)]
            run.config_seen.append(compact(config.observations(ev)))
            yield ev, tables, unknown_in_dumps
    finally:
        classified.close()  # stops the stage before (and journalctl) when this one stops early
