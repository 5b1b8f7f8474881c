"""``timeline()``: the per-rank swimlanes of an OUT folder as one self-contained HTML file.

Three steps, each usable alone:

- ``load(out, …)`` reads the Parquet tables into ``Swimlanes``: one lane per (host, role, DP, PP, TP,
  EP) in the order prefill, decode, router, and per lane the batches, the markers (aborts, transfer
  errors with the ``transfer_infos`` assertion apart, watchdog, health, tracebacks), the py-spy
  captures and the router requests, plus the wedge spans and the verdict. ``trace.py`` renders the
  same model as a Chrome trace.
- ``figure(swimlanes)`` arranges it as a plotly figure (UTC axis; numeric lanes, top to bottom).
- ``timeline(out, html, …)`` writes the page: a header (title, verdict, time span, sources, whether
  batches were binned) and the figure, with plotly.js inlined.

The page makes no network request: plotly.js is inlined, MathJax is not loaded, and a
Content-Security-Policy allows only the page's own scripts (by hash), inline styles and ``data:``
images, so nothing can be fetched or run from elsewhere even by accident.

Log text is data. Every string that comes from the tables (messages, rids, host names, paths) is
HTML-escaped before plotly or the header sees it; plotly renders ``&lt;`` back as a literal ``<``,
so ``<script>`` in a message shows as text and runs nothing.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

from logcorr import saved
from logcorr.parsers.prefix import split_prefix
from logcorr.schema import EVENTS, RANKS, UTC_US
from logcorr.store import write_atomic

ROLE_ORDER = ("prefill", "decode", "router", "unknown")
RANK_TOKENS = (("dp_rank", "DP"), ("pp_rank", "PP"), ("tp_rank", "TP"), ("ep_rank", "EP"))

# Above this many batch lines (plus ok router requests) in the window, activity is drawn as runs
# instead of one mark each (unless asked for, ``detail=True``): keeps the page small (plotly.js alone
# is ~4.8 MB) and fast to open, and the lines never leave DuckDB.
MAX_ACTIVITY_MARKS = 12_000
# At most this many bins across the window when binning.
MAX_BINS = 1_500
# Above this many markers of one kind, markers of that kind are merged per lane and time bin.
MAX_MARKS_PER_KIND = 1_500
# ``detail=True`` on a window holding more lines than this is refused (``load(max_detail=…)``).
MAX_DETAIL_LINES = 100_000
# Runs (progress, not lines): a lane's activity breaks into a new run where the gap to its previous line
# exceeds RUN_GAP_FACTOR times the lane's median interval, and at least RUN_MIN_GAP_S seconds.
RUN_GAP_FACTOR = 10
RUN_MIN_GAP_S = 1.0
# DuckDB's memory for the aggregations (it spills to a temporary folder beyond it).
DUCKDB_MEMORY = "400MB"
NICE_BINS_S = (0.1, 0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 86400)


# Activity is drawn in light tints so that the markers on top of it stand out.
ROLE_COLOR = {"prefill": "#6baed6", "decode": "#74c476", "router": "#aaaaaa", "unknown": "#c7a98f"}
ROLE_LIGHT = {"prefill": "#e3eef8", "decode": "#e5f5e0", "router": "#f0f0f0", "unknown": "#f3ebe3"}
# Marker kinds: legend name, plotly symbol, colour, size, vertical offset inside the lane (-0.5..0.5,
# negative is higher on the page).
MARK_STYLE = {
    "abort": ("abort", "x-thin-open", "#ff7f0e", 9, -0.27),
    "transfer_error": ("KV transfer error", "triangle-down", "#d62728", 10, -0.27),
    "assertion": ("assert room in self.transfer_infos", "star", "#b10026", 17, -0.27),
    "watchdog": ("watchdog", "hourglass", "#9467bd", 12, -0.27),
    "traceback": ("exception / traceback", "square-x-open", "#000000", 10, -0.27),
    "health": ("/health ok", "line-ns-open", "#98df8a", 7, 0.27),
    "health_failed": ("/health failed", "circle-x", "#d62728", 10, 0.27),
    "markup_leak": ("answer with tool-call markup", "diamond-tall-open", "#e377c2", 11, -0.27),
    "request": ("router request ok", "line-ns-open", "#7f7f7f", 8, 0.0),
    "request_error": ("router request failed", "x-thin-open", "#d62728", 8, 0.0),
}
CAPTURE_DY = 0.22  # captures sit a little below the lane's batch ticks
# Fingerprint groups of py-spy captures: colours distinct from the marker colours above.
GROUP_COLORS = ("#6a3d9a", "#e7298a", "#1b9e77", "#a6761d", "#e6ab02", "#525252", "#08519c", "#66a61e")


class TimelineError(Exception):
    """The timeline cannot be drawn: OUT is not a logcorr folder, or an option is invalid."""


@dataclass
class Wedge:
    """A span in which no rank of ``role`` advanced a batch while the data goes on."""

    role: str
    stopped: datetime  # the last batch of the role before the gap (every rank had stopped by then)
    resumed: datetime | None  # the restart / next batch, or None: not within the data
    ranks: int  # how many ranks of the role stopped
    other_went_on: bool | None  # did the other engine role log batches inside the span
    resumed_by: str = "next batch"  # what ends the span: "restart", "next batch" or "end of data"
    health_ok: bool | None = None  # did /health answer 200 inside the span
    verdict: str = ""  # the wedge query's verdict in words
    batches_again: datetime | None = None  # the role's first batch after the span (after a restart: later)


@dataclass
class Swimlanes:
    """What ``load`` read: lanes and what happened on them, all times ``datetime[us, UTC]``.

    Every frame carries ``lane`` (an index into ``lanes``) and ``ts``; markers and captures keep
    ``event_id``/``source``/``source_pos`` so any mark can be traced back to its line.

    Activity comes two ways. ``runs`` and ``load`` always (a few rows per rank: aggregated in
    DuckDB). With ``detail`` also every batch line in ``batches`` and every router request in
    ``requests``; without, ``batches`` is empty and ``requests`` holds the failed requests only.
    Marks, captures, the last batches and the wedge are exact either way.
    """

    out: Path
    lanes: pl.DataFrame  # lane, key, host, role, dp_rank, pp_rank, tp_rank, ep_rank, label
    batches: pl.DataFrame  # lane, ts, batch_type, … every typed batch field
    last_batches: pl.DataFrame  # lane, ts, pid, batch_type: the last batch of each rank's process
    marks: pl.DataFrame  # lane, ts, kind, rid, bootstrap_room, level, body, event_id, source, source_pos
    captures: pl.DataFrame  # lane, ts, capture_id, label, group, fingerprint, wait_class, backend, …
    requests: pl.DataFrame  # lane, ts, method, path, status, latency_ms, request_id, rid, error, body
    wedges: list[Wedge] = field(default_factory=list)
    verdict: list[str] = field(default_factory=list)
    first: datetime | None = None
    last: datetime | None = None
    sources: list[tuple[str, str, int]] = field(default_factory=list)  # (source, format, records)
    clock_notes: list[str] = field(default_factory=list)
    filters: list[str] = field(default_factory=list)  # human-readable --since/--until/--room/--role
    notes: list[str] = field(default_factory=list)  # what could not be drawn, and why
    # progress without the lines: see ``_load_runs`` (lane, kind, ts, end, until, lines, load fields)
    runs: pl.DataFrame = field(default_factory=pl.DataFrame)
    # batch load per lane and bucket of ``bucket_s`` seconds: see ``_load_load``
    load: pl.DataFrame = field(default_factory=pl.DataFrame)
    bucket_s: float | None = None
    detail: bool = True  # ``batches`` and ``requests`` hold every line of the window (else: runs)
    totals: dict[str, int] = field(default_factory=dict)  # lines in the window: batches, requests


@dataclass
class TimelineInfo:
    """What ``timeline`` wrote: the file, its size, the lanes, and whether activity was drawn as runs
    (``binned``; ``counts["runs"]`` of them) rather than a tick per line."""

    html: Path
    bytes: int
    lanes: list[str]
    binned: bool
    bin_seconds: float | None
    counts: dict[str, int]
    wedges: list[Wedge]
    verdict: list[str]
    first: datetime | None
    last: datetime | None


# --------------------------------------------------------------------------------------------- reading


def _scan(out: Path, table: str, schema: dict[str, pl.DataType]) -> pl.LazyFrame:
    """All parts of one table (any folder depth, e.g. hive-style ``host=…/``) as one lazy frame with
    exactly the columns of ``schema`` (absent ones null), so older or partial OUTs still draw."""
    files = sorted((out / table).glob("**/*.parquet"))
    frames = []
    for f in files:
        lf = pl.scan_parquet(f, hive_partitioning=False, glob=False)
        have = lf.collect_schema()
        # a column of the right type is selected as it is (no cast): filters on it then reach the
        # Parquet reader, which skips what they exclude instead of reading every row of the table
        frames.append(
            lf.select(
                [
                    pl.col(c)
                    if have.get(c) == t
                    else (pl.col(c) if c in have else pl.lit(None)).cast(t, strict=False).alias(c)
                    for c, t in schema.items()
                ]
            )
        )
    if not frames:
        return pl.LazyFrame(schema=schema)
    return pl.concat(frames, how="vertical_relaxed")


def _columns(out: Path, table: str) -> dict[str, pl.DataType]:
    """Union of the columns of a table's parts (name → type of the first part that has it)."""
    cols: dict[str, pl.DataType] = {}
    for f in sorted((out / table).glob("**/*.parquet")):
        for c, t in pl.scan_parquet(f, hive_partitioning=False, glob=False).collect_schema().items():
            cols.setdefault(c, t)
    return cols


