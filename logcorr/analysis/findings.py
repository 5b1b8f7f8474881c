"""Findings: one row per thing that happened, of every kind, and the summary that leads the report.

The rows come from the saved query ``findings`` (``queries/findings.sql``, the union of the
``finding_*`` queries: one per failure mode), each with ``ts``/``end_ts`` (UTC, µs), ``kind``,
``role``, ``host``, ``ranks``, ``n``, ``summary``, ``evidence`` (``events.event_id`` list) and
``rests_on``. This module only orders them (causal order), picks the main one, and words the summary
from them, from the ``impact`` query and from the matched known-issue families: every number in the
summary is a cell of one of those rows.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl

from logcorr.analysis import finding_kinds
from logcorr.analysis import known_issues as known_mod
from logcorr.analysis import saved as saved_mod
from logcorr.markdown import md

# Causal order of kinds that begin at the same instant: a cause before its effects.
KIND_ORDER = (
    "abort_burst", "bootstrap_failures", "transfer_failures", "transfer_assertion", "remote_kv_wait", "failed_requests",
    "request_aborts", "cuda_error", "failure_counters", "decode_retraction",
    "start_up_failure", "scheduler_crash", "collective_timeout", "collective_error", "watchdog_hang", "child_exits",
    "wedge", "stop",
    "start_up_stall", "no_data", "health_lies",
    "health_generate_failed", "scheduler_watchdog", "rank_divergence", "restart", "crash_loop",
    "stacks_captured", "unexplained_crash", "unexplained_errors",
)  # fmt: skip
# Which finding leads (the main event): the first kind of this list the data holds.
MAIN_ORDER = (
    "start_up_failure", "scheduler_crash", "cuda_error", "collective_timeout", "collective_error", "wedge",
    "crash_loop", "stop", "start_up_stall", "child_exits", "watchdog_hang",
    "transfer_assertion", "bootstrap_failures",
    # a crash no finding explains (a segfault, an exception): above a transfer backend's error lines beside it
    "unexplained_crash",
    "transfer_failures", "remote_kv_wait", "rank_divergence", "scheduler_watchdog",
    "health_lies", "health_generate_failed", "failure_counters", "failed_requests", "restart",
    "decode_retraction", "abort_burst", "request_aborts", "stacks_captured", "unexplained_errors",
)  # fmt: skip
# Kinds left out of the "how it came about" line: said elsewhere in the summary, or a pause in the data.
NOT_IN_CHAIN = ("health_lies", "no_data", "bootstrap_failures", "transfer_failures", "stacks_captured")
READ_UNEXPLAINED = "read the most severe unexplained record with its neighbours (`logcorr show EVENT_ID`, the first id of its evidence)"
# What to do now, by main kind, when no known family names a workaround (and after the families' ones).
ACTIONS = {
    "start_up_failure": "read the start-up traceback and the launch flags of that rank (`logcorr show EVENT_ID`)",
    "scheduler_crash": "read the traceback of the rank that raised first (`logcorr show EVENT_ID`) and the ranks' logs around it",
    "cuda_error": "rerun with CUDA_LAUNCH_BLOCKING=1 to find the kernel, and check the GPU's memory headroom",
    "collective_timeout": "find the rank that never entered the collective: py-spy every rank (`logcorr collect`) before the restart",
    "collective_error": "find the peer the NCCL error names (a rank that exited, a network link) and read its log at that time",
    "watchdog_hang": "py-spy the stuck rank (`logcorr collect`) and read the debug info the monitor dumped (TORCH_NCCL_TRACE_BUFFER_SIZE): which NCCL or CUDA call never returned",
    "child_exits": "read the dead child's own log (its pid) before the parent's report: a negative exit code is the signal that killed it",
    "wedge": "take py-spy dumps of every rank while it hangs (`logcorr collect`), then restart the engines",
    "crash_loop": "stop the restart loop and read the first crash, not the last",
    "stop": "take py-spy dumps of every rank while it hangs (`logcorr collect`)",
    "start_up_stall": "if the ranks hang in that step, py-spy every rank (`logcorr collect`), and check the ranks reach each other (NCCL_DEBUG=INFO, the dist-init address and port, the network interface)",
    "bootstrap_failures": "check the router's routing and the prefill bootstrap server for the failed rooms",
    "transfer_failures": "check the KV transfer backend between prefill and decode (peers, network, timeouts)",
    "remote_kv_wait": "read the prefill side's log for the waiting request's id: did its prefill finish and its KV transfer start (connector, peers, network)",
    "failure_counters": "scrape /metrics again to see whether the counter still rises, and read the engine's log of that time for the failures themselves",
    "health_generate_failed": "py-spy every rank now (`logcorr collect`), before the restart: the HTTP server lives but no forward pass completes",
    "stacks_captured": "dump every rank of the group (`logcorr collect`) and read the log of the rank that is not where the others wait",
    "unexplained_crash": READ_UNEXPLAINED,
    "unexplained_errors": READ_UNEXPLAINED,
    "decode_retraction": "if it recurs more than now and then, reserve more KV for running requests (raise"
    " --schedule-conservativeness, e.g. 1.3, or lower --max-running-requests) or give the KV cache more memory"
    " (--mem-fraction-static)",
    "failed_requests": "read the first failed request's error and the logs of the worker it names at that time (`logcorr show EVENT_ID`)",
}
FILE_ISSUE = "write the upstream report: `logcorr report --format issue -d OUT`"
# A GPU the NVIDIA driver lost or reported in error (cuda.sql's gpu_fallen_off_bus and xid rows) is
# hardware to check, not a kernel to find.
GPU_LOST_ACTION = (
    "take the node out of service and check the GPU the driver names (`nvidia-smi -q`, the kernel's NVRM/Xid"
    " lines, power and PCIe): a GPU lost from the bus does not come back without a reset"
)
# Ranks that timed out in different collectives at one SeqNum (watchdog.sql's "(a desync)", batch19/01):
# no rank is missing from a collective, their code paths diverged.
DESYNC_ACTION = (
    "find where the ranks' code paths diverge (they called different collectives at one sequence number):"
    " rerun with TORCH_DISTRIBUTED_DEBUG=DETAIL, which checks that every rank calls the same collective"
)
GPU_XID_ACTION = (
    "check the GPU the driver names (`nvidia-smi -q`) and look the Xid up in NVIDIA's Xid catalog"
)


def _action(main: dict) -> str | None:
    """What to do now for the main finding ``main`` by its kind (``ACTIONS``); a GPU error the NVIDIA
    driver printed (a cuda_error whose summary says ``(NVIDIA driver)``) set apart from a CUDA error, and
    ranks timed out in different collectives (a collective_timeout saying ``(a desync)``) from a rank
    missing from one."""
    said = main.get("summary") or ""
    if main["kind"] == "cuda_error" and "(NVIDIA driver)" in said:
        return GPU_LOST_ACTION if "fallen off the bus" in said else GPU_XID_ACTION
    if main["kind"] == "collective_timeout" and "(a desync)" in said:
        return DESYNC_ACTION
    return ACTIONS.get(main["kind"])


def _kind_key(kind: str) -> int:
    return KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)


def abort_bursts(chain: pl.DataFrame, schema: dict) -> pl.DataFrame:
    """The ``abort_burst`` findings: the incident chain's burst rows (``incident_chain``, whose
    burst_gap_s/burst_min rule is the one truth of a burst), in the columns of ``findings``."""
    bursts = chain.filter(pl.col("step") == "abort_burst") if chain.height else chain
    rows = [
        {
            "ts": b["ts"], "end_ts": b["end_ts"], "kind": "abort_burst", "role": b["role"], "host": None,
            "ranks": [x for x in (b["ranks"] or "").split(",") if x], "n": None,
            "summary": f"Abort burst: {b['detail']}", "evidence": [b["event_id"]] if b["event_id"] else [],
            "rests_on": "incident_chain (abort_burst: aborts less than burst_gap_s apart)",
        }
        for b in bursts.iter_rows(named=True)
    ]  # fmt: skip
    return pl.DataFrame(rows, schema=schema)


def _evidence_zoned(out: Path, ids: list[int] | None, saved: dict | None, con) -> bool:
    """Whether the timed records ``ids`` all print their zone (``finding_kinds.RECORD_ZONED``); True
    when none has a time (nothing to word as printed)."""
    if not ids:
        return True
    found = saved_mod.query(
        out,
        f"SELECT bool_and({finding_kinds.RECORD_ZONED}) FROM events e "
        f"WHERE e.ts IS NOT NULL AND e.event_id IN ({', '.join(str(int(i)) for i in ids)})",
        saved=saved, con=con,
    ).item()  # fmt: skip
    return found is not False


def lone_aborts(rows: pl.DataFrame, bursts: pl.DataFrame) -> pl.DataFrame:
    """``rows`` without the ``request_aborts`` rows (``queries/findings/aborts.sql``) that an abort burst
    of ``bursts`` overlaps in time (``ts``..``end_ts``, UTC): the burst says those aborts. A row or a
    burst without a time overlaps nothing."""
    for b in bursts.filter(pl.col("ts").is_not_null()).iter_rows(named=True):
        end = b["end_ts"] or b["ts"]
        inside = (
            (pl.col("kind") == "request_aborts")
            & (pl.col("ts") <= end)
            & (pl.coalesce("end_ts", "ts") >= b["ts"])
        )
        rows = rows.filter(~inside.fill_null(False))
    return rows


def findings(
    out: Path,
    *,
    saved: dict | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
    chain: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Every finding of OUT in causal order: the ``findings`` query's rows plus the abort bursts of
    ``chain`` (the ``incident_chain`` rows; run when not given), by ``ts`` (UTC; a finding without a
    time last), ties by ``KIND_ORDER`` (cause before effect), then by the place of their first record in
    the input (its event id: a log prints a cause before its effects), then by summary (the same order
    every run); a ``step`` column numbers them from 1.

    Raises:
        FileNotFoundError: OUT does not exist. QueryError: a finding query fails on OUT's tables.
    """
    saved = saved if saved is not None else saved_mod.load_saved()
    rows = saved_mod.query(out, "findings", saved=saved, con=con)
    if chain is None:
        chain = saved_mod.query(out, "incident_chain", saved=saved, con=con)
    bursts = abort_bursts(chain, rows.schema)
    if bursts.height:
        bursts = bursts.with_columns(
            pl.Series(
                "zoned", [_evidence_zoned(out, ids, saved, con) for ids in bursts["evidence"].to_list()]
            )
        )
    rows = pl.concat([lone_aborts(rows, bursts), bursts], how="vertical_relaxed")
    rows = rows.with_columns(pl.col("kind").map_elements(_kind_key, return_dtype=pl.Int64).alias("_order"))
    rows = rows.with_columns(pl.col("evidence").list.min().alias("_first"))
    rows = rows.sort(["ts", "_order", "_first", "summary"], nulls_last=True, maintain_order=True)
    rows = rows.drop("_order", "_first")
    return rows.with_row_index("step", offset=1).with_columns(pl.col("step").cast(pl.Int64))


