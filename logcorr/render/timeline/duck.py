"""Batches in bounded memory: what is aggregated in DuckDB rather than read line by line.

A day holds millions of batch lines; only what is drawn leaves DuckDB. The window (--since,
--until) is a WHERE on ``ts`` that the Parquet scan turns into row-group pruning; runs, load and
the last batches are GROUP BYs; per-line rows are read only when the window holds few enough.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from logcorr import scratch
from logcorr.analysis import saved
from logcorr.render.timeline.counters import RATES, REQUEST_COUNTERS
from logcorr.render.timeline.model import DUCKDB_MEMORY, RUN_GAP_FACTOR, RUN_MIN_GAP_S
from logcorr.render.timeline.tables import LANE, contract, parquet_columns
from logcorr.store.schema import RANKS
from logcorr.store.views import quote_literal


def load_last_batches(con, since, until) -> pl.DataFrame:
    """The last batch of each process of each rank over all the data (a restart starts a new
    process: the old one's last batch is where it stopped), kept when it falls in the window.

    Aggregated in DuckDB (a few rows per rank); ``con`` is ``duck_connection(out)``. Columns: lane key, ts,
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
    return _typed(df, contract("batches", "ts", *LANE, "pid", "batch_type", "source"))


def duck_connection(out: Path):
    """A DuckDB connection over OUT's tables (``saved.connect``, no saved views) held to
    ``DUCKDB_MEMORY`` and 2 threads, spilling to a temporary folder beyond that."""
    con = saved.connect(out, saved={})
    spill = str(scratch.folder("spill"))
    con.execute(f"SET memory_limit = '{DUCKDB_MEMORY}'")
    con.execute("SET threads = 2")
    con.execute("SET preserve_insertion_order = false")
    con.execute(f"SET temp_directory = {quote_literal(spill)}")
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


def _activity_sql(out: Path, since, until) -> str:
    """One row per batch line and per router request line that did not fail, in the window: the
    lane key, ``kind`` (batch or request), pid, µs, event_id, and the load fields."""
    bc = parquet_columns(out, "batches")
    qc = parquet_columns(out, "requests")
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
          -- not failed: status ≥ 400, else its level (own, or its event's) says so
          AND NOT coalesce(q.status >= 400, coalesce(q.level, ev.level) IN ('ERROR', 'WARNING', 'WARN'), false)
    """


# batch fields summed up per run and per load bucket: (column, DuckDB type)
_LOAD_FIELDS = (
    *[(c, "BIGINT") for c, _ in REQUEST_COUNTERS],
    ("token_usage", "DOUBLE"),
    *[(c, "DOUBLE") for c, _ in RATES],
)


def count_activity(con, out: Path, since, until, role: str | None) -> dict[str, int]:
    """How many batch lines and ok router request lines the window holds (``role``: only its lanes)."""
    who = "true" if role is None else f"coalesce(role, 'unknown') = {quote_literal(role)}"
    rows = con.sql(
        f"SELECT kind, count(*) FROM ({_activity_sql(out, since, until)}) WHERE {who} GROUP BY kind"
    ).fetchall()
    got = dict(rows)
    return {"batches": int(got.get("batch", 0)), "requests": int(got.get("request", 0))}


def _runs_sql(out: Path, since, until) -> str:
    """The SQL of ``load_runs``: one row per run of the window's activity (see there)."""
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
    return f"""
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


def load_runs(con, out: Path, since, until) -> pl.DataFrame:
    """Runs of activity per lane, aggregated in DuckDB: consecutive batch lines of one rank (or ok
    router requests of the router) of one process, split where the gap to the previous line exceeds
    ``RUN_GAP_FACTOR`` times the lane's median interval in the window, and at least ``RUN_MIN_GAP_S``.

    Returns one row per run: the lane key, ``kind`` (batch, request), ``pid``, ``ts`` (its first
    line), ``end`` (its last line, exact), ``until`` (``end`` plus the lane's median interval: where
    a drawing of the run stops; never past the next run), ``lines``, ``batch_type`` (the most common),
    ``typical_s`` (the median interval, s), ``first_event_id``/``last_event_id``, ``source``, and per
    load field its maximum (``running_req`` …) or mean (throughputs)."""
    df = con.sql(_runs_sql(out, since, until)).pl()
    df = df.with_columns(
        pl.when(pl.col("host") != "").then(pl.col("host")).alias("host"),
        *[pl.when(pl.col(c) >= 0).then(pl.col(c)).alias(c) for c in RANKS],
    )
    batch = contract("batches", "ts", *LANE, "pid", "batch_type", "event_id", "source")
    schema = {
        "ts": batch["ts"],
        "end": batch["ts"],
        **LANE,
        "kind": pl.String,  # computed here: batch or a request run
        "pid": batch["pid"],
        "lines": pl.Int64,
        "batch_type": batch["batch_type"],
        "typical_s": pl.Float64,
        "first_event_id": batch["event_id"],
        "last_event_id": batch["event_id"],
        "source": batch["source"],
    }
    df = _typed(df, schema).drop("run").sort("ts")
    typical = pl.duration(microseconds=(pl.col("typical_s").fill_null(0) * 1e6).cast(pl.Int64))
    nxt = pl.col("ts").shift(-1).over("host", "role", *RANKS, "kind", order_by="ts")
    return df.with_columns(
        pl.min_horizontal(pl.col("end") + typical, nxt.fill_null(pl.col("end") + typical)).alias("until")
    )


def load_load(con, out: Path, since, until, bucket_s: float) -> pl.DataFrame:
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
    return _typed(df, {**contract("batches", "ts", *LANE), "lines": pl.Int64}).sort("ts")


def load_clock_notes(con, since, until) -> list[str]:
    """How the time printed in the lines relates to the journal's UTC clock (records from a journal
    carry both): one note when every host and role agree, else one per (host, role). The median
    offsets are taken in DuckDB (``con``: ``duck_connection(out)``)."""
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
