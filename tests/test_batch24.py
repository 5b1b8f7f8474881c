"""batch24 (tests/cases/batch24, a blind batch of stacks and hangs as users paste them: README written before the
first run, EVAL.md the score before the fixes): each file's body (its ``# source``/``# note`` lines off, as the
evaluation read it), and the rules its failures changed, on lines of the same shape."""

from __future__ import annotations

from datetime import UTC, datetime

from logcorr.analysis import saved
from logcorr.inputs import sniff
from tests.conftest import case_body, ingested_body
from tests.test_batch10 import BATCH as BATCH10

BATCH = BATCH10.parent / "batch24"


def _findings(out) -> dict[str, str]:
    return dict(saved.query(out, "SELECT kind, summary FROM findings").rows())


def _report(out) -> tuple[str, str]:
    """The report's "What happened" line and its whole text."""
    from logcorr.render import report

    gathered = report.gather(out)
    return report.summary_lines(gathered)[0], report.markdown(out, gathered)


def test_02_a_faulthandler_dump_that_starts_mid_thread_is_read(tmp_path):
    """Lines 2-4 (three frames of a thread whose header is above the paste) then `Current thread 0x00007769465bb740`
    and 6 frames, innermost first: the ingest read it (it raised AttributeError before and wrote nothing), the
    current thread's innermost frame is weight_loader (linear.py:1254), the headless one's run (tqdm/_monitor.py:60)."""
    out = ingested_body(tmp_path, BATCH, "02")
    rows = saved.query(
        out,
        "SELECT thread_id, thread_state, n_frames, partial FROM captures ORDER BY source_pos, thread_id NULLS FIRST",
    ).rows()
    assert rows == [(None, None, 3, True), (0x00007769465BB740, "current", 6, True)]
    frames = saved.query(
        out,
        "SELECT depth, function, regexp_extract(file, '[^/]+/[^/]+$'), line FROM stacks"
        " WHERE thread_id = 131294035687232 ORDER BY depth",
    ).rows()
    assert frames[0] == (0, "weight_loader", "layers/linear.py", 1254)
    assert frames[-1] == (5, "initialize", "model_executor/model_runner.py", 205)
    assert [f[1] for f in frames] == [
        "weight_loader", "load_weights", "load_model", "get_model", "load_model", "initialize"
    ]  # fmt: skip


def test_a_faulthandler_frame_before_any_header_never_raises():
    """The reader's own shape of the failure: a faulthandler frame line first, no capture open."""
    from logcorr.parsers import pyspy

    result = pyspy.parse_dump('  File "/x/linear.py", line 1254 in weight_loader\n')
    assert result.captures["n_frames"].to_list() == [1]
    assert result.frames.select("function", "line").rows() == [("weight_loader", 1254)]


def test_02_a_faulthandler_dump_without_its_fatal_line_is_named_as_a_dump(tmp_path):
    """The summary names the dump and where its current thread was, says its fatal line was not read, and states
    no signal (the title's Bus error is above the paste), no "no failure" and no "read no … py-spy dump"."""
    out = ingested_body(tmp_path, BATCH, "02")
    assert set(_findings(out)) == {"stacks_captured"}
    what, _ = _report(out)
    assert what.startswith(
        "**What happened**: faulthandler dump of 1 process: 1 thread (thread 131294035687232)"
    )
    assert "was the current thread of the dump in weight_loader (" in what and "linear.py:1254)" in what
    assert (
        'its "Fatal Python error" line, which names the signal when a fatal error printed it, was not read'
        in what
    )
    for said in ("Bus error", "SIGBUS", "Segmentation", "no failure", "cannot be told", "crashed"):
        assert said not in what


def test_06_docker_nanosecond_stamps_are_no_journalctl_short_lines(tmp_path):
    """`2025-11-10T09:50:25.136395428Z frame #15: sglang::scheduler_TP0() [0x59e4a6]`: a container runtime's
    stamp, never journalctl's (which prints an offset and µs): no host `frame`, every line's stamp its time (UTC),
    the abort record too; the faulthandler header after it a dump of 0 frames."""
    body = case_body(BATCH, "06")
    assert sniff.sniff_bytes(body.encode()) == "kubectl"
    out = ingested_body(tmp_path, BATCH, "06")
    hosts = saved.query(out, "SELECT DISTINCT host FROM events").rows()
    assert hosts == [(None,)]
    rows = saved.query(out, "SELECT ts, zoned, left(message, 27) FROM events ORDER BY event_id").rows()
    assert rows[0] == (
        datetime(2025, 11, 10, 9, 50, 25, 136395, tzinfo=UTC),
        True,
        "frame #15: sglang::schedule",
    )
    assert rows[-1] == (
        datetime(2025, 11, 10, 9, 50, 25, 136422, tzinfo=UTC),
        True,
        "Fatal Python error: Aborted",
    )
    assert len(rows) == 13
    (cap,) = saved.query(out, "SELECT thread_id, n_frames FROM captures").rows()
    assert cap == (0x000071632DFFF640, 0)
    what, _ = _report(out)
    assert '"Fatal Python error: Aborted" on engine at 2025-11-10 09:50:25 UTC' in what


