"""batch10 (tests/cases/batch10, a blind batch: README written before the first run, EVAL.md the score
before the fixes): each file's body (its ``# source``/``# note`` lines off, as the evaluation read it)."""

from __future__ import annotations

from datetime import datetime

import polars as pl

from logcorr.analysis import saved
from logcorr.ingest import records_from_text
from tests.conftest import case_body, ingested_body
from tests.test_batch9 import BATCH as BATCH9

BATCH = BATCH9.parent / "batch10"


def _body(prefix: str) -> str:
    return case_body(BATCH, prefix)


def _records(prefix: str) -> pl.DataFrame:
    return records_from_text(_body(prefix), f"{prefix}.log")


def _at(ev: pl.DataFrame, line: int) -> dict:
    (row,) = ev.filter(pl.col("source_pos") == f"line {line}").to_dicts()
    return row


def _ingested(tmp_path, prefix: str):
    return ingested_body(tmp_path, BATCH, prefix)


def test_01_prose_that_gets_kv_from_the_prefill_node_places_nothing_on_prefill():
    """Line 2: "the decode node fails to get KV cache from the prefill node": both halves named, and
    "from" is where the KV comes from, not where the records below were printed (they were prefill)."""
    ev = _records("01")
    assert {_at(ev, n)["role"] for n in (5, 7)} == {"unknown"}
    assert _at(ev, 5)["dp_rank"] == 0 and _at(ev, 5)["pid"] == 2823482


def test_01_a_terminal_wrap_inside_a_uuid_continues_the_workers_record():
    """Line 6 `-435d-a116-e3e34a76ded3_dp0,received 96b1c4ff-…_dp0.` is the rest of line 5's expected
    engine id (`…46126a31-6b81`), wrapped: one ERROR record of Worker_DP0_EP0 (pid 2823482), two lines."""
    ev = _records("01")
    row = _at(ev, 5)
    assert (row["level"], row["pid"], row["n_lines"]) == ("ERROR", 2823482, 2)
    assert "6b81\\n-435d-a116-e3e34a76ded3_dp0,received 96b1c4ff" in repr(row["message"])
    assert ev.filter(pl.col("source_pos") == "line 6").height == 0


def test_06_an_sglang_header_whose_bracket_and_year_head_were_cut_keeps_its_ranks():
    """Line 10 `026-05-28 00:11:09.816 DP0 TP0 EP0] Scheduler hit an exception: …`: the paste lost `[2`;
    the ranks are still read (dp 0, tp 0, ep 0), the time is not guessed (no year 26 or 2026)."""
    row = _at(_records("06"), 10)
    assert (row["dp_rank"], row["tp_rank"], row["ep_rank"], row["ts"], row["kind"]) == (
        0,
        0,
        0,
        None,
        "traceback",
    )


def test_08_gos_standard_log_stamp_is_a_header_local_time_no_level():
    """Line 5 `2025/05/11 18:27:43 http: proxy error: …` (the sidecar before klog): Go's log.LstdFlags
    stamp is the record's time as printed (no zone); line 10 stays klog's ERROR at 07-09 10:50:42."""
    ev = _records("08")
    row = _at(ev, 5)
    assert (row["log_ts"], row["zoned"], row["level"]) == (datetime(2025, 5, 11, 18, 27, 43), False, None)
    assert _at(ev, 10)["level"] == "ERROR"


def test_09_a_line_number_gutter_is_no_part_of_the_c10d_lines():
    """`[80746] [rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] …` … `[80749] [rank3]:…`: the
    bracketed numbers count the lines one by one (a viewer's gutter): off, the c10d header is read
    (ERROR, 03-21 02:07:08, ranks 0, 4, 0, 3) and no number becomes a pid."""
    ev = _records("09").sort("source_pos")
    assert ev.select("level", "tp_rank", "pid").rows() == [("ERROR", r, None) for r in (0, 4, 0, 3)]
    assert ev["printed_time"].to_list()[0] == "03-21 02:07:08.408271257"


