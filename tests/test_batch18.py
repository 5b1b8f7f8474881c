"""batch18 (tests/cases/batch18, a blind batch: README written before the first run, EVAL.md the score
before the fixes): each file's body (its ``# source``/``# note`` lines off, as the evaluation read it), and
the rules its failures changed, on lines of the same shape."""

from __future__ import annotations

from datetime import datetime

from logcorr.analysis import saved
from logcorr.ingest import records_from_text
from tests.conftest import case_records, ingested_body, rows_at
from tests.test_batch10 import BATCH as BATCH10

BATCH = BATCH10.parent / "batch18"


def _findings(out) -> dict[str, str]:
    return dict(saved.query(out, "SELECT kind, summary FROM findings").rows())


def _happened(out) -> str:
    from logcorr.render import report

    return report.summary_lines(report.gather(out))[0]


def test_13_the_openai_clients_http_400_line_is_an_error_not_no_failure_marker(tmp_path):
    """Line 5 is the OpenAI SDK's status error as the reporter's script printed it (`Error code: 400 - {…
    'Failed to parse fc related info to json format!' …}`, no time, no level): the report quotes it as an
    unexplained error, counted as a failed API call (not an "error level": none was printed), instead of
    "cannot be told … no failure can be seen"; line 6, the client's own exception text, is no crash."""
    out = ingested_body(tmp_path, BATCH, "13")
    found = _findings(out)
    assert list(found) == ["unexplained_errors"]
    summary = found["unexplained_errors"]
    assert summary.startswith(
        "Unexplained error: \"qwen_infer error, idx: 130 Error code: 400 - {'object': 'error', 'message': '400',"
        " 'type': 'Failed to parse fc related info to json format!'"
    )
    assert (
        "(no time read); 1 record(s) that no other finding explains (1 failed API call (an HTTP error status);"
        in summary
    )
    assert "error level" not in summary
    happened = _happened(out)
    assert happened.startswith("**What happened**: Unexplained error:") and "cannot be told" not in happened
    (row,) = saved.query(out, "SELECT level, ts, kind FROM events WHERE source_pos = 'line 5'").rows()
    assert row == (None, None, "other")


def test_a_client_error_status_below_400_or_without_its_body_is_no_api_error(tmp_path):
    """Only `Error code: 4xx/5xx - {` (or `[`) is the SDK's status error: prose naming an error code, or
    a 3xx, stays prose (no time or level read: no error)."""
    from logcorr.ingest import ingest

    log = tmp_path / "x.log"
    log.write_text(
        "The docs list Error code: 400 for a bad request\n"
        "Error code: 302 - {'location': '/v1'}\n"
        "openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': 'bad'}\n"
    )
    ingest([log], tmp_path / "out")
    rows = saved.query(tmp_path / "out", "SELECT kind, n FROM findings").rows()
    # the third line is an exception (`…Error: …`) already; the first two are no error of any grade
    assert rows == [("unexplained_crash", 1)]


def test_07_an_attachment_name_glued_before_the_first_header_leaves_the_decode_batch_read():
    """Line 1 `@c:\\Users\\…_2026-08-23_20-05-04.txt [2026-08-23 09:05:37 TP0 EP0] Decode batch, …`: the
    file name is prose of its own (its 20-05-04 no time), the record from the header on is a decode batch
    of TP0/EP0 at 09:05:37 with running 1, accept len 5.30 and 167.04 tok/s."""
    ev = case_records(BATCH, "07")
    name, batch = rows_at(ev, 1)
    assert name["message"].endswith("deepseek-v4-flash-0731-sglang-5qy5f_2026-08-23_20-05-04.txt")
    assert (name["log_ts"], name["kind"]) == (None, "other")
    assert (batch["log_ts"], batch["tp_rank"], batch["ep_rank"], batch["kind"]) == (
        datetime(2026, 8, 23, 9, 5, 37),
        0,
        0,
        "batch",
    )


