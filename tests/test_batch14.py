"""batch14 (tests/cases/batch14, a blind batch: README written before the first run, EVAL.md the score
before the fixes): each file's body (its ``# source``/``# note`` lines off, as the evaluation read it)."""

from __future__ import annotations

from datetime import datetime

from logcorr.analysis import saved
from logcorr.render import report
from tests.conftest import ingested_body
from tests.test_batch10 import BATCH as BATCH10

BATCH = BATCH10.parent / "batch14"


def test_05_a_pyspy_thread_pasted_without_its_id_is_read_as_a_dump(tmp_path):
    """Lines 6-13 `Thread (active): "MainThread"` and seven frames, the thread id left out of the paste
    (after prose and a fence): a stack of 7 frames, innermost cuModuleLoadData, and the finding says
    where the main thread is, naming no thread id it does not have."""
    out = ingested_body(tmp_path, BATCH, "05")
    st = saved.query(
        out, "SELECT thread_name, thread_state, depth, function, file, line FROM stacks ORDER BY depth"
    )
    assert st.height == 7
    assert st.row(0) == ("MainThread", "active", 0, "cuModuleLoadData", "libcuda.so.590.48.01", None)
    assert st.row(5)[3:] == (
        "fused_dsa_target_verify_metadata",
        "sglang/kernels/ops/attention/dsa_metadata.py",
        407,
    )
    (summary,) = saved.query(out, "SELECT summary FROM findings WHERE kind = 'stacks_captured'")["summary"]
    assert "1 main thread is active in cuModuleLoadData" in summary and "(thread )" not in summary


def test_08_a_crash_loop_in_a_journal_without_a_year_quotes_its_times_as_printed(tmp_path):
    """Lines 4-10 `Feb 18 11:36:32 hnopencelium systemd[1]: opencelium.service: …` (no year): the crash
    loop names status 1/FAILURE, restart counter 7 and the times as printed, never 'no usable time'."""
    out = ingested_body(tmp_path, BATCH, "08")
    (summary,) = saved.query(out, "SELECT summary FROM findings WHERE kind = 'crash_loop'")["summary"]
    assert "1/FAILURE" in summary and "restart counter up to 7" in summary
    assert "printed without a year: 02-18 11:36:32 to 02-18 11:36:37" in summary
    assert "no usable time" not in summary


def test_09_a_journal_in_a_cjk_locale_is_read_and_its_errors_shown(tmp_path):
    """Lines 2-7 `2月 04 13:16:56 bootstrap.openshift4.ifaii.lo bootkube.sh[769]: …` (journalctl -o short
    on a Chinese-locale host): time as printed (no year: none invented), host, pid; the glog `E0204` line
    is an ERROR; the `connection refused` lines are failures the report names."""
    out = ingested_body(tmp_path, BATCH, "09")
    ev = saved.query(
        out, "SELECT source_pos, ts, printed_time, host, unit, pid, level FROM events WHERE host IS NOT NULL"
    )
    assert set(ev["printed_time"].str.slice(0, 14)) == {"02-04 13:16:56", "02-04 13:16:57"}
    assert ev["ts"].null_count() == ev.height
    assert set(ev["host"]) == {"bootstrap.openshift4.ifaii.lo"} and set(ev["pid"]) == {769}
    assert ev.filter(ev["source_pos"] == "line 5")["level"].to_list() == ["ERROR"]
    found = saved.query(out, "SELECT kind, n, summary FROM findings")
    assert found["kind"].to_list() == ["unexplained_errors"]
    assert found["n"][0] >= 4 and "connection refused" in found["summary"][0]


def test_12_docker_compose_t_stamps_are_the_lines_times(tmp_path):
    """Lines 4-15 `kafka-1  | 2024-01-29T16:03:56.091830566Z …` (`docker compose logs -t`): Docker's
    RFC3339Nano stamp after the service prefix is each line's time (UTC), one record a line."""
    out = ingested_body(tmp_path, BATCH, "12")
    ev = saved.query(out, "SELECT ts, zoned, unit FROM events WHERE unit = 'kafka-1' ORDER BY event_id")
    assert ev.height == 12 and ev["zoned"].all()
    assert ev["ts"][0].replace(tzinfo=None) == datetime(2024, 1, 29, 16, 3, 56, 91830)
    assert ev["ts"][-1].replace(tzinfo=None) == datetime(2024, 1, 29, 16, 4, 29, 235206)


def test_14_ignored_import_errors_are_no_failure(tmp_path):
    """Lines 10, 11, 13 `[2026-06-22 17:51:04] Ignore import error when loading … No module named 'vllm'`:
    SGLang skips an optional model; the start-up shows no failure and the report says none."""
    out = ingested_body(tmp_path, BATCH, "14")
    assert saved.query(out, "SELECT kind FROM findings").height == 0


