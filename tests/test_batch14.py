"""batch14 (tests/cases/batch14, a blind batch: README written before the first run, EVAL.md the score
before the fixes): each file's body (its ``# source``/``# note`` lines off, as the evaluation read it)."""

from __future__ import annotations

from datetime import datetime

from logcorr.analysis import saved
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
