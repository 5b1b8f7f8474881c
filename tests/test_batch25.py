"""batch25 (tests/cases/batch25, a blind batch on how the logs reach the user through a platform, and the
quieter failures: README written before the first run, EVAL.md the score before the fixes and after): each file's
body (its ``# source``/``# note`` lines off, as the evaluation read it), and the rules its failures changed, on
lines of the same shape."""

from __future__ import annotations

from datetime import UTC, datetime

from logcorr.analysis import saved
from tests.conftest import ingested_body
from tests.test_batch10 import BATCH as BATCH10

BATCH = BATCH10.parent / "batch25"


def _findings(out) -> dict[str, str]:
    return dict(saved.query(out, "SELECT kind, summary FROM findings").rows())


def _records(text: str):
    from logcorr.ingest import records_from_text

    return records_from_text(text, "x.log")


def test_01_fastchats_stderr_envelope_behind_a_compose_service_is_taken_off(tmp_path):
    """Lines 3–12 `ubuntu-xllm-stream-1-1  | 2024-08-27 12:54:55 | ERROR | stderr | …`: the compose service
    and then FastChat's envelope taken off, its time the line's (no zone), its ERROR the stream's, not a level:
    one traceback of 4 frames, innermost sglang/api.py:40 Runtime, cut (no exception)."""
    out = ingested_body(tmp_path, BATCH, "01")
    (row,) = saved.query(
        out,
        "SELECT e.unit, e.ts, e.zoned, e.level, e.n_lines, t.n_frames, t.function, t.line, t.exception"
        " FROM events e JOIN tracebacks t USING (event_id)",
    ).rows()
    assert row == (
        "ubuntu-xllm-stream-1-1",
        datetime(2024, 8, 27, 12, 54, 55, tzinfo=UTC),
        False,
        None,
        9,
        4,
        "Runtime",
        40,
        None,
    )
    found = _findings(out)
    assert list(found) == ["unexplained_crash"]
    assert 'sglang/api.py", line 40, in Runtime" at 2024-08-27 12:54:55;' in found["unexplained_crash"]
    assert "1 exception or traceback" in found["unexplained_crash"]


def test_02_lines_a_paste_glued_or_wrapped_are_read_as_the_logger_printed_them(tmp_path):
    """Line 8 holds two of the logger's lines glued by a run of spaces (split: the frame sglang_worker.py:290
    is read), lines 11–12 a frame line wrapped inside its function name (`in R` / `untime`: rejoined): 4 frames,
    innermost sglang/api.py:39 Runtime, and no exception (`untime` was read as one: a false statement)."""
    out = ingested_body(tmp_path, BATCH, "02")
    (row,) = saved.query(
        out,
        "SELECT e.ts, e.zoned, t.n_frames, t.function, t.line, t.exception, t.traceback"
        " FROM events e JOIN tracebacks t USING (event_id)",
    ).rows()
    assert row[:6] == (datetime(2024, 6, 2, 0, 26, 10, tzinfo=UTC), False, 4, "Runtime", 39, None)
    assert 'sglang_worker.py", line 290, in <module>' in row[6]
    assert "untime" not in _findings(out)["unexplained_crash"].replace("Runtime", "")


def test_a_bare_lower_case_word_after_a_frame_is_no_exception_but_a_class_name_is():
    """The exception line rule: a type alone names a class (CapWords, or a name ending as exceptions do)."""
    from logcorr.parsers import sglang

    frames = 'Traceback (most recent call last):\n  File "/a.py", line 3, in f\n    g()\n'
    tb = sglang.tracebacks(_records(frames + "untime\n"))
    assert tb["exception"].to_list() == [None]
    tb = sglang.tracebacks(_records(frames + "KeyboardInterrupt\n"))
    assert tb["exception"].to_list() == ["KeyboardInterrupt"]
    tb = sglang.tracebacks(_records(frames + "nixl._bindings.nixlNotFoundError: NIXL_ERR_NOT_FOUND\n"))
    assert tb["exception"].to_list() == ["nixl._bindings.nixlNotFoundError"]


def test_03_the_stderr_a_wrapper_logs_at_error_is_no_error(tmp_path):
    """Lines 11–31 `<time> | ERROR | stderr | ` (tqdm bars, empty lines) and `| INFO | stdout |`: the stream
    taken off, no level; line 9 `| WARNING | sglang.srt.models.registry |` keeps its logger's level: the data
    shows no failure, the last record the CUDA graph capture's batch sizes at 16:41:31."""
    out = ingested_body(tmp_path, BATCH, "03")
    levels = saved.query(out, "SELECT list(level ORDER BY event_id) FROM events WHERE ts IS NOT NULL").rows()
    assert levels == [(["WARNING", None, None, None, None, None],)]
    assert _findings(out) == {}
    from logcorr.render import report

    said = report.summary_lines(report.gather(out))[0]
    assert "the data shows no failure" in said
    assert "Capture cuda graph bs" in said


