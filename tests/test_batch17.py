"""batch17 (tests/cases/batch17, a blind batch: README written before the first run, EVAL.md the score
before the fixes): each file's body (its ``# source``/``# note`` lines off, as the evaluation read it), and
the rules its failures changed, on lines of the same shape."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl

from logcorr.analysis import saved
from logcorr.ingest import records_from_text
from logcorr.inputs.text import pane_borders_off
from tests.conftest import case_records, ingested_body, rows_at
from tests.test_batch10 import BATCH as BATCH10

BATCH = BATCH10.parent / "batch17"


def test_01_a_vllm_tag_pasted_with_brackets_as_pairs_still_opens_its_header(tmp_path):
    """`(EngineCore_DP0 pid=559) ERROR 10-20 03:20:50 [core.py:720[] EngineCore encountered a fatal
    error.`: the paste writes every `]` as `[]`; the tag is still vLLM's, so the level and the yearless
    time are read, and the fatal error is an error the report names, never "no failure": quoted first, before
    the stats dump printed beside it at the same level and instant (its words say it failed)."""
    ev = case_records(BATCH, "01")
    for line in (3, 4):
        (row,) = rows_at(ev, line)
        assert (row["level"], row["printed_time"], row["pid"], row["dp_rank"]) == (
            "ERROR",
            "10-20 03:20:50",
            559,
            0,
        )
    out = ingested_body(tmp_path, BATCH, "01")
    (found,) = saved.query(out, "SELECT kind, n, summary FROM findings").rows()
    assert found[:2] == ("unexplained_errors", 2)
    assert found[2].startswith(
        'Unexplained error: "(EngineCore_DP0 pid=559) ERROR 10-20 03:20:50 [core.py:720[] EngineCore encountered a'
        ' fatal error." on DP0'
    )
    assert "Dumping scheduler stats" not in found[2]


def test_02_torchruns_failure_table_is_one_dead_child_per_entry(tmp_path):
    """The ChildFailedError table's entries `[1]:` … `[4]:` are records of their own, each a child death
    with its pid and exit code (-6: SIGABRT); the report leads with the four, the traceback after."""
    out = ingested_body(tmp_path, BATCH, "02")
    dead = saved.query(
        out,
        "SELECT e.source_pos, w.target_pid, w.exit_code FROM watchdogs w JOIN events e USING (event_id)"
        " WHERE w.watchdog_kind = 'subprocess_crashed' ORDER BY w.target_pid",
    )
    assert dead.rows() == [
        ("line 10", 32051, -6),
        ("line 17", 32053, -6),
        ("line 24", 32055, -6),
        ("line 31", 32057, -6),
    ]
    found = saved.query(out, "SELECT kind, n FROM findings").rows()
    assert found == [("child_exits", 4), ("unexplained_crash", 1)]


def test_03_the_root_cause_entry_and_slurms_error_line(tmp_path):
    """The root cause `[0]:` (rank 10, pid 214033, exitcode -6) is a dead child; `srun: error: …: task 0:
    Exited with exit code 1` is Slurm's error line (level error, no time), named by the report."""
    ev = case_records(BATCH, "03")
    (srun,) = rows_at(ev, 20)
    assert (srun["level"], srun["log_ts"], srun["n_lines"]) == ("error", None, 1)
    out = ingested_body(tmp_path, BATCH, "03")
    found = saved.query(out, "SELECT kind, summary FROM findings").rows()
    assert [k for k, _ in found] == ["child_exits", "unexplained_crash", "unexplained_errors"]
    assert "pid 214033 (exit code -6: killed by signal 6 SIGABRT)" in found[0][1]
    assert (
        'Unexplained error: "srun: error: SH-IDC1-10-140-24-95: task 0: Exited with exit code 1"'
        in found[2][1]
    )


def test_04_06_native_stack_frames_without_a_message_are_no_silence(tmp_path):
    """C++ frames behind a Ray actor's prefix (04: `frame #10: gloo::rendezvous::PrefixStore::wait(…) +
    0x109 (0x… in libtorch_cpu.so)`) and Open MPI's backtrace (06: `[40a8c9673b05:1447852] [ 8]
    …(ompi_sync_wait_mt+0xbd)[0x…]`): no header, no level, no message, but a stack: the report shows it
    and says what failed cannot be told; 06's MPI call (MPI_Bcast, under Open MPI's own ompi_* frames) is named."""
    for prefix, n, quoted in (
        ("04", 3, '"(EnvWorker pid=531820, ip=10.0.17.1) frame #10: gloo::rendezvous::PrefixStore::wait('),
        (
            "06",
            1,
            '"[40a8c9673b05:1447852] [ 8] /lib/x86_64-linux-gnu/libopen-pal.so.40(ompi_sync_wait_mt+0xbd)',
        ),
    ):
        out = ingested_body(tmp_path, BATCH, prefix)
        (found,) = saved.query(out, "SELECT kind, ts, n, summary FROM findings").rows()
        assert found[:3] == ("unexplained_crash", None, n)
        assert quoted in found[3]
        assert "(native stack frames without their message: what failed cannot be told" in found[3]
        assert ("the MPI/NCCL call in them: MPI_Bcast)" in found[3]) == (prefix == "06")


