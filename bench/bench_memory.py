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

The third trial's F6 shapes (issue 47 item 5), each a reader that once held its whole input:

- ``docker_partial``: a Docker json-file log, 20 lines, then 6,000 objects of 16 KiB without the final
  ``\n`` (a 98 MB line Docker split and never ended), in a container folder, with ``--all-units``
- ``cri_partial``: a CRI pod log, one ``F`` line, then 6,000 ``P`` parts of 16 KiB no ``F`` closes
- ``otlp_traces``: 1,000,000 OTLP spans (387 MB), one ``ExportTraceServiceRequest`` per line
- ``otlp_logs_oneline``: an OTLP logs request of 1,000,000 records on one line (what curl saves),
  with ``--all-units``
- ``loki_oneline``: a Loki ``query_range`` answer of 1,000,000 values on one line, newest first
- ``request_dump``: an SGLang request dump (pickle) of 400,000 finished requests
- ``prometheus``: a scrape of 1,000,000 samples (89 MB), with ``--captured-at``

Usage::

    python bench/bench_memory.py --work /tmp/bm                 # every shape, full size
    python bench/bench_memory.py --work /tmp/bm --scale 0.1     # a quick look
    python bench/bench_memory.py --work /tmp/bm --only threads,tiny_lines
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import struct
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
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


def docker_partial(path: Path, scale: float) -> list[str]:
    """A Docker container folder: 20 whole lines, then 6,000 × scale 16 KiB objects without ``\\n``."""
    cid = "a" * 64
    log = path / cid / f"{cid}-json.log"
    log.parent.mkdir(parents=True)
    with open(log, "w") as f:
        for i in range(20):
            f.write(json.dumps({"log": f"[2025-10-29 21:40:{i:02d} TP0] line {i}\n", "stream": "stdout",
                                "time": f"2025-10-29T21:40:{i:02d}Z"}) + "\n")  # fmt: skip
        part = json.dumps({"log": "x" * 16384, "stream": "stdout", "time": "2025-10-29T21:40:30Z"}) + "\n"
        f.write(part * int(6000 * scale))
    return ["--all-units"]


def cri_partial(path: Path, scale: float) -> list[str]:
    """A CRI pod log: one ``F`` line, then 6,000 × scale ``P`` parts of 16 KiB never closed."""
    log = path / "default_sglang-decode-0_0123abcd-0000-0000-0000-000000000000" / "decode" / "0.log"
    log.parent.mkdir(parents=True)
    with open(log, "w") as f:
        f.write("2025-10-29T21:40:00.000000000Z stdout F [2025-10-29 21:40:00 TP0] start\n")
        f.write(f"2025-10-29T21:40:01.000000000Z stdout P {'x' * 16384}\n" * int(6000 * scale))
    return []


def otlp_traces(path: Path, scale: float) -> list[str]:
    """1 M × scale OTLP spans, one request per line, four spans per trace (the trial's reproducer)."""
    with open(path, "w") as f:
        for i in range(int(1_000_000 * scale)):
            span = {"traceId": f"t{i // 4}", "spanId": f"s{i}", "name": "stage",
                    "startTimeUnixNano": str(1761774000000000000 + i * 1000000)}  # fmt: skip
            doc = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [span]}]}]}
            f.write(json.dumps(doc) + "\n")
    return []


def otlp_logs_oneline(path: Path, scale: float) -> list[str]:
    """An OTLP logs request of 1 M × scale records (SGLang batch lines), all on one line."""
    res = {"attributes": [{"key": "k8s.pod.name", "value": {"stringValue": "sglang-decode-0"}}]}
    with open(path, "w") as f:
        f.write('{"resourceLogs":[{"resource":' + json.dumps(res) + ',"scopeLogs":[{"logRecords":[')
        n = int(1_000_000 * scale)
        for i in range(n):
            body = f"[2025-10-29 21:40:00 TP0] Decode batch. #running-req: {i % 64}, #token: {i}, gen throughput (token/s): 1.0"
            rec = {"timeUnixNano": str(1761774000000000000 + i * 1000), "body": {"stringValue": body}}
            f.write(json.dumps(rec) + ("," if i < n - 1 else ""))
        f.write("]}]}]}")
    return ["--all-units"]


def loki_oneline(path: Path, scale: float) -> list[str]:
    """A Loki ``query_range`` answer of 1 M × scale values of one stream on one line, newest first."""
    with open(path, "w") as f:
        f.write('{"status":"success","data":{"resultType":"streams","result":[{"stream":{"pod":"sglang-decode-0"'
                ',"container":"decode"},"values":[')  # fmt: skip
        n = int(1_000_000 * scale)
        for i in range(n - 1, -1, -1):
            line = f"[2025-10-29 21:40:00 TP0] Decode batch. #running-req: {i % 64}, #token: {i}"
            f.write(json.dumps([str(1761774000000000000 + i * 1000), line]) + ("," if i else ""))
        f.write("]}]}}")
    return ["--all-units"]


