"""Multi-line re-joining across journal entries and chunk boundaries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl

from logcorr.inputs.rejoin import Rejoiner
from logcorr.parsers.journald import RECORD_COLUMNS

T0 = datetime(2025, 10, 29, 21, 34, 46, tzinfo=UTC)
TRACEBACK = [
    "[2025-10-29 21:34:46 TP1] Unexpected transfer worker error for room 123",
    "Traceback (most recent call last):",
    '  File "/sgl/python/sglang/srt/disaggregation/nixl/conn.py", line 700, in transfer_worker',
    "    assert room in self.transfer_infos",
    "AssertionError",
]


def records(rows: list[tuple[int, str]], start: int = 0) -> pl.DataFrame:
    """(pid, message) rows, one µs apart, as a journal reader yields them."""
    n = len(rows)
    return pl.DataFrame(
        {
            "ts": [T0 + timedelta(microseconds=start + i) for i in range(n)],
            "host": ["gpu-node-1"] * n,
            "boot_id": ["b"] * n,
            "unit": ["sglang-prefill.service"] * n,
            "pid": [pid for pid, _ in rows],
            "message": [m for _, m in rows],
            "source": ["j"] * n,
            "source_pos": [f"c{start + i}" for i in range(n)],
            "stream": [f"b/{pid}" for pid, _ in rows],
            "cmdline": [None] * n,
            "comm": [None] * n,
            "entry_error": [None] * n,
            "ts_zoneless": [None] * n,
            "entry_lines": [None] * n,
        },
        schema=RECORD_COLUMNS,
    )


def interleaved() -> pl.DataFrame:
    rows = []
    for i, line in enumerate(TRACEBACK):
        rows.append((101, line))
        rows.append((102, f"[2025-10-29 21:34:46 TP2] Prefill batch, #new-seq: {i}"))
    rows.append((101, "[2025-10-29 21:34:47 TP1] Prefill batch, #new-seq: 9"))
    return records(rows)


def run(chunks: list[pl.DataFrame]) -> pl.DataFrame:
    r = Rejoiner()
    return pl.concat([*(r.feed(c) for c in chunks), r.finish()])


def test_traceback_split_by_journald_is_one_record():
    out = run([interleaved()])
    assert out.height == 7  # 1 traceback + 5 TP2 batches + 1 TP1 batch
    tb = out.filter(pl.col("pid") == 101)["message"][0]
    assert tb == "\n".join(TRACEBACK)
    assert out.filter(pl.col("pid") == 101)["n_lines"].to_list() == [5, 1]
    assert out["source_pos"][0] == "c0"


def test_chunk_boundaries_do_not_change_records():
    whole = run([interleaved()])
    df = interleaved()
    for cut in range(1, df.height):
        split = run([df.head(cut), df.tail(df.height - cut)])
        assert split["message"].to_list() == whole["message"].to_list(), cut


def test_output_keeps_input_order():
    out = run([interleaved().head(4), interleaved().tail(7)])
    assert out["ts"].is_sorted()


def test_lines_of_a_stream_without_headers_stay_separate():
    out = run([records([(7, "Accepted publickey for root"), (7, "pam_unix(sshd:session): session opened")])])
    assert out["message"].to_list() == [
        "Accepted publickey for root",
        "pam_unix(sshd:session): session opened",
    ]


def test_quiet_stream_closes_its_record():
    first = records([(101, TRACEBACK[0]), (101, TRACEBACK[1])])
    later = records([(102, "[2025-10-29 21:35:00 TP2] Prefill batch, #new-seq: 1")], start=10_000_000)
    r = Rejoiner()
    emitted = r.feed(first)
    assert emitted.height == 0  # the traceback may go on
    emitted = r.feed(later)
    assert emitted["message"].to_list() == ["\n".join(TRACEBACK[:2])]