def test_journalctl_short_iso_precise_lines_are_still_short():
    """journalctl's own stamps (an offset, at most µs) keep the short reader."""
    text = (
        "2025-11-10T09:50:25.136395+0000 gpu-1 python3[4711]: [2025-11-10 09:50:25 TP0] Prefill batch.\n"
        "2025-11-10T09:50:26+00:00 gpu-1 python3[4711]: [2025-11-10 09:50:26 TP0] Decode batch.\n"
    )
    assert sniff.sniff_bytes(text.encode()) == "short"


def test_01_a_bracketed_rfc3339_stamp_is_an_envelope_and_a_work_state_timeout_is_a_collective_timeout(
    tmp_path,
):
    """Line 7: `[2025-02-27T16:30:43.48675097Z] [rank3]:[E227 16:30:43.526290891 ProcessGroupNCCL.cpp:1785] …
    detected by watchdog at work: 32, last enqueued NCCL work: 32, last completed NCCL work: 31.` and its
    `Timeout at NCCL work: 32` line: rank 3, ERROR, the stamp's time (UTC); no WorkNCCL line: a collective timeout
    whose op and timeout are not printed."""
    out = ingested_body(tmp_path, BATCH, "01")
    rows = saved.query(
        out, "SELECT ts, zoned, tp_rank, level, kind FROM events WHERE tp_rank IS NOT NULL"
    ).rows()
    assert rows == [(datetime(2025, 2, 27, 16, 30, 43, 486750, tzinfo=UTC), True, 3, "ERROR", "watchdog")]
    wd = saved.query(
        out, "SELECT tp_rank, nccl_seq, nccl_op, last_enqueued, last_completed FROM watchdogs"
    ).rows()
    assert wd == [(3, 32, None, 32, 31)]
    assert _findings(out) == {
        "collective_timeout": "Collective timeout (NCCL watchdog) on rank 3 at 2025-02-27 16:30:43 UTC: op not"
        " printed, SeqNum 32; last completed work 31, last enqueued 32"
    }


def test_a_work_state_timeout_beside_its_worknccl_line_is_one_finding(tmp_path):
    """The rank's WorkNCCL line, when read, carries the timeout: its `Timeout at NCCL work` line adds no second
    finding (the op, the timeout and the last completed work said once)."""
    from logcorr.ingest import ingest

    log = tmp_path / "w.log"
    log.write_text(
        "[rank0]:[E1104 14:02:18.767594328 ProcessGroupNCCL.cpp:688] [Rank 0] Watchdog caught collective operation"
        " timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=200, NumelOut=200, Timeout(ms)=5000) ran for 5096"
        " milliseconds before timing out.\n"
        "[rank0]:[E1104 14:02:18.767650000 ProcessGroupNCCL.cpp:1834] [PG ID 0 PG GUID 0 Rank 0] Timeout at NCCL"
        " work: 7, last enqueued NCCL work: 7, last completed NCCL work: 6.\n"
    )
    ingest([log], tmp_path / "out")
    found = saved.query(tmp_path / "out", "SELECT kind, summary FROM findings").rows()
    assert [k for k, _ in found] == ["collective_timeout"]
    assert "ALLREDUCE SeqNum 7 ran 5096 ms, past its 5 s timeout; last completed work 6" in found[0][1]


def test_04_a_start_up_step_the_excerpt_ends_inside_is_not_called_a_stall(tmp_path):
    """TP0 began "Init torch distributed" at 15:06:10 and printed on inside it (`Found nccl …`, NCCL's
    bootstrap) until 15:06:59, where the paste ends: the summary says the step was not seen past, never that the
    start-up stalled or hung."""
    out = ingested_body(tmp_path, BATCH, "04")
    what, text = _report(out)
    assert what == (
        '**What happened**: Start-up not seen past "Init torch distributed" on TP0: 1 rank(s) began it at'
        " 2025-06-23 15:06:10, none printed its end in the data read, and TP0 printed on at 15:06:59 (49 s after"
        " the last begin)."
    )
    assert "stalled" not in text.split("## Findings")[0] and "while it hangs" not in text


def test_07_nccl_warn_is_counted_as_a_warn_line_not_an_error_level(tmp_path):
    """Line 13 `…:4167:5269 [0] transport/p2p.cc:275 NCCL WARN Cuda failure 'invalid argument'` (level WARNING,
    pid 4167, host 6f747114300646eb-5af0524bda8e4aee) is quoted and counted as 1 NCCL WARN line."""
    out = ingested_body(tmp_path, BATCH, "07")
    rows = saved.query(out, "SELECT host, pid, level FROM events WHERE message LIKE '%NCCL WARN%'").rows()
    assert rows == [("6f747114300646eb-5af0524bda8e4aee", 4167, "WARNING")]
    (summary,) = _findings(out).values()
    assert "NCCL WARN Cuda failure 'invalid argument'" in summary
    assert "(1 NCCL WARN line;" in summary and "error level" not in summary