@dataclass
class GenerateReqInput:  # pickled under SGLang's module name, as a dump holds it
    rid: str | None = None
    bootstrap_host: str | None = "10.0.0.7"
    bootstrap_port: int | None = 8998
    bootstrap_room: int | None = None


def request_dump(path: Path, scale: float) -> list[str]:
    """An SGLang request dump (``{"server_args", "requests"}``) of 400,000 × scale finished requests."""
    name = "sglang.srt.managers.io_struct"
    mods = [m for m in ("sglang", "sglang.srt", "sglang.srt.managers", name) if m not in sys.modules]
    for m in mods:
        sys.modules[m] = types.ModuleType(m)
    GenerateReqInput.__module__ = name
    sys.modules[name].GenerateReqInput = GenerateReqInput  # type: ignore[attr-defined]
    t0 = 1761773680.0
    requests = [
        (GenerateReqInput(rid=f"r{i}", bootstrap_room=i * 7919),
         {"text": "ok", "meta_info": {"id": f"r{i}", "finish_reason": {"type": "stop"}}}, t0 + i * 1e-3,
         t0 + i * 1e-3 + 0.5)
        for i in range(int(400_000 * scale))
    ]  # fmt: skip
    path.write_bytes(pickle.dumps({"server_args": None, "requests": requests}))
    for m in mods:
        del sys.modules[m]
    return []


def prometheus(path: Path, scale: float) -> list[str]:
    """A ``/metrics`` scrape of 1 M × scale samples of one gauge, with ``--captured-at``."""
    with open(path, "w") as f:
        f.write("# HELP sglang:num_running_reqs The number of running requests.\n")
        f.write("# TYPE sglang:num_running_reqs gauge\n")
        for i in range(int(1_000_000 * scale)):
            f.write(f'sglang:num_running_reqs{{model_name="m",tp_rank="{i % 8}",req="{i}"}} {i % 64}.0\n')
    return ["--captured-at", "2025-10-29 21:40:10"]


SHAPES: dict[str, tuple[str, Callable[[Path, float], list[str]]]] = {
    "tiny_lines": ("tiny.log", tiny_lines),
    "one_record": ("record.log", one_record),
    "export_field": ("field.export", export_field),
    "threads": ("threads.txt", threads),
    "long_line": ("line.log", long_line),
    "docker_partial": ("containers", docker_partial),
    "cri_partial": ("pods", cri_partial),
    "otlp_traces": ("spans.json", otlp_traces),
    "otlp_logs_oneline": ("logs.json", otlp_logs_oneline),
    "loki_oneline": ("loki.json", loki_oneline),
    "request_dump": ("2025-10-29_21-34-49.pkl", request_dump),
    "prometheus": ("metrics.txt", prometheus),
}


def _size(path: Path) -> int:
    """Bytes of a file, or of every file under a folder."""
    return (
        path.stat().st_size
        if path.is_file()
        else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    )


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
    print(f"| {'shape':<17} | {'input MB':>8} | {'wall s':>6} | {'CPU s':>6} | {'RSS largest':>11} | "
          f"{'RSS tree':>8} | {'exit':>4} | bound |")  # fmt: skip
    print(f"|{'-' * 19}|{'-' * 10}|{'-' * 8}|{'-' * 8}|{'-' * 13}|{'-' * 10}|{'-' * 6}|-------|")
    missed = 0
    for name in names:
        file, make = SHAPES[name]
        src, out = args.work / file, args.work / f"out-{name}"
        shutil.rmtree(src, ignore_errors=True) if src.is_dir() else src.unlink(missing_ok=True)
        if file in ("containers", "pods"):
            src.mkdir(parents=True)
        extra = make(src, args.scale)
        shutil.rmtree(out, ignore_errors=True)
        run = measure(name, [sys.executable, "-m", "logcorr.cli", "ingest", str(src), "-o", str(out), *extra])
        ok = run.rss_largest <= BOUND and run.rc in (0, 3)
        missed += not ok
        print(
            f"| {name:<17} | {_size(src) / 1e6:>8.1f} | {run.wall:>6.1f} | {run.cpu:>6.1f} | "
            f"{gb(run.rss_largest):>11} | {gb(run.rss_tree):>8} | {run.rc:>4} | {'ok' if ok else 'MISSED'} |"
        )
        shutil.rmtree(src) if src.is_dir() else src.unlink()
        shutil.rmtree(out, ignore_errors=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
