"""batch13 (tests/cases/batch13, a blind batch: README written before the first run, EVAL.md the score
before the fixes): each file's body (its ``# source``/``# note`` lines off, as the evaluation read it)."""

from __future__ import annotations

from logcorr.analysis import saved
from logcorr.render import report
from tests.conftest import ingested_body
from tests.test_batch10 import BATCH as BATCH10

BATCH = BATCH10.parent / "batch13"


def _summary(out) -> str:
    results = report.gather(out)
    with report.drawn(results):
        text = report.markdown(out, results)
    return text[text.index("## Summary") : text.index("## Findings")]


def test_12_a_clients_503_line_is_a_failed_request_and_the_impact_says_so(tmp_path):
    """Lines 2 and 4: `… http_utils.py:153 - Error: Server error '503 Service Unavailable' for url
    'http://10.0.13.1:3776/generate'` (httpx's raise_for_status): a requests row with status 503 and its
    path; line 2's three `(RolloutManager pid=1741924) …` records glued on one line are split at the
    repeated prefix, the second dated 13:00:58; the summary never says no 5xx answer was read."""
    out = ingested_body(tmp_path, BATCH, "12")
    rows = saved.query(
        out,
        "SELECT source_pos, strftime(ts, '%Y-%m-%d %H:%M:%S') AS t, pid, status, path FROM requests ORDER BY event_id",
    )
    assert rows.rows() == [
        ("line 2", "2025-12-19 13:00:58", 1741924, 503, "/generate"),
        ("line 4", "2025-12-19 15:17:52", 1963213, 503, "/generate"),
    ]
    ev = saved.query(out, "SELECT source_pos, pid FROM events WHERE source_pos = 'line 2' ORDER BY event_id")
    assert ev.rows() == [("line 2", 1741924), ("line 2", 1741924)]
    summary = _summary(out)
    assert "2 request(s) answered 5xx (503×2" in summary
    assert "no 5xx answer" not in summary


def test_05_a_traceback_whose_paste_lost_its_indentation_is_one_fragment(tmp_path):
    """Lines 1-17: `File "…", line N, in F` and each code line in column 1, then `RuntimeError: NCCL
    error: …`: one record, 8 frames, innermost pynccl_wrapper.py:350 NCCL_CHECK, the exception after the
    last frame's code line (never a code line `self.comm: ncclComm_t = …` read as one)."""
    out = ingested_body(tmp_path, BATCH, "05")
    ev = saved.query(out, "SELECT source_pos, kind, n_lines FROM events")
    assert ev.rows() == [("line 1", "traceback", 17)]
    tb = saved.query(out, "SELECT n_frames, function, line, exception, exc_message FROM tracebacks")
    assert tb.rows() == [
        (
            8,
            "NCCL_CHECK",
            350,
            "RuntimeError",
            "NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
        )
    ]
    (kind,) = saved.query(out, "SELECT kind FROM findings")["kind"]
    assert kind == "start_up_failure"


def test_02_ranks_one_seqnum_apart_are_one_collective_timeout_that_says_who_is_behind(tmp_path):
    """Lines 1 and 5: BROADCAST timed out on rank 0 at SeqNum 5730 and on rank 3 at SeqNum 5729 (600 s):
    one finding over both ranks that says each rank's SeqNum and that rank 3 is one collective behind."""
    out = ingested_body(tmp_path, BATCH, "02")
    found = saved.query(out, "SELECT ranks, summary FROM findings WHERE kind = 'collective_timeout'")
    assert found["ranks"].to_list() == [["rank 0", "rank 3"]]
    assert "rank 0 at SeqNum 5730, rank 3 at SeqNum 5729 (1 collective(s) apart" in found["summary"][0]