# A crash known only from its client's report (vLLM's EngineDeadError, "See stack trace (above) for the
# root cause": crash.sql's summary says "… died, as its client … reported it") leads only when no finding
# of these kinds tells the failure inside the engine (batch19/06: the CUDA illegal memory access on rank 0);
# not an untyped traceback, which may be the client's own (batch13/11's stream generator, cut).
REPORTED_DEATH = " died, as its client"
# A crash whose traceback is cut before its exception (crash.sql's words): what raised is not printed.
CUT_EXCEPTION = "exception type not printed (the traceback is cut)"
ENGINE_FAILURES = (
    "start_up_failure", "scheduler_crash", "cuda_error", "collective_timeout", "collective_error",
    "child_exits", "watchdog_hang",
)  # fmt: skip


def _cut_crash_timed_out(found: pl.DataFrame) -> pl.DataFrame:
    """``found`` without its crashes whose exception is cut (``CUT_EXCEPTION``) on a role where a collective
    timed out (``collective_timeout``) no later than the crash, or with neither timed: the timeout is the
    failure known, the cut traceback may be its own raise (batch22/01: Gloo's recv and send timeouts, then a
    decode scheduler's frames cut before their exception). A crash before the timeout keeps the lead (a rank
    that died makes the others' collectives time out)."""
    timeouts = found.filter(pl.col("kind") == "collective_timeout")
    if not timeouts.height or "summary" not in found.columns:
        return found
    cut = (pl.col("kind").is_in(["scheduler_crash", "start_up_failure"])) & pl.col("summary").fill_null(
        ""
    ).str.contains(CUT_EXCEPTION, literal=True)
    drop = []
    for c in found.with_row_index("_i").filter(cut).iter_rows(named=True):
        for t in timeouts.iter_rows(named=True):
            same_role = c["role"] == t["role"] or "unknown" in (c["role"], t["role"])
            same_host = c["host"] == t["host"]
            before = (c["ts"] is None and t["ts"] is None) or (
                c["ts"] is not None and t["ts"] is not None and t["ts"] <= c["ts"]
            )
            if same_role and same_host and before:
                drop.append(c["_i"])
                break
    if not drop:
        return found
    return found.with_row_index("_i").filter(~pl.col("_i").is_in(drop)).drop("_i")


