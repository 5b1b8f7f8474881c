"""Summaries an ingest writes at its end, so the saved queries need not scan millions of rows.

``processes``: one row per process (and rank label) of an ingest, summed up from the ``events`` it
wrote: when each process started, ended and became ready.

``batch_seconds``: one row per role and second with batches, from the ``batches`` it wrote: the
first and last batch of that second. ``wedge`` finds the gaps between batches from it.

A row's key is (``host, boot_id, unit, role, pid, dp/pp/tp/ep_rank, source``) with nulls as values
of their own: a scheduler process gives one row for its records with a rank prefix and one for those
without (tracebacks, library lines). Summing ``records`` over every row gives ``count(*)`` of
``events``; ``min(first_ts)`` / ``max(last_ts)`` over any grouping of the key are those of ``events``.
An ``--append`` ingest adds its own rows: readers group by the key again.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from logcorr import interrupts
from logcorr.store import schema
from logcorr.store.output import glob_escape

# SGLang's HTTP server logs this once per start, when warm-up is done (sglang/srt/entrypoints/
# http_server.py, 2024-2025 versions).
READY_TEXT = "The server is fired up and ready to roll!"

# The rows from a relation named ``events``. First and last record in (ts, event_id) order; a group
# whose records have no time at all takes its first and last by event id. ``ready_ts``: the first
# "fired up and ready to roll" line with a time. Also the ``processes`` view of an OUT written before
# this table existed, so the saved queries run there too, only slower.
FROM_EVENTS_SQL = f"""
SELECT host, boot_id, unit, role, pid, dp_rank, pp_rank, tp_rank, ep_rank,
       count(*) AS records,
       min(ts) AS first_ts,
       coalesce(arg_min(event_id, (ts, event_id)) FILTER (WHERE ts IS NOT NULL), min(event_id)) AS first_event_id,
       max(ts) AS last_ts,
       coalesce(arg_max(event_id, (ts, event_id)) FILTER (WHERE ts IS NOT NULL), max(event_id)) AS last_event_id,
       min(ts) FILTER (WHERE ready) AS ready_ts,
       arg_min(event_id, (ts, event_id)) FILTER (WHERE ready AND ts IS NOT NULL) AS ready_event_id,
       source,
       coalesce(arg_min(source_pos, (ts, event_id)) FILTER (WHERE ts IS NOT NULL),
                arg_min(source_pos, event_id)) AS source_pos
FROM (SELECT *, kind = 'other' AND contains(message, '{READY_TEXT}') AS ready FROM events)
GROUP BY host, boot_id, unit, role, pid, dp_rank, pp_rank, tp_rank, ep_rank, source
"""

# The rows from a relation named ``batches``: per role and second (``sec``: Unix seconds, UTC) the
# first and last batch in (ts, event_id) order. Also the ``batch_seconds`` view of an OUT written
# before this table existed. An --append ingest or a second origin adds rows for the same second:
# readers group by (role, sec) again.
BATCH_SECONDS_SQL = """
SELECT role, epoch_us(ts) // 1000000 AS sec, make_timestamptz((epoch_us(ts) // 1000000) * 1000000) AS sec_ts,
       count(*) AS batches,
       min(ts) AS lo_ts, arg_min(event_id, (ts, event_id)) AS lo_event_id,
       max(ts) AS hi_ts, arg_max(event_id, (ts, event_id)) AS hi_event_id
FROM batches WHERE role IN ('prefill', 'decode', 'engine') AND ts IS NOT NULL
GROUP BY role, sec, sec_ts
"""


def _summary(table: schema.Table, view: str, files: list[Path], sql: str, memory_limit: str) -> pl.DataFrame:
    if not files:
        return pl.DataFrame(schema=table.schema)
    with interrupts.connect() as con:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(f"SET memory_limit = '{memory_limit}'")
        names = ", ".join("'" + glob_escape(f).replace("'", "''") + "'" for f in files)  # paths, not globs
        con.execute(f"CREATE VIEW {view} AS SELECT * FROM read_parquet([{names}], hive_partitioning = false)")
        return con.sql(sql).pl().cast(table.schema)  # type: ignore[arg-type]


def batch_seconds(files: list[Path], memory_limit: str = "512MB") -> pl.DataFrame:
    """``schema.BATCH_SECONDS`` rows of the ``batches`` Parquet ``files`` (one ingest's parts), ordered
    by role and second: about 170 k rows for a day of 5 M batches. Raises ``duckdb.Error`` when a file
    cannot be read."""
    sql = f"{BATCH_SECONDS_SQL} ORDER BY role, sec"
    return _summary(schema.BATCH_SECONDS, "batches", files, sql, memory_limit)


def from_events(files: list[Path], memory_limit: str = "512MB") -> pl.DataFrame:
    """``schema.PROCESSES`` rows of the ``events`` Parquet ``files`` (one ingest's parts), ordered by
    first record. DuckDB reads the files once after they are written: a second pass over the columns it
    needs, cheaper in memory than summing chunk by chunk while ingest streams (measured: +0.3 GB
    peak RSS at 1 M entries). Raises ``duckdb.Error`` when a file cannot be read."""
    sql = f"{FROM_EVENTS_SQL} ORDER BY first_ts, first_event_id"
    return _summary(schema.PROCESSES, "events", files, sql, memory_limit)
