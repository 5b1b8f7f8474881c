"""batch21 (tests/cases/batch21, a blind batch: README written before the first run, EVAL.md the score
before the fixes): each file's body (its ``# source``/``# note`` lines off, as the evaluation read it), and
the rules its failures changed, on lines of the same shape."""

from __future__ import annotations

from datetime import UTC, datetime

from logcorr.analysis import saved
from logcorr.ingest import ingest, records_from_text
from tests.conftest import case_records, ingested_body, rows_at
from tests.test_batch10 import BATCH as BATCH10

BATCH = BATCH10.parent / "batch21"


def _findings(out) -> list[tuple]:
    return saved.query(out, "SELECT kind, n, summary FROM findings").rows()


def test_11_the_raylets_worker_death_is_a_dead_child_never_no_failure(tmp_path):
    """`(raylet) A worker died or was killed while executing a task by an unexpected system error. …
    Worker PID: 270291 …` (cut): a child process reported dead, its pid the worker's; the OOM killer Ray
    lists among possible causes is not said, and the report never says "no failure"."""
    out = ingested_body(tmp_path, BATCH, "11")
    ((kind, n, summary),) = _findings(out)
    assert (kind, n) == ("child_exits", 1)
    assert summary == "1 child process reported dead by the parent (no time read): pid 270291"
    (row,) = saved.query(out, "SELECT target_pid, exit_code, source_pos FROM watchdogs").rows()
    assert row == (270291, None, "line 10")


def test_13_torch_elastics_failed_worker_is_a_dead_child_and_its_pid_the_agents(tmp_path):
    """`E1128 21:12:50.390000 3139541 site-packages/torch/distributed/elastic/multiprocessing/api.py:874]
    failed (exitcode: -6) local_rank: 3 (pid: 3139623) of binary: …`: the worker 3139623 killed by SIGABRT,
    reported by the agent whose process id (3139541) torch's logger prints where glog prints a thread."""
    out = ingested_body(tmp_path, BATCH, "13")
    kinds = [k for k, _, _ in _findings(out)]
    assert kinds[0] == "child_exits"
    summary = _findings(out)[0][2]
    assert "pid 3139623 (exit code -6: killed by signal 6 SIGABRT)" in summary
    assert "printed without a year: 11-28 21:12:50.390000" in summary
    ev = case_records(BATCH, "13")
    for line, level in ((5, "WARNING"), (6, "WARNING"), (7, "WARNING"), (8, "ERROR")):
        (row,) = rows_at(ev, line)
        assert (row["pid"], row["level"]) == (3139541, level)


def test_02_03_ray_serves_prefixes_and_logger(tmp_path):
    """`(ServeReplica:default:LLMDeploymentqwen-0_5b pid=14262) ` (an actor named by its application and
    deployment) and `(pid=2159, ip=10.0.21.1) ` (no name) are Ray's worker prefixes: their pid read; Ray
    Serve's logger `ERROR 2025-05-23 00:42:04,876 … -- msg` gives the level and the time (no zone), and the
    frames logged below its message without a `Traceback` line are a traceback."""
    ev = case_records(BATCH, "02")
    (dead,) = rows_at(ev, 2)
    assert (dead["unit"], dead["pid"]) == ("ServeReplica:default:LLMDeploymentqwen-0_5b", 14262)
    (failure,) = rows_at(ev, 4)
    assert (failure["pid"], failure["level"], failure["kind"]) == (14262, "ERROR", "traceback")
    assert failure["log_ts"] == datetime(2025, 5, 23, 0, 42, 4, 876000)
    assert failure["request_id"] == "700823bf-0cfe-460a-bb1c-00e25d0f3fb8"
    out = ingested_body(tmp_path, BATCH, "02")
    tbs = saved.query(
        out, "SELECT function, line, n_frames, exception FROM tracebacks ORDER BY event_id"
    ).rows()
    assert tbs[1] == ("_predict", 528, 2, None)

    ev = case_records(BATCH, "03")
    (nameless,) = rows_at(ev, 3)
    assert (nameless["pid"], nameless["level"], nameless["unit"]) == (2159, "INFO", None)
    (controller,) = rows_at(ev, 4)
    assert (controller["unit"], controller["pid"], controller["level"]) == ("ServeController", 2922, "ERROR")
    assert controller["log_ts"] == datetime(2025, 4, 2, 17, 25, 34, 553000)