def parse_time(text: str | datetime | None, *, day: datetime | None = None) -> datetime | None:
    """``--since``/``--until`` as an aware UTC datetime.

    Accepts ISO 8601 (``2025-10-29 21:34``, ``2025-10-29T21:34:47.5Z``, ``…+02:00``; no zone means
    UTC) or a bare time of day (``21:34:47``) on the date of ``day`` (the data's first day).

    Raises:
        TimelineError: the text is neither.
    """
    if text is None or isinstance(text, datetime):
        return text if text is None or text.tzinfo else text.replace(tzinfo=UTC)
    t = text.strip()
    try:
        value = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        m = re.fullmatch(r"(\d{1,2}):(\d\d)(?::(\d\d)(?:\.(\d{1,6}))?)?", t)
        not_a_time = TimelineError(
            f"{text!r}: not a time; use ISO 8601 like '2025-10-29 21:34:40' (UTC unless a zone is "
            "given) or a time of day like '21:34:40' (on the data's first day)"
        )
        if m and day is None:
            raise TimelineError(
                f"{text!r}: a time of day needs a date, and no record in OUT carries one; give the date too"
            ) from None
        if not m:
            raise not_a_time from None
        h, mi, s, frac = m.groups()
        try:
            value = day.replace(
                hour=int(h), minute=int(mi), second=int(s or 0), microsecond=int((frac or "0").ljust(6, "0"))
            )
        except ValueError:  # 25:99
            raise not_a_time from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


_KEY = [f"_k_{c}" for c in ("host", "role", *RANKS)]


def _lane_key(df: pl.DataFrame) -> pl.DataFrame:
    """Add the lane key columns: host, role and ranks with nulls filled (so they join)."""
    return df.with_columns(
        pl.col("role").fill_null("unknown"),
        pl.col("host").fill_null("").alias("_k_host"),
        pl.col("role").fill_null("unknown").alias("_k_role"),
        *[pl.col(c).fill_null(-1).alias(f"_k_{c}") for c in RANKS],
    )


def _in_window(lf: pl.LazyFrame, since: datetime | None, until: datetime | None) -> pl.LazyFrame:
    if since is not None:
        lf = lf.filter(pl.col("ts") >= since)
    if until is not None:
        lf = lf.filter(pl.col("ts") <= until)
    return lf


_EV = EVENTS.schema
_LANE = {c: _EV[c] for c in ("host", "role", *RANKS)}
_PROV = {c: _EV[c] for c in ("event_id", "source", "source_pos")}
_EVENT_JOIN = {c: _EV[c] for c in ("event_id", "host", "pid", "level", "message", "source", "source_pos")}


def _with_event_fields(out: Path, lf: pl.LazyFrame) -> pl.LazyFrame:
    """Fill host, level, message and provenance of typed rows from their ``events`` row."""
    ev = _scan(out, "events", _EVENT_JOIN).rename({c: f"ev_{c}" for c in _EVENT_JOIN if c != "event_id"})
    have = lf.collect_schema()
    lf = lf.with_columns(
        [pl.lit(None, t).alias(c) for c, t in _EVENT_JOIN.items() if c not in have and c != "pid"]
    )
    lf = lf.collect().lazy()  # the typed rows are few (marks, requests): their ids filter the scan
    ids = lf.select("event_id").drop_nulls().unique().collect()["event_id"]
    lo, hi = (ids.min(), ids.max()) if ids.len() else (0, -1)
    # bounds first (row groups of other ids are skipped by their statistics), then the ids
    ev = ev.filter(pl.col("event_id").is_between(lo, hi)).filter(pl.col("event_id").is_in(ids.implode()))
    lf = lf.join(ev.collect().lazy(), on="event_id", how="left")
    return lf.with_columns(
        *[
            pl.coalesce(pl.col(c), pl.col(f"ev_{c}")).alias(c)
            for c in ("host", "source", "source_pos", "level", "message")
        ],
        pl.col("ev_pid").alias("pid"),
    ).drop([f"ev_{c}" for c in _EVENT_JOIN if c != "event_id"])


def _bodies(messages: pl.Series) -> pl.Series:
    """Message text without the line header (time and rank are shown beside it)."""
    if messages.len() == 0:
        return pl.Series("body", [], pl.String)
    return split_prefix(messages.fill_null(""))["body"]


def _load_batches(out, since, until, empty: bool = False) -> pl.DataFrame:
    """Every batch line in the window with its typed fields (``empty``: none, the columns only)."""
    cols = _columns(out, "batches")
    skip = {"extra"}
    schema = {"ts": UTC_US, **_LANE, **_PROV, "batch_type": pl.String}
    for c, t in cols.items():
        if c not in schema and c not in skip and t.is_numeric() | (t == pl.Boolean) | (t == pl.String):
            schema[c] = t
    lf = _in_window(_scan(out, "batches", schema), since, until)
    if empty:
        return lf.head(0).collect()
    return lf.filter(pl.col("ts").is_not_null()).collect()


def _load_last_batches(con, since, until) -> pl.DataFrame:
    """The last batch of each process of each rank over all the data (a restart starts a new
    process: the old one's last batch is where it stopped), kept when it falls in the window.

    Aggregated in DuckDB (a few rows per rank); ``con`` is ``_duck(out)``. Columns: lane key, ts,
    pid, batch_type, source."""
    df = con.sql(
        """
        SELECT * FROM (
            SELECT host, role, dp_rank, pp_rank, tp_rank, ep_rank, pid,
                   max(ts) AS ts, arg_max(batch_type, ts) AS batch_type, any_value(source) AS source
            FROM batches WHERE ts IS NOT NULL
            GROUP BY host, role, dp_rank, pp_rank, tp_rank, ep_rank, pid
        ) WHERE """
        + _window_sql(since, until)
    ).pl()
    return _typed(df, {"ts": UTC_US, **_LANE, "pid": pl.Int32, "batch_type": pl.String, "source": pl.String})


# -------------------------------------------------------------------- batches in bounded memory
#
# A day holds millions of batch lines; only what is drawn leaves DuckDB. The window (--since,
# --until) is a WHERE on ``ts`` that the Parquet scan turns into row-group pruning; runs, load and
# the last batches are GROUP BYs; per-line rows are read only when the window holds few enough.


def _duck(out: Path):
    """A DuckDB connection over OUT's tables (``saved.connect``, no saved views) held to
    ``DUCKDB_MEMORY`` and 2 threads, spilling to a temporary folder beyond that."""
    con = saved.connect(out, saved={})
    spill = tempfile.mkdtemp(prefix="logcorr-spill-")
    con.execute(f"SET memory_limit = '{DUCKDB_MEMORY}'")
    con.execute("SET threads = 2")
    con.execute("SET preserve_insertion_order = false")
    con.execute(f"SET temp_directory = {saved.quote_literal(spill)}")
    return con, spill


def _window_sql(since: datetime | None, until: datetime | None, col: str = "ts") -> str:
    """``col`` within [since, until] as SQL (``true`` without bounds); the bounds are datetimes, so
    the literals are ours."""
    parts = ["true"]
    if since is not None:
        parts.append(f"{col} >= TIMESTAMPTZ '{since.astimezone(UTC).isoformat()}'")
    if until is not None:
        parts.append(f"{col} <= TIMESTAMPTZ '{until.astimezone(UTC).isoformat()}'")
    return " AND ".join(parts)


