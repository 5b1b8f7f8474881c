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
            "envelope_time": [None] * n,
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


def test_an_unstamped_line_after_a_stamp_every_line_logger_is_its_own_record():
    # batch6/08 (sglang PR 3709): the tail of an interleaved NCCL line between torch's c10 record and
    # NCCL's own lines belongs to neither; a c10 error's "Exception raised from" and frames still join
    from logcorr.ingest import records_from_text

    text = (
        "[rank4]:[E223 11:14:34.991762039 ProcessGroupNCCL.cpp:616] [Rank 4] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=91885, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
        "ran for 600037 milliseconds before timing out.\n"
        "ected all trees\n"
        "sglang-head-r1:105:81719 [4] NCCL INFO threadThresholds 8/8/64 | 128/8/64 | 512 | 512\n"
        "[rank4]:[E223 11:14:34.991860392 ProcessGroupNCCL.cpp:1785] [PG ID 2 PG GUID 3 Rank 4] Timeout at "
        "NCCL work: 91885\n"
        "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:632 "
        "(most recent call first):\n"
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f in libc10.so)\n"
    )
    df = records_from_text(text, "paste.log")
    assert df["n_lines"].to_list() == [1, 1, 1, 3]
    assert df["message"][1] == "ected all trees"
    assert df["kind"][0] == "watchdog" and df["tp_rank"][0] == 4


def test_a_traceback_after_prose_opens_its_own_record_unless_python_led_into_it():
    from logcorr.ingest import records_from_text

    frame = '  File "/srv/app.py", line 3, in main\n    run()\n'
    text = (
        "Loading the model...\n"  # a program's print: no part of the traceback after it
        f"Traceback (most recent call last):\n{frame}ValueError: bad shape\n"
        # a second traceback after the first one's exception line: another record
        f"Traceback (most recent call last):\n{frame}KeyError: 'x'\n"
        # Python's own lead-ins keep theirs
        f"Exception in thread Thread-1 (worker):\nTraceback (most recent call last):\n{frame}OSError: gone\n"
        f"\nDuring handling of the above exception, another exception occurred:\n\n"
        f"Traceback (most recent call last):\n{frame}RuntimeError: again\n"
        # a logger's header opens the record: its traceback stays in it
        f"[2025-10-29 21:34:46 TP1] Scheduler hit an exception: Traceback (most recent call last):\n{frame}"
        "AssertionError\n"
        "2025-04-26T20:46:29.907Z ERROR engine.start: nixlBackendError('NIXL_ERR_BACKEND')\n"
        f"Traceback (most recent call last):\n{frame}nixlBackendError: NIXL_ERR_BACKEND\n"
    )
    df = records_from_text(text, "paste.log")
    assert df.select("source_pos", "n_lines").rows() == [
        ("line 1", 1),
        ("line 2", 4),
        ("line 6", 4),
        ("line 10", 12),
        ("line 22", 4),
        ("line 26", 5),
    ]
    # a print right after a note (a markdown fence) opens a record, but is no header either
    fenced = records_from_text(
        f"```\nStarting X...\nTraceback (most recent call last):\n{frame}E: 1\n", "p.log"
    )
    assert fenced.select("source_pos", "n_lines").rows() == [("line 1", 1), ("line 2", 1), ("line 3", 4)]


def test_a_line_without_a_process_prefix_continues_only_the_record_right_above_it():
    from logcorr.ingest import records_from_text

    text = (
        "Traceback (most recent call last):\n"  # the driver's (no prefix)
        "(RayWorker pid=77) INFO 03-20 02:45:15 worker.py:12] loading\n"
        '  File "/srv/driver.py", line 3, in main\n'  # no prefix, after the worker's line: not the driver's
        "(RayWorker pid=77)   continued by the worker\n"  # the worker prefixes each of its lines
        "(RayWorker pid=78) INFO 03-20 02:45:16 worker.py:12] other worker\n"
        "(RayWorker pid=77)   and again\n"
        "plain one\n"
        "\n"
        "  plain two, indented after a blank line\n"
    )
    df = records_from_text(text, "ray.log")
    assert df.select("source_pos", "n_lines", "pid").rows() == [
        ("line 1", 1, None),
        ("line 2", 3, 77),  # its prefixed lines 4 and 6 joined across pid 78's line 5
        ("line 3", 1, None),
        ("line 5", 1, 78),
        ("line 7", 3, None),  # the blank and the indented line continue the line right above
    ]


def test_a_traceback_after_a_programs_prose_opens_its_own_record_whatever_the_other_streams_before_it():
    """A ``Traceback`` line that would continue a record opened by prose (pid 202's print) opens a record
    of its own; the record open at it is found by its row in the chunk, not by its place in its stream
    (two lines of pid 201 come first: read by the stream's place, pid 201's SGLang line was taken for the
    open record, and the traceback was glued to the prose)."""
    rows = [
        (201, "[2025-10-29 21:34:45 TP0] Prefill batch, #new-seq: 1"),
        (201, "[2025-10-29 21:34:45 TP0] Prefill batch, #new-seq: 2"),
        (202, "loading the tokenizer from a local folder"),
        (202, "Traceback (most recent call last):"),
        (202, '  File "/app/serve.py", line 12, in <module>'),
        (202, "ValueError: no tokenizer"),
    ]
    out = run([records(rows)])
    mine = out.filter(pl.col("pid") == 202)
    assert mine["message"].to_list() == [
        "loading the tokenizer from a local folder",
        'Traceback (most recent call last):\n  File "/app/serve.py", line 12, in <module>\nValueError: no tokenizer',
    ]
    assert mine["n_lines"].to_list() == [1, 3]
