"""Hostile input (issue 7, item 4): every case goes through the real CLI in a fresh process.

Each case must: exit without a Python traceback, print a message naming the input and what was kept,
lose no readable line (lines in the input vs the lines the records of ``OUT/events`` hold), and exit
1 when nothing at all could be read (no OUT), 3 when OUT was written but an input could not be read
at all (missing, permission denied, refused by journalctl), 0 otherwise (an empty file loses
nothing). The hypothesis tests at the end fuzz the pure parsers (``split_prefix``,
``parse_export``, ``parse_json_lines``): they never raise and keep one row per input record.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import lzma
import os
import random
import re
import resource
import shlex
import shutil
import struct
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logcorr.parsers.journald import parse_export, parse_json_lines
from logcorr.parsers.prefix import split_prefix

CASES = Path(__file__).parent / "cases"
TRUNCATED_JOURNAL = CASES / "journal" / "velociraptor_system.journal.xz"
ANSI = re.compile(r"\x1b\[[0-9;:?]*[ -/]*[@-~]")
CLI_TIMEOUT = 300

# A plain SGLang log: batches of two ranks, access lines, a traceback (continuation lines), a dump.
LOG_LINES = [
    "[2025-11-05 12:00:00 TP0] Prefill batch, #new-seq: 2, #new-token: 4096, #cached-token: 0, token usage: 0.01, "
    "#running-req: 0, #queue-req: 0, #prealloc-req: 0, #inflight-req: 1, cuda graph: False, "
    "input throughput (token/s): 2049.00",
    "[2025-11-05 12:00:00 TP1] Prefill batch, #new-seq: 2, #new-token: 4096, #cached-token: 0, token usage: 0.01, "
    "#running-req: 0, #queue-req: 0, #prealloc-req: 0, #inflight-req: 1, cuda graph: False, "
    "input throughput (token/s): 2049.00",
    '[2025-11-05 12:00:01] INFO:     127.0.0.1:40000 - "GET /health HTTP/1.1" 200 OK',
    '[2025-11-05 12:00:01] INFO:     127.0.0.1:40002 - "POST /generate HTTP/1.1" 200 OK',
    "[2025-11-05 12:00:02 TP0] Unexpected transfer worker error for room 4793981895866140836",
    "Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 561, in add_transfer_request',
    "    assert room in self.transfer_infos",
    "AssertionError",
    "[2025-11-05 12:00:03 TP0] Decode batch, #running-req: 3, #token: 900, token usage: 0.01, cuda graph: True, "
    "gen throughput (token/s): 120.00, #queue-req: 0",
    "[2025-11-05 12:00:04] Pyspy dump for PID 187 (py-spy dump --native --pid 187):",
    "Process 187: sglang::scheduler_TP6",
    "Python v3.12.3 (/usr/bin/python3.12)",
    "",
    'Thread 187 (idle): "MainThread"',
    "    all_reduce (torch/distributed/distributed_c10d.py:2806)",
    "    run_scheduler_process (sglang/srt/managers/scheduler.py:2618)",
    "[2025-11-05 12:00:05 TP1] Decode batch, #running-req: 3, #token: 900, token usage: 0.01, cuda graph: True, "
    "gen throughput (token/s): 121.00, #queue-req: 0",
]


# -- running the CLI and reading what it kept -------------------------------------------------------


def ingest(*paths: Path, out: Path, preexec=None) -> subprocess.CompletedProcess:
    """``logcorr ingest PATH… -o OUT`` in a fresh python, as a user runs it."""
    cmd = [sys.executable, "-m", "logcorr.cli", "ingest", *map(str, paths), "-o", str(out)]
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=CLI_TIMEOUT,
        preexec_fn=preexec,
        check=False,
    )


def check_clean(proc: subprocess.CompletedProcess, *named: Path) -> str:
    """No traceback; the output names every input. Returns stdout + stderr."""
    text = proc.stdout + proc.stderr
    assert "Traceback (most recent call last)" not in proc.stderr, proc.stderr
    assert "Traceback (most recent call last)" not in proc.stdout.split("records per role")[0], proc.stdout
    for p in named:
        said = [ln for ln in text.splitlines() if p.name in ln]
        assert said, f"output does not name {p}:\n{text}"
        what = re.compile(r"(?i)[\d,]+ records|skipped|nothing could be read|not readable|denied|empty|error")
        assert any(what.search(ln) for ln in said), f"output names {p} but not what was kept:\n{text}"
    return text


def table(out: Path, name: str) -> pl.DataFrame:
    """One table of OUT, whatever its layout (``events/part-0.parquet`` or hive partitions below)."""
    files = sorted((out / name).rglob("*.parquet"))
    assert files, f"{out / name}: no Parquet file"
    return pl.concat([pl.read_parquet(f, hive_partitioning=False) for f in files], how="diagonal_relaxed")


def events(out: Path) -> pl.DataFrame:
    return table(out, "events")


def kept_lines(out: Path) -> list[str]:
    """Every line held by the records of OUT/events (messages split at newlines)."""
    return [ln for msg in events(out)["message"].fill_null("").to_list() for ln in msg.split("\n")]


def normalise(line: str) -> str:
    """A line as the ingest keeps it: ANSI escapes, NUL bytes and a trailing CR removed."""
    return ANSI.sub("", line).replace("\x00", "").removesuffix("\r")


def assert_all_kept(out: Path, lines: list[str], total: int | None = None) -> None:
    """Every non-blank line of ``lines`` is held by some record, as often as it occurs, and the
    records hold no more lines than the input has (``total``, default ``len(lines)``)."""
    want = Counter(normalise(ln) for ln in lines if normalise(ln).strip())
    got = Counter(normalise(ln) for ln in kept_lines(out) if normalise(ln).strip())
    missing = want - got
    assert not missing, f"lines lost: {list(missing.items())[:5]}"
    held = int(events(out)["n_lines"].sum())
    total = len(lines) if total is None else total
    assert sum(want.values()) <= held <= total, (held, total)


def text_lines(data: bytes) -> list[str]:
    """The lines of ``data`` as the ingest reads them: a carriage return no newline follows ends a line."""
    text = re.sub("\r(?!\n)", "\n", data.decode("utf-8", errors="replace"))
    return text.removesuffix("\n").split("\n") if text else []


def write_log(path: Path, lines: list[str], newline: str = "\n") -> Path:
    path.write_bytes((newline.join(lines) + newline).encode())
    return path


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """A readable plain SGLang log to give beside a hostile input."""
    return write_log(tmp_path / "good.log", LOG_LINES)


# -- export and json helpers ------------------------------------------------------------------------


def export_entry(
    i: int, ts: int, message: str | bytes, pid: int = 4242, unit: str = "sglang-decode.service"
) -> bytes:
    """One entry of ``journalctl -o export``; bytes or text with control characters go binary-safe."""
    head = (
        f"__CURSOR=s=abc;i={i:x}\n__REALTIME_TIMESTAMP={ts}\n__MONOTONIC_TIMESTAMP={ts - 10**15}\n"
        f"_BOOT_ID=0123456789abcdef0123456789abcdef\n_HOSTNAME=gpu-node-1\n_TRANSPORT=stdout\nPRIORITY=6\n"
        f"SYSLOG_IDENTIFIER=python3\n_PID={pid}\n_COMM=python3\n_SYSTEMD_UNIT={unit}\n"
    ).encode()
    raw = message.encode() if isinstance(message, str) else message
    if isinstance(message, str) and re.search(r"[\x00-\x08\x0a-\x1f\x7f]", message) is None:
        return head + b"MESSAGE=" + raw + b"\n\n"
    return head + b"MESSAGE\n" + struct.pack("<Q", len(raw)) + raw + b"\n\n"


def json_entry(i: int, ts: int, message, pid: int = 4242, unit: str = "sglang-decode.service") -> str:
    """One line of ``journalctl -o json``; ``message`` may be a str, a list of byte ints or None."""
    return json.dumps(
        {
            "__CURSOR": f"s=abc;i={i:x}",
            "__REALTIME_TIMESTAMP": str(ts),
            "__MONOTONIC_TIMESTAMP": str(ts - 10**15),
            "_BOOT_ID": "0123456789abcdef0123456789abcdef",
            "_HOSTNAME": "gpu-node-1",
            "_TRANSPORT": "stdout",
            "PRIORITY": "6",
            "SYSLOG_IDENTIFIER": "python3",
            "_PID": str(pid),
            "_COMM": "python3",
            "_SYSTEMD_UNIT": unit,
            "MESSAGE": message,
        },
        separators=(",", ":"),
    )


T0 = 1_762_344_000_000_000  # 2025-11-05 12:00:00 UTC in µs
YEAR_US = 365 * 86_400_000_000


# -- the cases --------------------------------------------------------------------------------------


def test_random_bytes(tmp_path: Path):
    data = random.Random(20251105).randbytes(256 << 10)
    path = tmp_path / "random.bin"
    path.write_bytes(data)
    proc = ingest(path, out=tmp_path / "out")
    check_clean(proc, path)
    if proc.returncode == 0:
        held = int(events(tmp_path / "out")["n_lines"].sum())
        lines = text_lines(data)
        assert sum(1 for ln in lines if normalise(ln).strip()) <= held <= len(lines)
    else:  # judged unreadable: then the message must say so, and nothing is written
        assert "nothing could be read" in proc.stderr
        assert not (tmp_path / "out").exists()


def test_random_bytes_beside_a_readable_log(tmp_path: Path, log: Path):
    path = tmp_path / "random.bin"
    path.write_bytes(random.Random(7).randbytes(64 << 10))
    proc = ingest(path, log, out=tmp_path / "out")
    check_clean(proc, path, log)
    assert proc.returncode == 0
    assert_all_kept(tmp_path / "out", LOG_LINES + text_lines(path.read_bytes()))


@pytest.mark.heavy
def test_ten_megabyte_single_line(tmp_path: Path):
    ids = ", ".join(str(i % 128000) for i in range(1_600_000))
    long = f"[2025-11-05 12:00:00] Receive: obj=GenerateReqInput(rid='ab12', input_ids=[{ids}])"
    assert len(long) > 10_000_000
    path = write_log(tmp_path / "long.log", [LOG_LINES[0], long, LOG_LINES[2]])
    proc = ingest(path, out=tmp_path / "out")
    check_clean(proc, path)
    assert proc.returncode == 0
    ev = events(tmp_path / "out")
    assert ev.height == 3
    assert ev["message"].str.len_chars().max() == len(long)
    assert_all_kept(tmp_path / "out", [LOG_LINES[0], long, LOG_LINES[2]])


@pytest.mark.heavy
def test_ten_megabyte_single_line_without_newline(tmp_path: Path):
    long = "[2025-11-05 12:00:00 TP0] " + "x" * (10 << 20)
    path = tmp_path / "long-no-eol.log"
    path.write_text(long)
    proc = ingest(path, out=tmp_path / "out")
    check_clean(proc, path)
    assert proc.returncode == 0
    assert events(tmp_path / "out")["message"].to_list() == [long]


def test_crlf_line_ends_read_like_lf(tmp_path: Path):
    lf = write_log(tmp_path / "lf.log", LOG_LINES)
    crlf = write_log(tmp_path / "crlf.log", LOG_LINES, newline="\r\n")
    p1, p2 = ingest(lf, out=tmp_path / "out-lf"), ingest(crlf, out=tmp_path / "out-crlf")
    check_clean(p2, crlf)
    assert p1.returncode == p2.returncode == 0
    a, b = events(tmp_path / "out-lf"), events(tmp_path / "out-crlf")
    assert not b["message"].str.contains("\r").any()
    cols = ["message", "kind", "tp_rank", "log_ts", "n_lines"]
    assert a.select(cols).equals(b.select(cols))
    batches = [table(d, "batches").height for d in (tmp_path / "out-lf", tmp_path / "out-crlf")]
    assert batches[0] == batches[1] > 0
    assert_all_kept(tmp_path / "out-crlf", LOG_LINES)


def test_crlf_in_export_capture(tmp_path: Path):
    data = b"".join(export_entry(i, T0 + i, ln + "\r") for i, ln in enumerate(LOG_LINES))
    path = tmp_path / "crlf.export"
    path.write_bytes(data)
    proc = ingest(path, out=tmp_path / "out")
    check_clean(proc, path)
    assert proc.returncode == 0
    assert not events(tmp_path / "out")["message"].str.contains("\r").any()
    assert_all_kept(tmp_path / "out", LOG_LINES)


def test_nul_bytes(tmp_path: Path):
    # A crash can leave a run of NUL bytes in a log file (blocks allocated, never written).
    lines = [
        *LOG_LINES[:3],
        "\x00" * 4096 + LOG_LINES[3],
        "[2025-11-05 12:00:09 TP0] Cache\x00 flushed",
        *LOG_LINES[4:],
    ]
    path = write_log(tmp_path / "nul.log", lines)
    proc = ingest(path, out=tmp_path / "out")
    check_clean(proc, path)
    assert proc.returncode == 0
    assert_all_kept(tmp_path / "out", lines)


def test_nul_bytes_in_export_and_json(tmp_path: Path):
    export = tmp_path / "nul.export"
    export.write_bytes(
        b"".join(export_entry(i, T0 + i, ln.encode() + b"\x00") for i, ln in enumerate(LOG_LINES))
    )
    capture = tmp_path / "nul.json"
    capture.write_text("".join(json_entry(i, T0 + i, ln + "\x00") + "\n" for i, ln in enumerate(LOG_LINES)))
    for path in (export, capture):
        out = tmp_path / f"out-{path.suffix[1:]}"
        proc = ingest(path, out=out)
        check_clean(proc, path)
        assert proc.returncode == 0, proc.stderr
        assert_all_kept(out, LOG_LINES)


def test_ansi_colour_codes_inside_fields(tmp_path: Path):
    coloured = [
        "\x1b[32m[2025-11-05 12:00:00 TP0]\x1b[0m Decode batch, #running-req: 3, #token: 900, token usage: 0.01, "
        "cuda graph: True, gen throughput (token/s): 120.00, #queue-req: 0",
        '[2025-11-05 12:00:01] \x1b[32mINFO\x1b[0m:     127.0.0.1:40000 - "GET /health HTTP/1.1" 200 OK',
        "2025-11-05 12:00:02 \x1b[31mERROR\x1b[0m \x1b[2msglang_router_rs::routers::http::pd_router\x1b[0m: "
        "src/routers/http/pd_router.rs:142: Failed to select PD pair error=No available prefill workers",
    ]
    text_log = write_log(tmp_path / "ansi.log", coloured)
    export = tmp_path / "ansi.export"
    export.write_bytes(b"".join(export_entry(i, T0 + i, ln) for i, ln in enumerate(coloured)))
    capture = tmp_path / "ansi.json"
    capture.write_text(
        "".join(json_entry(i, T0 + i, list(ln.encode())) + "\n" for i, ln in enumerate(coloured))
    )
    for path in (text_log, export, capture):
        out = tmp_path / f"out-{path.suffix[1:]}"
        proc = ingest(path, out=out)
        check_clean(proc, path)
        assert proc.returncode == 0, proc.stderr
        ev = events(out)
        assert not ev["message"].str.contains("\x1b").any(), path
        assert_all_kept(out, coloured)
        first = ev.filter(pl.col("message").str.contains("Decode batch"))
        assert first["tp_rank"].to_list() == [0], f"{path}: coloured header not read"
        assert first["log_ts"].is_not_null().all(), path


def test_json_line_cut_in_half(tmp_path: Path):
    lines = [json_entry(i, T0 + i * 1000, ln) for i, ln in enumerate(LOG_LINES)]
    cut_mid = lines[5][: len(lines[5]) // 2]  # a paste that lost the end of a line
    cut_end = lines[-1][: len(lines[-1]) // 2]  # a capture cut while writing (no final newline)
    path = tmp_path / "cut.json"
    path.write_text("\n".join([*lines[:5], cut_mid, *lines[6:-1], cut_end]))
    proc = ingest(path, out=tmp_path / "out")
    check_clean(proc, path)
    assert proc.returncode == 0
    whole = [ln for i, ln in enumerate(LOG_LINES) if i not in (5, len(LOG_LINES) - 1)]
    assert_all_kept(tmp_path / "out", whole, total=len(LOG_LINES))
    ev = events(tmp_path / "out")
    assert int(ev["n_lines"].sum()) == len(LOG_LINES)  # the two cut lines are kept too
    assert ev["message"].str.contains(re.escape(cut_end[:40])).any()


@pytest.mark.parametrize(
    "cut_after",
    [
        "_SYSTEMD_UN",
        "MESSAGE=[2025-11-05 12:0",
        "\n__CURS",
    ],
)
def test_export_capture_cut_in_half(tmp_path: Path, cut_after: str):
    """An export capture that stops mid-entry (disk full, a paste cut short): the whole entries are
    kept, the cut one as far as it goes."""
    data = b"".join(export_entry(i, T0 + i, ln) for i, ln in enumerate(LOG_LINES))
    last = data.rindex(b"__CURSOR=")
    cut = data.index(cut_after.encode(), last - (1 if cut_after.startswith("\n") else 0)) + len(cut_after)
    path = tmp_path / "cut.export"
    path.write_bytes(data[:cut])
    proc = ingest(path, out=tmp_path / "out")
    check_clean(proc, path)
    assert proc.returncode == 0
    assert_all_kept(tmp_path / "out", LOG_LINES[:-1], total=len(LOG_LINES))


def test_export_capture_cut_inside_the_time_keeps_the_entry_without_a_1970_time(tmp_path: Path):
    # cut after "__REALTIME_TIMESTAMP=17623440": those digits read as µs put the entry in 1970
    data = b"".join(export_entry(i, T0 + i, ln) for i, ln in enumerate(LOG_LINES))
    cut = data.rindex(b"__REALTIME_TIMESTAMP=") + len("__REALTIME_TIMESTAMP=17623440")
    path = tmp_path / "cut.export"
    path.write_bytes(data[:cut])
    proc = ingest(path, out=tmp_path / "out")
    text = check_clean(proc, path)
    assert proc.returncode == 0
    assert "the capture ends inside this entry (cut short: __REALTIME_TIMESTAMP=17623440)" in text
    ev = events(tmp_path / "out")
    assert ev["ts"].min().year == 2025 and ev["ts"].null_count() == 1
    assert int(ev["n_lines"].sum()) == len(LOG_LINES)  # the whole entries' lines and the cut entry


def test_export_capture_with_trailing_garbage_line(tmp_path: Path):
    """A capture pasted with the shell prompt after it: the entries are kept, the stray line too."""
    data = b"".join(export_entry(i, T0 + i, ln) for i, ln in enumerate(LOG_LINES))
    path = tmp_path / "prompt.export"
    path.write_bytes(data + b"root@gpu-node-1:~# \n")
    proc = ingest(path, out=tmp_path / "out")
    check_clean(proc, path)
    assert proc.returncode == 0
    assert_all_kept(tmp_path / "out", LOG_LINES, total=len(LOG_LINES) + 1)


def test_json_message_as_byte_array_with_invalid_utf8(tmp_path: Path):
    bad = b"[2025-11-05 12:00:00 TP2] Finish: output text='\xe4\xbd\xa0\xe4\xbd' \xff\xfe"
    entries = [
        json_entry(0, T0, LOG_LINES[0]),
        json_entry(1, T0 + 1, list(bad)),
        json_entry(2, T0 + 2, [list(b"first \xff"), "second"]),  # a repeated field: bytes and text
        json_entry(3, T0 + 3, None),  # journalctl prints null for a value it would not show
        json_entry(4, T0 + 4, LOG_LINES[2]),
    ]
    path = tmp_path / "bytes.json"
    path.write_text("\n".join(entries) + "\n")
    proc = ingest(path, out=tmp_path / "out")
    check_clean(proc, path)
    assert proc.returncode == 0
    ev = events(tmp_path / "out")
    assert int(ev["n_lines"].sum()) == len(entries)
    msgs = "\n".join(ev["message"].fill_null("").to_list())
    assert bad.decode("utf-8", errors="replace") in msgs
    assert "first \ufffd" in msgs and "second" in msgs
    assert_all_kept(tmp_path / "out", [LOG_LINES[0], LOG_LINES[2]], total=len(entries))


def test_timestamps_going_backwards(tmp_path: Path):
    # The journal's clock goes back (NTP step) between entries, and the printed times do too.
    stamps = [T0 + 10_000_000 - i * 1_000_000 for i in range(len(LOG_LINES))]
    export = tmp_path / "back.export"
    export.write_bytes(
        b"".join(export_entry(i, ts, ln) for i, (ts, ln) in enumerate(zip(stamps, LOG_LINES, strict=True)))
    )
    text = write_log(
        tmp_path / "back.log",
        [ln.replace("12:00:0", "11:59:5") if i % 2 else ln for i, ln in enumerate(LOG_LINES)],
    )
    proc = ingest(export, text, out=tmp_path / "out")
    check_clean(proc, export, text)
    assert proc.returncode == 0
    ev = events(tmp_path / "out")
    assert_all_kept(tmp_path / "out", LOG_LINES + text.read_text().splitlines())
    from_export = ev.filter(pl.col("source") == str(export))
    assert from_export["ts"].min().timestamp() * 1e6 == pytest.approx(min(stamps))
    sources = table(tmp_path / "out", "sources").filter(pl.col("source") == str(export))
    assert sources["first_ts"][0] <= sources["last_ts"][0]


def test_clock_jump_of_a_year(tmp_path: Path):
    # Half the entries a year in the future (a bad RTC before NTP), then back; a traceback spans it.
    stamps = [T0 + i * 1000 + (YEAR_US if 4 <= i < 12 else 0) for i in range(len(LOG_LINES))]
    export = tmp_path / "jump.export"
    export.write_bytes(
        b"".join(export_entry(i, ts, ln) for i, (ts, ln) in enumerate(zip(stamps, LOG_LINES, strict=True)))
    )
    text = write_log(
        tmp_path / "jump.log",
        [ln.replace("2025-11-05", "2026-11-05") if 4 <= i < 12 else ln for i, ln in enumerate(LOG_LINES)],
    )
    proc = ingest(export, text, out=tmp_path / "out")
    check_clean(proc, export, text)
    assert proc.returncode == 0
    assert_all_kept(tmp_path / "out", LOG_LINES + text.read_text().splitlines())
    ev = events(tmp_path / "out").filter(pl.col("source") == str(export))
    span = (ev["ts"].max() - ev["ts"].min()).total_seconds()
    assert span >= 364 * 86400


def test_empty_file_alone_fails_with_a_clear_message(tmp_path: Path):
    path = tmp_path / "empty.log"
    path.write_bytes(b"")
    proc = ingest(path, out=tmp_path / "out")
    text = check_clean(proc, path)
    assert proc.returncode != 0
    assert "empty" in text
    assert not (tmp_path / "out").exists()


def test_empty_file_beside_a_readable_log(tmp_path: Path, log: Path):
    path = tmp_path / "empty.json"
    path.write_bytes(b"")
    proc = ingest(path, log, out=tmp_path / "out")
    text = check_clean(proc, path, log)
    assert proc.returncode == 0
    assert "empty" in text
    assert_all_kept(tmp_path / "out", LOG_LINES)


def test_directory_with_no_journal_files(tmp_path: Path, log: Path):
    empty = tmp_path / "var-log-journal"
    (empty / "0123456789abcdef0123456789abcdef").mkdir(parents=True)
    alone = ingest(empty, out=tmp_path / "out-alone")
    check_clean(alone, empty)
    assert alone.returncode != 0
    assert not (tmp_path / "out-alone").exists()
    both = ingest(empty, log, out=tmp_path / "out")
    text = check_clean(both, empty, log)
    assert both.returncode == 3
    assert f"1 input(s) could not be read at all: {empty}" in text
    assert_all_kept(tmp_path / "out", LOG_LINES)


@pytest.mark.parametrize("first", ["x^2 grew by half", "x\x01 a control character", "BZh91AY&SY"])
def test_a_log_starting_like_compressed_data_is_read_as_text(tmp_path: Path, log: Path, first: str):
    # the CSV reader that splits lines unpacks data starting with zlib/gzip/zstd magic bytes ("x^",
    # "x\x01"): it raised or returned nothing instead of the lines
    path = write_log(tmp_path / "notes.log", [first, *LOG_LINES])
    proc = ingest(path, log, out=tmp_path / "out")
    check_clean(proc, path, log)
    assert proc.returncode == 0
    # the log holds only notes.log's lines: a copy, read once and said
    assert_all_kept(tmp_path / "out", [first, *LOG_LINES])
    assert "a copy, skipped (counted once)" in proc.stdout


def test_rotated_gz_logs_are_unpacked_and_a_cut_one_keeps_its_start(tmp_path: Path):
    import gzip

    whole = gzip.compress(("\n".join(LOG_LINES) + "\n").encode())
    (tmp_path / "engine.log.1.gz").write_bytes(whole)
    (tmp_path / "engine.log.2.gz").write_bytes(whole[: len(whole) * 2 // 3])  # rotated while copied
    proc = ingest(tmp_path / "engine.log.1.gz", out=tmp_path / "out")
    check_clean(proc, tmp_path / "engine.log.1.gz")
    assert proc.returncode == 0 and "unpacked gz: text" in proc.stdout
    assert_all_kept(tmp_path / "out", LOG_LINES)
    cut = ingest(tmp_path / "engine.log.2.gz", out=tmp_path / "cut")
    text = check_clean(cut, tmp_path / "engine.log.2.gz")
    assert cut.returncode == 0 and "then: the data ends early (cut short)" in text
    held = events(tmp_path / "cut")["message"].to_list()
    assert held and LOG_LINES[0] in held[0]  # the lines before the cut are kept
    # two members and zero padding after them (some tools pad): all read, nothing called lost
    (tmp_path / "padded.log.gz").write_bytes(whole + whole + b"\0" * 512)
    padded = ingest(tmp_path / "padded.log.gz", out=tmp_path / "padded")
    text = check_clean(padded, tmp_path / "padded.log.gz")
    assert padded.returncode == 0 and "lost" not in text
    assert_all_kept(tmp_path / "padded", LOG_LINES + LOG_LINES)


def test_a_folder_walk_follows_links_and_passes_over_hidden_folders(tmp_path: Path, log: Path):
    folder = tmp_path / "incident"
    (folder / ".git" / "objects").mkdir(parents=True)
    (folder / ".git" / "objects" / "ab12").write_bytes(b"x\x01" + random.Random(1).randbytes(4096))
    (folder / "logs").mkdir()
    (folder / "logs" / "engine.log").symlink_to(log)  # a link to a file outside: not read (trial F12)
    (folder / "logs" / "inside.log").symlink_to(folder / "data" / "engine.log")  # inside: read
    (folder / "data").mkdir()
    write_log(folder / "data" / "engine.log", LOG_LINES)
    (tmp_path / "elsewhere").mkdir()
    write_log(tmp_path / "elsewhere" / "router.log", LOG_LINES[:2])
    (folder / "linked").symlink_to(tmp_path / "elsewhere")  # a link to a folder: followed
    (folder / "elsewhere-again").symlink_to(tmp_path / "elsewhere")  # the same folder twice: once
    (folder / "logs" / "loop").symlink_to(folder)  # a loop: ends
    proc = ingest(folder, out=tmp_path / "out")
    check_clean(proc, folder)
    assert proc.returncode == 0
    sources = table(tmp_path / "out", "sources")
    read = set(sources.filter(pl.col("format") != "skipped")["source"])
    assert read == {str(folder / "data" / "engine.log"), str(folder / "elsewhere-again" / "router.log")}
    skipped = dict(sources.filter(pl.col("format") == "skipped").select("source", "notes").iter_rows())
    assert skipped == {
        str(
            folder / "logs" / "engine.log"
        ): f"{folder / 'logs' / 'engine.log'}: a link to {log}, outside the folder given: not read (name it on the command line to read it)"
    }
    assert_all_kept(tmp_path / "out", [*LOG_LINES, *LOG_LINES[:2]])


def _drop_dac_capabilities() -> None:
    """In the child before exec: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the bounding set,
    so even root is refused a file of mode 000 (the capabilities are recomputed from it at exec)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def _unreadable(path: Path):
    """A ``preexec_fn`` under which ``path`` cannot be opened, or skip the test saying why."""
    path.chmod(0)
    if os.geteuid() != 0:
        return None
    probe = [sys.executable, "-c", f"open({str(path)!r}, 'rb')"]
    try:
        done = subprocess.run(probe, preexec_fn=_drop_dac_capabilities, capture_output=True, check=False)
    except (OSError, subprocess.SubprocessError) as e:
        pytest.skip(f"running as root and cannot drop CAP_DAC_OVERRIDE to make a file unreadable: {e}")
    if done.returncode == 0:
        pytest.skip("running as root and a mode-000 file stays readable even without CAP_DAC_OVERRIDE")
    return _drop_dac_capabilities


