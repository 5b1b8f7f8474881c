"""SGLang engine lines (parsers/sglang.py): every pattern's sample, every sglang row of the cases
README with its real values, synthetic PD failures, and property tests (round-trip, extra keys,
never raising)."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logcorr.ingest import records_from_text
from logcorr.parsers import engine_stats, request_log, router, sglang, sglang_fields, sglang_lines
from logcorr.store.schema import (
    ABORTS,
    ENGINE_STATS,
    KINDS,
    REQ_TIME_STATS,
    REQUEST_LOG,
    RETRACTIONS,
    TRACEBACKS,
    TRANSFER_ERRORS,
    WATCHDOGS,
)

CASES = Path(__file__).parent / "cases"
SAMPLE = Path(__file__).parents[1] / "sample_logs"


def case(name: str) -> pl.DataFrame:
    """The ``ev`` frame of one real case file (skips when shared/cases is not beside the repo)."""
    path = CASES / "sglang" / name
    if not path.exists():
        pytest.skip(f"real case {name} not found under {CASES}")
    return records_from_text(without_notes(path.read_text()), name)


def without_notes(text: str) -> str:
    """A case file's text without the ``#`` note lines at its top (``# source: URL``): the log itself."""
    lines = text.splitlines(keepends=True)
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return "".join(lines)


def ev_of(text: str, role: str = "unknown") -> pl.DataFrame:
    return records_from_text(text, "test.log").with_columns(pl.lit(role).alias("role"))


def kinds(ev: pl.DataFrame) -> list[str]:
    return sglang.classify(ev)["kind"].to_list()


# ------------------------------------------------------------------------------ pattern tables


@pytest.mark.parametrize("pattern", sglang_lines.ENGINE_PATTERNS, ids=lambda p: p.name)
def test_every_pattern_sample_is_recognised(pattern):
    ev = ev_of(pattern.sample)
    assert ev.height == 1
    got = sglang.recognise(sglang.base_columns(ev))
    assert got["pattern"][0] == pattern.name
    assert kinds(ev) == [pattern.kind]
    assert pattern.since and pattern.anchor in ev["body"][0]


# The table each kind of pattern fills, with its builder: a pattern's named groups are its columns.
BUILDERS = {
    "transfer_error": (sglang.transfer_errors, TRANSFER_ERRORS),
    "abort": (sglang.aborts, ABORTS),
    "watchdog": (sglang.watchdogs, WATCHDOGS),
    "retraction": (sglang.retractions, RETRACTIONS),
    "traceback": (sglang.tracebacks, TRACEBACKS),
    "request_received": (request_log.request_log, REQUEST_LOG),
    "request_finished": (request_log.request_log, REQUEST_LOG),
    "req_time_stats": (sglang.req_time_stats, REQ_TIME_STATS),
    "engine_stats": (engine_stats.engine_stats, ENGINE_STATS),
}
FIELD_RULES = (
    [(rule, TRANSFER_ERRORS) for rule in sglang_fields.TRANSFER_ERROR_FIELDS]
    + [(rule, ABORTS) for rule in sglang_fields.ABORT_FIELDS]
    + [(rule, TRACEBACKS) for rule in sglang_fields.TRACEBACK_FIELDS]
    + [(rule, REQUEST_LOG) for rule in sglang_fields.REQUEST_LOG_FIELDS]
    + [(rule, REQ_TIME_STATS) for rule in sglang_fields.TIME_STATS_FIELDS]
    + [(rule, WATCHDOGS) for rule in sglang_fields.WATCHDOG_FIELDS]
)


@pytest.mark.parametrize(
    "pattern", [p for p in sglang_lines.ENGINE_PATTERNS if p.yields], ids=lambda p: p.name
)
def test_every_pattern_sample_yields_its_fields(pattern):
    build, _ = BUILDERS[pattern.kind]
    row = build(ev_of(pattern.sample)).row(0, named=True)
    for column, value in pattern.yields.items():
        assert row[column] == value, (pattern.name, column)


@pytest.mark.parametrize("rule,table", FIELD_RULES, ids=lambda x: getattr(x, "name", ""))
def test_every_field_rule_sample_yields_its_fields(rule, table):
    if rule.scope in ("exception_line", "last_frame"):  # a traceback's part: put the sample where it is found
        text = 'Traceback (most recent call last):\n  File "/x.py", line 1, in f\n'
        text += f"    {rule.sample}\n" if rule.scope == "last_frame" else f"    g()\n{rule.sample}"
        if rule.scope == "last_frame":
            text = text.replace('File "/x.py", line 1, in f\n    ', "")
    else:
        text = rule.sample
    got = sglang.extract_fields(pl.DataFrame({"body": [text]}), [rule], table).row(0, named=True)
    assert rule.since and rule.yields
    for column, value in rule.yields.items():
        assert got[column] == value, (rule.name, column, text)


