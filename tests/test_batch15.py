"""batch15 (tests/cases/batch15, a blind batch: README written before the first run, EVAL.md the score
before the fixes): each file's body (its ``# source``/``# note`` lines off, as the evaluation read it), and
the rules its failures changed, on lines of the same shape."""

from __future__ import annotations

from datetime import datetime

import polars as pl

from logcorr.analysis import saved
from logcorr.ingest import records_from_text
from logcorr.inputs.text import quote_marks_off
from tests.conftest import case_records, ingested_body, rows_at
from tests.test_batch10 import BATCH as BATCH10

BATCH = BATCH10.parent / "batch15"


def test_02_a_log_quoted_as_a_markdown_block_quote_reads_as_the_log():
    """Lines 3-9 each behind `> `: the quote marker comes off, so line 3's SGLang header gives the time
    and TP6, and the quoted frames are the record's lines (7 lines, one record)."""
    (row,) = rows_at(case_records(BATCH, "02"), 3)
    assert (row["log_ts"], row["tp_rank"], row["kind"], row["n_lines"]) == (
        datetime(2025, 3, 19, 8, 28, 27),
        6,
        "traceback",
        7,
    )
    assert row["message"].startswith("[2025-03-19 08:28:27 TP6] Scheduler hit an exception")


def test_quote_marks_stay_where_the_quote_holds_no_record():
    """A shell's `> ` continuation prompt or a quoted sentence is no quoted log: kept as written; a lone
    `>` (a quoted blank line) goes with the others when a quoted line opens a record."""
    prompt = pl.Series(["$ cat <<EOF", "> hello", "> EOF"])
    assert quote_marks_off(prompt).to_list() == ["$ cat <<EOF", "> hello", "> EOF"]
    quoted = pl.Series(["said:", "> [2025-03-19 08:28:27 TP6] Decode batch, #running-req: 1", ">", "> x"])
    assert quote_marks_off(quoted).to_list() == [
        "said:",
        "[2025-03-19 08:28:27 TP6] Decode batch, #running-req: 1",
        "",
        "x",
    ]


def test_04_nccls_warn_lines_name_a_source_file_and_are_its_failures(tmp_path):
    """`kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer …`:
    NCCL's header with the file:line its WARN lines carry (host, pid, WARNING); NCCL prints its failures
    at WARN, so the three are an unexplained error, not "no failure"."""
    out = ingested_body(tmp_path, BATCH, "04")
    warn = saved.query(
        out,
        "SELECT source_pos, level, host, pid FROM events WHERE message LIKE '%NCCL WARN%' ORDER BY event_id",
    )
    assert warn.rows() == [(f"line {n}", "WARNING", "kp-ddp-worker-0", 3468) for n in (3, 8, 13)]
    (found,) = saved.query(out, "SELECT kind, n, summary FROM findings").rows()
    assert found[:2] == ("unexplained_errors", 3)
    assert "NCCL WARN NET/IB : Got completion from peer 10.0.15.1<54862> with status=12" in found[2]


def test_an_nccl_warn_that_tells_of_no_failure_is_no_error_level_when_it_is_info():
    """NCCL's INFO lines stay routine: a chunk of INFO lines only gives no finding."""
    text = "h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.15.2<0>\nh:1:2 [0] NCCL INFO Init COMPLETE\n"
    ev = records_from_text(text)
    assert ev["level"].to_list() == ["INFO", "INFO"] and ev["host"].to_list() == ["h", "h"]


def test_05_deepeps_bare_kernel_timeouts_are_a_timeout(tmp_path):
    """Lines 2-12 `DeepEP dispatch forwarder timeout (RDMA meta), channel: 8, …` without a header or a
    level: DeepEP's kernels print their timeouts bare; the report names them, no time, no rank."""
    out = ingested_body(tmp_path, BATCH, "05")
    (found,) = saved.query(out, "SELECT kind, ts, ranks, summary FROM findings").rows()
    assert found[:3] == ("unexplained_errors", None, None)
    assert found[3].startswith(
        'Unexplained error: "DeepEP dispatch forwarder timeout (RDMA meta), channel: 8, RDMA: 0, nvl: 6'
    )


def test_07_a_faulthandler_dump_after_prose_opens_its_own_record_and_a_glued_record_after_a_cut_frame_is_split():
    """Line 1 is the reporter's sentence, line 2 faulthandler's `Thread 0x000070c18c2e9dc0 (most recent
    call first):` (a record of its own, not the prose's tail), line 3 a frame cut before its function name
    with the main process's `[2025-04-17 11:44:15] Received sigquit …` glued after it (split there)."""
    ev = case_records(BATCH, "07")
    got = [(r["message"][:30], r["n_lines"], r["log_ts"]) for n in (1, 2, 3) for r in rows_at(ev, n)]
    assert got == [
        ("@nuxlear , thanks  for you rep", 1, None),
        ("Thread 0x000070c18c2e9dc0 (mos", 2, None),
        ("[2025-04-17 11:44:15] Received", 3, datetime(2025, 4, 17, 11, 44, 15)),
    ]


def test_a_faulthandler_dumps_later_threads_stay_in_the_record_of_its_first():
    """After prose, a dump of two threads is one record (the second thread header continues the dump its
    first opened); after `Fatal Python error:` the whole dump is that record's."""
    threads = (
        'Thread 0x00007f01 (most recent call first):\n  File "a.py", line 1 in f\n\n'
        'Current thread 0x00007f02 (most recent call first):\n  File "b.py", line 2 in g\n'
    )
    ev = records_from_text("it hangs, dump:\n" + threads)
    assert ev["n_lines"].to_list() == [1, 5]
    ev = records_from_text("Fatal Python error: Aborted\n\n" + threads)
    assert ev["n_lines"].to_list() == [7]
