"""The saved query ``findings``, made of one SQL file per failure mode (``queries/findings/*.sql``):
what it says it answers (``HEADER``) and how the files are united. ``findings`` reads and orders its
rows; ``saved`` registers it among the saved queries."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from logcorr.analysis.shipped import shipped_queries

HEADER = """-- question: What happened, of every kind: one row per finding (wedge, stop or no data, crash, start-up
--   failure or stall, collective timeout, transfer and bootstrap failures, rank divergence, restarts and crash
--   loops, lying health checks, CUDA errors, failed requests, aborts outside a burst, where py-spy dumps
--   wait, what endpoints and scrapes said, decode out of KV cache), with its time, role, host, ranks and evidence rows?
-- tables: wedge, incident_chain, desync, unit_lifecycle, events, tracebacks, transfer_errors, watchdogs,
--   retractions, lifecycle, batches, config, requests, aborts, request_errors, impact, captures, stacks, probes, metrics
-- columns:
--   ts        when it began (UTC; NULL when its records print no usable time)
--   end_ts    when it ended (UTC)
--   kind      wedge, stop, no_data, health_lies, scheduler_crash, start_up_failure, start_up_stall, collective_timeout,
--             collective_error, watchdog_hang (c10d's heartbeat monitor: the NCCL watchdog thread stuck),
--             child_exits (a parent reported a child process dead: pid, exit code),
--             scheduler_watchdog, transfer_failures, bootstrap_failures, transfer_assertion, remote_kv_wait
--             (a KV consumer's request kept waiting for the prefill side's KV),
--             rank_divergence, restart, crash_loop, cuda_error, decode_retraction, failed_requests,
--             request_aborts,
--             stacks_captured, health_generate_failed, failure_counters, unexplained_crash and
--             unexplained_errors (records with a crash marker or exception, resp. an error level or a
--             failure marker, that no other row cites); findings.findings adds abort_burst rows from
--             incident_chain
--   role      prefill, decode, engine, router, unknown (NULL for a burst over several roles)
--   host      host
--   ranks     the ranks involved, e.g. [TP0, TP1]
--   n         how many records (or batch lines, answers, restarts: see each kind's file)
--   summary   the finding in words and numbers
--   evidence  events.event_id of the records it rests on
--   rests_on  the tables and rule behind it
--   zoned     true when the records it rests on print their zone (journald, an offset or Z, the router's
--             UTC): its times are UTC; false when they print a time without a zone: its summary states
--             them as printed, without "UTC"; NULL when it has no time
--   printed_time  when it has no time (ts NULL): the first time its records print without a year or a
--             date (events.printed_time, as printed: 03-20 02:45:15, 16:43:29); NULL otherwise
-- parameters: none.
-- reading: generated from queries/findings/*.sql (one file per failure mode, each with its own header
--   saying its rule), in time order, a finding without a time last; `logcorr report` puts them in
--   causal order and leads with the main one (logcorr/analysis/findings.py).
"""


# The kind file read last: its records are those no other kind's evidence cites (the CTE ``cited``).
UNEXPLAINED = "unexplained"


def shipped_folder() -> Path:
    """``queries/findings`` beside the shipped queries (``shipped.shipped_queries``): one file per kind."""
    return Path(str(shipped_queries())) / "findings"


def kind_queries() -> dict[str, str]:
    """``{name: SQL}`` of the finding files, sorted by name (``stop``, ``crash`` …), header kept."""
    folder = shipped_folder()
    return {
        p.stem: p.read_text(encoding="utf-8")
        for p in sorted(folder.glob("*.sql"))
        if not p.name.startswith("_")
    }


def saved_query(body: Callable[[str, str], str]) -> str:
    """The text of the saved query ``findings``: ``HEADER``, then each kind's SQL as a CTE, united by
    name and ordered by time, over ``records`` (``RECORDS_SQL``). ``body(text, name)`` is a kind file's SQL without its header (the saved
    queries' reader passes its own, so this module needs nothing of it)."""
    parts = {name: body(sql, name) for name, sql in kind_queries().items()}
    last = parts.pop(UNEXPLAINED, None)
    ctes = ",\n".join(f"finding_{name} AS (\n{body}\n)" for name, body in parts.items())
    union = "\nUNION ALL BY NAME ".join(f"SELECT * FROM finding_{name}" for name in parts)
    if last is not None:  # it reads the other kinds' rows (``cited``): what none of them explains
        ctes += f",\ncited AS (\n{union}\n),\nfinding_{UNEXPLAINED} AS (\n{last}\n)"
        union = f"SELECT * FROM cited\nUNION ALL BY NAME SELECT * FROM finding_{UNEXPLAINED}"
    return f"{HEADER}WITH {RECORDS_SQL},\n{ctes},\n{ZONES_SQL.format(union=union, zoned=RECORD_ZONED)}"


# The records the kind files search by text or fetch by id: ``events`` without the records that are a
# batch line alone (SGLang's batch statistics: nine in ten records of a serving day, never a crash, a
# failure, a py-spy dump or a start-up step, and never the record of an abort, traceback or watchdog
# row). Read once and held (MATERIALIZED): ten kinds each reading every record's text cost ten scans of
# the largest column, which grew with the hosts of a fleet (issue 49). A kind that needs every record
# (a stop's silence, the records after a start-up step) reads ``events``. Two scans, each filtering
# one column at a time: DuckDB pushes such a filter into the Parquet scan, which then skips the row
# groups whose statistics exclude it (``combine`` writes a fleet's lone batch lines into row groups of
# their own: ``combine.LAST``); the one condition over two columns was read row by row, every record's
# text decoded (at 64 hosts 0.24 -> 0.03 CPU s, the same rows).
RECORDS_SQL = """records AS MATERIALIZED (
    SELECT * FROM events WHERE kind IS DISTINCT FROM 'batch'
    UNION ALL
    SELECT * FROM events WHERE kind = 'batch' AND n_lines IS DISTINCT FROM 1
)"""


# A record's time is known to be UTC unless it is only a time printed without a zone (events.zoned, set at
# ingest by ``clocks.zoneless``). Over ``events e``; a record written before the column (NULL: the views
# add a contract column no part holds, ``store.views.parquet_view_sql``) counts as zoned.
RECORD_ZONED = "e.zoned IS DISTINCT FROM false"

# A finding whose timed evidence is all zoneless states its times as printed: the kind files write
# " UTC", dropped here.
ZONES_SQL = """found AS (
{union}
),
numbered AS (SELECT row_number() OVER () AS finding_no, * FROM found),
clock AS (
    SELECT n.finding_no,
           bool_and({zoned}) AS zoned
    FROM (SELECT finding_no, unnest(evidence) AS event_id FROM numbered) n
    JOIN events e ON e.event_id = n.event_id
    WHERE e.ts IS NOT NULL
    GROUP BY n.finding_no
),
printed AS (  -- the first time its untimed records print without a year or a date (events.printed_time)
    SELECT n.finding_no, min(e.printed_time) AS printed_time
    FROM (SELECT finding_no, unnest(evidence) AS event_id FROM numbered) n
    JOIN events e ON e.event_id = n.event_id
    WHERE e.ts IS NULL AND e.printed_time IS NOT NULL
    GROUP BY n.finding_no
)
SELECT n.* EXCLUDE (finding_no)
           REPLACE (replace(CASE WHEN c.zoned IS DISTINCT FROM false THEN n.summary
                                 ELSE replace(n.summary, ' UTC', '') END,
                            ' (no time read)',
                            ' (no time read' || coalesce(CASE WHEN p.printed_time LIKE '__-__ %'
                                                              THEN '; printed without a year: '
                                                              ELSE '; printed without a date: ' END
                                                         || p.printed_time, '') || ')') AS summary),
       CASE WHEN n.ts IS NOT NULL THEN c.zoned IS DISTINCT FROM false END AS zoned,
       CASE WHEN n.ts IS NULL THEN p.printed_time END AS printed_time
FROM numbered n LEFT JOIN clock c USING (finding_no) LEFT JOIN printed p USING (finding_no)
ORDER BY n.ts NULLS LAST, n.kind, n.summary
"""
