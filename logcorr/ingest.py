"""``ingest()``: inputs → readers → re-joined records → parsed tables → OUT/ (Parquet + manifest).

A plain function a notebook can call; the CLI only parses options and prints what it returns.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import re
import time
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

import logcorr
from logcorr.clocks import TIME_OF_DAY, Clocks, clock_note, on_first_day, zoneless
from logcorr.inputs import (
    bundle,
    containers,
    dumps,
    export,
    exports,
    journal,
    scrape,
    sniff,
    text,
    threads,
    traces,
)
from logcorr.inputs import paths as input_files
from logcorr.inputs.rejoin import Rejoiner
from logcorr.inputs.source import (
    LINE_PIECE,
    MAX_RECORD_BYTES,
    MAX_RECORD_LINES,
    OUTSIDE_BUNDLE,
    RECORD_PIECE,
    InputError,
    ReadOptions,
    SourceReport,
    as_text,
    failure,
)
from logcorr.inputs.text import has_compose_prefix, paste_width, text_records
from logcorr.interrupts import is_interrupt
from logcorr.parsers import collect, journald, otel, prometheus, pyspy, request_log, router, sglang, systemd
from logcorr.parsers.prefix import date_yearless, split_prefix
from logcorr.roles import RoleFlow, record_roles
from logcorr.scratch import scratch as scratch_folder
from logcorr.store import config, database
from logcorr.store import processes as process_rows
from logcorr.store.output import Output
from logcorr.store.schema import EVENTS, RANKS, TABLES, UTC_US

# Inputs a plan names but never opens: skipped by name or kind, or outside the bundle that named them.
NOT_READ = ("skipped", OUTSIDE_BUNDLE, bundle.KEPT)
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
}
# SGLang's request-metrics files (--export-metrics-to-file), named by the local hour they cover
METRICS_FILE = re.compile(r"^sglang-request-metrics-(?P<day>\d{8})_(?P<hour>\d\d)\.log")
# records whose unit says what they are, whatever their text: a scrape's samples, a trace's spans
UNIT_KINDS = {prometheus.UNIT: "metric", **{otel.UNIT + r: "span" for r in ("", "/prefill", "/decode")}}


class OptionError(ValueError):
    """An option's value cannot be used; the message names the option."""


class NothingReadError(Exception):
    """No input gave a single record; the message lists each input and why."""


@dataclass
class IngestResult:
    """What ``ingest`` did: OUT, one report per input, row counts per table, timing."""

    out: Path
    reports: list[SourceReport]
    rows: dict[str, int]
    by_role_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    first_ts: object = None
    last_ts: object = None
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


class _Enricher:
    """Turns re-joined records into ``events`` rows (plus the in-memory ``body`` column)."""

    def __init__(self, roles: dict[str, str], first_id: int = 0) -> None:
        self.roles = roles
        self.next_id = first_id
        self.years: dict[str, int] = {}  # per input: the last year printed in one of its lines
        self.flow = RoleFlow()  # the roles shown per process and per input, across chunks

    def _fix_years(self, head: pl.DataFrame, source: str) -> pl.DataFrame:
        """Date the rows whose header prints no year (glog, PyTorch, vLLM) that ``split_prefix``
        could not date within the chunk, with the last year this input printed; else they stay
        null. Never a year that was not printed."""
        year = self.years.get(source)
        if year is not None and head["yearless"].null_count() < head.height:
            head = head.with_columns(
                pl.coalesce(pl.col("log_ts"), date_yearless(pl.col("yearless"), pl.lit(year))).alias("log_ts")
            )
        head = head.with_columns(
            pl.when(pl.col("log_ts").is_null()).then(pl.col("printed_time")).alias("printed_time")
        )
        known = head.filter(pl.col("yearless").is_null())["log_ts"].drop_nulls()
        if known.len():
            self.years[source] = int(known.dt.year()[-1])
        return head.drop("yearless")

    def __call__(
        self, recs: pl.DataFrame, unit_roles: dict[str, str], forced_kind: str | None
    ) -> pl.DataFrame:
        source = recs["source"][0] if recs.height else ""
        head = _in_range(self._fix_years(split_prefix(recs["message"]), source))
        df = pl.concat([recs, head.rename({"pid": "header_pid", "host": "header_host"})], how="horizontal")
        df = df.with_columns(
            pl.int_range(self.next_id, self.next_id + df.height, dtype=pl.Int64).alias("event_id"),
            pl.coalesce("ts", pl.col("log_ts").dt.replace_time_zone("UTC")).alias("ts"),
            pl.coalesce("pid", "header_pid").alias("pid"),
            pl.coalesce("host", "header_host").alias("host"),  # a host the line names (NCCL, UCX)
            pl.lit("unknown").alias("role"),  # classify's view; the role is worked out below
        ).drop("header_pid", "header_host", "tid")
        self.next_id += df.height
        parsed = sglang.classify(df)
        kind = pl.lit(forced_kind) if forced_kind else parsed["kind"]
        if "unit" in df.columns and (by_unit := df["unit"].is_in(list(UNIT_KINDS))).any():
            kind = pl.when(by_unit).then(df["unit"].replace(UNIT_KINDS)).otherwise(kind)
        # systemd's message about a unit names it: a text capture's record has only the syslog ident
        lifecycle = parsed["kind"] == "lifecycle"
        if lifecycle.any():
            named = df["body"].str.extract(systemd.NAMED_UNIT, 1)
            # "Starting …..." naming no unit, on a record no unit or process names: a program's own line
            plain = lifecycle & named.is_null() & df["unit"].is_null() & df["pid"].is_null()
            plain = (plain & df["body"].str.contains(systemd.PLAIN_WORDING)).fill_null(False)
            if plain.any():
                kind = pl.when(plain).then(pl.lit("other")).otherwise(kind)
            df = df.with_columns(
                pl.when(lifecycle & named.is_not_null()).then(named).otherwise(pl.col("unit")).alias("unit")
            )
        df = df.with_columns(
            record_roles(df, parsed["content_role"], {**unit_roles, **self.roles}).alias("role"),
            pl.coalesce(pl.col("level"), parsed["level"]).alias("level"),
            kind.alias("kind"),
            parsed["rid"].alias("rid"),
            parsed["request_id"].alias("request_id"),
            parsed["bootstrap_room"].alias("bootstrap_room"),
            parsed[
                router.PARSED
            ],  # a router line's request fields, for the requests table (not an events column)
            pl.coalesce(pl.col("entry_error"), pl.col("time_error"), parsed["room_error"]).alias(
                "entry_error"
            ),
        ).drop("time_error")
        df = df.with_columns(  # whether its ts has a known zone (clocks.zoneless): events.zoned
            pl.when(pl.col("ts").is_not_null()).then(~zoneless(df).fill_null(False)).alias("zoned")
        )
        return self.flow(df)  # the role of a record's process, pod or input (logcorr/roles.py)


