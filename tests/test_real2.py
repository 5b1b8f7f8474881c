"""The second batch of real excerpts (tests/cases/real2/README.md): each file ingested alone (and 08+09
together), the values the README names asserted on the tables, not on the summary."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import CASES, ingested

REAL2 = CASES / "real2"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("real2")


def out_of(workdir: Path, *names: str) -> Path:
    """The shared, read-only OUT of the named files ingested together (``ingested``: once per run; one
    file alone is the OUT test_cases_data reads). ``workdir`` is not used any more (kept for the callers)."""
    return ingested(*(REAL2 / n for n in names))


def table(out: Path, name: str) -> pl.DataFrame:
    files = sorted((out / name).glob("**/*.parquet"))
    return pl.concat([pl.read_parquet(f, hive_partitioning=False) for f in files], how="vertical_relaxed")


def lines_of(name: str) -> int:
    return len((REAL2 / name).read_text().splitlines())


FILES = sorted(p.name for p in REAL2.glob("*") if p.name not in ("README.md", "expect.toml"))


@pytest.mark.parametrize("name", FILES)
def test_every_file_is_read_whole(workdir, name):
    ev = table(out_of(workdir, name), "events")
    assert int(ev["n_lines"].sum()) == lines_of(name)
    assert ev.filter(pl.col("ts").dt.year() < 2000).height == 0  # no 1970 invented


def test_01_compose_services_under_markdown_residue(workdir):
    out = out_of(workdir, "01_docker_compose_2p2d_mooncake_tcp.log")
    ev = table(out, "events").filter(~pl.col("message").str.starts_with("# source"))
    units = ev.group_by("unit", "role").len().sort("unit")
    assert units.rows() == [
        ("qwen3-32b-sglang-2p2d-decode-0-1", "decode", 1),
        ("qwen3-32b-sglang-2p2d-prefill-0-1", "prefill", 3),
    ]
    b = table(out, "batches").sort("role")
    d, p = b.row(0, named=True), b.row(1, named=True)
    assert p["role"] == "prefill" and p["ts"] == datetime(2026, 4, 30, 16, 2, 25, tzinfo=UTC)
    assert p["tp_rank"] is None
    assert (p["new_seq"], p["new_token"], p["cached_token"], p["token_usage"]) == (1, 276, 8657, 0.25)
    assert (p["running_req"], p["queue_req"], p["prealloc_req"], p["inflight_req"]) == (0, 8, 24, 8)
    assert p["input_throughput"] == 47.86
    assert (d["running_req"], d["token"], d["token_usage"], d["pre_allocated_usage"]) == (
        1,
        240492,
        0.92,
        0.88,
    )
    assert (d["prealloc_req"], d["transfer_req"], d["retracted_req"], d["queue_req"]) == (6, 26, 0, 0)
    assert d["gen_throughput"] == 51.45
    glog = ev.filter(pl.col("message").str.contains("TcpTransport::startTransfer"))
    assert glog.height == 1 and glog["level"][0] == "ERROR" and glog["role"][0] == "prefill"
    assert glog["log_ts"][0] == datetime(2026, 4, 30, 16, 2, 26, 14493)
    assert glog["message"][0].startswith("E0430 16:02:26.014493")
    session = ev.filter(pl.col("message").str.contains("Session 10.0.9.1:15004 failed."))
    assert session.height == 1 and session["role"][0] == "prefill"


def test_02_router_failure_and_decode_500_in_one_second(workdir):
    out = out_of(workdir, "02_router_pd_decode_500_mooncake_readbody.log")
    req = table(out, "requests")
    router = req.filter(pl.col("role") == "router").sort("event_id")
    assert router["level"].to_list() == ["ERROR", "ERROR"]
    assert router["decode_url"][0] == "http://10.0.9.2:50000" and router["status"][0] == 500
    second = router.row(1, named=True)
    assert (second["request_id"], second["status"]) == ("cmpl-hvNcVSx9FaPb13dmSHtom1fF", 500)
    assert second["latency_ms"] == pytest.approx(2041.450065)
    access = req.filter(pl.col("path") == "/v1/completions", pl.col("role") != "router")
    assert access.select("method", "status", "client").rows() == [("POST", 500, "10.0.9.3:42180")]
    ev = table(out, "events")
    glog = ev.filter(pl.col("message").str.contains("Session::readBody failed"))
    assert glog.height == 2 and set(glog["level"]) == {"ERROR"}
    assert glog["log_ts"].to_list() == [
        datetime(2025, 9, 4, 7, 15, 26, 325699),
        datetime(2025, 9, 4, 7, 15, 26, 325783),
    ]
    assert {t.replace(microsecond=0) for t in req["ts"]} == {datetime(2025, 9, 4, 7, 15, 26, tzinfo=UTC)}


def test_03_propagated_failure_on_two_decode_ranks(workdir):
    out = out_of(workdir, "03_decode_unknown_reason_other_rank_mooncake.log")
    te = table(out, "transfer_errors").sort("tp_rank")
    assert te["tp_rank"].to_list() == [1, 2] and set(te["role"]) == {"decode"}
    assert set(te["rid"]) == {"3ce84ffb82764f45b028dd8e6c4beed1"}
    assert set(te["bootstrap_room"]) == {1655955501905217457}
    assert set(te["reason"]) == {"Failed due to an unknown reason from another rank"}
    assert set(te["cause"]) == {"other_rank"}  # propagated, not the root cause
    req = table(out, "requests").sort("event_id")
    assert req.select("method", "path", "status").rows() == [
        ("POST", "/v1/chat/completions", 200),
        ("GET", "/health", 200),
        ("GET", "/health", 200),
        ("GET", "/health", 200),
    ]
    assert {c.split(":")[0] for c in req["client"]} == {"10.0.9.4"}


def test_04_truncated_traceback_names_no_exception(workdir):
    out = out_of(workdir, "04_prefill_scheduler_exception_check_status_truncated.log")
    tb = table(out, "tracebacks")
    assert tb.height == 1
    row = tb.row(0, named=True)
    assert (row["tp_rank"], row["role"], row["n_frames"]) == (2, "prefill", 6)
    assert row["exception"] is None  # the issue title says KeyError; the text does not
    assert (row["function"], row["line"]) == ("poll", 1120)
    assert row["file"].endswith("disaggregation/mooncake/conn.py")


def test_05_tsv_envelope_cp_ranks_and_finish(workdir):
    out = out_of(workdir, "05_tsv_export_cp_pp_finish_abort_prefill_batches.log")
    ev = table(out, "events").filter(~pl.col("message").str.starts_with("# source"))
    assert ev.height == 12
    assert ev["ts"].min() == datetime(2026, 5, 20, 8, 2, 44, 496000, tzinfo=UTC)
    assert ev["ts"].max() == datetime(2026, 5, 20, 8, 2, 44, 797000, tzinfo=UTC)
    b = table(out, "batches")
    dec = b.filter(pl.col("batch_type") == "decode")
    assert dec.select(
        "pp_rank", "tp_rank", "running_req", "token", "token_usage", "gen_throughput", "queue_req"
    ).rows() == [(0, 0, 4, 477376, 0.90, 199.95, 6)]
    pre = b.filter(pl.col("batch_type") == "prefill").sort("tp_rank")
    assert pre["tp_rank"].to_list() == list(range(8))
    assert set(pre["new_token"]) == {128} and set(pre["cached_token"]) == {57856}
    assert (
        set(pre["token_usage"]) == {0.97} and set(pre["running_req"]) == {3} and set(pre["queue_req"]) == {5}
    )
    fin = ev.filter(pl.col("kind") == "request_finished")
    assert fin.height == 1 and fin["rid"][0] == "bf890d9ca8ce4008bef7ef25d97f8fba"
    assert fin["bootstrap_room"][0] is None
    req = table(out, "requests")
    assert req.select("status", "client").rows() == [(200, "10.0.9.5:54466")]
    last = ev.sort("ts").tail(1).row(0, named=True)
    assert last["kind"] == "traceback" and last["tp_rank"] == 7


def test_06_room_without_key_and_join_by_room(workdir):
    out = out_of(workdir, "06_nixl_unexpected_transfer_worker_error_prefill_decode_pods.log")
    te = table(out, "transfer_errors").sort("event_id")
    worker = te.filter(pl.col("error_kind") == "transfer_worker_error")
    assert worker.height == 1 and worker["bootstrap_room"][0] == 1788380104266545413
    assert worker["role"][0] == "prefill" and worker["exception"][0] == "RuntimeError"
    assert "PD Disaggregation does NOT support PD different TP sizes" in worker["reason"][0]
    assert worker["backend"][0] == "nixl"  # its traceback runs in nixl/conn.py; the other lines name none
    pf = te.filter(pl.col("error_kind") == "prefill_transfer_failed")
    assert pf.select("rid", "tp_rank", "bootstrap_room", "exception").rows() == [
        ("5b02aee35dae49aba98a333ce89964e6", 0, None, None)
    ]
    dec = te.filter(pl.col("error_kind") == "decode_transfer_failed")
    assert dec.select("rid", "tp_rank", "bootstrap_room", "role").rows() == [
        ("a1af5d2d90324da292ed07c52b30467b", 0, 1788380104266545413, "decode")
    ]
    ab = table(out, "aborts")
    assert ab.select("rid", "bootstrap_room").rows() == [
        ("a1af5d2d90324da292ed07c52b30467b", 1788380104266545413)
    ]
    req = table(out, "requests")
    assert req.select("method", "path", "status", "client").rows() == [
        ("POST", "/v1/completions", 500, "10.0.9.6:54838")
    ]
    ev = table(out, "events")
    assert ev.filter(pl.col("message").str.starts_with("# decode pod")).height == 1  # kept, never glued


def test_07_router_decode_prefill_blocks(workdir):
    out = out_of(workdir, "07_smg_router_decode_prefill_blocks_mooncake_not_alive.log")
    req = table(out, "requests")
    smg = req.filter(pl.col("role") == "router")
    assert smg.select("request_id", "level").rows() == [("chatcmpl-DInNanQcl0a3cC0qma4tEQXo", "ERROR")]
    te = table(out, "transfer_errors").sort("ts")
    assert te.select("role", "tp_rank", "rid", "bootstrap_room").rows() == [
        ("decode", 0, "9904a40eb57148b3b5aac094b8ee78df", 5911547551050461423),
        ("prefill", 0, "74eed796688843628de7de173376a6ce", 2888068774202995905),
    ]
    assert te["cause"].to_list() == ["prefill_dead", "decode_dead"]
    assert te["backend"].to_list() == [None, "mooncake"]  # only the prefill line names its backend
    access = req.filter(pl.col("status") == 500, pl.col("role") != "router")
    assert access["client"].to_list() == ["10.0.9.7:57586", "10.0.9.7:38108"]


def test_08_eight_prefill_failures_one_room(workdir):
    out = out_of(workdir, "08_prefill_mooncake_session_not_alive_tp16_req_dump.log")
    te = table(out, "transfer_errors").sort("event_id")
    assert te["tp_rank"].to_list() == [5, 4, 3, 2, 1, 10, 9, 8]
    assert set(te["rid"]) == {"31c9952e7f0c44fa94ddbeec39b006a3"}
    assert set(te["bootstrap_room"]) == {4073374190146881990} and set(te["role"]) == {"prefill"}
    peers = te["peer"].to_list()
    assert peers == [
        "10.0.9.9:15070", "10.0.9.9:16911", "10.0.9.9:15799", "10.0.9.9:16422", "10.0.9.9:16960",
        "10.0.9.11:16765", "10.0.9.11:15467", "10.0.9.11:16183",
    ]  # fmt: skip
    assert set(te["cause"]) == {"decode_dead"}
    rooms = table(out, "rooms")
    assert set(rooms["rid"]) == {"31c9952e7f0c44fa94ddbeec39b006a3"}
    b = table(out, "batches")
    assert b.select("tp_rank", "new_token", "prealloc_req", "inflight_req", "input_throughput").rows() == [
        (0, 1, 0, 0, 0.08)
    ]
    req = table(out, "requests")
    assert req.select("status", "client").rows() == [(500, "10.0.9.10:48574")]


def test_08_and_09_join_by_room_not_by_rid(workdir):
    out = out_of(
        workdir,
        "08_prefill_mooncake_session_not_alive_tp16_req_dump.log",
        "09_decode_failed_get_kvcache_midline_paste.log",
    )
    te = table(out, "transfer_errors")
    dec = te.filter(pl.col("role") == "decode").sort("event_id")
    assert dec["tp_rank"].to_list() == [9, 8, 1, 2]
    assert set(dec["rid"]) == {"32b8f521b1ec468a98cb5d2da98654e2"}
    assert set(dec["cause"]) == {"prefill_dead"}
    rooms = table(out, "rooms").filter(pl.col("bootstrap_room") == 4073374190146881990)
    assert sorted(rooms.select("role", "rid").rows()) == [
        ("decode", "32b8f521b1ec468a98cb5d2da98654e2"),
        ("prefill", "31c9952e7f0c44fa94ddbeec39b006a3"),
    ]
    assert rooms.height == 2  # one row per (rid, room, role) across the ingest


def test_10_grouped_threads_share_their_stack(workdir):
    out = out_of(workdir, "10_pyspy_megatron_grouped_threads_allreduce_recv.txt")
    caps = table(out, "captures").sort("thread_id")
    assert caps["thread_id"].to_list() == list(range(686181, 686189))
    assert caps["wait_class"].to_list() == ["all_reduce"] * 4 + ["recv"] * 4
    assert caps["n_frames"].to_list() == [10] * 4 + [12] * 4
    assert caps["pid"].drop_nulls().len() == 0  # no Process header: no pid invented
    st = table(out, "stacks")
    inner = st.filter(pl.col("depth") == 0).sort("thread_id")
    assert inner["function"].to_list() == ["all_reduce"] * 4 + ["recv"] * 4


def test_11_nccl_watchdog_ranks_and_work_numbers(workdir):
    out = out_of(workdir, "11_nccl_watchdog_allreduce_seqnum1_multirank.log")
    wd = table(out, "watchdogs").filter(pl.col("nccl_op").is_not_null()).sort("event_id")
    assert wd.select(
        "tp_rank", "nccl_seq", "nccl_op", "numel_in", "numel_out", "ran_for_ms", "timeout_s"
    ).rows() == [
        (1, 1, "ALLREDUCE", 128, 128, 600003, 600.0),
        (0, 1, "ALLREDUCE", 128, 128, 600009, 600.0),
    ]
    work = table(out, "watchdogs").filter(pl.col("last_enqueued").is_not_null()).sort("event_id")
    assert work.select("tp_rank", "last_enqueued", "last_completed").rows() == [(1, 1, -1), (0, 1, -1)]
    ev = table(out, "events")
    nccl = ev.filter(pl.col("message").str.contains("Connection closed by localRank 1"))
    assert nccl.height == 1 and nccl["pid"][0] == 5801 and nccl["n_lines"][0] == 1


def test_12_pyspy_failure_before_the_watchdog(workdir):
    out = out_of(workdir, "12_watchdog_dp4_tp4_midline_paste_pyspy_missing.log")
    wd = table(out, "watchdogs").sort("event_id")
    assert wd.select("watchdog_kind", "dp_rank", "tp_rank").rows() == [
        ("pyspy_failed", 4, 4),
        ("watchdog_timeout", 4, 4),
    ]
    assert wd["target_pid"][0] == 113688 and wd["timeout_s"][1] == 300.0


def test_13_debug_info_records_keep_their_pool_lines(workdir):
    out = out_of(workdir, "13_scheduler_debug_info_two_ranks_full_swa_pools.log")
    ev = table(out, "events").filter(pl.col("message").str.contains("Scheduler debug info")).sort("event_id")
    assert ev["tp_rank"].to_list() == [1, 7]
    assert "[full] total=4974080" in ev["message"][0] and "[swa] total=497408" in ev["message"][0]
    assert set(ev["rid"]) == {"3e64727659014c729d0ee75279c38a28"}
    assert ev["ts"][0] == datetime(2026, 8, 4, 11, 58, 42, tzinfo=UTC)


def test_times_printed_without_a_zone_are_said_to_be_read_as_utc(workdir):
    out = out_of(workdir, "03_decode_unknown_reason_other_rank_mooncake.log")
    notes = table(out, "sources")["notes"][0]
    assert "6 records carry only a time printed without a zone" in notes
    tsv = table(out_of(workdir, "05_tsv_export_cp_pp_finish_abort_prefill_batches.log"), "sources")["notes"][
        0
    ]
    assert tsv is None or "without a zone" not in tsv  # the export envelope's times are UTC


def test_10_the_report_names_both_waits_of_the_grouped_dump(workdir):
    from logcorr.render.report import report

    text = report(out_of(workdir, "10_pyspy_megatron_grouped_threads_allreduce_recv.txt"))
    line = next(x for x in text.splitlines() if x.startswith("- Unknown role"))
    assert "cannot be told: no rank captured" in line  # no Process header: no rank, no pid
    assert "all_reduce: thread 686181,thread 686182,thread 686183,thread 686184" in line
    assert "recv: thread 686185,thread 686186,thread 686187,thread 686188" in line
