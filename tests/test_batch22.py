"""batch22 (tests/cases/batch22, a blind batch of a server while it serves: README written before the first run,
EVAL.md the score before the fixes): each file's body (its ``# source``/``# note`` lines off, as the evaluation
read it), and the rules its failures changed, on lines of the same shape."""

from __future__ import annotations

from datetime import datetime

from logcorr.analysis import saved
from tests.conftest import ingested_body
from tests.test_batch10 import BATCH as BATCH10

BATCH = BATCH10.parent / "batch22"


def _findings(out) -> dict[str, str]:
    return dict(saved.query(out, "SELECT kind, summary FROM findings").rows())


def _report(out) -> tuple[str, str]:
    """The report's "What happened" line and its whole text."""
    from logcorr.render import report

    gathered = report.gather(out)
    return report.summary_lines(gathered)[0], report.markdown(out, gathered)


def test_07_a_watchdog_quoted_in_an_inline_code_span_of_prose_is_no_watchdog(tmp_path):
    """Line 10: "after ~430 s all ranks log `Scheduler watchdog timeout (watchdog_timeout=300, soft=False)` and
    the engine is torn down via SIGQUIT": the reporter's sentence, no watchdog row, no finding; the report says
    it read no record it could judge."""
    out = ingested_body(tmp_path, BATCH, "07")
    assert saved.query(out, "SELECT count(*) FROM watchdogs").item() == 0
    assert _findings(out) == {}
    what, _ = _report(out)
    assert "cannot be told" in what and "watchdog fired" not in what


def test_a_watchdog_line_with_its_header_keeps_its_kind_beside_backticks():
    """The rule is for headerless records: SGLang's own line keeps its kind whatever backticks it holds."""
    from logcorr.ingest import records_from_text

    ev = records_from_text("[2025-08-02 19:24:30 TP3] Watchdog timeout (self.watchdog_timeout=300) `x`\n")
    assert ev["kind"].to_list() == ["watchdog"]
    ev = records_from_text("Watchdog timeout (self.watchdog_timeout=300)\n")
    assert ev["kind"].to_list() == ["watchdog"]


def test_05_a_health_probe_answered_503_is_counted_in_the_impact(tmp_path):
    """Line 15 `GET /health` 503 at 05:48:14: the impact says a probe answered 5xx, never "no 5xx answer";
    line 14 (its `[` lost) is read at 2025-09-24 05:48:14 and quoted by the finding."""
    out = ingested_body(tmp_path, BATCH, "05")
    rows = saved.query(out, "SELECT path, status FROM requests ORDER BY source_pos").rows()
    assert rows == [("/health", 503), ("/v1/chat/completions", 200)]
    (probe,) = saved.query(out, "SELECT probe_failed FROM impact").rows()
    assert probe == (1,)
    _, text = _report(out)
    assert "1 health or metrics probe(s) answered 5xx" in text
    assert "no 5xx answer" not in text
    found = _findings(out)
    assert list(found) == ["health_generate_failed"]


def test_05_sglangs_health_check_failure_is_said_as_such_with_the_503(tmp_path):
    """Line 14 (`2025-09-24 05:48:14] Health check failed. Server couldn't get a response from detokenizer for
    last 20 seconds. tic start time: 05:47:54. last_heartbeat time: 05:42:53`, its `[` lost) is SGLang's
    health_generate failing (http_server.py logs it at ERROR, then answers 503): a health_generate_failed
    finding with its seconds, its two printed times and line 15's `GET /health` 503, evidence both records;
    it leads the summary, no longer an unexplained error."""
    out = ingested_body(tmp_path, BATCH, "05")
    (row,) = saved.query(
        out, "SELECT kind, strftime(ts, '%H:%M:%S'), summary, len(evidence) FROM findings"
    ).rows()
    kind, at, summary, n = row
    assert (kind, at, n) == ("health_generate_failed", "05:48:14", 2)
    assert summary == (
        "SGLang's health check failed at 2025-09-24 05:48:14: no response from the detokenizer for 20 s (the"
        " probe began 05:47:54, the last heartbeat 05:42:53, as printed), and /health answered 503: the HTTP"
        " server answered, the probe's generate request got no reply"
    )
    what, _ = _report(out)
    assert "**What happened**: SGLang's health check failed at 2025-09-24 05:48:14" in what