def _in_range(head: pl.DataFrame) -> pl.DataFrame:
    """``head`` (``split_prefix``'s columns) with a printed time outside 1970-9999 dropped (the record is
    kept without a time, as a journal's out-of-range receive time is) and said in ``time_error``."""
    year = pl.col("log_ts").dt.year()
    bad = pl.col("log_ts").is_not_null() & ((year < 1970) | (year > 9999))
    says = pl.format(
        "printed time {} is not from 1970 to 9999: kept without a time",
        pl.col("log_ts").dt.strftime("%Y-%m-%d %H:%M:%S"),
    )
    return head.with_columns(
        pl.when(bad).then(says).alias("time_error"), pl.when(~bad).then(pl.col("log_ts")).alias("log_ts")
    )


def records_from_text(text: str, source: str = "text") -> pl.DataFrame:
    """The records ``logcorr ingest`` makes of one plain text (a log file, a paste), in memory: the same
    reader (``inputs.text.text_records``), re-joiner and enrichment as an ingest of a file holding ``text``,
    without writing tables. Returns the ``events`` columns (``event_id`` from 0, ``ts`` the printed
    time read as UTC, ``role`` from content) plus ``header`` and ``body`` (``parsers.prefix.split_prefix``),
    one row per logical record; a bare py-spy dump (``inputs.sniff.sniff_bytes``) is one ``pyspy`` record,
    as at ingest (its stacks are parsed at ingest). Never raises on any text."""
    data = text.encode("utf-8", errors="replace")
    fmt = sniff.sniff_bytes(data[:65536])
    forced = "pyspy" if fmt in ("pyspy", "pyspy-json") else None
    fmt = fmt if fmt in ("json", "short") else "text"
    lines = journald.split_lines(data)
    width = paste_width(lines) if fmt == "text" else None
    recs = text_records(
        lines, fmt, source, 1, compose=has_compose_prefix(lines), width=width
    )  # `text`: the str
    rejoin = Rejoiner(join_all=forced is not None)
    joined = pl.concat([rejoin.feed(recs), rejoin.finish()])
    columns = {**EVENTS.schema, "header": pl.String, "body": pl.String}
    if joined.height == 0:
        return pl.DataFrame(schema=columns)
    return _Enricher({})(joined, {}, forced).select(list(columns))


def _stacks(
    events: pl.DataFrame, processes: dict, captured_at: datetime | None
) -> tuple[pl.DataFrame, dict[str, list[pl.DataFrame]], int]:
    """Parse the py-spy dumps among ``events`` (and the faulthandler stacks a record such as a fatal
    Python error holds) into rows of the stacks and captures tables. Returns
    ``events`` with the role, host and ranks a dump revealed filled in its own row (a bare file),
    the ``stacks`` and ``captures`` frames, and how many lines inside dumps had an unknown shape.

    Ranks come from the process title, else the rank prefix of the line that carried the dump, else
    the ranks (and role, host) the same pid logged with in ``events`` (``processes``, see
    ``_learn_processes``). A dump without a time of its own (a bare file) gets ``captured_at``, in
    ``captures`` and as the ``ts`` of its own ``events`` row. That row keeps ``pid`` null: it is a
    file, not a record of the process, and must not look like a new process to the queries.
    """
    unknown, learned, tables = 0, [], {"stacks": [], "captures": []}
    # a faulthandler dump (in a fatal Python error's record): a literal test first, on every record
    maybe = events.filter(pl.col("message").str.contains("(most recent call first):", literal=True))
    faults = maybe.filter((pl.col("kind") != "pyspy") & pl.col("message").str.contains(pyspy.FAULTHANDLER))
    for row in pl.concat([events.filter(pl.col("kind") == "pyspy"), faults]).iter_rows(named=True):
        result = pyspy.parse_dump(
            row["message"],
            source=row["source"],
            source_pos=row["source_pos"],
            capture_ts=row["ts"] if row["ts"] is not None else captured_at,
            host=row["host"],
            pid_hint=row["pid"],
            ranks_hint={k: row[k] for k in RANKS if row[k] is not None} or None,
            role_hint=row["role"] if row["role"] != "unknown" else None,
        )
        frames, captures = result.frames, result.captures
        for pid in captures["pid"].drop_nulls().unique().to_list():
            known = processes.get((row["host"], pid)) or processes.get((None, pid))
            if known:
                frames, captures = (_fill_process(df, pid, known) for df in (frames, captures))
        tables["stacks"].append(frames)
        tables["captures"].append(captures)
        unknown += len(result.unparsed_lines)
        main = captures.filter(pl.col("pid").is_not_null()).head(1)
        if main.height:  # the dump's own row: the capture's time where the record had none
            m = main.row(0, named=True)
            fill = {"event_id": row["event_id"], "ts": row["ts"] or m["capture_ts"]}
            if row["role"] == "unknown":
                fill |= {"role": m["role"] or "unknown", "host": m["host"], **{k: m[k] for k in RANKS}}
            elif row["host"] is None and all(row[k] is None for k in RANKS):  # a bare file its frames name
                fill |= {"host": m["host"], **{k: m[k] for k in RANKS}}
            learned.append(fill)
    if learned:
        schema = {"event_id": pl.Int64, "ts": UTC_US, "role": pl.String, "host": pl.String, **RANKS}
        events = events.update(pl.DataFrame(learned, schema=schema), on="event_id")
    return events, tables, unknown


