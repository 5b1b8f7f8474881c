"""Findings of failures the text shows without a room or a burst: the KV transfer library's own error
lines (by backend and cause), the cause a traceback names, failed requests (5xx answers, router ERROR
records) and lone aborts. Values from each batch's README (tests/cases/*/README.md)."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from logcorr.analysis import findings as findings_mod
from logcorr.ingest import ingest
from logcorr.render import report as report_mod
from tests.conftest import ingested, ingested_alone, need_cases, sql


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("signals")


def _out(workdir: Path, rel: str) -> Path:
    batch, prefix = rel.split("/")
    return ingested_alone(workdir, need_cases() / batch, prefix)


def _summary(out: Path) -> str:
    return report_mod.report(out).split("## Summary", 1)[1].split("\n## ", 1)[0]


def _rows(out: Path, kind: str) -> list[dict]:
    found = findings_mod.findings(out)
    return list(found.filter(pl.col("kind") == kind).iter_rows(named=True))


# --- KV transfer backend errors without a room ------------------------------------------------------------


def test_mooncake_asio_exception_and_session_failed_on_prefill(workdir):
    """real2/01: Mooncake glog E0430 16:02:26.014493 (tcp_transport.cpp, ASIO exception "connect: Cannot
    assign requested address") and "Session 10.0.9.1:15004 failed.", both on the prefill service."""
    out = _out(workdir, "real2/01")
    summary = _summary(out)
    assert (
        "**What happened**: 2 KV transfer backend error record(s) on prefill from 2026-04-30 16:02:26"
        in summary
    )
    assert "no room read; backend mooncake" in summary
    assert "ASIO exception: connect: Cannot assign requested address ×1" in summary
    assert "Session … failed ×1" in summary
    assert "no failure" not in summary


def test_mooncake_readbody_leads_over_the_router_500_it_caused(workdir):
    """real2/02: two glog `Session::readBody failed. Error: End of file` lines at 07:15:26.3257xx; the
    router's "Decode server returned error status" (status 500) and its 500 response, and the decode's
    access line 500, all in the same second."""
    out = _out(workdir, "real2/02")
    summary = _summary(out)
    assert "**What happened**: 2 KV transfer backend error record(s)" in summary
    assert "cause Session::readBody failed: End of file ×2" in summary
    (router,) = [r for r in _rows(out, "failed_requests") if r["role"] == "router"]
    assert router["summary"].startswith(
        "Failed requests on router: 2 request(s) answered 5xx (500×2) at 2025-09-04 07:15:26 UTC; POST /v1/completions"
    )
    assert "Decode server returned error status decode_url=http://10.0.9.2:50000" in router["summary"]
    # the finding and the Impact line count what the impact query counts
    ((failed,),) = sql(out, "SELECT failed FROM impact WHERE role = 'router'")
    assert router["n"] == failed == 2
    assert "2 router request(s) answered 5xx (500×2" in summary


def test_vllm_ascend_mooncake_store_failed_put_with_year_in_glog(workdir):
    """batch3/12: E20260317 09:49:03.944861 client_service.cpp TRANSFER_FAIL and the vLLM worker's ERROR
    `Failed to put key` on (Worker_DP1_TP0_EP8 pid=23143); the INFO glog line is no failure."""
    out = _out(workdir, "batch3/12")
    (row,) = _rows(out, "transfer_failures")
    assert row["n"] == 2 and row["ranks"] == ["DP1 TP0 EP8"]
    assert row["ts"].strftime("%Y-%m-%d %H:%M:%S") == "2026-03-17 09:49:03"
    assert "backend mooncake; cause Failed to put key … ×1; TRANSFER_FAIL ×1" in row["summary"]
    assert "head_or_tp_rank" not in row["summary"]  # the key is left out, not read as a rank


def test_ascend_transfer_slice_failed_without_year(workdir):
    """batch3/13: 3 glog errors (Transfer slice failed with status: 503900, two TRANSFER_FAIL) without a
    year, and the ERROR `Failed to put key` of (Worker_TP2 pid=107182): 4 records, no time read."""
    out = _out(workdir, "batch3/13")
    (row,) = _rows(out, "transfer_failures")
    assert row["n"] == 4 and row["ts"] is None and row["ranks"] == ["TP2"]
    # the time as printed, never dated: glog prints no year
    assert "(no time read; printed without a year: 03-28 " in row["summary"]
    assert "), no room read; backend mooncake" in row["summary"]
    assert (
        "TRANSFER_FAIL ×2" in row["summary"]
        and "Transfer slice failed with status: 503900 ×1" in row["summary"]
    )
    assert "**What happened**: 4 KV transfer backend error record(s) on TP2" in _summary(out)


def test_mooncake_metadata_404_of_an_early_pd_prefill(workdir):
    """sglang/17: E0414 03:56:41.856248 transfer_metadata_plugin.cpp "Unexpected code in http response"
    (the metadata GET answered 404); the W0414 line is a warning, not counted."""
    out = _out(workdir, "sglang/17")
    (row,) = _rows(out, "transfer_failures")
    assert row["n"] == 1 and row["role"] == "engine"
    assert "from 2025-04-14 03:56:41" in row["summary"]
    assert "backend mooncake; cause Unexpected code in http response ×1" in row["summary"]


def test_nixl_remote_disconnect_is_the_cause_and_ucx_lines_are_counted(workdir):
    """batch3/04: 4 "NIXL transport error for room 6555093254675405189: NIXL_ERR_REMOTE_DISCONNECT" on
    TP1, TP2, TP5, TP7 (EP equal), 4 Prefill transfer failed of the same room; 17 UCX ERROR lines; 4
    nixl_agent.cpp createXferReq glog errors."""
    out = _out(workdir, "batch3/04")
    summary = _summary(out)
    assert (
        '**What happened**: 4 "NIXL transport error" record(s) on prefill TP1 EP1, TP2 EP2, TP5 EP5, TP7 EP7'
        in summary
    )
    assert "(6555093254675405189); cause NIXL_ERR_REMOTE_DISCONNECT; backend nixl" in summary
    assert "nixl_error" not in summary
    rows = {r["summary"].split("; cause ")[-1]: r for r in _rows(out, "transfer_failures")}
    assert rows["send completion… with error on … Work Request Flushed Error ×17"]["n"] == 17
    assert "backend UCX" in rows["send completion… with error on … Work Request Flushed Error ×17"]["summary"]
    assert rows["createXferReq: metadata for remote agent … not found ×4"]["n"] == 4


def test_a_glog_error_of_a_transfer_engine_file_is_a_finding_and_an_info_line_is_not(tmp_path):
    """The rule, not a case file: a Mooncake glog E line from an RDMA transport file, no room; an I line of
    the same file and an E line of an unrelated file are no transfer failure."""
    log = tmp_path / "x.log"
    log.write_text(
        "E0102 03:04:05.000001  77 rdma_transport.cpp:300] Failed to post send: Connection reset by peer\n"
        "I0102 03:04:05.000002  77 rdma_transport.cpp:310] Transfer slice done\n"
        "E0102 03:04:05.000003  77 tokenizer.cpp:12] Failed to load vocabulary\n"
    )
    ingest([log], tmp_path / "out")
    rows = _rows(tmp_path / "out", "transfer_failures")
    assert [r["n"] for r in rows] == [1]
    assert "backend mooncake; cause Failed to post send: Connection reset by peer ×1" in rows[0]["summary"]


# --- the cause a traceback names, the records' words -----------------------------------------------------


def test_transfer_worker_error_takes_its_cause_from_the_traceback(workdir):
    """real2/06: `Unexpected transfer worker error for room 1788380104266545413` with a traceback ending
    RuntimeError: PD Disaggregation does NOT support PD different TP sizes…; decode room 1788380104266545413
    aborted on TP0."""
    out = _out(workdir, "real2/06")
    summary = _summary(out)
    assert (
        '**What happened**: 1 "Transfer worker error" record(s) on prefill (no time read), 1 room(s) (1788380104266545413); '
        "cause RuntimeError: PD Disaggregation does NOT support PD different TP sizes" in summary
    )
    assert "cause not named" not in summary and "backend nixl" in summary
    texts = [r["summary"] for r in _rows(out, "transfer_failures")]
    assert any(t.startswith('1 "Decode transfer failed" record(s) on decode TP0') for t in texts)
    assert not any(re.search(r"\w+_transfer_failed record", t) for t in texts)


# --- failed requests ---------------------------------------------------------------------------------------


def test_smg_failed_to_select_pd_pair_and_access_500s(workdir):
    """real2/07: smg router ERROR at 12:50:59 "Failed to select PD pair error=No available prefill
    workers…" (no status), two access lines 500 at 12:49:33 and 12:50:33; the decode transfer failure of
    room 5911547551050461423 (12:49:33) still leads."""
    out = _out(workdir, "real2/07")
    summary = _summary(out)
    assert '**What happened**: 1 "Decode transfer failed" record(s) on decode TP0' in summary
    assert "(5911547551050461423); cause prefill_dead" in summary
    by_role = {r["role"]: r for r in _rows(out, "failed_requests")}
    assert by_role["router"]["summary"] == (
        "Failed requests on router: 1 ERROR record(s) without a status at 2026-04-06 12:50:59 UTC; "
        "POST /v1/chat/completions; errors: Failed to select PD pair error=No available prefill workers "
        "(all circuits open or unhealthy)"
    )
    assert by_role["unknown"]["n"] == 2
    assert (
        "2 request(s) answered 5xx (500×2) from 2026-04-06 12:49:33 to 12:50:33"
        in by_role["unknown"]["summary"]
    )


def test_a_router_error_without_its_time_is_still_a_failed_request(workdir):
    """batch3/09: line 1 starts at the tracing target `smg::routers::http::pd_router: …pd_router.rs:172:
    Failed to select PD pair error=Policy consistent_hashing failed…`, with no time; the INFO
    service_discovery record and the `// Prefill Node removed` comment are no failure."""
    out = _out(workdir, "batch3/09")
    summary = _summary(out)
    assert (
        "**What happened**: Failed requests on router: 1 ERROR record(s) without a status (no time read); "
        "errors: Failed to select PD pair error=Policy consistent_hashing failed to select a prefill worker."
        in summary
    )
    assert "Prefill Node removed" not in summary
    assert "**Impact**: 1 router ERROR record(s) of a failed request without a status." in summary
    ((errors,),) = sql(out, "SELECT errors FROM impact WHERE role = 'router'")
    assert errors == 1


def test_a_router_error_line_cut_short_is_a_failed_request(workdir):
    """sglang/12: router ERROR at 21:49:19 on POST /generate (request_id gnt-T1DkMPsWX1SOfuePNC4g04oV),
    the line cut short by the paste."""
    out = _out(workdir, "sglang/12")
    summary = _summary(out)
    assert (
        "**What happened**: Failed requests on router: 1 ERROR record(s) without a status at "
        "2025-10-29 21:49:19 UTC; POST /generate; errors: Failed to select PD pair" in summary
    )
    assert "**When and where**: 2025-10-29 21:49:19 UTC, router" in summary


# --- lone aborts ---------------------------------------------------------------------------------------------


def test_a_lone_client_disconnect_is_a_finding(workdir):
    """sglang/18: one client-disconnect abort, rid 61165a643f00435ca1112901a78071f7, no time."""
    out = _out(workdir, "sglang/18")
    summary = _summary(out)
    assert (
        "**What happened**: 1 request(s) aborted (no time read): "
        "rid 61165a643f00435ca1112901a78071f7; reason Request is disconnected from the client side (type 3)"
        in summary
    )
    assert "**Impact**: 1 request(s) aborted." in summary


def test_an_abortreq_on_decode_is_a_lone_abort_under_its_transfer_failure(workdir):
    """sglang/01: decode TP0, rid 78fde411d57a4d7791b63963eac74968, room 4793981895866140836, "Aborted by
    AbortReq." at 16:39:09: the transfer failure leads, the abort is a finding below it."""
    out = _out(workdir, "sglang/01")
    summary = _summary(out)
    assert '**What happened**: 1 "Decode transfer failed" record(s) on decode TP0' in summary
    (row,) = _rows(out, "request_aborts")
    assert row["summary"] == (
        "1 request(s) aborted on decode TP0 at 2025-11-05 16:39:09: rid 78fde411d57a4d7791b63963eac74968, "
        "room 4793981895866140836; reason Aborted by AbortReq. (transfer_aborted)"
    )


def test_two_aborts_of_different_rooms_stay_apart(workdir):
    """batch3/10: prefill room 389535395827821955 (rid 894df0a7…) and decode room 6531607133299052019
    (rid 909f0055…), both "Aborted by AbortReq." on rank 0: two findings, never one room for both."""
    out = _out(workdir, "batch3/10")
    rows = {r["role"]: r for r in _rows(out, "request_aborts")}
    assert set(rows) == {"prefill", "decode"}
    assert "room 389535395827821955" in rows["prefill"]["summary"]
    assert "6531607133299052019" not in rows["prefill"]["summary"]
    assert "room 6531607133299052019" in rows["decode"]["summary"]
    assert "389535395827821955" not in rows["decode"]["summary"]
    assert rows["prefill"]["ranks"] == rows["decode"]["ranks"] == ["TP0"]
    assert "1 request(s) aborted on decode; 1 request(s) aborted on prefill" in _summary(out)


def test_a_crash_or_timeout_still_leads_over_the_new_kinds():
    order = findings_mod.MAIN_ORDER
    for kind in ("failed_requests", "request_aborts"):
        assert order.index(kind) > max(
            order.index(k) for k in ("scheduler_crash", "collective_timeout", "stop")
        )
    assert order.index("request_aborts") > order.index("abort_burst")


def test_b6_06_a_client_answer_that_finished_as_an_abort_is_an_aborts_row():
    """batch6/06 (a curl answer pasted before a shell prompt): the response body's
    finish_reason is an abort carrying the decode side's transfer failure for its room."""
    from logcorr.analysis import saved

    case = next((Path(__file__).parent / "cases" / "batch6").glob("06_*.log"))
    rows = saved.query(
        ingested(case), "SELECT role, rid, bootstrap_room, abort_kind, reason FROM aborts"
    ).rows()
    assert [r[:4] for r in rows] == [
        ("decode", "c564d0c547f945aa987620f1255b838d", 2170015846053279415, "finish_abort")
    ]
    assert rows[0][4].startswith("Decode transfer failed for request rank=0")
