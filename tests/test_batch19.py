"""batch19 (tests/cases/batch19, a blind batch: README written before the first run, EVAL.md the score
before the fixes): each file's body (its ``# source``/``# note`` lines off, as the evaluation read it), and
the rules its failures changed, on lines of the same shape."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl

from logcorr.analysis import saved
from logcorr.ingest import ingest, records_from_text
from logcorr.inputs.text import paste_width, row_padding_width, rows_joined
from logcorr.render import report as report_mod
from tests.conftest import case_records, ingested_body, rows_at
from tests.test_batch10 import BATCH as BATCH10

BATCH = BATCH10.parent / "batch19"


def _findings(out) -> list[tuple]:
    return saved.query(out, "SELECT kind, n, summary FROM findings").rows()


def test_04_the_nvidia_drivers_gpu_fallen_off_the_bus_is_a_gpu_failure(tmp_path):
    """dmesg's `[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0` and its indented `NVRM: … fallen off the
    bus and is not responding to commands.` (no Xid, no wall-clock time): a cuda_error finding naming the
    GPU, never "no failure", and what to do is the GPU's hardware, not CUDA_LAUNCH_BLOCKING."""
    out = ingested_body(tmp_path, BATCH, "04")
    ((kind, n, summary),) = _findings(out)
    assert (kind, n) == ("cuda_error", 1)
    assert summary == "GPU fallen off the bus (NVIDIA driver) (GPU 0000:b3:00.0): 1 record(s) (no time read)"
    lines = report_mod.summary_lines(report_mod.gather(out))
    todo = next(x for x in lines if x.startswith("**What to do now**"))
    assert "a GPU lost from the bus" in todo and "CUDA_LAUNCH_BLOCKING" not in todo


def test_an_xid_line_is_a_gpu_error_of_the_driver(tmp_path):
    """The same rule on an Xid line (`NVRM: Xid (PCI:0000:44:00): 79, …`, NVSentinel#155's note): Xid 79
    is the GPU fallen off the bus; another Xid a GPU Xid error; the GPU is named."""
    log = tmp_path / "dmesg.txt"
    log.write_text(
        "[ 1843.308145] NVRM: Xid (PCI:0000:44:00): 79, pid=1911, name=python3, GPU has fallen off the bus.\n"
        "[ 1900.000001] NVRM: Xid (PCI:0000:45:00): 13, pid=1911, name=python3, Graphics Exception\n"
    )
    ingest([log], tmp_path / "out")
    assert sorted(s for _, _, s in _findings(tmp_path / "out")) == [
        "GPU Xid error (NVIDIA driver) (GPU 0000:45:00): 1 record(s) (no time read)",
        "GPU fallen off the bus (NVIDIA driver) (GPU 0000:44:00): 1 record(s) (no time read)",
    ]


def test_08_11_the_kernels_oom_kill_and_tritons_signal_line_are_crashes(tmp_path):
    """`Out of memory: Killed process 25315 (python3)` (dmesg, wrapped by the terminal) and Triton's
    `Signal (11) received.` above its `N# … in lib` frames: crash markers without a time or level, so
    an unexplained crash quoting them (Triton's first named frame too), never "no failure"."""
    out = ingested_body(tmp_path, BATCH, "08")
    ((kind, n, summary),) = _findings(out)
    assert (kind, n) == ("unexplained_crash", 1)
    assert (
        'Unexplained crash or exception: "[2059991.491542] Out of memory: Killed process 25315 (python3)'
        in summary
    )
    out = ingested_body(tmp_path, BATCH, "11")
    ((kind, n, summary),) = _findings(out)
    assert (kind, n) == ("unexplained_crash", 1)
    assert summary.startswith(
        'Unexplained crash or exception: "Signal (11) received." (its first named frame: TRITONBACKEND_ResponseSend)'
        " (no time read)"
    )


def test_01_a_reporters_sentence_quoting_a_watchdog_is_no_watchdog(tmp_path):
    """Line 1 `Hi, I'm having this issue: Watchdog caught collective operation timeout:
    WorkNCCL(SeqNum=80078...) ran for 600026 milliseconds …` closes its parenthesis: no wrapped watchdog
    line, no watchdog row; the indented c10d lines below are the two timeouts, rank 7's first."""
    ev = case_records(BATCH, "01")
    (prose,) = rows_at(ev, 1)
    assert prose["kind"] == "other"
    for line, rank in ((14, 7), (16, 3)):
        (row,) = rows_at(ev, line)
        assert (row["kind"], row["level"], row["tp_rank"]) == ("watchdog", "ERROR", rank)
    out = ingested_body(tmp_path, BATCH, "01")
    found = sorted(_findings(out), key=lambda f: f[2])
    assert [(k, n) for k, n, _ in found] == [("collective_timeout", 1), ("collective_timeout", 1)]
    assert found[0][2].startswith(
        "Collective timeout (NCCL watchdog) on rank 3 (no time read; printed without a"
    )
    assert "ALLREDUCE SeqNum 80078 ran 600013 ms" in found[0][2]
    assert found[1][2].startswith(
        "Collective timeout (NCCL watchdog) on rank 7 (no time read; printed without a"
    )
    assert "BROADCAST SeqNum 80078 ran 600026 ms" in found[1][2]
    # the wrapped form still stands (sglang#3424): the line ends inside WorkNCCL(…)
    wrapped = records_from_text(
        "[rank1]:[E210 02:06:33.347835395 ProcessGroupNCCL.cpp:1595] [PG ID 2 PG GUID 3 Rank 1] Process group"
        " watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout:"
        " WorkNCCL(S\n"
    )
    assert wrapped["kind"].to_list() == ["watchdog"]


def test_01_two_ranks_timed_out_in_different_collectives_at_one_seqnum(tmp_path):
    """Rank 7 timed out in BROADCAST and rank 3 in ALLREDUCE, both at SeqNum 80078 (lines 14, 16): each
    finding says the other rank's collective (a desync) and what to do is where the code paths diverge;
    rank 7's work state (line 15, `[PG 0 (default_pg) Rank 7] … at work: 80078`) is rank 7's evidence
    only, never rank 3's, whose first time stays its own line's (.212150935)."""
    out = ingested_body(tmp_path, BATCH, "01")
    rows = saved.query(
        out,
        "SELECT f.ranks, f.summary, list(e.source_pos ORDER BY e.event_id) FROM findings f,"
        " unnest(f.evidence) AS u(i) JOIN events e ON e.event_id = u.i GROUP BY ALL ORDER BY f.summary",
    ).rows()
    assert [(ranks, lines) for ranks, _, lines in rows] == [
        (["rank 3"], ["line 16"]),
        (["rank 7"], ["line 14", "line 15"]),
    ]
    assert rows[0][1].endswith(
        "ALLREDUCE SeqNum 80078 ran 600013 ms, past its 600 s timeout; at the same SeqNum 80078 another"
        " collective timed out (rank 7 in BROADCAST): the ranks called different collectives at one sequence"
        " number (a desync)"
    )
    assert "another collective timed out (rank 3 in ALLREDUCE)" in rows[1][1]
    lines = report_mod.summary_lines(report_mod.gather(out))
    assert "(rank 3 in ALLREDUCE)" in lines[0] and "on rank 7" in lines[0]
    todo = next(x for x in lines if x.startswith("**What to do now**"))
    assert "TORCH_DISTRIBUTED_DEBUG=DETAIL" in todo and "never entered" not in todo
    body = report_mod.report(out)
    assert "01:45:40.184373931 as printed **collective_timeout**" not in body


def test_10_a_dump_whose_threads_are_all_idle_is_said_so(tmp_path):
    """A py-spy fragment without its `Process` header (no pid, no time): five named threads, all `(idle)`;
    the no-failure line says so, each thread with its innermost frame, and counts the orphan frame of line 1
    (`<module> (<string>:1)`, a thread whose header was cut) apart, never as a thread."""
    out = ingested_body(tmp_path, BATCH, "10")
    assert _findings(out) == []
    happened = report_mod.summary_lines(report_mod.gather(out))[0]
    assert happened.startswith("**What happened**: the data shows no failure")
    assert (
        "a py-spy dump (no process header read, no time read) of 5 thread(s), all idle: MultiprocWorkerMonitor in"
        " select (selectors.py:415), mq-client-shared-loop in poll (zmq/sugar/poll.py:106), Thread-1"
        " (process_input_sockets) in poll (zmq/sugar/poll.py:106), Thread-2 (process_output_sockets) in wait"
        " (threading.py:355), signal-callback in wait (threading.py:355); and the frames of 1 thread(s) whose"
        " header the dump lacks" in happened
    )


def test_08_a_terminals_rows_pasted_inside_a_line_lose_their_padding():
    """dmesg's lines wrapped at 80 columns, each row padded with spaces to the pane's 197 and the rows of a line
    pasted on one line (`… Killed process 25315 (python3) total-vm:53312244<117 spaces>kB, …`): the padding
    runs end at 197 and 394, so they come off and the words they cut read whole (mems_allowed, 53312244kB,
    69068kB, file-rss); a table's aligned columns (small, varied end columns) keep their spaces."""
    ev = case_records(BATCH, "08")
    # lines 3-5: each dmesg stamp opens a kernel message (a header family without wall time), one line each
    lines = [row["message"] for n in (3, 4, 5) for row in rows_at(ev, n)]
    assert [row["ts"] for n in (3, 4, 5) for row in rows_at(ev, n)] == [None] * 3
    assert lines[1] == (
        "[2059991.491542] Out of memory: Killed process 25315 (python3) total-vm:53312244kB, anon-rss:31451456kB,"
        " file-rss:74816kB, shmem-rss:12296kB, UID:0 pgtables:69068kB oom_score_adj:0"
    )
    assert "cpuset=/,mems_allowed=0,global_oom" in lines[0]
    assert "now anon-rss:0kB, file-rss:74732kB" in lines[2]
    table = pl.Series(["sgl-kernel" + " " * 24 + "0.0.3.post6", "sglang" + " " * 28 + "0.4.3.post3"] * 3)
    assert row_padding_width(table) is None
    # a width found elsewhere joins only runs that end at its multiples
    assert rows_joined(table, 197).to_list() == table.to_list()


def test_12_the_in_memory_reading_reads_a_stamped_paste_as_ingest_does(tmp_path):
    """CloudWatch's `2024-04-18T18:44:03.144-04:00` before every TGI line is the shape of `kubectl logs
    --timestamps`: ``records_from_text`` reads it with that reader, as ingest does (the octal `#033[` escapes
    off, TGI's level read, the stamp the record's time in UTC), not as plain text."""
    ev = case_records(BATCH, "12")
    (row,) = rows_at(ev, 2)
    assert (row["level"], row["ts"]) == ("INFO", datetime(2024, 4, 18, 22, 44, 3, 144000, tzinfo=UTC))
    assert row["message"].startswith("2024-04-18T22:43:58.111453Z  INFO shard-manager:")
    out = ingested_body(tmp_path, BATCH, "12")
    assert saved.query(out, "SELECT level, ts FROM events WHERE source_pos = 'line 2'").rows() == [
        (row["level"], row["ts"])
    ]


def test_13_tgis_text_generation_router_is_no_router_between_engines():
    """Line 12 `2024-10-01T07:43:22.392977Z  INFO text_generation_router::server: router/src/server.rs:2593:
    signal received, …`: TGI's web server in front of its shards, not a router between engines (the key:
    engine or unknown); a Rust router crate's line (`vllm_router_rs::server`) stays the router's."""
    (row,) = rows_at(case_records(BATCH, "13"), 12)
    assert (row["role"], row["level"]) == ("unknown", "INFO")
    rust = records_from_text("2026-03-31 13:29:07  INFO vllm_router_rs::server: src/server.rs:966: Started\n")
    assert rust["role"].to_list() == ["router"]


def test_09_deepspeeds_launcher_gives_its_level_and_the_workers_return_code(tmp_path):
    """`[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] [...] exits with return code =
    -9`: DeepSpeed's header gives the level (INFO, ERROR), the time as printed; the worker's -9 is a
    child killed by SIGKILL, no pid printed."""
    ev = case_records(BATCH, "09")
    got = [(r["level"], r["log_ts"]) for r in ev.sort("event_id").to_dicts()]
    assert got == [
        ("INFO", datetime(2023, 4, 14, 13, 11, 27, 879000)),
        ("ERROR", datetime(2023, 4, 14, 13, 11, 27, 885000)),
    ]
    assert ev["message"][0].endswith("Killing subprocess 13266")
    out = ingested_body(tmp_path, BATCH, "09")
    ((kind, n, summary),) = _findings(out)
    assert (kind, n) == ("child_exits", 1)
    assert "pid not printed (exit code -9: killed by signal 9 SIGKILL)" in summary


def test_12_escapes_written_as_octal_033_hide_no_header(tmp_path):
    """CloudWatch's `2024-04-18T18:44:03.144-04:00` then TGI's line with its colour escapes written by
    syslog as `#033[2m`: the escapes come off, TGI's header gives the level, the time is CloudWatch's
    (UTC); start-up progress of TGI is read, so the report says what it shows, no failure."""
    out = ingested_body(tmp_path, BATCH, "12")
    ((level, ts, zoned, message),) = saved.query(
        out, "SELECT level, ts, zoned, message FROM events WHERE source_pos = 'line 2'"
    ).rows()
    assert (level, ts, zoned) == ("INFO", datetime(2024, 4, 18, 22, 44, 3, 144000, tzinfo=UTC), True)
    assert message.startswith("2024-04-18T22:43:58.111453Z  INFO shard-manager: text_generation_launcher:")
    assert _findings(out) == []
    happened = report_mod.summary_lines(report_mod.gather(out))[0]
    assert happened.startswith("**What happened**: the data shows no failure")
    assert "Waiting for shard to be ready... rank=0" in happened


def test_14_a_json_record_keeps_its_time_when_a_bare_line_joins_it():
    """TGI's last JSON line before `Error: WebserverFailed` (a bare line joined to it): the object on the
    first line still gives the time and the level."""
    ev = case_records(BATCH, "14")
    (row,) = rows_at(ev, 5)
    assert (row["n_lines"], row["level"], row["ts"]) == (
        2,
        "INFO",
        datetime(2024, 8, 21, 0, 49, 23, 568821, tzinfo=UTC),
    )


def test_05_one_wrap_among_lines_padded_to_the_terminals_width():
    """`kubectl logs` copied from a pane: every line padded with spaces to 135 columns but one, which the
    terminal wrapped inside `run_engine_c|ore`: that one wrap is enough to know the width, and the frame
    reads whole."""
    body = case_records(BATCH, "05")
    (tb,) = rows_at(body, 8)
    assert "in run_engine_core\n" in tb["message"]
    assert rows_at(body, 11) == []
    lines = pl.Series(["x" * 130 + "     "] * 3 + ["a" * 134 + "c", "ore" + " " * 132])
    assert paste_width(lines) == 135
    # without the padded lines, one wrap alone is no terminal's width
    assert paste_width(pl.Series(["a" * 134 + "c", "ore" + " " * 10, "b" * 135])) is None


def test_13_a_tgi_shard_killed_by_a_signal_is_a_dead_child(tmp_path):
    """`… shard-manager: text_generation_launcher: Shard process was signaled to shutdown with signal 6
    rank=0`: the launcher reports its shard killed by SIGABRT: a dead child (exit code -6), the report's
    main event, before "Shard 0 crashed" and the watchdog's C++ frames (their message cut)."""
    out = ingested_body(tmp_path, BATCH, "13")
    dead = saved.query(
        out,
        "SELECT e.source_pos, w.target_pid, w.exit_code FROM watchdogs w JOIN events e USING (event_id)"
        " WHERE w.watchdog_kind = 'subprocess_crashed'",
    )
    assert dead.rows() == [("line 8", None, -6)]
    happened = report_mod.summary_lines(report_mod.gather(out))[0]
    assert happened == (
        "**What happened**: 1 child process reported dead by the parent at 2024-10-01 07:43:22 UTC:"
        " pid not printed (exit code -6: killed by signal 6 SIGABRT)."
    )