def test_04_a_callers_report_of_the_same_failure_is_that_failure(tmp_path):
    """Lines 2–9: SGLang's RuntimeError (no time); line 11, Xinference's `<time>,ms xinference.core.worker 113
    ERROR    …` (a header family: pid 113, ERROR, its request id) quoting that error's message above its own cut
    traceback: one start-up failure, the RuntimeError's, reported by its caller at 06:18:36 (never "pid 113
    failed at start-up")."""
    out = ingested_body(tmp_path, BATCH, "04")
    rows = saved.query(
        out, "SELECT source_pos, level, pid, request_id FROM events WHERE level IS NOT NULL ORDER BY event_id"
    ).rows()
    assert rows == [
        ("line 10", "DEBUG", 113, None),
        ("line 11", "ERROR", 113, "b087e27a-55b4-11f0-93e7-7ac282aee84d"),
    ]
    found = _findings(out)
    assert list(found) == ["start_up_failure"]
    assert found["start_up_failure"].startswith(
        "A process failed at start-up (rank not printed) (no time read): RuntimeError: [address=0.0.0.0:43399,"
        " pid=1793] Initialization failed. Please see the error messages above. in __init__ (runtime_endpoint.py:396);"
        " raised in init frames, before serving; reported by its caller at 2025-06-30 06:18:36: "
    )


def test_07_the_routers_error_line_is_quoted_from_its_message_and_is_no_exception(tmp_path):
    """Line 6 `2025-07-29 21:13:00 ERROR sglang_router_rs::service_discovery: src/…rs:322: Error in Kubernetes
    watcher: … ApiError: pods is forbidden: …`: an error level (its `ApiError: …` is an error value's print, no
    Python exception line), quoted from its message on, so that its cause is said."""
    out = ingested_body(tmp_path, BATCH, "07")
    found = _findings(out)
    assert list(found) == ["unexplained_errors"]
    assert found["unexplained_errors"].startswith(
        'Unexplained error: "Error in Kubernetes watcher: failed to perform initial object list: ApiError: pods is'
        ' forbidden: User "system:serviceaccount:default:default"'
    )
    assert "on router at 2025-07-29 21:13:00 UTC" in found["unexplained_errors"]
    assert "(1 error level;" in found["unexplained_errors"]


def test_10_tool_call_markup_in_an_sdk_message_print_is_named(tmp_path):
    """Lines 3–4 `ChatCompletionMessage(content='<｜tool▁calls▁begin｜>…MMM…` (the OpenAI SDK's print, cut before
    its role): an answer with the tool-call markup left in its text."""
    out = ingested_body(tmp_path, BATCH, "10")
    found = _findings(out)
    assert list(found) == ["unexplained_errors"]
    assert (
        "1 answer with tool-call markup left in its text (the call not parsed)" in found["unexplained_errors"]
    )


def test_an_sdk_message_print_without_markup_is_no_finding():
    """The rule it widens holds: an SDK message print whose content holds no tool-call token is an answer like
    any other, no failure."""
    import tempfile
    from pathlib import Path

    from logcorr.ingest import ingest

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "x.log"
        log.write_text("ChatCompletionMessage(content='Paris is the capital of France.', role='assistant')\n")
        ingest([log], Path(tmp) / "out")
        assert saved.query(Path(tmp) / "out", "SELECT count(*) FROM findings").rows() == [(0,)]


def test_11_a_traceback_printed_inside_a_string_is_read_line_by_line(tmp_path):
    """Line 5 `output.error='Traceback …\\n  File "…", line 93, in connection_lost\\n …'`: its escaped line ends
    read as line ends: innermost frame aiohttp/streams.py:352 readline, the final part cut (no exception), said
    as raised while handling the TransferEncodingError of the part before it."""
    out = ingested_body(tmp_path, BATCH, "11")
    assert saved.query(out, "SELECT n_frames, function, line, exception FROM tracebacks").rows() == [
        (5, "readline", 352, None)
    ]
    found = _findings(out)["unexplained_crash"]
    assert found.startswith(
        'Unexplained crash or exception: "File "/usr/local/lib/python3.10/dist-packages/aiohttp/streams.py", line'
        ' 352, in readline" (a traceback printed inside a string, its line ends escaped, cut before its exception'
        " line; raised while handling aiohttp.http_exceptions.TransferEncodingError: 400, message:)"
    )