def test_every_named_group_is_a_column_of_its_table():
    rules = [
        (p, BUILDERS[p.kind][1]) for p in sglang_lines.ENGINE_PATTERNS if p.kind in BUILDERS
    ] + FIELD_RULES
    for rule, table in rules:
        for name in re.findall(r"\(\?P<(\w+)>", rule.regex):
            seconds = name.endswith(("_ms", "_ns")) and f"{name[:-3]}_s" in table.schema
            signal = name == "exit_signal" and "exit_code" in table.schema  # fills exit_code as -N
            assert name in table.schema or name.startswith("_") or seconds or signal, (rule.name, name)


def test_anchors_are_not_substrings_of_each_other():
    # extract_many reports the match that ends first: a shorter anchor inside a longer one would hide it.
    anchors = sglang_lines.ANCHORS
    for a in anchors:
        for b in anchors:
            assert a == b or a not in b, (a, b)


def test_pattern_names_are_unique_and_kinds_known():
    names = [p.name for p in sglang.ALL_PATTERNS]
    assert len(names) == len(set(names))
    assert {p.kind for p in sglang.ALL_PATTERNS} <= set(KINDS)


@pytest.mark.parametrize("name,rx,sample", sglang.CAUSES, ids=lambda x: x if isinstance(x, str) else "")
def test_every_cause_sample_matches(name, rx, sample):
    assert re.search(rx, sample), name


def test_batch_field_keys_unique():
    keys = [f.key for f in sglang.BATCH_FIELDS]
    cols = [f.column for f in sglang.BATCH_FIELDS]
    assert len(keys) == len(set(keys)) and len(cols) == len(set(cols))


# ------------------------------------------------------------------------------ the real cases


def test_case_01_decode_transfer_failed_abortreq(tmp_path):
    ev = case("01_decode_transfer_failed_abortreq_tp.log")
    te = sglang.transfer_errors(ev)
    assert te.height == 1
    row = te.row(0, named=True)
    assert row["role"] == "decode" and row["tp_rank"] == 0
    assert row["rid"] == "78fde411d57a4d7791b63963eac74968"
    assert row["bootstrap_room"] == 4793981895866140836
    assert row["reason"] == "Aborted by AbortReq."
    assert row["error_kind"] == "decode_transfer_failed" and row["cause"] == "aborted"
    assert row["exception"] == "KVTransferError"
    ab = sglang.aborts(ev)
    assert ab.select("abort_kind", "bootstrap_room", "rid").rows() == [
        ("transfer_aborted", 4793981895866140836, "78fde411d57a4d7791b63963eac74968")
    ]
    req = router.requests(ev)
    assert req.height == 4
    assert sorted(req["status"].to_list()) == [200, 200, 200, 404]
    assert req.filter(pl.col("path") == "/health").height == 2
    assert kinds(ev).count("health") == 2 and kinds(ev).count("request") == 2
    rooms = sglang.rooms(ev)
    assert rooms.select("rid", "bootstrap_room", "role").rows() == [
        ("78fde411d57a4d7791b63963eac74968", 4793981895866140836, "decode")
    ]


def test_case_02_prefill_bootstrap_failed_and_router():
    ev = case("02_prefill_bootstrap_failed_tp_ep_and_router.log")
    te = sglang.transfer_errors(ev)
    assert te.height == 3
    assert set(te["bootstrap_room"]) == {7561186998443553199}
    assert te["tp_rank"].to_list() == [0, 1, 7]
    assert te["ep_rank"].to_list() == [0, 1, 7]
    assert te["rid"].n_unique() == 1 and te["rid"][0] == "60d582b2010846a8b337cf88963116e7"
    assert set(te["role"]) == {"prefill"} and set(te["error_kind"]) == {"prefill_bootstrap_failed"}
    req = router.requests(ev)
    assert req.height == 1
    r = req.row(0, named=True)
    assert r["level"] == "ERROR" and r["role"] == "router"
    assert r["decode_url"] == "http://10.0.0.50:30000"
    assert r["target"] == "sglang_router_rs::routers::http::pd_router"
    # the pasted note "# prefill server log lines:" is a record of its own, not glued to the router line
    assert sglang.classify(ev)["content_role"].to_list() == ["router", None, "prefill", "prefill", "prefill"]
    assert sglang.rooms(ev)["n_events"].to_list() == [3]


def test_case_04_watchdog_and_pyspy_missing():
    ev = case("04_watchdog_old_format_pyspy_missing.log")
    assert ev.height == 6  # lines out of time order are all kept
    wd = sglang.watchdogs(ev)
    timeout = wd.filter(pl.col("watchdog_kind") == "watchdog_timeout")
    assert timeout.select("tp_rank", "timeout_s").rows() == [(3, 300.0)]
    failed = wd.filter(pl.col("watchdog_kind") == "pyspy_failed")
    assert failed["tp_rank"].to_list() == [2] and failed["target_pid"].to_list() == [171]
    assert "py-spy: not found" in failed["reason"][0]
    req = router.requests(ev)
    assert req.select("method", "path", "status").rows() == [("POST", "/v1/completions", 200)] * 4


