"""The ``processes`` table: one row per process (and rank label) of an ingest, summed up from
``events`` as its chunks stream past, so the saved queries need not scan millions of events to find
when each process started, ended and became ready.

A row's key is (``host, boot_id, unit, role, pid, dp/pp/tp/ep_rank, source``) with nulls as values
of their own: a scheduler process gives one row for its records with a rank prefix and one for those
without (tracebacks, library lines). Summing ``records`` over every row gives ``count(*)`` of
``events``; ``min(first_ts)`` / ``max(last_ts)`` over any grouping of the key are those of ``events``.
An ``--append`` ingest adds its own rows: readers group by the key again.
"""

from __future__ import annotations

import polars as pl

from logcorr.schema import RANKS, UTC_US

# SGLang's HTTP server logs this once per start, when warm-up is done (sglang/srt/entrypoints/
# http_server.py, 2024-2025 versions).
READY_TEXT = "The server is fired up and ready to roll!"

KEY = ["host", "boot_id", "unit", "role", "pid", *RANKS, "source"]

PROCESSES = {
    "host": pl.String,
    "boot_id": pl.String,
    "unit": pl.String,
    "role": pl.String,
    "pid": pl.Int32,
    **RANKS,
    "records": pl.Int64,
    "first_ts": UTC_US,
    "first_event_id": pl.Int64,
    "last_ts": UTC_US,
    "last_event_id": pl.Int64,
    "ready_ts": UTC_US,
    "ready_event_id": pl.Int64,
    "source": pl.String,
    "source_pos": pl.String,
}


# The same rows computed by DuckDB from ``events``: the ``processes`` view of an OUT written before
# this table existed (or put together by hand), so the saved queries run there too, only slower.
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


def _at(ts: str, pick: str, col: str) -> pl.Expr:
    """``col`` of the row whose ``ts`` is the group's min or max, ties to the lowest (min) or highest
    (max) event id: the first and last record in (ts, event_id) order."""
    extreme = getattr(pl.col(ts), pick)()
    return getattr(pl.col(col).filter(pl.col(ts) == extreme), pick)()


def summarize(ev: pl.DataFrame) -> pl.DataFrame:
    """``PROCESSES`` rows of one chunk of enriched events.

    Args:
        ev: ``events`` rows (``EVENTS`` columns; ``ts`` in UTC µs, may be null for a record without a
            time, which then counts in ``records`` but not in the times).

    Returns:
        One row per key (see the module doc) with ``records``, the first and last record's time and
        event id, the first "fired up and ready to roll" line (``ready_ts``, ``ready_event_id``; null
        when the process printed none in this chunk) and the ``source_pos`` of the first record.
    """
    if ev.height == 0:
        return pl.DataFrame(schema=PROCESSES)
    ready = (pl.col("kind") == "other") & pl.col("message").str.contains(READY_TEXT, literal=True)
    ev = ev.select(
        *KEY, "ts", "event_id", "source_pos",
        pl.when(ready).then(pl.col("ts")).alias("ready"),
        pl.when(ready).then(pl.col("event_id")).alias("ready_id"),
    )  # fmt: skip
    # a group whose records have no time at all: its first and last record in event id order
    first_id = pl.coalesce(_at("ts", "min", "event_id"), pl.col("event_id").min())
    return (
        ev.group_by(KEY)
        .agg(
            pl.len().alias("records"),
            pl.col("ts").min().alias("first_ts"),
            first_id.alias("first_event_id"),
            pl.col("ts").max().alias("last_ts"),
            pl.coalesce(_at("ts", "max", "event_id"), pl.col("event_id").max()).alias("last_event_id"),
            pl.col("ready").min().alias("ready_ts"),
            _at("ready", "min", "ready_id").alias("ready_event_id"),
            pl.col("source_pos").filter(pl.col("event_id") == first_id).first(),
        )
        .select(PROCESSES.keys())
        .cast(PROCESSES)
    )


def combine(parts: list[pl.DataFrame]) -> pl.DataFrame:
    """One row per key from the ``summarize`` rows of every chunk (same columns, same meaning)."""
    if not parts:
        return pl.DataFrame(schema=PROCESSES)
    rows = pl.concat(parts)
    first_id = pl.coalesce(_at("first_ts", "min", "first_event_id"), pl.col("first_event_id").min())
    return (
        rows.group_by(KEY)
        .agg(
            pl.col("records").sum(),
            pl.col("first_ts").min(),
            first_id.alias("first_event_id"),
            pl.col("last_ts").max(),
            pl.coalesce(_at("last_ts", "max", "last_event_id"), pl.col("last_event_id").max()),
            pl.col("ready_ts").min(),
            _at("ready_ts", "min", "ready_event_id").alias("ready_event_id"),
            pl.col("source_pos").filter(pl.col("first_event_id") == first_id).first(),
        )
        .select(PROCESSES.keys())
        .cast(PROCESSES)
        .sort("first_ts", "first_event_id", nulls_last=True)
    )