def main_finding(found: pl.DataFrame) -> dict | None:
    """The finding that leads: the first of ``MAIN_ORDER``'s kinds present, the earliest of that kind
    (one with a time before one without; at the same time, one resting on a typed table before one read
    from ``events`` by words); a crash its client reported (``REPORTED_DEATH``) only when no finding of
    ``ENGINE_FAILURES`` tells the failure itself; a crash whose exception is cut not over a collective
    timeout of its role at or before it (``_cut_crash_timed_out``). ``None`` when there is none (or only
    ``no_data`` gaps)."""
    if "summary" in found.columns:
        reported = pl.col("summary").fill_null("").str.contains(REPORTED_DEATH, literal=True)
        itself = pl.col("kind").is_in(ENGINE_FAILURES) & ~reported
        if found.filter(reported).height and found.filter(itself).height:
            found = found.filter(~reported)
    found = _cut_crash_timed_out(found)
    for kind in MAIN_ORDER:
        rows = found.filter(pl.col("kind") == kind)
        if rows.height:
            words = pl.lit(False)
            if "rests_on" in rows.columns:
                words = pl.col("rests_on").fill_null("").str.starts_with("events")
            rows = rows.with_columns(words.alias("_words"))
            return (
                rows.sort(["ts", "_words"], nulls_last=True, maintain_order=True)
                .drop("_words")
                .row(0, named=True)
            )
    return None