def test_01_a_nanosecond_stamp_is_dockers_before_any_text(tmp_path):
    """`docker logs -t`'s `2023-12-28T13:17:07.318739139Z ` before `terminate called …` (no header of its
    own) is the record's time, UTC, and comes off the text, as it does before the c10d lines."""
    out = ingested_body(tmp_path, BATCH, "01")
    rows = saved.query(
        out,
        "SELECT source_pos, ts, zoned, left(message, 18) FROM events WHERE source_pos IN ('line 5', 'line 9')",
    ).rows()
    assert sorted(rows) == [
        ("line 5", datetime(2023, 12, 28, 13, 17, 7, 318695, tzinfo=UTC), True, "You are using a mo"),
        ("line 9", datetime(2023, 12, 28, 13, 17, 7, 318739, tzinfo=UTC), True, "terminate called a"),
    ]
    # an application's own ISO time (µs) before plain text stays the line's in a paste; a text of such
    # lines alone is a container's or kubectl's (the sniffer's choice, as at ingest: the stamp comes off)
    ev = records_from_text("Here is what I saw:\n2024-04-18T22:43:58.111453Z starting\n", "x.log")
    assert ev["message"][1] == "2024-04-18T22:43:58.111453Z starting"
    ev = records_from_text("2024-04-18T22:43:58.111453Z starting\n", "x.log")
    assert ev.select("message", "ts").row(0) == (
        "starting",
        datetime(2024, 4, 18, 22, 43, 58, 111453, tzinfo=UTC),
    )


def test_08_a_traceback_pasted_newest_first_names_its_first_frame_innermost(tmp_path):
    """A log viewer's paste, newest line first (each frame's carets and code line above its `File` line,
    tab-only lines between): 5 frames, the innermost the first printed, `sync_wrapper (otel.py:178)`."""
    out = ingested_body(tmp_path, BATCH, "08")
    (tb,) = saved.query(out, "SELECT pid, function, line, n_frames, exception FROM tracebacks").rows()
    assert tb == (1, "sync_wrapper", 178, 5, None)
    # Python's own order, carets after the code line, keeps the last frame innermost
    log = tmp_path / "plain.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/a.py", line 1, in outer\n    inner()\n    ^^^^^^^\n'
        '  File "/b.py", line 2, in inner\n    raise ValueError("x")\nValueError: x\n'
    )
    ingest([log], tmp_path / "plain")
    assert saved.query(tmp_path / "plain", "SELECT function FROM tracebacks").rows() == [("inner",)]


def test_03_a_cut_traceback_below_a_logged_error_is_quoted_by_that_message(tmp_path):
    """Line 4's `ERROR … controller 2922 -- Exception in Replica(…), the replica will be stopped.` above its
    traceback (cut before the exception): tracebacks.lead holds the message, and the report quotes it with the
    innermost frame beside it, never the innermost frame's File line alone."""
    out = ingested_body(tmp_path, BATCH, "03")
    (tb,) = saved.query(out, "SELECT lead, function, n_frames FROM tracebacks").rows()
    assert tb == (
        "Exception in Replica(id='m37qpvvp', deployment='vLLM:qwen-1_5b', app='default'), the replica will be stopped.",
        "wrapper",
        3,
    )
    ((kind, _, summary),) = _findings(out)
    assert kind == "unexplained_crash"
    assert summary.startswith(
        "Unexplained crash or exception: \"Exception in Replica(id='m37qpvvp', deployment='vLLM:qwen-1_5b',"
        " app='default'), the replica will be stopped.\" (no exception line read in its traceback; innermost"
        " frame: wrapper (client_mode_hook.py:103)) at 2025-04-02 17:25:34"
    )
    # Python logging's ERROR line above a cut traceback reads the same; an INFO line a traceback joined is no lead
    log = tmp_path / "py.log"
    log.write_text(
        "2024-06-17 04:42:39,559 - server - ERROR - Failed to serve request 42\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/app.py", line 12, in handle\n    run()\n'
    )
    ingest([log], tmp_path / "py")
    (summary,) = saved.query(tmp_path / "py", "SELECT summary FROM findings").rows()[0]
    assert summary.startswith(
        'Unexplained crash or exception: "Failed to serve request 42" (no exception line read in its traceback;'
        " innermost frame: handle (app.py:12))"
    )


