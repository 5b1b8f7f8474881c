"""The third reliability trial (shared/research/reliability_trial.md), F8, F9 and F11: OUT's DuckDB file
when an ingest is killed while it writes it, a journal damaged in the middle read with unit matches
or a window, and the commands that read OUT while an ingest replaces it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import duckdb
import pytest

from tests import conftest
from tests.conftest import SAMPLE, damaged_sample_journal, need_journalctl, open_db

ROUTER_EVENTS = 1097  # sample_logs/router.log
EXPORT_EVENTS = 5964  # sample_logs/journal.export


cli = partial(conftest.cli, timeout=300)  # an ingest of the sample journal beside a reader


def parquet_events(out: Path) -> int:
    """Events in the Parquet tables of the folder OUT shows."""
    with duckdb.connect() as con:
        return con.execute(f"SELECT count(*) FROM '{os.path.realpath(out)}/events/**/*.parquet'").fetchone()[
            0
        ]


def duckdb_file_events(out: Path) -> int:
    """Events as ``OUT/logcorr.duckdb`` holds them (what `duckdb OUT/logcorr.duckdb` shows)."""
    with open_db(out) as con:
        return con.execute("SELECT count(*) FROM events").fetchone()[0]


# -- F8: killed while the DuckDB file is written -------------------------------------------------------

KILLED_AT_DUCKDB_FILE = """
import os, signal, sys
from logcorr.analysis import database
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


# -- F9: a journal damaged in the middle, read with unit matches or a window ---------------------------


@pytest.fixture(scope="module")
def damaged_journal(tmp_path_factory) -> Path:
    """The sample journal with 64 KiB of random bytes in the middle of its archived file (the trial's)."""
    return damaged_sample_journal(tmp_path_factory.mktemp("f9") / "j")


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--unit", "sglang-router.service"], "journalctl stopped reading {file} at damage (Bad message)"),
        (
            ["--since", "2025-10-29 21:20", "--until", "2025-10-29 21:50"],
            "journalctl skipped 42 damaged entries",
        ),
        (["--all-units", "--since", "2000-01-01"], "journalctl skipped 42 damaged entries"),
        (["--all-units", "--since", "@946684800"], "journalctl skipped 42 damaged entries"),  # its own form
    ],
)
def test_f9_a_journal_damaged_in_the_middle_is_said_with_unit_matches_or_a_window(
    damaged_journal, tmp_path, options, said
):
    """A fix must guarantee: a damaged journal file is detected whatever the options (--unit,
    --since/--until, a journalctl time form) and named in the input's errors, exit 3, as it is
    without them (before: 331 of 1,097 router entries or 42 entries lost, exit 0, nothing said)."""
    out = tmp_path / "out"
    got = cli("ingest", str(damaged_journal), *options, "-o", str(out))
    assert got.returncode == 3, got.stderr
    archived = next(damaged_journal.glob("*/system@*.journal"))
    said = said.format(file=archived)
    assert said in got.stdout and f"logcorr: error: {damaged_journal}: {said}" in got.stderr
    assert "were read only in part" in got.stderr
    with duckdb.connect() as con:
        errors = con.execute(f"SELECT errors FROM '{out}/sources/**/*.parquet'").fetchone()[0]
    assert said in errors
    if "--unit" in options:
        assert parquet_events(out) == 766  # of the router's 1,097: the rest is behind the damage


