"""batch5's README items (tests/cases/batch5/README.md) read as the re-score reads them: each file without
its leading `# source:` / `# note:` lines, ingested alone, so that the README's "line N" is
``source_pos 'line N'``; one test per rule of the format the item needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from logcorr.analysis import findings as findings_mod
from logcorr.ingest import ingest
from logcorr.render import report as report_mod
from tests.conftest import CASES, ingested_alone, sql

# one worker runs the module (pytest-xdist --dist loadgroup): each file's body ingested once (body)
pytestmark = pytest.mark.xdist_group("batch5")

B5 = CASES / "batch5"


@pytest.fixture(scope="module")
def body(tmp_path_factory):
    """The OUT of one batch5 file's body (its note lines off), ingested alone, once per module."""
    workdir = tmp_path_factory.mktemp("batch5")
    outs: dict[str, Path] = {}

    def out(prefix: str) -> Path:
        if prefix not in outs:
            (path,) = B5.glob(f"{prefix}_*")
            lines = path.read_text().split("\n")
            n = 0
            while n < len(lines) and lines[n].startswith(("# source:", "# note:")):
                n += 1
            copy = workdir / path.name
            copy.write_text("\n".join(lines[n:]))
            outs[prefix] = workdir / prefix
            ingest([copy], outs[prefix])
        return outs[prefix]

    return out


def test_every_at_work_phrase_of_the_nccl_watchdog_is_the_sequence_number(body):
    """batch5/07 line 5: `Timeout at NCCL work: 1522789, last enqueued NCCL work: …` names the timed-out work
    as `detected by watchdog at work: N` (line 3) does."""
    rows = sql(
        body("07"),
        "SELECT source_pos, tp_rank, nccl_seq, last_enqueued, last_completed FROM watchdogs "
        "WHERE watchdog_kind = 'collective_work_state' ORDER BY source_pos",
    )
    assert rows == [("line 3", 4, 1522789, 1522789, 1522788), ("line 5", 4, 1522789, 1522789, 1522788)]


def test_a_frame_list_after_a_blank_line_is_not_the_tail_of_a_message_without_frames(body):
    """batch5/07: after rank 4's `Some NCCL operations have failed …` record (lines 6–7) and a blank line,
    lines 9–12 are a faulthandler dump's tail (`  File "…", line N in f`): a record of their own."""
    rows = sql(body("07"), "SELECT source_pos, n_lines FROM events WHERE source_pos IN ('line 6', 'line 9')")
    assert rows == [("line 6", 3), ("line 9", 4)]


def test_every_line_of_a_scrape_lands_in_a_record_help_too(body):
    """batch5/10: line 4, `# HELP sglang:num_prefill_prealloc_queue_reqs …`, is a record of the scrape as line 5's
    `# TYPE` is; the 9 samples stay the metrics rows, each line its own record."""
    out = body("10")
    rows = sql(out, "SELECT source_pos, kind FROM events WHERE message LIKE '# %' ORDER BY source_pos")
    assert rows == [("line 4", "metric"), ("line 5", "metric")]
    assert sql(out, "SELECT count(*), count(DISTINCT source_pos) FROM events") == [(11, 11)]
    assert sql(out, "SELECT count(*), count(type) FROM metrics") == [(9, 6)]


def test_a_routers_prefill_and_decode_worker_are_the_requests_pd_pair_as_printed(body):
    """batch5/16 line 1: vllm_router_rs's `Prefill worker: <PREFILL_IP>:8000, Decode worker: http://<DECODE_IP>:8000`
    names the chosen pair (a host:port without a scheme, redacted by the reporter, kept as printed)."""
    rows = sql(
        body("16"), "SELECT source_pos, prefill_url, decode_url FROM requests WHERE prefill_url IS NOT NULL"
    )
    assert rows == [("line 1", "<PREFILL_IP>:8000", "http://<DECODE_IP>:8000")]


def test_a_kubectl_logs_prompt_gives_its_pods_half_to_every_record_after_it(body):
    """batch5/05: line 3, the /health access line printed after `✗  kubectl logs pd-llama-prefill-deployment-…`
    (line 1), is the prefill pod's, as lines 4–7 are; so is its requests row."""
    out = body("05")
    assert sql(out, "SELECT source_pos, kind, role FROM events WHERE source_pos = 'line 3'") == [
        ("line 3", "health", "prefill")
    ]
    assert sql(out, "SELECT role, path, status FROM requests") == [("prefill", "/health", 200)]


def test_an_envelope_must_stamp_nearly_every_line_not_two_of_four(body):
    """batch5/08: two Rust tracing lines (`2025-03-27T13:39:28.695813Z  INFO hf_hub: …`) among two vLLM lines and
    a prompt are no `kubectl logs --timestamps` output: each line is its own record with its own time and level;
    the vLLM lines keep their local clock as printed (the year lent by the paste's dated lines, no zone)."""
    out = body("08")
    assert sql(out, "SELECT format FROM sources") == [("text",)]
    rows = sql(
        out,
        "SELECT source_pos, n_lines, strftime(ts, '%Y-%m-%d %H:%M:%S.%f'), zoned, level FROM events "
        "WHERE source_pos <> 'line 1' ORDER BY event_id",
    )
    assert rows == [
        ("line 2", 1, "2025-03-27 13:39:28.695813", True, "INFO"),
        ("line 3", 1, "2025-03-27 19:09:32.000000", False, "INFO"),
        ("line 4", 1, "2025-03-27 19:09:32.000000", False, "INFO"),
        ("line 5", 1, "2025-03-27 13:39:33.390990", True, "INFO"),
    ]


