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
    assert sql(out, "SELECT count(*) FROM events WHERE message LIKE '%🚧%'") == [(8,)]
    cut = sql(out, "SELECT level, ts, log_ts, n_lines FROM events WHERE message LIKE '025-07-31 21:42:46 %'")
    assert cut == [("INFO", None, None, 1)]  # its own record (not glued to the fence), no time invented
    done = sql(out, "SELECT log_ts FROM events WHERE message LIKE '2025-07-31 21:42:47 %'")
    assert done == [(datetime(2025, 7, 31, 21, 42, 47),)]


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
    assert sql(
        out, "SELECT count(*) FROM events WHERE message LIKE '%stderr F%' AND message NOT LIKE '# %'"
    ) == [(0,)]


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
    assert sql(
        out, "SELECT count(*) FROM events WHERE message LIKE '%[/bin/sh@%' AND message NOT LIKE '# %'"
    ) == [(0,)]
    assert sql(out, "SELECT count(*) FROM events WHERE kind = 'traceback'") == [(1,)]


def test_06_prefill_record_and_router_line_keep_their_own_clocks(workdir):
    out = out_of(workdir, "06")
    rows = sql(
        out,
        "SELECT log_ts, level, dp_rank, tp_rank, ep_rank FROM events WHERE log_ts IS NOT NULL ORDER BY event_id",
    )
    assert rows == [
        (datetime(2025, 11, 11, 21, 44, 24), None, 2, 2, 2),
        (datetime(2025, 11, 12, 5, 43, 40), "INFO", None, None, None),
    ]


def test_07_wrapped_records_join_and_keep_their_dp_tag(workdir):
    out = out_of(workdir, "07")
    rows = sql(
        out,
        "SELECT source_pos, dp_rank, tp_rank, n_lines >= 7, regexp_extract(message, 'bootstrap_room=(\\d+)', 1) "
        "FROM events WHERE message LIKE '[2026-06-30 05:18:57 DP1] Prefill bootstrap failed%' ORDER BY event_id",
    )
    assert rows == [
        ("line 5", 1, None, True, "818533314937763119"),
        ("line 13", 1, None, True, "5560925207985320907"),
    ]


def test_08_torch_rank_and_dp_tp_tags(workdir):
    out = out_of(workdir, "08")
    wd = sql(out, "SELECT tp_rank, dp_rank, level, log_ts FROM events WHERE message LIKE '[rank3]:[E1117 %'")
    assert wd == [(3, None, "ERROR", datetime(2025, 11, 17, 21, 22, 11, 441603))]
    health = sql(
        out,
        "SELECT dp_rank, tp_rank FROM events WHERE message LIKE '%\"GET /health HTTP/1.1\" 200 2' ORDER BY event_id",
    )
    assert health == [(6, 6), (7, 7), (1, 1)]


def test_09_a_record_header_glued_mid_line_is_found(workdir):
    out = out_of(workdir, "09")
    rows = sql(
        out,
        "SELECT left(message, 18), dp_rank, tp_rank, log_ts, message LIKE '%forward_thread_func%' FROM events "
        "WHERE source_pos = 'line 26' ORDER BY event_id",
    )
    assert rows == [
        ("Extension modules:", None, None, None, False),
        ("[2025-05-07 09:29:", 11, 11, datetime(2025, 5, 7, 9, 29, 36), True),
    ]
    title = sql(
        out, "SELECT count(*) FROM events WHERE message LIKE '%] TpModelWorkerClient hit an exception:%'"
    )
    assert title == [(1,)]


def test_10_mooncake_glog_metrics_take_the_batch_lines_year(workdir):
    out = out_of(workdir, "10")
    ranks = sql(out, "SELECT dp_rank, tp_rank FROM events WHERE kind = 'batch' ORDER BY event_id")
    assert ranks == [(15, 15), (11, 11), (13, 13), (9, 9)]
    glog = sql(
        out, "SELECT level, log_ts, tp_rank FROM events WHERE message LIKE 'I0518 %' ORDER BY event_id"
    )
    assert len(glog) == 4 and glog[0] == ("INFO", datetime(2025, 5, 18, 8, 57, 30, 157097), None)


def test_11_custom_format_level_pid_and_bracketed_ranks(workdir):
    out = out_of(workdir, "11")
    rows = sql(
        out,
        "SELECT level, pid, dp_rank, tp_rank, ep_rank, log_ts, count(*) FROM events "
        "WHERE message LIKE '2025-08-28 21:19:34 ERROR %' GROUP BY ALL",
    )
    # the 18 lines, each stamped with the same header, join into one record per piece: the C++ frames
    # #25-#32 (and the blank line after them), then ". This may indicate …" through the traceback
    assert rows == [("ERROR", 125765, 10, 10, 10, datetime(2025, 8, 28, 21, 19, 34), 2)]
    pieces = sql(out, "SELECT source_pos, n_lines, kind FROM events WHERE pid = 125765 ORDER BY event_id")
    assert pieces == [("line 4", 9, "other"), ("line 13", 10, "traceback")]
    frames = sql(
        out, "SELECT function, line, n_frames, exception, pid, dp_rank, tp_rank, ep_rank FROM tracebacks"
    )
    assert frames == [("__init__", 67, 3, None, 125765, 10, 10, 10)]


def test_12_nccl_host_pid_no_rank_no_time_and_the_wrapped_tail(workdir):
    out = out_of(workdir, "12")
    rows = sql(
        out,
        "SELECT DISTINCT host, pid, tp_rank, ts, log_ts, level FROM events WHERE message LIKE '%NCCL INFO%'",
    )
    assert rows == [
        ("s-20260228211257-kg9mw-mr-jwgtl-prefill-h7wpr-prefill-0", 206899, None, None, None, "INFO")
    ]
    assert sql(out, "SELECT count(*) FROM events WHERE message LIKE '%NCCL INFO%'") == [(9,)]
    tail = sql(
        out,
        "SELECT n_lines FROM events WHERE message LIKE '%commId 0x9d61c66c9945' || chr(10) || 'bb3e - Init COMPLETE'",
    )
    assert tail == [(2,)]
    assert sql(out, "SELECT count(*) FROM events WHERE message LIKE 'bb3e%'") == [(0,)]


def test_13_stripped_batch_receive_and_access_lines_are_records(workdir):
    out = out_of(workdir, "13")
    kinds = dict(sql(out, "SELECT kind, count(*) FROM events GROUP BY kind"))
    assert kinds["batch"] == 8
    assert sql(out, "SELECT count(*) FROM events WHERE message LIKE 'Receive: obj=%'") == [(7,)]
    assert sql(out, "SELECT count(*) FROM events WHERE regexp_matches(message, '^\\S+:\\d+ - \"')") == [(5,)]
    assert sql(out, "SELECT count(*) FROM events WHERE ts IS NOT NULL OR log_ts IS NOT NULL") == [(0,)]


def test_15_the_orphan_typeerror_stays_with_its_fragment(workdir):
    out = out_of(workdir, "15")
    rows = sql(
        out,
        "SELECT dp_rank, tp_rank, ep_rank, message LIKE '%TypeError: PagedTokenToKVPoolAllocator%' FROM events "
        "WHERE message LIKE '%TypeError: Paged%' OR tp_rank IS NOT NULL ORDER BY event_id",
    )
    assert rows == [(None, None, None, True), (2, 2, 2, False)]