def _t(ts: datetime | None, date: bool = True, zone: bool = True) -> str:
    """A finding's time: UTC when its records print their zone (``zone``), else as printed, no zone."""
    if ts is None:
        return "no time read"
    text = ts.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S" if date else "%H:%M:%S")
    return text + (" UTC" if zone else "")


def _printed(printed_time: str) -> str:
    """A time printed without a year (``MM-DD hh:mm:ss``) or a date (``hh:mm:ss``), as printed and
    saying what it lacks: no year or date is ever made up."""
    lacks = "year" if re.match(r"\d\d-\d\d ", printed_time) else "date"
    return f"{printed_time} as printed (no {lacks} or zone printed)"


def _zoned(r: dict) -> bool:
    return r.get("zoned") is not False  # a row of an older findings query has no zoned column


def impact(out: Path, found: pl.DataFrame, *, saved: dict | None = None, con=None) -> pl.DataFrame:
    """The ``impact`` query's rows (requests failed, aborted, answered per role) from the first timed
    finding to the end of the data; over the whole data (untimed records too) when the findings have
    no time; empty when there is no finding (``no_data`` gaps aside)."""
    real = found.filter(pl.col("kind") != "no_data")
    if not real.height:
        return pl.DataFrame()
    timed = real.filter(pl.col("ts").is_not_null())
    if not timed.height:
        return saved_mod.query(out, "impact", saved=saved, con=con)
    since = timed["ts"].min().astimezone(UTC).isoformat()
    return saved_mod.query(out, "impact", {"since": since}, saved=saved, con=con)


def families_by_role(evidence: pl.DataFrame) -> dict[str, set[str]]:
    """``{family: roles of its evidence rows}`` from the rows of ``known_issue_evidence`` (its ``family``
    and ``role`` columns; a row without a role adds none); empty when there is none."""
    if not evidence.height:
        return {}
    by_family = evidence.group_by("family").agg(pl.col("role").drop_nulls())
    return {r["family"]: set(r["role"]) for r in by_family.iter_rows(named=True)}


def likely_family(main: dict | None, known: pl.DataFrame, roles: dict[str, set[str]]) -> dict | None:
    """The matched family most likely behind the main finding: a bug mechanism (weight 1) whose
    evidence lies on the main finding's role, else the first mechanism, else the first match; with
    ``why``, that rule in words."""
    if not known.height:
        return None
    rows = list(known.sort("rank").iter_rows(named=True))
    role = (main or {}).get("role")
    weights = {f.id: f.meta.get("weight", "") for f in known_mod.load_families().values()}
    mechanisms = [r for r in rows if weights.get(r["family"]) == "1"]
    on_role = [r for r in mechanisms if role and role in roles.get(r["family"], set())]
    if on_role:
        why = f"a bug mechanism whose evidence rows lie on the main finding's role ({role})"
    elif mechanisms:
        why = "the strongest bug mechanism matched (none has evidence on the main finding's role)"
    else:
        why = "the strongest match (no bug mechanism matched)"
    return {**(on_role or mechanisms or rows)[0], "why": why}


