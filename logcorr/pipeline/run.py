"""One ingest being run (``Run``): OUT open and locked, what the stages share across inputs (the enricher
and its next event id, the processes learned, the entries already read, the totals), and each chunk's
rows written and counted in its input's report (``Run.write``).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from logcorr.clocks import Clocks
from logcorr.inputs import paths as input_files
from logcorr.inputs.source import LINE_PIECE, RECORD_PIECE, ContentDigest, SourceReport
from logcorr.pipeline.enrich import Enricher
from logcorr.pipeline.plan import OptionError, Plan
from logcorr.pipeline.stacks import learn_processes
from logcorr.store.output import Output
from logcorr.store.schema import EVENTS, RANKS, TABLES


@dataclass
class IngestResult:
    """What ``ingest`` did: OUT, one report per input, row counts per table, timing."""

    out: Path
    reports: list[SourceReport]
    rows: dict[str, int]
    by_role_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    first_ts: object = None  # over the zoned records when there are both clocks (``one_clock_span``)
    last_ts: object = None
    zoneless_span: tuple | None = None  # beside zoned records: the span of those printed without a zone
    seconds: float = 0.0
    lines: int = 0
    notes: list[str] = field(default_factory=list)  # about the run as a whole (an option not used)
    warnings: list[str] = field(default_factory=list)  # an option that named nothing in the data (stderr)


def table_schemas() -> dict[str, dict]:
    """Schema of every table ingest writes, from the table contract (``logcorr.schema.TABLES``)."""
    return {name: table.schema for name, table in TABLES.items()}


def first_event_id(origin: str) -> int:
    """The first ``event_id`` of an ingest run at ``origin``: a 13-bit tag of the name in bits 40-52,
    so the event ids of outputs from different hosts stay distinct when their folders are combined
    (and stay below 2**53, exact in JSON/JavaScript). Deterministic: a re-run gives the same ids."""
    return (zlib.crc32(origin.encode()) & 0x1FFF) << 40


class Run:
    """One ingest being run: its plan, OUT being written (``Output``), the enricher (which holds the next
    event id), the ranks and roles learned per process, the entries already read (``seen``) and the
    totals summed at the end. Opening it locks OUT; with ``--append`` it reads what OUT holds and
    raises ``OptionError`` when an input is in it already."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.reports = list(plan.missing)  # and one per input read, in reading order
        self.output = Output(
            plan.out, table_schemas(), origin=plan.origin, append=plan.append, run=plan.run_tag
        )
        self.enrich = Enricher(plan.opts.roles, first_event_id(plan.origin))
        self.counts: dict[tuple[str, str], int] = {}
        self.processes: dict = {}
        self.clocks: dict[str, Clocks] = {}  # per input: its records' clocks (the sources columns)
        self.config_seen: list[pl.DataFrame] = []  # config.observations of every chunk, summed at the end
        self.held: dict[str, list[pl.DataFrame]] = {"rooms": [], "aborts": []}  # completed at the end
        self.lines = 0
        self.digests: dict[Path, ContentDigest] = {}  # the deferred inputs' content digests, as read
        self.prev = self.output.previous_manifest()  # only with --append: the OUT added to
        in_output = self._previous() if self.prev else None
        # a journal and its capture: once (and not again what OUT holds, with --append)
        many = len(plan.inputs) > 1 or in_output
        self.seen = input_files.SeenEntries(in_output, plan.window) if many else None

    def _previous(self) -> tuple[Path, Callable[[], np.ndarray]]:
        """With ``--append``: refuse an input OUT holds already, continue its event ids, learn the ranks
        its processes logged with; returns OUT and how to get the keys of its journal entries."""
        plan, prev = self.plan, self.prev or {}
        if again := _already_in(prev, plan.identities, plan.selection):
            self.output.abort()
            raise OptionError(
                f"{', '.join(again)}: already in {plan.out} (the same file or folder, by its identity or content, "
                "whatever path names it); --append would count it twice: leave it out (without --append, ingest "
                "replaces OUT and keeps the previous one as OUT.prev)"
            )
        said = (prev.get("next_event_id") or {}).get(plan.origin, 0)
        if not (isinstance(said, int) or (isinstance(said, str) and said.isdigit())):
            self.output.abort()
            raise OptionError(
                f"{plan.out}/manifest.json: next_event_id {said!r} is not an event id: the manifest is "
                "damaged (without --append, ingest writes OUT anew and keeps this one as OUT.prev)"
            )
        next_id = int(said)
        self.enrich.next_id = max(self.enrich.next_id, next_id)
        # dumps added now find the ranks their pids logged with before
        # its files listed now: the part files this run writes are not what OUT held
        previous = _previous_events(self.output.tmp)
        ranked = previous.filter(pl.col("tp_rank").is_not_null())
        learn_processes(ranked.select("host", "pid", "role", *RANKS).unique().collect(), self.processes)
        return plan.out, lambda: _previous_entry_keys(previous)

    def write(self, report: SourceReport, ev: pl.DataFrame, tables: dict, unknown_in_dumps: int) -> None:
        """Write one chunk's events and tables, and count it in the input's report."""
        self.lines += int(ev["n_lines"].sum())
        report.units_seen.update(ev["unit"].drop_nulls().unique().to_list())
        self.output.write("events", ev)
        for name, frames in tables.items():
            if name in self.held:  # rooms merged, aborts completed with the pairings, at the end
                self.held[name].extend(compact(f) for f in frames)
                continue
            for frame in frames:
                self.output.write(name, frame)
        _count(report, ev, unknown_in_dumps)
        clock = self.clocks.setdefault(report.source, Clocks())
        clock.add(ev)
        report.zoneless = clock.zoneless
        report.zoned = clock.zoned
        for role, kind, n in ev.group_by("role", "kind").len().iter_rows():
            self.counts[(role, kind)] = self.counts.get((role, kind), 0) + n


