"""Shared fixtures: where the real cases and the sample incident live."""

from __future__ import annotations

import shutil
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
