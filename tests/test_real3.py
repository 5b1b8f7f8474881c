"""Lines of a third batch of public reports (found 2026-12-01), each reduced to the lines a rule is
about, verbatim, with its source; the values a careful reader takes from them asserted on the tables
and the report. Each one was misread before: a verdict the data did not show, a value lost, a known
line left as ``other``."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from logcorr.analysis import saved
from logcorr.ingest import ingest
from logcorr.render.report import report


def ingested(tmp_path: Path, text: str) -> Path:
    log = tmp_path / "paste.log"
    log.write_text(text)
    out = tmp_path / "out"
    ingest([log], out)
    return out


def table(out: Path, name: str) -> pl.DataFrame:
    return saved.query(out, f"SELECT * FROM {name} ORDER BY event_id")


def test_a_transfer_failure_inside_a_clients_json_answer_keeps_its_room(tmp_path: Path):
    """sglang#7338: the client's copy of the error, a shell prompt pasted right after it."""
    out = ingested(
        tmp_path,
        '{"text":"","meta_info":{"id":"c564d0c547f945aa987620f1255b838d","finish_reason":{"type":"abort",'
        '"message":"Decode transfer failed for request rank=0 decode_req.req.rid=\'c564d0c547f945aa987620f1255b838d\' '
        "decode_req.req.bootstrap_room=2170015846053279415 with exception KVTransferError(bootstrap_room="
        '2170015846053279415): Failed to get kvcache from prefill instance, it might be dead","status_code":500,'
        '"err_type":null},"prompt_tokens":8,"completion_tokens":0,"cached_tokens":0,"e2e_latency":0.07976341247558594}}'
        "root@hd19nh7b2md0c7iunpfng-77c96f889b-7hls2:/# tail -f prefiller.log \n",
    )
    te = table(out, "transfer_errors")
    assert te.select("role", "tp_rank", "rid", "bootstrap_room", "cause").rows() == [
        ("decode", 0, "c564d0c547f945aa987620f1255b838d", 2170015846053279415, "prefill_dead")
    ]
    assert te["reason"][0] == "Failed to get kvcache from prefill instance, it might be dead"


def test_the_failing_work_of_torch_28s_watchdog_line(tmp_path: Path):
    """sglang#10216: "at work sequence id: N PG status:" names the collective that failed."""
    out = ingested(
        tmp_path,
        "[rank1]:[E909 08:45:30.126335825 ProcessGroupNCCL.cpp:2252] [PG ID 2 PG GUID 3 Rank 1]  failure detected "
        "by watchdog at work sequence id: 40231 PG status: last enqueued work: 40267, last completed work: 40230\n",
    )
    wd = table(out, "watchdogs")
    assert wd.select("watchdog_kind", "tp_rank", "nccl_seq", "last_enqueued", "last_completed").rows() == [
        ("collective_work_state", 1, 40231, 40267, 40230)
    ]
    assert wd["ts"][0] is None  # glog's E909 prints no year: no time rather than a guessed one


def test_a_watchdog_timeout_wrapped_by_the_terminal_is_still_a_watchdog(tmp_path: Path):
    """sglang#3424: the line broke inside ``WorkNCCL(S|eqNum=…``; the kind stands, no field is guessed."""
    out = ingested(
        tmp_path,
        "[rank1]:[E210 02:06:33.347835395 ProcessGroupNCCL.cpp:1595] [PG ID 2 PG GUID 3 Rank 1] Process group "
        "watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(S\n"
        "eqNum=1522789, OpType=_ALLGATHER_BASE, NumelIn=298960, NumelOut=4783360, Timeout(ms)=600000) ran for "
        "600003 milliseconds before timing out.\n",
    )
    wd = table(out, "watchdogs")
    assert wd.select("watchdog_kind", "tp_rank", "nccl_seq", "nccl_op").rows() == [
        ("nccl_watchdog", 1, None, None)
    ]


def test_a_transfer_failure_with_the_request_elided_is_a_decode_transfer_error(tmp_path: Path):
    """PR #25172 (a CI triage comment): the commenter cut the request out with "..."."""
    out = ingested(
        tmp_path,
        "[2026-05-14 17:40:47 TP0] Decode transfer failed ... KVTransferError: Failed to get kvcache from "
        "prefill instance, it might be dead\n",
    )
    te = table(out, "transfer_errors")
    assert te.select("role", "tp_rank", "error_kind", "cause", "bootstrap_room").rows() == [
        ("decode", 0, "decode_transfer_failed", "prefill_dead", None)
    ]
    assert te["ts"][0] == datetime(2026, 5, 14, 17, 40, 47, tzinfo=UTC)


def test_sgl_router_01_lines_are_the_router_s(tmp_path: Path):
    """sglang#4208: sgl-router 0.1.x printed "[Router (Rust)] date - LEVEL - msg"; the report said "no
    router log ingested" beside them."""
    out = ingested(
        tmp_path,
        "SingleProcess AUTOTUNE benchmarking takes 1.3672 seconds and 8.3651 seconds precompiling\n"
        "[Router (Rust)] 2025-03-08 02:33:09 - INFO - Worker http://0.0.0.0:31000 health check is pending with "
        "error: error sending request for url (http://0.0.0.0:31000/health)\n"
        "[Router (Rust)] 2025-03-08 02:33:09 - INFO - Worker http://0.0.0.0:31778 health check is pending with "
        "error: error sending request for url (http://0.0.0.0:31778/health)\n",
    )
    ev = table(out, "events")
    routed = ev.filter(pl.col("role") == "router")
    assert routed.height == 2 and set(routed["level"]) == {"INFO"}
    assert set(routed["ts"]) == {datetime(2025, 3, 8, 2, 33, 9, tzinfo=UTC)}
    assert "no record read as the router's" not in report(out)


def test_health_lines_of_no_role_are_not_said_to_be_missing(tmp_path: Path):
    """Mooncake#851 / sglang#10560: one prefill paste; its HTTP server's /health lines carry no TP tag
    and no role. The report said "prefill: no /health lines" beside four of them."""
    out = ingested(
        tmp_path,
        "[2025-09-17 16:23:15 TP0] Prefill batch. #new-seq: 1, #new-token: 1, #cached-token: 0, token usage: 0.00, "
        "#unbootstrapped-req: 0, #queue-req: 0, #transferring-req: 0, input throughput (token/s): 6.44, \n"
        '[2025-09-17 16:23:16] INFO:     10.10.11.1:29496 - "GET /health HTTP/1.1" 200 OK\n'
        "[2025-09-17 16:23:25 TP0] Prefill batch. #new-seq: 1, #new-token: 1, #cached-token: 0, token usage: 0.00, "
        "#unbootstrapped-req: 0, #queue-req: 0, #transferring-req: 0, input throughput (token/s): 0.10, \n"
        '[2025-09-17 16:23:26] INFO:     10.10.11.1:21478 - "GET /health HTTP/1.1" 200 OK\n',
    )
    text = report(out)
    assert "no /health lines;" not in text and "no /health lines," not in text
    assert (
        "prefill: no py-spy capture; no /health lines of its own (2 /health line(s) have no role logcorr could read)"
        in text
    )