def test_07_the_decode_batch_row_and_the_summary_name_it(tmp_path):
    """Through the product: the batches table holds the decode batch before the three prefill batches,
    and "the data shows no failure" counts 4 batch lines from 09:05:37."""
    out = ingested_body(tmp_path, BATCH, "07")
    rows = saved.query(
        out,
        "SELECT batch_type, running_req, full_token, accept_len, gen_throughput, new_token FROM batches"
        " ORDER BY event_id",
    ).rows()
    assert rows == [
        ("decode", 1, 165376, 5.3, 167.04, None),
        ("prefill", 0, None, None, None, 256),
        ("prefill", 0, None, None, None, 8192),
        ("prefill", 0, None, None, None, 8192),
    ]
    happened = _happened(out)
    assert happened.startswith("**What happened**: the data shows no failure")
    assert "4 batch line(s) of engine (TP0), 2026-08-23 09:05:37 to 09:06:05" in happened
    assert "20:05" not in happened


def test_a_log_file_name_before_a_header_splits_only_with_a_log_extension():
    """`sglang.log [2025-…]` opens the record at the header; a word that is no file name (`see [2025-…]`)
    keeps the line whole, as before (a header quoted in prose)."""
    from logcorr.ingest import records_from_text

    ev = records_from_text(
        "decode.log [2025-04-23 03:12:13 TP5] Decode batch, #running-req: 2, #token: 10, token usage: 0.00,"
        " gen throughput (token/s): 1.00, #queue-req: 0\n"
        "see [2025-04-23 03:12:14 TP5] Decode batch, #running-req: 2, #token: 10, token usage: 0.00,"
        " gen throughput (token/s): 1.00, #queue-req: 0\n",
        "x.log",
    )
    rows = ev.sort("event_id").to_dicts()
    assert [(r["source_pos"], r["kind"]) for r in rows] == [("line 1", "other"), ("line 1", "batch")]
    assert rows[0]["message"] == "decode.log"
    # the prose line opens no record: it stays text under the batch line, read as no second batch
    assert rows[1]["n_lines"] == 2 and rows[1]["message"].endswith(
        "see [2025-04-23 03:12:14 TP5] Decode batch,"
        " #running-req: 2, #token: 10, token usage: 0.00,"
        " gen throughput (token/s): 1.00, #queue-req: 0"
    )


def test_04_exception_in_a_component_is_the_lead_in_of_its_traceback(tmp_path):
    """Line 11 `Exception in ModelRpcClient:` is SGLang (2024)'s logger.error above the traceback it prints:
    one record with lines 12-21 (5 frames, innermost model_runner.py:472 forward, cut), and the report quotes
    that line with the innermost frame, not a frame line alone."""
    ev = case_records(BATCH, "04")
    (tb,) = rows_at(ev, 11)
    assert (tb["kind"], tb["n_lines"]) == ("traceback", 11)
    assert tb["message"].startswith("Exception in ModelRpcClient:\nTraceback (most recent call last):\n")
    assert rows_at(ev, 12) == []
    out = ingested_body(tmp_path, BATCH, "04")
    assert _findings(out)["unexplained_crash"].startswith(
        'Unexplained crash or exception: "Exception in ModelRpcClient:" (no exception line read in its traceback;'
        " innermost frame: forward (model_runner.py:472)) (no time read); 1 record(s)"
    )


def test_13_note_lines_above_a_paste_change_no_record_of_it():
    """The case file whole (its `# source:`/`# note:` lines first) and its body alone give the same records
    from line 3 on: the prose, `logs:`, the client's 400 line and its own exception one record each (a note is
    no header: the lines after it do not continue one another)."""
    path = next(BATCH.glob("13_*.log"))
    whole = records_from_text(path.read_text(), "13.log")
    body = case_records(BATCH, "13")
    notes = 2  # the file's `# source:` and `# note:` lines
    got = [(int(p.split()[1]) - notes, n) for p, n in whole.select("source_pos", "n_lines").rows()[notes:]]
    assert got == [(int(p.split()[1]), n) for p, n in body.select("source_pos", "n_lines").rows()]
    assert [r["message"][:24] for r in rows_at(body, 5) + rows_at(body, 6)] == [
        "qwen_infer error, idx: 1",
        "generated an exception: ",
    ]
