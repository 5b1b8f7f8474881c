"""batch16 (tests/cases/batch16, a blind batch: README written before the first run, EVAL.md the score
before the fixes): each file's body (its ``# source``/``# note`` lines off, as the evaluation read it), and
the rules its failures changed, on lines of the same shape."""

from __future__ import annotations

import re

from logcorr.analysis import saved
from logcorr.parsers.prefix import SERVING_START
from tests.conftest import case_records, ingested_body, rows_at
from tests.test_batch10 import BATCH as BATCH10

BATCH = BATCH10.parent / "batch16"


def _findings(out) -> dict[str, str]:
    return dict(saved.query(out, "SELECT kind, summary FROM findings").rows())


def _happened(out) -> str:
    from logcorr.render import report

    return report.summary_lines(report.gather(out))[0]


def test_03_a_dynamo_workers_relayed_python_loggers_are_engine_data_and_prose_is_no_start(tmp_path):
    """Lines 10-13 are Dynamo's formatter relaying SGLang's loggers as `module.function:`
    (`model_runner.load_model:`): engine data, so the report says the data shows no failure rather than
    "none in … Dynamo's header format"; the reporter's "the bootstrap server is **never started**" (line
    3) is no record in start-up words, the last record read is NIXL's agent line."""
    out = ingested_body(tmp_path, BATCH, "03")
    happened = _happened(out)
    assert happened.startswith("**What happened**: the data shows no failure")
    assert "never started" not in happened and "Dynamo's header format" not in happened
    assert "Initialized NIXL agent: 50005a36-7f8e-4017-ae04-aa8beaeb3325" in happened
    zoned = saved.query(out, "SELECT count(*) FROM events WHERE zoned AND level = 'INFO'").item()
    assert zoned == 4


def test_a_relayed_python_target_is_dynamos_format_and_a_rust_path_or_prose_is_not():
    relayed = "2025-12-10T13:50:30.199229Z  INFO scheduler.__init__: max_total_num_tokens=360072"
    rust = "2025-12-10T13:50:30.199229Z  INFO hyper::client::pool: reuse idle connection"
    prose = "2025-12-10T13:50:30.199229Z is when it stopped. The log: scheduler.__init__: nothing"
    assert re.search(SERVING_START, relayed)
    assert not re.search(SERVING_START, rust) and not re.search(SERVING_START, prose)


def test_07_multimodal_gens_month_day_header_and_its_dead_scheduler_with_the_exit_code_of_the_next_line(
    tmp_path,
):
    """`[12-16 14:27:08] Rank 0 scheduler is dead.` and `[12-16 14:27:10] Exit code: -9`: SGLang's
    multimodal_gen header (month-day, no year) is read as printed; the launcher's two lines are one child
    exit, the rank 0 scheduler killed by SIGKILL."""
    ev = case_records(BATCH, "07")
    (dead,) = rows_at(ev, 2)
    (code,) = rows_at(ev, 3)
    assert (dead["printed_time"], dead["log_ts"], dead["kind"]) == ("12-16 14:27:08", None, "watchdog")
    assert (code["printed_time"], code["kind"]) == ("12-16 14:27:10", "traceback")
    out = ingested_body(tmp_path, BATCH, "07")
    assert _findings(out)["child_exits"] == (
        "1 child process reported dead by the parent (no time read; printed without a year: 12-16 14:27:08):"
        " the rank 0 scheduler, pid not printed (exit code -9: killed by signal 9 SIGKILL)"
    )


def test_08_a_lead_in_sentence_is_no_crash_and_the_segfault_banner_is_the_dead_childs(tmp_path):
    """Line 3 "Log evidence: server crashed mid-eval with SIGSEGV (exit code -11) inside mooncake's RDMA
    cleanup path:" introduces the paste: no crash record. The banner `!!!!!!! Segfault encountered !!!!!!!`
    (lines 5-8, no time) printed right before `Subprocess scheduler_0 (pid=922727) crashed with exit code -11.`
    (line 9) says the signal -11 names: the dead child's own last words, said in its finding with its first
    frame (`ibv_destroy_qp`) and its callers as printed, never an unexplained crash apart."""
    out = ingested_body(tmp_path, BATCH, "08")
    found = _findings(out)
    assert list(found) == ["child_exits"]
    assert found["child_exits"] == (
        "1 child process reported dead by the parent at 2026-05-14 16:49:46:"
        " scheduler_0, pid 922727 (exit code -11: killed by signal 11 SIGSEGV); printed just before it:"
        ' "!!!!!!! Segfault encountered !!!!!!!" (its first frame: ibv_destroy_qp;'
        " its callers, as printed: mooncake::RdmaEndPoint::deconstruct() ← mooncake::WorkerPool::transferWorker(int))"
    )
    cited = saved.query(
        out,
        "SELECT e.source_pos FROM (SELECT unnest(evidence) AS id FROM findings) f JOIN events e ON e.event_id = f.id",
    )["source_pos"].to_list()
    assert sorted(cited) == ["line 5", "line 9"]
    assert "Log evidence" not in "\n".join(found.values())


