"""Crashes and start-up failures read right whatever the clock and the line format: each case file
ingested alone (``tests/conftest.ingested_alone``), its crash, start-up, restart and CUDA findings
asserted against the values its folder's README gives (kind, ranks, pid, exception type, what followed,
restart counter). Times are not asserted in their wording (UTC or as printed), only as cells."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from logcorr.analysis import findings as findings_mod
from logcorr.inputs.rejoin import Rejoiner
from logcorr.parsers.journald import RECORD_COLUMNS
from logcorr.render import report as report_mod
from tests.conftest import CASES, ingested_alone, sql


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("crashes")


def found(workdir: Path, batch: str, prefix: str) -> tuple[Path, list[dict]]:
    out = ingested_alone(workdir, CASES / batch, prefix)
    return out, list(findings_mod.findings(out).iter_rows(named=True))


def what_happened(out: Path) -> str:
    text = report_mod.report(out)
    return next(line for line in text.splitlines() if line.startswith("- **What happened**"))


def pids(out: Path, evidence: list[int]) -> list[int]:
    ids = ", ".join(str(i) for i in evidence)
    return [r[0] for r in sql(out, f"SELECT pid FROM tracebacks WHERE event_id IN ({ids}) ORDER BY event_id")]


def test_b4_11_a_custom_format_stamped_on_every_line_is_a_start_up_failure(workdir):
    """18 lines, each `2025-08-28 21:19:34 ERROR 125765 [ DP10 TP10 EP10 scheduler.py:2655]`: the
    traceback (Scheduler( → __init__ → tp_worker_overlap_thread.py:67) is one record, a start-up
    failure on DP10 TP10 EP10 of pid 125765, its exception type not printed (no 'NCCL timeout')."""
    out, rows = found(workdir, "batch4", "11")
    assert [r["kind"] for r in rows] == ["start_up_failure"]
    (row,) = rows
    assert row["ranks"] == ["DP10 TP10 EP10"] and row["n"] == 1
    assert pids(out, row["evidence"]) == [125765]
    s = row["summary"]
    assert "failed at start-up on DP10 TP10 EP10" in s
    assert "exception type not printed" in s and "in __init__ (tp_worker_overlap_thread.py:67)" in s
    assert "raised in init frames, before serving" in s and "NCCL" not in s and "timeout" not in s
    assert "no failure" not in what_happened(out)


def test_b3_07_a_yearless_journal_says_both_exceptions_and_the_exit_and_restart_after_them(workdir):
    """journalctl short lines without a year: EngineCore (pid 14520, starts mid-traceback) raised
    ValueError, APIServer (pid 14452) RuntimeError; then the unit exited 1/FAILURE and systemd scheduled
    restart 64. The root cause (EngineCore's, first in the input) leads; no absence is claimed."""
    out, rows = found(workdir, "batch3", "07")
    assert [r["kind"] for r in rows] == ["start_up_failure", "start_up_failure", "crash_loop"]
    engine, api, loop = rows
    assert pids(out, engine["evidence"]) == [14520] and pids(out, api["evidence"]) == [14452]
    assert engine["ranks"] == ["DP0"]  # EngineCore_DP0
    assert "ValueError: Free memory on device cuda:0 (0.85/23.56 GiB) on startup" in engine["summary"]
    assert "in request_memory (utils.py:260)" in engine["summary"]
    assert "RuntimeError: Engine core initialization failed" in api["summary"]
    for row in (engine, api):
        assert row["ts"] is None
        assert "then exited (openclaw-vllm.service, 1/FAILURE)" in row["summary"]
        assert "restart counter 64" in row["summary"]
        assert "no exit or restart read after it" not in row["summary"]
        assert "the traceback is cut" not in row["summary"]
    exits = sql(
        out,
        "SELECT event, restart_counter, source_pos FROM lifecycle WHERE event_id IN "
        f"({', '.join(str(i) for i in engine['evidence'])}) ORDER BY event_id",
    )
    assert exits == [("exited", None, "line 69"), ("restart_scheduled", 64, "line 72")]
    assert "restart counter up to 64" in loop["summary"] and "(unknown)" not in loop["summary"]
    assert "ValueError: Free memory" in what_happened(out)


def test_b3_08_a_unit_of_unknown_role_is_named_without_it(workdir):
    out, rows = found(workdir, "batch3", "08")
    (loop,) = [r for r in rows if r["kind"] == "crash_loop"]
    assert loop["summary"].startswith("Crash loop: openclaw-vllm.service crashed 1 time(s)")
    assert "restart counter up to 76" in loop["summary"]
    assert "(unknown)" not in report_mod.report(out).split("## Verdict", 1)[1].split("\n## ", 1)[0]


def test_b4_08_a_torch_global_rank_is_a_rank_not_a_tp_rank(workdir):
    """`[rank3]:[E1117 …] … CUDA error: device-side assert triggered`: PyTorch's rank 3, not TP3."""
    out, rows = found(workdir, "batch4", "08")
    (cuda,) = [r for r in rows if r["kind"] == "cuda_error"]
    assert cuda["ranks"] == ["rank 3"] and cuda["n"] == 1 and cuda["role"] == "decode"
    assert "CUDA device-side assert triggered on decode rank 3: 1 record(s)" in cuda["summary"]
    assert "TP3" not in what_happened(out)


def test_b4_08_an_sglang_tp_tag_stays_tp(tmp_path):
    """The same CUDA error under SGLang's own header keeps its TP rank."""
    log = tmp_path / "tp.log"
    log.write_text("[2025-11-17 21:22:11 DP7 TP7] CUDA error: device-side assert triggered\n")
    from logcorr.ingest import ingest

    ingest([log], tmp_path / "out")
    (cuda,) = [r for r in findings_mod.findings(tmp_path / "out").iter_rows(named=True)]
    assert cuda["ranks"] == ["DP7 TP7"]


def test_b4_05_the_launcher_prefix_crash_is_one_prefill_crash_on_a_zoneless_clock(workdir):
    out, rows = found(workdir, "batch4", "05")
    # the c10 frames printed at once after the cut traceback (same input, same second, no pid either) are the
    # same process's dying words: the crash's evidence, not a second statement
    assert [(r["kind"], r["role"], r["ranks"] or []) for r in rows] == [("scheduler_crash", "prefill", [])]
    assert "Scheduler (prefill) crashed (rank not printed)" in rows[0]["summary"]
    assert "followed at once by 7 native stack frame line(s) of the same input and time" in rows[0]["summary"]
    assert len(rows[0]["evidence"]) == 2
    assert sql(out, "SELECT zoned, zoneless, abs(clock_offset_s) FROM sources") == [(0, 2, 28800.0)]


def test_b3_05_and_b4_09_stay_right(workdir):
    """batch3/05: TP1's RuntimeError, then SIGQUIT; the HCCL watchdog on rank 1. batch4/09: the
    TpModelWorkerClient record glued to `Extension modules:` on DP11 TP11, exception not printed."""
    _, rows = found(workdir, "batch3", "05")
    crash = next(r for r in rows if r["kind"] == "scheduler_crash")
    assert crash["ranks"] == ["TP1"] and "RuntimeError: The Inner error" in crash["summary"]
    assert "then SIGQUIT received (a child process failed)" in crash["summary"]
    assert [r["ranks"] for r in rows if r["kind"] == "collective_timeout"] == [["rank 1"]]
    _, rows = found(workdir, "batch4", "09")
    # the faulthandler's "Fatal Python error: Aborted" is a crash marker no crash finding cites
    assert [(r["kind"], r["ranks"] or []) for r in rows] == [
        ("scheduler_crash", ["DP11 TP11"]),
        ("unexplained_crash", []),
    ]
    assert 'Unexplained crash or exception: "Fatal Python error: Aborted"' in rows[1]["summary"]
    assert "TpModelWorkerClient crashed on DP11 TP11" in rows[0]["summary"]
    assert "exception type not printed" in rows[0]["summary"]


def _lines(messages: list[str]) -> pl.DataFrame:
    n = len(messages)
    cols = {c: [None] * n for c in RECORD_COLUMNS}
    cols |= {"message": messages, "source": ["t"] * n, "stream": ["t"] * n}
    cols["source_pos"] = [f"line {i}" for i in range(1, n + 1)]
    return pl.DataFrame(cols, schema=RECORD_COLUMNS)


def test_a_repeated_header_joins_only_continuation_shaped_bodies():
    """The same header on consecutive lines joins a traceback's parts, never two records of prose."""
    head = "2025-08-28 21:19:34 INFO 7 [ TP0 scheduler.py:1] "
    rejoin = Rejoiner()
    lines = [
        head + "Load weight begin.",
        head + "Load weight begin.",
        head + "Scheduler hit an exception:",
        head + "Traceback (most recent call last):",
        head + '  File "/x/scheduler.py", line 3, in __init__',
        head + "    self.f()",
        head,
        '2025-08-28 21:19:35 INFO 7 [ TP0 scheduler.py:1]   File "/x/y.py", line 4, in g',
    ]
    joined = pl.concat([rejoin.feed(_lines(lines)), rejoin.finish()])
    assert joined["n_lines"].to_list() == [1, 1, 5, 1]
