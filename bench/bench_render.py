#!/usr/bin/env python3
"""Benchmark the renderers, ``logcorr timeline`` and ``logcorr export``, on the OUT of a synthetic day.

Each command runs as a fresh child process (``common.measure``: wall and CPU time of the whole
process tree, peak RSS of its largest process and of the tree sampled every 100 ms) and the table
shows the size of what it wrote:

(d) ``logcorr timeline -d OUT`` (the whole day: runs), the same with a 35-minute ``--since/--until``
    window around the day's middle (the incident of ``make_day.py``), ``logcorr export`` (the whole
    day: runs, counters, instants), ``logcorr export`` with a 2-minute window (one slice per batch
    line), and ``logcorr export --detail`` over the 35-minute window.

Targets (issue 21): peak RSS ≤ 1 GB for both at 5 M entries, flat from 1 M to 5 M; the default
trace under 100 MB; the page under 10 MB.

OUT is an ingest output of a day made by ``make_day.py``: pass it with ``--out``, or pass ``--reuse``
(and ``--entries``) to generate and ingest one as ``bench_ingest.py`` does (the ingest is measured
too, so the table shows it beside the renderers). ``bench_ingest.py --only d`` runs this after its
own journal ingest.

Usage::

    python bench/bench_render.py --out /tmp/out-5m            # an OUT ingested before
    python bench/bench_render.py --entries 1000000 --work /tmp/bench   # generate, ingest, render
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import GB, Run, ensure_day, gb, ingest_run, last_error_line, measure  # noqa: E402

TARGET_RSS = 1 * GB
TARGET_TRACE = 100_000_000
TARGET_PAGE = 10_000_000


def _logcorr(*args: str) -> list[str]:
    return [sys.executable, "-m", "logcorr.cli", *args]


def _middle(out: Path) -> datetime:
    """The middle of the data's time span (manifest), where make_day.py puts the incident."""
    first, last = json.loads((out / "manifest.json").read_text())["time_span"]
    a, b = (datetime.fromisoformat(t.replace("Z", "+00:00")) for t in (first, last))
    return (a + (b - a) / 2).astimezone(UTC)


def render_runs(out: Path, work: Path) -> list[tuple[Run, Path, str]]:
    """Measure each renderer command on ``out``; returns (run, file written, target) per command."""
    mid = _middle(out)

    def window(minutes: float) -> list[str]:
        a, b = mid - timedelta(minutes=minutes / 2), mid + timedelta(minutes=minutes / 2)
        return ["--since", a.strftime("%Y-%m-%d %H:%M:%S"), "--until", b.strftime("%Y-%m-%d %H:%M:%S")]

    page, trace = "page < 10 MB, RSS ≤ 1 GB", "trace < 100 MB, RSS ≤ 1 GB"
    cases = [
        ("timeline (whole day)", "t-day.html", ["timeline"], page),
        ("timeline --since/--until (35 min)", "t-35m.html", ["timeline", *window(35)], page),
        ("export chrome-trace (whole day)", "x-day.json", ["export"], trace),
        ("export chrome-trace (2 min: per line)", "x-2m.json", ["export", *window(2)], "RSS ≤ 1 GB"),
        ("export --detail (35 min)", "x-35m-detail.json", ["export", "--detail", *window(35)], "RSS ≤ 1 GB"),
    ]
    done = []
    for label, name, args, target in cases:
        path = work / name
        path.unlink(missing_ok=True)
        run = measure(label, _logcorr(*args, "-d", str(out), "-o", str(path)), capture_stdout=True)
        run.note = run.stdout.strip().splitlines()[-1] if run.rc == 0 and run.stdout.strip() else ""
        done.append((run, path, target))
        print(f"  {label}: {run.wall:.1f} s", file=sys.stderr)
    return done


def render_table(n: int, out: Path, runs: list[tuple[Run, Path, str]], ingest: Run | None = None) -> str:
    """The table: a row per command with wall, CPU, RSS (largest process, tree), output size, verdict."""
    head = (
        f"(d) renderers on {out} ({n:,} entries); {os.cpu_count()} cores, load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} after"
    )
    cols = (
        f"{'command':<42}{'wall s':>8}{'CPU s':>8}{'RSS largest':>13}{'RSS tree':>11}{'output':>11}  target"
    )
    lines = [head, cols, "-" * len(cols)]
    if ingest is not None:
        lines.append(
            f"{'logcorr ingest DIR/journal':<42}{ingest.wall:>8.1f}{ingest.cpu:>8.1f}{gb(ingest.rss_largest):>13}"
            f"{gb(ingest.rss_tree):>11}{'':>11}"
        )
    for r, path, target in runs:
        if r.rc != 0:
            lines.append(f"{r.label:<42}{'FAILED':>8}  exit {r.rc}: {last_error_line(r.stderr)}")
            continue
        size = path.stat().st_size if path.exists() else 0
        rss = max(r.rss_largest, r.rss_tree)
        ok = rss <= TARGET_RSS
        if "trace <" in target:
            ok = ok and size < TARGET_TRACE
        if "page <" in target:
            ok = ok and size < TARGET_PAGE
        lines.append(
            f"{r.label:<42}{r.wall:>8.1f}{r.cpu:>8.1f}{gb(r.rss_largest):>13}{gb(r.rss_tree):>11}"
            f"{size / 1e6:>9.1f}MB  {target}: {'ok' if ok else 'MISSED'}"
        )
        if r.note:
            lines.append(f"{'':4}{r.note}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="an ingest output of a make_day.py day")
    ap.add_argument("--entries", type=int, help="generate (or reuse) a day of this size and ingest it")
    ap.add_argument("--reuse", type=Path, help="folder made by make_day.py")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--work", type=Path, help="where outputs go (default: a temp folder)")
    ap.add_argument("--json-out", type=Path, help="also write every measurement as JSON here")
    args = ap.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="logcorr-bench-render-"))
    work.mkdir(parents=True, exist_ok=True)
    ingest = None
    if args.out is not None:
        out = args.out
        n = json.loads((out / "manifest.json").read_text()).get("rows", {}).get("events", 0)
    else:
        if args.entries is None and args.reuse is None:
            ap.error("pass --out OUT, or --entries N / --reuse DAY")
        day, meta = ensure_day(args.entries, args.reuse, args.seed)
        n = meta["entries"]
        out = work / "out-journal"
        ingest = ingest_run("logcorr ingest DIR/journal", day / "journal", out)
    runs = render_runs(out, work)
    table = render_table(n, out, runs, ingest)
    print(table)
    if args.json_out:
        rows = [dict(asdict(r), file=str(p), bytes=p.stat().st_size if p.exists() else 0) for r, p, _ in runs]
        doc = {"entries": n, "out": str(out), "runs": rows, "table": table}
        args.json_out.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return 1 if any(r.rc for r, _, _ in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
