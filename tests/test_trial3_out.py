"""The third reliability trial (shared/research/reliability_trial.md), F8, F9 and F11: OUT's DuckDB file
when an ingest is killed while it writes it, a journal damaged in the middle read with unit matches
or a window, and the commands that read OUT while an ingest replaces it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb

from tests.conftest import SAMPLE

ROUTER_EVENTS = 1097  # sample_logs/router.log
EXPORT_EVENTS = 5964  # sample_logs/journal.export


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "logcorr.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def parquet_events(out: Path) -> int:
    """Events in the Parquet tables of the folder OUT shows."""
    with duckdb.connect() as con:
        return con.execute(f"SELECT count(*) FROM '{os.path.realpath(out)}/events/**/*.parquet'").fetchone()[
            0
        ]


def duckdb_file_events(out: Path) -> int:
    """Events as ``OUT/logcorr.duckdb`` holds them (what `duckdb OUT/logcorr.duckdb` shows)."""
    with duckdb.connect(str(out / "logcorr.duckdb"), read_only=True) as con:
        return con.execute("SELECT count(*) FROM events").fetchone()[0]


# -- F8: killed while the DuckDB file is written -------------------------------------------------------

KILLED_AT_DUCKDB_FILE = """
import os, signal, sys
from logcorr.store import database
real = database.write
def write(folder, **kw):
    if kw.get("saved") is None:  # OUT's own DuckDB file (a first OUT's provisional one has saved={})
        os.kill(os.getpid(), signal.SIGKILL)
    return real(folder, **kw)
database.write = write
from logcorr.cli import app
sys.argv = ["logcorr", *sys.argv[1:]]
app()
"""


def killed_while_writing_duckdb_file(*args: str) -> None:
    got = subprocess.run(
        [sys.executable, "-c", KILLED_AT_DUCKDB_FILE, *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert got.returncode == -9, got.stderr


def test_f8_a_replace_killed_while_the_duckdb_file_is_written_never_leaves_new_tables_beside_the_old_file(
    tmp_path,
):
    """A fix must guarantee: whenever the run is killed, OUT is the old one or the new one, each with its
    DuckDB file: the file in place never holds other data than the tables beside it."""
    out = tmp_path / "out"
    assert cli("ingest", str(SAMPLE / "router.log"), "-o", str(out)).returncode == 0
    killed_while_writing_duckdb_file("ingest", str(SAMPLE / "journal.export"), "-o", str(out))
    shown = parquet_events(out)
    assert shown in (ROUTER_EVENTS, EXPORT_EVENTS)
    assert duckdb_file_events(out) == shown
    got = cli("query", "SELECT count(*) AS n FROM events", "-d", str(out), "--format", "csv")
    assert got.returncode == 0 and got.stdout.split() == ["n", str(shown)]


def test_f8_an_append_killed_while_the_duckdb_file_is_written_can_be_run_again_and_the_file_holds_all(
    tmp_path,
):
    """A fix must guarantee: an append killed while the DuckDB file is written leaves OUT whole with a
    file of its own tables, and running the same append again gives OUT of both inputs, its DuckDB
    file holding them all (before: refused as 'already in OUT', the stale file left)."""
    out = tmp_path / "out"
    assert cli("ingest", str(SAMPLE / "router.log"), "-o", str(out)).returncode == 0
    killed_while_writing_duckdb_file("ingest", str(SAMPLE / "journal.export"), "--append", "-o", str(out))
    assert duckdb_file_events(out) == parquet_events(out)
    again = cli("ingest", str(SAMPLE / "journal.export"), "--append", "-o", str(out))
    assert again.returncode == 0, again.stderr
    assert parquet_events(out) == duckdb_file_events(out) == ROUTER_EVENTS + EXPORT_EVENTS
    assert not out.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