def ranked_families(main: dict | None, known: pl.DataFrame, roles: dict[str, set[str]]) -> pl.DataFrame:
    """``known`` (the ``known_issues`` rows) in the order the summary gives them: the likely family
    (``likely_family``) first, the others by rank; ``rank`` renumbered 1, 2, … and a ``why`` column
    saying why the first is first (null on the others)."""
    fam = likely_family(main, known, roles)
    if fam is None:
        return known
    first = known.filter(pl.col("family") == fam["family"])
    ordered = pl.concat([first, known.filter(pl.col("family") != fam["family"]).sort("rank")])
    return ordered.with_columns(
        pl.int_range(1, ordered.height + 1).cast(known.schema["rank"]).alias("rank"),
        pl.when(pl.int_range(0, ordered.height) == 0).then(pl.lit(fam["why"])).otherwise(None).alias("why"),
    )


def _step_text(r: dict) -> str:
    """A finding as a step of the chain: its summary up to the first colon (a divergence: its groups;
    a restart: with its unit), without the time the step already shows."""
    text = r["summary"] or r["kind"]  # a summary a query could not word (a null among its parts)
    # the time said apart first: "(no time read; printed without a year: …)" holds a colon of its own
    text = re.sub(r" \(no time read[^)]*\)", "", text)
    if r["kind"] == "rank_divergence":
        text = text.split(" (py-spy")[0].replace("its ranks wait in different places: ", "")
    elif r["kind"] in ("restart", "crash_loop"):
        text = " ".join(text.split(" ")[:3])
    else:
        text = text.split(": ")[0]
    return text.replace(" at " + _t(r["ts"], zone=_zoned(r)), "")


def _chain(found: pl.DataFrame) -> str:
    """The findings as one line of steps, ``HH:MM:SS what → …`` (at most eight; a kind repeated in a
    row is said once)."""
    steps, last_kind = [], None
    for r in found.filter(~pl.col("kind").is_in(NOT_IN_CHAIN)).iter_rows(named=True):
        if r["kind"] == last_kind:
            continue
        last_kind = r["kind"]
        when = (
            _t(r["ts"], date=False, zone=_zoned(r))
            if r["ts"]
            else md(r.get("printed_time") or "(no time read)")
        )
        steps.append(f"{when} {md(_step_text(r))}")
    shown = steps[:8] + ([f"… {len(steps) - 8} more"] if len(steps) > 8 else [])
    return " → ".join(shown)


# The impact query's per-role request counts the summary states after the 5xx answers, in this order.
IMPACT_COUNTS = (
    ("transfer_failed", "named by a KV transfer or bootstrap failure"),
    ("in_stuck_batch", "in a batch a watchdog printed as it fired"),
    ("aborted", "aborted"),
)


def _impact_line(rows: pl.DataFrame, running: int | None) -> str:
    parts = []
    if running:
        parts.append(f"{running} request(s) running at the stop")
    for r in rows.iter_rows(named=True) if rows.height else []:
        if r["failed"]:
            zone = _zoned(r)  # false: the 5xx answers' records print no zone (times as printed)
            span = f"{_t(r['first_failed_ts'], False, zone)} to {_t(r['last_failed_ts'], False, zone)}"
            span = "no time read" if r["first_failed_ts"] is None else span
            role = "" if r["role"] in (None, "unknown") else f" {r['role']}"
            parts.append(f"{r['failed']}{role} request(s) answered 5xx ({md(r['statuses'])}, {span})")
    for r in rows.iter_rows(named=True) if rows.height else []:
        if r.get("untimed_failed"):  # the window from the first timed finding cannot place them
            role = "" if r["role"] in (None, "unknown") else f" {r['role']}"
            more = " more" if r["failed"] else ""
            parts.append(f"{r['untimed_failed']}{more}{role} 5xx answer(s) whose record prints no time")
    for r in rows.iter_rows(named=True) if rows.height else []:
        if r.get("errors"):
            parts.append(f"{r['errors']} {r['role']} ERROR record(s) of a failed request without a status")
    for r in rows.iter_rows(named=True) if rows.height else []:
        if r.get("probe_failed"):  # the probes the request counts leave out (batch22/05: GET /health 503)
            role = "" if r["role"] in (None, "unknown") else f" {r['role']}"
            parts.append(f"{r['probe_failed']}{role} health or metrics probe(s) answered 5xx")
    for column, words in IMPACT_COUNTS:
        for r in rows.iter_rows(named=True) if rows.height else []:
            if r.get(column):
                on = "" if r["role"] in (None, "unknown") else f" on {r['role']}"
                parts.append(f"{r[column]} request(s) {words}{on}")
    return "; ".join(parts) if parts else "no 5xx answer, abort or running request was read"


