"""batch26 (tests/cases/batch26, a blind batch of the corners no batch had read: multimodal, embedding and reward
models, HiCache, bench_serving, /metrics, reports in Chinese; README written before the first run, EVAL.md the score
before the fixes): each file's body (its ``# source``/``# note`` lines off, as the evaluation read it), and the rules
its failures changed, on lines of the same shape."""

from __future__ import annotations

from datetime import datetime

import polars as pl

from logcorr.analysis import saved
from tests.conftest import case_body, ingested_body
from tests.test_batch10 import BATCH as BATCH10

BATCH = BATCH10.parent / "batch26"


def _what(out) -> str:
    """The report's "What happened" line."""
    from logcorr.render import report

    return report.summary_lines(report.gather(out))[0]


def test_05_a_quote_marker_glued_to_the_line_comes_off(tmp_path):
    """Line 35 `>[2025-07-22 20:38:44] Scheduler hit an exception: Traceback (most recent call last):` (CommonMark's
    `>` without a space, under `>pip install …` and `>NUM_GPUS=8`): the record's time is read, the crash is said
    at it; no frame, no exception, no rank."""
    out = ingested_body(tmp_path, BATCH, "05")
    rows = saved.query(
        out,
        "SELECT e.log_ts, e.tp_rank, t.n_frames, t.exception FROM tracebacks t JOIN events e USING (event_id)",
    ).rows()
    assert rows == [(datetime(2025, 7, 22, 20, 38, 44), None, 0, None)]
    what = _what(out)
    assert "crashed (rank not printed) at 2025-07-22 20:38:44" in what and "no time read" not in what


def test_a_quote_marker_stays_where_it_quotes_no_record_or_is_doubled():
    """The glued marker comes off only where a quoted line opens a record; `>>` (a nested quote, a Python
    prompt) is no marker of one quote."""
    from logcorr.inputs.text import quote_marks_off

    prompt = pl.Series(["$ cat <<EOF", ">hello", "> EOF"])
    assert quote_marks_off(prompt).to_list() == ["$ cat <<EOF", ">hello", "> EOF"]
    quoted = pl.Series(
        [">NUM_GPUS=8", ">[2025-07-22 20:38:44] Scheduler hit an exception: x", ">>> import sglang"]
    )
    assert quote_marks_off(quoted).to_list() == [
        "NUM_GPUS=8",
        "[2025-07-22 20:38:44] Scheduler hit an exception: x",
        ">>> import sglang",
    ]


def test_14_a_wrapper_relogging_a_childs_line_gives_the_childs_ranks(tmp_path):
    """Lines 14-16: the container's stamp, then `2024-11-14 22:16:37,096 - sglang - INFO - `, then SGLang's own
    `[2024-11-14 22:16:37 TP0] Traceback (most recent call last):`: one record of three lines (the wrapper's
    milliseconds advance to ,097 on its last line), TP0, the container's UTC time, no level (the wrapper's INFO
    is not the child's); the crash is said on TP0."""
    out = ingested_body(tmp_path, BATCH, "14")
    rows = saved.query(
        out,
        "SELECT e.ts::TIMESTAMP, e.zoned, e.tp_rank, e.level, e.n_lines, t.n_frames, t.function, t.line"
        " FROM tracebacks t JOIN events e USING (event_id)",
    ).rows()
    assert rows == [
        (datetime(2024, 11, 14, 22, 16, 37, 97121), True, 0, None, 3, 1, "run_scheduler_process", 1212)
    ]
    assert "crashed on TP0 at 2024-11-14 22:16:37 UTC" in _what(out)


def test_a_wrappers_own_lines_keep_its_level_and_a_new_second_opens_a_record():
    """batch5/11's olmocr wrapper: its own WARNING/ERROR lines keep their level; the sigquit line it re-logs from
    SGLang has none read. A continuation-shaped line whose stamp is a second later opens a record of its own."""
    from logcorr.ingest import records_from_text

    ev = records_from_text(case_body(BATCH10.parent / "batch5", "11"))
    rows = ev.select("source_pos", "level", "kind").rows()
    assert rows[1:5] == [
        ("line 7", None, "watchdog"),
        ("line 8", "WARNING", "other"),
        ("line 9", "ERROR", "other"),
        ("line 11", "ERROR", "other"),
    ]
    lines = case_body(BATCH, "14").splitlines()[13:16]
    assert records_from_text("\n".join(lines) + "\n")["n_lines"].to_list() == [3]
    later = lines[2].replace("22:16:37,097", "22:16:38,001")
    assert records_from_text("\n".join([*lines[:2], later]) + "\n")["n_lines"].to_list() == [2, 1]


def test_09_the_no_failure_summary_names_the_answers_beside_the_batch(tmp_path):
    """Lines 12-17: three chat completions and a /health answered 200 around one TP0 prefill batch of 2266 new
    tokens: the summary names both, and no failure (the title's "Token indices" warning is not in the lines)."""
    out = ingested_body(tmp_path, BATCH, "09")
    what = _what(out)
    assert "the data shows no failure" in what
    assert "1 batch line(s) of engine (TP0), 2025-06-25 14:02:04" in what
    assert "3 HTTP answer(s) POST /v1/chat/completions 200, 2025-06-25 14:02:04 to 14:02:06" in what
    assert "1 HTTP answer(s) GET /health 200" in what
    assert "Token indices" not in what


def test_11_bench_servings_table_is_named_with_its_figures(tmp_path):
    """Lines 6-23, bench_serving's result table and no server log: nothing is judged ("cannot be told"), and the
    table is said with its headline figures as printed, not its last line quoted."""
    out = ingested_body(tmp_path, BATCH, "11")
    what = _what(out)
    assert what.startswith("**What happened**: cannot be told")
    assert (
        "bench_serving's result table (no time): Successful requests 1648, Benchmark duration (s) 170.41,"
        " Request throughput (req/s) 9.67, Mean E2E Latency (ms) 80126.93, Mean TTFT (ms) 44294.80" in what
    )
    assert "the last record read" not in what and "failed" not in what
