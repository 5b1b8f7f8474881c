"""Faults and hostile input (issue 16): nothing lost, nothing run, nothing overwritten.

One test (or a few) per finding of the issue, each reproducing it first: SQL through a folder name,
hosts overwriting each other, concurrent and repeated ``--append``, a non-atomic replace of OUT,
export length prefixes, tracebacks instead of messages, unbounded memory and disk, planted
symlinks, and wrong data (glob paths, ``\\r`` line ends, BOM, odd timestamps and rooms, Markdown).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

from logcorr import database, saved, store
from logcorr.ingest import ingest, table_schemas

LOG = [
    "[2025-11-05 12:00:00 TP0] Prefill batch, #new-seq: 2, #new-token: 4096, #cached-token: 0, token usage: 0.01, "
    "#running-req: 0, #queue-req: 0, #prealloc-req: 0, #inflight-req: 1, cuda graph: False, "
    "input throughput (token/s): 2049.00",
    "[2025-11-05 12:00:02 TP0] Unexpected transfer worker error for room 4793981895866140836",
    "[2025-11-05 12:00:03 TP0] Decode batch, #running-req: 3, #token: 900, token usage: 0.01, cuda graph: True, "
    "gen throughput (token/s): 120.00, #queue-req: 0",
]


def cli(*args: str, cwd: Path | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    """``logcorr ARGS…`` in a fresh python, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "logcorr.cli", *args],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        cwd=cwd,
        check=False,
    )


def no_traceback(proc: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr


def write_log(path: Path, lines: list[str] = LOG) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def events(out: Path) -> pl.DataFrame:
    files = sorted((out / "events").rglob("*.parquet"))
    return pl.concat([pl.read_parquet(f, hive_partitioning=False) for f in files], how="diagonal_relaxed")


# -- 1: SQL through a folder name -------------------------------------------------------------------


HOSTILE_FOLDER = """x" AS SELECT 42 AS v; COPY (SELECT 1) TO 'pwned.csv'; CREATE VIEW "y"""


def test_table_names_are_the_contract():
    assert set(store.TABLES) == set(table_schemas())


def test_a_hostile_folder_name_in_out_runs_no_sql(tmp_path: Path):
    out = tmp_path / "out"
    ingest([write_log(tmp_path / "a.log")], out, origin="n1")
    bad = out / HOSTILE_FOLDER / "origin=x"
    bad.mkdir(parents=True)
    pl.DataFrame({"a": [1]}).write_parquet(bad / "part-0.parquet")
    for args in (
        ("database", "-d", str(out)),
        ("query", "SELECT count(*) AS n FROM events", "-d", str(out), "-f", "csv"),
        ("timeline", "-d", str(out), "-o", str(tmp_path / "t.html")),
        ("report", "-d", str(out)),
    ):
        proc = cli(*args, cwd=tmp_path)
        no_traceback(proc)
        assert proc.returncode == 0, (args, proc.stderr)
    assert not list(tmp_path.rglob("pwned.csv"))
    con = duckdb.connect(str(out / "logcorr.duckdb"), read_only=True)
    views = {r[0] for r in con.sql("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert "y" not in views and not any('"' in v for v in views)
    assert "events" in views


def test_quote_ident_doubles_quotes():
    con = duckdb.connect()
    con.execute(f"CREATE VIEW {saved.quote_ident(HOSTILE_FOLDER)} AS SELECT 1 AS v")
    assert con.execute(f"SELECT v FROM {saved.quote_ident(HOSTILE_FOLDER)}").fetchone() == (1,)


# -- 10: paths are not globs ------------------------------------------------------------------------


def test_out_named_like_a_glob_reads_its_own_files(tmp_path: Path):
    ingest([write_log(tmp_path / "a.log")], tmp_path / "out1", origin="n1")
    ingest([write_log(tmp_path / "b.log", LOG[:1])], tmp_path / "out[1]", origin="n1")
    got = saved.query(tmp_path / "out[1]", "SELECT count(*) AS n FROM events")
    assert got["n"].to_list() == [1]
    db = duckdb.connect(str(tmp_path / "out[1]" / "logcorr.duckdb"), read_only=True)
    assert db.execute("SELECT count(*) FROM events").fetchone() == (1,)
    assert store.glob_escape("/a/out[1]*?") == "/a/out[[]1[]][*][?]"