def _fill_process(df: pl.DataFrame, pid: int, known: dict) -> pl.DataFrame:
    this = pl.col("pid") == pid
    return df.with_columns(
        pl.when(this).then(pl.col(c).fill_null(pl.lit(v, df.schema[c]))).otherwise(pl.col(c)).alias(c)
        for c, v in known.items()
        if c in df.columns
    )


def _read_order(inputs: list[tuple[Path, str]]) -> tuple[list[tuple[Path, str]], dict[Path, int]]:
    """The inputs in reading order: journals first (the fullest record of a host: a capture given
    with its journal then adds only the entries the journal lacks, and a traceback or dump the two
    share stays one record), each file or folder once however often it was given or reached (by a
    link, a hard link, ``a/`` and ``a``: one device and inode). Returns the inputs and, per input
    kept, how many more times it came."""
    kept: dict[tuple[int, int] | str, tuple[Path, str]] = {}
    repeats: dict[Path, int] = {}
    for path, fmt in inputs:
        key: tuple[int, int] | str = str(path)  # a pipe is read as it is
        if path.is_file() or path.is_dir():
            st = path.stat()
            key = (st.st_dev, st.st_ino)
        if key in kept:
            first = kept[key][0]
            repeats[first] = repeats.get(first, 0) + 1
        else:
            kept[key] = (path, fmt)
    journal_first = sorted(kept.values(), key=lambda i: not _is_journal(*i))
    return journal_first, repeats


def _is_journal(path: Path, fmt: str) -> bool:
    """A journal folder or file: by format, by its first bytes, or by a name like ``system.journal~``
    or ``user-1000.journal.xz`` (what is packed cannot be looked into before it is unpacked); never
    an input that is not read (``NOT_READ``)."""
    if fmt in NOT_READ:
        return False
    if fmt == "journal-dir" or ".journal" in path.name:
        return True
    try:
        return path.is_file() and sniff.sniff(path) == "journal"
    except OSError:
        return False


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
            also tags its event ids; by default the host(s) the data names (``_origin``), never
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
    plan = _plan(paths, out, opts or ReadOptions(), append=append, captured_at=captured_at, origin=origin)
    run = _Run(plan)  # OUT open (and locked); with --append, what it holds already
    try:
        with scratch_folder("ingest") as scratch:  # TMPDIR/logcorr-ingest-HOST-PID-…
            for given, fmt in plan.inputs:  # journals first, then the others in the order given
                _read_input(run, given, fmt, Path(scratch), progress)
            return _finish(run, embed, progress or (lambda text: None))
    except BaseException:
        run.output.abort()
        raise


# --- the plan: what one ingest reads and how, decided before anything is read ---


@dataclass
class _Plan:
    """What one ingest reads and how (``_plan``); nothing in it changes once reading starts."""

    out: Path
    opts: ReadOptions
    append: bool
    started: float  # time.monotonic() at the start
    captured_at: datetime | None  # --captured-at, UTC
    missing: list[SourceReport]  # the reports of the paths not found (``_Run.reports`` starts with them)
    inputs: list[tuple[Path, str]]  # (path, format or "?") in reading order (``_read_order``)
    repeats: dict[Path, int]  # per input kept, how many more times it was given
    window: tuple[datetime | None, datetime | None] | None  # --since/--until (``_window``)
    dumps_outside: bool  # --captured-at is outside the window: so are the bare dumps
    origin: str
    selection: str  # what of an input was read: the same path read with other units or times is another input
    identities: dict[Path, dict]  # per input read, ``input_files.identity``
    run_tag: str  # 8 hex digits naming what this ingest read (``Output``'s ``run``)
    roots: dict[Path, Path]  # per input found in a folder, the PATH given that holds it
    window_notes: list[str]  # how a --since/--until without a date was dated (``_dated``)


