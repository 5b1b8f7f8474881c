"""Stage 3's py-spy part: the dumps among a chunk's events parsed into the ``stacks`` and ``captures``
tables (``dump_stacks``), and the role and ranks each process logged with (``learn_processes``), which a
dump without ranks of its own (a bare py-spy file) takes.
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

from logcorr.parsers import pyspy
from logcorr.store.schema import RANKS, UTC_US


def dump_stacks(
    events: pl.DataFrame, processes: dict, captured_at: datetime | None
) -> tuple[pl.DataFrame, dict[str, list[pl.DataFrame]], int]:
    """Parse the py-spy dumps among ``events`` (and the faulthandler stacks a record such as a fatal
    Python error holds) into rows of the stacks and captures tables. Returns
    ``events`` with the role, host and ranks a dump revealed filled in its own row (a bare file),
    the ``stacks`` and ``captures`` frames, and how many lines inside dumps had an unknown shape.

    Ranks come from the process title, else the rank prefix of the line that carried the dump, else
    the ranks (and role, host) the same pid logged with in ``events`` (``processes``, see
    ``learn_processes``). A dump without a time of its own (a bare file) gets ``captured_at``, in
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


def learn_processes(ev: pl.DataFrame, processes: dict) -> None:
    """Remember the role and ranks each (host, pid) logged with, for dumps of that pid that carry no
    rank of their own (a bare py-spy file). Also keyed by (None, pid) when the pid is unambiguous, for
    dump files that do not say their host."""
    known = ev.filter(pl.col("tp_rank").is_not_null() & pl.col("pid").is_not_null())
    for row in known.select("host", "pid", "role", *RANKS).unique(["host", "pid"]).iter_rows(named=True):
        info = {k: v for k, v in row.items() if k != "pid" and v is not None and v != "unknown"}
        if processes.setdefault((row["host"], row["pid"]), info) is info:
            other = processes.get((None, row["pid"]))
            processes[(None, row["pid"])] = info if other is None else {}  # {}: two hosts, same pid