def test_case_05_watchdog_multirank():
    ev = case("05_watchdog_dp_tp_multirank.log")
    assert ev.height == 7  # blank lines between ranks are not records
    wd = sglang.watchdogs(ev)
    timeouts = wd.filter(pl.col("watchdog_kind") == "watchdog_timeout")
    assert timeouts.select("dp_rank", "tp_rank").rows() == [(0, 2), (1, 5)]
    info = wd.filter(pl.col("watchdog_kind") == "debug_info")
    assert info["rid"].to_list() == [
        "8159_6b91836ecc5e4699a56fcb89f95e5071",
        "8159_3d71815df48f49eb9b8a6e6a3494bc2c",
    ]
    assert sglang.classify(ev)["rid"].drop_nulls().to_list() == info["rid"].to_list()


def test_case_06_compose_prefix_pyspy_and_watchdog():
    ev = case("06_pyspy_dump_docker_compose_prefix.log")
    assert not ev["message"].str.contains("sglang-1  |", literal=True).any()
    assert kinds(ev) == ["pyspy", "watchdog", "pyspy"]
    dump = ev.row(2, named=True)
    assert dump["tp_rank"] == 6 and dump["body"].startswith("Pyspy dump for PID 309:")
    assert "Process 309: sglang::scheduler_TP6" in dump["message"]
    assert "    _apply (penaltylib/min_new_tokens.py:78)" in dump["message"]
    assert sglang.watchdogs(ev)["tp_rank"].to_list() == [3]


def test_case_07_bare_pyspy_dump():
    ev = case("07_pyspy_dump_pp_disagg_prefill_hang.log")
    assert ev.height == 1 and ev["n_lines"][0] == 11
    assert kinds(ev) == ["pyspy"]
    assert ev["message"][0].startswith("Process 3438121: sglang::scheduler_DP1_TP1_EP1_PP0")


def test_case_09_native_dump_without_rank_prefix():
    ev = case("09_pyspy_native_crashdump_main_process.log")
    assert ev.height == 1 and kinds(ev) == ["pyspy"]
    assert ev["tp_rank"][0] is None and ev["n_lines"][0] == 25
    assert ev["ts"][0] == datetime(2026, 7, 14, 8, 34, 44, tzinfo=UTC)


def test_case_10_old_prefill_batch_and_warmup_rid():
    ev = case("10_old_prefill_batch_dot_unbootstrapped_fake_sender.log")
    b = sglang.batches(ev)
    assert b.height == 1
    row = b.row(0, named=True)
    assert (row["batch_type"], row["tp_rank"], row["role"]) == ("prefill", 0, "prefill")
    assert (row["new_seq"], row["new_token"], row["cached_token"]) == (1, 4, 0)
    assert (row["unbootstrapped_req"], row["transferring_req"], row["queue_req"], row["running_req"]) == (
        0,
        0,
        0,
        0,
    )
    assert row["token_usage"] == 0.0 and row["extra"] is None
    c = sglang.classify(ev)
    warmup = ev["body"].str.starts_with("End of prefill warmup")
    assert c.filter(warmup)["rid"].to_list() == ["a6c39c5108c645a79f6d9a80fa98fc4a"]


def test_case_11_custom_logging_config_batches():
    ev = case("11_prefill_batch_custom_logging_config.log")
    b = sglang.batches(ev)
    assert b["prealloc_req"].to_list() == [18, 22, 27, 28]
    assert b["inflight_req"].to_list() == [1, 1, 1, 1]
    assert b["input_throughput"].to_list() == [2.49, 1.0, 1.0, 5.19]
    assert b["graph"].to_list() == [False] * 4 and set(b["graph_kind"]) == {"cuda"}
    assert (
        b.select(pl.col(["dp_rank", "pp_rank", "tp_rank", "ep_rank"]).is_null().all()).row(0) == (True,) * 4
    )
    assert set(b["level"]) == {"INFO"} and b["extra"].null_count() == 4


def test_case_12_router_span_request_id():
    ev = case("12_router_span_request_id_error.log")
    req = router.requests(ev)
    r = req.row(0, named=True)
    assert (r["level"], r["method"], r["path"], r["request_id"]) == (
        "ERROR",
        "POST",
        "/generate",
        "gnt-T1DkMPsWX1SOfuePNC4g04oV",
    )
    assert r["message"].endswith("(all circuits open or un")  # cut by the paste, kept whole
    assert r["ts"] == datetime(2025, 10, 29, 21, 49, 19, tzinfo=UTC)
    assert ev["message"][0].endswith("un")


def test_case_13_traceback_ms_timestamp():
    ev = case("13_scheduler_exception_ms_timestamp_disagg_decode.log")
    assert ev.height == 1 and ev["n_lines"][0] == 13
    assert ev["ts"][0] == datetime(2026, 5, 27, 23, 38, 59, 96000, tzinfo=UTC)
    assert kinds(ev) == ["traceback"]
    tb = sglang.tracebacks(ev).row(0, named=True)
    assert tb["tp_rank"] == 1 and tb["component"] == "Scheduler"
    assert (tb["function"], tb["line"]) == ("process_decode_queue", 1773)
    assert tb["file"].endswith("disaggregation/decode.py") and tb["n_frames"] == 6
    assert tb["exception"] is None  # the excerpt stops before the exception line