def test_a_banner_of_another_signal_is_no_part_of_the_childs_exit(tmp_path):
    """The banner is the child's only when it says the signal its exit code names: a segfault banner before
    an exit code -9 (SIGKILL) stays a crash of its own."""
    from logcorr.ingest import ingest

    log = tmp_path / "x.log"
    log.write_text(
        "!!!!!!! Segfault encountered !!!!!!!\n"
        '  File "<unknown>", line 0, in ibv_destroy_qp\n'
        "[2026-05-14 16:49:46] Subprocess scheduler_0 (pid=922727) crashed with exit code -9.\n"
    )
    ingest([log], tmp_path / "out")
    found = _findings(tmp_path / "out")
    assert sorted(found) == ["child_exits", "unexplained_crash"]
    assert found["child_exits"].endswith("scheduler_0, pid 922727 (exit code -9: killed by signal 9 SIGKILL)")


def test_a_crash_line_without_a_colon_at_its_end_still_counts_after_a_lead_in(tmp_path):
    """Only a one-line lead-in that ends with a colon is the reporter's: the crash lines under it count."""
    log = tmp_path / "x.log"
    log.write_text("It crashed with SIGSEGV again, the log:\nSegmentation fault (core dumped)\n")
    from logcorr.ingest import ingest

    ingest([log], tmp_path / "out")
    (row,) = saved.query(tmp_path / "out", "SELECT kind, n, summary FROM findings").rows()
    assert row[:2] == ("unexplained_crash", 1)
    assert row[2].startswith('Unexplained crash or exception: "Segmentation fault (core dumped)"')


def test_13_a_comment_line_naming_cuda_out_of_memory_is_no_cuda_error(tmp_path):
    """The case file with its `# note:` lines (the note quotes the title's CUDA out of memory): no
    cuda_error finding; the ControllerSingle traceback (8 frames, flashinfer's sampling.py:483) leads."""
    from logcorr.ingest import ingest

    path = next(BATCH.glob("13_*"))
    ingest([path], tmp_path / "out")
    found = _findings(tmp_path / "out")
    assert list(found) == ["unexplained_crash"]
    assert found["unexplained_crash"].startswith(
        'Unexplained crash or exception: "Exception in ControllerSingle:" (no exception line read in its traceback;'
        " innermost frame: top_k_top_p_sampling_from_probs (sampling.py:483))"
    )


def test_a_query_whose_columns_repeat_a_name_says_so_in_one_line(tmp_path):
    """The evaluation's `SELECT b.*, e.role FROM batches b JOIN events e …` (two columns named role)
    ended in polars' DuplicateError traceback; it is a QueryError naming the column."""
    import pytest

    out = ingested_body(tmp_path, BATCH, "01")
    stream = saved.QueryStream(out, "SELECT b.*, e.role FROM batches b JOIN events e USING (event_id)")
    with pytest.raises(saved.QueryError, match=r"the result's columns repeat a name: role;"):
        list(stream)


def test_06_the_watchdogs_batch_dump_beside_its_pyspy_dump_is_no_error(tmp_path):
    """Lines 4-6 (`self.cur_batch.batch_size()=1`, rid a46bd62c…) are the dump the watchdog prints before
    the py-spy dump of line 7: one finding, the py-spy one (pid 499 idle in replay, npu_graph_runner.py:82),
    no "Unexplained error" quoting the batch dump."""
    out = ingested_body(tmp_path, BATCH, "06")
    found = _findings(out)
    assert list(found) == ["stacks_captured"]
    assert (
        "1 engine process (pid 499 sglang::scheduler) is idle in replay (npu_graph_runner.py:82)"
        in found["stacks_captured"]
    )
    (rid,) = saved.query(out, "SELECT rid FROM watchdogs WHERE watchdog_kind = 'debug_info'").rows()
    assert rid == ("a46bd62c39a042bea6f0361db32078d9",)