def test_permission_denied_file_alone(tmp_path: Path):
    path = write_log(tmp_path / "secret.log", LOG_LINES)
    preexec = _unreadable(path)
    alone = ingest(path, out=tmp_path / "out", preexec=preexec)
    text = check_clean(alone, path)
    assert alone.returncode != 0
    assert re.search(r"(?i)permission denied|not readable|unreadable", text)
    assert not (tmp_path / "out").exists()


def test_permission_denied_file_beside_a_readable_log(tmp_path: Path, log: Path):
    path = write_log(tmp_path / "secret.log", LOG_LINES)
    preexec = _unreadable(path)
    both = ingest(path, log, out=tmp_path / "out", preexec=preexec)
    text = check_clean(both, path, log)
    assert both.returncode == 3
    assert re.search(r"(?i)permission denied|not readable|unreadable", text)
    assert f"could not be read at all: {path}" in text
    assert_all_kept(tmp_path / "out", LOG_LINES)


def test_permission_denied_file_inside_a_folder(tmp_path: Path):
    folder = tmp_path / "logs"
    folder.mkdir()
    good = write_log(folder / "a-good.log", LOG_LINES)
    bad = write_log(folder / "b-secret.log", LOG_LINES[:3])
    preexec = _unreadable(bad)
    proc = ingest(folder, out=tmp_path / "out", preexec=preexec)
    text = check_clean(proc, bad, good)
    assert proc.returncode == 3
    assert f"could not be read at all: {bad}" in text
    assert_all_kept(tmp_path / "out", LOG_LINES)


