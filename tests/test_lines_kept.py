"""No line is ever lost: every non-blank line of every real case file (tests/cases/**, as ``wc -l``
counts lines) is in ``events`` (a line of a record's message, after re-joining) or named in
``sources.errors``. The case files are ingested together, once; each is counted on its own."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from logcorr.analysis import saved
from logcorr.inputs.text import has_compose_prefix, paste_width, text_records
from logcorr.parsers import journald
from tests.conftest import ingested

# one worker runs the module (pytest-xdist --dist loadgroup): the events of every case file read once (tables)
pytestmark = pytest.mark.xdist_group("lines_kept")

CASES = Path(__file__).parent / "cases"
FILES = sorted(p for p in CASES.rglob("*") if p.suffix in (".log", ".txt"))


@pytest.fixture(scope="module")
def tables() -> tuple[pl.DataFrame, pl.DataFrame]:
    out = ingested(*FILES)  # once per run, whichever worker asks first; read only
    return (
        saved.query(out, "SELECT source, message FROM events"),
        saved.query(out, "SELECT source, errors FROM sources"),
    )


def reader_lines(path: Path) -> int:
    """The non-blank lines the reader makes of ``path``, as its records count them: a line whose text
    is only an envelope it takes off (a compose prefix before nothing) counts none, and a line it
    splits in two records (an SGLang header glued mid-line) counts two, and lines a terminal wrapped,
    joined back, count one."""
    lines = journald.split_lines(path.read_bytes())
    recs = text_records(
        lines, "text", str(path), 1, compose=has_compose_prefix(lines), width=paste_width(lines)
    )
    return int((recs["message"].str.strip_chars() != "").sum())


def test_the_cases_are_all_there():
    assert len(FILES) >= 60
    assert {p.parent.name for p in FILES} >= {"batch3", "batch4", "real2", "sglang", "pyspy", "server_args"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name[:24]}")
def test_every_non_blank_line_is_in_events_or_named(path: Path, tables):
    events, sources = tables
    source = str(path)
    want = reader_lines(path)
    messages = events.filter(pl.col("source") == source)["message"].drop_nulls()
    kept = sum(1 for m in messages for line in m.split("\n") if line.strip())
    # no case file has a line ingest names as skipped instead: every line must be in events
    assert kept == want, (source, kept, want, sources.filter(pl.col("source") == source)["errors"].to_list())


def test_systemctl_status_keeps_its_indented_lines(tables):
    """batch3/08: the `Loaded:`/`Active:`/`CGroup:` lines under a unit's status header are joined to
    it (they are no journal lines), not dropped."""
    events, _ = tables
    source = str(CASES / "batch3" / "08_journald_systemctl_status_vllm_units_stopping_consumed.log")
    text = "\n".join(events.filter(pl.col("source") == source)["message"].drop_nulls())
    assert "Active: active (running) since Sun 2026-02-22 06:35:31 AEST; 25min ago" in text
    assert "Main PID: 3285 (vllm)" in text
    assert "3361 VLLM::EngineCore" in text
    assert "Active: inactive (dead)" in text
