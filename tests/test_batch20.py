"""batch20 (tests/cases/batch20, a blind batch: README written before the first run, EVAL.md the score
before the fixes): each file's body (its ``# source``/``# note`` lines off, as the evaluation read it), and
the rules its failures changed, on lines of the same shape."""

from __future__ import annotations

from datetime import datetime

from logcorr.analysis import saved
from tests.conftest import case_records, ingested_body, rows_at
from tests.test_batch10 import BATCH as BATCH10

BATCH = BATCH10.parent / "batch20"


def _findings(out) -> dict[str, str]:
    return dict(saved.query(out, "SELECT kind, summary FROM findings").rows())


def _report(out) -> tuple[str, str]:
    """The report's "What happened" line and its whole text."""
    from logcorr.render import report

    gathered = report.gather(out)
    return report.summary_lines(gathered)[0], report.markdown(out, gathered)


def test_13_an_init_frame_under_add_one_req_is_no_start_up_failure(tmp_path):
    """Lines 26–31: a fragment `add_one_req` (schedule_policy.py:851) → `init_load_back`
    (unified_radix_cache.py:1386), the radix cache loading a prefix back for a request being scheduled:
    a crash quoting its innermost frame, never "failed at start-up … raised in init frames, before
    serving" (the init_ prefix of a name is no start-up when a per-batch frame calls it)."""
    out = ingested_body(tmp_path, BATCH, "13")
    found = _findings(out)
    assert list(found) == ["scheduler_crash"]
    summary = found["scheduler_crash"]
    assert summary.startswith(
        "A process crashed (rank not printed) (no time read): exception type not printed"
    )
    assert "in init_load_back (unified_radix_cache.py:1386)" in summary
    assert "start-up" not in summary and "init frames" not in summary
    (row,) = saved.query(out, "SELECT n_frames, function, line, exception FROM tracebacks").rows()
    assert row == (2, "init_load_back", 1386, None)


def test_an_init_frame_without_a_serving_frame_is_still_a_start_up_failure(tmp_path):
    """The rule it narrows holds: `__init__` → `init_memory_pool` with no event loop or per-batch frame
    above them is a start-up failure."""
    from logcorr.ingest import ingest

    log = tmp_path / "x.log"
    log.write_text(
        "[2026-01-02 03:04:05 TP2] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl/managers/scheduler.py", line 300, in __init__\n'
        "    self.init_memory_pool()\n"
        '  File "/sgl/model_executor/model_runner.py", line 900, in init_memory_pool\n'
        "    raise RuntimeError('Not enough memory')\n"
        "RuntimeError: Not enough memory\n"
    )
    ingest([log], tmp_path / "out")
    found = _findings(tmp_path / "out")
    assert list(found) == ["start_up_failure"]
    assert "raised in init frames, before serving" in found["start_up_failure"]


def test_03_a_title_quoting_an_exception_in_inline_code_is_prose_and_ranks_without_a_time_are_read(tmp_path):
    """Line 3 "`AssertionError: dec_lock_ref on node with node.swa_lock_ref=0` in SWARadixCache under …"
    is the reporter's sentence (the code span closes inside the line): no exception, no finding; line 14
    `[TP5 EP5] Scheduler hit an exception` prints no time, its ranks are read."""
    out = ingested_body(tmp_path, BATCH, "03")
    found = _findings(out)
    assert list(found) == ["scheduler_crash"]
    assert found["scheduler_crash"].startswith(
        "Scheduler (engine) crashed on TP5 EP5 (no time read): exception type not printed (the traceback is cut)"
        " in process_batch_result (scheduler.py:2472)"
    )
    (title,) = saved.query(out, "SELECT message, kind FROM events WHERE source_pos = 'line 3'").rows()
    assert title == (
        "`AssertionError: dec_lock_ref on node with node.swa_lock_ref=0` in SWARadixCache under DeepSeek-V4"
        " long-context workload",
        "other",
    )
    (crash,) = saved.query(
        out, "SELECT e.ts, e.tp_rank, e.ep_rank, t.n_frames FROM events e JOIN tracebacks t USING (event_id)"
    ).rows()
    assert crash == (None, 5, 5, 4)


def test_an_exception_quoted_whole_in_inline_code_is_still_an_exception_line():
    """The markdown rule it narrows holds: a line that is only a code span around an exception line
    (closing backtick at its end) is that exception line, its backticks off."""
    from logcorr.ingest import records_from_text

    ev = records_from_text("`RuntimeError: Decode out of memory.`\n", "x.log")
    assert ev["message"].to_list() == ["RuntimeError: Decode out of memory."]


def test_06_a_watchdog_line_with_ranks_and_no_time_names_its_rank(tmp_path):
    """Line 23 `  [TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)` in an
    indented fence: the watchdog of TP0, no time, 300 s, not soft."""
    out = ingested_body(tmp_path, BATCH, "06")
    (row,) = saved.query(out, "SELECT tp_rank, watchdog_kind, timeout_s, soft, ts FROM watchdogs").rows()
    assert row == (0, "watchdog_timeout", 300, False, None)
    found = _findings(out)
    assert found["scheduler_watchdog"].startswith(
        "SGLang's scheduler watchdog fired on TP0 (no time read) (timeout 300 s)"
    )