def _when(r: dict) -> str:
    """A row's time span (``first_ts``/``last_ts`` or ``ts``, UTC where ``zoned``, else as printed;
    ``printed_time`` when it has none)."""
    first = r.get("first_ts", r.get("ts"))
    if first is None:
        return _printed(r["printed_time"]) if r.get("printed_time") else "no time read"
    last, zone = r.get("last_ts") or first, _zoned(r)
    text, until = _t(first, zone=zone), _t(last, date=last.date() != first.date(), zone=zone)
    if last != first and until not in text:  # the same second is said once
        text += " to " + until
    return text + ("" if zone else " as printed (zone not printed)")


def _role(r: dict) -> str:
    return "no role read" if r["role"] in (None, "unknown") else r["role"]


def _request_words(r: dict) -> str:
    """One request of ``shown_requests``: its id, roles, records, time, and what was read of its outcome."""
    roles = "no role read" if r["roles"] == "unknown" else r["roles"]
    text = f"request {md(r['id'])} ({roles}, {r['n']} record(s), {md(_when(r))})"
    legs = [f"{leg} {md(r[f'{leg}_url'])}" for leg in ("prefill", "decode") if r.get(f"{leg}_url")]
    if legs:
        text += ", routed to " + " and ".join(legs)
    if r.get("finished"):
        text += f", finished ({md(r['finish_type'] or 'finish type not read')}"
        text += f", e2e {r['e2e_latency_s']:g} s)" if r.get("e2e_latency_s") is not None else ")"
    elif r.get("status") is not None:
        latency = f" in {r['latency_ms']:g} ms" if r.get("latency_ms") is not None else ""
        text += f", answered {r['status']}{latency}"
    else:
        text += ", no status, latency or finish record read for it"
    return text


def _dump_words(dumps: pl.DataFrame) -> str:
    """The py-spy (or faulthandler) dumps of ``shown_dumps``: each dump's process as read, its time, how
    many named threads it holds and how many are idle, and where each thread is (its innermost frame; the
    threads not idle first, five at most); the frames of a thread whose header was cut counted apart."""
    said = []
    for d in dumps.head(2).iter_rows(named=True):
        who = f"pid {d['pid']}" if d["pid"] is not None else "no process header read"
        if d["process_name"]:
            who += f" ({d['process_name']})"
        n, idle = d["threads"], d["idle"]
        state = (
            "all idle" if n and idle == n else f"{n - idle} not idle, {idle} idle" if n else "no named thread"
        )
        places = d["places"] or []
        text = f"a py-spy dump ({who}, {_when(d)}) of {n} thread(s), {state}"
        if places:
            text += (
                ": " + ", ".join(places[:5]) + (f", … ({len(places) - 5} more)" if len(places) > 5 else "")
            )
        if d["headless"]:
            text += f"; and the frames of {d['headless']} thread(s) whose header the dump lacks"
        said.append(md(text, width=600))
    more = f"; {dumps.height - 2} more dump(s)" if dumps.height > 2 else ""
    return "; ".join(said) + more