def test_numbers_that_do_not_count_the_lines_are_no_gutter():
    """Bracketed numbers that do not run with the lines (pids, ids) stay in the text."""
    ev = records_from_text("[17] a\n[17] b\n[18] c\n", "x.log")
    assert ev["message"].to_list() == ["[17] a", "[17] b", "[18] c"]


def test_07_a_frame_whose_function_name_the_terminal_cut_is_a_frame_and_its_exception_is_told(tmp_path):
    """Lines 3-5: `File "…/nixl_connector.py", line 426, in>` (the name cut), `raise …`, `RuntimeError:
    NIXL is not available`: a traceback tail (one frame, function unknown, not guessed), and the report
    says what failed instead of "fragments … none intact: what failed cannot be told"."""
    out = _ingested(tmp_path, "07")
    tb = saved.query(out, "SELECT exception, exc_message, function, line, n_frames FROM tracebacks")
    assert tb.rows() == [("RuntimeError", "NIXL is not available", None, 426, 1)]
    (summary,) = saved.query(out, "SELECT summary FROM findings")["summary"]
    assert "RuntimeError: NIXL is not available" in summary and "none intact" not in summary
    assert saved.query(out, "SELECT role FROM findings")["role"].to_list() == ["unknown"]


def test_07_a_line_naming_both_halves_in_one_phrase_gives_no_role():
    """ "When starting the Dynamo prefill and decode workers, …" names both halves ("prefill and decode
    workers"): the records after it are no half's; one half named alone still gives it."""
    from logcorr.parsers.roles import label_role

    lines = [
        "When starting the Dynamo prefill and decode workers, the process fails with the following error:",
        "errors like the following on multiple decode workers",
    ]
    assert label_role(pl.Series(lines)).to_list() == [None, "decode"]


def test_16_a_progress_bar_is_no_part_of_the_traceback_after_it():
    """Line 4, the benchmark's finished bar (200/200), then `Traceback (most recent call last):` (line 5):
    the bar is a record of one line, the traceback (KeyError: 'answer', 5 frames) opens its own."""
    ev = _records("16")
    assert (_at(ev, 4)["n_lines"], _at(ev, 4)["kind"], _at(ev, 4)["level"]) == (1, "other", None)
    assert (_at(ev, 5)["kind"], _at(ev, 5)["n_lines"]) == ("traceback", 17)


def test_15_an_indented_plog_line_in_a_fenced_block_under_prose_is_an_error_record():
    """Line 19 `  [ERROR] HCCL(893240,):2026-08-11-07:03:46.026.970 [exception_handler.cc:23] …`, indented
    with its ```shell block (the prose above is not): the block's indent is the paste's; the plog header
    gives ERROR, pid 893240 and 2026-08-11 07:03:46.026970 (ms.µs), the prose around it stays no record."""
    ev = _records("15")
    row = _at(ev, 19)
    assert (row["level"], row["pid"], row["log_ts"]) == (
        "ERROR",
        893240,
        datetime(2026, 8, 11, 7, 3, 46, 26970),
    )
    assert _at(ev, 17)["level"] is None and _at(ev, 6)["level"] is None


def test_09_a_ranks_work_state_at_the_timed_out_seqnum_is_that_timeouts_evidence(tmp_path):
    """Line 4: rank 3's `[PG 1 Rank 3] … detected by watchdog at work: 1580` (its own watchdog line cut off
    the paste): evidence of the ALLREDUCE SeqNum 1580 timeout of ranks 0 and 4, not an error of its own."""
    out = _ingested(tmp_path, "09")
    found = saved.query(out, "SELECT kind, ranks, len(evidence) AS n_ev FROM findings")
    assert found.rows() == [("collective_timeout", ["rank 0", "rank 4"], 4)]