def test_named_pipe_is_read_not_hung(tmp_path: Path):
    fifo = tmp_path / "capture.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "w") as f:
            f.write("\n".join(LOG_LINES) + "\n")

    threading.Thread(target=feed, daemon=True).start()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "logcorr.cli", "ingest", str(fifo), "-o", str(tmp_path / "out")],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):  # release a reader still blocked in open()
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail(f"logcorr ingest {fifo} hung (no exit in 30 s)")
    check_clean(proc, fifo)
    assert proc.returncode == 0
    assert_all_kept(tmp_path / "out", LOG_LINES)


def test_process_substitution(tmp_path: Path, log: Path):
    if not shutil.which("bash"):
        pytest.skip("bash not installed")
    cmd = f"{shlex.quote(sys.executable)} -m logcorr.cli ingest <(cat {shlex.quote(str(log))}) -o {tmp_path / 'out'}"
    proc = subprocess.run(
        ["bash", "-c", cmd], capture_output=True, text=True, timeout=CLI_TIMEOUT, check=False
    )
    check_clean(proc)
    assert proc.returncode == 0, proc.stderr
    assert_all_kept(tmp_path / "out", LOG_LINES)


def test_truncated_real_journal_beside_a_readable_input(tmp_path: Path, log: Path):
    if not TRUNCATED_JOURNAL.exists():
        pytest.skip(f"real cases not found at {TRUNCATED_JOURNAL}")
    if not shutil.which("journalctl"):
        pytest.skip("journalctl not installed")
    proc = ingest(TRUNCATED_JOURNAL, log, out=tmp_path / "out")
    text = check_clean(proc, TRUNCATED_JOURNAL, log)
    assert proc.returncode == 3  # journalctl refuses it: nothing of it could be read
    assert f"could not be read at all: {TRUNCATED_JOURNAL}" in text
    # issue 30 item 9: the file, its size and what to try
    assert f"{TRUNCATED_JOURNAL}: journalctl refused it: Failed to open files" in text
    assert (
        "The file holds 153,600 bytes" in text and f"journalctl --file {TRUNCATED_JOURNAL} --verify" in text
    )
    assert_all_kept(tmp_path / "out", LOG_LINES)


