"""Reading what users paste (issue "read what users paste"): terminal wraps joined, a prompt or ^C ends
every stream's record, roles from a kubectl command and a router's own line format, headers read by
their parts; and two ingests into one OUT never lose the first."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from logcorr.ingest import ingest, records_from_text
from logcorr.inputs.text import paste_width
from tests.conftest import CASES, ingested_alone, sql

B5 = CASES / "batch5"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("paste")


def test_a_terminal_wrap_is_joined_without_a_newline_and_every_watchdog_field_reads(workdir):
    """batch5/07: lines wrapped at 209 characters (`Timeout(ms)=` / `600000)`, `WorkNCCL(S` / `eqNum=`)."""
    out = ingested_alone(workdir, B5, "07")
    rows = sql(
        out,
        "SELECT tp_rank, nccl_seq, nccl_op, numel_in, numel_out, timeout_s, ran_for_ms FROM watchdogs "
        "WHERE watchdog_kind = 'nccl_watchdog' ORDER BY tp_rank",
    )
    assert rows == [
        (2, 1522789, "_ALLGATHER_BASE", 298960, 4783360, 600.0, 600094),
        (4, 1522789, "_ALLGATHER_BASE", 298960, 4783360, 600.0, 600022),
    ]
    (notes,) = sql(out, "SELECT notes FROM sources")[0]
    assert "4 line(s) a terminal wrapped at 209 characters joined" in notes
    # the record keeps its first line's number and counts both lines
    assert sql(out, "SELECT n_lines FROM events WHERE source_pos = 'line 10'") == [(2,)]


def test_paste_width_needs_two_full_lines_and_a_wrap():
    long = "x" * 120
    start = "[2025-01-01 00:00:00] next"
    assert paste_width(pl.Series([long, start, long, start])) is None  # no full line is continued
    assert paste_width(pl.Series([long, "tail", long, "tail"])) == 120
    assert paste_width(pl.Series(["short", "lines"])) is None


def test_the_wrap_width_is_the_cut_lines_not_longer_notes():
    """batch13/03 whole (its `# note:` lines kept, longer than the paste): the c10d lines were cut at 116
    columns, and that is the width, not the longest note's length."""
    path = next((CASES / "batch13").glob("03_*.log"))
    lines = pl.Series(path.read_text().splitlines())
    assert lines.str.len_chars().max() > 116
    assert paste_width(lines) == 116


def test_a_prompt_and_ctrl_c_end_the_record_of_every_stream(workdir):
    """batch5/02: the previous container's traceback tail after `^C` and a prompt is a record of its
    own, not the tail of the INFO record four lines up (another stream: no worker prefix)."""
    out = ingested_alone(workdir, B5, "02")
    rows = sql(
        out,
        "SELECT source_pos, n_lines FROM events WHERE message LIKE '(EngineCore_DP0 pid=36)%' ORDER BY event_id",
    )
    assert rows == [("line 6", 2), ("line 10", 1), ("line 11", 1), ("line 15", 3)]
    assert sql(out, "SELECT n_lines FROM events WHERE message = '^C'") == [(1,)]


def test_a_kubectl_logs_command_names_the_pods_role_for_its_paste(workdir):
    """batch5/02 and 05: `kubectl [-n NS] logs [-f] POD` after a prompt or zsh's ✗ names a prefill pod."""
    for prefix in ("02", "05"):
        out = ingested_alone(workdir, B5, prefix)
        roles = dict(sql(out, "SELECT role, count(*) FROM events WHERE kind <> 'health' GROUP BY role"))
        assert set(roles) == {"prefill"}, (prefix, roles)


def test_a_router_crates_line_is_the_routers(workdir):
    """batch5/04 and 16: vllm_router_rs targets; 16's requests are the router's too."""
    out = ingested_alone(workdir, B5, "04")
    assert sql(out, "SELECT count(*) FROM events WHERE role = 'router'") == [(9,)]
    out = ingested_alone(workdir, B5, "16")
    assert sql(out, "SELECT role, count(*) FROM requests GROUP BY role") == [("router", 6)]


@pytest.mark.parametrize(
    ("text", "level", "log_ts", "zoned"),
    [
        ("2025-03-08 02:04:48,880 - __main__ - ERROR - Ended up starting", "ERROR", "2025-03-08 02:04:48.880", False),
        ("[2025-10-31 21:08:41,928] LMCache DEBUG: Sent the request", "DEBUG", "2025-10-31 21:08:41.928", False),
        ("2025-04-01T17:24:43+0000 [WARNING] [cli] Converting", "WARNING", "2025-04-01 17:24:43", True),
        ("2025-09-22 20:20:40.102319 error 12789 pid[12789] [BM devmm_ioctl.cpp:122] svm advise failed", "error",
         "2025-09-22 20:20:40.102319", False),
    ],
)  # fmt: skip
def test_headers_read_by_their_parts(text, level, log_ts, zoned):
    """batch5/11, 05, 17, 03: Python logging, a library's tagged header, ISO UTC with a bracketed level,
    memfabric's lower-case level; the time as printed, UTC only where the line prints its zone."""
    row = records_from_text(text).row(0, named=True)
    assert row["level"] == level
    assert str(row["log_ts"]).startswith(log_ts)
    assert row["zoned"] is zoned


def test_an_ingest_without_append_keeps_the_out_it_replaces(tmp_path):
    """newcomer trial F14: a second ingest into OUT of other inputs replaced the first without a word."""
    out = tmp_path / "incident"
    ingest([next(B5.glob("07_*"))], out)
    second = ingest([next(B5.glob("06_*"))], out)
    prev = tmp_path / "incident.prev"
    kept = json.loads((prev / "manifest.json").read_text())["inputs"]
    assert [Path(i["source"]).name[:2] for i in kept] == ["07"]
    assert any(n.startswith(f"REPLACED {out}") and str(prev) in n for n in second.notes)
    again = ingest([next(B5.glob("06_*"))], out)  # the same inputs again: nothing to keep
    assert not any("REPLACED" in n for n in again.notes)
    assert json.loads((prev / "manifest.json").read_text())["inputs"] == kept


