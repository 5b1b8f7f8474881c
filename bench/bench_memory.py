#!/usr/bin/env python3
"""Peak memory of ``logcorr ingest`` on input shapes that stress it (issue 29 item 2, the reliability
trial's F4, F10 and F20), each against the bound of 1 GB.

Each shape is written into WORK, then ingested by a fresh child (``python -m logcorr.cli ingest``)
under ``bench/common.measure``: wall seconds, CPU seconds, peak RSS of the largest process
(``/usr/bin/time -f %M``) and of the process tree (sampled from /proc every 100 ms), exit status.

Shapes (``--scale`` multiplies every size; 1.0 is the trial's):

- ``tiny_lines``: 8,000,000 lines of ``x`` (16 MB): per-line state
- ``one_record``: one traceback of 1,000,000 continuation lines (about 30 MB): per-record state
- ``export_field``: a journal export whose one entry has a 300 MiB binary-safe MESSAGE
- ``threads``: a py-spy dump of 100,000 threads (6.3 MB), with ``--captured-at``
- ``long_line``: one line of 256 MiB after an SGLang header (F20/F22's shape; the trial's was 4.1 GiB:
  a line is read in pieces of 4 MiB, so the peak does not grow with its length, only the time)

Usage::

    python bench/bench_memory.py --work /tmp/bm                 # every shape, full size
    python bench/bench_memory.py --work /tmp/bm --scale 0.1     # a quick look
    python bench/bench_memory.py --work /tmp/bm --only threads,tiny_lines
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import gb, measure  # noqa: E402

BOUND = 1 << 30  # bytes: the peak RSS every shape must stay under


def tiny_lines(path: Path, scale: float) -> list[str]:
    """``x\\n`` × 8 M × scale."""
    n = int(8_000_000 * scale)
    with open(path, "wb") as f:
        for _ in range(n // 1_000_000):
            f.write(b"x\n" * 1_000_000)
        f.write(b"x\n" * (n % 1_000_000))
    return []


def one_record(path: Path, scale: float) -> list[str]:
    """An SGLang traceback header, then 1 M × scale indented frame lines: one record."""
    n = int(1_000_000 * scale)
    with open(path, "wb") as f:
        f.write(b"[2025-10-29 21:34:47 TP0] Scheduler hit an exception: Traceback (most recent call last):\n")
        line = b'  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2682, in f\n'
        for _ in range(n // 100_000):
            f.write(line * 100_000)
        f.write(line * (n % 100_000))
    return []


def export_field(path: Path, scale: float) -> list[str]:
    """A journal export entry whose MESSAGE is a binary-safe field of 300 MiB × scale (journald's
    export format: ``NAME\\n<u64 le length><bytes>\\n``)."""
    size = int((300 << 20) * scale)
    with open(path, "wb") as f:
        f.write(b"__CURSOR=s=1;i=1\n__REALTIME_TIMESTAMP=1761773687000000\n_HOSTNAME=gpu-node-1\n")
        f.write(b"_SYSTEMD_UNIT=sglang-decode.service\n_PID=3307\nMESSAGE\n" + struct.pack("<Q", size))
        chunk = b"[2025-10-29 21:34:47 TP0] y" + b"\x01" * ((1 << 20) - 27)
        for _ in range(size >> 20):
            f.write(chunk)
        f.write(b"\x01" * (size - (size >> 20 << 20)) + b"\n\n")
    return []


def threads(path: Path, scale: float) -> list[str]:
    """A py-spy dump of 100,000 × scale threads, one frame each (the trial's F10 shape)."""
    n = int(100_000 * scale)
    with open(path, "w") as f:
        f.write("Process 1234: python3 -m sglang.launch_server\nPython v3.11.7 (/usr/bin/python3)\n\n")
        for i in range(n):
            f.write(f'Thread 0x{0x7F0000000000 + i:X} (active): "t{i}"\n    run (worker.py:{i % 100 + 1})\n')
    return ["--captured-at", "2025-10-29 21:40:10"]


def long_line(path: Path, scale: float) -> list[str]:
    """An SGLang header and 256 MiB × scale of ``x`` on one line, then one short line."""
    size = int((256 << 20) * scale)
    with open(path, "wb") as f:
        f.write(b"[2025-11-05 12:00:00 TP0] ")
        for _ in range(size >> 20):
            f.write(b"x" * (1 << 20))
        f.write(b"x" * (size - (size >> 20 << 20)) + b"\n[2025-11-05 12:00:01 TP0] after\n")
    return []


SHAPES: dict[str, tuple[str, Callable[[Path, float], list[str]]]] = {
    "tiny_lines": ("tiny.log", tiny_lines),
    "one_record": ("record.log", one_record),
    "export_field": ("field.export", export_field),
    "threads": ("threads.txt", threads),
    "long_line": ("line.log", long_line),
}


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, required=True, help="folder for the inputs and OUT folders")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every size (default 1.0)")
    ap.add_argument("--only", help="comma-separated shapes: " + ", ".join(SHAPES))
    args = ap.parse_args(argv)
    names = args.only.split(",") if args.only else list(SHAPES)
    if unknown := set(names) - set(SHAPES):
        ap.error(f"--only: no shape {', '.join(sorted(unknown))}")
    args.work.mkdir(parents=True, exist_ok=True)
    print(f"logcorr ingest peak memory, scale {args.scale}; bound {gb(BOUND)}; {os.cpu_count()} cores")
    print(f"| {'shape':<13} | {'input MB':>8} | {'wall s':>6} | {'CPU s':>6} | {'RSS largest':>11} | "
          f"{'RSS tree':>8} | {'exit':>4} | bound |")  # fmt: skip
    print(f"|{'-' * 15}|{'-' * 10}|{'-' * 8}|{'-' * 8}|{'-' * 13}|{'-' * 10}|{'-' * 6}|-------|")
    missed = 0
    for name in names:
        file, make = SHAPES[name]
        src, out = args.work / file, args.work / f"out-{name}"
        extra = make(src, args.scale)
        shutil.rmtree(out, ignore_errors=True)
        run = measure(name, [sys.executable, "-m", "logcorr.cli", "ingest", str(src), "-o", str(out), *extra])
        ok = run.rss_largest <= BOUND and run.rc in (0, 3)
        missed += not ok
        print(
            f"| {name:<13} | {src.stat().st_size / 1e6:>8.1f} | {run.wall:>6.1f} | {run.cpu:>6.1f} | "
            f"{gb(run.rss_largest):>11} | {gb(run.rss_tree):>8} | {run.rc:>4} | {'ok' if ok else 'MISSED'} |"
        )
        src.unlink()
        shutil.rmtree(out, ignore_errors=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