def test_truncated_real_journal_unpacked_in_a_journal_folder(tmp_path: Path, log: Path):
    if not TRUNCATED_JOURNAL.exists():
        pytest.skip(f"real cases not found at {TRUNCATED_JOURNAL}")
    if not shutil.which("journalctl"):
        pytest.skip("journalctl not installed")
    folder = tmp_path / "journal" / "0123456789abcdef0123456789abcdef"
    folder.mkdir(parents=True)
    (folder / "system.journal").write_bytes(lzma.decompress(TRUNCATED_JOURNAL.read_bytes()))
    proc = ingest(tmp_path / "journal", log, out=tmp_path / "out")
    text = check_clean(proc, tmp_path / "journal", log)
    # journalctl leaves the file out with a word on stderr and exit 0: logcorr names it, read in part (F5)
    assert proc.returncode == 3
    assert f"{folder / 'system.journal'}: journalctl left this file out (" in text
    assert_all_kept(tmp_path / "out", LOG_LINES)


# -- hypothesis: the pure parsers never raise and keep one row per record ----------------------------

HEADERS = st.sampled_from(
    [
        "[2025-11-05 12:00:00 TP0] ",
        "[2025-11-05 12:00:00.123 DP1 TP3 EP3] ",
        "[2025-11-05 12:00:00] ",
        "[2025-13-45 99:99:99 TP9] ",
        "[2026-04-15 17:13:10][scheduler.py:1][INFO]: ",
        "E0414 03:56:41.856248 77969 transfer.cpp:173] ",
        "[rank3]:[E908 08:39:25.432755661 ProcessGroupNCCL.cpp:2068] ",
        "2025-10-29 21:49:19 ERROR ",
        "INFO:     ",
        "(SchedulerActor pid=12, ip=10.0.0.1) [2026-01-01 00:00:00 TP1] ",
        "\x1b[32m[2025-11-05 12:00:00 TP0]\x1b[0m ",
        "[",
        "",
    ]
)
LINE_TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=80)
MESSAGES = st.one_of(st.builds(lambda h, t: h + t, HEADERS, LINE_TEXT), LINE_TEXT, st.none())
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.lists(MESSAGES, max_size=30))
def test_fuzz_split_prefix(texts):
    df = split_prefix(pl.Series("text", texts, dtype=pl.String))
    assert df.height == len(texts)
    assert df["body"].null_count() <= texts.count(None)