def test_04_rays_cpp_header_and_a_lone_faulthandler_stack_are_read(tmp_path):
    """Lines 6-10 `[2024-02-27 16:09:19,106 E 19394 19394] logging.cc:361: …` (Ray's C++ core): ERROR, the
    time as printed (no zone), pid 19394; lines 11-17 `Fatal Python error: Segmentation fault` and
    `Stack (most recent call first):`: the faulting thread's 4 frames, innermost capture_begin."""
    out = ingested_body(tmp_path, BATCH, "04")
    ray = saved.query(
        out,
        "SELECT level, strftime(ts, '%Y-%m-%d %H:%M:%S.%g') AS t, zoned, pid FROM events"
        " WHERE message LIKE '[2024-02-27%' ORDER BY event_id",
    )
    assert ray.rows()[0] == ("ERROR", "2024-02-27 16:09:19.106", False, 19394) and ray.height == 5
    stacks = saved.query(out, "SELECT depth, function, line FROM stacks ORDER BY depth")
    assert stacks.rows() == [
        (0, "capture_begin", 77),
        (1, "__enter__", 192),
        (2, "capture", 782),
        (3, "capture_model", 725),
    ]


def test_08_a_k9s_frame_is_paste_markup_on_both_ends(tmp_path):
    """Lines 3-6 `│ 2026-02-27T14:47:21.385061Z  INFO dynamo_llm::kv_router::scheduler: … │`: the bar
    before, the padding and the bar after are off the message; no fact value keeps them."""
    out = ingested_body(tmp_path, BATCH, "08")
    ends = saved.query(out, "SELECT right(message, 12) AS e FROM events WHERE zoned ORDER BY event_id")["e"]
    assert ends.to_list() == ["tree size: 0", ".031 + 7.000", "tree size: 0", ".031 + 7.000"]
    assert saved.query(out, "SELECT count(*) AS n FROM facts WHERE value LIKE '%│%'")["n"][0] == 0


def test_11_a_traceback_tail_gives_its_module_qualified_exception(tmp_path):
    """Lines 2-3: `    raise self._format_exception(outputs) from None` / `vllm.v1.engine.exceptions.
    EngineDeadError: EngineCore encountered an issue. …` behind vLLM's header: a tracebacks row with that
    exception and its message, no frame."""
    out = ingested_body(tmp_path, BATCH, "11")
    tb = saved.query(out, "SELECT exception, exc_message, n_frames FROM tracebacks ORDER BY event_id")
    assert tb.rows()[0] == (
        "vllm.v1.engine.exceptions.EngineDeadError",
        "EngineCore encountered an issue. See stack trace (above) for the root cause.",
        0,
    )


def test_11_the_stream_generators_cut_traceback_is_part_of_the_engine_deaths_report(tmp_path):
    """Lines 4-14 `Error in chat completion stream generator.` and a traceback cut before its exception line,
    printed at the same instant (08-24 06:28:15, no pid) right after the EngineDeadError of lines 2-3: the same
    death as the stream generator saw it, said in that one finding, no unexplained crash beside it."""
    out = ingested_body(tmp_path, BATCH, "11")
    found = saved.query(out, "SELECT kind, summary, len(evidence) FROM findings").rows()
    assert [(k, n) for k, _, n in found] == [("scheduler_crash", 2)]
    assert found[0][1].endswith(
        "See stack trace (above) for the root cause.; followed at once by 1 more traceback(s) of the same input"
        " and instant, cut before the exception line (innermost frame as printed: chat_completion_stream_generator"
        " (serving.py:498)); then no exit or restart read after it"
    )


def test_a_finished_progress_bar_is_no_step_a_crash_was_in(tmp_path):
    """A bar at its total (23/23) before a scheduler's traceback names no step; one short of it (22/23) does."""
    from logcorr.ingest import ingest

    tb = (
        "[2025-03-10 16:21:31 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/s/scheduler.py", line 2865, in run_scheduler_process\n'
        "    scheduler.event_loop_normal()\n"
        "RuntimeError: boom\n"
    )
    for done, said in (
        ("23/23", None),
        ("22/23", 'during "Capturing batches (bs=1)" (its progress bar at 22/23'),
    ):
        log = tmp_path / f"{done[:2]}.log"
        log.write_text(f"Capturing batches (bs=1):  96%|█████▊| {done} [00:09<00:00,  2.4it/s]\n" + tb)
        ingest([log], tmp_path / done[:2])
        (summary,) = saved.query(tmp_path / done[:2], "SELECT summary FROM findings")["summary"].to_list()
        assert ("during" in summary) == (said is not None)
        assert said is None or said in summary