def test_02_frame_lines_with_escaped_quotes_are_frames():
    """Lines 6–17: `File \\"…/scheduler.py\\", line 3805, in run_scheduler_process` (quotes escaped, no
    indentation) are TP1's traceback: 5 frames, innermost scheduler.py:1431 event_loop_overlap."""
    from logcorr.parsers import sglang

    ev = case_records(BATCH, "02")
    (rec,) = rows_at(ev, 5)
    assert (rec["log_ts"], rec["tp_rank"], rec["n_lines"]) == (datetime(2026, 4, 24, 10, 2, 46), 1, 13)
    assert (
        '\nFile "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 3805,' in rec["message"]
    )
    import polars as pl

    tb = sglang.tracebacks(ev.filter(pl.col("source_pos") == "line 5"))
    assert tb.select("n_frames", "function", "line", "exception").rows() == [
        (5, "event_loop_overlap", 1431, None)
    ]


def test_05_a_traceback_tail_from_an_unindented_caret_line_is_a_traceback(tmp_path):
    """Lines 3–9: `^^^^`, two frames and `NameError: name 'sgl_build_tree_kernel' is not defined. …`, no
    header: a traceback (2 frames, innermost build_eagle_tree.py:149 build_tree_kernel, NameError), named
    by its exception; TP3's own crash below it keeps no exception."""
    out = ingested_body(tmp_path, BATCH, "05")
    rows = saved.query(
        out,
        "SELECT e.source_pos, e.tp_rank, t.n_frames, t.function, t.line, t.exception"
        " FROM events e JOIN tracebacks t USING (event_id) ORDER BY e.event_id",
    ).rows()
    assert rows == [
        ("line 3", None, 2, "build_tree_kernel", 149, "NameError"),
        ("line 12", 3, 4, "run_batch", 1089, None),
    ]
    found = _findings(out)
    assert found["unexplained_crash"].startswith(
        "Unexplained exception NameError: name 'sgl_build_tree_kernel' is not defined. Did you mean:"
        " 'build_tree_kernel'? in build_tree_kernel (build_eagle_tree.py:149)"
    )
    assert "exception type not printed" in found["scheduler_crash"]


def test_12_a_lone_pyspy_capture_is_said_with_its_threads_and_the_chain_does_not_deny_it(tmp_path):
    """The file's only record is a py-spy dump without its process header: the no-failure summary names
    the capture and where each thread was (Thread-2 in ncclCommWindowRegister), and the chain section
    no longer says "no py-spy capture" beside it."""
    out = ingested_body(tmp_path, BATCH, "12")
    happened, text = _report(out)
    assert happened.startswith("**What happened**: the data shows no failure")
    assert "a py-spy dump (no process header read, no time read) of 2 thread(s), all idle:" in happened
    assert "Thread-2 (forward_thread_func) in ncclCommWindowRegister (pynccl_wrapper.py:540)" in happened
    assert "and the frames of 1 thread(s) whose header the dump lacks" in happened
    assert "no py-spy capture)" not in text
    assert "no stuck stacks in a round of py-spy captures of an engine" in text


def test_11_tool_call_markup_left_in_an_answer_is_the_quiet_failure_not_cannot_be_told(tmp_path):
    """Lines 7–13, a chat completion's message whose `reasoning_content` ends in Kimi-K2's tool-call markup
    (`<|tool_calls_section_begin|> … functions.search:1 …`) with `"tool_calls": null`: an answer whose call
    the parsers did not parse, quoted by its markup line; no HTTP status, no crash."""
    out = ingested_body(tmp_path, BATCH, "11")
    found = _findings(out)
    assert list(found) == ["unexplained_errors"]
    summary = found["unexplained_errors"]
    assert summary.startswith(
        'Unexplained error: "ecifically to verify if the DOI provided by the user is correct.'
    )
    assert "1 answer with tool-call markup left in its text (the call not parsed)" in summary
    assert "error level" not in summary
    happened, _ = _report(out)
    assert "cannot be told" not in happened


def test_tool_call_markup_in_a_users_message_is_no_leak(tmp_path):
    """Markup in a prompt (a user's or the template's message, no assistant role, no reasoning_content) is
    no answer: no finding."""
    from logcorr.ingest import ingest

    log = tmp_path / "x.log"
    log.write_text(
        '{"role": "user", "content": "earlier: <|tool_calls_section_begin|> call <|tool_calls_section_end|>"}\n'
    )
    ingest([log], tmp_path / "out")
    assert saved.query(tmp_path / "out", "SELECT kind FROM findings").rows() == []


def test_02_a_caret_line_then_an_exception_line_is_a_traceback_and_06_the_kv_pools_are_said(tmp_path):
    """02, lines 2-3: `         ^^^^^^^^^` then `AssertionError: parent does not have child key, …` (the tail of a
    traceback whose frames are above the paste): a traceback row with its exception and no frame, so the
    summary's chain names it. 06: the pools printed right before TP0's watchdog (`[full] total=1939712,
    available=256, evictable=1935360, …`, `[swa] …`) are said with it."""
    out = ingested_body(tmp_path, BATCH, "02")
    rows = saved.query(
        out, "SELECT n_frames, exception, left(exc_message, 31) FROM tracebacks ORDER BY event_id"
    ).rows()
    assert rows == [(0, "AssertionError", "parent does not have child key,"), (5, None, None)]
    found = _findings(out)
    assert found["unexplained_crash"].startswith(
        "Unexplained exception AssertionError: parent does not have child key, (7664, 328,"
    )
    out = ingested_body(tmp_path, BATCH, "06")
    assert _findings(out)["scheduler_watchdog"] == (
        "SGLang's scheduler watchdog fired on TP0 (no time read) (timeout 300 s): the scheduler made no progress"
        " for that long; the KV pools printed just before it: full: 256 of 1939712 available, 1935360 evictable;"
        " swa: 768 of 193792 available, 188928 evictable"
    )