def test_a_frame_line_a_finding_cites_is_not_said_twice():
    """The native-frames marker is for records no parser typed: an NCCL watchdog's C++ frames (joined to
    its record) stay that finding's."""
    text = (
        "[rank3]:[E908 08:39:25.432755661 ProcessGroupNCCL.cpp:2068] [PG ID 2 PG GUID 3 Rank 3] Process group"
        " watchdog thread terminated with exception: [Rank 3] Watchdog caught collective operation timeout:"
        " WorkNCCL(SeqNum=432927, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600045"
        " milliseconds before timing out.\n"
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3b6d41df86 in /x/libc10.so)\n"
    )
    ev = records_from_text(text)
    assert ev["kind"].to_list() == ["watchdog"] and ev["n_lines"].to_list() == [2]


def test_07_tensorrt_llms_logger_gives_its_level_and_no_failure(tmp_path):
    """`[TensorRT-LLM][INFO] MPI size: 4, MPI local size: 4, rank: 2`: level INFO, no time, no rank read;
    start-up lines only, so no finding (the title's hang is not in the text)."""
    ev = case_records(BATCH, "07")
    assert ev["level"].to_list() == ["INFO"] * 19
    assert ev["log_ts"].null_count() == 19 and ev["tp_rank"].null_count() == 19
    out = ingested_body(tmp_path, BATCH, "07")
    assert saved.query(out, "SELECT count(*) FROM findings").item() == 0


def test_08_json_records_in_a_k9s_pane_read_through_its_border(tmp_path):
    """Lines 12-13 `│ {"time":"2025-10-08T13:03:51.794Z","level":"INFO",…}<padding>│`: the pane's border
    comes off, the JSON record gives its UTC time and level and, as Dynamo's frontend's request span
    events, a request (GET /v1/models, 200 in "0 ms"); the prose above is no failure, nor are they."""
    ev = case_records(BATCH, "08")
    utc = datetime(2025, 10, 8, 13, 3, 51, 794000, tzinfo=UTC)
    for line, said in ((12, "started processing request"), (13, "finished processing request")):
        (row,) = rows_at(ev, line)
        assert (row["ts"], row["zoned"], row["level"]) == (utc, True, "INFO")
        assert row["message"].startswith(
            '{"time":"2025-10-08T13:03:51.794Z","level":"INFO","message":"' + said
        )
        assert not row["message"].endswith("│")
    out = ingested_body(tmp_path, BATCH, "08")
    assert saved.query(out, "SELECT count(*) FROM findings").item() == 0
    # Dynamo's frontend's span events, "span_name":"http_request" without a target: its requests
    asked = saved.query(out, "SELECT method, path, status, latency_ms FROM requests ORDER BY event_id")
    assert asked.rows() == [("GET", "/v1/models", None, None), ("GET", "/v1/models", 200, 0.0)]


def test_10_a_scheduler_traceback_in_a_k9s_pane_reads_its_frames():
    """Line 2 `[2025-02-28 09:28:25 TP7] Scheduler hit an exception: …<padding>│` and its frames `│   File
    "…", line 116, in decorate_context<padding>│`: the border off, the innermost frame is decorate_context,
    not a name with the padding and `│` in it."""
    from logcorr.parsers.sglang import tracebacks

    ev = case_records(BATCH, "10")
    (row,) = rows_at(ev, 2)
    assert (row["log_ts"], row["tp_rank"], row["n_lines"]) == (datetime(2025, 2, 28, 9, 28, 25), 7, 5)
    (tb,) = tracebacks(ev).select("function", "line", "n_frames", "exception").rows()
    assert tb == ("decorate_context", 116, 2, None)


def test_pane_borders_stay_on_a_drawn_table():
    """A box drawn in text (a table of settings, a tree) holds no record: its `│` stay; a pane's lines
    lose the closing border and its padding, and the opening `│ `."""
    table = pl.Series(["│ key   │ value │", "│ tp    │ 8     │"])
    assert pane_borders_off(table).to_list() == table.to_list()
    pane = pl.Series(['│ {"time":"2025-10-08T13:03:51.794Z","level":"INFO"}     │', "│   x  │"])
    assert pane_borders_off(pane).to_list() == ['{"time":"2025-10-08T13:03:51.794Z","level":"INFO"}', "  x"]


def test_13_rust_tracing_without_a_time_gives_its_level(tmp_path):
    """`ERROR dynamo_runtime::worker: Application shutdown with error: Failed to connect to etcd server …`
    (Rust tracing's format without a time): level ERROR, no time; its `Caused by:` chain and the process's
    `Error: …` exit line stay with it; the report names it, never "no failure"."""
    ev = case_records(BATCH, "13")
    (row,) = rows_at(ev, 3)
    assert (row["level"], row["log_ts"], row["n_lines"]) == ("ERROR", None, 10)
    out = ingested_body(tmp_path, BATCH, "13")
    (found,) = saved.query(out, "SELECT kind, summary FROM findings").rows()
    assert found[0] == "unexplained_errors"
    assert found[1].startswith(
        'Unexplained error: "ERROR dynamo_runtime::worker: Application shutdown with error: Failed to connect to etcd'
    )


def test_rust_tracing_with_a_span_and_a_router_line_keep_their_families():
    """A span before the target (`ERROR request{id=7}: dynamo_llm::http: …`) is the same timeless format;
    a line with the router's time stays the router's (its time read)."""
    ev = records_from_text(
        "ERROR request{id=7}: dynamo_llm::http::service: request failed\n"
        "2025-10-29 21:49:19 ERROR sglang_router_rs::router: file.rs:142: msg\n"
    )
    assert ev["level"].to_list() == ["ERROR", "ERROR"]
    assert ev["ts"].to_list()[0] is None and ev["ts"].to_list()[1] is not None