def shown_line(shown: dict[str, pl.DataFrame]) -> str:
    """What the data shows when it shows no failure, from the ``SHOWN_SQL`` rows of ``report.gather``:
    the records per role (log records: a time, a level or a kind read; the other text said apart, never
    counted as a role's records) and the processes they name (host and pid as read), then the most significant
    things read: the requests named by an id with what was read of their outcome, else the batch lines per role
    and the HTTP answers no id names (method, path, status), else a /metrics scrape; the py-spy dumps and
    where their threads are (``_dump_words``); bench_serving's result table, its headline figures as printed;
    the start-up step the input ends inside (``shown_open_step``: begun, its end not printed, nothing of a later
    stage after it); and the last record in start-up words (``ready``, else start/listen/serve) and the last
    record read, quoted (the last only when no request by id, batch, scrape, dump or benchmark table was read).
    Empty when no record was read."""
    roles = shown.get("shown_roles", pl.DataFrame())
    if not roles.height:
        return ""
    counted = [
        f"{r['n']} record(s) with no role read"
        if r["role"] == "unknown"
        else f"{r['n']} {r['role']} record(s)"
        for r in roles.iter_rows(named=True)
        if r["n"]
    ]
    # lines with no time, level or kind read (prose, fences, notes) are said apart, never counted as records
    text_n = sum(r.get("text_n") or 0 for r in roles.iter_rows(named=True))
    text = f"{text_n} text record(s) with no time, level or kind read" if text_n else ""
    parts = [" and ".join(p for p in (", ".join(counted), text) if p)]
    procs = shown.get("shown_processes", pl.DataFrame())
    if procs.height:  # the processes they name: host and pid as read, four at most
        named = [
            (f"host {p['host']} " if p["host"] else "") + f"pid {p['pid']} ({p['n']} record(s))"
            for p in procs.head(4).iter_rows(named=True)
        ]
        more = f", … ({procs.height - 4} more)" if procs.height > 4 else ""
        parts[0] += f"; the processes read: {md(', '.join(named), width=400)}{more}"
    requests = shown.get("shown_requests", pl.DataFrame())
    batches = shown.get("shown_batches", pl.DataFrame())
    metrics = shown.get("shown_metrics", pl.DataFrame())
    if requests.height:
        first = _request_words(requests.row(0, named=True))
        parts.append(
            first if requests.height == 1 else f"{requests.height} requests by id, the first {first}"
        )
    if batches.height and not requests.height:
        for b in batches.iter_rows(named=True):
            ranks = ", ".join(f"TP{t}" for t in b["tp_ranks"] or []) or "no rank read"
            running = b["last_running_req"]
            parts.append(
                f"{b['n']} batch line(s) of {b['role']} ({ranks}), {md(_when(b))}"
                + (f", the last with #running-req {running}" if running is not None else "")
            )
    # the HTTP answers no id names are said beside the batch lines: a server that served shows both (batch26/09:
    # three chat completions and a /health answered 200 around one prefill batch)
    answers = shown.get("shown_answers", pl.DataFrame())
    if answers.height and not requests.height:
        said = [
            f"{a['n']} HTTP answer(s) {md(a['method'])} {md(a['path'])} {a['status'] if a['status'] is not None else '(no status read)'}"
            f", {md(_when(a))}"
            for a in answers.head(3).iter_rows(named=True)
        ]
        parts.append(
            "; ".join(said) + (f"; {answers.height - 3} more kind(s) of answer" if answers.height > 3 else "")
        )
    if metrics.height and not (requests.height or batches.height or answers.height):
        m = metrics.row(0, named=True)
        dps = ", ".join(str(d) for d in m["dp_ranks"] or [])
        parts.append(
            f"a /metrics scrape: {m['n']} sample(s) of {len(m['names'])} metric(s) ({md(', '.join(m['names']), width=200)})"
            + (f" labelled dp_rank {dps}" if dps else "")
            + ("" if m["timed"] else ", no time read")
        )
    dumps = shown.get("shown_dumps", pl.DataFrame())
    if dumps.height:
        parts.append(_dump_words(dumps))
    bench = shown.get("shown_bench", pl.DataFrame())
    if bench.height:  # a benchmark client's figures as printed: no server's record, no failure of its own
        figures = ", ".join(f"{md(b['key'])} {md(b['value'])}" for b in bench.iter_rows(named=True))
        parts.append(f"bench_serving's result table (no time): {figures}")
    step = shown.get("shown_open_step", pl.DataFrame())
    if step.height:  # the start-up step the input ends inside (no failure: the paste stops there)
        s = step.row(0, named=True)
        ranks = ", ".join(s["ranks"] or []) or "no rank read"
        parts.append(
            f'the input ends inside the start-up step "{md(s["step"])}": begun by {md(ranks)} ({md(_when(s))}),'
            " its end not printed"
        )
    records = {r["what"]: r for r in shown.get("shown_records", pl.DataFrame()).iter_rows(named=True)}
    startup = records.get("ready") or records.get("start")
    last = records.get("last")
    if startup is not None:
        parts.append(
            f'the last record in start-up words: "{md(startup["message"], width=200)}" ({_role(startup)}, {md(_when(startup))})'
        )
    # the last record is quoted unless a request by id, a batch line, a scrape or a dump says what was read (the
    # HTTP answers no id names do not: their last line is still worth quoting)
    said = requests.height or batches.height or metrics.height or dumps.height or bench.height
    if last is not None and not said and last["event_id"] != (startup or {}).get("event_id"):
        parts.append(
            f'the last record read: "{md(last["message"], width=200)}" ({_role(last)}, {md(_when(last))})'
        )
    return "What it shows: " + "; ".join(parts) + "."


