"""batch23 (tests/cases/batch23, a blind batch on how an engine fails to start or crashes: README written before
the first run, EVAL.md the score before the fixes): each file's body (its ``# source``/``# note`` lines off, as
the evaluation read it), and the rules its failures changed, on lines of the same shape."""

from __future__ import annotations

from datetime import UTC, datetime

from logcorr.analysis import saved
from tests.conftest import ingested_body
from tests.test_batch10 import BATCH as BATCH10

BATCH = BATCH10.parent / "batch23"


def _findings(out) -> dict[str, str]:
    return dict(saved.query(out, "SELECT kind, summary FROM findings").rows())


def _happened(out) -> str:
    """The report's "What happened" line."""
    from logcorr.render import report

    return report.summary_lines(report.gather(out))[0]


def test_05_a_bare_exception_line_ends_its_traceback_and_is_never_called_cut(tmp_path):
    """Line 18 `Exception: Capture cuda graph failed: CUDA out of memory. …` (Python's line for a bare
    `raise Exception(…)`) after 8 frames with no header: the traceback's exception, so the start-up failure
    quotes it and never says "exception type not printed (the traceback is cut)"."""
    out = ingested_body(tmp_path, BATCH, "05")
    (row,) = saved.query(
        out, "SELECT n_frames, function, line, exception, exc_message FROM tracebacks"
    ).rows()
    assert row[:4] == (8, "__init__", 269, "Exception")
    assert row[4].startswith("Capture cuda graph failed: CUDA out of memory. Tried to allocate 448.00 MiB.")
    found = _findings(out)
    assert "Exception: Capture cuda graph failed: CUDA out of memory" in found["start_up_failure"]
    assert "exception type not printed" not in found["start_up_failure"]
    assert "tried to allocate 448.00 MiB" in found["cuda_error"]


def test_06_a_chained_traceback_cut_in_its_final_part_keeps_no_exception_of_an_earlier_part(tmp_path):
    """Lines 2–21: a RuntimeError raised in moe_fused_gate (torch/_ops.py:756), then "During handling of the
    above exception" and the capture's own traceback, cut after `capture` (cuda_graph_runner.py:436): no
    exception for the record (its final part's is cut); the finding says the RuntimeError is what it was
    raised while handling, and the CUDA error finding names no frame of the later part."""
    out = ingested_body(tmp_path, BATCH, "06")
    (row,) = saved.query(out, "SELECT n_frames, function, line, exception FROM tracebacks").rows()
    assert row == (5, "capture", 436, None)
    found = _findings(out)
    assert found["start_up_failure"].startswith(
        "A process failed at start-up (rank not printed) (no time read): exception type not printed (the"
        " traceback is cut) in capture (cuda_graph_runner.py:436), raised while handling RuntimeError: CUDA"
        " error: operation not permitted when stream is capturing;"
    )
    assert "innermost frame" not in found["cuda_error"]


def test_a_complete_chained_traceback_still_names_its_final_exception():
    """The rule it narrows holds: a chain whose final part prints its exception line keeps that one."""
    from logcorr.ingest import records_from_text
    from logcorr.parsers import sglang

    text = (
        "Traceback (most recent call last):\n"
        '  File "/a.py", line 3, in f\n'
        "    g()\n"
        "KeyError: 'x'\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/b.py", line 9, in h\n'
        "    f()\n"
        "RuntimeError: boom\n"
    )
    tb = sglang.tracebacks(records_from_text(text, "x.log"))
    assert tb.select("n_frames", "function", "exception", "exc_message").rows() == [
        (2, "h", "RuntimeError", "boom")
    ]