def _typed(df: pl.DataFrame, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """``df`` with the columns of ``schema`` cast (absent ones null), in that order, then the rest."""
    df = df.with_columns(
        [
            (pl.col(c) if c in df.columns else pl.lit(None)).cast(t, strict=False).alias(c)
            for c, t in schema.items()
        ]
    )
    return df.select(*schema, *[c for c in df.columns if c not in schema])


def _col_sql(cols: dict, name: str, sql_type: str) -> str:
    """``name`` when the table has it, else a typed NULL (an older OUT)."""
    return f'"{name}"' if name in cols else f'CAST(NULL AS {sql_type}) AS "{name}"'


def _router_error_sql() -> str:
    """A router request line failed: status ≥ 400, else its level (own, or its event's) says so."""
    return "coalesce(q.status >= 400, coalesce(q.level, ev.level) IN ('ERROR', 'WARNING', 'WARN'), false)"


def _activity_sql(out: Path, since, until) -> str:
    """One row per batch line and per router request line that did not fail, in the window: the
    lane key, ``kind`` (batch or request), pid, µs, event_id, and the load fields."""
    bc = _columns(out, "batches")
    qc = _columns(out, "requests")
    win = _window_sql(since, until)
    load = ", ".join(_col_sql(bc, c, t) for c, t in _LOAD_FIELDS)
    nulls = ", ".join(f"CAST(NULL AS {t}) AS {c}" for c, t in _LOAD_FIELDS)
    level = "q.level" if "level" in qc else "CAST(NULL AS VARCHAR)"
    return f"""
        SELECT host, role, dp_rank, pp_rank, tp_rank, ep_rank, 'batch' AS kind, pid,
               epoch_us(ts) AS us, event_id, batch_type, source, {load}
        FROM batches WHERE ts IS NOT NULL AND {win}
        UNION ALL
        SELECT q.host, q.role, NULL, NULL, NULL, NULL, 'request', q.pid,
               epoch_us(q.ts), q.event_id, 'router request', q.source, {nulls}
        FROM (SELECT * EXCLUDE (level), {level} AS level FROM requests AS q) AS q
        LEFT JOIN (
            -- the level of a line without status or level of its own, from its event: few rows, fetched
            -- by id (through list/unnest DuckDB makes them the small side; events has millions)
            SELECT event_id, level FROM events WHERE event_id IN (
                SELECT unnest(ids) FROM (
                    SELECT list(event_id) AS ids FROM (SELECT * EXCLUDE (level), {level} AS level FROM requests AS q)
                    WHERE role = 'router' AND status IS NULL AND level IS NULL))
        ) AS ev ON q.status IS NULL AND ev.event_id = q.event_id
        WHERE q.role = 'router' AND q.ts IS NOT NULL AND {_window_sql(since, until, "q.ts")}
          AND NOT {_router_error_sql()}
    """


# batch fields summed up per run and per load bucket: (column, DuckDB type)
_LOAD_FIELDS = (
    ("running_req", "BIGINT"),
    ("queue_req", "BIGINT"),
    ("token_usage", "DOUBLE"),
    ("gen_throughput", "DOUBLE"),
    ("input_throughput", "DOUBLE"),
)


def _count_activity(con, out: Path, since, until, role: str | None) -> dict[str, int]:
    """How many batch lines and ok router request lines the window holds (``role``: only its lanes)."""
    who = "true" if role is None else f"coalesce(role, 'unknown') = {saved.quote_literal(role)}"
    rows = con.sql(
        f"SELECT kind, count(*) FROM ({_activity_sql(out, since, until)}) WHERE {who} GROUP BY kind"
    ).fetchall()
    got = dict(rows)
    return {"batches": int(got.get("batch", 0)), "requests": int(got.get("request", 0))}


def _load_runs(con, out: Path, since, until) -> pl.DataFrame:
    """Runs of activity per lane, aggregated in DuckDB: consecutive batch lines of one rank (or ok
    router requests of the router) of one process, split where the gap to the previous line exceeds
    ``RUN_GAP_FACTOR`` times the lane's median interval in the window, and at least ``RUN_MIN_GAP_S``.

    Returns one row per run: the lane key, ``kind`` (batch, request), ``pid``, ``ts`` (its first
    line), ``end`` (its last line, exact), ``until`` (``end`` plus the lane's median interval: where
    a drawing of the run stops; never past the next run), ``lines``, ``batch_type`` (the most common),
    ``typical_s`` (the median interval, s), ``first_event_id``/``last_event_id``, ``source``, and per
    load field its maximum (``running_req`` …) or mean (throughputs)."""
    # Two reads of the lines, one sort (of each lane's µs and pid), nothing held between them:
    # g    the gap of every line to the lane's previous line (one window, the only sort of all lines);
    # lane per lane in one pass over g: the median gap, and the lines after a gap over RUN_MIN_GAP_S;
    # brk  of those, the lines that start a run (first of the lane, new pid, gap beyond the threshold);
    # bk   lines summed per lane, pid and second (a run never starts inside a second but at its first
    #      line: the line before a start lies more than RUN_MIN_GAP_S before it, or in another pid),
    #      each second then given to the latest start at or before it (ASOF join) and summed per run.
    key = "host, role, dp_rank, pp_rank, tp_rank, ep_rank, kind"
    on = " AND ".join(f"bk.{c} = brk.{c}" for c in key.split(", "))
    sums = ", ".join(
        f"sum({c}) AS {c}_sum, count({c}) AS {c}_n" if "throughput" in c else f"max({c}) AS {c}"
        for c, _ in _LOAD_FIELDS
    )
    aggs = ", ".join(
        f"sum({c}_sum) / nullif(sum({c}_n), 0) AS {c}" if "throughput" in c else f"max({c}) AS {c}"
        for c, _ in _LOAD_FIELDS
    )
    df = con.sql(
        f"""
        WITH a AS NOT MATERIALIZED (  -- read twice (g, bk) rather than held: a day is millions of lines
            SELECT coalesce(host, '') AS host, coalesce(role, 'unknown') AS role, coalesce(dp_rank, -1) AS dp_rank,
                   coalesce(pp_rank, -1) AS pp_rank, coalesce(tp_rank, -1) AS tp_rank,
                   coalesce(ep_rank, -1) AS ep_rank, kind, coalesce(pid, -1) AS pid, us, event_id, batch_type,
                   source, {", ".join(c for c, _ in _LOAD_FIELDS)}
            FROM ({_activity_sql(out, since, until)})
        ),
        g AS (
            SELECT {key}, pid, us, us - lag(us) OVER w AS gap, pid IS DISTINCT FROM lag(pid) OVER w AS new_pid
            FROM a WINDOW w AS (PARTITION BY {key} ORDER BY us)
        ),
        lane AS (
            -- one pass over g: the lane's median interval, and the lines that may start a run
            SELECT {key}, median(gap) AS typical,
                   list({{'pid': pid, 'us': us, 'gap': gap, 'new_pid': new_pid}})
                       FILTER (WHERE gap IS NULL OR new_pid OR gap > {int(RUN_MIN_GAP_S * 1e6)}) AS starts
            FROM g GROUP BY ALL
        ),
        brk AS (
            SELECT {key}, s.pid AS pid, s.us AS us, typical
            FROM (SELECT {key}, typical, unnest(starts) AS s FROM lane)
            WHERE s.gap IS NULL OR s.new_pid
               OR s.gap > greatest({RUN_GAP_FACTOR} * coalesce(typical, 0), {int(RUN_MIN_GAP_S * 1e6)})
        ),
        bk AS (
            SELECT {key}, pid, min(us) AS lo, max(us) AS hi, count(*) AS lines, any_value(batch_type) AS batch_type,
                   arg_min(event_id, us) AS first_event_id,
                   arg_max(event_id, us) AS last_event_id, any_value(source) AS source, {sums}
            FROM a GROUP BY {key}, pid, us // 1000000
        )
        SELECT bk.{key.replace(", ", ", bk.")}, brk.us AS run, nullif(bk.pid, -1) AS pid,
               make_timestamptz(min(bk.lo)) AS ts, make_timestamptz(max(bk.hi)) AS "end", sum(bk.lines) AS lines,
               mode(bk.batch_type) AS batch_type, any_value(brk.typical) / 1e6 AS typical_s,
               arg_min(bk.first_event_id, bk.lo) AS first_event_id, arg_max(bk.last_event_id, bk.hi) AS last_event_id,
               any_value(bk.source) AS source, {aggs}
        FROM bk ASOF JOIN brk ON {on} AND bk.pid = brk.pid AND bk.lo >= brk.us
        GROUP BY ALL
        """
    ).pl()
    df = df.with_columns(
        pl.when(pl.col("host") != "").then(pl.col("host")).alias("host"),
        *[pl.when(pl.col(c) >= 0).then(pl.col(c)).alias(c) for c in RANKS],
    )
    schema = {
        "ts": UTC_US,
        "end": UTC_US,
        **_LANE,
        "kind": pl.String,
        "pid": pl.Int32,
        "lines": pl.Int64,
        "batch_type": pl.String,
        "typical_s": pl.Float64,
        "first_event_id": pl.Int64,
        "last_event_id": pl.Int64,
        "source": pl.String,
    }
    df = _typed(df, schema).drop("run").sort("ts")
    typical = pl.duration(microseconds=(pl.col("typical_s").fill_null(0) * 1e6).cast(pl.Int64))
    nxt = pl.col("ts").shift(-1).over("host", "role", *RANKS, "kind", order_by="ts")
    return df.with_columns(
        pl.min_horizontal(pl.col("end") + typical, nxt.fill_null(pl.col("end") + typical)).alias("until")
    )


def _load_load(con, out: Path, since, until, bucket_s: float) -> pl.DataFrame:
    """Batch load per lane and time bucket of ``bucket_s`` seconds, aggregated in DuckDB: lane key,
    ``ts`` (the bucket's start), ``lines`` (batch lines in it), and per load field its maximum
    (``running_req``, ``queue_req``, ``token_usage``) or mean (throughputs, token/s)."""
    bucket_us = max(int(bucket_s * 1e6), 1)
    aggs = ", ".join(f"{'avg' if 'throughput' in c else 'max'}({c}) AS {c}" for c, _ in _LOAD_FIELDS)
    df = con.sql(
        f"""
        SELECT host, role, dp_rank, pp_rank, tp_rank, ep_rank,
               make_timestamptz(us // {bucket_us} * {bucket_us}) AS ts, count(*) AS lines, {aggs}
        FROM ({_activity_sql(out, since, until)}) WHERE kind = 'batch'
        GROUP BY host, role, dp_rank, pp_rank, tp_rank, ep_rank, us // {bucket_us}
        """
    ).pl()
    return _typed(df, {"ts": UTC_US, **_LANE, "lines": pl.Int64}).sort("ts")


def _load_marks(out, since, until) -> pl.DataFrame:
    """Aborts, transfer errors (assertion apart), watchdog, health and traceback events as one frame."""
    common = {"ts": UTC_US, **_LANE, **_PROV, "rid": pl.String, "bootstrap_room": pl.Int64}
    aborts = _scan(out, "aborts", {**common, "abort_kind": pl.String, "reason": pl.String})
    aborts = aborts.with_columns(
        pl.lit("abort").alias("kind"),
        pl.concat_str([pl.col("abort_kind"), pl.col("reason")], separator=": ", ignore_nulls=True).alias(
            "detail"
        ),
        pl.lit(None, pl.String).alias("level"),
        pl.lit(None, pl.String).alias("message"),
    ).drop("abort_kind", "reason")
    terr = _scan(
        out,
        "transfer_errors",
        {**common, "error_kind": pl.String, "kv_poll_state": pl.String, "reason": pl.String},
    )
    terr = terr.with_columns(
        pl.when(pl.col("error_kind") == "assert_transfer_infos")
        .then(pl.lit("assertion"))
        .otherwise(pl.lit("transfer_error"))
        .alias("kind"),
        pl.concat_str(
            [pl.col("error_kind"), pl.col("kv_poll_state"), pl.col("reason")],
            separator=": ",
            ignore_nulls=True,
        ).alias("detail"),
        pl.lit(None, pl.String).alias("level"),
        pl.lit(None, pl.String).alias("message"),
    ).drop("error_kind", "kv_poll_state", "reason")
    # A KV transfer failed because its request was aborted ("Aborted by AbortReq.") is in both tables:
    # draw it once, as the abort (its hover names the transfer); the assertion is always drawn.
    terr = pl.concat(
        [
            terr.filter(pl.col("kind") == "assertion"),
            terr.filter(pl.col("kind") != "assertion").join(
                aborts.select("event_id"), on="event_id", how="anti"
            ),
        ]
    )
    typed = pl.concat([aborts, terr, _leak_marks(out, common)], how="diagonal_relaxed")
    typed = _with_event_fields(out, _in_window(typed, since, until)).drop("pid")
    ev = _scan(
        out,
        "events",
        {**common, "kind": pl.String, "level": pl.String, "message": pl.String},
    ).filter(pl.col("kind").is_in(["watchdog", "health", "traceback"]))
    ev = _in_window(ev, since, until).with_columns(pl.lit(None, pl.String).alias("detail"))
    marks = pl.concat([typed, ev], how="diagonal_relaxed").filter(pl.col("ts").is_not_null()).collect()
    if marks.is_empty():
        return marks.with_columns(pl.lit(None, pl.String).alias("body"))
    # health: the access line's status (requests table) says ok or failed; a non-access health line
    # ("Health check failed …") is failed unless it is INFO and says nothing of failing.
    status = (
        _scan(out, "requests", {"event_id": pl.Int64, "status": pl.Int32})
        .join(marks.lazy().select("event_id").drop_nulls(), on="event_id", how="semi")
        .unique("event_id")
        .collect()
    )
    marks = marks.join(status, on="event_id", how="left")
    failed = (
        pl.when(pl.col("status").is_not_null())
        .then(pl.col("status") >= 400)
        .otherwise(
            pl.col("message").str.contains(r"(?i)fail|error|timeout|unhealthy")
            | pl.col("level").is_in(["ERROR", "WARNING", "CRITICAL", "FATAL"])
        )
    )
    marks = marks.with_columns(
        pl.when((pl.col("kind") == "health") & failed.fill_null(False))
        .then(pl.lit("health_failed"))
        .otherwise(pl.col("kind"))
        .alias("kind")
    )
    return marks.with_columns(_bodies(marks["message"]).alias("body")).sort("ts")


def _load_requests(out, since, until, errors_only: bool = False) -> pl.DataFrame:
    """Router requests (role router); the engines' own access lines are drawn only as /health.
    ``errors_only``: only the failed ones (the others are drawn as runs)."""
    schema = {
        "ts": UTC_US,
        "host": pl.String,
        "role": pl.String,
        **_PROV,
        "method": pl.String,
        "path": pl.String,
        "status": pl.Int32,
        "latency_ms": pl.Float64,
        "request_id": pl.String,
        "rid": pl.String,
        "bootstrap_room": pl.Int64,
        "prefill_url": pl.String,
        "decode_url": pl.String,
        "level": pl.String,
    }
    lf = _in_window(_scan(out, "requests", schema), since, until).filter(pl.col("role") == "router")
    if errors_only:  # a superset here (a line without status or level may fail by its event's level)
        lf = lf.filter(
            (pl.col("status") >= 400)
            | (
                pl.col("status").is_null()
                & (pl.col("level").is_null() | pl.col("level").is_in(["ERROR", "WARNING", "WARN"]))
            )
        )
    lf = (
        _with_event_fields(out, lf).drop("pid").with_columns([pl.lit(None, pl.Int16).alias(c) for c in RANKS])
    )
    df = lf.filter(pl.col("ts").is_not_null()).collect()
    error = (pl.col("status") >= 400).fill_null(
        pl.col("level").is_in(["ERROR", "WARNING", "WARN"]).fill_null(False)
    )
    df = df.with_columns(error.alias("error"))
    if errors_only:
        df = df.filter(pl.col("error"))
    return df.with_columns(_bodies(df["message"]).alias("body")).sort("ts", "event_id")


def _load_captures(out, since, until) -> tuple[pl.DataFrame, int]:
    """One row per py-spy capture of a rank: the main thread's class (or the first waiting thread's);
    and how many captures have no time (a bare dump file) and so cannot be placed."""
    schema = {
        "capture_id": pl.String,
        "capture_ts": UTC_US,
        **_LANE,
        "pid": pl.Int32,
        "thread_id": pl.String,
        "thread_name": pl.String,
        "thread_state": pl.String,
        "is_main": pl.Boolean,
        "wait_class": pl.String,
        "backend": pl.String,
        "event_loop": pl.String,
        "fingerprint": pl.String,
        "source": pl.String,
        "source_pos": pl.String,
    }
    lf = _scan(out, "captures", schema).rename({"capture_ts": "ts"})
    undated = lf.filter(pl.col("ts").is_null()).select(pl.col("capture_id").n_unique()).collect().item()
    df = _in_window(lf, since, until).filter(pl.col("ts").is_not_null()).collect()
    if df.is_empty():
        empty = df.with_columns(
            pl.lit(None, pl.String).alias("label"), pl.lit(None, pl.String).alias("frames")
        )
        return empty, undated
    main = pl.col("is_main").fill_null(pl.col("thread_name") == "MainThread").fill_null(False)
    waiting = pl.col("wait_class").is_not_null() & ~pl.col("wait_class").is_in(["running", "idle"])
    df = (
        df.with_columns((main.cast(pl.Int8) * 2 + waiting.cast(pl.Int8)).alias("_pref"))
        .sort(["capture_id", "_pref"], descending=[False, True], nulls_last=True)
        .unique("capture_id", keep="first", maintain_order=True)
        .drop("_pref")
        .sort("ts")
    )
    label = pl.concat_str(
        [
            pl.col("wait_class").fill_null("unclassified"),
            pl.when(pl.col("backend").is_not_null()).then(pl.format(" ({})", pl.col("backend"))),
        ],
        ignore_nulls=True,
    )
    df = df.with_columns(label.alias("label"))
    return df.join(_innermost_frames(out, df), on=["capture_id", "thread_id"], how="left"), undated


def _innermost_frames(out: Path, captures: pl.DataFrame, n: int = 8) -> pl.DataFrame:
    """The ``n`` innermost frames of each chosen capture thread, as one text per thread."""
    schema = {
        "capture_id": pl.String,
        "thread_id": pl.String,
        "depth": pl.Int32,
        "function": pl.String,
        "file": pl.String,
        "line": pl.Int32,
    }
    keys = captures.select("capture_id", "thread_id").lazy()
    frames = (
        _scan(out, "stacks", schema)
        .filter(pl.col("depth") < n)
        .join(keys, on=["capture_id", "thread_id"], how="semi")
        .sort("depth")
        .with_columns(
            pl.concat_str(
                [
                    pl.col("function").fill_null("?"),
                    pl.format(
                        " ({})",
                        pl.concat_str(
                            [
                                pl.col("file").str.extract(r"([^/]*/?[^/]+)$", 1),
                                pl.col("line").cast(pl.String),
                            ],
                            separator=":",
                            ignore_nulls=True,
                        ),
                    ),
                ],
                ignore_nulls=True,
            ).alias("frame")
        )
        .group_by("capture_id", "thread_id")
        .agg(pl.col("frame").str.join("\n").alias("frames"))
    )
    return frames.collect()


def _sources(out: Path) -> list[tuple[str, str, int]]:
    df = _scan(out, "sources", {"source": pl.String, "format": pl.String, "records": pl.Int64}).collect()
    return [(s or "?", f or "?", int(r or 0)) for s, f, r in df.iter_rows()]


def _clock_notes(con, since, until) -> list[str]:
    """How the time printed in the lines relates to the journal's UTC clock (records from a journal
    carry both): one note when every host and role agree, else one per (host, role). The median
    offsets are taken in DuckDB (``con``: ``_duck(out)``)."""
    df = con.sql(
        f"""
        SELECT host, role, median(epoch_us(log_ts) - epoch_us(ts)) / 1e6 AS off
        FROM events
        WHERE log_ts IS NOT NULL AND ts IS NOT NULL AND boot_id IS NOT NULL AND {_window_sql(since, until)}
        GROUP BY host, role HAVING off IS NOT NULL ORDER BY host NULLS FIRST, role NULLS FIRST
        """
    ).pl()
    if df.is_empty():
        return ["no journal clock to compare with: times are as printed in the lines, read as UTC"]

    def zone(off: float) -> str:
        q = round(off / 900) * 900  # zones are whole quarter hours; the rest is logging delay
        return f"UTC{'+' if q >= 0 else '-'}{abs(q) // 3600:02d}:{abs(q) % 3600 // 60:02d}"

    zones = {(h, r): zone(o) for h, r, o in df.iter_rows()}
    if len(set(zones.values())) == 1:
        return [f"lines print {next(iter(zones.values()))} (checked against the journal clock)"]
    return [f"{h} {r} lines print {z}" for (h, r), z in zones.items()]


def _label_lanes(lanes: pl.DataFrame) -> pl.DataFrame:
    """``decode TP2`` (DP/PP/EP where present), ``decode (no rank)`` for an engine's lines without a
    rank prefix; the host in front when there are several; the file for lines without a host."""
    ranks = pl.concat_str(
        [pl.when(pl.col(c).is_not_null()).then(pl.format(f"{tok}{{}}", pl.col(c))) for c, tok in RANK_TOKENS],
        separator=" ",
        ignore_nulls=True,
    )
    any_rank = pl.any_horizontal([pl.col(c).is_not_null() for c, _ in RANK_TOKENS])
    label = (
        pl.when(any_rank)
        .then(pl.format("{} {}", pl.col("role"), ranks))
        .when(pl.col("role").is_in(["router", "unknown"]))
        .then(pl.col("role"))
        .otherwise(pl.format("{} (no rank)", pl.col("role")))
    )
    if lanes["host"].drop_nulls().n_unique() > 1:
        label = (
            pl.when(pl.col("host").is_not_null())
            .then(pl.format("{} · {}", pl.col("host"), label))
            .otherwise(label)
        )
    files = pl.col("files").list.eval(pl.element().str.extract(r"([^/\\]+)$", 1)).list.join(", ")
    label = pl.when(pl.col("host").is_null()).then(pl.format("{} [{}]", label, files)).otherwise(label)
    return lanes.with_columns(label.alias("label")).drop("files")


def _assign_lanes(frames: dict[str, pl.DataFrame], role: str | None) -> tuple[pl.DataFrame, dict]:
    """Number the lanes (prefill, decode, router, unknown; then host and ranks) and give every row
    of ``frames`` its ``lane``."""
    keyed = {name: _lane_key(df) for name, df in frames.items()}
    if role is not None:
        keyed = {name: df.filter(pl.col("role") == role) for name, df in keyed.items()}
    per_lane = [
        df.group_by(_KEY).agg(
            *[pl.col(c).first() for c in _LANE], pl.col("source").drop_nulls().unique().head(2)
        )
        for df in keyed.values()
        if df.height
    ]
    lanes = (
        pl.concat(per_lane, how="vertical_relaxed")
        if per_lane
        else pl.DataFrame(schema={**dict.fromkeys(_KEY, pl.String), **_LANE, "source": pl.List(pl.String)})
    )
    order = pl.col("role").replace_strict({r: i for i, r in enumerate(ROLE_ORDER)}, default=len(ROLE_ORDER))
    lanes = (
        lanes.group_by(_KEY)
        .agg(
            *[pl.col(c).first() for c in _LANE],
            pl.col("source").list.explode().drop_nulls().unique().sort().head(2).alias("files"),
        )
        .with_columns(order.alias("_order"))
        .sort(["_order", "host", *RANKS], nulls_last=False)
        .drop("_order")
        .with_row_index("lane")
        .with_columns(pl.col("lane").cast(pl.Int32))
    )
    lanes = _label_lanes(lanes)
    index = lanes.select(*_KEY, "lane")
    placed = {name: df.join(index, on=_KEY, how="inner").drop(_KEY) for name, df in keyed.items()}
    return lanes.drop(_KEY), placed


def _room_filter(out: Path, marks, requests, room: int) -> tuple[pl.DataFrame, pl.DataFrame, set[str]]:
    rids = set(
        _scan(out, "rooms", {"rid": pl.String, "bootstrap_room": pl.Int64})
        .filter(pl.col("bootstrap_room") == room)
        .select("rid")
        .drop_nulls()
        .collect()["rid"]
        .to_list()
    )
    mine = (pl.col("bootstrap_room") == room).fill_null(False) | pl.col("rid").is_in(list(rids)).fill_null(
        False
    )
    return marks.filter(mine), requests.filter(mine), rids


def load(
    out: Path,
    *,
    since: str | datetime | None = None,
    until: str | datetime | None = None,
    room: int | None = None,
    role: str | None = None,
    detail: bool | None = None,
    max_lines: int = MAX_ACTIVITY_MARKS,
    max_detail: int = MAX_DETAIL_LINES,
) -> Swimlanes:
    """Read OUT's tables into ``Swimlanes`` for drawing or export, in memory bounded by what is drawn.

    Args:
        out: a folder written by ``logcorr ingest``.
        since, until: keep what happened in this window (ISO 8601, UTC unless a zone is given, or a
            time of day on the data's first day).
        room: keep only the markers and router requests of this ``bootstrap_room`` (and its rids, via
            the ``rooms`` table); batches and captures stay for context. Without ``since``/``until``
            the window closes around the room's events (one minute either side).
        role: keep only the lanes of this role (``prefill``, ``decode``, ``router``).
        detail: read every batch line and router request of the window (``True``), or draw activity
            as runs only (``False``); ``None`` (default): lines when the window holds at most
            ``max_lines`` of them (batch lines plus ok router requests), else runs.
        max_lines: see ``detail``.
        max_detail: with ``detail=True``, the most lines a window may hold; more is refused (the
            lines are held in memory, and the drawing would not open).

    Raises:
        TimelineError: ``out`` is not a logcorr output folder, or an option is invalid.
    """
    out = Path(out)
    if not (out / "manifest.json").exists():
        raise TimelineError(
            f"{out}: not a logcorr output folder (no manifest.json); run logcorr ingest first"
        )
    if role is not None and role not in ROLE_ORDER:
        raise TimelineError(f"--role {role!r}: expected one of {', '.join(ROLE_ORDER)}")
    day = None
    if isinstance(since, str) or isinstance(until, str):
        first = _scan(out, "events", {"ts": UTC_US}).select(pl.col("ts").min()).collect().item()
        day = first
    t0, t1 = parse_time(since, day=day), parse_time(until, day=day)
    if t0 is not None and t1 is not None and t1 <= t0:
        raise TimelineError(f"--until {until} is not after --since {since}")
    filters: list[str] = []
    notes: list[str] = []
    marks = _load_marks(out, t0, t1)
    requests = None
    if room is not None:
        marks, requests, rids = _room_filter(out, marks, _load_requests(out, t0, t1), room)
        filters.append(f"room {room}" + (f" ({len(rids)} rids)" if rids else ""))
        if marks.is_empty() and requests.is_empty():
            raise TimelineError(f"--room {room}: no abort, transfer error or request names this room")
        if t0 is None and t1 is None:
            both = pl.concat([marks.select("ts"), requests.select("ts")])
            t0 = both["ts"].min() - timedelta(minutes=1)
            t1 = both["ts"].max() + timedelta(minutes=1)
            marks = marks.filter(pl.col("ts").is_between(t0, t1))
            requests = requests.filter(pl.col("ts").is_between(t0, t1))
    con, spill = _duck(out)
    try:
        totals = _count_activity(con, out, t0, t1, role)
        n_lines = totals["batches"] + totals["requests"]
        if detail is None:
            detail = n_lines <= max_lines
        elif detail and n_lines > max_detail:
            raise TimelineError(
                f"--detail: the window holds {n_lines:,} batch and router request lines, more than "
                f"{max_detail:,} (a line each would need gigabytes and not open); narrow it with "
                "--since/--until, or leave --detail out to draw runs"
            )
        if requests is None:
            requests = _load_requests(out, t0, t1, errors_only=not detail)
        batches = _load_batches(out, t0, t1) if detail else _load_batches(out, t0, t1, empty=True)
        runs = _load_runs(con, out, t0, t1)
        last_batches = _load_last_batches(con, t0, t1)
        clock_notes = _clock_notes(con, t0, t1)
        stamps = [df["ts"] for df in (marks, requests, batches, runs, last_batches) if df.height]
        stamps += [runs["end"]] if runs.height else []
        span_s = (
            ((t1 or max(x.max() for x in stamps)) - (t0 or min(x.min() for x in stamps))).total_seconds()
            if stamps
            else 1.0
        )
        bucket_s = _bin_seconds(max(span_s, 1.0))
        load_ = _load_load(con, out, t0, t1, bucket_s)
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
    captures, undated = _load_captures(out, t0, t1)
    if undated:
        notes.append(
            f"{undated} py-spy capture(s) carry no capture time and are not drawn: logcorr query stuck_ranks lists them; logcorr ingest --captured-at gives bare dump files a time"
        )
    if t0 is not None:
        filters.append(f"since {t0:%Y-%m-%d %H:%M:%S} UTC")
    if t1 is not None:
        filters.append(f"until {t1:%Y-%m-%d %H:%M:%S} UTC")
    if role is not None:
        filters.append(f"role {role}")
    frames = {
        "batches": batches,
        "last_batches": last_batches,
        "marks": marks,
        "captures": captures,
        "requests": requests,
        "runs": runs,
    }
    if not any(df.height for df in frames.values()):
        if not filters:  # e.g. bare py-spy files ingested without --captured-at
            raise TimelineError(f"{out}: nothing to draw: no record carries a time")
        try:
            first, last = json.loads((out / "manifest.json").read_text())["time_span"]
            span = f": the data runs from {first} to {last} (UTC)"
        except (OSError, ValueError, KeyError, TypeError):  # a combined folder has no one manifest
            span = ""
        raise TimelineError(f"nothing to draw with {', '.join(filters)}{span}")
    frames["load"] = load_.with_columns(pl.lit(None, pl.String).alias("source"))
    lanes, placed = _assign_lanes(frames, role)
    captures = _group_fingerprints(placed["captures"])
    stamps = [df["ts"] for name, df in placed.items() if df.height and name != "load"]
    stamps += [placed["runs"]["end"]] if placed["runs"].height else []
    first = min(s.min() for s in stamps) if stamps else None
    last = max(s.max() for s in stamps) if stamps else None
    sw = Swimlanes(
        out=out,
        lanes=lanes,
        batches=placed["batches"],
        last_batches=placed["last_batches"],
        marks=placed["marks"],
        captures=captures,
        requests=placed["requests"],
        first=t0 or first,
        last=t1 or last,
        sources=_sources(out),
        clock_notes=clock_notes,
        filters=filters,
        notes=notes,
        runs=placed["runs"],
        load=placed["load"].drop("source"),
        bucket_s=bucket_s,
        detail=detail,
        totals=totals,
    )
    sw.wedges, notes = wedges(out)
    sw.notes += notes
    sw.verdict = verdict(out)
    return sw


def _group_fingerprints(captures: pl.DataFrame) -> pl.DataFrame:
    """Name stack fingerprint groups A, B, … in lane order, so one colour means one identical stack."""
    if captures.is_empty():
        return captures.with_columns(pl.lit(None, pl.String).alias("group"))
    fp = pl.coalesce(pl.col("fingerprint"), pl.col("label"))
    order = (
        captures.with_columns(fp.alias("_fp")).sort("lane", "ts").select("_fp").unique(maintain_order=True)
    )
    names = {f: _group_name(i) for i, f in enumerate(order["_fp"].to_list())}
    return captures.with_columns(fp.replace_strict(names, default=None).alias("group"))


def _group_name(i: int) -> str:
    letters = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        letters = chr(65 + r) + letters
    return letters


# ----------------------------------------------------------------------------- wedge and verdict


def wedges(out: Path) -> tuple[list[Wedge], list[str]]:
    """The wedged or stalled spans, from the saved ``wedge`` query (rows whose verdict says
    ``wedged`` or ``stalled``; an idle gap is not shaded). Returns the spans and, when the query
    could not run, a note saying why."""
    try:
        rows = saved.query(out, "wedge")
    except (saved.QueryError, FileNotFoundError) as e:
        return [], [f"no wedge shading: {e}"]
    found = []
    stops = rows.filter(pl.col("verdict").str.contains(r"^(wedged|stalled)"))
    for r in stops.iter_rows(named=True):
        end, by = r["restart_ts"], "restart"
        if end is None:
            end, by = r["resumed_ts"], "next batch" if r["resumed_ts"] is not None else "end of data"
        found.append(
            Wedge(
                role=r["role"],
                stopped=r["stopped_ts"],
                resumed=end,
                ranks=r["ranks_stopped"],
                other_went_on=r["other_role_continued"],
                resumed_by=by,
                health_ok=r["health_kept_200"],
                verdict=r["verdict"],
                batches_again=r["resumed_ts"],
            )
        )
    return found, []


def verdict(out: Path) -> list[str]:
    """The verdict of ``logcorr report`` (``report.verdict``: its findings as Markdown text), so the
    page and the report say the same. A failing query gives one line saying so; the drawing goes on."""
    try:
        from logcorr import report

        return report.verdict(report.gather(out))
    except Exception as e:  # noqa: BLE001 — the swimlanes must still draw when the verdict cannot be told
        return [f"(no verdict: logcorr report failed: {type(e).__name__}: {e})"]


def _markdown_line(text: str) -> str:
    """One verdict line as HTML: escaped, then ``**bold**`` and ``code`` spans."""
    h = esc(text)
    h = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", h)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", h)


