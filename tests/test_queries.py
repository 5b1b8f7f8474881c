"""Saved queries, ``logcorr query``, OUT/logcorr.duckdb and OUT/views.sql.

Values come from sample_logs/README.md ("True answers"), read from its table so the tests assert
what the README states.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from datetime import datetime
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from logcorr.analysis import database, saved
from logcorr.cli import app
from logcorr.ingest import ingest, table_schemas
from logcorr.store import views
from logcorr.store.output import Output
from tests.conftest import ingested, open_db

# one worker runs the module (pytest-xdist --dist loadgroup): the sample's connection made once (sample_con)
pytestmark = pytest.mark.xdist_group("queries")

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_logs"
CASES = Path(__file__).parent / "cases"
REQUIRED = ("abort_to_assert", "last_batch_per_rank", "wedge", "stuck_ranks", "incident_chain")
TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


# --- the sample incident and its true answers ---------------------------------------------------


def truths() -> dict[str, str]:
    """``{question: answer}`` from the "True answers" table of sample_logs/README.md."""
    text = (SAMPLE / "README.md").read_text()
    table = text.split("## True answers", 1)[1]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0] not in ("question", "---"):
            rows[cells[0]] = cells[1]
    return rows


def truth(pattern: str) -> str:
    """The answer of the one README row whose question matches the regex ``pattern``."""
    rows = [a for q, a in truths().items() if re.search(pattern, q, re.IGNORECASE)]
    assert len(rows) == 1, f"README: {len(rows)} questions match {pattern!r}"
    return rows[0]


def ts(text: str, n: int = 0) -> datetime:
    """The ``n``-th ISO UTC timestamp in a README answer, as an aware datetime."""
    found = TS.findall(text)
    assert len(found) > n, text
    return datetime.fromisoformat(found[n].replace("Z", "+00:00"))


def need_sample() -> None:
    if not (SAMPLE / "README.md").exists() or not (SAMPLE / "journal").exists():
        pytest.skip("sample_logs not built")


def sample_inputs() -> list[Path]:
    """The sample as a user has it: the journal dir (its export capture without journalctl), the
    hand-taken py-spy dumps and the router log."""
    journal = SAMPLE / "journal" if shutil.which("journalctl") else SAMPLE / "journal.export"
    return [journal, SAMPLE / "pyspy", SAMPLE / "router.log"]


@pytest.fixture(scope="session")
def sample_out(tmp_path_factory) -> Path:
    need_sample()
    return ingested(*sample_inputs())  # shared: read only


@pytest.fixture(scope="session")
def sample_con(sample_out):
    return saved.connect(sample_out)


def q(out: Path, name: str, con=None, **params) -> pl.DataFrame:
    return saved.query(out, name, {k: str(v) for k, v in params.items()}, con=con)


@pytest.fixture(scope="session")
def room() -> int:
    need_sample()
    return int(truth(r"^the room R$").strip("`"))


# --- every saved query is documented --------------------------------------------------------------


def test_every_saved_query_is_documented():
    queries = saved.load_saved()
    assert set(REQUIRED) <= set(queries)
    problems = [p for query in queries.values() for p in query.problems()]
    assert problems == []
    for query in queries.values():
        assert query.question and query.tables and query.columns and query.reading, query.name


def test_an_undocumented_query_is_caught(tmp_path):
    bare = saved.parse_saved("SELECT getvariable('room') AS r", "bare")
    assert {p.split(": ", 1)[1] for p in bare.problems()} >= {
        "no '-- question:' section in the header",
        "no '-- columns:' section in the header",
        "parameter 'room' is used but not documented under '-- parameters:'",
    }
    (tmp_path / "mine.sql").write_text(
        "-- question: How many events?\n-- tables: events\n-- columns:\n--   n  the count\n"
        "-- parameters:\n--   kind  only this kind\n--   extra  never read\nSELECT count(*) AS n FROM events\n"
    )
    mine = saved.load_saved((tmp_path,))["mine"]
    assert mine.column_names == ["n"]
    assert sorted(mine.problems()) == [
        "mine: parameter 'extra' is documented but the SQL never reads it",
        "mine: parameter 'kind' is documented but the SQL never reads it",
    ]


def test_header_layouts():
    entries = saved.parse_saved(
        "-- question: Q?\n--   more of it\n-- tables: a, b\n-- columns:\n--   x   first\n--       continued\n"
        "--   y: second\n-- parameters:\n--   p  a parameter\n-- reading: read it\nSELECT getvariable('p') AS x, 1 AS y",
        "e",
    )
    assert entries.question == "Q? more of it"
    assert entries.tables == ("a", "b")
    assert entries.columns == (("x", "first continued"), ("y", "second"))
    assert entries.parameters == (("p", "a parameter"),)
    assert entries.problems() == []
    inline = saved.parse_saved(
        '-- Question: Q?\n-- Tables: captures (one row, per thing). Prose after.\n-- Columns: a, b ("x", "y"), c.\n'
        "-- Parameters: none. Prose.\n-- How to read: read.\nSELECT 1",
        "i",
    )
    assert inline.tables == ("captures",)
    assert inline.column_names == ["a", "b", "c"]
    assert inline.parameters == ()
    assert inline.reading == "read."


# --- the sample incident --------------------------------------------------------------------------


def test_each_saved_query_returns_its_documented_columns(sample_out):
    """Every saved query runs on the sample and returns the columns its header documents, with rows.
    How fast each runs is a figure of ``bench/bench_queries.py --sample`` (target: under 1 s CPU)."""
    con = saved.connect(sample_out)
    for query in saved.load_saved().values():
        rows = q(sample_out, query.name, con)
        assert rows.columns == query.column_names, query.name
        # the sample's engines ran without NCCL_DEBUG_SUBSYS=COLL and the status logger: those
        # queries' rows are asserted on inputs of their own (tests/test_rank_evidence.py)
        assert (rows.height == 0) if query.name in NOT_IN_SAMPLE else (rows.height > 0), query.name


NOT_IN_SAMPLE = {"nccl_collectives", "scheduler_status"}


def test_abort_to_assert_on_the_sample(sample_out, sample_con, room):
    rows = q(sample_out, "abort_to_assert", sample_con)
    asserted = rows.filter(pl.col("asserted"))
    assert asserted.height == rows.height > 0
    assert set(asserted["bootstrap_room"]) == {room}
    assert set(asserted["assert_role"]) == {"prefill"}
    assert asserted["assert_tp_ranks"].to_list()[0] == [0, 1, 3]
    assert set(asserted["assert_count"]) == {3}
    assert asserted["assert_first_ts"][0] == ts(truth("assertion on prefill TP0"))
    assert asserted["assert_last_ts"][0] == ts(truth("assertion on prefill TP3"))
    burst = truth(r"first / last abort line of any kind")
    first, last = ts(burst, 0), ts(burst, 1)
    assert rows["abort_ts"].is_between(first, last).all()
    assert (rows["delta_ms"] > 0).all()
    assert rows["abort_ts"].min() == ts(truth(r"^first abort line for (room )?R\b"))
    assert set(rows["abort_rid"]) == {
        truth("rid linked to R on prefill").strip("`"),
        truth("rid linked to R on decode").strip("`"),
    }
    # both engines' client disconnects and the transfer failures on every rank of both engines
    assert set(rows["abort_role"]) == {"prefill", "decode"}
    assert rows.filter(pl.col("abort_tp_rank").is_not_null()).group_by("abort_role").agg(
        pl.col("abort_tp_rank").unique().sort()
    ).sort("abort_role")["abort_tp_rank"].to_list() == [[0, 1, 2, 3], [0, 1, 2, 3]]
    assert rows["finding"].str.ends_with("ms before the assertion").all()
    assert rows["abort_source"].is_not_null().all() and rows["abort_source_pos"].is_not_null().all()


def test_abort_to_assert_asks_the_same_of_the_documented_other_error_kind(tmp_path):
    """The header's example ``error_kind=prefill_bootstrap_failed`` (tests/cases/README.md, sglang/02):
    the three failures of room 7561186998443553199 on prefill TP0, TP1, TP7 stand in for the assertion."""
    out = tmp_path / "out"
    ingest([next((CASES / "sglang").glob("02_*"))], out)
    rows = q(out, "abort_to_assert", error_kind="prefill_bootstrap_failed")
    assert rows.height > 0 and rows["asserted"].all()
    assert set(rows["bootstrap_room"]) == {7561186998443553199}
    assert rows["assert_tp_ranks"][0].to_list() == [0, 1, 7] and set(rows["assert_role"]) == {"prefill"}


def test_abort_to_assert_parameters(sample_out, sample_con, room):
    assert set(q(sample_out, "abort_to_assert", sample_con, room=room)["bootstrap_room"]) == {room}
    assert q(sample_out, "abort_to_assert", sample_con, room=1).height == 0
    other = q(sample_out, "abort_to_assert", sample_con, error_kind="no_such_kind")
    assert other.height > 0 and not other["asserted"].any()  # nothing asserted: the aborts, said so
    assert other["finding"].str.starts_with("no no_such_kind error in the data").all()
    assert other["bootstrap_room"].n_unique() == 30
    late = q(sample_out, "abort_to_assert", sample_con, since="2025-10-29 21:35:00+00")
    assert not late["asserted"].any()
    assert sample_con.sql("SELECT getvariable('room')").fetchall() == [(None,)]  # params do not leak


def test_last_batch_per_rank_on_the_sample(sample_out, sample_con):
    rows = q(sample_out, "last_batch_per_rank", sample_con).filter(pl.col("run") == 1)
    last = {(r["role"], r["tp_rank"]): r for r in rows.iter_rows(named=True)}
    for tp in range(4):
        decode = last[("decode", tp)]
        assert decode["last_batch_ts"] == ts(truth(f"last decode batch, decode TP{tp}"))
        prefill = last[("prefill", tp)]
        assert prefill["last_batch_ts"] == ts(truth(f"last prefill batch before the restart, prefill TP{tp}"))
        assert prefill["last_batch_ts"] > decode["last_batch_ts"]
        assert decode["lag_behind_other_role_s"] > 300  # prefill went on for minutes
        assert decode["lag_in_role_s"] < 0.01  # all decode ranks stopped together
        assert decode["running_req"] > 0
        assert decode["next_run_first_ts"] is not None
    # after the restart, run 2: new pids, batches again
    after = q(sample_out, "last_batch_per_rank", sample_con).filter(pl.col("run") == 2)
    assert after.height == 8 and set(after["pid"]).isdisjoint(set(rows["pid"]))


def decode_stops() -> list[datetime]:
    return [ts(truth(f"last decode batch, decode TP{tp}")) for tp in range(4)]


def test_wedge_with_a_short_min_gap_finds_the_same_stops(sample_out, sample_con):
    # gaps are read between per-second buckets of batches; a min_gap_s under a second makes the
    # buckets smaller, so sub-second stops are found as they were batch by batch: the same two stops
    # as with a minute (README: decode's last batch, prefill's last before the restart). The quiet
    # minutes' pauses of 10-25 s between single requests set prefill's usual pause, so its 3 s pauses
    # once the load begins are no stops.
    rows = q(sample_out, "wedge", sample_con, min_gap_s=0.5)
    stops = [(r, t) for r, t in rows.select("role", "stopped_ts").iter_rows()]
    last_prefill = max(ts(truth(f"last prefill batch before the restart, prefill TP{tp}")) for tp in range(4))
    assert stops == [("decode", max(decode_stops())), ("prefill", last_prefill)]
    wedged = rows.filter(pl.col("verdict").str.starts_with("wedged"))
    assert wedged["role"].to_list() == ["decode"] and wedged["ranks_stopped"].to_list() == [4]


def test_wedge_on_the_sample(sample_out, sample_con):
    rows = q(sample_out, "wedge", sample_con)
    decode = rows.filter(pl.col("role") == "decode").row(0, named=True)
    assert decode["first_rank_stopped_ts"] == min(decode_stops())
    assert decode["stopped_ts"] == max(decode_stops())
    assert decode["ranks_stopped"] == 4 and decode["rank_labels"] == ["TP0", "TP1", "TP2", "TP3"]
    assert decode["other_role_continued"] and decode["other_role"] == "prefill"
    assert decode["other_role_last_ts"] == max(
        ts(truth(f"last prefill batch before the restart, prefill TP{tp}")) for tp in range(4)
    )
    assert decode["health_kept_200"]
    health = re.search(r"(\d+) lines on prefill, (\d+) on decode", truth("`/health` during the wedge"))
    assert decode["health_200"] == int(health[2]) and decode["health_not_200"] == 0
    assert decode["restart_ts"] == ts(truth(r"^restart issued"))
    assert decode["verdict"].startswith("wedged: decode stopped on 4 ranks while prefill went on")
    assert abs((decode["ready_ts"] - ts(truth(r"^healthy"), 1)).total_seconds()) < 0.01
    # prefill did not wedge: it went on until the restart
    assert not rows.filter(pl.col("role") == "prefill")["verdict"].str.starts_with("wedged").any()


def test_incident_chain_on_the_sample(sample_out, sample_con, room):
    rows = q(sample_out, "incident_chain", sample_con)
    steps = rows["step"].to_list()
    order = [
        "abort_burst",
        "assertion",
        "last_batch",
        "health",
        "stuck_stacks",
        "restart",
        "ready",
        "resumed",
    ]
    assert [s for s in order if s in steps] == order
    times = [t for t in rows["ts"] if t is not None]
    assert times == sorted(times)  # rows in time order ("ready" after "resumed" when it came later)
    burst = rows.filter(pl.col("step") == "abort_burst").row(0, named=True)
    answer = truth(r"first / last abort line of any kind")
    assert (burst["ts"], burst["end_ts"]) == (ts(answer, 0), ts(answer, 1))
    assertion = rows.filter(pl.col("step") == "assertion").row(0, named=True)
    assert assertion["bootstrap_room"] == room and assertion["ranks"] == "TP0,TP1,TP3"
    stop = rows.filter(pl.col("step") == "last_batch").row(0, named=True)
    assert stop["role"] == "decode" and stop["ts"] == min(decode_stops())
    stuck = {
        r["role"]: r["detail"] for r in rows.filter(pl.col("step") == "stuck_stacks").iter_rows(named=True)
    }
    assert stuck["decode"].startswith("divergent: broadcast(gloo): TP0,TP1 | all_reduce(nccl): TP2,TP3")
    assert stuck["prefill"].startswith("lockstep: all_reduce(nccl): TP0,TP1,TP2,TP3")
    restart = rows.filter((pl.col("step") == "restart") & (pl.col("role") == "decode")).row(0, named=True)
    assert restart["ts"] == ts(truth(r"^restart issued")) and restart["message"].startswith(
        "Stopping sglang-decode"
    )
    assert restart["detail"].startswith(
        "decode restart began at 21:40:45 UTC (the first record of another process for it: systemd stopping"
    )
    assert "prefill went on (144 batch lines across its ranks, until 21:40:34 UTC)" in stop["detail"]
    # prefill's first batch after the restart is the warm-up request, before "fired up": said so
    again = {r["role"]: r for r in rows.filter(pl.col("step") == "resumed").iter_rows(named=True)}
    ready = {r["role"]: r["ts"] for r in rows.filter(pl.col("step") == "ready").iter_rows(named=True)}
    assert again["prefill"]["ts"] < ready["prefill"] and again["prefill"]["detail"].endswith(
        "73.8 s after the restart (before it said ready: the warm-up request SGLang runs at start-up)"
    )
    assert again["decode"]["ts"] > ready["decode"] and again["decode"]["detail"].endswith(
        "80.8 s after the restart"
    )
    # every step carries its evidence: where it was read and the line itself
    assert rows["source"].is_not_null().all() and rows["source_pos"].is_not_null().all()
    assert rows.filter(pl.col("step") != "stuck_stacks")["event_id"].is_not_null().all()
    assert rows["message"].is_not_null().all()
    # the parameters of the queries it reads apply: no assertion for another room
    other_room = q(sample_out, "incident_chain", sample_con, room=1)
    assert "assertion" not in other_room["step"].to_list() and "last_batch" in other_room["step"].to_list()
    assert "room" in saved.all_parameters(saved.load_saved()["incident_chain"], saved.load_saved())


def _scans(con, sql: str) -> list[tuple[str, list[str]]]:
    """(table, projected columns) of every Parquet scan DuckDB ran for ``sql`` (its profile)."""
    import json
    import re

    found = []

    def walk(node: dict) -> None:
        info = node.get("extra_info", {})
        if node.get("name") == "READ_PARQUET":
            cols = info.get("Projections", [])
            table = re.search(r"/([a-z_]+)/(?:\*\*|origin=)", info["Filename(s)"]).group(1)
            found.append((table, [cols] if isinstance(cols, str) else cols))
        for child in node.get("children", []):
            walk(child)

    for node in json.loads(con.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}").fetchall()[0][1])["operator"]:
        walk(node)
    return found


def test_incident_chain_reads_each_text_column_once(sample_out):
    """Issue 49: the chain's evidence (its first line, source and position) is read from ``events`` by id,
    once for every step; the stop's position was read a second time from ``batches`` (through the
    ``wedge`` view): every batch line's ``source_pos`` (a journal cursor, the widest column after the
    message) for a few rows, 0.2 of 1.6 CPU s at 64 hosts."""
    scans = _scans(saved.connect(sample_out), "SELECT * FROM incident_chain")
    texts = [(table, c) for table, cols in scans for c in cols if c in ("message", "source_pos")]
    assert sorted(t for t, c in texts if t in ("events", "batches")) == ["events", "events"]
    assert sorted(c for t, c in texts if t == "events") == ["message", "source_pos"]


def test_room_story_on_the_sample(sample_out, sample_con, room):
    rows = q(sample_out, "room_story", sample_con)
    assert set(rows["bootstrap_room"]) == {room}
    assert rows["ts"].is_sorted()
    asserts = rows.filter(pl.col("message").str.contains("Unexpected transfer worker error"))
    assert asserts["rank_label"].to_list() == ["TP0", "TP1", "TP3"]
    # the HTTP servers' client disconnects name only a rid: linked through the rid paired with the room
    by_rid = rows.filter(pl.col("linked_by") == "rid")
    assert set(by_rid["role"]) == {"prefill", "decode"} and (by_rid["kind"] == "abort").all()
    aborts = rows.filter(pl.col("kind") == "abort")
    assert aborts["ts"].min() == ts(truth(r"^first abort line for (room )?R\b"))
    # the story opens with decode's --log-requests Receive line of R (its rid, its room), before the abort
    first = rows.row(0, named=True)
    assert (first["kind"], first["role"]) == ("request_received", "decode") and first["ts"] < aborts[
        "ts"
    ].min()
    assert q(sample_out, "room_story", sample_con, room=1).height == 0


def test_desync_on_the_sample(sample_out, sample_con):
    rows = q(sample_out, "desync", sample_con)
    assert rows.height == 8  # one row per rank, though decode ranks have dumps in the journal and in files
    labels = {(r["role"], r["rank_label"]): r["wait_label"] for r in rows.iter_rows(named=True)}
    assert labels == {
        **{("prefill", f"TP{tp}"): "all_reduce(nccl)" for tp in range(4)},
        ("decode", "TP0"): "broadcast(gloo)",
        ("decode", "TP1"): "broadcast(gloo)",
        ("decode", "TP2"): "all_reduce(nccl)",
        ("decode", "TP3"): "all_reduce(nccl)",
    }
    verdicts = dict(rows.select("role", "verdict").unique().iter_rows())
    assert verdicts == {"prefill": "lockstep", "decode": "divergent"}
    groups = dict(rows.select("role", "groups").unique().iter_rows())
    assert groups["decode"] == "broadcast(gloo): TP0,TP1 | all_reduce(nccl): TP2,TP3"
    assert rows["source"].is_not_null().all()
    # prefill's ranks have one capture each: whether they progressed cannot be said (the report
    # showed "no" under "no progress", read as "they progressed")
    assert rows.filter(pl.col("role") == "prefill")["no_progress"].is_null().all()
    # one round per engine: decode's watchdog dumps in the journal, taken while decode was wedged;
    # prefill has only bare files without a time (its round says so)
    basis = dict(rows.select("role", "round_basis").unique().iter_rows())
    stop = q(sample_out, "wedge", sample_con).filter(pl.col("verdict").str.starts_with("wedged"))[
        "stopped_ts"
    ][0]
    assert basis == {
        "prefill": "captures without time",
        "decode": f"during the stop of decode at {stop:%H:%M:%S} (wedged)",
    }
    decode = rows.filter(pl.col("role") == "decode")
    assert (decode["capture_ts"] >= decode["round_ts"]).all() and (
        decode["capture_ts"] <= decode["round_end_ts"]
    ).all()
    assert rows.filter(pl.col("role") == "prefill")["round_ts"].is_null().all()
    assert rows["is_rank"].all() and set(rows["ranks_in_group"]) == {4}


def test_coverage_on_the_sample(sample_out, sample_con):
    rows = q(sample_out, "coverage", sample_con)
    roles = {r["role"]: r for r in rows.filter(pl.col("scope") == "role").iter_rows(named=True)}
    assert set(roles) == {"prefill", "decode", "router"}
    assert all(r["missing"] is None for r in roles.values())
    ranks = rows.filter(pl.col("scope") == "rank")
    assert ranks.height == 8 and (ranks["captures"] > 0).all() and (ranks["batches"] > 0).all()


# --- the per-process summary (processes) ---------------------------------------------------------


def test_processes_on_the_sample(sample_out, sample_con):
    con = sample_con
    assert (
        con.execute("SELECT sum(records) FROM processes").fetchone()[0]
        == con.execute("SELECT count(*) FROM events").fetchone()[0]
    )
    decode_tp0 = con.execute(
        "SELECT pid FROM processes WHERE role = 'decode' AND tp_rank = 0 AND pid IS NOT NULL GROUP BY pid ORDER BY min(first_ts)"
    ).fetchall()
    assert [pid for (pid,) in decode_tp0] == [3371, 918661]  # before and after the restart
    ready = con.execute(
        "SELECT role, pid, ready_ts FROM processes WHERE ready_ts IS NOT NULL ORDER BY role"
    ).fetchall()
    assert ready == [
        ("decode", 918234, ts(truth(r"^healthy"), 1)),
        ("prefill", 918233, ts(truth(r"^healthy"))),
    ]
    first = con.execute(
        "SELECT first_ts, source_pos FROM processes WHERE role = 'decode' AND tp_rank = 3 AND pid = 3374"
    ).fetchall()
    assert (
        first
        == con.execute(
            "SELECT ts, source_pos FROM events WHERE pid = 3374 AND tp_rank = 3 ORDER BY ts, event_id LIMIT 1"
        ).fetchall()
    )


def test_batch_seconds_on_the_sample(sample_con):
    con = sample_con
    assert (
        con.execute("SELECT sum(batches) FROM batch_seconds").fetchone()[0]
        == con.execute(
            "SELECT count(*) FROM batches WHERE role IN ('prefill', 'decode') AND ts IS NOT NULL"
        ).fetchone()[0]
    )
    # each second's first and last batch, in (ts, event_id) order, as batches itself has them
    mine = con.execute(
        "SELECT role, sec, lo_ts, lo_event_id, hi_ts, hi_event_id FROM batch_seconds ORDER BY role, sec"
    ).fetchall()
    want = con.execute(
        """SELECT role, epoch_us(ts) // 1000000 AS sec,
                  min(ts), arg_min(event_id, (ts, event_id)), max(ts), arg_max(event_id, (ts, event_id))
           FROM batches WHERE role IN ('prefill', 'decode') GROUP BY ALL ORDER BY role, sec"""
    ).fetchall()
    assert mine == want and len(mine) > 100


def test_saved_queries_give_the_same_answer_every_run(tmp_path):
    # The same records twice (a journal export, and its json capture with another boot id, so that
    # they are not known as the same entries): ties between them must not be broken by chance (the
    # evidence of a step changed from run to run).
    need_sample()
    out = tmp_path / "out"
    other_boot = (SAMPLE / "journal.json").read_text().replace("d81e5a3c6f0b4b2a9e7c1f4d8a2b6c3e", "0" * 32)
    (tmp_path / "copy.json").write_text(other_boot)
    ingest([SAMPLE / "journal.export", tmp_path / "copy.json", SAMPLE / "pyspy", SAMPLE / "router.log"], out)
    assert q(out, "SELECT count(*) AS n FROM transfer_errors")["n"][0] == 2 * 243
    for name in ("abort_to_assert", "incident_chain", "wedge"):
        answers = set()
        for _ in range(8):  # fresh connections: DuckDB's threads finish in another order each time
            with open_db(out) as con:
                answers.add(str(con.execute(f"SELECT * FROM {name}").fetchall()))
        assert len(answers) == 1, name
    with open_db(out) as con:
        step = con.execute(
            "SELECT bootstrap_room, role, event_id FROM incident_chain WHERE step = 'assertion'"
        ).fetchone()
        first = con.execute(
            "SELECT event_id, source FROM transfer_errors WHERE bootstrap_room = ? AND role = ? "
            "AND error_kind = 'assert_transfer_infos' ORDER BY ts, event_id LIMIT 1",
            [step[0], step[1]],
        ).fetchone()
    assert step[2] == first[0] and first[1].endswith("journal.export")  # the first input's record


def test_an_out_without_processes_derives_it_from_events(sample_out, tmp_path):
    old = tmp_path / "old"  # as ingest wrote it before the tables existed
    shutil.copytree(
        sample_out,
        old,
        ignore=shutil.ignore_patterns("processes", "batch_seconds", "logcorr.duckdb*", "views.sql"),
    )
    for name in ("wedge", "last_batch_per_rank", "coverage"):
        assert q(old, name).equals(q(sample_out, name)), name
    result = database.write(old)
    assert "wedge" in result.views and not result.skipped
    with open_db(old) as con:
        assert con.execute("SELECT count(*) FROM wedge WHERE verdict LIKE 'wedged%'").fetchone()[0] == 1


# --- a real case alone, and empty tables ----------------------------------------------------------


def test_case_02_alone_finds_no_assertion_and_says_so(tmp_path):
    files = sorted((CASES / "sglang").glob("02_*.log")) if CASES.exists() else []
    if not files:
        pytest.skip(f"case 02 not found under {CASES}")
    out = tmp_path / "out"
    ingest(files, out)
    rows = q(out, "abort_to_assert")
    assert rows.height > 0 and not rows["asserted"].any()
    assert rows["finding"].str.starts_with("no assert_transfer_infos error in the data").all()
    room = 7561186998443553199
    mine = rows.filter(pl.col("bootstrap_room") == room)
    assert set(mine["abort_role"]) == {"prefill"}
    assert sorted(mine["abort_tp_rank"]) == [0, 1, 7]
    assert q(out, "incident_chain").filter(pl.col("step") == "assertion").height == 0


@pytest.fixture
def empty_out(tmp_path) -> Path:
    """An OUT whose every table exists with its columns and no row (nothing ingested)."""
    out = tmp_path / "empty"
    Output(out, table_schemas()).commit({"inputs": []})
    database.write(out)
    return out


def test_queries_over_empty_tables_return_empty_results(empty_out):
    con, here = open_db(empty_out), saved.connect(empty_out)  # one connection each: binding is 0.5 s
    for query in saved.load_saved().values():
        rows = q(empty_out, query.name, here)
        assert rows.columns == query.column_names, query.name
        in_file = con.sql(f'SELECT * FROM "{query.name}"').pl()
        if query.name == "coverage":  # says each role was not ingested
            assert sorted(rows["missing"]) == [
                "no record read as the decode engine's",
                "no record read as the prefill engine's",
                "no record read as the router's",
            ]
        else:
            assert rows.height == 0 and in_file.height == 0, query.name


def test_a_missing_router_log_leaves_requests_empty_not_an_error(tmp_path):
    log = tmp_path / "prefill.log"
    log.write_text(
        "[2025-10-29 21:25:13 TP0] Prefill batch, #new-seq: 1, #new-token: 16, #cached-token: 0, "
        "token usage: 0.00, #running-req: 0, #queue-req: 0, input throughput (token/s): 4.00, cuda graph: False\n"
    )
    out = tmp_path / "out"
    ingest([log], out)
    con = saved.connect(out)  # one connection for all: binding every view is 0.5 s of CPU
    for query in saved.load_saved().values():
        q(out, query.name, con)
    assert q(out, "abort_to_assert").height == 0
    missing = q(out, "coverage").filter(pl.col("role") == "router")["missing"].to_list()
    assert missing == ["no record read as the router's"]


# --- the DuckDB file and views.sql ----------------------------------------------------------------


def _check_db(path: Path, room: int, saved_names: list[str]) -> None:
    con = open_db(path.parent)
    try:
        assert con.sql("SELECT count(*) FROM events").fetchall()[0][0] > 5000
        rooms = con.sql("SELECT DISTINCT bootstrap_room FROM abort_to_assert WHERE asserted").fetchall()
        assert rooms == [(room,)]
        views = {r[0] for r in con.sql("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
        assert set(saved_names) <= views
        docs = con.sql("SELECT name, view_created FROM saved_queries ORDER BY name").fetchall()
        assert docs == [(n, True) for n in sorted(saved_names)]
        con.execute("SET VARIABLE room = 1")
        assert con.sql("SELECT count(*) FROM abort_to_assert").fetchall() == [(0,)]
    finally:
        con.close()


def test_duckdb_file_from_another_directory_after_moving_and_zipping(sample_out, room, tmp_path, monkeypatch):
    names = list(saved.load_saved())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    _check_db(sample_out / database.DB_NAME, room, names)  # views by paths relative to OUT (the default)
    first, moved = tmp_path / "first", tmp_path / "moved"
    shutil.copytree(sample_out, first)
    database.write(first, embed=False)
    assert (first / database.DB_NAME).stat().st_size < 2_000_000  # no copy of the data
    first.rename(moved)
    with pytest.raises(duckdb.IOException, match="events"):  # outside OUT, without file_search_path
        duckdb.connect(str(moved / database.DB_NAME), read_only=True).sql("SELECT count(*) FROM events")
    result = CliRunner().invoke(app, ["database", "-d", str(moved), "--no-embed"])
    assert result.exit_code == 0, result.output
    assert f"views over the Parquet files of {moved}" in result.output
    _check_db(moved / database.DB_NAME, room, names)
    # embedded (--embed): the tables are in the file, which works with the Parquet folders gone and zipped
    result = CliRunner().invoke(app, ["database", "-d", str(moved), "--embed"])
    assert result.exit_code == 0 and "tables copied in" in result.output, result.output
    for folder in moved.iterdir():
        if folder.is_dir():
            shutil.rmtree(folder)
    _check_db(moved / database.DB_NAME, room, names)
    archive = tmp_path / "out.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(moved / database.DB_NAME, database.DB_NAME)
    unzipped = tmp_path / "unzipped"
    with zipfile.ZipFile(archive) as z:
        z.extractall(unzipped)
    _check_db(unzipped / database.DB_NAME, room, names)


def test_duckdb_file_is_written_with_the_old_storage_version(sample_out):
    header = (sample_out / database.DB_NAME).read_bytes()[:64]
    assert header[8:12] == b"DUCK"
    # storage format 64: written by DuckDB 0.10-1.1 and by newer ones with STORAGE_VERSION 'v1.0.0'
    assert int.from_bytes(header[12:20], "little") == 64


def test_views_sql_from_out(sample_out, room, monkeypatch):
    text = (sample_out / database.VIEWS_NAME).read_text()
    assert str(sample_out) not in text  # relative paths only
    monkeypatch.chdir(sample_out)
    con = duckdb.connect()
    con.execute(text)
    assert con.sql("SELECT DISTINCT bootstrap_room FROM abort_to_assert WHERE asserted").fetchall() == [
        (room,)
    ]
    assert con.sql("SELECT role FROM wedge WHERE verdict LIKE 'wedged%'").fetchall() == [("decode",)]
    for query in saved.load_saved().values():
        assert con.sql(f'SELECT * FROM "{query.name}"').columns == query.column_names


def test_views_sql_in_a_duckdb_cli(sample_out):
    cli = shutil.which("duckdb")
    if not cli:
        pytest.skip("no duckdb CLI on PATH")
    run = subprocess.run(
        [cli, "-init", "views.sql", "-csv", "-c", "SELECT step FROM incident_chain ORDER BY step_no LIMIT 1"],
        cwd=sample_out,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert "abort_burst" in run.stdout


def test_duckdb_file_opens_in_older_duckdb_versions(sample_out, room):
    """Set LOGCORR_DUCKDB_COMPAT to folders each holding an older ``duckdb`` wheel installed with
    ``pip install --target DIR duckdb==X`` (plus pytz for versions before 1.2)."""
    dirs = [d for d in os.environ.get("LOGCORR_DUCKDB_COMPAT", "").split(os.pathsep) if d]
    if not dirs:
        pytest.skip("LOGCORR_DUCKDB_COMPAT not set")
    script = (
        "import duckdb, sys\n"
        "c = duckdb.connect(sys.argv[1], read_only=True)\n"
        "print(duckdb.__version__, c.sql('SELECT count(*) FROM events').fetchall()[0][0])\n"
        "print(c.sql('SELECT DISTINCT bootstrap_room::VARCHAR FROM abort_to_assert WHERE asserted').fetchall())\n"
    )
    for d in dirs:
        env = {**os.environ, "PYTHONPATH": d}
        run = subprocess.run(
            [sys.executable, "-c", script, str(sample_out / database.DB_NAME)],
            env=env,
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, f"{d}: {run.stderr[-500:]}"
        assert str(room) in run.stdout, d


# --- the command line -----------------------------------------------------------------------------


def test_query_list_names_every_saved_query():
    result = CliRunner().invoke(app, ["query", "--list"])
    assert result.exit_code == 0
    for query in saved.load_saved().values():
        assert query.name in result.output and query.question[:40] in result.output


def test_query_command_formats_and_params(sample_out, room):
    runner = CliRunner()
    as_json = runner.invoke(app, ["query", "abort_to_assert", "-d", str(sample_out), "--format", "json"])
    assert as_json.exit_code == 0, as_json.output
    rows = json.loads(as_json.output)
    assert {r["bootstrap_room"] for r in rows} == {room}
    assert TS.fullmatch(rows[0]["assert_first_ts"])
    as_csv = runner.invoke(
        app, ["query", "wedge", "-d", str(sample_out), "--format", "csv", "--param", "min_gap_s=30"]
    )
    assert as_csv.exit_code == 0
    assert as_csv.output.splitlines()[0] == ",".join(saved.load_saved()["wedge"].column_names)
    md = runner.invoke(app, ["query", "SELECT 'a|b' AS x, 1 AS n", "-d", str(sample_out), "-f", "markdown"])
    assert md.output.splitlines() == ["| x | n |", "|---|---|", "| a\\|b | 1 |"]
    table = runner.invoke(app, ["query", "SELECT count(*) AS n FROM stacks", "-d", str(sample_out)])
    assert table.exit_code == 0 and table.output.splitlines()[-1] == "(1 row)"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["query", "wedg"], "no saved query named 'wedg'. Did you mean wedge?"),
        (["query", "wegde"], "no saved query named 'wegde'. Did you mean wedge?"),
        (["query", "nosuch.sql"], "nosuch.sql: no such file"),
        (
            ["query", "wedge", "--param", "foo=1"],
            "wedge has no parameter foo; it takes: gap_factor, min_gap_s, since, until",
        ),
        (["query", "wedge", "--param", "foo"], "expected NAME=VALUE"),
        (
            ["query", "room_story", "--param", "room=abc"],
            "--param room=abc: not a value room_story can read for room; room is the room to follow (BIGINT;",
        ),
        (["query", "wedge", "--param", "min_gap_s=ten"], "--param min_gap_s=ten: not a value wedge can read"),
        (
            ["query", "wedge", "--param", "until=notatime"],
            "--param until=notatime: not a value wedge can read",
        ),
        (
            ["query", "wedge", "--format", "xml"],
            "--format 'xml': expected one of table, vertical, csv, json, markdown",
        ),
        (["query", "SELECT * FROM nope"], "Table with name nope does not exist"),
        (["query"], "`logcorr query --list` shows the saved queries"),
    ],
)
def test_query_command_errors(sample_out, args, message):
    result = CliRunner().invoke(app, [*args, "-d", str(sample_out)])
    assert result.exit_code == 1
    assert message in result.output


def test_query_on_a_missing_folder(tmp_path):
    result = CliRunner().invoke(app, ["query", "wedge", "-d", str(tmp_path / "nope")])
    assert result.exit_code == 1 and "run logcorr ingest first" in result.output


def test_a_sql_file_runs_as_a_saved_query(sample_out, tmp_path):
    path = tmp_path / "n_batches.sql"
    path.write_text(
        "-- question: how many batches per role?\nSELECT role, count(*) AS n FROM batches GROUP BY role\n"
    )
    rows = saved.query(sample_out, str(path))
    assert set(rows["role"]) == {"prefill", "decode"} and (rows["n"] > 0).all()


def test_a_folder_that_is_no_ingest_output_is_named_as_such(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "router.log").write_text("not a table\n")
    result = CliRunner().invoke(app, ["query", "wedge", "-d", str(tmp_path / "logs")])
    assert result.exit_code == 1
    assert "not a logcorr output folder (no tables, no manifest.json)" in result.output
    assert "Catalog Error" not in result.output


def test_an_out_written_before_a_column_existed_reads_it_as_null(sample_out, tmp_path):
    """An OUT from before ``events.zoned``: the column reads as NULL (the rule counts it as zoned), so
    ``findings`` still binds, states the sample's times in UTC, and views.sql declares it too."""
    old = tmp_path / "old"
    shutil.copytree(sample_out, old)
    for part in (old / "events").glob("**/*.parquet"):
        pl.read_parquet(part).drop("zoned").write_parquet(part)
    con = saved.connect(old)
    assert (
        con.execute("SELECT count(*) FROM events WHERE zoned IS NULL").fetchall()[0][0]
        == pl.read_parquet(next((old / "events").glob("**/*.parquet"))).height
    )
    now, before = q(sample_out, "findings", saved.connect(sample_out)), q(old, "findings", con)
    assert before["kind"].to_list() == now["kind"].to_list()
    wedge = before.filter(pl.col("kind") == "wedge")
    assert wedge["zoned"].to_list() == [True] and " UTC" in wedge["summary"][0]
    text = database.views_sql(views.table_folders(old), saved.load_saved())
    assert 'CAST(NULL AS BOOLEAN) AS "zoned" FROM read_parquet(\'events/' in text