B6 = CASES / "batch6"


def test_a_held_record_keeps_its_lines_when_the_next_feed_reevaluates_them():
    """batch6/19: a C++ `what():` report after two notes: the reader feeds the notes and holds the
    report open; on the next feed its CUDA hints, `Exception raised from` and `frame #N:` lines still
    continue it (the stream had opened a record in the feed before)."""
    from logcorr.inputs.rejoin import Rejoiner
    from logcorr.inputs.text import text_records

    lines = pl.Series(next(B6.glob("19_*")).read_text().splitlines())
    rejoin = Rejoiner()
    out = pl.concat([rejoin.feed(text_records(lines, "text", "x", 1, compose=False)), rejoin.finish()])
    assert out.select("source_pos", "n_lines").rows() == [("line 1", 1), ("line 2", 1), ("line 3", 11)]


@pytest.mark.parametrize(
    ("prefix", "sql_text", "rows"),
    [
        # a worker name with a rank token (`VllmWorker TP0`) opens a record: the ERROR line is its own
        ("14", "SELECT level, tp_rank, pid FROM events WHERE message LIKE '(VllmWorker TP0%'", [("ERROR", 0, 2940)]),
        # the older launcher's child exit, behind a prose label and a backtick, typed and timed
        ("04", "SELECT watchdog_kind, exit_code, target_pid, ts IS NOT NULL FROM watchdogs",
         [("subprocess_crashed", 131, 247, True)]),
        # "Received sigquit from a child proces." (sic) is a sigquit
        ("01", "SELECT count(*) FROM watchdogs WHERE watchdog_kind = 'sigquit'", [(2,)]),
        # UCX's epoch stamp is UTC; sgl-router 0.1.x's `[Router (Rust)]` header is local time
        ("16", "SELECT zoned FROM events WHERE message LIKE '[1749803291.555759]%'", [(True,)]),
        ("18", "SELECT DISTINCT zoned FROM events WHERE message LIKE '[Router (Rust)]%'", [(False,)]),
        # torch's glog-style Python logging after a rank prefix and two worker prefixes: its level
        ("15", "SELECT level, tp_rank, pid FROM events WHERE message LIKE '(APIServer%[rank0]:W1207%'", [("WARNING", 0, 73)]),
        # a plain event loop is an engine's (no half of a PD pair)
        ("11", "SELECT DISTINCT role FROM tracebacks", [("engine",)]),
    ],
)  # fmt: skip
def test_batch6_reads(workdir, prefix, sql_text, rows):
    assert sql(ingested_alone(workdir, B6, prefix), sql_text) == rows


def test_prose_and_routine_lines_are_no_unexplained_error(workdir):
    """batch6/08: the reporter's sentence naming a watchdog timeout; batch6/18: INFO lines saying a
    health check is pending with an error. Neither is an error record."""
    for prefix in ("08", "18"):
        out = ingested_alone(workdir, B6, prefix)
        assert sql(out, "SELECT count(*) FROM findings WHERE kind LIKE 'unexplained%'") == [(0,)], prefix


def test_a_cpp_terminate_report_is_one_record_even_where_the_paste_starts_at_what():
    """batch6/19 without its notes starts at `  what():`; with a `terminate called` line before it,
    `what():` continues that line's record. CUDA hints, `Exception raised from` and frames follow."""
    body = [line for line in next(B6.glob("19_*")).read_text().splitlines() if not line.startswith("# ")]
    assert records_from_text("\n".join(body)).select("source_pos", "n_lines").rows() == [("line 1", 11)]
    text = "terminate called after throwing an instance of 'c10::DistBackendError'\n" + "\n".join(body[:3])
    assert records_from_text(text).select("source_pos", "n_lines").rows() == [("line 1", 4)]


@pytest.mark.parametrize(
    "head",
    [
        "Exception ignored in atexit callback: <function _kill_proc at 0x7f1a109714e0>",
        "Exception ignored in: <function Popen.__del__ at 0x7f1a10>",
        "Exception in thread Thread-1 (run):",
        "Error in atexit._run_exitfuncs:",
    ],
)
def test_the_interpreters_own_head_before_a_traceback_opens_a_record(head):
    """batch5/11: after a wrapper's logging line, Python's atexit head and its traceback are the
    interpreter's stderr, not the logger's record: no time or level of the line above."""
    text = (
        "2025-03-08 02:04:48,880 - __main__ - ERROR - Please make sure sglang is installed\n"
        f"{head}\n"
        "Traceback (most recent call last):\n"
        '  File "/home/xx/olmocr/olmocr/pipeline.py", line 535, in _kill_proc\n'
    )
    ev = records_from_text(text, "wrapper.log")
    assert ev.select("source_pos", "n_lines", "level").rows() == [("line 1", 1, "ERROR"), ("line 2", 3, None)]
    assert ev["log_ts"][1] is None and ev["kind"][1] == "traceback"


def test_two_prose_lines_an_author_broke_at_80_columns_under_longer_lines_are_no_wrap():
    """batch9/10 whole: two prose lines of 80 characters (the author's own line breaks) under 300-character lines:
    a width under the longest line needs three wrapped lines, so the prose keeps its line break."""
    path = next((CASES / "batch9").glob("10_*.log"))
    assert paste_width(pl.Series(path.read_text().splitlines())) is None
