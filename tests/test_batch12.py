"""batch12 (tests/cases/batch12, a blind batch: README written before the first run, EVAL.md the score
before the fixes): each file's body (its ``# source``/``# note`` lines off, as the evaluation read it)."""

from __future__ import annotations

from datetime import datetime

import polars as pl

from logcorr.analysis import saved
from logcorr.parsers import journald
from logcorr.render import report
from tests.conftest import case_records, ingested_body, rows_at
from tests.test_batch10 import BATCH as BATCH10

BATCH = BATCH10.parent / "batch12"


def test_01_an_sglang_header_cut_before_its_time_still_gives_the_time_of_day_and_the_ranks(tmp_path):
    """Line 2 `17:15:42 DP3 TP3 EP3] Scheduler hit an exception: Traceback …` (the paste lost the `[` and
    the date): the record's time of day as printed, no date, and its ranks; the crash names them."""
    out = ingested_body(tmp_path, BATCH, "01")
    rows = saved.query(
        out,
        "SELECT ts, printed_time, dp_rank, tp_rank, ep_rank, kind, n_lines FROM events WHERE source_pos = 'line 2'",
    )
    assert rows.rows() == [(None, "17:15:42", 3, 3, 3, "traceback", 19)]
    (summary,) = saved.query(out, "SELECT summary FROM findings WHERE kind = 'scheduler_crash'")["summary"]
    assert summary.startswith(
        "Scheduler (decode) crashed on DP3 TP3 EP3 (no time read; printed without a date: 17:15:42)"
    )


def test_04_records_glued_on_one_line_are_split_at_every_worker_prefix(tmp_path):
    """Line 3 holds eight `(VllmWorker rank=0 pid=234357) …` records without line breaks, their frame
    lines unindented: split at each prefix, the traceback's parts joined again under their common stamp,
    its two frames read (innermost worker_v1.py:207 execute_model); the exception is cut."""
    out = ingested_body(tmp_path, BATCH, "04")
    rows = saved.query(
        out, "SELECT kind, n_lines, pid, level FROM events WHERE source_pos = 'line 3' ORDER BY event_id"
    )
    assert rows.rows() == [("other", 1, 234357, None), ("traceback", 8, 234357, "ERROR")]
    tb = saved.query(out, "SELECT pid, tp_rank, n_frames, function, line, exception FROM tracebacks")
    assert tb.rows() == [(234357, 0, 2, "execute_model", 207, None)]


def test_05_an_exception_line_of_pythons_base_class_is_shown(tmp_path):
    """Line 2 `(EngineCore_DP0 pid=8041) Exception: WorkerProc initialization failed …` (the tail of a
    traceback whose head is not in the excerpt) is an exception marker: the finding quotes it."""
    out = ingested_body(tmp_path, BATCH, "05")
    found = saved.query(out, "SELECT kind, n, summary FROM findings")
    assert found.select("kind", "n").rows() == [("unexplained_crash", 2)]
    assert (
        '"(EngineCore_DP0 pid=8041) Exception: WorkerProc initialization failed due to' in found["summary"][0]
    )


def test_06_a_traceback_relayed_line_by_line_behind_a_rust_target_is_one_record(tmp_path):
    """Lines 1-10 `    2025-06-06T19:02:34.252Z DEBUG dynamo_run::subprocess: …`: dynamo-run relays its
    vLLM subprocess's traceback, each line behind the same time, level and target: one record (UTC,
    DEBUG as printed), its three frames read (innermost engine.py:177 __init__), a start-up failure."""
    out = ingested_body(tmp_path, BATCH, "06")
    ev = saved.query(out, "SELECT ts, zoned, level, kind, n_lines FROM events")
    assert ev.rows()[0][1:] == (True, "DEBUG", "traceback", 10) and ev.height == 1
    assert ev["ts"][0].replace(tzinfo=None) == datetime(2025, 6, 6, 19, 2, 34, 252000)
    tb = saved.query(out, "SELECT n_frames, function, line, exception FROM tracebacks")
    assert tb.rows() == [(3, "__init__", 177, None)]
    assert saved.query(out, "SELECT kind FROM findings")["kind"].to_list() == ["start_up_failure"]