def summary(
    found: pl.DataFrame,
    known: pl.DataFrame,
    impact_rows: pl.DataFrame,
    *,
    running: int | None = None,
    roles: dict[str, set[str]] | None = None,
    batches: int | None = None,
    sglang_read: bool = True,
    shown: dict[str, pl.DataFrame] | None = None,
) -> list[str]:
    """At most six Markdown lines (the data's text in them through ``markdown.md``): what happened (the
    main finding), when and where, how it came about (the findings in causal order), the impact on
    requests, the likely upstream family with its workaround, and what to do now (a numbered list on
    one line). Without a finding, one line saying the data shows no failure (and naming gaps in the
    data, if any): said only when no record carries an error level or a crash or failure marker, as
    those make an ``unexplained_crash`` or ``unexplained_errors`` finding. A time is UTC where its records print their zone and as printed
    where they do not (the rows' ``zoned``). ``batches``: the batch lines read (0: a no-failure line
    says a stall cannot be told). ``sglang_read`` False (no record of a known kind or role, none in
    SGLang's line format and none naming an SGLang rid: a bundle of a host without SGLang, a journal of
    other units): without a finding, the line says so instead. ``shown``: the ``report.SHOWN_SQL`` rows,
    from which a no-failure line says what the data shows (``shown_line``)."""
    main = main_finding(found)
    if main is None and not sglang_read:
        # what the lines it did read show (their hosts and processes, the last record), said after it
        # (batch21/07: NCCL's INFO lines of two hosts; batch21/09: a controller's klog lines)
        what = shown_line(shown or {})
        return [
            "**What happened**: cannot be told: logcorr read no record as an SGLang engine's, the router's or"
            " a py-spy dump (no record of a known kind or role, none in SGLang's, vLLM's or Dynamo's header"
            " format; ingest's summary lists what was read), so no"
            " failure can be seen." + (f" {what}" if what else "")
        ]
    if main is None:
        gaps = found.filter(pl.col("kind") == "no_data")
        line = (
            "**What happened**: the data shows no failure: no record logcorr read carries an error level or a"
            " crash, exception, watchdog or failure marker, and no stop, timeout or failed transfer was found."
        )
        if gaps.height:
            line += " " + "; ".join(md(g) for g in gaps["summary"]) + "."
        what = shown_line(shown or {})
        line += f" {what}" if what else ""
        if batches == 0:  # a stall shows only in batch lines
            line += " No batch line was read, so whether an engine stalled cannot be said."
        return [line]
    ranks = ", ".join(main["ranks"] or []) or "no rank read"
    where = main["role"] if main["role"] not in (None, "unknown") else "no role read"
    where += f" on {md(main['host'])}" if main["host"] else ""
    when = _t(main["ts"], zone=_zoned(main))
    if main["ts"] is None and main.get("printed_time"):
        when = _printed(main["printed_time"])
    elif not _zoned(main) and main["ts"] is not None:
        when += " as printed (zone not printed)"
    lines = [
        f"**What happened**: {md(main['summary'])}.",
        f"**When and where**: {md(when)}, {where}, {ranks}.",
    ]
    chain = _chain(found)
    if chain:
        lines.append(f"**How it came about**: {chain}.")
    lines.append(f"**Impact**: {_impact_line(impact_rows, running)}.")
    fam = likely_family(main, known, roles or {})
    actions = []
    if fam is not None:
        lines.append(
            f"**Likely upstream family**: {fam['family']}: {fam['title']}; workaround: {fam['workaround']}."
        )
        actions.append(f"{fam['workaround']} ({fam['family']})")
        for r in ranked_families(main, known, roles or {}).iter_rows(named=True):
            if r["family"] != fam["family"] and r["workaround"]:
                actions.append(f"{r['workaround']} ({r['family']})")
    if action := _action(main):
        actions.append(action)
    actions.append(FILE_ISSUE)
    lines.append(
        "**What to do now**: " + " ".join(f"{i}. {a};" for i, a in enumerate(actions[:4], 1))[:-1] + "."
    )
    return lines[:6]


def as_json(row: dict, keys: tuple[str, ...] | None = None) -> dict:
    """A finding's or impact's row as a JSON-able dict: times ISO 8601 UTC ``Z`` where the row is
    zoned, else ISO 8601 without a zone (as printed: its records print none); ``keys`` (default: all)."""
    zoned = row.get("zoned") is not False
    fmt = saved_mod.format_value
    return {
        k: fmt(v.replace(tzinfo=None) if isinstance(v, datetime) and not zoned else v)
        for k, v in ((k, row.get(k)) for k in (keys or tuple(row)))
    }


def rows_as_dicts(found: pl.DataFrame) -> list[dict]:
    """The findings as JSON-able dicts (``as_json``), keys as in ``report.schema.json``."""
    keys = (
        "step", "ts", "end_ts", "kind", "role", "host", "ranks", "n", "summary", "evidence", "rests_on", "zoned",
    )  # fmt: skip
    return [as_json(r, keys) for r in found.iter_rows(named=True)]
