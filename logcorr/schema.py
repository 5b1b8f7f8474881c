"""Column names and types of every table (DESIGN.md "Tables"), in one place.

Times are ``Datetime("us", "UTC")``; ``log_ts`` is the time as printed in the line (no zone). Ranks
are nullable Int16, ``bootstrap_room`` Int64 (SGLang masks it to 63 bits). Every table ends with the
provenance columns ``source`` (path) and ``source_pos`` (line number, byte offset or journal cursor).
"""

from __future__ import annotations

import polars as pl

UTC_US = pl.Datetime("us", "UTC")
RANKS = {"dp_rank": pl.Int16, "pp_rank": pl.Int16, "tp_rank": pl.Int16, "ep_rank": pl.Int16}
PROVENANCE = {"source": pl.String, "source_pos": pl.String}

# One row per record as a reader yields it, before multi-line re-joining.
RECORD = {
    "ts": UTC_US,
    "host": pl.String,
    "boot_id": pl.String,
    "unit": pl.String,
    "pid": pl.Int32,
    "message": pl.String,
    **PROVENANCE,
}

EVENTS = {
    "event_id": pl.Int64,
    "ts": UTC_US,
    "log_ts": pl.Datetime("us"),
    "host": pl.String,
    "boot_id": pl.String,
    "unit": pl.String,
    "role": pl.String,
    "pid": pl.Int32,
    **RANKS,
    "level": pl.String,
    "kind": pl.String,
    "rid": pl.String,
    "bootstrap_room": pl.Int64,
    "message": pl.String,
    "n_lines": pl.Int32,
    **PROVENANCE,
}

SOURCES = {
    "source": pl.String,
    "format": pl.String,
    "bytes": pl.Int64,
    "records": pl.Int64,
    "unparsed": pl.Int64,
    "first_ts": UTC_US,
    "last_ts": UTC_US,
    "errors": pl.String,
}

KINDS = (
    "batch",
    "abort",
    "transfer_error",
    "request",
    "request_received",
    "request_finished",
    "watchdog",
    "pyspy",
    "traceback",
    "health",
    "other",
)


def conform(df: pl.DataFrame, schema: dict) -> pl.DataFrame:
    """Return ``df`` with exactly the columns of ``schema``, in order, cast to their types.

    Missing columns are added as nulls; extra columns are dropped. Raises ``polars`` errors only
    when a present column cannot be cast (a programming error, not bad input).
    """
    if df.width == 0:  # literals alone would make one row
        return pl.DataFrame(schema=schema)
    return df.select(
        [
            (pl.col(name) if name in df.columns else pl.lit(None)).cast(dtype).alias(name)
            for name, dtype in schema.items()
        ]
    )