# -------------------------------------------------------------------------------------- rendering


def batch_name(batch_type: pl.Expr) -> pl.Expr:
    """``Prefill batch`` / ``Decode batch`` from the batches table's ``batch_type``."""
    t = batch_type.fill_null("batch")
    return (
        pl.when(t.str.to_lowercase().str.ends_with("batch"))
        .then(t)
        .otherwise(pl.format("{} batch", t.str.to_titlecase()))
    )


def _span(a: datetime, b: datetime) -> str:
    s = int(round((b - a).total_seconds()))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


def esc(text: object) -> str:
    """HTML-escape any value for plotly text (plotly shows ``&lt;`` as ``<``) or the page."""
    return html.escape("" if text is None else str(text), quote=True)


def _esc_expr(expr: pl.Expr) -> pl.Expr:
    return (
        expr.str.replace_all("&", "&amp;", literal=True)
        .str.replace_all("<", "&lt;", literal=True)
        .str.replace_all(">", "&gt;", literal=True)
        .str.replace_all('"', "&quot;", literal=True)
        .str.replace_all("'", "&#x27;", literal=True)
    )


def brief(text: str | None, lines: int = 6, width: int = 160) -> str:
    """A message for a hover label: escaped, at most ``lines`` lines (first and last ones) of
    ``width`` characters, joined with ``<br>``."""
    rows = (text or "").splitlines() or [""]
    if len(rows) > lines:
        rows = rows[:2] + [f"… {len(rows) - lines + 1} more lines …"] + rows[-(lines - 3) :]
    return "<br>".join(esc(r if len(r) <= width else r[: width - 1] + "…") for r in rows)


