"""Typing items of batches 3 and 4 (issue 28 items 1, 6, 7): HCCL watchdogs, fatal Python errors and
their faulthandler stacks, KVTransferError in wrapped records, a markdown backtick after a reason, the
NCCL device index, the OpenAI server's request ids, yearless journalctl lines. Values from
tests/cases/batch3/README.md and batch4/README.md, asserted on the tables of one ingest."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from logcorr.analysis import saved
from logcorr.ingest import ingest
from tests.conftest import ingested, query

CASES = Path(__file__).parent / "cases"
FILES = {
    "npu": "batch3/05_npu_scheduler_exception_hccl_watchdog_sigquit.log",
    "vllm_unit": "batch3/07_journald_vllm_user_unit_enginecore_traceback_restart.log",
    "status": "batch3/08_journald_systemctl_status_vllm_units_stopping_consumed.log",
    "backticks": "batch3/10_rocm_pd_prefill_bootstrap_vs_decode_transfer_abortreq_diff_rooms.log",
    "router_8h": "batch4/06_prefill_bootstrap_abortreq_dp_ep_vs_router_8h_apart.log",
    "wrapped": "batch4/07_prefill_bootstrap_failed_wrapped_records_dp_rank_conflict_grep.log",
    "faulthandler": "batch4/09_faulthandler_mooncake_threads_then_record_glued_to_extension_modules.log",
    "nccl_info": "batch4/12_nccl_info_pd_prefill_pod_hostname_wrapped_commid_no_timestamps.log",
    "nixl": "batch3/04_nixl_prefill_ucx_remote_disconnect_rooms_multirank.log",
    "vllm_ascend": "batch3/12_vllm_ascend_pd_mooncake_glog_year_worker_dp_tp_ep.log",
}


@pytest.fixture(scope="module")
def out() -> Path:
    return ingested(*(CASES / f for f in FILES.values()))  # shared: read only


def rows(out: Path, table: str, case: str, columns: str = "*", order: str = "event_id") -> pl.DataFrame:
    source = str(CASES / FILES[case]).replace("'", "''")
    return query(out, f"SELECT {columns} FROM {table} WHERE source = '{source}' ORDER BY {order}")


def test_hccl_watchdog_is_a_watchdog_row_like_nccls(out):
    """batch3/05: `[rank1]:[E707 …] [Rank 1] HCCL watchdog thread terminated with exception:` is one
    nccl_watchdog row (the `what():` line repeating it inside a CANN record is not a second one)."""
    wd = rows(out, "watchdogs", "npu", "watchdog_kind, tp_rank, ts, reason, nccl_seq")
    hccl = wd.filter(pl.col("watchdog_kind") == "nccl_watchdog")
    assert hccl.rows() == [
        ("nccl_watchdog", 1, datetime(2026, 7, 7, 7, 20, 43, 220330, tzinfo=UTC), None, None)
    ]


def test_fatal_python_error_is_a_typed_record(out):
    for case in ("npu", "faulthandler"):
        wd = rows(out, "watchdogs", case, "watchdog_kind, reason")
        assert wd.filter(pl.col("watchdog_kind") == "fatal_python_error").rows() == [
            ("fatal_python_error", "Aborted")
        ]
        ev = rows(out, "events", case, "kind, message")
        fatal = ev.filter(pl.col("message").str.starts_with("Fatal Python error: Aborted"))
        assert fatal["kind"].to_list() == ["watchdog"]


def test_faulthandler_threads_of_a_fatal_error_become_stacks(out):
    """batch4/09: two faulthandler thread dumps after `Fatal Python error: Aborted`: thread ids from
    the hex, no names, frames innermost first; the garbled line 19 kept as it stands."""
    caps = rows(out, "captures", "faulthandler", order="thread_id")
    assert caps.select("thread_id", "thread_name", "n_frames", "partial").rows() == [
        (0x00007F775A7FC640, None, 6, False),
        (0x00007F775AFFD640, None, 5, False),
    ]
    assert caps["innermost"].to_list() == [
        "wait (/usr/lib/python3.10/threading.py:324)",
        "recv_multipart (/usr/local/lib/python3.10/dist-packages/zmq/sugar/socket.py:799)",
    ]
    st = rows(out, "stacks", "faulthandler", "thread_id, depth, function, file, line", "thread_id, depth")
    first = st.filter(pl.col("thread_id") == 0x00007F775A7FC640)
    assert first["function"].to_list() == [
        "wait",
        "get",
        "transfer_thread",
        "run",
        "_bootstrap_inner",
        "_bootstrap",
    ]
    assert first.row(2)[3:] == (
        "/sgl-workspace/sglang/python/sglang/srt/disaggregation/mooncake/conn.py",
        265,
    )
    second = st.filter(pl.col("thread_id") == 0x00007F775AFFD640)
    assert second.row(2)[2:] == (", runuvloop.loop", "/usr/lib/python3.10/threading.py", 953)
    assert not caps["wait_class"].is_in(["all_reduce", "broadcast", "all_gather", "barrier"]).any()


def test_faulthandler_threads_after_the_hccl_crash(out):
    """batch3/05: 2 thread blocks kept after the fatal error, 5 frames each, QueueFeederThread-shaped."""
    caps = rows(out, "captures", "npu", order="thread_id")
    assert caps.select("thread_id", "thread_name", "thread_state", "n_frames").rows() == [
        (0x0000FFF8D7FFF120, None, None, 5),
        (0x0000FFF8E3FFF120, None, None, 5),
    ]
    assert set(caps["innermost"]) == {"wait (/usr/local/python3.11.14/lib/python3.11/threading.py:327)"}


def test_kvtransfererror_in_records_wrapped_over_seven_lines(out):
    """batch4/07: 2 prefill bootstrap failures, dp 1 from the tag, tp 0 from rank=0; their
    KVTransferError is a routing conflict, not an abort."""
    te = rows(out, "transfer_errors", "wrapped")
    assert te.select(
        "error_kind", "dp_rank", "tp_rank", "rid", "bootstrap_room", "exception", "cause"
    ).rows() == [
        (
            "prefill_bootstrap_failed",
            1,
            0,
            "0b2e1f4787774adba54861fcf0236565",
            818533314937763119,
            "KVTransferError",
            "routing_conflict",
        ),
        (
            "prefill_bootstrap_failed",
            1,
            0,
            "00020af23d854418905930fe89c4b6d6",
            5560925207985320907,
            "KVTransferError",
            "routing_conflict",
        ),
    ]
    assert te["reason"][0] == (
        "follow_bootstrap_room conflict: dispatched to dp_rank 0 but bootstrap_room 818533314937763119 implies"
        " dp_rank 1. Set SGLANG_DISAGGREGATION_FORCE_QUERY_PREFILL_DP_RANK=1 to allow mixed routing."
    )
    assert rows(out, "aborts", "wrapped").height == 0


def test_a_closing_backtick_is_not_part_of_the_reason(out):
    """batch3/10: the decode line is wrapped in backticks in the issue."""
    te = rows(out, "transfer_errors", "backticks").filter(pl.col("role") == "decode")
    assert te.select("bootstrap_room", "exception", "reason", "cause").rows() == [
        (6531607133299052019, "KVTransferError", "Aborted by AbortReq.", "aborted")
    ]


def test_the_nccl_device_index_is_no_tp_rank(out):
    """batch4/12: `host:pid:tid [0] NCCL INFO`: [0] is the CUDA device, not a TP tag."""
    ev = rows(out, "events", "nccl_info", "pid, tp_rank, message").filter(
        pl.col("message").str.contains(" NCCL INFO ", literal=True)
    )
    assert ev.height == 9
    assert ev["pid"].to_list() == [206899] * 9
    assert ev["tp_rank"].null_count() == 9


def test_a_router_cmpl_request_id_never_pairs_with_an_engine_rid(tmp_path: Path):
    """batch4/06's shape, with the engine printing the router's id as its rid: the router request is
    not that room's request; an id of SGLang's own form still pairs."""
    failure = (
        "[2025-11-11 21:44:24 DP2 TP2 EP2] Prefill bootstrap failed for request rank=2 req.rid='{rid}'"
        " req.bootstrap_room=806626514800541158 with exception KVTransferError(bootstrap_room=806626514800541158):"
        " Aborted by AbortReq.\n"
    )
    router = (
        "2025-11-11 21:44:20  INFO http_request{{method=POST uri=/v1/completions version=HTTP/1.1"
        ' request_id="{rid}"}}: sglang_router_rs::request: src/middleware.rs:224: started processing request\n'
    )
    found = {}
    for rid in ("cmpl-KMWR20u9meUxMoya5BzesREr", "9c8925b205154f369628a4ae6e504216"):
        log = tmp_path / f"{rid}.log"
        log.write_text(failure.format(rid=rid) + router.format(rid=rid))
        ingest([log], tmp_path / rid)
        found[rid] = saved.query(tmp_path / rid, "abort_to_assert")["request_id"].to_list()
    assert found == {
        "cmpl-KMWR20u9meUxMoya5BzesREr": [None],
        "9c8925b205154f369628a4ae6e504216": ["9c8925b205154f369628a4ae6e504216"],
    }


def test_yearless_journal_lines_take_the_year_of_the_nearest_dated_line(out):
    """batch3/08: the year 2026 is printed only by `date -u` and the status lines; the journal lines
    after them take it (their clock read as UTC, as journalctl printed it)."""
    lc = rows(out, "lifecycle", "status", "ts, event")
    stopped = lc.filter(pl.col("event") == "stopped")
    assert stopped["ts"].to_list() == [datetime(2026, 2, 22, 6, 55, 54, tzinfo=UTC)]
    ev = rows(out, "events", "status", "ts, message")
    route = ev.filter(pl.col("message").str.contains("Route: /score,", literal=True))
    assert route["ts"].to_list() == [datetime(2026, 2, 22, 6, 36, 2, tzinfo=UTC)]


def test_yearless_lines_of_an_input_without_any_year_stay_without_time(out):
    """batch3/07: `Feb 22 06:52:3x host ident[pid]:` lines and no year anywhere: no time, said in sources."""
    ev = rows(out, "events", "vllm_unit", "ts")
    assert ev.height > 0 and ev["ts"].null_count() == ev.height
    src = rows(out, "sources", "vllm_unit", "format, notes", order="source")
    assert src["format"].to_list() == ["short"]
    assert "71 journalctl short lines print no year" in src["notes"][0]


def test_openai_request_ids_are_rids_of_their_own_form(out):
    """batch3/04: the request line (an SGLang-format record) and the 4 transfer failures share the
    dashed-UUID rid; the room without a rid in the text gets none. batch3/12: vLLM-Ascend's
    `cmpl-<uuid>-0-<hex>` kept whole, as another component's request_id, never as SGLang's rid."""
    ev = rows(out, "events", "nixl", "kind, rid, request_id, bootstrap_room, message")
    uuid = "a04107cc-ff53-49ba-b428-03eb77df5cd5"
    line = ev.filter(pl.col("message").str.contains("Processing ChatCompletion request", literal=True))
    assert line["rid"].to_list() == [uuid]
    failed = ev.filter(pl.col("message").str.contains("Prefill transfer failed", literal=True))
    assert failed.select("rid", "bootstrap_room").rows() == [(uuid, 6555093254675405189)] * 4
    worker = ev.filter(pl.col("bootstrap_room") == 5839938415251080346)
    assert worker["rid"].to_list() == [None]
    assert line["request_id"].to_list() == [None] and failed["request_id"].to_list() == [None] * 4
    storing = rows(out, "events", "vllm_ascend", "rid, request_id, message").filter(
        pl.col("message").str.contains("Storing KV cache", literal=True)
        & ~pl.col("message").str.starts_with("# ")
    )
    assert storing.select("rid", "request_id").rows() == [
        (None, "cmpl-b2e4bb32-e86b-4d53-aae3-5b659751f134-0-9d5454f5")
    ]
