"""What the benchmarks share: measuring one command in a fresh child (wall and CPU time of the whole
process tree, peak RSS of its largest process and of the tree sampled every 100 ms), a measured
``logcorr ingest`` and the synthetic day it reads (``make_day.py``). Used by ``bench_ingest.py`` and
``bench_render.py``; run as scripts from this folder, they import it as ``common``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
GB = 1 << 30
PAGE = os.sysconf("SC_PAGE_SIZE")

RUSAGE_WRAPPER = """
import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write(f"CPU {ru.ru_maxrss} {ru.ru_utime:.2f} {ru.ru_stime:.2f} {rc}")
sys.exit(rc)
"""


@dataclass
class Run:
    """One measured command: wall seconds, peak RSS (largest process and sampled tree) and outcome."""

    label: str
    cmd: list[str]
    wall: float = 0.0
    cpu: float = 0.0  # user + system seconds of the whole tree
    rss_largest: int = 0  # bytes
    rss_tree: int = 0  # bytes
    anon_tree: int = 0  # bytes: the tree's resident memory that is no file's pages (``tree_memory``)
    rc: int = 0
    stderr: str = ""
    stdout: str = ""
    note: str = ""
    out_rows: dict = field(default_factory=dict)


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    return kids


def tree_rss(root: int) -> int:
    """Sum of resident memory (bytes) of ``root``'s descendants (``root`` itself excluded: it is the
    ``time`` wrapper)."""
    return tree_memory(root)[0]


def tree_memory(root: int) -> tuple[int, int]:
    """Resident memory (bytes) of ``root``'s descendants (``root`` excluded), whole and without the
    pages of mapped files (``/proc/PID/statm``: resident minus shared): journalctl maps the journal
    files it reads, and those pages, counted in its RSS, are the kernel's page cache of the files."""
    kids = _children_map()
    total, anon, todo = 0, 0, [(pid, root) for pid in kids.get(root, [])]
    seen: dict[int, str] = {}  # pid: its statm line
    while todo:
        pid, parent = todo.pop()
        todo += [(kid, pid) for kid in kids.get(pid, [])]
        try:
            with open(f"/proc/{pid}/statm") as f:
                seen[pid] = line = f.read()
            fields = line.split()
            # a child made by vfork (subprocess starting journalctl) shares its parent's memory until
            # it execs: the same counters, counted once (else a sample there reads the ingest twice)
            if line == seen.get(parent):
                continue
            total += int(fields[1]) * PAGE
            anon += (int(fields[1]) - int(fields[2])) * PAGE
        except (OSError, IndexError, ValueError):
            pass
    return total, anon


def measure(label: str, cmd: list[str], *, cwd: Path | None = None, capture_stdout: bool = False) -> Run:
    """Run ``cmd`` in a fresh child under ``/usr/bin/time`` (or the rusage wrapper) and measure it."""
    run = Run(label, cmd)
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf, tempfile.TemporaryFile() as err:
        if shutil.which("time") and Path("/usr/bin/time").exists():
            wrapped = ["/usr/bin/time", "-f", "CPU %M %U %S %x", "-o", tf.name, *cmd]
        else:
            wrapped = [sys.executable, "-c", RUSAGE_WRAPPER, tf.name, *cmd]
        out = subprocess.PIPE if capture_stdout else subprocess.DEVNULL
        start = time.perf_counter()
        proc = subprocess.Popen(wrapped, stdout=out, stderr=err, cwd=cwd)
        peak = peak_anon = 0
        stop = threading.Event()

        def sample() -> None:
            nonlocal peak, peak_anon
            while not stop.wait(0.1):
                rss, anon = tree_memory(proc.pid)
                peak, peak_anon = max(peak, rss), max(peak_anon, anon)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        stdout = proc.communicate()[0] if capture_stdout else None
        proc.wait()
        run.wall = time.perf_counter() - start
        stop.set()
        sampler.join()
        run.rss_tree = peak
        run.anon_tree = peak_anon
        run.rc = proc.returncode
        err.seek(0)
        run.stderr = err.read().decode(errors="replace")
        run.stdout = stdout.decode(errors="replace") if stdout else ""
        # /usr/bin/time may print "Command exited with non-zero status N" before the format line.
        m = re.search(r"^CPU (\d+) ([\d.]+) ([\d.]+) -?\d+$", tf.read(), re.MULTILINE)
        if m:
            run.rss_largest = int(m.group(1)) * 1024
            run.cpu = float(m.group(2)) + float(m.group(3))
    return run


def warm(*paths: Path) -> None:
    """Read files once so every command starts with the same (warm) page cache."""
    for p in paths:
        files = [p] if p.is_file() else [f for f in p.rglob("*") if f.is_file()]
        for f in files:
            with open(f, "rb") as fh:
                while fh.read(16 << 20):
                    pass


def logcorr_cmd(src: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "logcorr.cli", "ingest", str(src), "-o", str(out)]


def ingest_run(label: str, src: Path, out: Path) -> Run:
    """Measure one ``logcorr ingest`` and read what landed in OUT (events rows, lines)."""
    shutil.rmtree(out, ignore_errors=True)
    warm(src)
    run = measure(label, logcorr_cmd(src, out), capture_stdout=True)
    manifest = out / "manifest.json"
    if manifest.exists():
        m = json.loads(manifest.read_text())
        run.out_rows = dict(m.get("rows", {}))
        try:
            import polars as pl

            files = sorted((out / "events").rglob("*.parquet"))  # flat or hive-partitioned
            lines = pl.scan_parquet(files, hive_partitioning=False).select(pl.col("n_lines").sum()).collect()
            run.out_rows["lines"] = int(lines.item() or 0)
        except Exception as e:  # reported, not fatal: the timing stands
            run.note = f"could not count lines in OUT/events: {e}"
    return run


def last_error_line(stderr: str) -> str:
    """The line of ``stderr`` that says what went wrong (the last one naming an error)."""
    all_lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    raised = [ln for ln in all_lines if re.match(r"^[\w.]*(?:Error|Exception)\b:", ln)]
    errors = [ln for ln in all_lines if "error" in ln.lower()]
    text = (raised or errors or all_lines or ["?"])[-1]
    return text if len(text) < 220 else text[:217] + "…"


def gb(n: int) -> str:
    return f"{n / GB:.2f} GB" if n else "?"


def ensure_day(entries: int | None, reuse: Path | None, seed: int) -> tuple[Path, dict]:
    """The data folder: ``reuse`` if it holds a finished day, else a new one under /tmp."""
    day = reuse or Path(tempfile.gettempdir()) / f"logcorr-day-{entries}"
    meta_path = day / "meta.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if entries is None or meta["entries"] == entries:
            if (day / "journal").is_dir() and (day / "day.json").exists():
                return day, meta
    if reuse and entries is None:
        raise SystemExit(f"{reuse}: no finished day there (meta.json, journal/, day.json); pass --entries")
    sys.path.insert(0, str(HERE))
    from make_day import make_day

    print(f"generating {entries:,} entries into {day} …", file=sys.stderr)
    meta = make_day(entries, day, seed=seed, log=lambda s: print(f"  {s}", file=sys.stderr))
    return day, meta
