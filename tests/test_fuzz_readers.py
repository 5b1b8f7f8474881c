"""A generated corpus over every reader (issue 16): whatever the bytes, ``ingest`` never raises a
traceback, and every line of a text input is kept (in a record's lines) or named as skipped."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logcorr.ingest import NothingReadError, ingest

# Lines of every shape a reader knows, to be cut, mixed and damaged.
SHAPES = [
    b"[2025-10-29 21:34:47 TP0] Decode batch, #running-req: 22, #token: 5, #prealloc-req: 0, #transfer-req: 0",
    b"[2025-10-29 21:34:43 TP1] Unexpected transfer worker error for room 4384674655194745451",
    b"Traceback (most recent call last):",
    b'  File "/x/nixl/conn.py", line 702, in transfer_worker',
    b"    assert room in self.transfer_infos",
    b"AssertionError",
    b"Process 309: sglang::scheduler_TP6",
    b'Thread 309 (active): "MainThread"',
    b"    all_reduce (torch/distributed/distributed_c10d.py:1316)",
    b'{"log":"[2025-10-29 21:34:47 TP0] x\\n","stream":"stdout","time":"2025-10-29T21:34:47.1Z"}',
    b"2025-10-29T21:34:47.123456789Z stdout F [2025-10-29 21:34:47 TP0] y",
    b"2025-10-29T21:34:47.123456789Z stdout P half",
    b"1779264164496\t2026-05-20T08:02:44.496Z\t[2026-05-20 08:02:44 TP0] Prefill batch, #new-seq: 1",
    b"sglang-1  | [2025-10-29 21:34:47 TP0] composed",
    b'{"__CURSOR":"s=1","__REALTIME_TIMESTAMP":"1761773687000000","MESSAGE":"m","_PID":"7"}',
    b"Oct 29 21:34:47 gpu-1 python3[7]: [2025-10-29 21:34:47 TP0] short",
    b"E0430 16:02:26.014493   391 tcp_transport.cpp:542] glog",
    b"[rank1]:[E1112 09:49:50.022718554 ProcessGroupNCCL.cpp:607] torch",
    b"\xff\xfe\x00 not utf-8 \x1b[31m colour",
    b"",
    b"`**markdown residue**`",
]


def corpus() -> st.SearchStrategy[bytes]:
    line = st.one_of(st.sampled_from(SHAPES), st.binary(max_size=60), st.text(max_size=60).map(str.encode))
    sep = st.sampled_from([b"\n", b"\r\n", b"\r"])
    return st.lists(st.tuples(line, sep), max_size=25).map(lambda parts: b"".join(a + b for a, b in parts))


@pytest.mark.heavy  # a fault test: a generated loop of minutes of CPU (CI runs -m heavy)
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=corpus(), packed=st.sampled_from(["plain", "gz", "cut-gz"]))
def test_any_bytes_any_reader_no_traceback_every_line_kept(tmp_path_factory, data: bytes, packed: str):
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / "input.log"
    if packed == "plain":
        path.write_bytes(data)
    else:
        path = folder / "input.log.gz"
        blob = gzip.compress(data)
        path.write_bytes(blob[: max(10, len(blob) // 2)] if packed == "cut-gz" else blob)
    try:
        result = ingest([path], folder / "out")
    except NothingReadError as e:  # nothing at all could be read: said, not a traceback
        assert str(e).startswith("nothing could be read")
        return
    report = result.reports[0]
    events = pl.read_parquet(folder / "out" / "events" / "**" / "*.parquet")
    assert events.height == report.records
    if packed == "plain" and report.format in ("text", "pyspy", "short"):
        lines = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").removeprefix(b"\xef\xbb\xbf")
        expected = len(lines.split(b"\n")) - (1 if lines.endswith(b"\n") else 0) if lines else 0
        held = int(events["n_lines"].sum())
        assert held <= expected and (held == expected or report.errors or report.notes), (held, expected)
    json.dumps(result.notes)  # the summary's notes are plain text


@pytest.mark.parametrize("name", ["empty.log", "nul.log", "one-byte.log"])
def test_degenerate_files_are_said_not_raised(tmp_path: Path, name: str):
    path = tmp_path / name
    path.write_bytes({"empty.log": b"", "nul.log": b"\0" * 100, "one-byte.log": b"x"}[name])
    try:
        result = ingest([path], tmp_path / "out")
        assert result.reports[0].records >= 0
    except NothingReadError as e:
        assert name in str(e) or "empty" in str(e)