def test_04_a_log_platform_discover_stamp_is_an_envelope(tmp_path):
    """Lines 8-10, each after `May 16, 2026 @ HH:MM:SS.mmm` and a column gap: the access line (POST 200) and
    two DP2 TP2 decode batches (token 31936, 32000; gen throughput 0.39, 43.98); the platform's time is the
    record's time as printed (zone not printed), SGLang's header time its log_ts."""
    out = ingested_body(tmp_path, BATCH, "04")
    (req,) = saved.query(out, "SELECT method, path, status FROM requests").rows()
    assert req == ("POST", "/v1/chat/completions", 200)
    rows = saved.query(
        out,
        "SELECT e.ts::TIMESTAMP, e.log_ts, e.zoned, b.dp_rank, b.tp_rank, b.role, b.token, b.gen_throughput"
        " FROM batches b JOIN events e USING (event_id) ORDER BY event_id",
    ).rows()
    assert rows == [
        (
            datetime(2026, 5, 16, 20, 44, 55, 560000),
            datetime(2026, 5, 16, 12, 44, 55),
            False,
            2,
            2,
            "decode",
            31936,
            0.39,
        ),
        (
            datetime(2026, 5, 16, 20, 44, 57, 925000),
            datetime(2026, 5, 16, 12, 44, 57),
            False,
            2,
            2,
            "decode",
            32000,
            43.98,
        ),
    ]
    what, _ = _report(out)
    assert "the data shows no failure" in what and "2 batch line(s) of decode (TP2)" in what


def test_08_a_stack_pasted_without_header_or_indent_is_a_capture(tmp_path):
    """Lines 14-27: `cuStreamSynchronize (libcuda.so.595.71.05)` … `event_loop_overlap (scheduler.py:1763)` at
    column 0 in a fence, no Thread line: one capture, 13 frames read (the four C++ frames the paste left without
    their library are native frames with no file; the `...` line is no frame), innermost cuStreamSynchronize; the
    summary names where it waits."""
    out = ingested_body(tmp_path, BATCH, "08")
    rows = saved.query(out, "SELECT depth, function, file, line, is_native FROM stacks ORDER BY depth").rows()
    assert len(rows) == 13
    assert rows[0] == (0, "cuStreamSynchronize", "libcuda.so.595.71.05", None, True)
    assert rows[2] == (2, "at::native::nonzero_cuda_out_impl<bool>", None, None, True)
    assert rows[5] == (5, "torch::autograd::THPVariable_getitem", None, None, True)
    assert rows[6] == (6, "filter_dcp_local_kv_indices", "dcp/layout.py", 48, False)
    assert rows[-1] == (12, "event_loop_overlap", "scheduler.py", 1763, False)
    what, _ = _report(out)
    assert (
        "cuStreamSynchronize (libcuda.so.595.71.05) under filter_dcp_local_kv_indices (dcp/layout.py:48)"
        in what
    )


def test_prose_lines_with_a_parenthesis_open_no_thread():
    """Two unindented frame lines are needed, each a sure frame (`f (file:N)` or `sym (lib.so)`): a sentence
    ending in a parenthesis is none."""
    from logcorr.parsers import pyspy

    assert pyspy.parse_dump("We ran it twice (see above)\nand it hung (again)\n").frames.height == 0
    assert (
        pyspy.parse_dump(
            "run_batch (scheduler.py:3594)\nevent_loop_overlap (scheduler.py:1763)\n"
        ).frames.height
        == 2
    )


def test_06_sglangs_abort_request_line_is_an_abort(tmp_path):
    """Line 18 `[2025-02-19 11:45:46] Abort request a96186a3d0f8424eb67e822d7cc66c57`: an aborts row of that
    rid, named by the summary; line 15 (a fence glued to a line that lost its `[`) is TP0's prefill batch."""
    out = ingested_body(tmp_path, BATCH, "06")
    (row,) = saved.query(out, "SELECT ts::TIMESTAMP, rid, abort_kind FROM aborts").rows()
    assert row == (datetime(2025, 2, 19, 11, 45, 46), "a96186a3d0f8424eb67e822d7cc66c57", "abort_request")
    assert saved.query(out, "SELECT count(*) FROM batches WHERE tp_rank = 0 AND new_token = 1").item() == 2
    what, _ = _report(out)
    assert "1 request(s) aborted on engine" in what and "a96186a3d0f8424eb67e822d7cc66c57" in what
    assert "crash" not in what


