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