def test_a_kv_connectors_failure_and_the_transfer_engines_connect_failures_are_transfer_errors(body):
    """batch5/12: vLLM-Ascend's MooncakeConnector fails request `cmpl-09be…-0` on Worker_DP0_TP5 (lines 9–10), after
    Mooncake's transfer engine could not reach the prefill pod 10.0.9.3 (6 glog lines of ascend_direct_transport.cpp);
    the prose line 1 places them on decode0-pod0."""
    out = body("12")
    rows = sql(
        out,
        "SELECT source_pos, role, dp_rank, tp_rank, error_kind, backend, peer, request_id FROM transfer_errors "
        "ORDER BY event_id",
    )
    request = "cmpl-09be0283-e039-40ce-aefa-da0f36c8cd46-0"
    ports = ["25389", "16381", "20874", "16604", "26671", "15863"]
    assert rows == [
        *[(f"line {n}", "decode", None, None, "connect_failed", "mooncake", f"10.0.9.3:{p}", None)
          for n, p in zip(range(3, 9), ports, strict=True)],
        ("line 9", "decode", 0, 5, "transfer_failed", "mooncake", None, request),
        ("line 10", "decode", 0, 5, "transfer_failed", "mooncake", None, request),
    ]  # fmt: skip
    (summary,) = sql(out, "SELECT summary FROM findings WHERE summary LIKE '2 \"Transfer failed\"%'")[0]
    assert f"request {request}; cause Mooncake transfer failed, ret: -1; backend mooncake" in summary


def test_a_glog_record_and_a_fatal_error_glued_into_another_threads_line_are_records_of_their_own(body):
    """batch5/15: crash output of several threads written at once; line 6 holds, after `in "pop_transferred`, Mooncake's
    whole glog record `E0916 02:31:07.705332  6633 tcp_transport.cpp:116] Session::readHeader failed. …`, and line 2
    CPython's `Fatal Python error: "Segmentation fault` after a frame's file name. Every line is kept; the segfault
    leads the summary."""
    out = body("15")
    rows = sql(
        out,
        "SELECT source_pos, level, printed_time, role, split_part(message, chr(10), 1) FROM events "
        "WHERE message LIKE 'E0916%' OR message LIKE 'Fatal Python error%' ORDER BY event_id",
    )
    assert rows == [
        ("line 2", None, None, "decode", 'Fatal Python error: "Segmentation fault'),
        ("line 6", "ERROR", "09-16 02:31:07.705332", "decode",
         "E0916 02:31:07.705332  6633 tcp_transport.cpp:116] Session::readHeader failed. Error: End of file (value: 2),"
         " bytes read: 0, expected: 24"),
    ]  # fmt: skip
    text = "\n".join(m for (m,) in sql(out, "SELECT message FROM events ORDER BY event_id"))
    assert "pop_transferred" in text and text.count("File") == 9  # the text before the glued records is kept
    found = report_mod.gather(out)["findings"]
    assert set(found["kind"]) >= {"unexplained_crash", "transfer_failures"}
    assert findings_mod.main_finding(found)["kind"] == "unexplained_crash"


def test_a_start_up_step_begun_and_never_ended_while_a_rank_printed_on_is_a_stall(body):
    """batch5/09: 8 ranks print `Init torch distributed begin.` at 07:49:04–05, none `Init torch distributed ends.`,
    and TP0 EP0 prints on at 07:49:37: the summary names the stall, never "the data shows no failure"."""
    out = body("09")
    rows = sql(
        out,
        "SELECT kind, n, strftime(ts, '%H:%M:%S'), strftime(end_ts, '%H:%M:%S'), len(evidence), zoned FROM findings",
    )
    assert rows == [("start_up_stall", 8, "07:49:04", "07:49:37", 9, False)]
    results = report_mod.gather(out)
    happened = report_mod.summary_lines(results)[0]
    assert happened.startswith(
        '**What happened**: Start-up not seen past "Init torch distributed" on TP0 EP0, TP1 EP1'
    )
    assert (
        "8 rank(s) began it at 2026-07-14 07:49:04 to 07:49:05, none printed its end in the data read"
        in happened
    )
    assert "TP0 EP0 printed on at 07:49:37 (32 s after the last begin)" in happened and " UTC" not in happened


def test_a_start_up_step_whose_ranks_print_nothing_after_it_is_no_stall(tmp_path):
    """batch3/01 (an excerpt that ends in the ranks' `Init torch distributed begin.` lines, then c10d and gloo lines
    of no rank): nothing shows a rank went on, so no stall is claimed."""
    out = ingested_alone(tmp_path, CASES / "batch3", "01")
    assert sql(out, "SELECT count(*) FROM findings WHERE kind = 'start_up_stall'") == [(0,)]


def test_a_traceback_tail_cut_inside_a_frame_is_typed_by_its_exception_line(body):
    """batch5/11 lines 1–5: a wrapper re-logs SGLang's traceback tail, cut after a frame's `File` line: a code line,
    a caret line, `File ".../json/decoder.py", line 355, in raw_decode`, its code and the exception line."""
    rows = sql(
        body("11"),
        "SELECT source_pos, exception, exc_message, function, line, n_frames FROM tracebacks ORDER BY event_id",
    )
    assert rows == [
        (
            "line 1",
            "json.decoder.JSONDecodeError",
            "Expecting value: line 1 column 1 (char 0)",
            "raw_decode",
            355,
            1,
        ),
        ("line 12", None, None, "_kill_proc", 535, 1),
    ]