def test_case_15_npu_batches():
    ev = case("15_npu_prefill_decode_batch_tp_ep.log")
    b = sglang.batches(ev)
    assert b["batch_type"].to_list() == ["prefill", "decode", "decode", "decode"]
    assert set(b["tp_rank"]) == {0} and set(b["ep_rank"]) == {0}
    dec = b.filter(pl.col("batch_type") == "decode")
    assert dec["accept_len"].to_list() == [3.05, 2.63, 2.83]
    assert dec["accept_rate"].to_list() == [0.68, 0.54, 0.61]
    assert dec["gen_throughput"].to_list() == [239.06, 631.96, 648.87]
    assert dec["token"].to_list() == [233600, 227968, 222720]
    assert set(b["graph_kind"]) == {"npu"} and b["graph"].to_list() == [False, True, True, True]
    pre = b.row(0, named=True)
    assert (pre["new_seq"], pre["new_token"], pre["cached_token"], pre["pending_token"]) == (
        8,
        54400,
        482304,
        0,
    )
    assert pre["input_throughput"] == 2793.64


def test_case_17_trailing_comma_aiohttp_glog():
    ev = case("17_mooncake_bootstrap_aiohttp_access_old_prefill.log")
    b = sglang.batches(ev)
    assert b.select("new_seq", "new_token", "cached_token", "running_req", "queue_req", "extra").rows() == [
        (1, 10, 0, 0, 0, None)
    ]
    req = router.requests(ev)
    assert req["status"].to_list() == [200, 200, 404]
    assert set(req["format"]) == {"aiohttp_access"} and req["method"].to_list() == ["PUT", "PUT", "GET"]
    glog = ev.filter(pl.col("header") == "glog")
    assert glog["level"].to_list() == ["ERROR", "WARNING"]
    assert glog["ts"][0] == datetime(2025, 4, 14, 3, 56, 41, 856248, tzinfo=UTC)
    assert kinds(ev).count("other") == 3  # ready line and both glog lines are kept as other


def test_case_18_client_disconnect_without_timestamp():
    ev = case("18_http_server_client_disconnect.log")
    ab = sglang.aborts(ev)
    assert ab.select("abort_kind", "rid").rows() == [
        ("client_disconnected", "61165a643f00435ca1112901a78071f7")
    ]
    assert ab["ts"][0] is None and ab["reason"][0] == "Request is disconnected from the client side (type 3)"


def test_case_20_nccl_watchdog():
    ev = case("20_nccl_watchdog_dp_reduce_scatter_hang.log")
    assert ev.height == 1 and ev["n_lines"][0] == 6  # the C++ frames are joined to it
    wd = sglang.watchdogs(ev).row(0, named=True)
    assert (wd["watchdog_kind"], wd["tp_rank"], wd["nccl_seq"], wd["nccl_op"]) == (
        "nccl_watchdog",
        3,
        432927,
        "_REDUCE_SCATTER_BASE",
    )
    assert (wd["timeout_s"], wd["ran_for_ms"], wd["numel_in"], wd["numel_out"]) == (
        600.0,
        600045,
        88080384,
        5505024,
    )
    assert wd["level"] == "ERROR"


def test_every_case_file_reads_and_keeps_every_line():
    root = CASES / "sglang"
    if not root.exists():
        pytest.skip("shared/cases not found")
    for path in sorted(root.iterdir()):
        text = path.read_text()
        ev = records_from_text(text, path.name)
        c = sglang.classify(ev)
        assert c.height == ev.height and set(c["kind"]) <= set(KINDS)
        assert sum(ev["n_lines"]) == len(text.splitlines())  # every line, notes and blank lines too
        for fn in (sglang.batches, sglang.aborts, sglang.transfer_errors, sglang.rooms, router.requests):
            fn(ev)


# ------------------------------------------------------------------------------ PD failures (synthetic)

ASSERT_TB = """[2025-10-29 21:40:34 TP{tp}] Unexpected transfer worker error for room 4384674655194745451
Traceback (most recent call last):
  File "/opt/sglang/.venv/lib/python3.12/site-packages/sglang/srt/disaggregation/nixl/conn.py", line 1153, in transfer_worker
    self.transfer_infos[room]
  File "/opt/sglang/.venv/lib/python3.12/site-packages/sglang/srt/disaggregation/nixl/conn.py", line 1203, in send_kv
    assert room in self.transfer_infos
AssertionError"""

OTHER_TB = """[2026-07-21 08:06:26 TP2 EP2] Unexpected transfer worker error for room 5839938415251080346
Traceback (most recent call last):
  File "/x/sglang/srt/disaggregation/nixl/conn.py", line 568, in transfer_worker
    kv_xfer_handle = self.send_kvcache(
nixl_cu13._bindings.nixlNotFoundError: NIXL_ERR_NOT_FOUND"""


