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
    (tb,) = saved.query(out, "SELECT function, line, n_frames, exception FROM tracebacks").rows()
    assert tb == ("_predict", 528, 2, None)

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