def _plan(
    paths: Iterable[Path],
    out: Path,
    opts: ReadOptions,
    *,
    append: bool,
    captured_at: str | None,
    origin: str | None,
) -> _Plan:
    """Find the inputs (``input_files.discover``; a path not found gets a ``missing`` report), put them
    in reading order and read the options. Raises ``OptionError`` for a time option that cannot be used,
    or a ``$LOGCORR_STREAM_CAP`` that is no size (checked before anything is read, pipe or not)."""
    captured = _parse_time("--captured-at", captured_at) if captured_at else None
    try:
        input_files.stream_cap()
    except ValueError as e:
        raise OptionError(str(e)) from None
    started = time.monotonic()
    missing: list[SourceReport] = []
    found: list[tuple[Path, str]] = []
    roots: dict[Path, Path] = {}
    for given in map(Path, paths):
        problems: list[tuple[Path, str]] = []  # what of a folder could not be listed or looked at
        try:
            inside = input_files.discover(given, opts, problems)
            roots.update((p, given) for p, _ in inside if p != given)
            found += inside
        except InputError as e:
            missing.append(SourceReport(str(given), "missing", errors=[str(e)], unread=True))
        except MemoryError:
            raise
        except Exception as e:  # noqa: BLE001 — one hostile PATH costs only itself
            if is_interrupt(e):
                raise
            problems.append((given, failure(given, e)))
        missing += [SourceReport(str(p), "unreadable", errors=[why], unread=True) for p, why in problems]
    inputs, repeats = _read_order(found)
    opts, window_notes = _dated(opts, inputs, out if append else None)
    window = _window(opts, inputs)
    since, until = window or (None, None)
    at = captured  # a bare dump's time: when it is outside --since/--until, so are the dumps
    dumps_outside = at is not None and not (since or at) <= at <= (until or at)
    origin = origin or _origin(inputs, out, append)
    selection = (
        f"units={','.join(opts.units)} all_units={opts.all_units} since={opts.since} until={opts.until}"
    )
    identities = {p: input_files.identity(p, captured) for p, fmt in inputs if fmt not in NOT_READ}
    # the part-<n>-<tag>.parquet of two outputs differ unless they read the same data
    idents = sorted(json.dumps(i, sort_keys=True) for i in identities.values())
    run_tag = hashlib.sha256(json.dumps([origin, selection, idents]).encode()).hexdigest()[:8]
    return _Plan(
        out=out,
        opts=opts,
        append=append,
        started=started,
        captured_at=captured,
        missing=missing,
        inputs=inputs,
        repeats=repeats,
        window=window,
        dumps_outside=dumps_outside,
        origin=origin,
        selection=selection,
        identities=identities,
        run_tag=run_tag,
        roots=roots,
        window_notes=window_notes,
    )


def _dated(
    opts: ReadOptions, inputs: list[tuple[Path, str]], out: Path | None
) -> tuple[ReadOptions, list[str]]:
    """``opts`` with a ``--since/--until`` given as a bare time of day (``21:34``) dated on the data's
    first day (UTC), as every command does (``clocks.on_first_day``), and what to say about it. The
    data's days are known before reading for journals (their first and last entries) and, with
    ``--append``, for OUT (``out``); other inputs are read only later: then a clear refusal
    (``OptionError``)."""
    bare = [t for t in (opts.since, opts.until) if t and TIME_OF_DAY.fullmatch(t.strip())]
    if not bare:
        return opts, []
    ends = [t for p, fmt in inputs if _is_journal(p, fmt) for t in journal.entry_span(p) if t]
    if out is not None and (out / "events").is_dir():
        ts = pl.scan_parquet(out / "events" / "**" / "*.parquet", hive_partitioning=False).select("ts")
        ends += [
            t
            for t in ts.select(pl.col("ts").min().alias("a"), pl.col("ts").max().alias("b")).collect().row(0)
            if t
        ]
    first, last = (min(ends), max(ends)) if ends else (None, None)
    notes, dated = [], {}
    for flag, given in (("--since", opts.since), ("--until", opts.until)):
        if not given or not TIME_OF_DAY.fullmatch(given.strip()):
            continue
        if first is None:
            raise OptionError(
                f"{flag} {given!r}: a time of day needs a date, and the data's first day is known before"
                " reading only for a journal (or OUT with --append); give the date too ('2025-10-29 21:30')"
            )
        dated[flag], note = on_first_day(given, first, last)
        notes.append(f"{flag} {note}")
    return replace(
        opts, since=dated.get("--since", opts.since), until=dated.get("--until", opts.until)
    ), notes


# journalctl's own --since/--until forms that are no ISO time (systemd.time(7)): a keyword, a
# relative time ("-1h", "+3h 5min", "2h ago"), Unix seconds after "@".
JOURNALCTL_TIME = re.compile(
    r"(?:now|today|yesterday|tomorrow|@\d+(?:\.\d+)?|[+-]?\s*\d+\s*[a-zµ]+(?:\s+\d+\s*[a-zµ]+)*(?:\s+ago)?)",
    re.IGNORECASE,
)


def _window(
    opts: ReadOptions, inputs: list[tuple[Path, str]]
) -> tuple[datetime | None, datetime | None] | None:
    """``--since/--until`` as UTC datetimes: the window every record's first line must be in (for
    a journal, journalctl reads it a little wider: ``journal.journalctl_window``). ISO forms:
    ``2025-10-29 21:30``, ``2025-10-29T21:30:00+02:00``; no offset means UTC. Raises ``OptionError``
    naming the option for anything else, unless every input is a journal: journalctl also takes
    its own syntax (``yesterday``, ``-1h``), and then cuts alone (None)."""
    if not opts.since and not opts.until:
        return None
    others = [str(p) for p, fmt in inputs if fmt not in NOT_READ and not _is_journal(p, fmt)]
    try:
        bounds = (("--since", opts.since), ("--until", opts.until))
        window = tuple(_parse_time(flag, text) if text else None for flag, text in bounds)
    except OptionError as e:
        if not others and all(JOURNALCTL_TIME.fullmatch(t.strip()) for t in (opts.since, opts.until) if t):
            return None
        if not others:  # refused here, not by journalctl (whose refusal reads as a damaged journal)
            raise OptionError(
                f"{e}; with journals journalctl's own forms work too ('yesterday', 'today', '-1h', '2h ago',"
                " '@1761773640')"
            ) from None
        raise OptionError(
            f"{e}; journalctl's own forms ('yesterday', '-1h') work only when every input is a journal, "
            f"and {', '.join(others[:3])}{' …' if len(others) > 3 else ''} is not"
        ) from None
    if window[0] and window[1] and window[1] < window[0]:
        raise OptionError(
            f"--until {opts.until} is before --since {opts.since}: nothing could be in the window"
        )
    return window


