"""Output safety: all-or-nothing tables, killed ingests, re-runs and --append."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from logcorr.ingest import OptionError, ingest

LINE = "[2025-10-29 21:34:{s:02d} TP{tp}] Decode batch, #running-req: {n}, #token: 3456, token usage: 0.12, cuda graph: True, gen throughput (token/s): 812.33, #queue-req: 0\n"


def write_log(path: Path, n: int) -> Path:
    with open(path, "w") as f:
        f.writelines(LINE.format(s=i % 60, tp=i % 4, n=i) for i in range(n))
    return path


def table(out: Path, name: str) -> pl.DataFrame:
    return pl.read_parquet(out / name)


def test_rerun_gives_identical_tables(tmp_path):
    log = write_log(tmp_path / "a.log", 500)
    ingest([log], tmp_path / "out")
    first = {t: table(tmp_path / "out", t) for t in ("events", "batches")}
    ingest([log], tmp_path / "out")
    for t, df in first.items():
        assert table(tmp_path / "out", t).equals(df), t
    assert first["batches"].height == 500


def test_parts_carry_parquet_types_only(tmp_path):
    # Written from string views without an Arrow schema: any Parquet reader (pyarrow, Spark, Trino)
    # sees plain UTF-8 strings, UTC microsecond times and 16-bit ranks.
    import pyarrow.parquet as pq

    ingest([write_log(tmp_path / "a.log", 20)], tmp_path / "out", origin="gpu-node-1")
    (part,) = (tmp_path / "out" / "events" / "origin=gpu-node-1").glob("part-0-*.parquet")  # part-<n>-<run>
    schema = pq.read_schema(part)
    assert schema.metadata is None or b"ARROW:schema" not in schema.metadata
    assert str(schema.field("message").type) == "string"
    assert str(schema.field("ts").type) == "timestamp[us, tz=UTC]"
    assert str(schema.field("tp_rank").type) == "int16"
    assert pq.read_table(part).column("tp_rank").to_pylist()[:4] == [0, 1, 2, 3]


def test_append_adds_and_refuses_the_same_input_twice(tmp_path):
    a, b = write_log(tmp_path / "a.log", 300), write_log(tmp_path / "b.log", 200)
    ingest([a], tmp_path / "out")
    ingest([b], tmp_path / "out", append=True)
    ev = table(tmp_path / "out", "events")
    assert ev.height == 500
    assert ev["event_id"].n_unique() == 500  # ids continue, never collide
    assert sorted(ev["source"].unique().to_list()) == [str(a), str(b)]
    with pytest.raises(OptionError, match="a.log: already in"):
        ingest([a], tmp_path / "out", append=True)
    assert table(tmp_path / "out", "events").height == 500
    ingest([b], tmp_path / "out")  # without --append: replaced
    assert table(tmp_path / "out", "events")["source"].unique().to_list() == [str(b)]


def test_append_leaves_the_previous_out_files_untouched(tmp_path):
    a, b = write_log(tmp_path / "a.log", 100), write_log(tmp_path / "b.log", 101)  # not a copy of a
    ingest([a], tmp_path / "out")
    manifest = (tmp_path / "out" / "manifest.json").read_text()
    snapshot = tmp_path / "snap"
    os.link(tmp_path / "out" / "manifest.json", snapshot)  # shares the inode the old OUT had
    ingest([b], tmp_path / "out", append=True)
    assert snapshot.read_text() == manifest


def test_killed_ingest_leaves_previous_out_intact(tmp_path):
    small = write_log(tmp_path / "small.log", 50)
    ingest([small], tmp_path / "out")
    before = table(tmp_path / "out", "events")
    manifest = (tmp_path / "out" / "manifest.json").read_text()
    big = write_log(tmp_path / "big.log", 600_000)
    proc = subprocess.Popen(
        [sys.executable, "-m", "logcorr.cli", "ingest", str(big), "-o", str(tmp_path / "out")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".out.tmp-*/events/**/*.parquet")) and time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail("ingest finished before it could be killed; make the input bigger")
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert (tmp_path / "out" / "manifest.json").read_text() == manifest
    assert table(tmp_path / "out", "events").equals(before)
    ingest([small], tmp_path / "out")  # the next ingest clears what the killed one left
    assert not list(tmp_path.glob(".out.tmp-*"))