def test_02_the_enginedeaderror_tail_is_a_traceback_and_the_request_it_failed_is_said(tmp_path):
    """Lines 2-3 behind the replica's prefix: `    raise self._format_exception(outputs) from None` then
    `vllm.v1.engine.exceptions.EngineDeadError: …` (no File line): a traceback row (0 frames, pid 14262); the
    engine's death as its client reported it leads, and the client's next record (the request failing at
    00:42:04.876, printed without a zone) is said with it."""
    out = ingested_body(tmp_path, BATCH, "02")
    rows = saved.query(out, "SELECT pid, n_frames, exception, lead FROM tracebacks ORDER BY event_id").rows()
    assert rows == [
        (14262, 0, "vllm.v1.engine.exceptions.EngineDeadError", None),
        (14262, 2, None, "Encountered failure while handling request 700823bf-0cfe-460a-bb1c-00e25d0f3fb8"),
    ]
    ((kind, n, summary),) = _findings(out)
    assert (kind, n) == ("scheduler_crash", 1)
    assert summary == (
        "EngineCore died, as its client (pid 14262) reported it (rank not printed) (no time read):"
        " vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for"
        " the root cause.; then the same process's next record at 2025-05-23 00:42:04: \"Encountered failure while"
        ' handling request 700823bf-0cfe-460a-bb1c-00e25d0f3fb8" (a traceback cut before its exception line;'
        " innermost frame: _predict (llm_server.py:528)); then no exit or restart read after it"
    )


def test_10_12_turbominds_lines_and_torch_elastics_failure_entry(tmp_path):
    """10: `[TM][INFO] …` (TurboMind's logger: level, no time) are records of their own, never lines of the
    Python logging record above them. 12: the Root Cause entry `[0]:` / `time : 2024-09-11_09:17:37` /
    host / rank: the record's time (no zone), host 9018.idas and rank 1; the finding says that time."""
    ev = case_records(BATCH, "10")
    for line in (4, 5, 6, 7):
        (row,) = rows_at(ev, line)
        assert (row["level"], row["log_ts"], row["n_lines"]) == ("INFO", None, 1)
    (python,) = rows_at(ev, 3)
    assert python["n_lines"] == 1
    out = ingested_body(tmp_path, BATCH, "12")
    (row,) = saved.query(
        out,
        "SELECT e.log_ts, e.host, e.tp_rank, w.target_pid FROM events e JOIN watchdogs w USING (event_id)",
    ).rows()
    assert row == (datetime(2024, 9, 11, 9, 17, 37), "9018.idas", 1, 886322)
    assert _findings(out)[0][2] == (
        "1 child process reported dead by the parent on TP1 at 2024-09-11 09:17:37: pid 886322"
        " (exit code -6: killed by signal 6 SIGABRT)"
    )


def test_07_09_cannot_be_told_still_says_what_the_lines_show(tmp_path):
    """No SGLang record in 07 (NCCL INFO lines of two hosts) or 09 (a controller's klog lines): the summary
    still says no failure can be seen, and then what was read: the processes (host and pid) and the last
    record."""
    from logcorr.render.report import report

    text = report(ingested_body(tmp_path, BATCH, "07"))
    (line,) = [x for x in text.splitlines() if "**What happened**" in x]
    assert "cannot be told: logcorr read no record as an SGLang engine" in line
    assert (
        "the processes read: host ranokau pid 398189 (4 record(s)), host lascar pid 73214 (5 record(s))"
        in line
    )
    assert (
        'the last record read: "lascar:73214:73214 \\[0\\] NCCL INFO NET/Plugin: Using internal network plugin."'
        in line
    )
    text = report(ingested_body(tmp_path, BATCH, "09"))
    (line,) = [x for x in text.splitlines() if "**What happened**" in x]
    assert "the processes read: pid 1 (3 record(s))" in line