# --- the run: OUT being written and what the stages share ---


class _Run:
    """One ingest being run: its plan, OUT being written (``Output``), the enricher (which holds the next
    event id), the ranks and roles learned per process, the entries already read (``seen``) and the
    totals summed at the end. Opening it locks OUT; with ``--append`` it reads what OUT holds and
    raises ``OptionError`` when an input is in it already."""

    def __init__(self, plan: _Plan) -> None:
        self.plan = plan
        self.reports = list(plan.missing)  # and one per input read, in reading order
        self.output = Output(
            plan.out, table_schemas(), origin=plan.origin, append=plan.append, run=plan.run_tag
        )
        self.enrich = _Enricher(plan.opts.roles, first_event_id(plan.origin))
        self.counts: dict[tuple[str, str], int] = {}
        self.processes: dict = {}
        self.clocks: dict[str, Clocks] = {}  # per input: its records' clocks (the sources columns)
        self.config_seen: list[pl.DataFrame] = []  # config.observations of every chunk, summed at the end
        self.held: dict[str, list[pl.DataFrame]] = {"rooms": [], "aborts": []}  # completed at the end
        self.lines = 0
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
        _learn_processes(ranked.select("host", "pid", "role", *RANKS).unique().collect(), self.processes)
        return plan.out, lambda: _previous_entry_keys(previous)

    def write(self, report: SourceReport, ev: pl.DataFrame, tables: dict, unknown_in_dumps: int) -> None:
        """Write one chunk's events and tables, and count it in the input's report."""
        self.lines += int(ev["n_lines"].sum())
        report.units_seen.update(ev["unit"].drop_nulls().unique().to_list())
        self.output.write("events", ev)
        for name, frames in tables.items():
            if name in self.held:  # rooms merged, aborts completed with the pairings, at the end
                self.held[name].extend(_compact(f) for f in frames)
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


# --- reading one input: open it, then four stages, each a chunk ahead of the next ---


def _read_input(
    run: _Run, given: Path, known_fmt: str, scratch: Path, progress: Callable[[str], None] | None
) -> None:
    """Read one input through the pipeline into OUT's open tables, with its ``SourceReport``. An
    exception while it is opened, sniffed or read (not while OUT is written) ends this input only: named
    in its report's errors, ``unread`` (nothing kept) or ``incomplete`` (the records before it kept).
    Raises ``OptionError`` for an input ``--append`` would count twice; ``MemoryError``, an interrupt
    and errors writing OUT go up."""
    try:
        report = _open_input(run, given, known_fmt, scratch)
    except MemoryError:
        raise
    except Exception as e:  # noqa: BLE001 — one hostile input costs only itself
        if is_interrupt(e):
            raise
        error = _failure(given, e, 0, scratch)
        run.reports.append(SourceReport(str(given), "unreadable", errors=[error], unread=True))
        return
    if report is None:
        return
    path, fmt = report.path, report.format  # type: ignore[attr-defined]
    started, total = time.monotonic(), _size(path, fmt)
    forced = "pyspy" if fmt in ("pyspy", "pyspy-json", "bundle-pyspy") else None
    # Four stages, each a chunk ahead of the next: reading, parsing and re-joining;
    # classifying; building the tables; writing them (here).
    chunks = _lazy(lambda: _chunks(run, path, fmt, report, scratch))  # unpacking too, in the stages
    parsed = threads.ahead(_joined(chunks, report, forced), name="logcorr-read")
    built = _tables(run, threads.ahead(_records(parsed, report, forced, run.enrich)))
    for ev, tables, unknown_in_dumps in _contained(
        threads.ahead(built, name="logcorr-tables"), report, given, scratch
    ):
        run.write(report, ev, tables, unknown_in_dumps)
        if progress and max(report.bytes, total or 0) > PROGRESS_FROM:
            progress(_progress_line(given, report, total, time.monotonic() - started))
    if getattr(report, "unit_cmdlines", None):  # a journal: its units' launch commands
        run.config_seen.append(config.unit_observations(report.unit_cmdlines, str(given)))
    _input_notes(run.plan, report, forced, run.clocks.get(report.source, Clocks()))


def _lazy(make: Callable[[], Iterator[pl.DataFrame]]) -> Iterator[pl.DataFrame]:
    """The chunks of ``make()``, called when the first is asked for: on the reading thread, where what
    it raises is the input's error (``_contained``)."""
    chunks = make()
    try:
        yield from chunks
    finally:
        getattr(chunks, "close", lambda: None)()


def _contained(stages: Iterator, report: SourceReport, given: Path, scratch: Path) -> Iterator:
    """The items of one input's reading stages; an exception they raise ends them, named in ``report``
    (``InputError`` as it says, any other by ``_failure``), the items before it kept. ``AlreadyIngested``
    becomes ``OptionError``; ``MemoryError`` goes up."""
    try:
        yield from stages
    except input_files.AlreadyIngested as e:
        raise OptionError(str(e)) from None
    except InputError as e:
        report.errors.append(str(e))
        report.unread = report.records == 0
    except MemoryError:
        raise
    except Exception as e:  # noqa: BLE001 — one hostile input costs only itself
        if is_interrupt(e):
            raise
        report.errors.append(_failure(given, e, report.records, scratch))
        report.unread = report.records == 0
        report.incomplete = not report.unread


def _failure(given: Path, e: BaseException, records: int, scratch: Path) -> str:
    """The error text of an input whose reading raised ``e`` (``failure``); a disk full or over quota
    names the folder that is: while an input is read, logcorr writes only its copy in ``scratch`` (a
    ``.gz``/``.xz`` unpacked, a pipe spooled, a log platform's export flattened), in TMPDIR."""
    if not (isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)):
        return failure(given, e, records)
    kept = f"read only in part: {records:,} records, then " if records else "not read: "
    return (
        f"{given}: {kept}{scratch.parent} (TMPDIR), where logcorr unpacks or copies it, is full ({e.strerror}):"
        " set TMPDIR to a folder with room"
    )