def test_assert_transfer_infos_only_when_the_traceback_asserts():
    text = "\n".join(ASSERT_TB.format(tp=tp) for tp in (0, 1, 3)) + "\n" + OTHER_TB
    ev = ev_of(text)
    te = sglang.transfer_errors(ev)
    assert te["error_kind"].to_list() == ["assert_transfer_infos"] * 3 + ["transfer_worker_error"]
    assert te["tp_rank"].to_list() == [0, 1, 3, 2]
    assert te["bootstrap_room"].to_list() == [4384674655194745451] * 3 + [5839938415251080346]
    assert set(te["role"]) == {"prefill"}
    assert te["exception"].to_list() == ["AssertionError"] * 3 + ["nixlNotFoundError"]
    assert te["traceback"][0].startswith("Traceback (most recent call last):") and te["traceback"][
        0
    ].endswith("AssertionError")
    assert te["reason"][3] == "nixl_cu13._bindings.nixlNotFoundError: NIXL_ERR_NOT_FOUND"
    assert te["cause"].to_list() == ["assert_transfer_infos"] * 3 + ["nixl_error"]


def test_source_role_wins_over_content_role():
    ev = ev_of(ASSERT_TB.format(tp=0), role="decode")
    assert sglang.transfer_errors(ev)["role"].to_list() == ["decode"]
    assert sglang.classify(ev)["content_role"].to_list() == ["prefill"]


def test_timeouts_and_other_transfer_failures():
    lines = [
        "[2025-09-01 10:00:00 TP0] Prefill bootstrap failed for request rank=0 req.rid='a1'"
        " req.bootstrap_room=11 with exception KVTransferError(bootstrap_room=11): Request 11 timed out after"
        " 300.0s in KVPoll.Bootstrapping",
        "[2025-09-01 10:00:01 DP1 TP3] Decode transfer failed for request rank=3 decode_req.req.rid='b2'"
        " decode_req.req.bootstrap_room=12 with exception KVTransferError(bootstrap_room=12): Request 12 timed"
        " out after 600.5s in KVPoll.WaitingForInput",
        "[2025-09-01 10:00:02 TP1] Failed to send kv chunk of 13 to 10.0.0.5:17001",
        "[2025-09-01 10:00:03 TP0] Lost connection with prefill instance (bootstrap_addr: 10.0.0.7:8998), 3"
        " requests affected",
        "[2025-09-01 10:00:03 TP0] Let room 14 be failed due to prefill down",
        "[2025-09-01 10:00:04 TP2] Some requests fail to receive KV Cache transfer done signal after"
        " bootstrapping. If a greater mean TTFT is acceptable, you can 'export"
        " SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600' (10 minutes) to relax the timeout condition.",
        "[2025-09-01 10:00:05 TP4] NIXL transport error for room 15: NIXL_ERR_REMOTE_DISCONNECT",
        "[2025-09-01 10:00:06] Request 16 timed out after 30.0s in KVPoll.WaitingForInput",
        "Prefill transfer failed for request rank=5 req.rid='c3' req.bootstrap_room=17 self.pp_rank=1 with"
        " exception: Failed to send kv chunk of 17 to 10.0.0.9:1",
    ]
    # one record per line (the last has no header: it would continue the one before in a file)
    ev = pl.concat([ev_of(line) for line in lines]).with_columns(pl.int_range(pl.len()).alias("event_id"))
    te = sglang.transfer_errors(ev)
    assert te["error_kind"].to_list() == [
        "prefill_bootstrap_failed",
        "decode_transfer_failed",
        "send_kv_chunk_failed",
        "lost_connection",
        "lost_connection",
        "transfer_done_signal_missing",
        "nixl_transport_error",
        "timeout",
        "prefill_transfer_failed",
    ]
    assert te["bootstrap_room"].to_list() == [11, 12, 13, None, 14, None, 15, 16, 17]
    assert te["kv_poll_state"].to_list()[:2] == ["Bootstrapping", "WaitingForInput"]
    assert te["timeout_s"].to_list()[:2] == [300.0, 600.5]
    assert te["cause"].to_list() == [
        "timeout",
        "timeout",
        "send_kv_chunk_failed",
        "lost_connection",
        "lost_connection",
        None,
        "nixl_error",
        "timeout",
        "send_kv_chunk_failed",
    ]
    assert te["role"].to_list() == [
        "prefill",
        "decode",
        "prefill",
        "decode",
        "decode",
        "decode",
        "prefill",
        "decode",
        "prefill",
    ]
    assert te["peer"].to_list()[2:4] == ["10.0.0.5:17001", "10.0.0.7:8998"]
    assert te["reason"][6] == "NIXL_ERR_REMOTE_DISCONNECT"
    last = te.row(8, named=True)  # no header: ranks from the line itself
    assert (last["tp_rank"], last["pp_rank"], last["rid"]) == (5, 1, "c3")
    assert last["reason"] == "Failed to send kv chunk of 17 to 10.0.0.9:1"
    assert te.row(1, named=True)["dp_rank"] == 1