def _count(report: SourceReport, ev: pl.DataFrame, unknown_in_dumps: int) -> None:
    """Count one chunk of events in its input's report: records, unparsed, yearless, the first entries
    read only in part, the time span."""
    report.records += ev.height
    report.unparsed += unknown_in_dumps + int((ev["kind"] == "other").sum())
    if report.format == "short":  # a journal line always has a time: null when its year is unknown
        yearless = ev.filter(pl.col("ts").is_null() & pl.col("entry_error").is_null())
        report.yearless += int(yearless["n_lines"].sum() or 0)  # lines, as the note says
    errs = ev.filter(
        pl.col("entry_error").is_not_null()
        & ~pl.col("entry_error").str.starts_with(LINE_PIECE)
        & ~pl.col("entry_error").str.starts_with(RECORD_PIECE)
    )  # pieces of an over-long line or record are said once, in the input's notes
    shown = errs.select("source_pos", "entry_error").head(5).iter_rows()
    report.errors += [f"{report.source} at {pos}: {err}" for pos, err in shown]
    if errs.height > 5:
        report.errors.append(f"{report.source}: {errs.height - 5} more entries read only in part")
    span = [t for t in (report.first_ts, report.last_ts, ev["ts"].min(), ev["ts"].max()) if t is not None]
    report.first_ts, report.last_ts = (min(span), max(span)) if span else (None, None)


def compact(df: pl.DataFrame) -> pl.DataFrame:
    """A copy of ``df`` that owns its text: polars' string views point into the buffers of the chunk
    they were cut from, so a few rows kept until the end of an ingest would keep every chunk's
    text alive (RSS growing with the input)."""
    if df.height == 0:
        return df
    return pl.from_arrow(df.to_arrow(compat_level=pl.CompatLevel.oldest()))  # type: ignore[return-value]


def _previous_events(folder: Path) -> pl.LazyFrame:
    """The events in ``folder`` (the OUT an ``--append`` adds to), its files as they are now."""
    files = list((folder / "events").glob("**/*.parquet"))
    if not files:
        return pl.LazyFrame(schema=EVENTS.schema)
    return pl.scan_parquet(files, hive_partitioning=False, glob=False)


def _previous_entry_keys(events: pl.LazyFrame) -> np.ndarray:
    """Sorted ``input_files.ENTRY_KEY`` of the single-line journal records of ``events`` (``_previous_events``),
    computed as the files stream by."""
    journal_lines = (pl.col("n_lines") == 1) & pl.col("boot_id").is_not_null() & pl.col("ts").is_not_null()
    keys = events.filter(journal_lines).select(input_files.ENTRY_KEY)
    return np.sort(keys.collect(engine="streaming").to_series().to_numpy())


def _already_in(prev: dict, identities: dict[Path, dict], selection: str) -> list[str]:
    """The inputs OUT's manifest already lists with the same selection: the same device and inode,
    or the same content digest, whatever path names them now (or the same path, for a manifest
    written before identities were kept)."""
    done = [i for i in prev.get("inputs", []) if i.get("selection", "") == selection]

    def same(path: Path, ident: dict, i: dict) -> bool:
        was = i.get("identity") or {}
        if ident.get("captured_at") != was.get("captured_at"):  # another round of the same dumps
            return False
        same_file = ident and was.get("ino") == ident.get("ino") and was.get("dev") == ident.get("dev")
        same_data = ident.get("sha256") and was.get("sha256") == ident.get("sha256")
        return bool(same_file or same_data or (not was and i.get("source") == str(path)))

    return [str(p) for p, ident in identities.items() if any(same(p, ident, i) for i in done)]