def _size(path: Path, fmt: str) -> int | None:
    """The bytes an input's reader will count (``SourceReport.bytes``) when they are its file's size:
    None for a journal (journalctl's output is counted) and a packed file (its unpacked bytes)."""
    if fmt in ("journal", "journal-dir", "xz", "gz") or not path.is_file():
        return None
    return path.stat().st_size


def _progress_line(given: Path, report: SourceReport, total: int | None, seconds: float) -> str:
    """``given: 17,878 records, 40 of 72 MB (55%), 12 MB/s, about 3 s left``; without ``total``
    (or once the bytes counted pass it) the bytes read and the rate only."""
    done, rate = report.bytes, report.bytes / seconds if seconds > 0 else 0.0
    line = f"{given}: {report.records:,} records, "
    if total and done <= total:
        line += f"{done / 1e6:,.0f} of {total / 1e6:,.0f} MB ({100 * done / total:.0f}%)"
        left = f", about {(total - done) / rate:,.0f} s left" if rate else ""
    else:
        line, left = line + f"{done / 1e6:,.0f} MB read", ""
    return f"{line}, {rate / 1e6:,.1f} MB/s{left}"


def _open_input(run: _Run, given: Path, known_fmt: str, scratch: Path) -> SourceReport | None:
    """The input's ``SourceReport`` with its format found, or None when there is nothing to read
    (skipped by name, unreadable, empty: said in its report)."""
    if known_fmt == OUTSIDE_BUNDLE:  # a bundle reads only its own files
        note = f"{given}: outside the bundle given (its manifest or a link names another file of this machine): not read"
        run.reports.append(SourceReport(str(given), "skipped", notes=[note]))
        return None
    if known_fmt == bundle.KEPT:  # a bundle's dmesg.txt, nvidia-smi.txt: listed with why
        run.reports.append(SourceReport(str(given), "skipped", notes=[bundle.kept_note(given)]))
        return None
    if known_fmt == "skipped":  # not an error: a note, kept out of manifest["errors"]
        why = input_files.not_a_log(given, run.plan.roots.get(given))
        pod = containers.skip_pod(given, run.plan.opts)
        fmt = "skipped-pod" if pod and not why else "skipped"
        run.reports.append(SourceReport(str(given), fmt, notes=[why or pod or ""]))
        return None
    path = given
    try:
        if known_fmt == "?" and not path.is_file():  # a pipe: read it once, into a file
            path = input_files.spool(given, scratch)
        fmt = sniff.sniff(path) if known_fmt == "?" else known_fmt
    except OSError as e:
        error = _failure(given, e, 0, scratch) if e.errno in (errno.ENOSPC, errno.EDQUOT) else None
        error = error or f"{given}: {e.strerror or e}"
        run.reports.append(SourceReport(str(given), "unreadable", errors=[error], unread=True))
        return None
    report = SourceReport(str(given), fmt)
    report.path = path  # type: ignore[attr-defined]
    run.reports.append(report)
    if run.plan.repeats.get(given):
        report.notes.append(f"given {run.plan.repeats[given] + 1} times: read once")
    if fmt == "empty":
        report.errors.append(f"{given}: empty file")
        return None
    return report


def _chunks(run: _Run, path: Path, fmt: str, report: SourceReport, scratch: Path) -> Iterator[pl.DataFrame]:
    """Stage 1, reading and parsing: record chunks of one input; journald's formats without the entries
    an earlier input gave (``run.seen``, None when there is only one input)."""
    opts = run.plan.opts
    if fmt in ("xz", "gz"):
        unpacked, damaged = input_files.unpack(path, scratch, fmt)
        inner = sniff.sniff(unpacked)
        report.notes.append(f"unpacked {fmt}: {inner}")
        if damaged:
            report.errors.append(damaged)
        return _chunks(run, unpacked, inner, report, scratch)
    if fmt in exports.DOCUMENTS:  # OTLP logs, a Loki query_range answer, Elasticsearch hits
        return _chunks(run, exports.flatten(path, fmt, scratch, report), "log-export", report, scratch)
    if fmt == "pickle":
        report.errors.append(
            f"{path}: a Python pickle that names no SGLang class: not read (only SGLang's crash and request "
            "dumps are, and none of their code runs)"
        )
        return iter(())
    if fmt in ("journal-dir", "journal"):
        chunks = journal.read_journal(path, opts, report)
    elif fmt == "export":
        chunks = journal.CaptureUnits(opts).read(export.read_export_file(path, report), report)
    elif fmt == "json":
        chunks = journal.CaptureUnits(opts).read(text.read_text(path, fmt, report), report)
    elif fmt == dumps.FORMAT:  # SGLang's crash or request dump, unpickled without running its code
        chunks = _dump_records(path, report, scratch)
    elif fmt == scrape.FORMAT:  # a Prometheus scrape: a record per sample
        chunks = scrape.read(path, report, run.plan.captured_at)
    elif fmt == scrape.BUNDLE_FORMAT:  # SGLang's incident bundle: its endpoint answers
        chunks = scrape.read_bundle(path, report)
    elif fmt == traces.FORMAT:  # OpenTelemetry spans (--enable-trace through a collector's file exporter)
        chunks = traces.read(path, report)
    elif fmt in bundle.FORMATS:  # a logcorr collect bundle's dumps (timed) and steps
        chunks = bundle.read(path, fmt, report)
    elif fmt in containers.FORMATS:  # Docker json-file, CRI, kubectl, stern, a log platform's export
        if fmt == "log-export":
            path = exports.oldest_first(path, scratch, report)
        chunks = containers.read(path, fmt, opts, report)
    else:
        chunks = text.read_text(path, fmt, report)
    if run.seen is None or fmt in ("pyspy", "pyspy-json", "bundle-pyspy"):
        return chunks
    return run.seen.unseen(chunks, report, journald=fmt in ("journal-dir", "journal", "export", "json"))