def test_01_the_done_signal_notices_are_told_beside_the_two_timed_out_rooms(tmp_path):
    """Lines 2 and 5 `Some requests fail to receive KV Cache transfer done signal …` (DP6 and DP0, no room)
    are the notice of lines 3-4's failures (two rooms timed out after 600 s in KVPoll.WaitingForInput on
    DP6 TP6 EP6): one finding, the failures first, the notices in its evidence; the summary leads with it."""
    out = ingested_body(tmp_path, BATCH, "01")
    found = saved.query(out, "SELECT kind, role, ranks, n, summary, evidence FROM findings")
    assert found["kind"].to_list() == ["transfer_failures"]
    row = found.row(0, named=True)
    assert (row["role"], row["ranks"], row["n"], len(row["evidence"])) == ("decode", ["DP6 TP6 EP6"], 4, 4)
    assert "2 room(s) (4699239566385471430, 8360203925601259718)" in row["summary"]
    assert "cause timeout after 600 s in KVPoll.WaitingForInput" in row["summary"]
    assert (
        '2 "Transfer done signal missing" record(s) naming no request (DP0 TP0 EP0, DP6 TP6 EP6)'
        in row["summary"]
    )
    lines = report.summary_lines(report.gather(out))
    assert lines[0].startswith(
        '**What happened**: 2 "Decode transfer failed" record(s) on decode DP6 TP6 EP6'
    )


def test_03_the_transfer_engines_batch_timeouts_are_the_cause_of_the_connectors_failures(tmp_path):
    """Lines 5-7 Mooncake's `I0331 02:49:30.617945 803444 transfer_engine_py.cpp:454] Sync batch data
    transfer timeout after 33061142969ns` (INFO, no request named): transfer_errors rows (timeout 33.06 s,
    backend mooncake), folded into the connector's failure of request chatcmpl-ba310df4… (lines 8-9) as
    its evidence and its cause."""
    out = ingested_body(tmp_path, BATCH, "03")
    te = saved.query(
        out,
        "SELECT source_pos, error_kind, cause, backend, round(timeout_s, 3) AS t FROM transfer_errors"
        " WHERE error_kind = 'batch_transfer_timeout' ORDER BY source_pos",
    )
    assert te.rows() == [
        ("line 5", "batch_transfer_timeout", "timeout", "mooncake", 33.061),
        ("line 6", "batch_transfer_timeout", "timeout", "mooncake", 33.061),
        ("line 7", "batch_transfer_timeout", "timeout", "mooncake", 33.061),
    ]
    found = saved.query(out, "SELECT kind, ranks, n, summary, evidence FROM findings")
    assert found["kind"].to_list() == ["transfer_failures"]
    row = found.row(0, named=True)
    assert (row["ranks"], row["n"], len(row["evidence"])) == (["DP0 TP0 EP0", "DP0 TP1 EP1"], 5, 5)
    assert "request chatcmpl-ba310df4-f600-441c-a0b5-0cb772aaf8ed-8b8ee10a" in row["summary"]
    assert "cause timeout (from the records beside it); backend mooncake" in row["summary"]
    assert '3 "Batch transfer timeout" record(s) naming no request (after 33.1 s)' in row["summary"]


def test_13_the_routers_answer_joined_to_a_clients_503_is_quoted(tmp_path):
    """Lines 3-4 `… Error: Server error '503 Service Unavailable' for url 'http://10.0.14.2:3592/generate'` and
    the retry line joined to it, `… response={"error":{…,"message":"No available workers (all circuits open or
    unhealthy)"}})`: the requests row keeps the answer's words, and the failed-requests finding quotes them."""
    out = ingested_body(tmp_path, BATCH, "13")
    rows = saved.query(out, "SELECT source_pos, status, path, message FROM requests ORDER BY source_pos")
    answer = "No available workers (all circuits open or unhealthy)"
    assert rows.rows() == [
        ("line 3", 503, "/generate", answer),
        ("line 5", 503, "/generate", answer),
        ("line 7", 503, "/generate", None),
    ]
    (summary,) = saved.query(out, "SELECT summary FROM findings WHERE kind = 'failed_requests'")["summary"]
    assert summary.endswith(f"/generate; errors: {answer}")


def test_09_a_headerless_writers_same_second_lines_are_records_of_their_own(tmp_path):
    """Lines 2-4 `2月 04 13:16:56 bootstrap.openshift4.ifaii.lo bootkube.sh[769]: [#193] failed to fetch
    discovery: …`, `[#194] …`, `[#195] …` after a fence: one journal entry each, bootkube printing no header of
    its own; a line that opens as its record's first line does is the writer's next message: 6 records."""
    out = ingested_body(tmp_path, BATCH, "09")
    rows = saved.query(
        out, "SELECT source_pos, n_lines, left(message, 6) AS m FROM events WHERE pid = 769 ORDER BY event_id"
    )
    assert rows.rows() == [
        ("line 2", 1, "[#193]"),
        ("line 3", 1, "[#194]"),
        ("line 4", 1, "[#195]"),
        ("line 5", 1, "E0204 "),
        ("line 6", 1, "[#196]"),
        ("line 7", 1, "[#197]"),
    ]


def test_12_a_kafka_line_behind_docker_compose_t_keeps_its_own_level(tmp_path):
    """Line 15 `kafka-1  | 2024-01-29T16:04:29.235206961Z [2024-01-29 16:04:29,231] INFO Registered kafka:…`:
    Docker's stamp is the record's time (UTC), log4j's header after it gives the level INFO; lines 4-14 (the
    stamp and no header of their own) stay one record each."""
    out = ingested_body(tmp_path, BATCH, "12")
    rows = saved.query(
        out,
        "SELECT source_pos, n_lines, ts, zoned, level FROM events WHERE unit = 'kafka-1' ORDER BY event_id",
    )
    assert rows.height == 12 and set(rows["n_lines"]) == {1}
    last = rows.row(11)
    assert (last[0], str(last[2])[:26], last[3], last[4]) == (
        "line 15",
        "2024-01-29 16:04:29.235206",
        True,
        "INFO",
    )