def test_abort_lines_of_every_kind():
    text = "\n".join(
        [
            "[2025-10-29 21:34:40] [http_server] Client disconnected: Request is disconnected from the client side"
            " (type 1). Abort request obj.rid='r1'",
            "[2025-10-29 21:34:41] Abort request for rid=r2 not found in rid_to_state; likely already finished/removed",
            "[2025-10-29 21:34:42 TP0] Abort queued request. req.rid='r3'",
            "[2025-10-29 21:34:42 TP0] Abort running request. req.rid='r4'",
            "[2025-10-29 21:34:42 TP1] Abort bootstrap queue request. req.rid='r5'",
            "[2025-10-29 21:34:42 TP1] Abort prealloc queue request. decode_req.req.rid='r6'",
            "[2025-10-29 21:34:42 TP1] Abort transfer queue request. decode_req.req.rid='r7'",
            "[2025-10-29 21:34:42 TP1] Abort inflight queue request. req.rid='r8'",
            "[2025-10-29 21:34:42 TP1] Abort grammar queue request. rid=r9",
            "[2025-10-29 21:34:43 TP2] Decode handshake failed for request rank=2 decode_req.req.rid='r10'"
            " decode_req.req.bootstrap_room=99 with exception KVTransferError(bootstrap_room=99): Aborted by AbortReq.",
        ]
    )
    ab = sglang.aborts(ev_of(text))
    assert ab["abort_kind"].to_list() == [
        "client_disconnected",
        "abort_request_not_found",
        "abort_queued_request",
        "abort_running_request",
        "abort_bootstrap_queue_request",
        "abort_prealloc_queue_request",
        "abort_transfer_queue_request",
        "abort_inflight_queue_request",
        "abort_grammar_queue_request",
        "transfer_aborted",
    ]
    assert ab["rid"].to_list() == [f"r{i}" for i in range(1, 11)]
    assert ab["bootstrap_room"].to_list() == [None] * 9 + [99]
    assert ab["error_kind"].to_list() == [None] * 9 + ["decode_handshake_failed"]
    assert ab["tp_rank"].to_list() == [None, None, 0, 0, 1, 1, 1, 1, 1, 2]


def test_log_requests_lines_give_rooms_on_both_sides():
    prefill = [
        "[2025-10-29 21:30:00] Receive: obj=GenerateReqInput(text='Say: rid=\"x\"', sampling_params={'max_new_tokens':"
        " 8}, rid='p-1', return_logprob=False, bootstrap_host='10.0.0.7', bootstrap_port=8998,"
        " bootstrap_room=4384674655194745451)",
        "[2025-10-29 21:30:02] Finish: obj=GenerateReqInput(rid='p-1', bootstrap_room=4384674655194745451),"
        " out={'text': '', 'meta_info': {'id': 'p-1', 'finish_reason': {'type': 'length', 'length': 0}}}",
    ]
    decode = [
        '{"timestamp": "2025-10-29T21:30:00.500000", "event": "request.received", "rid": "d-9", "obj": {"text":'
        ' "Say", "rid": "d-9", "bootstrap_room": 4384674655194745451}}',
        '{"timestamp":"2025-10-29T21:30:03","event":"request.finished","rid":"d-9","obj":{"bootstrap_room":'
        '4384674655194745451},"out":{"meta_info":{"id":"d-9"}}}',
    ]
    ev = pl.concat([ev_of("\n".join(prefill), "prefill"), ev_of("\n".join(decode), "decode")]).with_columns(
        pl.int_range(pl.len()).alias("event_id")
    )
    assert kinds(ev) == ["request_received", "request_finished", "request_received", "request_finished"]
    rooms = sglang.rooms(ev)
    assert rooms.select("rid", "bootstrap_room", "role", "n_events").rows() == [
        ("p-1", 4384674655194745451, "prefill", 2),
        ("d-9", 4384674655194745451, "decode", 2),
    ]
    assert rooms["first_ts"].to_list() == [
        datetime(2025, 10, 29, 21, 30, tzinfo=UTC),
        datetime(2025, 10, 29, 21, 30, 0, 500000, tzinfo=UTC),
    ]
    assert rooms["last_ts"][1] == datetime(2025, 10, 29, 21, 30, 3, tzinfo=UTC)


def test_rooms_uses_ingest_columns_when_present():
    ev = ev_of(ASSERT_TB.format(tp=0)).with_columns(
        pl.lit("r").alias("rid"), pl.lit(5, pl.Int64).alias("bootstrap_room"), pl.lit("prefill").alias("role")
    )
    assert sglang.rooms(ev).select("rid", "bootstrap_room", "role").rows() == [("r", 5, "prefill")]