FIELD_NAMES = st.sampled_from(
    ["MESSAGE", "_PID", "_SYSTEMD_UNIT", "_HOSTNAME", "_COMM", "PRIORITY", "X_Y", "UNIT"]
)
VALUES = st.one_of(st.binary(max_size=60), st.text(max_size=60).map(str.encode))


def _export_field(name: str, value: bytes) -> bytes:
    if b"\n" in value or re.search(rb"[\x00-\x08\x0b-\x1f\x7f]", value) or not _utf8(value):
        return name.encode() + b"\n" + struct.pack("<Q", len(value)) + value + b"\n"
    return name.encode() + b"=" + value + b"\n"


def _utf8(b: bytes) -> bool:
    try:
        b.decode()
    except UnicodeDecodeError:
        return False
    return True


ENTRIES = st.lists(
    st.tuples(st.integers(0, 2**63 - 1), st.lists(st.tuples(FIELD_NAMES, VALUES), max_size=6)),
    min_size=1,
    max_size=12,
)


@FUZZ
@given(ENTRIES)
def test_fuzz_parse_export_keeps_every_entry(entries):
    data = b""
    for i, (ts, fields) in enumerate(entries):
        data += f"__CURSOR=c{i}\n__REALTIME_TIMESTAMP={ts}\n".encode()
        data += b"".join(_export_field(n, v) for n, v in fields) + b"\n"
    df = parse_export(data, source="fuzz")
    assert df.height == len(entries)
    assert df["source_pos"].to_list() == [f"c{i}" for i in range(len(entries))]


