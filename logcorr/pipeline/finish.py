"""The end of an ingest (``finish``): the tables summed up across inputs (rooms, aborts, processes,
sources, config), the ``IngestResult`` and its notes, ``manifest.json``, and OUT committed whole.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl

import logcorr
from logcorr.analysis import database
from logcorr.clocks import Clocks
from logcorr.inputs import paths as input_files
from logcorr.inputs.source import SourceReport, as_text
from logcorr.parsers import sglang
from logcorr.pipeline.notes import names_shown, result_notes, roles_not_seen
from logcorr.pipeline.run import IngestResult, Run
from logcorr.store import config
from logcorr.store import processes as process_rows


class NothingReadError(Exception):
    """No input gave a single record; the message lists each input and why."""


def finish(run: Run, embed: bool, progress: Callable[[str], None]) -> IngestResult:
    """The tables summed up at the end, the result and its notes; OUT committed, each writing step said
    to ``progress``. Raises ``NothingReadError`` when no input gave a record."""
    plan, reports, output = run.plan, run.reports, run.output
    if not any(r.records for r in reports):
        bounds = [
            f"{flag} {text}"
            for flag, text in (("--since", plan.opts.since), ("--until", plan.opts.until))
            if text
        ]
        inside = f" within {' '.join(bounds)}" if plan.window else ""
        said = "\n".join(f"  {e}" for r in reports for e in r.errors or r.notes[:1] or [r.source])
        raise NothingReadError(f"nothing could be read{inside}:\n" + names_shown(said, reports))
    progress(f"writing {plan.out}: rooms, aborts, processes, sources, config")
    rooms = sglang.merge_rooms(run.held["rooms"])
    output.write("rooms", rooms)
    output.write("aborts", sglang.rooms_of_aborts(run.held["aborts"], rooms))
    # the two summaries read different tables: DuckDB releases the GIL, so they run side by side (the
    # ingest's last serial step: 0.6 and 0.3 CPU s on a 1 M day)
    with ThreadPoolExecutor(1, thread_name_prefix="logcorr-summary") as pool:
        seconds = pool.submit(process_rows.batch_seconds, output.finish("batches"))
        output.write("processes", process_rows.from_events(output.finish("events")))
        output.write("batch_seconds", seconds.result())
    columns = ("source", "format", "bytes", "records", "unparsed")
    sources = {c: [getattr(r, c) for r in reports] for c in columns}
    clocks = [run.clocks.get(r.source, Clocks()).row() for r in reports]
    spans = [one_clock_span(r, row) for r, row in zip(reports, clocks, strict=True)]
    sources |= {"first_ts": [a for a, _ in spans], "last_ts": [b for _, b in spans]}
    sources |= {c: ["\n".join(getattr(r, c)) or None for r in reports] for c in ("errors", "notes")}
    sources |= {c: [row[c] for row in clocks] for c in Clocks().row()}
    output.write("sources", pl.DataFrame(sources, strict=False))
    output.write("config", config.rows(run.config_seen))
    zoned, loose = ([t for row in clocks for t in (row[f"{c}_first_ts"], row[f"{c}_last_ts"]) if t is not None]
                    for c in ("zoned", "zoneless"))  # fmt: skip
    span = zoned or loose or [t for pair in spans for t in pair if t is not None]  # never both clocks in one
    first, last = min(span, default=None), max(span, default=None)
    result = IngestResult(plan.out, reports, dict(output.rows), first_ts=first, last_ts=last, lines=run.lines)
    if zoned and loose:  # the span of the records printed without a zone, said apart
        result.zoneless_span = (min(loose), max(loose))
    for (role, kind), n in sorted(run.counts.items()):
        result.by_role_kind.setdefault(role, {})[kind] = n
    result.notes += result_notes(run)
    result.warnings += roles_not_seen(plan.opts.roles, set().union(*(r.units_seen for r in reports)))
    result.seconds = time.monotonic() - plan.started
    cut = [r.source for r in reports if r.pieces]
    if embed and cut:  # DuckDB holds a row group whole while it copies it: of such records, over 1 GB
        embed = False
        result.notes.append(
            f"{plan.out}/logcorr.duckdb holds views over the Parquet tables, not a copy of them:"
            f" {', '.join(cut)} gave records cut in pieces (over 4 MiB), which DuckDB takes over 1 GB of"
            f" memory to copy; `logcorr database -d {plan.out} --embed` copies them anyway"
        )
    dropped = [] if run.prev is not None else _inputs_replaced(plan.out, result.reports)

    def duckdb_file(folder: Path) -> None:
        how = "the tables copied in" if embed else "views over the tables"
        progress(f"writing {plan.out}/logcorr.duckdb ({how})")
        database.write(folder, embed=embed)

    progress(f"writing {plan.out}: the Parquet tables' footers and manifest.json")
    # the DuckDB file is made in the new folder before it is exposed (the tables copied in, or views by paths
    # relative to OUT); one of views by absolute path (OUT's path holds a comma: ``database.write``) is
    # written once OUT shows the new folder (meanwhile, views reading it by its own name: the tables only)
    named = not embed and "," in str(plan.out.resolve())
    output.commit(
        _manifest(run, result),
        build=None if named else duckdb_file,
        derive=duckdb_file if named else None,
        provisional=lambda tmp: database.write(tmp, saved={}, embed=False),
        keep_previous=bool(dropped),
    )
    if output.previous is not None:
        result.notes.append(
            f"REPLACED {plan.out}: it held {len(dropped)} input(s) this ingest did not read"
            f" ({', '.join(dropped[:3])}{', …' if len(dropped) > 3 else ''}); the previous OUT is kept whole as"
            f" {output.previous} (add inputs to an OUT with --append; delete {output.previous.name} when done)"
        )
    return result


def _inputs_replaced(out: Path, reports: list[SourceReport]) -> list[str]:
    """The inputs (absolute paths, as OUT's manifest names them) of the OUT an ingest without
    ``--append`` replaces that this ingest did not read; empty when OUT is new or unreadable."""
    manifest = out / "manifest.json"
    if not manifest.is_file():
        return []
    try:
        held = json.loads(manifest.read_text()).get("inputs", [])
    except (OSError, ValueError, AttributeError):
        return [f"{manifest} (unreadable: what it held cannot be told)"]
    read = {str(Path(r.source).absolute()) for r in reports}
    return [i["path"] for i in held if isinstance(i, dict) and i.get("path") and i["path"] not in read]


def _identities(run: Run) -> dict[Path, dict]:
    """Each input's identity (``Plan.identities``) with the ``sha256`` of those that waited for their content
    (``Plan.deferred``): the digest its reader took while reading it to its end, else (read in part, or by a
    reader that takes none) read now, as ``identity`` reads it."""
    done = {}
    for path, ident in run.plan.identities.items():
        digest = run.digests.get(path)
        if path not in run.plan.deferred or not ident:  # taken before reading, or it could not be read
            done[path] = ident
        elif digest is not None and digest.done:
            done[path] = {**ident, "sha256": digest.hexdigest()}
        else:
            done[path] = input_files.identity(path, run.plan.captured_at)
    return done


def _manifest(run: Run, result: IngestResult) -> dict:
    """OUT's ``manifest.json``: the inputs read (as given, their absolute ``path`` where ingest ran, their
    identity and selection), rows per table,
    the time span, the origin and its next event id, the errors; with ``--append``, of all runs."""
    plan = run.plan
    prev = run.prev or {}  # with --append: the OUT added to; rows, span and errors are of all runs
    idents = {as_text(str(p)): i for p, i in _identities(run).items()}
    inputs = prev.get("inputs", []) + [
        {"source": r.source, "path": str(Path(r.source).absolute()), "identity": idents.get(r.source, {})}
        | {"selection": plan.selection}
        | {k: getattr(r, k) for k in ("format", "records", "unparsed", "errors", "notes")}
        for r in result.reports
    ]
    rows = {t: prev.get("rows", {}).get(t, 0) + n for t, n in result.rows.items()}
    ends = [str(t) for t in (*prev.get("time_span", []), result.first_ts, result.last_ts) if t is not None]
    return {
        "logcorr_version": logcorr.__version__,
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "inputs": inputs,
        "rows": rows,
        "time_span": [min(ends), max(ends)] if ends else [None, None],
        "origin": plan.origin,
        "next_event_id": {**prev.get("next_event_id", {}), plan.origin: run.enrich.next_id},
        "errors": prev.get("errors", []) + [e for r in result.reports for e in r.errors],
    }


def one_clock_span(report: SourceReport, clock: dict) -> tuple:
    """An input's first and last record time (UTC) for ``sources.first_ts``/``last_ts``: over its zoned
    records when it holds records of both clocks (``clock``: its ``Clocks.row()``), so that a span never
    runs from a time printed without a zone to a UTC one (batch5/13: SGLang's local 19:45 beside
    Dynamo's 02:45Z of the same step is no 7-hour span); else over all its records."""
    if clock["zoned"] and clock["zoneless"]:
        return clock["zoned_first_ts"], clock["zoned_last_ts"]
    return report.first_ts, report.last_ts