def test_a_cut_traceback_at_another_instant_stays_apart(tmp_path):
    """The same two records a second apart: the cut traceback is no part of the death, it stays unexplained."""
    from logcorr.ingest import ingest

    log = tmp_path / "x.log"
    log.write_text(
        "ERROR 08-24 06:28:15 [serving.py:932]     raise self._format_exception(outputs) from None\n"
        "ERROR 08-24 06:28:15 [serving.py:932] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered"
        " an issue. See stack trace (above) for the root cause.\n"
        "ERROR 08-24 06:28:16 [serving.py:932] Error in chat completion stream generator.\n"
        "ERROR 08-24 06:28:16 [serving.py:932] Traceback (most recent call last):\n"
        'ERROR 08-24 06:28:16 [serving.py:932]   File "/v/serving.py", line 498, in chat_completion_stream_generator\n'
        "ERROR 08-24 06:28:16 [serving.py:932]     async for res in result_generator:\n"
    )
    ingest([log], tmp_path / "out")
    kinds = saved.query(tmp_path / "out", "SELECT kind FROM findings ORDER BY kind")["kind"].to_list()
    assert kinds == ["scheduler_crash", "unexplained_crash"]


def test_04_a_segfault_with_its_faulting_threads_stack_is_a_crash_with_the_signal_handlers_time(tmp_path):
    """Line 11 `Fatal Python error: Segmentation fault`, then (after a blank line) faulthandler's `Stack (most
    recent call first):` with capture_begin (graphs.py:77) innermost: a crash naming where, whose time is that of
    the signal handlers' lines before it (Ray's `[2024-02-27 16:09:19,106 E 19394 19394] logging.cc:361: ***
    SIGSEGV received …`, as printed, no zone); lines 1-10 are its evidence, no unexplained finding is left. No
    rank is printed, so the process is named by the pid those lines print (19394)."""
    out = ingested_body(tmp_path, BATCH, "04")
    found = saved.query(out, "SELECT kind, ts, zoned, n, summary FROM findings")
    assert found["kind"].to_list() == ["scheduler_crash"]
    row = found.row(0, named=True)
    assert (str(row["ts"])[:23], row["zoned"], row["n"]) == ("2024-02-27 16:09:19.106", False, 1)
    cited = saved.query(
        out,
        "SELECT e.source_pos FROM (SELECT unnest(evidence) AS id FROM findings) f"
        " JOIN events e ON e.event_id = f.id ORDER BY e.event_id",
    )["source_pos"].to_list()
    assert cited == ["line 1", "line 2", "line 6", "line 7", "line 8", "line 9", "line 10", "line 11"]
    assert row["summary"] == (
        "A process (pid 19394) crashed (rank not printed) at 2024-02-27 16:09:19: Fatal Python error: Segmentation fault in"
        " capture_begin (graphs.py:77); then no exit or restart read after it"
    )


def test_09_an_oom_names_how_much_it_asked_for_and_the_frame_its_traceback_shows(tmp_path):
    """Line 3 `OutOfMemoryError('CUDA out of memory. Tried to allocate 138.00 MiB. GPU 0 has a total capacity of
    79.15 GiB of which 2.19 MiB is free. …')`, then a traceback cut after run_engine_loop (engine.py:218): the
    CUDA finding says the allocation, the GPU's memory and the innermost frame read (not 'raised in': cut)."""
    out = ingested_body(tmp_path, BATCH, "09")
    (summary,) = saved.query(out, "SELECT summary FROM findings WHERE kind = 'cuda_error'")["summary"]
    assert summary.endswith(
        ": tried to allocate 138.00 MiB (GPU 0: 79.15 GiB total, 2.19 MiB free);"
        " innermost frame read: run_engine_loop (engine.py:218)"
    )