def _dump_records(path: Path, report: SourceReport, scratch: Path) -> Iterator[pl.DataFrame]:
    """``dumps.read``, a file it refuses named in the report and nothing read from it (``unread``)."""
    try:
        yield from dumps.read(path, report, scratch)
    except dumps.DumpError as e:
        report.errors.append(str(e))
        report.unread = report.records == 0


# Readers whose every record is a stream of its own, whole: the re-joiner holds none of them back
WHOLE_RECORDS = (dumps.FORMAT, scrape.FORMAT, scrape.BUNDLE_FORMAT, traces.FORMAT)


def _joined(chunks: Iterator[pl.DataFrame], report: SourceReport, forced: str | None) -> Generator:
    """Stage 1's second half, on the reading thread: one input's chunks re-joined into logical records
    (one frame per chunk; the last with the record the re-joiner held back, so an input of one chunk is
    enriched whole and a role its last record shows reaches the others). On the reading thread because
    that thread uses few other regexes: polars keeps only 32 compiled patterns per thread, and the
    re-joiner's record-start pattern (every header family) costs 2.5 ms to compile again."""
    rejoin = Rejoiner(join_all=forced is not None, whole=report.format in WHOLE_RECORDS)
    held = None
    try:
        for chunk in chunks:
            if held is not None:
                yield held
            held = rejoin.feed(chunk)
        tail = rejoin.finish()
        yield tail if held is None else pl.concat([held, tail], how="vertical_relaxed")
        report.pieces += rejoin.pieces
        if rejoin.pieces:
            report.notes.append(
                f"{rejoin.pieces:,} piece(s) of records over {MAX_RECORD_LINES:,} lines or"
                f" {MAX_RECORD_BYTES >> 20} MiB: kept in pieces, each marked in entry_error"
            )
    finally:
        getattr(chunks, "close", lambda: None)()  # stops journalctl when this stage stops early


def _records(joined: Generator, report: SourceReport, forced: str | None, enrich: _Enricher) -> Generator:
    """Stage 2: classified records of one input's re-joined chunks (one frame per chunk)."""
    try:
        for recs in joined:
            if recs.height:
                yield enrich(recs, getattr(report, "unit_roles", {}), forced)
    finally:
        joined.close()  # stops the reading stage (and journalctl) when this one stops early


def _tables(run: _Run, classified: Generator) -> Generator:
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
            _learn_processes(ev, run.processes)
            ev, tables, unknown_in_dumps = _stacks(ev, run.processes, plan.captured_at)
            for name, build in TABLE_BUILDERS.items():
                tables[name] = [build(ev)]
            run.config_seen.append(_compact(config.observations(ev)))
            yield ev, tables, unknown_in_dumps
    finally:
        classified.close()  # stops the stage before (and journalctl) when this one stops early


def _input_notes(plan: _Plan, report: SourceReport, forced: str | None, clocks: Clocks) -> None:
    """What to know about how one input was read (``clocks``: its records' clocks)."""
    if forced and not report.records and plan.dumps_outside:
        report.notes.append(
            f"left out: --captured-at {plan.captured_at:%Y-%m-%d %H:%M:%S} is outside --since/--until"
        )
    if report.zoneless:
        report.notes.append(
            f"{report.zoneless:,} records carry only a time printed without a zone (SGLang prints local "
            "time): taken as printed, zone not printed; compare clock_offsets when a journal of the same "
            "host is at hand"
        )
    offset, n = clocks.offset()
    if offset is not None:
        report.notes.append(clock_note(offset, n))
    undated = report.records - report.zoned - report.zoneless
    hour = METRICS_FILE.search(Path(report.source).name)
    if hour and undated > 0:
        report.notes.append(
            f"{undated:,} request-metrics records carry no time (SGLang writes response_sent_to_client_ts"
            " since ≈2025-12): kept without a time; the file's name puts them in the hour from"
            f" {hour['day'][:4]}-{hour['day'][4:6]}-{hour['day'][6:]} {hour['hour']}:00, the engine's local time"
        )
    if report.yearless:
        report.notes.append(
            f"{report.yearless:,} journalctl short lines print no year and no line of this input prints one:"
            " kept without a time (a yearless line takes the year of the nearest dated line)"
        )
    if forced and report.records and report.first_ts is None:
        report.notes.append(
            "no time in the dump: give --captured-at (when it was taken) to place it on the timeline"
        )


# --- the end: the tables summed up, the result, OUT committed ---


