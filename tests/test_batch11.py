"""batch11 (tests/cases/batch11, a blind batch: README written before the first run, EVAL.md the score
before the fixes): each file's body (its ``# source``/``# note`` lines off, as the evaluation read it)."""

from __future__ import annotations

from datetime import datetime

from logcorr.analysis import saved
from logcorr.ingest import records_from_text
from tests.conftest import case_records, ingested_body, rows_at
from tests.test_batch10 import BATCH as BATCH10

BATCH = BATCH10.parent / "batch11"


def test_09_a_vllm_header_quoted_after_the_reporters_colon_opens_a_record():
    """Line 3 `During benchmark, prefillers complain: ERROR 11-19 10:12:21 [distributed/.../v1/
    nixl_connector.py:1068] Potentially invalid KV blocks …`: the words before the colon stay prose, the
    record from the header on is vLLM's: ERROR, printed 11-19 10:12:21 (no year), its request id."""
    prose, record = rows_at(case_records(BATCH, "09"), 3)
    assert (prose["message"], prose["level"]) == ("During benchmark, prefillers complain:", None)
    assert (record["level"], record["printed_time"], record["ts"], record["request_id"], record["rid"]) == (
        "ERROR",
        "11-19 10:12:21",
        None,
        "chatcmpl-129a69c8-cd1a-40e0-aa3e-94662fd8cc2b",
        None,
    )


def test_a_worker_prefix_before_a_vllm_header_is_no_prose_to_split_off():
    """`(APIServer pid=11) DEBUG 03-17 06:49:52 [utils.py:1000] …`: the worker's prefix is the record's own,
    one record with its pid (batch5/02's line 7)."""
    ev = records_from_text(
        "(APIServer pid=11) DEBUG 03-17 06:49:52 [v1/engine/utils.py:1000] Waiting\n", "x.log"
    )
    assert ev.select("pid", "level", "n_lines").rows() == [(11, "DEBUG", 1)]


def test_11_a_ucx_signal_report_without_its_epoch_stamp_is_a_record_of_its_own():
    """Lines 3-4 `[mlp-dgx-01:45435:0:45788] Caught signal 11 (Segmentation fault: …)`: UCX's signal
    handler prints its [host:pid:x:tid] part without the epoch stamp; each line is its own record (host
    mlp-dgx-01, pids 45435 / 45430, no time), not the tail of line 2's vLLM INFO record."""
    ev = case_records(BATCH, "11")
    assert rows_at(ev, 2)[0]["n_lines"] == 1
    rows = [(r["host"], r["pid"], r["ts"], r["printed_time"]) for n in (3, 4) for r in rows_at(ev, n)]
    assert rows == [("mlp-dgx-01", 45435, None, None), ("mlp-dgx-01", 45430, None, None)]


def test_13_ucx_backtrace_follows_its_signal_line_not_the_access_line_above(tmp_path):
    """Line 5 an SGLang access line, line 6 `[ubuntu-GPU-L40S-4802111:12796:1:13303] Caught signal 11 …`
    and its `==== backtrace (tid:  13303) ====` with 7 native frames (lines 7-14): the crash is pid 12796's
    record of 9 lines, and no time of the access line is lent to it."""
    out = ingested_body(tmp_path, BATCH, "13")
    rows = saved.query(
        out,
        "SELECT source_pos, n_lines, pid, host, ts FROM events WHERE source_pos IN ('line 5', 'line 6') ORDER BY event_id",
    )
    assert rows.rows()[0][:2] == ("line 5", 1)
    assert rows.rows()[1] == ("line 6", 9, 12796, "ubuntu-GPU-L40S-4802111", None)
    (summary,) = saved.query(out, "SELECT summary FROM findings WHERE kind = 'unexplained_crash'")["summary"]
    assert "Caught signal 11" in summary and "09:43:43" not in summary


def test_16_an_exception_line_the_reporter_put_in_backticks_is_shown(tmp_path):
    """Lines 5-9: `` `RuntimeError: Decode out of memory. Try to lower your batch size. `` … `` =0` ``,
    quoted in inline code: the backtick is the paste's markup, the exception is shown (no time, no rank)."""
    out = ingested_body(tmp_path, BATCH, "16")
    found = saved.query(out, "SELECT kind, summary FROM findings")
    assert found["kind"].to_list() == ["unexplained_crash"]
    assert '"RuntimeError: Decode out of memory. Try to lower your batch size."' in found["summary"][0]


def test_12_a_glog_line_of_nixls_ucx_wrapper_names_ucx_not_mooncake(tmp_path):
    """Lines 6-8: `E0717 07:30:06.719633  994396 ucx_utils.cpp:537] UCX endpoint create failed` and
    `… nixl_agent.cpp:359] createBackend: backend 'UCX' … NIXL_ERR_BACKEND` (an SGLang NIXL test): the
    files name UCX and NIXL; nothing names Mooncake. The epoch-stamped UCX lines are UTC."""
    out = ingested_body(tmp_path, BATCH, "12")
    summaries = "\n".join(saved.query(out, "SELECT summary FROM findings")["summary"])
    assert "mooncake" not in summaries.lower()
    assert "backend UCX, nixl; cause NIXL_ERR_BACKEND ×1; UCX endpoint create failed" in summaries
    first = saved.query(out, "SELECT min(ts) AS t FROM events WHERE zoned")["t"][0]
    assert first.replace(tzinfo=None) == datetime(2026, 7, 17, 7, 30, 6, 684686)