def test_03_the_no_failure_summary_names_the_probes_answered(tmp_path):
    """Lines 2-4: three GET /health_generate 200 at 07:52:49, 07:52:59, 07:53:09: the summary names them;
    the prose's crashed scheduler is no failure."""
    out = ingested_body(tmp_path, BATCH, "03")
    assert _findings(out) == {}
    what, _ = _report(out)
    assert "the data shows no failure" in what
    assert "3 HTTP answer(s) GET /health_generate 200, 2025-05-26 07:52:49 to 07:53:09" in what


def test_13_weight_loading_is_said_in_start_up_words(tmp_path):
    """Lines 4-23: Load weight begin on TP24-TP31 (08:19:45), end on TP26, 29, 31, 24 (08:21:43): no failure,
    the last record in start-up words is TP24's Load weight end; nothing said of the ranks the cut left."""
    out = ingested_body(tmp_path, BATCH, "13")
    ranks = saved.query(out, "SELECT tp_rank FROM events WHERE tp_rank IS NOT NULL ORDER BY event_id")
    ranks = ranks["tp_rank"].to_list()
    assert ranks == [26, 29, 27, 25, 31, 30, 24, 28, 26, 29, 31, 24]
    what, _ = _report(out)
    assert "the data shows no failure" in what
    assert "the last record in start-up words" in what and "TP24\\] Load weight end" in what


def test_01_two_exception_lines_in_a_row_are_two_records(tmp_path):
    """Lines 6-7: Gloo's `RuntimeError: … Timed out waiting 7200000ms for recv …` then `… for send …`: two
    records; lines 14-21 the unindented frames (4, innermost dp_attn.py:300 maybe_prepare_mlp_sync_batch,
    decode)."""
    out = ingested_body(tmp_path, BATCH, "01")
    rows = saved.query(
        out, "SELECT source_pos FROM events WHERE message LIKE 'RuntimeError:%' ORDER BY 1"
    ).rows()
    assert rows == [("line 6",), ("line 7",)]
    (tb,) = saved.query(out, "SELECT n_frames, function, line, exception FROM tracebacks").rows()
    assert tb == (4, "maybe_prepare_mlp_sync_batch", 300, None)


def test_01_gloos_transport_timeouts_are_a_collective_timeout_that_leads_the_cut_crash(tmp_path):
    """Lines 6-7: Gloo's `Timed out waiting 7200000ms for recv|send operation to complete` are watchdogs rows
    (gloo_timeout, recv and send, 7200 s), one collective_timeout finding of the decode role, no unexplained
    record; the decode traceback (cut before its exception) stays a crash, and the timeout leads the summary."""
    out = ingested_body(tmp_path, BATCH, "01")
    rows = saved.query(
        out, "SELECT source_pos, watchdog_kind, nccl_op, timeout_s, tp_rank FROM watchdogs ORDER BY event_id"
    ).rows()
    assert rows == [
        ("line 6", "gloo_timeout", "recv", 7200.0, None),
        ("line 7", "gloo_timeout", "send", 7200.0, None),
    ]
    found = _findings(out)
    assert set(found) == {"collective_timeout", "scheduler_crash"}
    assert found["collective_timeout"].startswith(
        "Collective timeout (gloo transport) on no rank read (no time read)"
    )
    assert "a recv and send of a gloo collective" in found["collective_timeout"]
    assert "past its 7200 s timeout" in found["collective_timeout"]
    what, text = _report(out)
    assert "**What happened**: Collective timeout (gloo transport) on no rank read" in what, what
    assert "**When and where**: no time read, decode, no rank read." in text
    assert "A process (decode) crashed (rank not printed) → (no time read) Collective timeout" in text