@pytest.mark.parametrize("data", [b"", b"\n\n", b"root@gpu-node-1:~# \n"])
def test_parse_export_chunk_without_key_value_line(data):
    df = parse_export(data, source="x")
    assert df.height == (1 if data.strip() else 0)


@FUZZ
@given(st.binary(max_size=2000))
def test_fuzz_parse_export_never_raises_on_bytes(data):
    parse_export(data, source="fuzz")


@FUZZ
@given(st.binary(max_size=400), st.integers(1, 399))
def test_fuzz_parse_export_cut_anywhere(tail, cut):
    whole = (
        export_entry(0, T0, LOG_LINES[0])
        + export_entry(1, T0 + 1, b"a\nb\x1b[1m")
        + export_entry(2, T0 + 2, tail)
    )
    part = whole[: min(cut + len(whole) // 2, len(whole))]
    df = parse_export(part, source="fuzz")
    assert df.height >= 1
    assert df["message"][0] == LOG_LINES[0]


# Rust's char::is_whitespace (what polars strips), not Python's str.isspace.
RUST_WS = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)
JSON_VALUES = st.one_of(
    st.text(max_size=40),
    st.lists(st.integers(0, 255), max_size=20),
    st.lists(st.text(max_size=5), max_size=3),
    st.none(),
)
JSON_LINES = st.one_of(
    st.builds(lambda ts, m: json_entry(0, ts, m), st.integers(0, 2**63 - 1), JSON_VALUES),
    st.builds(
        lambda ts, m, k: json_entry(0, ts, m)[:k], st.integers(0, 2**62), JSON_VALUES, st.integers(0, 300)
    ),
    st.text(max_size=60).filter(lambda s: "\n" not in s),
)


@FUZZ
@given(st.lists(JSON_LINES, max_size=20))
def test_fuzz_parse_json_lines_keeps_every_line(lines):
    df = parse_json_lines(pl.Series("line", lines, dtype=pl.String), source="fuzz")
    assert df.height == sum(1 for ln in lines if ln.strip(RUST_WS))


@pytest.mark.parametrize("name", ["/ABS", "../../secret.txt", "link.log"])
def test_a_bundle_reads_only_its_own_files(tmp_path, name):
    """Third reliability trial F1: a collect manifest naming an absolute path, one climbing out with
    `..`, or a link out of the bundle pulled any file of the machine into events. Each is skipped and
    named; nothing of the file is read."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET token=abc123\n")
    bundle = tmp_path / "a" / "b"
    bundle.mkdir(parents=True)
    if name == "link.log":
        (bundle / name).symlink_to(secret)
    name = str(secret) if name == "/ABS" else name
    manifest = {"collector": "logcorr collect", "host": "x", "artifacts": [{"kind": "journal", "file": name}]}
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    from logcorr.ingest import ingest

    result = ingest([bundle], tmp_path / "out")
    skipped = [r for r in result.reports if r.format == "skipped"]
    assert [Path(r.source).name for r in skipped] == [Path(name).name]
    assert "not read" in skipped[0].notes[0]
    from logcorr.analysis.saved import query

    assert query(tmp_path / "out", "SELECT count(*) FROM events WHERE message LIKE '%SECRET%'").item() == 0


# -- one hostile input costs only itself (issue 47, trial F7) -----------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000
HOSTILE_JSON = {
    "otlp_logs_wrong_types": '{"resourceLogs":[1]}',
    "otlp_traces_wrong_types": '{"resourceSpans":["x"]}',
    "loki_range_wrong_types": '{"status":"success","data":{"resultType":"streams","result":[1]}}',
    "otlp_logs_deep": '{"resourceLogs":' + DEEP + "}",
    "otlp_traces_deep": '{"resourceSpans":' + DEEP + "}",
    "loki_range_deep": '{"status":"success","data":{"resultType":"streams","result":' + DEEP + "}}",
    "es_hits_deep": '{"hits":{"hits":[{"_source":' + DEEP + "}]}}",
}


WRONG_TYPES = {
    "otlp_logs_wrong_types": re.escape(
        "resourceLogs[0] is a number, not an object: not the shape of its format"
    ),
    "otlp_traces_wrong_types": re.escape(
        "resourceSpans[0] is a string, not an object: not the shape of its format"
    ),
    "loki_range_wrong_types": re.escape(
        "data.result[0] is a number, not an object: not the shape of its format"
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_JSON))
def test_a_json_document_of_wrong_types_or_depth_costs_only_itself(tmp_path: Path, log: Path, name: str):
    """Trial F7: an OTLP, Loki or Elasticsearch document with a wrong JSON type or nested past Python's
    recursion limit was a traceback, exit 1 and nothing written. Now it is named with its error (on
    stderr too) and the log beside it is written, exit 3."""
    bad = tmp_path / f"{name}.json"
    bad.write_text(HOSTILE_JSON[name] + "\n")
    proc = ingest(bad, log, out=tmp_path / "out")
    check_clean(proc, bad, log)
    assert proc.returncode == 3, proc.stderr
    # a wrong type is said in the format's terms (issue 47 N9), a depth by Python's RecursionError
    said = WRONG_TYPES.get(name, r"not read: \w+Error: ")
    assert re.search(rf"(?m)^logcorr: error: {re.escape(str(bad))}: {said}", proc.stderr), proc.stderr
    assert f"could not be read at all: {bad}" in proc.stderr.splitlines()[-1]
    assert_all_kept(tmp_path / "out", LOG_LINES)
    sources = table(tmp_path / "out", "sources")
    assert re.match(
        f"{re.escape(str(bad))}: {said}", sources.filter(pl.col("source") == str(bad))["errors"].item()
    )


def test_a_file_name_that_is_not_utf8_is_read_and_named(tmp_path: Path, log: Path):
    """Trial F7: a file name with a byte that is no UTF-8 (`bad\\xff.log`) was a UnicodeEncodeError
    traceback, exit 1. Both inputs are read; the name is kept with the byte shown as `\\xff`."""
    folder = os.fsencode(tmp_path) + b"/logs\xfe"
    os.mkdir(folder)
    with open(folder + b"/bad\xff.log", "wb") as f:
        f.write(("\n".join(LOG_LINES[:3]) + "\n").encode())
    proc = ingest(Path(os.fsdecode(folder)), log, out=tmp_path / "out")
    check_clean(proc, log)
    assert proc.returncode == 0, proc.stderr
    assert "logs\\xfe/bad\\xff.log [text]: 3 records" in proc.stdout
    assert_all_kept(tmp_path / "out", LOG_LINES + LOG_LINES[:3])


def test_a_folder_1200_levels_deep_is_walked(tmp_path: Path, log: Path):
    """Trial F7: Python 3.11's recursive os.walk raised RecursionError on a folder 1,200 levels deep
    (a traceback, exit 1, the log beside it lost). The walk is iterative: the deepest file is read."""
    deep = tmp_path / "deep"
    bottom = deep
    for _ in range(1201):  # one level at a time: os.makedirs recurses
        bottom.mkdir()
        bottom = bottom / "a"
    bottom = bottom.parent
    write_log(bottom / "x.log", LOG_LINES[:3])
    try:
        proc = ingest(deep, log, out=tmp_path / "out")
    finally:  # removed bottom up: pytest's own clean-up of tmp_path recurses (and would fail later)
        (bottom / "x.log").unlink()
        for folder in [bottom, *bottom.parents][:1200]:
            folder.rmdir()
    check_clean(proc, log)
    assert proc.returncode == 0, proc.stderr
    assert_all_kept(tmp_path / "out", LOG_LINES + LOG_LINES[:3])


# -- a pickled dump is bounded by its file (issue 47, trial F2) ---------------------------------------

DUMP_PREAMBLE = """
import pickle, sys, types
for n in ("sglang", "sglang.srt", "sglang.srt.server_args"):
    sys.modules[n] = types.ModuleType(n)
class ServerArgs:
    pass
ServerArgs.__module__ = "sglang.srt.server_args"
sys.modules["sglang.srt.server_args"].ServerArgs = ServerArgs
def laughs(levels):
    x = ["lol"]
    for _ in range(levels):
        x = [x] * 10
    return x
def request(i, text="ok"):
    return ({"rid": f"r{i}"}, {"meta_info": {"finish_reason": {"type": "stop"}}, "text": text}, 1761774000.0, 1761774001.0)
"""


def write_dump(path: Path, body: str) -> Path:
    """A pickle made in a fresh python (SGLang's module names as stand-ins there, never here) from
    ``body``, which sets ``data``."""
    code = DUMP_PREAMBLE + body + f"\nopen({str(path)!r}, 'wb').write(pickle.dumps(data, 4))\n"
    subprocess.run([sys.executable, "-c", code], check=True)
    return path


def _address_space(limit: int):
    """A ``preexec_fn`` capping the child's address space at ``limit`` bytes: an allocation past it
    fails at once instead of filling the machine's memory."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return cap


BOUNDED = 6 << 30  # the address space an ingest of a small dump runs in (polars reserves much, uses little)


def test_a_dump_asking_bytearray_of_a_number_is_refused_by_name(tmp_path: Path, log: Path):
    """Trial F2: `bytearray(2 << 30)` in a 129-byte dump allocated 2.3 GB (here 8 GiB, under a 6 GiB
    address space: a MemoryError before the fix). The callable is refused by name, before allocating,
    and the log beside it written; the dump, not read at all, is named on stderr, exit 3."""
    dump = write_dump(
        tmp_path / "crash_dump_2025-10-29_21-40-20.pkl",
        "class Bomb:\n    def __reduce__(self):\n        return (bytearray, (8 << 30,))\n"
        "data = {'server_args': ServerArgs(), 'requests': [], 'junk': Bomb()}",
    )
    assert dump.stat().st_size < 200
    proc = ingest(dump, log, out=tmp_path / "out", preexec=_address_space(BOUNDED))
    check_clean(proc, dump, log)
    assert proc.returncode == 3, proc.stderr
    assert f"logcorr: error: {dump}: bytearray(int): refused (it allocates from a number)" in proc.stderr
    assert_all_kept(tmp_path / "out", LOG_LINES)


@pytest.mark.parametrize("where", ["request_out", "server_args"])
def test_a_billion_laughs_dump_is_shown_cut_not_expanded(tmp_path: Path, log: Path, where: str):
    """Trial F2: ten references to one list, nine levels deep (10**9 strings in a file of a few hundred
    bytes), were expanded by the repr of a Finish line or of server_args until the process was killed.
    The value is shown up to MAX_SHOWN_CHARS and cut with '…'; the rest of the dump and the log are read."""
    from logcorr.inputs.dumps import MAX_SHOWN_CHARS

    body = {
        "request_out": "data = {'server_args': ServerArgs(), 'requests': [request(1, laughs(9))]}",
        "server_args": "a = ServerArgs(); a.tp_size = laughs(9)\ndata = {'server_args': a, 'requests': [request(1)]}",
    }[where]
    dump = write_dump(tmp_path / "crash_dump_2025-10-29_21-40-21.pkl", body)
    assert dump.stat().st_size < 1000
    proc = ingest(dump, log, out=tmp_path / "out", preexec=_address_space(BOUNDED))
    check_clean(proc, dump, log)
    assert proc.returncode == 0, proc.stderr
    assert_all_kept(tmp_path / "out", LOG_LINES, total=len(LOG_LINES) + 4)
    mine = events(tmp_path / "out").filter(pl.col("source") == str(dump)).sort("source_pos")
    assert mine["source_pos"].to_list() == [
        "dump",
        "requests[0] created",
        "requests[0] finished",
        "server_args",
    ]
    longest = mine["message"].str.len_chars().max()
    assert MAX_SHOWN_CHARS < longest < MAX_SHOWN_CHARS + 1000
    cut = mine.filter(
        pl.col("source_pos") == ("server_args" if where == "server_args" else "requests[0] finished")
    )
    assert cut["message"].item().endswith("…")


def test_a_request_referenced_a_hundred_thousand_times_stops_at_the_text_bound(tmp_path: Path, log: Path):
    """Trial F2: one request tuple referenced 3,000,000 times (a 6 MB dump) made a record pair per
    reference, until 8 GB. Records stop at TEXT_PER_BYTE times the file's size (or TEXT_FLOOR): the
    requests before are kept, the dump named as read only in part, exit 3; the log beside it written."""
    from logcorr.inputs.dumps import TEXT_FLOOR

    dump = write_dump(
        tmp_path / "crash_dump_2025-10-29_21-40-22.pkl",
        "r = request(1, 'x' * 2000)\ndata = {'server_args': ServerArgs(), 'requests': [r] * 100_000}",
    )
    assert dump.stat().st_size < 400_000
    proc = ingest(dump, log, out=tmp_path / "out", preexec=_address_space(BOUNDED))
    check_clean(proc, dump, log)
    assert proc.returncode == 3, proc.stderr
    said = re.search(
        rf"logcorr: error: {re.escape(str(dump))}: its first ([\d,]+) of 100,000 requests make", proc.stderr
    )
    assert said, proc.stderr
    assert f"were read only in part: {dump}" in proc.stderr.splitlines()[-1]
    mine = events(tmp_path / "out").filter(pl.col("source") == str(dump))
    requests = int(said[1].replace(",", ""))
    assert mine.height == 2 * requests + 2  # Receive and Finish of each, server_args and the dump
    assert TEXT_FLOOR <= mine["message"].str.len_chars().sum() < TEXT_FLOOR + 10_000
    assert_all_kept(tmp_path / "out", LOG_LINES, total=len(LOG_LINES) + mine.height)


def test_a_dump_whose_server_args_holds_itself_is_read(tmp_path: Path, log: Path):
    """Trial F7: a ServerArgs referring to itself was a RecursionError in its repr, and a launch_command
    that is a list a polars TypeError: each a traceback, exit 1, nothing written. Both dumps are read now:
    the cycle shown as '…', a launch command that is no text left out."""
    dump = write_dump(
        tmp_path / "crash_dump_2025-10-29_21-40-23.pkl",
        "a = ServerArgs(); a.me = a; a.tp_size = 4\n"
        "data = {'server_args': a, 'requests': [request(1)], 'launch_command': ['python', '-m', 'sglang']}",
    )
    proc = ingest(dump, log, out=tmp_path / "out")
    check_clean(proc, dump, log)
    assert proc.returncode == 0, proc.stderr
    mine = events(tmp_path / "out").filter(pl.col("source") == str(dump)).sort("source_pos")
    assert mine["message"][-1] == "server_args=ServerArgs(me=…, tp_size=4)"
    assert mine["source_pos"].to_list() == [
        "dump",
        "requests[0] created",
        "requests[0] finished",
        "server_args",
    ]
    assert_all_kept(tmp_path / "out", LOG_LINES, total=len(LOG_LINES) + 4)


# -- metadata files and archives a walk or a bundle opens (issue 47, trial F3/F4) ---------------------

DOCKER_ID = "a" * 64


def docker_folder(tmp_path: Path, config) -> tuple[Path, Path]:
    """A Docker containers folder: ``<id>/<id>-json.log`` of the log's lines beside ``config.v2.json``,
    made by ``config(path)``. Returns the folder and the log."""
    folder = tmp_path / "containers" / DOCKER_ID
    folder.mkdir(parents=True)
    log = folder / f"{DOCKER_ID}-json.log"
    log.write_text(
        "".join(
            json.dumps({"log": ln + "\n", "stream": "stdout", "time": "2025-11-05T12:00:00Z"}) + "\n"
            for ln in LOG_LINES
        )
    )
    config(folder / "config.v2.json")
    return folder.parent, log


DOCKER_CONFIGS = {
    "dev_zero": lambda p: p.symlink_to("/dev/zero"),
    "fifo": os.mkfifo,
    "wrong_types": lambda p: p.write_text('{"Config": {"Labels": ["a"]}, "State": [1]}'),
}


@pytest.mark.parametrize("kind", sorted(DOCKER_CONFIGS))
def test_a_docker_config_that_is_a_device_pipe_or_of_wrong_types_still_reads_the_log(
    tmp_path: Path, kind: str
):
    """Trial F3/F7: config.v2.json beside a Docker log, a link to /dev/zero, exhausted memory; a FIFO
    hung the walk for ever; `Labels: [...]` was an AttributeError traceback. It is read only when it is
    a regular file (opened without blocking, at most 64 MiB) of the types Docker writes; else left out,
    the refusal named, and the log read whole."""
    folder, log = docker_folder(tmp_path, DOCKER_CONFIGS[kind])
    cmd = [
        sys.executable,
        "-m",
        "logcorr.cli",
        "ingest",
        str(folder),
        "--all-units",
        "-o",
        str(tmp_path / "out"),
    ]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=60, preexec_fn=_address_space(BOUNDED), check=False
    )
    check_clean(proc, log)
    assert proc.returncode == 0, proc.stderr
    if kind != "wrong_types":
        assert f"{log.parent / 'config.v2.json'}: not read: not a regular file" in proc.stdout
    assert_all_kept(tmp_path / "out", LOG_LINES)


def test_a_bundle_manifest_of_wrong_types_reads_its_files(tmp_path: Path, log: Path):
    """Trial F7: a collect manifest whose host is a list, whose steps hold a string and a number, and
    whose start time is a number was a TypeError or AttributeError traceback, exit 1. The steps that are
    objects are read; the journal it names is read whole."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    write_log(bundle / "engine.log", LOG_LINES)
    artifacts = ["x", 12345, {"kind": "journal", "file": "engine.log", "started": 12}, {"file": 7}]
    manifest = {"collector": "logcorr collect", "host": ["a"], "boot_id": {}, "artifacts": artifacts}
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    proc = ingest(bundle, out=tmp_path / "out")
    check_clean(proc, bundle / "engine.log")
    assert proc.returncode == 0, proc.stderr
    assert_all_kept(tmp_path / "out", LOG_LINES, total=len(LOG_LINES) + 2)


@pytest.mark.heavy
def test_a_bundle_archive_that_unpacks_past_the_bomb_bound_is_refused(tmp_path: Path, log: Path):
    """Trial F4: a bundle .tar.gz was unpacked with no bound (a 3.1 MB archive filled a 1 GB TMPDIR).
    It is bound as a .gz input is, max(64 MiB, 200 times its size), checked before each member is
    written: 100 MiB of zeros (about 100 KB packed) are refused by name, nothing left in TMPDIR, the
    log beside it written, exit 3."""
    import io
    import tarfile

    archive = tmp_path / "bomb.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        manifest = json.dumps({"collector": "logcorr collect", "artifacts": []}).encode()
        info = tarfile.TarInfo("bundle-x/manifest.json")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
        zeros = tarfile.TarInfo("bundle-x/zeros.log")
        zeros.size = 100 << 20
        tar.addfile(zeros, io.BytesIO(bytes(zeros.size)))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    cmd = [sys.executable, "-m", "logcorr.cli", "ingest", str(archive), str(log), "-o", str(tmp_path / "out")]
    env = {**os.environ, "TMPDIR": str(scratch)}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=CLI_TIMEOUT, env=env, check=False)
    check_clean(proc, archive, log)
    assert proc.returncode == 3, proc.stderr
    assert f"logcorr: error: {archive}: not read: it unpacks to more than 200 times its size" in proc.stderr
    assert "a decompression bomb, not a bundle" in proc.stderr
    assert list(scratch.iterdir()) == []
    assert_all_kept(tmp_path / "out", LOG_LINES)


# -- what of a folder cannot be read is named (issue 47, trial F5) ------------------------------------


def test_a_subfolder_that_cannot_be_listed_is_named(tmp_path: Path):
    """Trial F5: os.walk dropped a subfolder of mode 000 without a word (exit 0), while an unreadable
    file beside it was named. The folder is named with why, exit 3; the log beside it read whole."""
    folder = tmp_path / "logs"
    folder.mkdir()
    write_log(folder / "a-good.log", LOG_LINES)
    sub = folder / "sub"
    sub.mkdir()
    write_log(sub / "x.log", LOG_LINES[:2])
    preexec = _unreadable(sub)
    try:
        proc = ingest(folder, out=tmp_path / "out", preexec=preexec)
    finally:
        sub.chmod(0o755)
    check_clean(proc, folder / "a-good.log")
    assert proc.returncode == 3, proc.stderr
    assert (
        f"logcorr: error: {sub}: a folder that cannot be listed: Permission denied: not read" in proc.stderr
    )
    assert f"could not be read at all: {sub}" in proc.stderr.splitlines()[-1]
    assert_all_kept(tmp_path / "out", LOG_LINES)


def test_a_journal_file_journalctl_cannot_open_is_named(tmp_path: Path):
    """Trial F5: journalctl -D leaves out a .journal file it cannot open without a word, and its header
    count with it: exit 0, 1,341 of 5,974 records. The file is named with why, exit 3 (read in part)."""
    from conftest import SAMPLE, need_journalctl

    need_journalctl()
    journal = tmp_path / "journal"
    shutil.copytree(SAMPLE / "journal", journal)
    (archived,) = journal.glob("*/system@*.journal")
    preexec = _unreadable(archived)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "logcorr.cli",
            "ingest",
            str(journal),
            "--all-units",
            "-o",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
        preexec_fn=preexec,
        check=False,
    )
    check_clean(proc, journal)
    assert proc.returncode == 3, proc.stderr
    assert f"logcorr: error: {archived}: journalctl cannot open it (Permission denied)" in proc.stderr
    assert f"were read only in part: {journal}" in proc.stderr.splitlines()[-1]
    assert events(tmp_path / "out").height > 0  # the files it can open are read