def _ms(ts: pl.Series):
    """UTC datetimes as milliseconds since the epoch (a numpy array: plotly stores it as base64),
    which plotly draws on a date axis as UTC wall time."""
    return (ts.dt.epoch("us") / 1000).to_numpy()


def _time_fmt(sw: Swimlanes) -> str:
    multi_day = sw.first is not None and sw.last is not None and sw.first.date() != sw.last.date()
    return "%Y-%m-%d %H:%M:%S%.3f" if multi_day else "%H:%M:%S%.3f"


def _bin_seconds(span_s: float) -> float:
    for b in NICE_BINS_S:
        if span_s / b <= MAX_BINS:
            return b
    return NICE_BINS_S[-1]


def _label_of(sw: Swimlanes) -> pl.DataFrame:
    return sw.lanes.select("lane", pl.col("label").alias("lane_label"))


def _activity_traces(sw: Swimlanes, binned: bool, bin_s: float | None) -> list[dict]:
    fmt = _time_fmt(sw)
    traces = []
    b = sw.batches
    if binned:
        traces += _run_traces(sw)
    else:
        b = b.join(_label_of(sw), on="lane")
        fields = [c for c in b.columns if c not in _BATCH_NOT_SHOWN]
        for role in ROLE_ORDER:
            mine = b.filter(pl.col("role") == role)
            if mine.is_empty():
                continue
            hover = pl.concat_str(
                [
                    _esc_expr(pl.col("lane_label")),
                    pl.lit(" · "),
                    _esc_expr(batch_name(pl.col("batch_type"))),
                    pl.lit(" · "),
                    pl.col("ts").dt.strftime(fmt),
                    pl.lit(" UTC<br>"),
                    _fields_text(fields),
                ]
            )
            traces.append(
                dict(
                    type="scatter",
                    mode="markers",
                    name=f"{role} batch",
                    x=_ms(mine["ts"]),
                    y=mine["lane"].to_numpy(),
                    hovertext=mine.select(hover).to_series().to_list(),
                    hoverinfo="text",
                    marker=dict(symbol="line-ns-open", size=13, color=ROLE_COLOR[role], line=dict(width=1.2)),
                )
            )
        reqs = sw.requests.filter(~pl.col("error"))
        if reqs.height:
            traces.append(_mark_trace(sw, reqs, "request", _request_hover(sw, reqs)))
    last = sw.last_batches.join(_label_of(sw), on="lane").sort("lane", "ts")
    if last.height:
        traces.append(
            dict(
                type="scatter",
                mode="markers",
                name="last batch of a rank's process",
                x=_ms(last["ts"]),
                y=last["lane"].to_numpy(),
                hovertext=[
                    f"<b>last batch of {esc(lbl)}</b>"
                    + (f" (pid {pid})" if pid is not None else "")
                    + f"<br>{t:%Y-%m-%d %H:%M:%S.%f} UTC<br>{esc(bt)}"
                    for lbl, t, pid, bt in last.select(
                        "lane_label", "ts", "pid", batch_name(pl.col("batch_type"))
                    ).iter_rows()
                ],
                hoverinfo="text",
                marker=dict(symbol="diamond", size=10, color="#111111", line=dict(width=1, color="white")),
            )
        )
    return traces