def test_an_intact_journal_read_with_a_unit_and_a_window_says_no_damage(tmp_path):
    """F9's check must not cry wolf (a guard, it holds on main too): the intact sample journal read
    with --unit and a window exits 0 with every router entry and no error."""
    need_journalctl()
    out = tmp_path / "out"
    got = cli(
        "ingest", str(SAMPLE / "journal"), "--unit", "sglang-router.service", "--since", "2025-10-29 21:20",
        "-o", str(out),
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    assert "damage" not in got.stdout and parquet_events(out) == ROUTER_EVENTS


# -- F11: commands that read OUT while an ingest replaces it -------------------------------------------

# Runs a logcorr command with MODULE.NAME made to stop after its first call, until the file GO exists
# (PAUSED is written when it stops): the moment an ingest replaces OUT under a reader.
PAUSED_READER = """
import importlib, sys, time
from pathlib import Path
module, name, paused = importlib.import_module(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
real = getattr(module, name)
def stopping(*a, **k):
    got = real(*a, **k)
    if not paused.exists():
        paused.write_text("paused")
        go, until = paused.with_suffix(".go"), time.monotonic() + 240
        while not go.exists() and time.monotonic() < until:
            time.sleep(0.05)
    return got
setattr(module, name, stopping)
from logcorr.cli import app
sys.argv = ["logcorr", *sys.argv[4:]]
app()
"""


def _wait_for(check, seconds: float = 240) -> None:
    until = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < until, "timed out"
        time.sleep(0.05)


def replaced_under(
    tmp_path: Path, out: Path, module: str, name: str, *command: str
) -> subprocess.CompletedProcess:
    """Run ``command`` (a logcorr command reading ``out``) stopped after the first call of
    ``module.name``; meanwhile an ingest of sample_logs/journal.export replaces ``out``, which runs to
    its end or until it waits for the reader (its swap link made). Returns the reader's result, the
    ingest having ended with 0 and ``out`` then being the new OUT."""
    paused = tmp_path / "paused"
    reader = subprocess.Popen(
        [sys.executable, "-c", PAUSED_READER, module, name, str(paused), *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(lambda: paused.exists() or reader.poll() is not None)
    ingest = subprocess.Popen(
        [sys.executable, "-m", "logcorr.cli", "ingest", str(SAMPLE / "journal.export"), "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    swap_link = out.parent / f".{out.name}.link-{ingest.pid}"
    _wait_for(lambda: ingest.poll() is not None or swap_link.is_symlink())
    paused.with_suffix(".go").touch()
    stdout, stderr = reader.communicate(timeout=240)
    ingested = ingest.communicate(timeout=240)
    assert ingest.returncode == 0, ingested[1]
    assert parquet_events(out) == duckdb_file_events(out) == EXPORT_EVENTS
    return subprocess.CompletedProcess(reader.args, reader.returncode, stdout, stderr)


def test_f11_a_report_that_started_on_the_old_out_finishes_on_it(tmp_path):
    """A fix must guarantee: a reader that started on the old OUT finishes on it, never failing and
    never reading half of each (before: the report's later queries read the new OUT's files, or
    failed on the old ones removed under them: 10 of 15 in the trial)."""
    out = tmp_path / "out"
    assert cli("ingest", str(SAMPLE / "router.log"), "-o", str(out)).returncode == 0
    alone = cli("report", "-d", str(out), "--format", "json")
    assert alone.returncode == 0, alone.stderr
    got = replaced_under(
        tmp_path, out, "logcorr.analysis.saved", "query", "report", "-d", str(out), "--format", "json"
    )
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout) == json.loads(alone.stdout)
    assert (
        json.loads(got.stdout)["data"]["first_ts"] == "2025-10-29T21:23:05.000000Z"
    )  # the router's first line


def test_f11_a_timeline_that_started_on_the_old_out_finishes_on_it(tmp_path):
    """A fix must guarantee: a timeline whose tables were found before an ingest replaced OUT draws
    them, never failing on part files removed under it, and never blames its output file for them
    (before: 'p_f9.json: cannot write it: No such file or directory (os error 2): …parquet')."""
    out = tmp_path / "out"
    assert cli("ingest", str(SAMPLE / "router.log"), "-o", str(out)).returncode == 0
    page = tmp_path / "t.html"
    alone = cli("timeline", "-d", str(out), "-o", str(page))
    assert alone.returncode == 0, alone.stderr
    got = replaced_under(
        tmp_path, out, "logcorr.render.timeline.tables", "scan", "timeline", "-d", str(out), "-o", str(page)
    )
    assert got.returncode == 0, got.stderr
    assert got.stdout.split("(")[1] == alone.stdout.split("(")[1]  # the same lanes as of the old OUT alone


def test_f11_a_part_file_gone_under_a_timeline_is_said_as_outs_not_the_output_files(tmp_path):
    """A fix must guarantee: a vanished input file is never reported as the output file's error."""
    out = tmp_path / "out"
    assert cli("ingest", str(SAMPLE / "router.log"), "-o", str(out)).returncode == 0
    paused = tmp_path / "paused"
    page = tmp_path / "t.html"
    reader = subprocess.Popen(
        [sys.executable, "-c", PAUSED_READER, "logcorr.render.timeline.tables", "scan", str(paused)]
        + ["timeline", "-d", str(out), "-o", str(page)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(lambda: paused.exists() or reader.poll() is not None)
    for part in out.glob("*/*/*.parquet"):  # removed by hand under it, as a user might
        part.unlink()
    paused.with_suffix(".go").touch()
    _, stderr = reader.communicate(timeout=240)
    assert reader.returncode == 1
    assert stderr.startswith(f"logcorr: {out}: cannot read it: ") and "cannot write" not in stderr
    assert not page.exists()