def _finish(run: _Run, embed: bool, progress: Callable[[str], None]) -> IngestResult:
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
        raise NothingReadError(
            f"nothing could be read{inside}:\n"
            + "\n".join(f"  {e}" for r in reports for e in r.errors or r.notes[:1] or [r.source])
        )
    progress(f"writing {plan.out}: rooms, aborts, processes, sources, config")
    rooms = sglang.merge_rooms(run.held["rooms"])
    output.write("rooms", rooms)
    output.write("aborts", sglang.rooms_of_aborts(run.held["aborts"], rooms))
    output.write("processes", process_rows.from_events(output.finish("events")))
    output.write("batch_seconds", process_rows.batch_seconds(output.finish("batches")))
    columns = ("source", "format", "bytes", "records", "unparsed", "first_ts", "last_ts")
    sources = {c: [getattr(r, c) for r in reports] for c in columns}
    sources |= {c: ["\n".join(getattr(r, c)) or None for r in reports] for c in ("errors", "notes")}
    clocks = [run.clocks.get(r.source, Clocks()).row() for r in reports]
    sources |= {c: [row[c] for row in clocks] for c in Clocks().row()}
    output.write("sources", pl.DataFrame(sources, strict=False))
    output.write("config", config.rows(run.config_seen))
    span = [t for r in reports for t in (r.first_ts, r.last_ts) if t is not None]
    first, last = min(span, default=None), max(span, default=None)
    result = IngestResult(plan.out, reports, dict(output.rows), first_ts=first, last_ts=last, lines=run.lines)
    for (role, kind), n in sorted(run.counts.items()):
        result.by_role_kind.setdefault(role, {})[kind] = n
    result.notes += _result_notes(run)
    result.warnings += _roles_not_seen(plan.opts.roles, set().union(*(r.units_seen for r in reports)))
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


def _manifest(run: _Run, result: IngestResult) -> dict:
    """OUT's ``manifest.json``: the inputs read (as given, their absolute ``path`` where ingest ran, their
    identity and selection), rows per table,
    the time span, the origin and its next event id, the errors; with ``--append``, of all runs."""
    plan = run.plan
    prev = run.prev or {}  # with --append: the OUT added to; rows, span and errors are of all runs
    idents = {as_text(str(p)): i for p, i in plan.identities.items()}
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


def _roles_not_seen(roles: dict[str, str], seen: set[str]) -> list[str]:
    """A warning per ``--role NAME=ROLE`` whose NAME (or NAME.service) is no unit, pod or container any
    input holds, naming those it holds: the role was given to nothing."""
    return [
        f"--role {name}={role}: no input has a unit {name}"
        + ("" if name.endswith(".service") else f" or {name}.service")
        + f" (the units seen: {', '.join(sorted(seen)) or 'none'})"
        for name, role in roles.items()
        if name not in seen and f"{name}.service" not in seen
    ]


def _result_notes(run: _Run) -> list[str]:
    """What to know about the run as a whole: how a time without a date was dated, ``--captured-at``
    not used, nothing of a known kind read."""
    notes = list(run.plan.window_notes)
    if run.plan.captured_at and not any(
        r.format in ("pyspy", "pyspy-json", scrape.FORMAT) for r in run.reports
    ):
        # (dumps a --since/--until window dropped are bare dumps: their own notes say so)
        notes.append(
            "--captured-at not used: no bare py-spy dump file nor Prometheus scrape among the inputs"
        )
    counts = run.counts
    known = {k for (role, k) in counts if k != "other"} | {r for (r, _) in counts} - {"unknown"}
    if counts and not known:
        shown = ", ".join(r.source for r in run.reports if r.records)[:300]
        notes.append(
            f"nothing SGLang-, router- or py-spy-like was found: the {sum(counts.values()):,} records "
            f"read ({shown}) are all of no known kind and no role; kept as kind 'other', but no "
            "saved query or report has anything to say about them (a journal: try --unit, see the units skipped)"
        )
    return notes


def _parse_time(option: str, text: str) -> datetime:
    t = journal.iso_utc(text)
    if t is None:
        raise OptionError(f"{option} {text!r}: use a time like '2025-10-29 21:30' (UTC, or with an offset)")
    return t


def _compact(df: pl.DataFrame) -> pl.DataFrame:
    """A copy of ``df`` that owns its text: polars' string views point into the buffers of the chunk
    they were cut from, so a few rows kept until the end of an ingest would keep every chunk's
    text alive (RSS growing with the input)."""
    if df.height == 0:
        return df
    return pl.from_arrow(df.to_arrow(compat_level=pl.CompatLevel.oldest()))  # type: ignore[return-value]


def _learn_processes(ev: pl.DataFrame, processes: dict) -> None:
    """Remember the role and ranks each (host, pid) logged with, for dumps of that pid that carry no
    rank of their own (a bare py-spy file). Also keyed by (None, pid) when the pid is unambiguous, for
    dump files that do not say their host."""
    known = ev.filter(pl.col("tp_rank").is_not_null() & pl.col("pid").is_not_null())
    for row in known.select("host", "pid", "role", *RANKS).unique(["host", "pid"]).iter_rows(named=True):
        info = {k: v for k, v in row.items() if k != "pid" and v is not None and v != "unknown"}
        if processes.setdefault((row["host"], row["pid"]), info) is info:
            other = processes.get((None, row["pid"]))
            processes[(None, row["pid"])] = info if other is None else {}  # {}: two hosts, same pid


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


def _origin(inputs: list[tuple[Path, str]], out: Path, append: bool) -> str:
    """The default partition name of an ingest: the host(s) its data comes from (``input_files.hosts_in``:
    journald's ``_HOSTNAME``), never the machine running the ingest (the laptop several nodes'
    journals are copied to). Several hosts: their names joined by ``+`` (the first three, then how
    many more). None named by the data: with ``--append``, the origin OUT has (dumps added to a
    node's output are that node's); else ``logs-<digest of the inputs' names>``."""
    hosts = sorted(set().union(*(input_files.hosts_in(p, fmt) for p, fmt in inputs if fmt not in NOT_READ)))
    if hosts:
        return "+".join(hosts[:3]) + (f"+{len(hosts) - 3}-more" if len(hosts) > 3 else "")
    if append:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            prev = json.loads((out / "manifest.json").read_text())
            if prev.get("origin"):
                return str(prev["origin"])
    names = "\n".join(sorted(p.name for p, _ in inputs))
    return f"logs-{hashlib.sha256(names.encode(errors='surrogateescape')).hexdigest()[:8]}"


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
