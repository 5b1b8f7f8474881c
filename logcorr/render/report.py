"""``report()``: the incident in words and numbers, for a postmortem, drawn only from the saved queries.

Every sentence is built from a row of ``incident_chain``, ``wedge``, ``abort_to_assert``,
``last_batch_per_rank``, ``desync`` (over ``stuck_ranks``) or ``coverage``; a section whose query returns no row says
so instead of guessing. Times are UTC, or as printed (without "UTC") when no record of the data prints
its zone. The output is Markdown.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

import logcorr
from logcorr.analysis import collected, known_issues
from logcorr.analysis import findings as findings_mod
from logcorr.analysis import saved as saved_mod
from logcorr.analysis.saved import QueryError
from logcorr.clocks import hours, offset_words
from logcorr.markdown import md
from logcorr.parsers.prefix import FOREIGN_START, SERVING_START
from logcorr.store.schema import short_position


class ReportError(Exception):
    """The report could not be drawn (OUT missing or a saved query failing on its tables)."""


@dataclass(frozen=True)
class Clock:
    """How a report states its times. ``zoned`` False: no record of the data prints its zone, every
    time is stated as printed. ``zoneless``: in data that mixes both, the times (µs since the epoch,
    sorted) of the records that print none; a cell holding one of them is stated as printed."""

    zoned: bool = True
    zoneless: pl.Series = field(default_factory=lambda: pl.Series("us", [], pl.Int64))

    def states_utc(self, ts: datetime) -> bool:
        """Whether ``ts`` (aware) is stated with " UTC"."""
        if not self.zoned or self.zoneless.is_empty():
            return self.zoned
        us = (ts - _EPOCH) // timedelta(microseconds=1)
        i = self.zoneless.search_sorted(us)
        return not (i < self.zoneless.len() and self.zoneless[i] == us)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ZONE: contextvars.ContextVar[Clock | None] = contextvars.ContextVar("zone", default=None)  # None: UTC


def _clock() -> Clock:
    return _ZONE.get() or Clock()


def zone_known(cov: pl.DataFrame) -> bool:
    """False when coverage's clock rows are all "zone not printed": no record of the data prints its
    zone, so the report states its times as printed, not as UTC. True otherwise (or without clock rows)."""
    if "clock" not in cov.columns:
        return True
    clocks = cov.filter(pl.col("scope") == "clock")["clock"].drop_nulls()
    return not (clocks.len() and (clocks == "zone not printed").all())


def clock_of(results: dict[str, pl.DataFrame]) -> Clock:
    """The ``Clock`` of the rows of ``gather`` (coverage's clock rows, the zoneless records' times)."""
    zoneless = results.get("zoneless")
    if zoneless is None or not zoneless.height:
        return Clock(zone_known(results["coverage"]))
    return Clock(zone_known(results["coverage"]), zoneless["us"])


@contextlib.contextmanager
def drawn(results: dict[str, pl.DataFrame]) -> Iterator[None]:
    """While drawing the rows of ``gather``: times are stated by their ``Clock`` (``utc_time``)."""
    token = _ZONE.set(clock_of(results))
    try:
        yield
    finally:
        _ZONE.reset(token)


def time_label(name: str) -> str:
    """A time column's header: ``name (UTC)``; ``name (as printed)`` in a report of zoneless data;
    ``name (UTC where marked)`` where the data mixes both (a zoneless cell carries no " UTC")."""
    clock = _clock()
    return f"{name} ({'as printed' if not clock.zoned else 'UTC where marked' if clock.zoneless.len() else 'UTC'})"


def utc_time(ts: datetime | None, *, date: bool = True, zone: bool | None = None) -> str:
    """``2025-10-29 21:34:47.120 UTC`` (milliseconds only when not zero); ``?`` for no time; without
    `` UTC`` when ``zone`` is False (a time printed without a zone, as printed); ``zone`` None: as the
    report being drawn states ``ts`` (its ``Clock``; UTC outside a report)."""
    if ts is None:
        return "?"
    ts = ts.astimezone(UTC)
    zone = _clock().states_utc(ts) if zone is None else zone
    text = ts.strftime("%Y-%m-%d %H:%M:%S" if date else "%H:%M:%S")
    if ts.microsecond:
        text += f".{ts.microsecond // 1000:03d}"
    return text + (" UTC" if zone else "")


_t = utc_time


def _s(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if abs(seconds) >= 120:
        return f"{seconds:.0f} s ({seconds / 60:.1f} min)"
    return f"{seconds:.1f} s"


def _table(df: pl.DataFrame, columns: dict[str, str], fmt: dict | None = None) -> list[str]:
    """A Markdown table of ``df``'s ``columns`` (``{column: header}``), values passed through ``fmt``."""
    fmt = fmt or {}
    lines = ["| " + " | ".join(columns.values()) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in df.iter_rows(named=True):
        cells = []
        for col in columns:
            v = row.get(col)
            if col in fmt:
                v = fmt[col](v)
            elif isinstance(v, datetime):
                v = _t(v, date=False)
            elif isinstance(v, bool):
                v = "yes" if v else "no"
            elif isinstance(v, float):
                v = f"{v:.1f}"
            elif isinstance(v, list):
                v = ",".join(str(x) for x in v)
            cells.append(md(v, width=240, cell=True))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


# the times of the records that print no zone (events.zoned false), for ``Clock.zoneless``
ZONELESS_SQL = (
    "SELECT DISTINCT epoch_us(ts) AS us FROM events WHERE zoned = false AND ts IS NOT NULL ORDER BY us"
)


# records of a known kind or role (SGLang's, the router's, py-spy's), and a serving stack's own records
# whatever their role: a line in SGLang's, vLLM's or Dynamo's header format (``SERVING_START``) or naming
# an SGLang rid is engine data (not a line of another program whose header SGLang's also matches: ``FOREIGN_START``);
# a stack dump read in any record (a faulthandler block inside a paste: sglang#6083, batch24/02, whose record is
# kind other) is a dump read, never "no … py-spy dump"
SGLANG_READ_SQL = (
    "SELECT count(*) + (SELECT count(*) FROM captures) AS n FROM events"
    " WHERE kind <> 'other' OR coalesce(role, 'unknown') <> 'unknown'"
    f" OR rid IS NOT NULL OR (regexp_matches(message, '{SERVING_START}')"
    f" AND NOT regexp_matches(message, '{FOREIGN_START}'))"
)


# What the data shows when no finding exists (``findings.shown_line``), its most significant things read:
# the requests named by an id (with what was read of their outcome), the batch lines per role, a
# /metrics scrape, the py-spy captures, the last log record in start-up words (ready; else start, listen, serve)
# and the last record.
_TIMES = (
    "min(e.ts) AS first_ts, max(e.ts) AS last_ts, min(e.printed_time) AS printed_time,"
    " bool_and(e.zoned IS DISTINCT FROM false) FILTER (WHERE e.ts IS NOT NULL) AS zoned"
)
SHOWN_SQL = {
    "shown_requests": f"""
SELECT coalesce(e.request_id, e.rid, q.request_id, q.rid, l.rid) AS id,
       string_agg(DISTINCT coalesce(e.role, 'unknown'), ', ' ORDER BY coalesce(e.role, 'unknown')) AS roles,
       count(*) AS n, {_TIMES},
       max(coalesce(q.status, l.status_code)) AS status, max(q.latency_ms) AS latency_ms,
       bool_or(l.event = 'finished') AS finished, any_value(l.finish_type) AS finish_type,
       max(l.e2e_latency_s) AS e2e_latency_s,
       any_value(q.prefill_url) AS prefill_url, any_value(q.decode_url) AS decode_url, min(e.event_id) AS first_id
FROM events e LEFT JOIN requests q USING (event_id) LEFT JOIN request_log l USING (event_id)
WHERE coalesce(e.request_id, e.rid, q.request_id, q.rid, l.rid) IS NOT NULL
GROUP BY 1 ORDER BY first_id""",
    "shown_batches": f"""
SELECT coalesce(e.role, 'unknown') AS role, count(*) AS n, {_TIMES},
       list(DISTINCT b.tp_rank ORDER BY b.tp_rank) FILTER (WHERE b.tp_rank IS NOT NULL) AS tp_ranks,
       arg_max(b.running_req, e.event_id) AS last_running_req
FROM batches b JOIN events e USING (event_id) GROUP BY 1 ORDER BY min(e.event_id)""",
    # the HTTP answers no request id names, per method, path and status (batch22/03: three /health_generate
    # probes answered 200 are what a paste shows, not "3 record(s)")
    "shown_answers": f"""
SELECT coalesce(q.method, '?') AS method, coalesce(q.path, '?') AS path, q.status, count(*) AS n, {_TIMES}
FROM requests q JOIN events e USING (event_id)
WHERE coalesce(e.request_id, e.rid, q.request_id, q.rid) IS NULL
  -- an answer prints a method, a path or a status: a router's line about its workers prints none (batch4/02)
  AND coalesce(q.method, q.path, CAST(q.status AS VARCHAR)) IS NOT NULL
GROUP BY ALL ORDER BY min(e.event_id)""",
    "shown_metrics": """
SELECT count(*) AS n, list(DISTINCT name ORDER BY name) AS names,
       list(DISTINCT dp_rank ORDER BY dp_rank) FILTER (WHERE dp_rank IS NOT NULL) AS dp_ranks, count(ts) AS timed
FROM metrics HAVING count(*) > 0""",
    "shown_records": """
WITH r AS (
    SELECT event_id, ts, zoned, printed_time, coalesce(role, 'unknown') AS role, message,
           -- a log record (a time or a level read): a reporter's sentence ("the bootstrap server is never
           -- started", batch16/03) is no record of a start
           ts IS NOT NULL OR printed_time IS NOT NULL OR level IS NOT NULL AS logged
    FROM events
    WHERE trim(coalesce(message, '')) <> '' AND NOT starts_with(ltrim(message), '#')  -- a '#' note line is no record
)
SELECT 'ready' AS what, * EXCLUDE (logged) FROM (
    SELECT * FROM r WHERE logged AND regexp_matches(message, '(?i)\\bready\\b') ORDER BY event_id DESC LIMIT 1)
UNION ALL BY NAME SELECT 'start' AS what, * EXCLUDE (logged) FROM (
    -- weight loading is start-up too (batch22/13: TP24-TP31's "Load weight begin/end" on one node of four)
    SELECT * FROM r WHERE logged AND regexp_matches(message, '(?i)\\b(?:start(?:ed|ing)?|listening|serving|load weight (?:begin|end))\\b')
    ORDER BY event_id DESC LIMIT 1)
UNION ALL BY NAME SELECT 'last' AS what, * EXCLUDE (logged) FROM (SELECT * FROM r ORDER BY event_id DESC LIMIT 1)""",
    # the start-up step the input ends inside: SGLang's last `<Step> begin.` of an input (model_runner.py,
    # cuda_graph_runner.py: Init torch distributed, Load weight, Capture cuda graph; text may follow the
    # period) whose input prints no `<Step> end`/`ends` and, after it, nothing of a later stage (another step,
    # a batch, an HTTP answer, the server's start-up words): batch23/08's capture begun at 20:05:22, six ranks
    # registering their graph addresses, then the paste ends; never batch16/04's, whose version printed no
    # capture end but went on to max_total_num_tokens and "Application startup complete"
    "shown_open_step": r"""
WITH b AS (
    SELECT e.event_id, e.source, e.ts, e.zoned, e.printed_time, coalesce(e.role, 'unknown') AS role,
           regexp_extract(e.message, '^\[[^\]\n]+\] ([A-Z][A-Za-z ]*?) begin\.', 1) AS step,
           concat_ws(' ', 'DP' || e.dp_rank, 'PP' || e.pp_rank, 'TP' || e.tp_rank, 'EP' || e.ep_rank) AS rank_label
    FROM events e
    WHERE e.message LIKE '% begin.%' AND regexp_matches(e.message, '^\[[^\]\n]+\] [A-Z][A-Za-z ]*? begin\.')
),
last_step AS (SELECT source, arg_max(step, event_id) AS step, max(event_id) AS last_begin FROM b GROUP BY source)
SELECT l.step, any_value(b.role) AS role, min(b.ts) AS first_ts, max(b.ts) AS last_ts,
       min(b.printed_time) AS printed_time, bool_and(b.zoned IS DISTINCT FROM false) FILTER (WHERE b.ts IS NOT NULL) AS zoned,
       list_sort(list_distinct(list(b.rank_label) FILTER (WHERE b.rank_label <> ''))) AS ranks
FROM last_step l JOIN b ON b.source = l.source AND b.step = l.step
WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.source = l.source
                    AND regexp_matches(e.message, '^\[[^\]\n]+\] ' || l.step || ' ends?\b'))
  AND NOT EXISTS (SELECT 1 FROM events e WHERE e.source = l.source AND e.event_id > l.last_begin
                    AND (e.kind IN ('batch', 'request', 'health', 'traceback')
                         OR regexp_matches(e.message, '(?i)\bready\b|startup complete|fired up|max_total_num_tokens=|Uvicorn running|Started server process|^\[[^\]\n]+\] [A-Z][A-Za-z ]*? (?:begin|end|ends)\b')))
GROUP BY l.source, l.step, l.last_begin ORDER BY l.last_begin DESC LIMIT 1""",
    # each py-spy or faulthandler dump: its process as read, its time, and where each named thread is
    # (batch19/10: five threads of a vLLM engine, all idle, no process header)
    "shown_dumps": """
SELECT c.capture_id, min(c.capture_seq) AS seq, any_value(c.pid) AS pid, any_value(c.process_name) AS process_name,
       any_value(coalesce(c.role, 'unknown')) AS role, min(c.capture_ts) AS ts,
       bool_and(e.zoned IS DISTINCT FROM false) FILTER (WHERE e.ts IS NOT NULL) AS zoned,
       min(e.printed_time) AS printed_time,
       count(*) FILTER (WHERE c.thread_id IS NOT NULL) AS threads,
       count(*) FILTER (WHERE c.thread_id IS NOT NULL AND c.thread_state = 'idle') AS idle,
       count(*) FILTER (WHERE c.thread_id IS NULL) AS headless,
       list(coalesce(c.thread_name, 'thread ' || c.thread_id) || coalesce(' (' || nullif(c.thread_state, 'idle') || ')', '')
            || ' in ' || coalesce(c.innermost, 'no frame')
            ORDER BY c.thread_state = 'idle', c.thread_id) FILTER (WHERE c.thread_id IS NOT NULL) AS places
FROM captures c LEFT JOIN events e ON e.source = c.source AND e.source_pos = c.source_pos
GROUP BY c.capture_id ORDER BY min(c.source), seq""",
    # bench_serving's result table pasted as text (sglang#2805, batch26/11: the table and the commands, no server
    # log): its headline figures as printed, from the first table of an input (its lines are text records)
    "shown_bench": r"""
WITH t AS (SELECT source, min(event_id) AS at FROM events
           WHERE regexp_matches(message, '^=+ Serving Benchmark Result =+\s*$') GROUP BY source),
r AS (SELECT e.event_id, trim(regexp_extract(e.message, '^([^:\n]+):', 1)) AS key,
             regexp_extract(e.message, ':\s+(\S+)\s*$', 1) AS value
      FROM events e JOIN t ON e.source = t.source AND e.event_id > t.at
      WHERE regexp_matches(e.message, '^(?:Successful requests|Failed requests|Benchmark duration \(s\)'
                                      || '|Request throughput \(req/s\)|Mean E2E Latency \(ms\)|Mean TTFT \(ms\)):\s+\S+\s*$'))
SELECT key, arg_min(value, event_id) AS value FROM r GROUP BY key ORDER BY min(event_id) LIMIT 6""",
    # the processes the log records name (a host and a pid as read), the most records first (batch21/07:
    # NCCL's `host:pid:tid` lines of two hosts)
    "shown_processes": """
SELECT host, pid, count(*) AS n FROM events
WHERE pid IS NOT NULL AND (ts IS NOT NULL OR printed_time IS NOT NULL OR level IS NOT NULL OR kind IS DISTINCT FROM 'other')
GROUP BY ALL ORDER BY min(event_id)""",
    # the records per role that are log records (a time, a level or a kind read), and the lines that are
    # none (prose, fences, '#' notes: batch16/04's three lines of prose are no "engine records")
    "shown_roles": """
SELECT coalesce(role, 'unknown') AS role,
       count(*) FILTER (WHERE ts IS NOT NULL OR printed_time IS NOT NULL OR level IS NOT NULL
                              OR kind IS DISTINCT FROM 'other') AS n,
       count(*) FILTER (WHERE NOT (ts IS NOT NULL OR printed_time IS NOT NULL OR level IS NOT NULL
                                   OR kind IS DISTINCT FROM 'other')) AS text_n
FROM events GROUP BY 1 ORDER BY n DESC, role""",
}


# The views several of gather's queries read (findings, incident_chain, known_issues, desync …), each
# computed once (``saved.hold``): a small OUT's gather 1.15 -> 0.90 CPU s.
HELD = ("wedge", "stuck_ranks", "desync", "known_issue_evidence")


def gather(out: Path) -> dict[str, pl.DataFrame]:
    """Run every query the report uses on OUT; ``{name: rows}``.

    Raises:
        FileNotFoundError: OUT does not exist.
        ReportError: a saved query fails on OUT's tables (names the query and DuckDB's message).
    """
    saved = saved_mod.load_saved()
    named = (
        "incident_chain", "wedge", "abort_to_assert", "last_batch_per_rank", "desync", "coverage", "unit_lifecycle",
        "markup_leaks", "markup_leak_rate",
    )  # fmt: skip
    optional = (
        ("known_issues", "known_issues"),
        ("config", "SELECT * FROM config ORDER BY first_ts"),
        ("evidence", "SELECT * FROM known_issue_evidence"),  # held: read, not computed again
        ("collected", collected.SQL),  # an OUT written before the probes table has none
        ("read_once", READ_ONCE_SQL),
        ("captured", "SELECT count(*) AS threads, count(DISTINCT capture_id) AS dumps FROM captures"),
        ("sglang_read", SGLANG_READ_SQL),
        *SHOWN_SQL.items(),
    )
    runs = [*named, *(sql for _, sql in optional), "findings", "impact"]
    con = saved_mod.connect(out, saved, only=saved_mod.views_for(runs, saved))  # views bound: only these
    held = saved_mod.hold(con, list(HELD))  # no parameter is set here: the rows are the views'
    results = {}
    for name in named:
        try:
            text = f"SELECT * FROM {name}" if name in held else name  # held: read, not computed again
            results[name] = saved_mod.query(out, text, saved=saved, con=con)
        except QueryError as e:
            raise ReportError(f"report: {e}") from e
    for name, sql in optional:
        try:  # an OUT written before the config table has none: the sections say so
            results[name] = saved_mod.query(out, sql, saved=saved, con=con)
        except QueryError:
            results[name] = pl.DataFrame()
    try:
        results["findings"] = findings_mod.findings(
            out, saved=saved, con=con, chain=results["incident_chain"]
        )
        results["impact"] = findings_mod.impact(out, results["findings"], saved=saved, con=con)
    except QueryError as e:
        raise ReportError(f"report: {e}") from e
    if zone_known(results["coverage"]):  # data mixing zoned and zoneless records: which times are which
        results["zoneless"] = saved_mod.query(out, ZONELESS_SQL, saved=saved, con=con)
    evidence = results.pop("evidence")  # read once: the F19 rows and the roles of each family's rows
    results["f19"] = evidence.filter(pl.col("family") == "F19") if evidence.height else evidence
    roles = findings_mod.families_by_role(evidence)
    results["family_roles"] = pl.DataFrame(
        {"family": list(roles), "roles": [sorted(v) for v in roles.values()]},
        schema={"family": pl.String, "roles": pl.List(pl.String)},
    )
    return results


def summary_lines(results: dict[str, pl.DataFrame]) -> list[str]:
    """The summary that leads the report (``findings.summary``): at most six Markdown lines from the
    rows of ``gather``. The timeline's header shows the same lines."""
    found = results["findings"]
    main = findings_mod.main_finding(found)
    running = None
    if main is not None and main["kind"] in ("wedge", "stop"):
        w = results["wedge"].filter((pl.col("role") == main["role"]) & (pl.col("stopped_ts") == main["ts"]))
        running = w["running_req_at_stop"][0] if w.height else None
    batches = _batches_read(results["coverage"])
    return findings_mod.summary(
        found, results["known_issues"], results["impact"], running=running, roles=_family_roles(results),
        batches=batches, sglang_read=bool(results["sglang_read"]["n"][0]) if results["sglang_read"].height else True,
        shown={name: results[name] for name in SHOWN_SQL if name in results},
    )  # fmt: skip


def _family_roles(results: dict[str, pl.DataFrame]) -> dict[str, set[str]]:
    """``{family: roles of its evidence rows}`` from ``gather``'s ``family_roles``."""
    return {r["family"]: set(r["roles"]) for r in results["family_roles"].iter_rows(named=True)}


def _findings_section(found: pl.DataFrame) -> list[str]:
    """The findings in causal order, one line each: step, time, kind, the finding, how many evidence
    records it cites (their event ids are in ``--format json`` and the ``findings`` query)."""
    if not found.height:
        return [
            "No finding: no record logcorr read carries an error level or a crash, exception, watchdog or failure"
            " marker, and no stop, divergence or restart was found."
        ]
    lines = []
    for r in found.iter_rows(named=True):
        ev = r["evidence"] or []  # the ids themselves: --format json, `logcorr query findings`
        cite = f" ({len(ev)} evidence record(s))" if ev else ""
        zone = r.get("zoned") is not False  # false: its records print no zone (times as printed)
        when = _t(r["ts"], date=False, zone=zone) if r["ts"] is not None else "no time read"
        if r["ts"] is None and r.get("printed_time"):  # a time printed without a year or date, as printed
            when = f"{md(r['printed_time'])} as printed"
        lines.append(f"{r['step']}. {when} **{r['kind']}**: {md(r['summary'], width=400)}{cite}")
    return lines


def _gaps(results: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """The stops ``finding_stop`` judged gaps in the data (kind ``no_data``): role, stopped_ts, summary."""
    found = results.get("findings")
    if found is None or not found.height:
        return pl.DataFrame(
            schema={"role": pl.String, "stopped_ts": pl.Datetime("us", "UTC"), "summary": pl.String}
        )
    gaps = found.filter(pl.col("kind") == "no_data")
    return gaps.select("role", pl.col("ts").alias("stopped_ts"), "summary")


def _stops_of(wedge: pl.DataFrame) -> pl.DataFrame:
    return wedge.filter(pl.col("verdict").str.contains("^(?:wedged|stalled)"))


def verdict(results: dict[str, pl.DataFrame]) -> list[str]:
    """The verdict, one finding per item (Markdown text without the list bullet), from the rows of
    ``gather``: what the batch lines say of each engine, units systemd saw crash, the stop, the
    desync, the trigger and the abort burst. The report and the timeline both show these."""
    r = results
    gaps = _gaps(r)
    stops = _stops_of(r["wedge"]).join(gaps, on=["role", "stopped_ts"], how="anti")
    lines = _wedge_verdict(_stops_of(r["wedge"]), r["coverage"], r["last_batch_per_rank"]) + _unit_verdict(
        r["unit_lifecycle"]
    )
    lines += [f"**No data** (not a stop): {md(g)}." for g in gaps["summary"]]
    lines += _stop_lines(stops) + _desync_lines(r["desync"]) + _trigger_lines(r["abort_to_assert"])
    for b in r["incident_chain"].filter(pl.col("step") == "abort_burst").iter_rows(named=True):
        lines.append(f"**Abort burst** from {_t(b['ts'])} to {_t(b['end_ts'], date=False)}: {b['detail']}.")
    return lines


def report(out: Path) -> str:
    """The postmortem summary of the incident in OUT, as Markdown.

    Args:
        out: an ingest output folder.

    Returns:
        Markdown text: verdict, chain with times and ranks, aborts before each assertion, last batch
        per rank, where each rank waits, evidence lines (``source:position`` and message), and what
        the data cannot say. Times in UTC, or as printed when no record prints its zone.

    Raises:
        FileNotFoundError: OUT does not exist. ReportError: a saved query fails on OUT's tables.
    """
    r = gather(Path(out))
    with drawn(r):
        return markdown(Path(out), r)


def markdown(out: Path, r: dict[str, pl.DataFrame]) -> str:
    """The Markdown report of OUT from the rows ``r`` that ``gather`` returned (inside ``drawn(r)``:
    its times are worded in the data's clock), as ``report`` returns it."""
    chain, a2a, stuck, cov = r["incident_chain"], r["abort_to_assert"], r["desync"], r["coverage"]
    lines = _head(Path(out), cov, r.get("read_once")) + [f"- {line}" for line in summary_lines(r)]
    lines += ["", "## Findings (causal order; `logcorr query findings -d OUT`)", ""] + _findings_section(
        r["findings"]
    )
    lines += ["", "## Verdict", ""] + [f"- {line}" for line in verdict(r)]
    ranked = findings_mod.ranked_families(
        findings_mod.main_finding(r["findings"]), r["known_issues"], _family_roles(r)
    )  # the summary's order, the likely family first
    lines += known_issues.report_sections(ranked, r["config"])
    lines += ["", "## Chain of events (incident_chain)", ""] + _chain(_chain_in_order(chain, _gaps(r)))
    lines += ["", "## Aborts before each transfer_infos assertion (abort_to_assert)", ""] + _aborts(a2a)
    lines += ["", "## Where each engine stopped (wedge, last_batch_per_rank)", ""]
    lines += _stops(r["wedge"], r["last_batch_per_rank"], _batches_read(r["coverage"]))
    lines += ["", "## Where each rank waits (desync: one round of py-spy captures per engine)", ""]
    lines += _waits(stuck, r.get("captured"))
    if r["collected"].height:
        lines += ["", "## What was asked and taken before the restart (collected)", ""] + _collected(
            r["collected"]
        )
    if r["unit_lifecycle"].height:
        lines += ["", "## What systemd said about each unit (unit_lifecycle)", ""] + _units(
            r["unit_lifecycle"]
        )
    if r["markup_leaks"].height:
        lines += ["", "## Answers with tool-call markup (markup_leaks, markup_leak_rate)", ""]
        lines += _markup(r["markup_leaks"], r["markup_leak_rate"], r["config"], r["known_issues"], r["f19"])
    lines += ["", "## Evidence", ""] + _evidence(chain, a2a)
    lines += ["", "## What the data cannot say (coverage)", ""]
    lines += _missing(cov, _stops_of(r["wedge"]), stuck, a2a, r.get("captured"))
    return "\n".join(lines) + "\n"


SCHEMA = Path(__file__).with_name("report.schema.json")


def report_data(out: Path) -> dict:
    """The report as data, for ``logcorr report --format json``: the summary lines, the main finding,
    every finding in causal order, the impact rows and the matched known families. Keys and types are
    fixed by ``report.schema.json`` (``SCHEMA``); times are ISO 8601 UTC (``…Z``), µs.

    Raises:
        FileNotFoundError: OUT does not exist. ReportError: a saved query fails on OUT's tables.
    """
    r = gather(Path(out))
    cov, found = r["coverage"], r["findings"]
    main = findings_mod.main_finding(found)
    steps = findings_mod.rows_as_dicts(found)
    known = findings_mod.ranked_families(main, r["known_issues"], _family_roles(r))  # the summary's order
    families = [
        {
            "family": m["family"], "title": m["title"], "strength": m["strength"],
            "workaround": m["workaround"] or "", "links": [x.strip() for x in (m["links"] or "").split(",") if x.strip()],
        }
        for m in (known.iter_rows(named=True) if known.height else [])
    ]  # fmt: skip
    return {
        "logcorr_version": logcorr.__version__,
        "data": {"out": str(out), **data_clocks(cov)},
        "summary": summary_lines(r),
        "main": next((s for s in steps if main is not None and s["step"] == main["step"]), None),
        "findings": steps,
        "impact": [findings_mod.as_json(row) for row in r["impact"].iter_rows(named=True)],
        "known_issues": families,
    }


# Inputs whose records were skipped as copies of an earlier input's (inputs.paths.SeenEntries' notes).
READ_ONCE_SQL = """
SELECT source, trim(note) AS note FROM sources, unnest(string_split(notes, chr(10))) AS n(note)
WHERE note LIKE '%already read from%' OR note LIKE '%(counted once)%' ORDER BY source
"""


def _head(out: Path, cov: pl.DataFrame, read_once: pl.DataFrame | None = None) -> list[str]:
    """The title, the data's folder and span (per clock: ``_span``), what was skipped as a copy of
    another input (``READ_ONCE_SQL``: every figure counts those records once), and the summary's heading."""
    once = [
        f"Read once: {md(r['source'])}: {md(r['note'])}; every figure below counts them once."
        for r in (read_once.iter_rows(named=True) if read_once is not None and read_once.height else [])
    ]
    return [
        "# Incident report",
        "",
        f"Data: {md(str(out), code=True)}{data_span(cov)}. Written by logcorr {logcorr.__version__}. Every statement below is a"
        " row of a saved query; `logcorr query NAME -d OUT` shows the full rows.",
        "",
        *[line for o in once for line in (o, "")],
        "## Summary",
        "",
    ]


def data_span(cov: pl.DataFrame) -> str:
    """The data's span from coverage's clock rows: in UTC when every time has a known zone; as printed,
    "zone not printed", when none has; both spans, and no order between them, when some have; and
    the offset of two stamps that one record carries, when any does. Empty without a timed record."""
    clocks = cov.filter(pl.col("scope") == "clock") if "clock" in cov.columns else cov.clear()
    if clocks.height == 0:
        span = (
            [t for t in (cov["first_ts"].min(), cov["last_ts"].max()) if t is not None] if cov.height else []
        )
        return f", {_t(span[0])} to {_t(span[1])}" if len(span) == 2 else ""
    utc, loose = (clocks.filter(pl.col("clock") == c) for c in ("UTC", "zone not printed"))
    n_loose = int(loose["events"].sum()) if loose.height else 0
    text = ""
    if utc.height:
        text = f", {_t(utc['first_ts'].min(), zone=True)} to {_t(utc['last_ts'].max(), zone=True)}"
    if loose.height:
        lo, hi = loose["first_ts"].min(), loose["last_ts"].max()
        printed = f"{_t(lo, zone=False)} to {_t(hi, zone=False)} as printed (zone not printed)"
        if not utc.height:
            text = f", {printed}"
        else:
            text += (
                f" for the {int(utc['events'].sum()):,} record(s) whose time has a known zone; {n_loose:,} more"
                f" carry only a time printed without a zone, {printed}: the two cannot be put in one order,"
                " so which came first and how far apart is not stated"
            )
    for row in loose.filter(pl.col("offset_s").is_not_null()).iter_rows(named=True):  # times as printed
        text += f"; in {md(row['source'])}, {offset_words(row['offset_s'])}"
    if "zone_offset_s" in loose.columns:  # neighbours of the two clocks a zone's step apart (clocks.py)
        for row in loose.filter(pl.col("zone_offset_s").is_not_null()).iter_rows(named=True):
            step = row["zone_offset_s"]
            sign = "+" if step > 0 else "−"
            text += (
                f"; in {md(row['source'])}, records of the two clocks printed next to each other differ by"
                f" {hours(step)}, a time zone's step: the time printed without a zone reads as UTC{sign}"
                f"{int(abs(step)) // 3600:02d}:{int(abs(step)) % 3600 // 60:02d} there (its times are kept as printed)"
            )
    return text


def data_clocks(cov: pl.DataFrame) -> dict:
    """The data's span per clock for ``--format json``: ``first_ts``/``last_ts`` (ISO 8601 UTC ``Z``)
    over the records whose time has a known zone, ``zoneless_first_ts``/``zoneless_last_ts`` (ISO 8601
    without a zone: as printed) over those printed without one; a clock the data lacks is ``None``."""
    fmt = saved_mod.format_value
    clocks = cov.filter(pl.col("scope") == "clock") if "clock" in cov.columns else cov.clear()
    if not clocks.height:  # no clock rows: the coverage of an older OUT, all zoned
        clocks = cov.with_columns(pl.lit("UTC").alias("clock")) if cov.height else cov
    out = {}
    for clock, key in (("UTC", ""), ("zone not printed", "zoneless_")):
        rows = clocks.filter(pl.col("clock") == clock) if clocks.height else clocks
        lo, hi = (rows["first_ts"].min(), rows["last_ts"].max()) if rows.height else (None, None)
        if key:
            lo, hi = (t.replace(tzinfo=None) if t is not None else None for t in (lo, hi))
        out[f"{key}first_ts"], out[f"{key}last_ts"] = fmt(lo), fmt(hi)
    return out


def _chain_in_order(chain: pl.DataFrame, gaps: pl.DataFrame) -> pl.DataFrame:
    """The chain's rows by time (a row without one last), numbered 1, 2, … in that order; the
    last_batch and health steps of a stop that is only a gap in the data say so instead."""
    if not chain.height:
        return chain
    chain = chain.sort(["ts", "step_no"], nulls_last=True).with_columns(
        pl.int_range(1, pl.len() + 1).cast(chain.schema["step_no"]).alias("step_no")
    )
    for g in gaps.iter_rows(named=True):
        hit = (
            pl.col("step").is_in(["last_batch", "health"])
            & (pl.col("role") == g["role"])
            & (pl.col("ts") >= g["stopped_ts"])
        )
        chain = chain.with_columns(
            pl.when(hit).then(pl.lit(g["summary"])).otherwise(pl.col("detail")).alias("detail")
        )
    return chain


def _chain(chain: pl.DataFrame) -> list[str]:
    """The incident_chain rows as a table, or why there are none."""
    if not chain.height:
        return [
            "No step of the chain has a row in this data (no abort burst with a room, no transfer_infos assertion,"
            # the stuck_stacks step needs a round of captures desync places in an engine; a capture it
            # cannot place is still a capture read (batch20/12: "no py-spy capture" beside one was false)
            " no stop in batch lines, no stuck stacks in a round of py-spy captures of an engine): see what the data"
            " cannot say below."
        ]
    return _table(
        chain,
        {
            "step_no": "#",
            "step": "step",
            "ts": time_label("time"),
            "role": "role",
            "ranks": "ranks",
            "detail": "what",
        },
        {"ts": lambda v: _t(v, date=False)},
    )


def _no_desync(captured: pl.DataFrame | None) -> str:
    """Why ``desync`` has no row: no dump was read, or the dumps read place no rank's main thread."""
    threads, dumps = captured.row(0) if captured is not None and captured.height else (0, 0)
    if not threads:
        return "No py-spy or faulthandler dump was read"
    return (
        f"The {dumps} dump(s) read ({threads} thread(s) in captures) hold no main thread of a process"
        " logcorr could place in an engine's round"
    )


def _waits(stuck: pl.DataFrame, captured: pl.DataFrame | None = None) -> list[str]:
    """Per engine (and PP stage) the desync verdict of its round of captures, then each rank's wait."""
    if not stuck.height:
        return [f"{_no_desync(captured)}: where each rank waited cannot be said."]
    lines = []
    for row in stuck.unique(["role", "pp_rank"], keep="first", maintain_order=True).iter_rows(named=True):
        pp = f" PP{row['pp_rank']}" if row["pp_rank"] is not None else ""
        role = md(row["role"]) or "unknown role"
        lines.append(f"- {role}{pp}: **{md(row['verdict'])}**: {md(row['groups'])} ({_round(row)})")
    lines.append("")
    return lines + _table(
        stuck,
        {
            "role": "role",
            "rank_label": "rank",
            "capture_ts": time_label("captured"),
            "wait_class": "waits in",
            "backend": "backend",
            "event_loop": "event loop",
            "wait_label": "group",
            "no_progress": "no progress",
        },
    )


def _collected(steps: pl.DataFrame) -> list[str]:
    """Per host: the health endpoints' answers side by side ("/health 200 in 3 ms while
    /health_generate timed out after 5 s"), then each collected step (py-spy rounds first) in words,
    with the fix of what failed."""
    lines = []
    for (host_name,), rows in steps.group_by("host", maintain_order=True):
        health = rows.filter(pl.col("step") == "endpoint").filter(
            pl.col("target").str.contains(r"/health(?:_generate)?$")
        )
        said = [md(r["said"]) for r in health.iter_rows(named=True)]
        host = md(host_name) or "unknown host"
        if said:
            lines.append(f"- {host}: {' while '.join(said)}")
        for r in rows.iter_rows(named=True):
            fix = f" (fix: {md(r['fix'])})" if r["fix"] else ""
            at = _t(r["first_ts"], date=False)
            lines.append(f"- {host} at {at}: {md(r['said'])}{fix}")
    return lines


def _units(units: pl.DataFrame) -> list[str]:
    """The unit_lifecycle rows as a table."""
    return _table(
        units,
        {
            "unit": "unit",
            "role": "role",
            "starts": "starts",
            "stops": "stops",
            "exits": "exits",
            "crashes": "crashes",
            "restarts_scheduled": "restarts scheduled",
            "max_restart_counter": "restart counter",
            "last_exit_ts": time_label("last exit"),
            "last_exit": "how",
        },
    )


PARSER_SETTINGS = ("tool_call_parser", "reasoning_parser", "chat_template")


def _markup(
    leaks: pl.DataFrame, rate: pl.DataFrame, config: pl.DataFrame, matches: pl.DataFrame, f19: pl.DataFrame
) -> list[str]:
    """Markdown lines of the "Answers with tool-call markup" section: counts, the rate per band of
    running requests, first and last, the engines' parser settings as ``config`` knows them, and the
    known issue F19 (matched, or ruled out by the configuration), each from a row."""
    out = []
    for (host, role), g in leaks.group_by("host", "role", maintain_order=True):
        band = rate.filter(pl.col("host").eq_missing(host) & pl.col("role").eq_missing(role))
        with_text, finished = int(band["with_text"].sum()), int(band["finished"].sum())
        fams = ", ".join(
            f"{md(f)} ({n})" for f, n in g.group_by("markup_leak").len().sort("markup_leak").iter_rows()
        )
        out.append(
            f"- {md(role)}{f' on {md(host)}' if host else ''}: **{g.height} of {with_text} answers** whose text the request log holds came back"
            f" with tool-call markup as plain text ({finished} `Finish` lines in all); first {_t(g['ts'].min())},"
            f" last {_t(g['ts'].max())}; markup {fams}."
        )
        quiet = band.filter((pl.col("with_text") > 0) & (pl.col("leaks") == 0))["band"].to_list()
        if quiet:
            out.append(f"  None with {md(' or '.join(quiet))} requests running.")
        out.append(f"  Parser configuration: {_parsers(config, host, role)}.")
    known = matches.filter(pl.col("family") == "F19") if matches.height else matches
    if known.height:
        m = known.row(0, named=True)
        out.append(
            f"- Known issue **F19: {m['title']}** ({m['strength']}): {m['workaround']} Links: {m['links']}."
        )
    elif f19.height:
        verdicts = sorted(set(f19["config_verdict"]))
        values = "; ".join(sorted({v for v in f19["config_values"].to_list() if v}))
        out.append(
            "- Known issue F19 (DeepSeek tool-call markup returned as content: sglang#17593, #35736, #40236):"
            f" configuration {', '.join(verdicts)}"
            + (f" ({values})" if values else "")
            + ": it needs a DeepSeek model or a deepseek* --tool-call-parser."
        )
    out.append("")
    out += _table(
        rate,
        {"role": "engine", "band": "running requests", "finished": "answers", "with_text": "with text",
         "leaks": "with markup", "leak_rate": "rate"},
        {"leak_rate": lambda v: "" if v is None else f"{v:.3f}"},
    )  # fmt: skip
    out.append("")
    shown = leaks.head(20)
    out += _table(
        shown,
        {"ts": time_label("time"), "role": "engine", "rid": "rid", "markup": "markup", "running_req": "running",
         "event_id": "event_id"},
    )  # fmt: skip
    if leaks.height > shown.height:
        out.append(f"\n({leaks.height - shown.height} more: `logcorr query markup_leaks -d OUT`.)")
    return out


def _parsers(config: pl.DataFrame, host: str | None, role: str) -> str:
    """The engine's tool-call/reasoning parser and chat template as its ``config`` rows state them."""
    if config.height == 0:
        return "cannot tell: logcorr read no server_args line or launch command"
    rows = config.filter(
        (pl.col("role") == role) & (pl.col("host").is_null() | pl.col("host").eq_missing(host))
    )
    if rows.height == 0:
        return f"cannot tell: logcorr read no server_args line or launch command of the {role} engine"
    parts = []
    for r in rows.iter_rows(named=True):
        try:
            settings = json.loads(r["settings"] or "{}")
        except ValueError:
            settings = {}
        named = [f"{k}={settings[k]}" for k in PARSER_SETTINGS if k in settings]  # None: set to none
        unnamed = [k for k in PARSER_SETTINGS if k not in settings]
        text = ", ".join(named)
        if unnamed:
            text += ("; " if text else "") + f"{', '.join(unnamed)} not named ({r['origin']})"
        pid = f"pid {r['pid']}" if r["pid"] is not None else "no pid read"
        parts.append(f"{pid}: {md(text)}; model {md(r['model_path']) or 'not read'}")
    return "; ".join(parts)


def _stop_lines(stops: pl.DataFrame) -> list[str]:
    """One line per stop (wedge row): its ranks, how long, the other role, /health, the restart."""
    lines: list[str] = []
    for s in stops.iter_rows(named=True):
        other = (
            f"{s['other_role']} went on ({s['other_role_batches']} batch lines across its ranks, until {_t(s['other_role_last_ts'], date=False)})"
            if s["other_role_continued"]
            else f"{s['other_role']} did not advance either"
        )
        health = (
            f"/health answered 200 {s['health_200']} times and never otherwise"
            if s["health_kept_200"]
            else f"/health: {s['health_checks']} checks, {s['health_200']} answered 200, {s['health_not_200']} otherwise"
            if s["health_checks"]
            else "no /health request was logged meanwhile"
        )
        restart = (
            f"the restart came at {_t(s['restart_ts'])} ({_s(s['until_restart_s'])} after the stop)"
            if s["restart_ts"] is not None
            else "no restart was read"
        )
        resumed = (
            f", batches again at {_t(s['resumed_ts'], date=False)}"
            if s["resumed_ts"] is not None
            else ", no batch after it"
        )
        if s["ready_ts"] is not None:
            resumed = (
                f', ready again ("fired up and ready to roll") at {_t(s["ready_ts"], date=False)}' + resumed
            )
        lines.append(
            f"**{s['role'].capitalize()} {s['verdict'].split(':')[0]}** at {_t(s['first_rank_stopped_ts'])}: "
            f"no batch after it on any of its {s['ranks_stopped']} ranks ({', '.join(s['rank_labels'] or []) or '?'}; the last of "
            f"them at {_t(s['stopped_ts'], date=False)}, "
            f"{s['running_req_at_stop'] or 0} requests running) for {_s(s['stalled_s'])}; {other}; {health}; "
            f"{restart}{resumed}."
        )
    return lines


def _desync_lines(stuck: pl.DataFrame) -> list[str]:
    """Per engine, its ranks' desync verdict (divergent, lockstep, or cannot tell)."""
    lines: list[str] = []
    for (role_or_none,), grp in stuck.group_by("role", maintain_order=True):
        role = md(role_or_none) or "unknown role (dumps whose process logged nothing else here)"
        verdicts = sorted(set(grp["verdict"].drop_nulls()))
        groups = md(" / ".join(sorted(set(grp["groups"].drop_nulls()))))
        when = _round(grp.row(0, named=True))
        if "divergent" in verdicts:
            lines.append(f"**TP desync in {role}**: its ranks wait in different places: {groups} ({when}).")
        elif verdicts == ["lockstep"]:
            lines.append(f"{role[0].upper() + role[1:]} ranks are in lockstep: {groups} ({when}).")
        else:  # "cannot tell: one rank captured" / "no rank captured" (lockstep needs two ranks)
            why = "; ".join(v.removeprefix("cannot tell: ") for v in verdicts if v != "lockstep")
            lines.append(
                f"{role[0].upper() + role[1:]}: lockstep or desync cannot be told: {why} ({groups}; {when})."
            )
    return lines


def _trigger_lines(a2a: pl.DataFrame) -> list[str]:
    """The transfer_infos assertion per room with the aborts before it, or why none can be named."""
    lines: list[str] = []
    asserted = a2a.filter(pl.col("asserted"))
    if asserted.height:
        for (room, role), grp in asserted.group_by("bootstrap_room", "assert_role", maintain_order=True):
            first = grp.row(0, named=True)
            ranks = ", ".join(f"TP{x}" for x in first["assert_tp_ranks"] or [])
            before = grp.filter(pl.col("delta_ms") >= 0)
            if before.height:
                closest = before.sort("delta_ms").row(0, named=True)
                cause = (
                    f"{before.height} abort record(s) of this room came first, the last one "
                    f"{closest['delta_ms']:.1f} ms before ({closest['abort_kind']} on {closest['abort_role']}"
                    + (f" TP{closest['abort_tp_rank']}" if closest["abort_tp_rank"] is not None else "")
                    + ")"
                )
            else:
                cause = "no abort of this room came before it"
            lines.append(
                f"**Trigger**: room {room}: `assert room in self.transfer_infos` on {role} {ranks} at "
                f"{_t(first['assert_first_ts'])}; {cause}."
            )
    elif a2a.height:
        lines.append(
            "No transfer_infos assertion was read; "
            f"{a2a['bootstrap_room'].n_unique()} room(s) were aborted (see below): the trigger cannot be named."
        )
    else:
        lines.append("No transfer_infos assertion and no abort naming a room was read.")
    return lines


def _wedge_verdict(stops: pl.DataFrame, cov: pl.DataFrame, lbr: pl.DataFrame) -> list[str]:
    """What the batch lines say about a stop, per engine role that did not stop: only as far as its
    batch lines go; a role without them is "cannot tell"."""
    roles = cov.filter((pl.col("scope") == "role") & pl.col("role").is_in(["prefill", "decode", "engine"]))
    stopped = set(stops["role"]) if stops.height else set()
    lines = []
    for row in roles.iter_rows(named=True):
        role = row["role"]
        if role in stopped:
            continue
        name = "the engine (a server that is not half of a PD pair)" if role == "engine" else role
        label = name[0].upper() + name[1:]
        if row["batches"]:
            last = lbr.filter(pl.col("role") == role)["last_batch_ts"].max() if lbr.height else None
            lines.append(
                f"{label}: its {row['batches']:,} batch line(s) show no stop longer than the wedge query's gap"
                f" (min_gap_s); whether it advanced after its last one ({_t(last)}) the data cannot tell."
            )
        elif row["events"]:
            lines.append(f"{label}: cannot tell whether it wedged: no batch line of {role} was read.")
    if not lines and not stopped:
        lines.append("Cannot tell whether an engine wedged: no batch line of any engine was read.")
    return lines


def _unit_verdict(units: pl.DataFrame) -> list[str]:
    """A unit systemd saw crash or restart, from its lifecycle rows."""
    lines = []
    for u in units.filter((pl.col("crashes") > 0) | (pl.col("restarts_scheduled") > 0)).iter_rows(named=True):
        how = (
            f"its main process exited ({md(u['last_exit'])}) at {_t(u['last_exit_ts'])}"
            if u["last_exit"]
            else "it failed"
        )
        again = (
            f"; systemd restarted it {u['restarts_scheduled']} time(s) (restart counter {u['max_restart_counter']})"
            if u["restarts_scheduled"]
            else ""
        )
        role = f" ({u['role']})" if u["role"] not in (None, "unknown") else ""  # an unknown role is not said
        lines.append(f"**{md(u['unit'])}**{role}: {how}, {u['crashes']} crash(es) in all{again}.")
    return lines


def _round(row: dict) -> str:
    """Which round of py-spy captures a desync verdict rests on, in words."""
    if row.get("round_ts") is None:
        return "py-spy captures without a capture time: whether they were taken together cannot be told"
    when = _t(row["round_ts"])
    if row.get("round_end_ts") is not None and row["round_end_ts"] != row["round_ts"]:
        when += f" to {_t(row['round_end_ts'], date=False)}"
    others = (row.get("rounds") or 1) - 1
    rounds = f"; {others} other round(s) in the data not compared" if others > 0 else ""
    return f"py-spy round of {when}, {row.get('round_basis') or '?'}{rounds}"


def _aborts(a2a: pl.DataFrame) -> list[str]:
    if a2a.height == 0:
        return ["No assertion and no abort with a bootstrap room: nothing to pair."]
    lines = []
    if not a2a["asserted"].any():
        lines += ["No transfer_infos assertion was read; the aborts of each room are listed instead.", ""]
    return lines + _table(
        a2a,
        {
            "bootstrap_room": "room",
            "assert_role": "asserted on",
            "assert_tp_ranks": "assert ranks",
            "assert_first_ts": time_label("assertion"),
            "abort_ts": time_label("abort"),
            "abort_role": "abort role",
            "abort_tp_rank": "abort rank",
            "abort_kind": "abort kind",
            "abort_rid": "rid",
            "delta_ms": "abort → assertion (ms)",
            "request_status": "router status",
            "finding": "finding",
        },
        {"abort_tp_rank": lambda v: "" if v is None else f"TP{v}"},
    )


def _batches_read(cov: pl.DataFrame) -> int:
    """The batch lines the engines' roles hold (``coverage``), timed or not."""
    return int(cov.filter(pl.col("scope") == "role")["batches"].sum()) if cov.height else 0


def _stops(wedge: pl.DataFrame, lbr: pl.DataFrame, batches: int) -> list[str]:
    """The wedge and last-batch tables; where they are empty, what was read instead (``batches``: batch
    lines read, with a date or not: lines printed without one are read but cannot be placed in time)."""
    lines = []
    undated = f"{batches} batch line(s) were read, none with a date: " if batches and not lbr.height else ""
    if wedge.height:
        lines += _table(
            wedge,
            {
                "role": "role",
                "stopped_ts": time_label("stopped"),
                "ranks_stopped": "ranks",
                "stop_spread_s": "spread (s)",
                "stalled_s": "stalled (s)",
                "other_role_continued": "other role went on",
                "health_kept_200": "/health kept 200",
                "restart_ts": time_label("restart"),
                "resumed_ts": time_label("batches again"),
                "verdict": "verdict",
            },
        )
    else:
        lines.append(
            "No gap in any role's batch lines: the wedge query finds no stop."
            if lbr.height
            else f"{undated}the wedge query has no time to find a stop in."
            if undated
            else "No batch lines: the wedge query has nothing to find a stop in."
        )
    lines.append("")
    if lbr.height:
        lines += _table(
            lbr,
            {
                "role": "role",
                "rank_label": "rank",
                "run": "run",
                "pid": "pid",
                "last_batch_ts": time_label("last batch"),
                "running_req": "running",
                "lag_in_role_s": "lag in role (s)",
                "lag_behind_other_role_s": "other role went on (s)",
            },
        )
    else:
        lines.append(
            f"{undated}the last batch of each rank cannot be placed in time."
            if undated
            else "No batch line was read: the last batch of each rank cannot be said."
        )
    return lines


def _evidence(chain: pl.DataFrame, a2a: pl.DataFrame) -> list[str]:
    lines = []
    for row in chain.iter_rows(named=True):
        where = f"{row['source']}:{short_position(row['source_pos'])}" if row["source"] else "(no record)"
        lines.append(
            f"- {row['step']} ({row['role'] or 'all roles'}): {md(where, code=True)}: {md(row['message'], width=240)}"
        )
    asserted = a2a.filter(pl.col("asserted") & pl.col("abort_event_id").is_not_null())
    for row in asserted.sort("abort_ts").head(20).iter_rows(named=True):
        where = f"{row['abort_source'] or ''}:{short_position(row['abort_source_pos'])}"
        lines.append(
            f"- abort of room {row['bootstrap_room']}: {md(where, code=True)}: {md(row['abort_message'], width=240)}"
        )
    return lines or ["No evidence row: the chain is empty."]


def _clock_lines(row: dict) -> list[str]:
    """What a coverage clock row (one input, one clock) means for the times the report states."""
    lines = []
    if row["clock"] == "zone not printed":
        lines.append(
            f"- input {md(row['source'])}: {row['events']:,} record(s) carry only a time printed without a zone"
            f" ({_t(row['first_ts'], zone=False)} to {_t(row['last_ts'], zone=False)}; a log that prints no zone, SGLang's among them, prints local time):"
            " their times are as printed, not UTC, so they cannot be put in one order with another clock's."
        )
    if row["offset_s"] is not None:
        lines.append(f"- input {md(row['source'])}: two clocks: {offset_words(row['offset_s'])}.")
    return lines


def _missing(
    cov: pl.DataFrame,
    stops: pl.DataFrame,
    stuck: pl.DataFrame,
    a2a: pl.DataFrame,
    captured: pl.DataFrame | None = None,
) -> list[str]:
    lines = []
    consequences = {
        "no record read as the router's": "router requests (client status, latency, which prefill/decode pair) cannot be tied in",
        "no py-spy capture": "where it waited cannot be said",
        "no batch lines": "when it last advanced cannot be said",
        "no /health lines": "whether /health kept answering cannot be said",
        "engine's": "logcorr can say nothing about that engine",
        "no router request lines": "no request can be tied to a room through the router",
        "without capture time": "when it was taken cannot be said (a bare py-spy file; its file name may tell)",
    }
    for row in cov.filter(pl.col("missing").is_not_null()).iter_rows(named=True):
        what = row["missing"]
        so = "; ".join(v for k, v in consequences.items() if k in what)
        if row["scope"] == "role" and row["role"] == "unknown":
            lines.append(f"- {row['events']:,} record(s) have {md(what)}, so they are counted for no engine.")
            continue
        if row["scope"] == "clock":
            lines += _clock_lines(row)
            continue
        if row["scope"] == "role":
            subject = md(row["role"])
        elif row["scope"] == "rank":
            subject = md(f"{row['role']} {row['rank_label']}") + (
                f" on {md(row['host'])}" if row["host"] else ""
            )
        else:
            subject = f"input {md(row['source'])}"
        lines.append(f"- {subject}: {md(what)}" + (f", so {so}" if so else "") + ".")
    unlinked = a2a.filter(pl.col("asserted") & pl.col("request_event_id").is_null())
    for room in unlinked["bootstrap_room"].unique(maintain_order=True):
        lines.append(
            f"- No router or HTTP request line names room {room} or its rids, so the client request behind "
            "the assertion cannot be named from the data (the router logs neither room nor rid at INFO)."
        )
    if a2a.height == 0 or not a2a["asserted"].any():
        lines.append(
            "- No transfer_infos assertion: the report cannot name the room whose cleanup raced the transfer."
        )
    engine_batches = _batches_read(cov)
    if stops.height == 0 and engine_batches:
        lines.append("- No stop found in the batch lines: the report cannot say when an engine wedged.")
    elif stops.height == 0:
        lines.append("- No batch lines: whether and when an engine wedged cannot be said.")
    if stuck.height == 0:
        lines.append(
            f"- {_no_desync(captured)}: the desync (which rank waits in which collective) cannot be shown."
        )
    if not lines:
        lines.append("Every role and rank has batch lines and a py-spy capture; the router log is present.")
    return lines