def test_printed_levels_only():
    ev = ev_of(
        "WARNING:sglang.srt.server_args:Overlap scheduler is disabled\n"
        "[2025-10-29 21:30:00 TP0] Traceback (most recent call last):\nValueError: x\n"
        '{"timestamp":"2025-10-29 21:49:19","level":"WARN","message":"m","target":"smg::x"}\n'
        "[2025-10-29 21:30:00] Error in request handling"
    )
    assert sglang.classify(ev)["level"].to_list() == ["WARNING", None, "WARNING", None]


def test_batch_with_iter_mixed_lists_percent_and_unknown_keys():
    ev = ev_of(
        "[2025-10-29 21:30:00 TP0] Prefill batch(mixed #running-req: 3) [1234], #new-seq: 2, #new-token: 64,"
        " #cached-token: 8, cache hit rate: 11.11%, full token usage: 0.50, swa token usage: 0.25,"
        " #running-req: 4, #queue-req: 0, #running-req per DP: [0, 1, 2, 3], page usage: 0.10,"
        " est. prefill TFLOPS/s (per GPU): 9.90, fwd occupancy: nan%, musa graph: True, #pending-token: x12\n"
        "[2025-10-29 21:30:01 TP0] Decode batch [77], #running-req: 5, #token: 10, token usage: 0.01,"
        " cpu graph: False, gen throughput (token/s): 1.50, #queue-req: 0, "
    )
    b = sglang.batches(ev)
    p, d = b.row(0, named=True), b.row(1, named=True)
    assert (p["forward_iter"], p["new_seq"], p["cache_hit_rate_pct"], p["full_token_usage"]) == (
        1234,
        2,
        11.11,
        0.5,
    )
    assert p["swa_token_usage"] == 0.25 and p["token_usage"] is None
    assert math.isnan(p["fwd_occupancy_pct"]) and (p["graph"], p["graph_kind"]) == (True, "musa")
    assert p["pending_token"] is None  # did not parse: kept in extra instead
    assert json.loads(p["extra"]) == {
        "#running-req per DP": "[0, 1, 2, 3]",
        "page usage": "0.10",
        "est. prefill TFLOPS/s (per GPU)": "9.90",
        "#pending-token": "x12",
        "mixed #running-req": "3",
    }
    assert (d["forward_iter"], d["running_req"], d["graph"], d["graph_kind"], d["extra"]) == (
        77,
        5,
        False,
        "cpu",
        None,
    )


def test_many_shapes_take_the_slow_path_with_the_same_result():
    lines = [f"[2025-10-29 21:30:00 TP0] Decode batch, #running-req: {i}, key{i}: {i}" for i in range(40)]
    b = sglang.batches(ev_of("\n".join(lines)))
    assert b["running_req"].to_list() == list(range(40))
    assert [json.loads(x) for x in b["extra"]] == [{f"key{i}": str(i)} for i in range(40)]


def test_empty_input_gives_the_schemas():
    empty = pl.DataFrame(schema={"event_id": pl.Int64, "body": pl.String, "message": pl.String})
    assert sglang.classify(empty).schema == pl.Schema(sglang.CLASSIFY)
    for fn, schema in [
        (sglang.batches, sglang.BATCHES),
        (sglang.aborts, sglang.ABORTS),
        (sglang.transfer_errors, sglang.TRANSFER_ERRORS),
        (sglang.rooms, sglang.ROOMS),
        (sglang.watchdogs, sglang.WATCHDOGS),
        (sglang.tracebacks, sglang.TRACEBACKS),
    ]:
        out = fn(empty)
        assert out.height == 0 and out.schema == pl.Schema(schema.schema)
        assert fn(ev_of("nothing here")).schema == pl.Schema(schema.schema)


def test_classify_uses_ingest_kind_column_for_tables():
    ev = ev_of(ASSERT_TB.format(tp=0)).with_columns(pl.lit("other").alias("kind"))
    assert sglang.transfer_errors(ev).height == 0  # ingest said other: the tables trust it


# ------------------------------------------------------------------------------ properties

_INT = st.integers(min_value=0, max_value=10**9)
_RATIO = st.integers(min_value=0, max_value=100).map(lambda x: x / 100)
_RATE = st.integers(min_value=0, max_value=10**7).map(lambda x: x / 100)
_VALUE_OF = {"int": _INT, "float": _RATE, "pct": _RATE, "bool": st.booleans()}


def _fmt(kind: str, v) -> str:
    if kind == "int" or kind == "bool":
        return str(v)
    if kind == "pct":
        return f"{v:.2f}%"
    return f"{v:.2f}"