def test_08_a_journalctl_short_line_with_a_french_month_is_read(tmp_path):
    """Lines 2-10 `déc. 19 02:07:16 s-a60003 bash[2211352]: (EngineCore_DP0 pid=2211352) …` (journalctl
    -o short on a French-locale host): host, pid, the time as printed (no year anywhere: none invented),
    and the traceback fragment under the worker prefix, 4 frames, innermost core.py:892."""
    out = ingested_body(tmp_path, BATCH, "08")
    rows = saved.query(
        out,
        "SELECT ts, printed_time, host, pid, dp_rank, kind, n_lines FROM events WHERE source_pos = 'line 2'",
    )
    assert rows.rows() == [(None, "12-19 02:07:16", "s-a60003", 2211352, 0, "traceback", 9)]
    tb = saved.query(out, "SELECT n_frames, function, line, exception FROM tracebacks")
    assert tb.rows() == [(4, "_process_engine_step", 892, None)]


def test_short_lines_take_the_month_of_any_common_locale_and_a_lent_year():
    """A German `Dez` and a Spanish `ene.` open short lines; the year a line of the chunk prints dates
    them; without one the time stays as printed."""
    lines = pl.Series(
        ["Dez 31 23:59:58 h app[7]: Neujahr", "ene. 01 00:00:01 h app[7]: at 2026-01-01 00:00:01 año nuevo"]
    )
    recs = journald.parse_short_lines(lines, source="x")
    assert recs["ts"].dt.replace_time_zone(None).to_list() == [
        datetime(2026, 12, 31, 23, 59, 58),
        datetime(2026, 1, 1, 0, 0, 1),
    ]
    assert recs["envelope_time"].to_list() == [None, None]
    alone = journald.parse_short_lines(pl.Series(["juil. 04 10:00:00 h app[7]: x"]), source="x")
    assert (alone["ts"][0], alone["envelope_time"][0], alone["pid"][0]) == (None, "07-04 10:00:00", 7)


def test_10_lmcaches_trailing_stamp_gives_level_and_time_and_opens_its_record():
    """Lines 3-5 `(VllmWorkerProcess pid=319) WARNING LMCache: … [2025-03-19 13:01:55,934] -- /…/utils.py:25`
    and lines 8-9 without the worker prefix: level and the time printed at the end of the line; lines
    8-9 are records of their own, not the tail of line 7's vLLM INFO record."""
    ev = case_records(BATCH, "10")
    got = [
        (r["level"], r["log_ts"], r["pid"], r["n_lines"]) for n in (3, 4, 5, 7, 8, 9) for r in rows_at(ev, n)
    ]
    assert got == [
        ("WARNING", datetime(2025, 3, 19, 13, 1, 55, 934000), 319, 1),
        ("WARNING", datetime(2025, 3, 19, 13, 1, 55, 934000), 319, 1),
        ("INFO", datetime(2025, 3, 19, 13, 1, 55, 934000), 319, 1),
        ("INFO", datetime(2025, 3, 19, 13, 2, 5), None, 1),
        ("INFO", datetime(2025, 3, 19, 13, 2, 26, 160000), None, 1),
        ("DEBUG", datetime(2025, 3, 19, 13, 2, 26, 618000), None, 1),
    ]


def test_15_dynamo_serve_lines_are_a_serving_stacks_and_the_report_says_no_failure(tmp_path):
    """`2025-06-25T10:49:23.881Z  INFO serving.serve_dynamo_graph: …`: Dynamo's header (Z time, level
    padded to five, a Python target naming dynamo): the summary says the data shows no failure and what
    it shows, never that no line is in Dynamo's header format."""
    out = ingested_body(tmp_path, BATCH, "15")
    results = report.gather(out)
    with report.drawn(results):
        text = report.markdown(out, results)
    summary = text[text.index("## Summary") : text.index("## Findings")]
    assert "the data shows no failure" in summary and "dynamo_Router started" in summary
    assert "Dynamo's header format" not in text