def test_the_views_of_a_shape_are_kept_on_disk_for_the_next_process_and_a_damaged_file_is_bound_anew(
    tmp_path, monkeypatch
):
    """A file of views bound once is kept in LOGCORR_CACHE with a note (views, skipped, SHA-256): a later
    process (memory empty) copies it without binding a view, and the copy reads its own OUT's rows; a kept
    file whose bytes no longer match its note is not used: the views are bound again."""
    monkeypatch.setenv(database.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(database, "_TEMPLATES", {})
    (first,) = (CASES / "batch9").glob("03_*")
    (second,) = (CASES / "batch9").glob("04_*")
    ingest([first], tmp_path / "03")
    (note,) = (tmp_path / "cache").glob("views-*.json")
    kept = json.loads(note.read_text())
    assert "findings" in kept["views"] and note.with_suffix(".duckdb").stat().st_size > 100_000
    monkeypatch.setattr(database, "_TEMPLATES", {})  # a new process

    def no_binding(*args):
        raise AssertionError("views bound again")

    monkeypatch.setattr(database, "_saved_views", no_binding)
    ingest([second], tmp_path / "04")
    assert saved.query(tmp_path / "04", "SELECT count(*) FROM events").item() == 6
    monkeypatch.chdir(tmp_path / "04")
    with duckdb.connect(database.DB_NAME, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM events").fetchone() == (6,)
        assert con.execute("SELECT count(*) FROM findings").fetchone() == (2,)
    damaged = note.with_suffix(".duckdb")
    damaged.write_bytes(damaged.read_bytes()[:-1] + b"x")
    monkeypatch.setattr(database, "_TEMPLATES", {})
    with pytest.raises(AssertionError, match="views bound again"):
        database.write(tmp_path / "04")


def test_a_second_out_of_the_same_shape_gets_the_views_bound_once_and_reads_its_own_rows(
    tmp_path, monkeypatch
):
    """database.write binds the views of a table shape once a process and copies the file for the next OUT
    of that shape: each file, opened from inside its OUT, reads that OUT's rows (batch9/03 has 5 records,
    04 has 6), and names the same views; an OUT of another shape is bound anew."""
    monkeypatch.setattr(database, "_TEMPLATES", {})
    outs = {}
    for prefix, rows in (("03", 5), ("04", 6)):
        (path,) = (CASES / "batch9").glob(f"{prefix}_*")
        outs[prefix] = tmp_path / prefix
        ingest([path], outs[prefix])
        assert len(database._TEMPLATES) == 1  # 03 and 04 are one shape: the second copied the first's file
        monkeypatch.chdir(outs[prefix])
        con = duckdb.connect(database.DB_NAME, read_only=True)
        assert con.execute("SELECT count(*) FROM events").fetchone() == (rows,)
        assert con.execute("SELECT count(*) FROM findings").fetchone() == (2,)
        views = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1").fetchall()
        con.close()
        outs[prefix] = views
    assert outs["03"] == outs["04"] and ("findings",) in outs["03"]
    (other,) = (CASES / "batch9").glob("05_*")  # its columns bind as 03's (large_string or string: VARCHAR)
    ingest([other], tmp_path / "05")
    assert len(database._TEMPLATES) == 1
    (part,) = (tmp_path / "05" / "facts").glob("**/*.parquet")  # an older OUT: facts without value_unit
    pq.write_table(pq.read_table(part).drop_columns(["value_unit"]), part)
    database.write(tmp_path / "05")  # another shape: a second binding
    assert len(database._TEMPLATES) == 2
    assert saved.query(tmp_path / "05", "SELECT count(*) AS n, count(value_unit) AS u FROM facts").row(0) == (
        saved.query(tmp_path / "05", "SELECT count(*) FROM facts").item(),
        0,
    )


def test_held_views_give_the_rows_of_the_views_and_shadow_them_for_the_queries_that_read_them(sample_out):
    """``saved.hold`` computes wedge, stuck_ranks and desync once into temporary tables: the sample's
    decode stop (4 ranks) and its desync rows are the same read from them, and desync, run again over
    the held tables, answers as over the views; a name that is no view here is not held."""
    views = saved.connect(sample_out, only={"wedge", "stuck_ranks", "desync"})
    want = {n: saved.query(sample_out, n, con=views) for n in ("wedge", "desync")}
    con = saved.connect(sample_out, only={"wedge", "stuck_ranks", "desync"})
    assert saved.hold(con, ["wedge", "stuck_ranks", "desync", "no_such_view"]) == [
        "wedge",
        "stuck_ranks",
        "desync",
    ]
    temp = con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary ORDER BY 1").fetchall()
    assert temp == [("desync",), ("stuck_ranks",), ("wedge",)]
    for name, rows in want.items():
        assert saved.query(sample_out, f"SELECT * FROM {name}", con=con).equals(rows)
        assert saved.query(sample_out, name, con=con).equals(rows)  # its body, over the held tables
    decode = want["wedge"].filter(pl.col("role") == "decode").row(0, named=True)
    assert decode["ranks_stopped"] == 4 and want["desync"].height > 0
