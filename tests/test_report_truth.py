"""For every real case, the report states nothing its own tables contradict: its time span, what it
says was not ingested, the batch lines it counts, "cannot tell", lockstep, the assertion, restarts."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from logcorr.ingest import ingest
from logcorr.parsers.prefix import FOREIGN_START, SERVING_START
from logcorr.render.report import _t, report
from tests.conftest import CASES, case_group, ingested, is_shared, shared_gather, shared_report

CASE_FILES = sorted(
    p
    for p in CASES.rglob("*")
    if p.is_file() and p.suffix in (".log", ".txt", ".export") and "server_args" not in p.parts
)
PAIRS = [
    (
        "real2/08_prefill_mooncake_session_not_alive_tp16_req_dump.log",
        "real2/09_decode_failed_get_kvcache_midline_paste.log",
    )
]


def table(out: Path, name: str) -> pl.DataFrame:
    files = sorted((out / name).glob("**/*.parquet"))
    return pl.concat([pl.read_parquet(f, hive_partitioning=False) for f in files], how="vertical_relaxed")


def check(out: Path) -> None:
    text = shared_report(out) if is_shared(out) else report(out)
    ev, batches = table(out, "events"), table(out, "batches")
    assert "1970" not in text
    # the span covers every timed record, and only when there is one
    timed = ev.filter(pl.col("ts").is_not_null())
    head = text.split("\n")[2]
    zoneless = int(table(out, "sources")["zoneless"].sum())
    lo, hi = timed["ts"].min(), timed["ts"].max()
    if timed.height and not zoneless:  # every time has a known zone: the span in UTC
        assert f", {_t(lo)} to {_t(hi)}." in head, head
    elif timed.height == zoneless and zoneless:  # none has: as printed, never called UTC
        assert f", {_t(lo, zone=False)} to {_t(hi, zone=False)} as printed (zone not printed)" in head, head
        assert " UTC" not in head.split("Written by")[0].replace("which of them is UTC", ""), head
    elif timed.height:  # some have: two clocks, no order across them
        assert "zone not printed" in head and "cannot be put in one order" in head, head
    else:
        assert " to " not in head.split("Written by")[0], head
    roles = set(ev["role"])
    # PD halves are missing unless a record has that role, or every engine is one of no PD pair
    pd_expected = "engine" not in roles or bool(roles & {"prefill", "decode"})
    for role in ("prefill", "decode"):
        said_missing = f"- {role}: no record read as the {role} engine's" in text
        assert said_missing == (role not in roles and pd_expected), (role, roles)
        n = batches.filter(pl.col("role") == role).height
        if f"no batch line of {role} was read" in text:
            assert n == 0
        m = re.search(rf"- {role.capitalize()}: its ([\d,]+) batch line", text)
        if m:
            assert int(m.group(1).replace(",", "")) == n
    if "no wedge" in text:
        assert batches.height > 0
    for line in text.splitlines():
        if (
            "lockstep" in line
            and line.startswith("- ")
            and "cannot tell" not in line
            and "cannot be told" not in line
        ):
            role = line[2:].split(" ")[0].lower()
            caps = table(out, "captures").filter(pl.col("role") == role, pl.col("tp_rank").is_not_null())
            assert caps["tp_rank"].n_unique() >= 2, line
    asserted = table(out, "transfer_errors").filter(pl.col("error_kind") == "assert_transfer_infos")
    if "No transfer_infos assertion" in text:
        assert asserted.height == 0
    if "no restart was read" in text:
        assert table(out, "lifecycle").filter(pl.col("event") == "started").height == 0
    m = re.search(r"- ([\d,]+) record\(s\) have no role", text)
    assert (int(m.group(1).replace(",", "")) if m else 0) == ev.filter(pl.col("role") == "unknown").height
    check_findings(out, text, ev)


# A finding of each kind rests on rows of these tables (at least ``n`` of them where n counts records).
KIND_TABLES = {
    "scheduler_crash": "tracebacks", "start_up_failure": "tracebacks", "collective_timeout": "watchdogs",
    "scheduler_watchdog": "watchdogs", "transfer_failures": "transfer_errors",
    "bootstrap_failures": "transfer_errors", "transfer_assertion": "transfer_errors", "cuda_error": "events",
    "failed_requests": "events", "request_aborts": "aborts", "stacks_captured": "captures",
}  # fmt: skip


def check_findings(out: Path, text: str, ev: pl.DataFrame) -> None:
    """The summary leads in at most six lines; every finding's evidence is a record of OUT and its
    count is backed by its table; a finding whose records print no zone words no time as UTC, and none
    words an unknown role as a role; a crash-led summary never says wedge or stall."""
    from logcorr.analysis import findings as findings_mod

    summary = text.split("## Summary", 1)[1].split("\n## ", 1)[0]
    assert 1 <= len([line for line in summary.splitlines() if line.strip()]) <= 6
    found = shared_gather(out)["findings"] if is_shared(out) else findings_mod.findings(out)
    ids = set(ev["event_id"].to_list())
    for f in found.iter_rows(named=True):
        assert set(f["evidence"] or []) <= ids, f
        name = KIND_TABLES.get(f["kind"])
        if f["kind"] == "transfer_failures" and f["rests_on"].startswith("events"):
            name = "events"  # the KV transfer library's own error lines: no transfer_errors row
        if f["kind"] in ("scheduler_crash", "start_up_failure") and f["rests_on"].startswith("watchdogs"):
            name = "watchdogs"  # a faulthandler dump at a fatal error (batch9/04): no tracebacks row
        if name and f["n"] is not None and f["kind"] != "cuda_error":
            assert table(out, name).height >= f["n"], f
        if f["zoned"] is False:  # its records print no zone: no time of it is worded as UTC
            assert " UTC" not in f["summary"], f
        # a role is never worded "unknown"; a log line the summary quotes may print it (Abseil's "(unknown)" symbol)
        said = re.sub(r'"[^"]*"', '""', f["summary"] or "")
        assert not re.search(r"\bon unknown\b|\(unknown\)|role unknown [A-Z]", said), f
    main = findings_mod.main_finding(found)
    if main is not None and main["kind"] in ("scheduler_crash", "start_up_failure", "collective_timeout"):
        assert not re.search(r"(?i)wedge|stall", summary), summary
    if main is None:  # issue 46: records of no known kind or role are no SGLang data, said so; a record in
        # SGLang's line format or naming an SGLang rid is SGLang data whatever its role (batch7/06), and so
        # is a line in vLLM's or Dynamo's header format (batch5/17)
        known = ev.filter(
            (pl.col("kind") != "other")
            | (pl.col("role").fill_null("unknown") != "unknown")
            | pl.col("rid").is_not_null()
            | (
                pl.col("message").str.contains(SERVING_START).fill_null(False)
                # another program's header SGLang's also matches (log4j's: Kafka, batch14/12)
                & ~pl.col("message").str.contains(FOREIGN_START).fill_null(False)
            )
        )
        said = (
            "the data shows no failure"
            if known.height
            else "cannot be told: logcorr read no record as an SGLang engine"
        )
        assert said in summary, summary


@pytest.mark.parametrize(
    "path", [pytest.param(p, marks=case_group(p), id=str(p.relative_to(CASES))) for p in CASE_FILES]
)
def test_the_report_of_each_case_claims_only_what_its_rows_show(path):
    check(ingested(path))


@pytest.mark.parametrize("pair", PAIRS, ids=["08+09"])
def test_the_report_of_each_pair_claims_only_what_its_rows_show(tmp_path, pair):
    ingest([CASES / p for p in pair], tmp_path / "out")
    check(tmp_path / "out")


def test_log_text_in_the_report_is_inert_markdown(tmp_path):
    log = tmp_path / "x.log"
    log.write_text(
        "".join(
            f"[2026-01-01 00:00:0{i} TP0] Decode transfer failed for request rank=0 decode_req.req.rid='a{i}'"
            f" decode_req.req.bootstrap_room={i} with exception KVTransferError(bootstrap_room={i}):"
            " Aborted by AbortReq. <script>alert(1)</script> [x](javascript:alert(1))\n"
            for i in range(6)
        )
    )  # six aborts: an abort burst, whose first line is the chain's evidence
    ingest([log], tmp_path / "out")
    text = report(tmp_path / "out")
    assert "<script>" not in text and not re.search(r"(?<!\\)\]\(javascript:", text)  # no live link
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "\\[x\\](javascript:" in text