def test_02_c10d_follow_up_lines_are_the_collective_timeouts_evidence_not_an_unexplained_error(tmp_path):
    """Lines 3-4 `[rank0]:[E822 …] … Stack trace of the failed collective not found, potentially because
    FlightRecorder is disabled …` and `[PG ID 4 PG GUID 67 Rank 0] First PG on this rank to signal dumping.`:
    the watchdog's own follow-up lines on rank 0, cited by the one collective timeout (ranks 0 and 3), no
    unexplained error left."""
    out = ingested_body(tmp_path, BATCH, "02")
    found = saved.query(out, "SELECT kind, ranks FROM findings")
    assert found.rows() == [("collective_timeout", ["rank 0", "rank 3"])]
    cited = saved.query(
        out,
        "SELECT e.source_pos FROM (SELECT unnest(evidence) AS id FROM findings) f"
        " JOIN events e ON e.event_id = f.id ORDER BY e.event_id",
    )["source_pos"].to_list()
    assert cited == ["line 1", "line 2", "line 3", "line 4", "line 5", "line 6"]


def test_03_the_c10d_watchdog_stuck_480_s_is_a_watchdog_hang_on_rank_6(tmp_path):
    """Lines 1-8 (one record, unwrapped) `[rank6]:[E429 13:55:49.384372190 ProcessGroupNCCL.cpp:1743] … ProcessGroupNCCL's
    watchdog got stuck for 480 seconds …`: a watchdogs row (heartbeat_timeout, 480 s, rank 6) and a watchdog_hang
    finding that names no collective; its dump line (9-10) and the FATAL line (11) are its evidence."""
    out = ingested_body(tmp_path, BATCH, "03")
    rows = saved.query(out, "SELECT source_pos, watchdog_kind, tp_rank, timeout_s FROM watchdogs")
    assert rows.rows() == [("line 1", "heartbeat_timeout", 6, 480.0)]
    found = saved.query(out, "SELECT kind, ranks, summary, len(evidence) AS k FROM findings")
    assert found.select("kind", "ranks", "k").rows() == [("watchdog_hang", ["rank 6"], 3)]
    assert (
        "the watchdog thread itself made no progress for 480 s (a hang inside NCCL or CUDA; no collective named)"
        in (found["summary"][0])
    )


def test_01_the_heartbeat_monitor_timing_out_is_a_watchdog_hang_beside_the_workers_death(tmp_path):
    """Line 10 `[rank0]:[E ProcessGroupNCCL.cpp:1316] [PG 2 Rank 0] Heartbeat monitor timed out! …` (no time): a
    watchdog_hang on rank 0 with line 11 (`… preparing to dump debug info`) as evidence; worker pid 198's death
    (exit code -6) still leads. Lines 2-6, the c10d stack's frames whose message the excerpt cut (batch17's rule:
    native frames without their message), are an unexplained crash that says what failed cannot be told."""
    out = ingested_body(tmp_path, BATCH, "01")
    found = saved.query(out, "SELECT kind, ranks, len(evidence) AS k FROM findings ORDER BY kind")
    assert found.rows() == [
        ("child_exits", None, 1),
        ("unexplained_crash", None, 5),
        ("watchdog_hang", ["rank 0"], 2),
    ]
    lines = report.summary_lines(report.gather(out))
    assert lines[0].startswith("**What happened**: 1 child process reported dead by the parent")


def test_13_multiprocessings_process_line_above_a_cut_traceback_is_that_process_failing_at_start_up(tmp_path):
    """Lines 4-14 behind `(EngineCore_DP0 pid=230522) `: Python multiprocessing's `Process EngineCore_DP0:` then a
    traceback cut after core.py:834 run_engine_core, whose code line `engine_core = EngineCoreProc(*args,
    **kwargs)` builds the engine core: EngineCore_DP0 (DP0) failed at start-up, while constructing
    EngineCoreProc, during the CUDA graph capture whose tqdm bar (line 3, 2/83) was printed right before it;
    no exception type claimed, no time (the bar's `[00:01<00:56` is elapsed time)."""
    out = ingested_body(tmp_path, BATCH, "13")
    found = saved.query(out, "SELECT kind, ranks, ts, summary FROM findings")
    assert found.rows() == [
        (
            "start_up_failure",
            ["DP0"],
            None,
            "EngineCore_DP0 failed at start-up on DP0 (no time read): exception type not printed (the traceback is"
            " cut) in run_engine_core (core.py:834); raised while constructing EngineCoreProc (its frames cut),"
            ' before serving; during "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)" (its progress bar'
            " at 2/83, printed just before); then no exit or restart read after it",
        )
    ]