def test_01_a_log_console_export_newest_first_is_read_in_time_order_with_its_utc_times(tmp_path):
    """Lines 3–13 `ERROR 2025-04-07T19:13:52.…Z <text>` (Google Cloud Logging, newest first): the envelope's
    UTC time read (µs), the lines put back in time order, so the upside-down traceback is one record:
    3 frames, innermost llama.py:508 load_weights, KeyError; the launcher's sigquit and the script's
    `27 Killed python3 …` after it; a start-up failure (get_model) that ends killed."""
    out = ingested_body(tmp_path, BATCH, "01")
    (tb,) = saved.query(
        out, "SELECT ts, n_frames, function, line, exception, exc_message FROM tracebacks"
    ).rows()
    assert tb == (
        datetime(2025, 4, 7, 19, 13, 52, 317858, tzinfo=UTC),
        3,
        "load_weights",
        508,
        "KeyError",
        "'model.layers.55.mlp.gate_up_proj.input_scale'",
    )
    order = saved.query(out, "SELECT source_pos FROM events WHERE ts IS NOT NULL ORDER BY event_id").rows()
    assert [p for (p,) in order] == ["line 13", "line 12", "line 5", "line 4", "line 3"]
    assert saved.query(out, "SELECT bool_and(zoned) FROM events WHERE ts IS NOT NULL").rows() == [(True,)]
    assert saved.query(out, "SELECT watchdog_kind, source_pos FROM watchdogs").rows() == [
        ("sigquit", "line 4")
    ]
    assert saved.query(out, "SELECT event, status, source_pos FROM lifecycle").rows() == [
        ("exited", "killed", "line 3")
    ]
    found = _findings(out)
    assert list(found) == ["start_up_failure"]
    assert found["start_up_failure"] == (
        "A process (engine) failed at start-up (rank not printed) at 2025-04-07 19:13:52 UTC: KeyError:"
        " 'model.layers.55.mlp.gate_up_proj.input_scale' in load_weights (llama.py:508); raised in init frames,"
        " before serving; then exited (killed) at 19:13:52 UTC"
    )


def test_a_console_export_in_time_order_stays_in_its_order():
    """The rule it narrows holds: console lines whose times rise are kept as they are."""
    from logcorr.ingest import records_from_text

    ev = records_from_text(
        "INFO 2025-04-07T19:13:50.000000001Z [2025-04-07 19:13:50] first\n"
        "INFO 2025-04-07T19:13:51.000000001Z [2025-04-07 19:13:51] second\n",
        "x.log",
    )
    assert ev["message"].to_list() == ["[2025-04-07 19:13:50] first", "[2025-04-07 19:13:51] second"]
    assert ev["source_pos"].to_list() == ["line 1", "line 2"]


def test_01_a_parents_report_of_a_failed_child_is_no_watchdog_or_timeout():
    """An unexplained "Received sigquit from a child process" is counted as a report of a failed child,
    never as a watchdog or timeout."""
    import tempfile
    from pathlib import Path

    from logcorr.ingest import ingest

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "x.log"
        log.write_text(
            "[2025-04-07 19:13:52] Received sigquit from a child process. It usually means the child failed.\n"
        )
        ingest([log], Path(tmp) / "out")
        (summary,) = [s for k, s in _findings(Path(tmp) / "out").items() if k == "unexplained_errors"]
    assert "1 report of a failed child process" in summary
    assert "watchdog or timeout" not in summary


def test_09_and_02_the_shells_killed_is_the_process_exit_after_the_warmup_failure(tmp_path):
    """09 line 26 `Killed` and 02 line 10 `已杀死` (bash's word in a Chinese locale): the process exited,
    killed, after the warmup's AssertionError (HTTP 502); the 404 on `GET /` (the title) is one access line."""
    out = ingested_body(tmp_path, BATCH, "09")
    assert saved.query(
        out, "SELECT event, status, source_pos FROM lifecycle WHERE event = 'exited'"
    ).rows() == [("exited", "killed", "line 26")]
    assert saved.query(out, "SELECT method, path, status FROM requests").rows() == [("GET", "/", 404)]
    found = _findings(out)
    assert list(found) == ["start_up_failure"]
    assert found["start_up_failure"].startswith(
        "A process (engine) failed at start-up (rank not printed) at 2024-12-13 01:47:34: AssertionError:"
        " res=<Response [502]>, res.text='' in _wait_and_warmup (server.py:621)"
    )
    assert found["start_up_failure"].endswith("then exited (killed) (after it in the input; no time printed)")
    out = ingested_body(tmp_path, BATCH, "02")
    assert saved.query(out, "SELECT event, status, source_pos FROM lifecycle").rows() == [
        ("exited", "killed", "line 10")
    ]


def test_a_script_job_report_of_a_killed_command_is_a_record_of_its_own():
    """`./entrypoint.sh: line 48: 27 Killed python3 -m sglang.launch_server …` after a traceback line opens
    its own record (never the last line of the one above)."""
    from logcorr.ingest import records_from_text

    ev = records_from_text(
        "[2025-04-07 19:13:52] Received sigquit from a child process. It usually means the child failed.\n"
        "./entrypoint.sh: line 48: 27 Killed python3 -m sglang.launch_server --port 30000\n",
        "x.log",
    )
    assert ev["kind"].to_list() == ["watchdog", "lifecycle"]