_BATCH_NOT_SHOWN = {
    "lane",
    "lane_label",
    "ts",
    "host",
    "role",
    *RANKS,
    "event_id",
    "source",
    "source_pos",
    "batch_type",
    "pid",
    "level",
}


def _fields_text(fields: list[str], per_line: int = 4) -> pl.Expr:
    """``name: value`` of the non-null batch fields, ``per_line`` to a line (escaped)."""
    rows = []
    for i in range(0, len(fields), per_line):
        parts = [
            pl.when(pl.col(c).is_not_null()).then(
                pl.format(f"{c}: {{}}", _esc_expr(pl.col(c).cast(pl.String)))
            )
            for c in fields[i : i + per_line]
        ]
        row = pl.concat_str(parts, separator=" · ", ignore_nulls=True)
        rows.append(pl.when(row != "").then(row))
    if not rows:
        return pl.lit("")
    return pl.concat_str(rows, separator="<br>", ignore_nulls=True)


def _run_traces(sw: Swimlanes) -> list[dict]:
    """Runs as horizontal bars, one trace per role: a bar from a run's first line to its ``until``
    (the last line plus the lane's usual interval); between runs nothing, so a stall is a gap."""
    runs = sw.runs.join(_label_of(sw), on="lane")
    traces = []
    for role in ROLE_ORDER:
        mine = runs.filter(pl.col("role") == role).sort("lane", "ts")
        if mine.is_empty():
            continue
        what = (
            pl.when(pl.col("kind") == "request")
            .then(pl.lit("router requests"))
            .otherwise(batch_name(pl.col("batch_type")).str.to_lowercase().str.replace(r"batch$", "batches"))
        )
        load = [
            pl.when(pl.col(c).is_not_null()).then(
                pl.format(f"{label} {{}}", pl.col(c).round(2).cast(pl.String))
            )
            for c, label in (
                ("running_req", "max #running-req"),
                ("queue_req", "max #queue-req"),
                ("token_usage", "max token usage"),
                ("gen_throughput", "mean gen throughput (token/s)"),
                ("input_throughput", "mean input throughput (token/s)"),
            )
        ]
        hover = pl.concat_str(
            [
                pl.lit("<b>"),
                _esc_expr(pl.col("lane_label")),
                pl.lit(" · a run of "),
                pl.col("lines").map_elements(lambda n: f"{n:,}", return_dtype=pl.String),
                pl.lit(" "),
                _esc_expr(what),
                pl.lit("</b><br>"),
                pl.col("ts").dt.strftime("%Y-%m-%d %H:%M:%S%.3f"),
                pl.lit(" → "),
                pl.col("end").dt.strftime("%H:%M:%S%.3f"),
                pl.lit(" UTC (last line) · pid "),
                pl.col("pid").cast(pl.String).fill_null("?"),
                pl.lit("<br>usual interval "),
                pl.col("typical_s").round(3).cast(pl.String).fill_null("?"),
                pl.lit(" s; a run ends at a gap of more than "),
                pl.lit(f"{RUN_GAP_FACTOR}× that (at least {RUN_MIN_GAP_S:g} s) or a new process<br>"),
                pl.concat_str(load, separator=" · ", ignore_nulls=True).fill_null(""),
            ]
        )
        start = _ms(mine["ts"])
        traces.append(
            dict(
                type="bar",
                orientation="h",
                name=f"{role} {'requests' if role == 'router' else 'batches'} (runs)",
                base=start,
                x=_ms(mine["until"]) - start,
                y=mine["lane"].to_numpy(),
                width=0.42,
                hovertext=mine.select(hover).to_series().to_list(),
                hoverinfo="text",
                marker=dict(color=ROLE_LIGHT[role], line=dict(color=ROLE_COLOR[role], width=1)),
            )
        )
    return traces


def _bin_label(bin_s: float) -> str:
    if bin_s < 1:
        return f"{bin_s * 1000:g} ms"
    if bin_s < 60:
        return f"{bin_s:g} s"
    if bin_s < 3600:
        return f"{bin_s / 60:g} min"
    return f"{bin_s / 3600:g} h"


def _leak_marks(out: Path, common: dict) -> pl.LazyFrame:
    """Answers whose text carries tool-call markup (``request_log.markup_leak``), with the requests
    running on their engine then (saved query ``markup_leaks``) in the hover's detail."""
    leaks = _scan(out, "request_log", {**common, "markup_leak": pl.String, "markup": pl.String}).filter(
        pl.col("markup_leak").is_not_null()
    )
    if leaks.select(pl.len()).collect().item() == 0:
        return leaks.drop("markup_leak", "markup").with_columns(
            pl.lit(None, pl.String).alias(c) for c in ("kind", "detail", "level", "message")
        )
    running = saved.query(out, "markup_leaks").select("event_id", pl.col("running_req").cast(pl.Int64)).lazy()
    return leaks.join(running, on="event_id", how="left").select(
        *common,
        pl.lit("markup_leak").alias("kind"),
        pl.concat_str(
            [
                pl.col("markup"),
                pl.lit(" · running requests "),
                pl.col("running_req").cast(pl.String).fill_null("?"),
            ]
        ).alias("detail"),
        pl.lit(None, pl.String).alias("level"),
        pl.lit(None, pl.String).alias("message"),
    )


