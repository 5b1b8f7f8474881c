"""Shared fixtures: where the real cases and the sample incident live."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "cases"  # real excerpts of public reports, each with its source
SAMPLE = ROOT / "sample_logs"


def need_cases() -> Path:
    if not CASES.exists():
        pytest.skip(f"real cases not found at {CASES}")
    return CASES


def need_journalctl() -> None:
    if not shutil.which("journalctl"):
        pytest.skip("journalctl not installed")


@pytest.fixture
def cases() -> Path:
    return need_cases()


_ingested: dict[Path, Path] = {}


def ingested_alone(workdir: Path, batch: Path, prefix: str) -> Path:
    """The output folder of the one case file of ``batch`` whose name starts with ``prefix``, ingested
    alone into ``workdir`` (once per test session)."""
    from logcorr.ingest import ingest

    (path,) = batch.glob(f"{prefix}_*")
    if path not in _ingested:
        _ingested[path] = workdir / f"{batch.name}-{prefix}"
        ingest([path], _ingested[path])
    return _ingested[path]


def sql(out: Path, query: str) -> list[tuple]:
    """The rows of ``query`` (SQL over OUT's tables) as tuples."""
    from logcorr.analysis import saved

    return saved.query(out, query).rows()


def cli(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m logcorr.cli ARGS`` in a child process (its own signals, exit status, stderr)."""
    return subprocess.run(
        [sys.executable, "-m", "logcorr.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def damaged_sample_journal(dest: Path) -> Path:
    """A copy of the sample journal at ``dest`` with 64 KiB of random bytes (seed 7) in the middle of its
    archived file: damage journalctl passes over without a word (the reliability trial's)."""
    need_journalctl()
    shutil.copytree(SAMPLE / "journal", dest)
    archived = next(dest.glob("*/system@*.journal"))
    data = bytearray(archived.read_bytes())
    m = len(data) // 2
    data[m : m + 65536] = random.Random(7).randbytes(65536)
    archived.write_bytes(bytes(data))
    return dest


def open_db(out: Path):
    """``OUT/logcorr.duckdb`` opened as docs/queries.md says from outside OUT (``duckdb -cmd "SET
    file_search_path='OUT'" OUT/logcorr.duckdb``): its views read OUT's Parquet files by paths relative
    to OUT, as ``cd OUT && duckdb logcorr.duckdb`` does. A file of the tables copied in opens the same."""
    import duckdb

    con = duckdb.connect(str(Path(out) / "logcorr.duckdb"), read_only=True)
    con.execute("SET file_search_path = ?", [str(Path(out).resolve())])
    return con