def test_14_a_traceback_through_the_launchers_module_is_a_failed_start_up(tmp_path):
    """Lines 4–10: runpy → launch_server.py:6 `<module>` (`from sglang.srt.server import launch_server`),
    cut; after the WARNING of line 3 that quotes an ImportError (never the traceback's exception)."""
    out = ingested_body(tmp_path, BATCH, "14")
    (row,) = saved.query(out, "SELECT level, n_frames, function, line, exception FROM tracebacks").rows()
    assert row == ("WARNING", 3, "<module>", 6, None)
    found = _findings(out)
    assert list(found) == ["start_up_failure"]
    assert (
        "exception type not printed (the traceback is cut) in <module> (launch_server.py:6)"
        in (found["start_up_failure"])
    )
    assert "ImportError" not in found["start_up_failure"]


def test_03_an_exception_line_with_an_empty_message_keeps_the_next_line_as_its_message(tmp_path):
    """Line 6 `ImportError: ` (nothing after the colon), lines 7-19 its message: one record; the unexplained
    finding quotes "ImportError: [sgl_kernel] CRITICAL: Could not load any common_ops library!", never line 18's
    nested `- ImportError: …undefined symbol…`."""
    out = ingested_body(tmp_path, BATCH, "03")
    rows = saved.query(
        out, "SELECT source_pos, n_lines FROM events WHERE message LIKE '%ImportError:%'"
    ).rows()
    assert rows == [("line 6", 14)]
    (summary,) = _findings(out).values()
    assert summary.startswith(
        'Unexplained crash or exception: "ImportError: [sgl_kernel] CRITICAL: Could not load any common_ops library!"'
    )


def test_an_empty_exception_line_joins_the_next_line_whatever_its_header():
    """The rule on other shapes: a bracketed tag after `ValueError:` stays its message's first line (in a fence
    or at the input's start); an exception line with a message lets the next line open its own record as before."""
    from logcorr.ingest import records_from_text

    ev = records_from_text("```\nValueError:\n[mylib] ERROR: the config is empty\nnext line\n", "x.log")
    assert ev["message"].to_list() == ["```", "ValueError:\n[mylib] ERROR: the config is empty\nnext line"]
    ev = records_from_text("ValueError:\n[mylib] ERROR: the config is empty\n", "x.log")
    assert ev["message"].to_list() == ["ValueError:\n[mylib] ERROR: the config is empty"]
    # SGLang's own header still opens a record (another process's line)
    ev = records_from_text("ValueError:\n[2025-01-01 10:00:00 TP0] Prefill batch.\n", "x.log")
    assert ev.height == 2
    ev = records_from_text("ValueError: bad\n[mylib] ERROR: the config is empty\n", "x.log")
    assert ev.height == 2


def test_08_the_input_that_ends_inside_cuda_graph_capture_says_so(tmp_path):
    """Line 6 `Capture cuda graph begin. …` (DP0 TP0, 20:05:22), no `Capture cuda graph end`, then only the bs
    list, the bar and six `Registering 0 cuda graph addresses` (20:05:27): the no-failure summary says the input
    ends inside that step; batch16/04's capture (no end line in that version, but max_total_num_tokens and
    "Application startup complete" after it) is no open step."""
    from logcorr.render import report

    out = ingested_body(tmp_path, BATCH, "08")
    (row,) = report.gather(out)["shown_open_step"].select("step", "ranks").rows()
    assert row == ("Capture cuda graph", ["DP0 TP0"])
    (tmp_path / "b16").mkdir()
    out = ingested_body(tmp_path / "b16", BATCH.parent / "batch16", "04")
    assert report.gather(out)["shown_open_step"].height == 0


def test_13_a_traceback_cut_after_runpy_under_the_servers_launch_command_is_a_failed_start_up(tmp_path):
    """Line 10 prints `command=python3.10 -m sglang.launch_server …` (the test script's launch), lines 12-13 a
    traceback of one frame, runpy.py:196 `_run_module_as_main`, cut: that command's process failed as it began
    (a start-up failure, no exception claimed); a `python -m` of another module leaves it unexplained."""
    from logcorr.ingest import ingest

    out = ingested_body(tmp_path, BATCH, "13")
    found = _findings(out)
    assert list(found) == ["start_up_failure"]
    said = found["start_up_failure"]
    assert "exception type not printed (the traceback is cut) in _run_module_as_main (runpy.py:196)" in said
    assert "raised as `python -m sglang.launch_server` (the command printed before it) began to run" in said
    other = tmp_path / "client.log"
    other.write_text(
        "command=python3 -m sglang.bench_serving --port 30000\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main\n'
    )
    ingest([other], tmp_path / "client")
    assert list(_findings(tmp_path / "client")) == ["unexplained_crash"]