def _mark_hover(sw: Swimlanes, df: pl.DataFrame) -> list[str]:
    labels = dict(sw.lanes.select("lane", "label").iter_rows())
    out = []
    for r in df.iter_rows(named=True):
        name = MARK_STYLE[r["kind"]][0]
        head = f"<b>{esc(name)}</b> · {esc(labels[r['lane']])} · {r['ts']:%Y-%m-%d %H:%M:%S.%f} UTC"
        ids = []
        if r.get("rid"):
            ids.append(f"rid {esc(r['rid'])}")
        if r.get("bootstrap_room") is not None:
            ids.append(f"room {r['bootstrap_room']}")
        if r.get("detail"):
            ids.append(esc(r["detail"])[:200])
        src = f"{esc(Path(r['source'] or '?').name)}:{esc(r['source_pos'])}"
        out.append("<br>".join([head, *([" · ".join(ids)] if ids else []), brief(r.get("body")), src]))
    return out


def _request_hover(sw: Swimlanes, df: pl.DataFrame) -> list[str]:
    out = []
    for r in df.iter_rows(named=True):
        status = r["status"] if r["status"] is not None else "no status"
        lat = f" · {r['latency_ms']:.0f} ms" if r["latency_ms"] is not None else ""
        ids = [
            f"{k} {esc(r[k])}"
            for k in ("request_id", "rid", "bootstrap_room", "prefill_url", "decode_url")
            if r.get(k) is not None
        ]
        out.append(
            "<br>".join(
                [
                    f"<b>{esc(r['method'] or '')} {esc(r['path'] or '')} → {esc(status)}</b>{lat} · "
                    f"{r['ts']:%Y-%m-%d %H:%M:%S.%f} UTC",
                    *([" · ".join(ids)] if ids else []),
                    brief(r["body"], lines=3),
                ]
            )
        )
    return out


def _mark_trace(sw: Swimlanes, df: pl.DataFrame, kind: str, hover: list[str]) -> dict:
    name, symbol, color, size, dy = MARK_STYLE[kind]
    return dict(
        type="scatter",
        mode="markers",
        name=name,
        x=_ms(df["ts"]),
        y=(df["lane"] + dy).to_numpy(),
        hovertext=hover,
        hoverinfo="text",
        marker=dict(symbol=symbol, size=size, color=color, line=dict(width=1.5, color=color)),
    )


