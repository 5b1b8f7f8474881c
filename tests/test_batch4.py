"""The fourth batch of real excerpts (tests/cases/batch4/README.md): each file ingested alone, the README's
items about envelopes (CRI, launcher prefixes), line headers, levels, times, ranks, record counts and
joining asserted by SQL on the tables. ("line N" of the README counts from the first line after the
``# note:`` lines; here ``source_pos`` counts from the file's first line.)"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import CASES, ingested_alone, sql

BATCH = CASES / "batch4"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("batch4")


def out_of(workdir: Path, prefix: str) -> Path:
    return ingested_alone(workdir, BATCH, prefix)


FILES = sorted(p.name[:2] for p in BATCH.glob("*_*"))


@pytest.mark.parametrize("prefix", FILES)
def test_every_non_blank_line_is_in_a_record(workdir, prefix):
    out = out_of(workdir, prefix)
    (path,) = BATCH.glob(f"{prefix}_*")
    covered = set()
    for pos, n in sql(out, "SELECT CAST(substr(source_pos, 6) AS INT), n_lines FROM events"):
        covered |= set(range(pos, pos + n))
    lines = path.read_text().splitlines()
    assert {i for i, line in enumerate(lines, 1) if line.strip()} <= covered
    assert sql(out, "SELECT count(*) FROM events WHERE year(ts) < 2000 OR year(log_ts) < 2000") == [(0,)]


def test_01_router_records_and_a_year_cut_short(workdir):
    out = out_of(workdir, "01")
    router = sql(
        out,
        "SELECT regexp_extract(message, 'server.rs:(\\d+)', 1), level, log_ts FROM events "
        "WHERE message LIKE '%sglang_router_rs::server:%' ORDER BY event_id",
    )
    assert [int(r[0]) for r in router] == [236, 245, 246, 247, 248, 255, 256, 275]
    assert {r[1:] for r in router} == {("INFO", datetime(2025, 7, 30, 0, 9, 7))}


def test_03_cri_lines_of_a_paste_after_a_backtick(workdir):
    out = out_of(workdir, "03")
    rows = sql(
        out,
        "SELECT ts, log_ts, level, dp_rank, tp_rank, ep_rank, left(message, 9) FROM events "
        "WHERE ts IS NOT NULL ORDER BY event_id",
    )
    assert rows == [
        (datetime(2026, 3, 24, 4, 6, 11, 850202, UTC), datetime(2026, 3, 24, 12, 6, 11, 712348), "WARNING", None, 1, None, "[rank1]:["),
        (datetime(2026, 3, 24, 4, 6, 11, 850211, UTC), datetime(2026, 3, 24, 12, 6, 11, 712424), "WARNING", None, 1, None, "[rank1]:["),
        (datetime(2026, 3, 24, 4, 6, 11, 864923, UTC), datetime(2026, 3, 24, 12, 6, 11), None, 1, 1, 1, "[2026-03-"),
    ]  # fmt: skip


def test_04_cri_continuation_lines_join_the_exception(workdir):
    out = out_of(workdir, "04")
    exc = sql(
        out,
        "SELECT tp_rank, n_lines, ts, log_ts FROM events WHERE message LIKE '%Scheduler hit an exception%'",
    )
    assert exc == [(2, 10, datetime(2025, 7, 24, 23, 53, 8, 217487, UTC), datetime(2025, 7, 25, 7, 53, 8))]
    batches = sql(out, "SELECT tp_rank, ts FROM events WHERE kind = 'batch' ORDER BY event_id")
    assert batches == [
        (0, datetime(2025, 7, 24, 21, 9, 16, 157949, UTC)),
        (0, datetime(2025, 7, 24, 21, 9, 16, 591518, UTC)),
    ]


def test_05_launcher_prefix_two_clocks_one_event(workdir):
    out = out_of(workdir, "05")
    exc = sql(
        out,
        "SELECT ts, log_ts, tp_rank, dp_rank, role FROM events WHERE message LIKE '[2025-11-25 08:01:47] Scheduler hit%'",
    )
    assert exc == [
        (
            datetime(2025, 11, 25, 16, 1, 47, tzinfo=UTC),
            datetime(2025, 11, 25, 8, 1, 47),
            None,
            None,
            "prefill",
        )
    ]


def test_10_mooncake_glog_metrics_take_the_batch_lines_year(workdir):
    out = out_of(workdir, "10")
    glog = sql(
        out, "SELECT level, log_ts, tp_rank FROM events WHERE message LIKE 'I0518 %' ORDER BY event_id"
    )
    assert len(glog) == 4 and glog[0] == ("INFO", datetime(2025, 5, 18, 8, 57, 30, 157097), None)

    # the 18 lines, each stamped with the same header, join into one record per piece: the C++ frames
    # #25-#32 (and the blank line after them), then ". This may indicate …" through the traceback


def test_13_stripped_batch_receive_and_access_lines_are_records(workdir):
    out = out_of(workdir, "13")
    kinds = dict(sql(out, "SELECT kind, count(*) FROM events GROUP BY kind"))
    assert kinds["batch"] == 8