@st.composite
def batch_lines(draw, extra_key: bool = False):
    fields = draw(
        st.lists(st.sampled_from(sglang.BATCH_FIELDS), min_size=1, max_size=12, unique_by=lambda f: f.key)
    )
    values = {f.column: draw(_RATIO if f.column.endswith("usage") else _VALUE_OF[f.type]) for f in fields}
    parts = [f"{f.key}: {_fmt(f.type, values[f.column])}" for f in fields]
    graph = draw(st.sampled_from([None, "cuda", "npu", "cpu", "musa"]))
    if graph:
        values["graph"] = draw(st.booleans())
        values["graph_kind"] = graph
        parts.insert(draw(st.integers(0, len(parts))), f"{graph} graph: {values['graph']}")
    unknown = None
    if extra_key:
        key = draw(st.from_regex(r"[#a-z][a-z \-]{0,14}[a-z]", fullmatch=True))
        if key in sglang.BATCH_FIELD_BY_KEY or sglang.GRAPH_KEY.match(key):
            key = "zz " + key
        val = draw(
            st.from_regex(r"[A-Za-z0-9.%/ \-]{0,12}[A-Za-z0-9]", fullmatch=True)
            | st.lists(_INT, max_size=4).map(lambda xs: "[" + ", ".join(map(str, xs)) + "]")
        )
        unknown = (key, val)
        parts.insert(draw(st.integers(0, len(parts))), f"{key}: {val}")
    batch = draw(st.sampled_from(["Prefill", "Decode"]))
    it = draw(st.one_of(st.none(), st.integers(0, 10**6)))
    sep = draw(st.sampled_from([".", ","]))
    tail = draw(st.sampled_from(["", ", ", " ", ","]))
    head = f"{batch} batch" + (f" [{it}]" if it is not None else "") + sep + " "
    rank = draw(st.sampled_from(["", " TP3", " DP1 TP2 EP2", " DP0 PP1 ATTN_CP0 MOE_DP0 TP1 EP1"]))
    line = f"[2025-10-29 21:30:00{rank}] " + head + ", ".join(parts) + tail
    return line, batch.lower(), it, values, unknown


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch_lines())
def test_known_batch_format_round_trips(case_):
    line, batch_type, it, values, _ = case_
    b = sglang.batches(ev_of(line))
    assert b.height == 1
    row = b.row(0, named=True)
    assert row["batch_type"] == batch_type and row["forward_iter"] == it
    for column, value in values.items():
        got = row[column]
        if isinstance(value, float):
            assert got == pytest.approx(value, abs=0.005), column
        else:
            assert got == value, column
    assert row["extra"] is None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch_lines(extra_key=True))
def test_unknown_key_is_kept_in_extra(case_):
    line, _, _, values, (key, val) = case_
    row = sglang.batches(ev_of(line)).row(0, named=True)
    assert json.loads(row["extra"]) == {key: val.strip()}
    for column, value in values.items():
        if isinstance(value, float):
            assert row[column] == pytest.approx(value, abs=0.005)
        else:
            assert row[column] == value


_NOISE = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=200) | st.lists(
    st.sampled_from(
        [p.sample for p in sglang_lines.ENGINE_PATTERNS]
        + [f.sample for f in router.ACCESS_FORMATS + router.ROUTER_FORMATS]
        + [
            "\n",
            "  ",
            "Prefill batch, ",
            "#new-seq: ",
            ", ",
            "[",
            "]",
            "rid=",
            "bootstrap_room=",
            "'",
            '"',
            "{",
            "\x1b[31m",
        ]
    ),
    max_size=12,
).map("".join)


@pytest.mark.heavy  # a fault test: a generated loop of minutes of CPU (CI runs -m heavy)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_NOISE, min_size=1, max_size=6))
def test_no_parser_raises_on_any_text(texts):
    ev = pl.concat([records_from_text(t, "fuzz") for t in texts]).with_columns(
        pl.int_range(pl.len()).alias("event_id")
    )
    c = sglang.classify(ev)
    assert c.height == ev.height and set(c["kind"]) <= set(KINDS)
    for fn in (
        sglang.batches,
        sglang.aborts,
        sglang.transfer_errors,
        sglang.rooms,
        sglang.watchdogs,
        sglang.tracebacks,
        router.requests,
    ):
        fn(ev)
        fn(ev.with_columns(c["kind"]))


# ------------------------------------------------------------------------------ the sample incident


def test_sample_incident_assertion_rooms_and_last_batches(tmp_path):
    export = SAMPLE / "journal.export"
    if not export.exists():
        pytest.skip("sample_logs/journal.export not generated")
    from logcorr.ingest import ingest

    out = tmp_path / "out"
    ingest([export, SAMPLE / "router.log"], out)
    te = pl.read_parquet(out / "transfer_errors")
    asserts = te.filter(pl.col("error_kind") == "assert_transfer_infos")
    assert sorted(asserts["tp_rank"].to_list()) == [0, 1, 3]
    assert set(asserts["role"]) == {"prefill"} and asserts["bootstrap_room"].n_unique() == 1
    room = asserts["bootstrap_room"][0]
    aborts = pl.read_parquet(out / "aborts")
    assert aborts.filter(pl.col("bootstrap_room") == room).height >= 1
    with_room = aborts.filter(pl.col("abort_kind") == "transfer_aborted")
    assert with_room["bootstrap_room"].null_count() == 0
    batches = pl.read_parquet(out / "batches")
    assert set(batches["batch_type"]) == {"prefill", "decode"}
    assert batches.group_by("role", "tp_rank").len().height == 8