def _merged(df: pl.DataFrame, bin_s: float) -> pl.DataFrame:
    """Many markers of one kind → one per lane and time bin, with the count and the first row."""
    bin_us = max(int(bin_s * 1e6), 1)
    return (
        df.with_columns((pl.col("ts").dt.epoch("us") // bin_us).alias("_bin"))
        .group_by("lane", "_bin", maintain_order=True)
        .agg(pl.all().first(), pl.len().alias("n"), pl.col("ts").last().alias("ts_last"))
        .drop("_bin")
    )


def _marker_traces(sw: Swimlanes, bin_s: float) -> list[dict]:
    traces = []
    for kind in MARK_STYLE:
        if kind.startswith("request"):
            continue
        df = sw.marks.filter(pl.col("kind") == kind)
        if df.is_empty():
            continue
        traces.append(_thinned(sw, df, kind, bin_s, _mark_hover))
    errors = sw.requests.filter(pl.col("error"))
    if errors.height:
        traces.append(_thinned(sw, errors, "request_error", bin_s, _request_hover))
    return traces


def _thinned(sw, df, kind, bin_s, hover_fn) -> dict:
    if df.height <= MAX_MARKS_PER_KIND:
        return _mark_trace(sw, df, kind, hover_fn(sw, df))
    merged = _merged(df, bin_s)
    hover = [
        f"<b>{n:,} × {esc(MARK_STYLE[kind][0])}</b> until {t:%H:%M:%S} UTC; the first:<br>{h}"
        for n, t, h in zip(merged["n"], merged["ts_last"], hover_fn(sw, merged), strict=True)
    ]
    trace = _mark_trace(sw, merged, kind, hover)
    trace["name"] += f" (merged per {_bin_label(bin_s)})"
    return trace


def _capture_traces(sw: Swimlanes) -> tuple[list[dict], list[dict]]:
    """One trace per stack fingerprint group (one colour = one identical stack), and a label with
    the class beside the last capture of each lane."""
    caps = sw.captures
    if caps.is_empty():
        return [], []
    labels = dict(sw.lanes.select("lane", "label").iter_rows())
    traces, notes = [], []
    groups = sorted(caps["group"].unique().to_list(), key=lambda g: (len(g or ""), g or ""))
    for i, group in enumerate(groups):
        g = caps.filter(pl.col("group") == group)
        color = GROUP_COLORS[i % len(GROUP_COLORS)]
        hover = []
        for r in g.iter_rows(named=True):
            rows = [
                f"<b>py-spy: {esc(r['label'])}</b> · stack {esc(group)} · {esc(labels[r['lane']])}",
                f"{r['ts']:%Y-%m-%d %H:%M:%S.%f} UTC · pid {esc(r['pid'])} · "
                f"thread {esc(r['thread_name'] or r['thread_id'])}"
                + (f" ({esc(r['thread_state'])})" if r["thread_state"] else ""),
            ]
            if r["event_loop"]:
                rows.append(f"event loop {esc(r['event_loop'])}")
            if r["frames"]:
                rows.append("innermost first:<br>" + brief(r["frames"], lines=8, width=110))
            rows.append(f"{esc(Path(r['source'] or '?').name)}:{esc(r['source_pos'])}")
            hover.append("<br>".join(rows))
        n_lanes = g["lane"].n_unique()
        # the roles of its lanes: two stacks waiting in one collective (prefill's and decode's event
        # loops) read alike otherwise
        roles = ",".join(sorted({labels[lane].split(" ")[0] for lane in g["lane"].unique().to_list()}))
        traces.append(
            dict(
                type="scatter",
                mode="markers",
                name=f"py-spy stack {esc(group)}: {esc(g['label'][0])}, {esc(roles)} ({n_lanes} lane{'s' if n_lanes > 1 else ''})",
                x=_ms(g["ts"]),
                y=(g["lane"] + CAPTURE_DY).to_numpy(),
                hovertext=hover,
                hoverinfo="text",
                marker=dict(symbol="square", size=11, color=color, line=dict(width=1, color="#222")),
            )
        )
        for lane, ts, label in (
            g.sort("ts")
            .unique("lane", keep="last", maintain_order=True)
            .select("lane", "ts", "label")
            .iter_rows()
        ):
            notes.append(
                dict(
                    x=ts.timestamp() * 1000,
                    y=lane + CAPTURE_DY,
                    xref="x",
                    yref="y",
                    text=esc(label),
                    showarrow=False,
                    xanchor="left",
                    xshift=9,
                    font=dict(size=10.5, color=color),
                    bgcolor="rgba(255,255,255,0.88)",
                    bordercolor=color,
                    borderpad=1,
                    borderwidth=1,
                    captureevents=False,
                )
            )
    return traces, notes


def _wedge_shapes(sw: Swimlanes) -> tuple[list[dict], list[dict]]:
    """A shaded span over the lanes of each wedged role, labelled above the plot."""
    shapes, notes = [], []
    for w in sw.wedges:
        lanes = sw.lanes.filter(pl.col("role") == w.role)["lane"].to_list()
        x1 = w.resumed or sw.last
        if not lanes or x1 is None or (sw.last and w.stopped > sw.last) or (sw.first and x1 < sw.first):
            continue
        x0ms, x1ms = w.stopped.timestamp() * 1000, x1.timestamp() * 1000
        shapes.append(
            dict(
                type="rect",
                xref="x",
                yref="y",
                x0=x0ms,
                x1=x1ms,
                y0=min(lanes) - 0.5,
                y1=max(lanes) + 0.5,
                fillcolor="rgba(214,39,40,0.12)",
                line=dict(color="rgba(214,39,40,0.7)", width=1, dash="dot"),
                layer="below",
            )
        )
        end = f"{w.resumed_by} {x1:%H:%M:%S}" if w.resumed else "end of data"
        again = ""
        if w.resumed_by == "restart" and w.batches_again is not None:  # as the report: both ends named
            again = f"; batches again {w.batches_again:%H:%M:%S} ({_span(w.stopped, w.batches_again)} after the stop)"
        notes.append(
            dict(
                x=x0ms,
                y=1,
                xref="x",
                yref="paper",
                yshift=16 * len(notes),
                text=f"<b>{esc(w.role)} wedged</b> {w.stopped:%H:%M:%S} → {esc(end)} ({_span(w.stopped, x1)}){again}",
                showarrow=False,
                xanchor="left",
                yanchor="bottom",
                font=dict(size=11, color="#b10026"),
            )
        )
    return shapes, notes


def _lane_bands(sw: Swimlanes) -> list[dict]:
    """Light bands per role group and a line between lanes, so a reader's eye follows a lane."""
    shapes = []
    for lane in sw.lanes["lane"].to_list():
        if lane % 2 == 0:
            shapes.append(
                dict(
                    type="rect",
                    xref="paper",
                    yref="y",
                    x0=0,
                    x1=1,
                    y0=lane - 0.5,
                    y1=lane + 0.5,
                    fillcolor="rgba(0,0,0,0.035)",
                    line=dict(width=0),
                    layer="below",
                )
            )
    roles = sw.lanes["role"].to_list()
    for lane in range(1, len(roles)):
        if roles[lane] != roles[lane - 1]:
            shapes.append(
                dict(
                    type="line",
                    xref="paper",
                    yref="y",
                    x0=0,
                    x1=1,
                    y0=lane - 0.5,
                    y1=lane - 0.5,
                    line=dict(color="#555", width=1.2),
                )
            )
    return shapes


def figure(sw: Swimlanes) -> tuple[dict, dict]:
    """The plotly figure (as a dict: ``{"data", "layout"}``) and facts about it: ``binned`` (activity
    drawn as runs, not lines), ``bin_seconds`` (the bucket merged marks share), ``runs`` (how many),
    ``counts``."""
    span_s = (sw.last - sw.first).total_seconds() if sw.first and sw.last else 0.0
    binned = not sw.detail
    bin_s = _bin_seconds(max(span_s, 1.0))
    data = _activity_traces(sw, binned, bin_s if binned else None)
    data += _marker_traces(sw, bin_s)
    traces, labels = _capture_traces(sw)
    data += traces
    shapes, notes = _wedge_shapes(sw)
    n = sw.lanes.height
    x_range = None
    if sw.first and sw.last:
        pad = max(span_s * 0.02, 1.0)
        x_range = [
            (sw.first.timestamp() - pad) * 1000,
            (sw.last.timestamp() + pad * 6) * 1000,  # room for the capture labels at the right
        ]
    layout = dict(
        template="plotly_white",
        height=max(260, 130 + 34 * n),
        margin=dict(l=10, r=10, t=24 + 16 * len(notes), b=50),
        hovermode="closest",
        hoverlabel=dict(align="left", font=dict(family="monospace", size=11)),
        showlegend=True,
        legend=dict(orientation="v", x=1.01, xanchor="left", y=1, yanchor="top", font=dict(size=11)),
        xaxis=dict(
            type="date",
            title=dict(text="time (UTC, offset +00:00)", font=dict(size=12)),
            range=x_range,
            showgrid=True,
            gridcolor="#e5e5e5",
            hoverformat="%H:%M:%S.%L",
        ),
        yaxis=dict(
            tickmode="array",
            tickvals=sw.lanes["lane"].to_list(),
            ticktext=[esc(s) for s in sw.lanes["label"].to_list()],
            range=[n - 0.5, -0.5],
            showgrid=False,
            zeroline=False,
            automargin=True,
            fixedrange=True,
            tickfont=dict(family="monospace", size=12),
        ),
        shapes=_lane_bands(sw) + shapes,
        annotations=notes + labels,
        barmode="overlay",
    )
    counts = {
        "lanes": n,
        "batches": sw.batches.height if sw.detail else sw.totals.get("batches", 0),
        "requests": sw.requests.height
        if sw.detail
        else sw.totals.get("requests", 0) + sw.requests.filter(pl.col("error")).height,
        "runs": sw.runs.height,
        "captures": sw.captures.height,
        **{k: int((sw.marks["kind"] == k).sum()) for k in MARK_STYLE if not k.startswith("request")},
    }
    return dict(data=data, layout=layout), dict(
        binned=binned, bin_seconds=bin_s if binned else None, counts=counts
    )


# ------------------------------------------------------------------------------------------- page

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="referrer" content="no-referrer">
<title>{title}</title>
<style>
body {{ font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 14px 18px; color: #222; }}
h1 {{ font-size: 19px; margin: 0 0 6px 0; }}
.verdict {{ margin: 6px 0 8px 0; padding: 6px 10px; background: #fff4f4; border-left: 4px solid #b10026; }}
.verdict p {{ margin: 2px 0; font-size: 14px; }}
.facts {{ font-size: 12.5px; color: #444; margin: 0; padding-left: 18px; }}
.facts li {{ margin: 1px 0; }}
.binned {{ color: #8a4b00; font-weight: 600; }}
details {{ font-size: 12px; color: #444; }}
</style>
</head>
<body>
<header>
<h1>{title}</h1>
{verdict}
<ul class="facts">
{facts}
</ul>
</header>
{plot}
</body>
</html>
"""


def _sources_text(sources: list[tuple[str, str, int]]) -> str:
    """Inputs, several files of one format in one folder said once (``12 pyspy files in d/``)."""
    groups: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for src, fmt, n in sources:
        groups.setdefault((str(Path(src).parent), fmt), []).append((src, n))
    parts = []
    for (folder, fmt), items in groups.items():
        n = sum(k for _, k in items)
        if len(items) == 1:
            parts.append(f"{esc(items[0][0])} [{esc(fmt)}, {n:,} records]")
        else:
            parts.append(f"{len(items)} {esc(fmt)} files in {esc(folder)}/ [{n:,} records]")
    return "; ".join(parts)


def _facts(sw: Swimlanes, facts: dict) -> list[str]:
    """The header's bullet list (HTML, every data value escaped)."""
    items = []
    if sw.first and sw.last:
        items.append(
            f"time span {sw.first:%Y-%m-%d %H:%M:%S} – {sw.last:%Y-%m-%d %H:%M:%S} UTC "
            f"({_span(sw.first, sw.last)}); the axis is UTC (offset +00:00); "
            + esc("; ".join(sw.clock_notes))
        )
    c = facts["counts"]
    items.append(
        f"{c['lanes']} lanes: {c['batches']:,} batches · {c['abort']:,} aborts · "
        f"{c['assertion']:,} transfer_infos assertions · {c['transfer_error']:,} other KV transfer errors · "
        f"{c['watchdog']:,} watchdog · {c['health'] + c['health_failed']:,} /health ({c['health_failed']:,} failed) · "
        f"{c['captures']:,} py-spy captures · {c['requests']:,} router request lines"
    )
    if facts["binned"]:
        items.append(
            f'<span class="binned">runs: the {c["batches"]:,} batches (and ok router requests) are drawn as '
            f"{c['runs']:,} runs, a bar per run of lines at a rank's usual pace; a run ends at a gap of more than "
            f"{RUN_GAP_FACTOR}× the rank's usual interval (at least {RUN_MIN_GAP_S:g} s) or at a new process, so a "
            "gap is a gap; hover a bar for its lines and load. ◆ the last batch of each rank's process; "
            "shaded: the wedge (from the wedge query). Narrow the window with --since/--until (to at most "
            f"{MAX_ACTIVITY_MARKS:,} lines) to see each batch.</span>"
        )
    else:
        items.append(
            "one tick per batch line; ◆ the last batch of each rank's process (a restart starts a new one); shaded: the wedge (from the wedge query); "
            "hover any mark for its line and source position"
        )
    if sw.filters:
        items.append("filtered: " + esc(", ".join(sw.filters)))
    items += [f'<span class="binned">{esc(n)}</span>' for n in sw.notes]
    if sw.sources:
        items.append(f"sources ({esc(sw.out)}): " + _sources_text(sw.sources))
    return [f"<li>{i}</li>" for i in items]


def _title(sw: Swimlanes) -> str:
    hosts = sorted(set(sw.lanes["host"].drop_nulls().to_list()))
    where = ", ".join(hosts[:3]) + (f" and {len(hosts) - 3} more" if len(hosts) > 3 else "")
    when = ""
    if sw.first and sw.last:
        end = f"{sw.last:%H:%M}" if sw.first.date() == sw.last.date() else f"{sw.last:%Y-%m-%d %H:%M}"
        when = f", {sw.first:%Y-%m-%d %H:%M}–{end} UTC"
    return f"logcorr timeline: {where or 'no host'}{when}"


def _csp(scripts: list[str]) -> str:
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'" for s in scripts
    )
    return (
        "default-src 'none'; "
        f"script-src {hashes}; "
        "style-src 'unsafe-inline'; img-src data: blob:; font-src data:; "
        "connect-src 'none'; form-action 'none'; base-uri 'none'"
    )


def render(sw: Swimlanes) -> tuple[str, dict]:
    """The whole page as text, and the figure facts (see ``figure``)."""
    import plotly.io as pio

    fig, facts = figure(sw)
    plot = pio.to_html(
        fig,
        include_plotlyjs=True,
        include_mathjax=False,
        full_html=False,
        config=dict(
            displaylogo=False,
            responsive=True,
            scrollZoom=False,
            showSendToCloud=False,
            toImageButtonOptions=dict(format="png", filename="logcorr-timeline", scale=2),
            modeBarButtonsToRemove=["select2d", "lasso2d"],
        ),
        default_height=f"{fig['layout']['height']}px",
        div_id="logcorr-timeline",
    )
    scripts = re.findall(r"<script[^>]*>(.*?)</script>", plot, flags=re.S)
    title = _title(sw)
    verdict_html = (
        '<div class="verdict">' + "".join(f"<p>{_markdown_line(v)}</p>" for v in sw.verdict) + "</div>"
        if sw.verdict
        else '<div class="verdict"><p>No wedge, assertion or py-spy capture found in this window.</p></div>'
    )
    page = _PAGE.format(
        csp=_csp(scripts),
        title=esc(title),
        verdict=verdict_html,
        facts="\n".join(_facts(sw, facts)),
        plot=plot,
    )
    return page, facts


def timeline(
    out: Path,
    html_path: Path,
    since: str | datetime | None = None,
    until: str | datetime | None = None,
    room: int | None = None,
    role: str | None = None,
    detail: bool | None = None,
) -> TimelineInfo:
    """Draw OUT's per-rank swimlanes into one self-contained HTML file.

    Args:
        out: a folder written by ``logcorr ingest``.
        html_path: the file to write (its folder is created).
        since, until, room, role: narrow what is drawn (see ``load``).
        detail: a tick per batch line (``True``) or runs (``False``); default: ticks when the
            window holds at most ``MAX_ACTIVITY_MARKS`` lines (see ``load``).

    Returns:
        A ``TimelineInfo``: the file and its size, lane labels, whether activity was binned, counts,
        wedges and verdict.

    Raises:
        TimelineError: OUT is not a logcorr folder, or an option is invalid.

    Example:
        >>> info = timeline(Path("logcorr-out"), Path("incident.html"))  # doctest: +SKIP
        >>> info.lanes[:2]  # doctest: +SKIP
        ['prefill TP0', 'prefill TP1']
    """
    sw = load(out, since=since, until=until, room=room, role=role, detail=detail)
    page, facts = render(sw)
    html_path = Path(html_path)
    html_path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(
        html_path, lambda f: f.write(page)
    )  # a fresh O_EXCL name beside it: no planted link followed
    return TimelineInfo(
        html=html_path,
        bytes=html_path.stat().st_size,
        lanes=sw.lanes["label"].to_list(),
        binned=facts["binned"],
        bin_seconds=facts["bin_seconds"],
        counts=facts["counts"],
        wedges=sw.wedges,
        verdict=sw.verdict,
        first=sw.first,
        last=sw.last,
    )


__all__ = [
    "Swimlanes",
    "TimelineError",
    "TimelineInfo",
    "Wedge",
    "brief",
    "esc",
    "figure",
    "load",
    "parse_time",
    "render",
    "timeline",
    "verdict",
    "wedges",
]