def test_a_cut_crash_keeps_the_lead_over_a_later_collective_timeout():
    """A rank that died makes the others' collectives time out: a crash (cut or not) before the timeout
    leads; a timeout at or before the cut crash of its role leads it (the rule of ``main_finding``)."""
    from datetime import UTC

    import polars as pl

    from logcorr.analysis.findings import CUT_EXCEPTION, main_finding

    def rows(crash_ts, timeout_ts, role="decode"):
        return pl.DataFrame(
            {
                "ts": [crash_ts, timeout_ts],
                "kind": ["scheduler_crash", "collective_timeout"],
                "role": ["decode", role],
                "host": [None, None],
                "summary": [
                    f"A process crashed: {CUT_EXCEPTION} in f (a.py:1)",
                    "Collective timeout (NCCL watchdog)",
                ],
            },
            schema_overrides={"ts": pl.Datetime("us", "UTC"), "host": pl.String},
        )

    t0, t1 = datetime(2026, 1, 1, 10, tzinfo=UTC), datetime(2026, 1, 1, 10, 10, tzinfo=UTC)
    assert main_finding(rows(t0, t1))["kind"] == "scheduler_crash"
    assert main_finding(rows(t1, t0))["kind"] == "collective_timeout"
    assert main_finding(rows(None, None))["kind"] == "collective_timeout"
    assert main_finding(rows(t1, t0, role="prefill"))["kind"] == "scheduler_crash"


def test_an_exception_line_after_a_traceback_frame_still_ends_that_traceback():
    """The split is between two exception lines only: a traceback's own exception line stays its record's."""
    from logcorr.ingest import records_from_text

    text = 'Traceback (most recent call last):\n  File "/x/a.py", line 3, in f\n    g()\nValueError: bad\n'
    assert records_from_text(text).height == 1


def test_10_an_exception_line_after_a_reporters_sentence_is_a_record_of_its_own(tmp_path):
    """Line 3 ("… the scheduler crashed in `qwen_sparse_attn_backend.py` line 682:"), a blank line, then line 5
    `RuntimeError: repeats can not be negative`: a record of its own, never the sentence's last line."""
    from logcorr.ingest import records_from_text

    out = ingested_body(tmp_path, BATCH, "10")
    rows = saved.query(
        out, "SELECT source_pos, message FROM events WHERE message LIKE '%RuntimeError%'"
    ).rows()
    assert rows == [("line 5", "RuntimeError: repeats can not be negative")]
    # the same shape without the blank line; a traceback's code line above keeps its exception line
    ev = records_from_text("The engine died with this error at start-up:\nValueError: bad value\n", "x.log")
    assert ev["message"].to_list() == [
        "The engine died with this error at start-up:",
        "ValueError: bad value",
    ]
    ev = records_from_text('\n  File "/x/a.py", line 3, in f\n    g()\n\nValueError: bad value\n', "x.log")
    assert ev.filter(ev["message"].str.contains("ValueError"))["message"].str.contains("File").to_list() == [
        True
    ]


def test_04_the_two_clocks_are_said_as_a_zones_step(tmp_path):
    """Lines 9-10: SGLang's header 12:44:55 / 12:44:57 against the platform's 20:44:55.560 / 20:44:57.925: the
    report says the two clocks are 8 h apart (a zone's step; the header prints no milliseconds), never 8 h 1 s."""
    out = ingested_body(tmp_path, BATCH, "04")
    _, text = _report(out)
    assert "the header's time is 8 h behind the record's other stamp" in text
    assert "8 h 1 s" not in text


def test_a_bare_cpp_symbol_is_a_frame_only_among_a_threads_frames():
    """The rule on other shapes: `a::b` alone on a line between frames of a thread is a native frame (no file);
    the same line before any frame of a thread is none."""
    from logcorr.parsers.pyspy import parse_dump

    text = 'Thread 7 (active): "MainThread"\n    cuLaunchKernel (libcuda.so)\n    c10::cuda::foo\n    run (a.py:3)\n'
    rows = parse_dump(text).frames.select("function", "file", "is_native").rows()
    assert rows == [
        ("cuLaunchKernel", "libcuda.so", True),
        ("c10::cuda::foo", None, True),
        ("run", "a.py", False),
    ]
    text = 'Thread 7 (active): "MainThread"\n    c10::cuda::foo\n    run (a.py:3)\n'
    rows = parse_dump(text).frames.select("function").rows()
    assert rows == [("run",)]
