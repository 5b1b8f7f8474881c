#!/usr/bin/env python3
"""Benchmark ``logcorr ingest`` against the floor tools, side by side, on one synthetic day.

Generates a day with ``bench/make_day.py`` (or reuses a folder it made), then runs each command
as a fresh child process and prints ONE table: wall time, entries/s and peak RSS for

(a) ``journalctl --directory DIR/journal -o export > /dev/null`` (the floor for reading a binary
    journal) and ``logcorr ingest DIR/journal -o OUT``, and their ratio;
(b) DuckDB's plain ``COPY (SELECT * FROM read_json('DIR/day.json')) TO '….parquet'`` (in a child
    python) and ``logcorr ingest DIR/day.json -o OUT``, and their ratio. When DuckDB's plain call
    fails (its schema sample of 20,480 lines misses a key that occurs later, e.g. ``UNIT`` on
    systemd's own lines), the failure is shown and ``read_json(…, sample_size=-1)`` is timed as
    the baseline instead;
(c) each saved query ``queries/*.sql`` run on ``OUT/logcorr.duckdb`` (of the journal ingest) in a
    fresh child, time of the query alone; skipped with a note when there is no DuckDB file or no
    saved query yet;
(d) with ``--only …d``: the renderers (``logcorr timeline``, ``logcorr export``) on the journal
    ingest's OUT, see ``bench_render.py``;
(e) with (a): what ``OUT/logcorr.duckdb`` costs: ``logcorr database`` with the tables copied in (the
    ingest's default) and with ``--no-embed`` (views), wall time and file size beside the Parquet
    tables' size, on the journal ingest's OUT.

Targets (issue 7) are printed beside the figures: journal ingest ≤ 1.25× journalctl; json ingest
≤ 1.5× DuckDB; peak RSS ≤ 1 GB; each query < 1 s (at 5 M entries).

"CPU s" is user + system time of the whole process tree (the ingest and its journalctl child), so
CPU s above wall s means both cores worked; under a busy machine wall time grows, CPU time much less.
Peak RSS is measured two ways: "largest" is ``ru_maxrss`` of the run as ``/usr/bin/time -f %M``
reports it (the largest single process of the tree, e.g. python or its journalctl child); "tree" is
the sum of VmRSS over the whole process tree, sampled every 100 ms from /proc (shared pages counted
once per process, so it errs high). ``/usr/bin/time`` comes from the Debian package ``time``
(``apt-get install time``); without it, a small python wrapper reads ``getrusage(RUSAGE_CHILDREN)``.

Before each run, the input files are read once (page cache warm for every command alike) and the
output folder is removed. "entries/s" is input entries (meta.json of the day) per wall second. For
logcorr runs, the table also shows what landed in OUT (``events`` rows and the lines they hold) so a
fast run that lost lines is visible.

Usage::

    python bench/bench_ingest.py --entries 1000000                  # generate into /tmp, then run
    python bench/bench_ingest.py --entries 1000000 --reuse /tmp/logcorr-day-1000000
    python bench/bench_ingest.py --reuse DIR --only a --json-out results.json
    python bench/bench_ingest.py --reuse DIR --repeat 3              # median of three runs each
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import GB, Run, ensure_day, gb, ingest_run, last_error_line, measure, warm  # noqa: E402

ROOT = HERE.parent
TARGET_JOURNAL_RATIO = 1.25
TARGET_JSON_RATIO = 1.5
TARGET_RSS = 1 * GB
TARGET_QUERY_S = 1.0

DUCKDB_COPY = """
import sys, time, duckdb
src, dst, sample = sys.argv[1], sys.argv[2], sys.argv[3]
opts = "" if sample == "default" else ", sample_size=-1"
duckdb.sql(f"COPY (SELECT * FROM read_json('{src}'{opts})) TO '{dst}' (FORMAT parquet)")
"""

RUN_QUERY = """
import json, sys, time, duckdb
db, sql_path = sys.argv[1], sys.argv[2]
sql = open(sql_path).read()
con = duckdb.connect(db, read_only=True)
t = time.perf_counter()
rows = con.execute(sql).fetchall()
print(json.dumps({"seconds": time.perf_counter() - t, "rows": len(rows)}))
"""


def median_run(runs: list[Run]) -> Run:
    """The run of median wall time, its note naming the spread when there were several (this shared
    machine's figures move ±20 % from run to run)."""
    ordered = sorted(runs, key=lambda r: r.wall)
    mid = ordered[len(ordered) // 2]
    if len(ordered) > 1:
        spread = f"median of {len(ordered)} runs, {ordered[0].wall:.1f}-{ordered[-1].wall:.1f} s"
        mid.note = f"{mid.note}; {spread}" if mid.note else spread
    return mid


def duckdb_run(src: Path, dst: Path) -> Run:
    """DuckDB's plain json load; if it fails, the same with a full-file schema scan."""
    warm(src)
    dst.unlink(missing_ok=True)
    plain = measure(
        "duckdb COPY read_json → parquet", [sys.executable, "-c", DUCKDB_COPY, str(src), str(dst), "default"]
    )
    if plain.rc == 0:
        return plain
    reason = last_error_line(plain.stderr)
    dst.unlink(missing_ok=True)
    full = measure(
        "duckdb COPY read_json(sample_size=-1)",
        [sys.executable, "-c", DUCKDB_COPY, str(src), str(dst), "full"],
    )
    full.note = f"plain read_json failed after {plain.wall:.1f} s: {reason}"
    return full


def query_runs(out: Path) -> tuple[list[Run], str]:
    """Time each saved query on ``out/logcorr.duckdb``; returns the runs and a note when skipped."""
    sqls = sorted((ROOT / "queries").glob("*.sql"))
    db = out / "logcorr.duckdb"
    if not sqls:
        return [], "no saved query in queries/*.sql yet"
    if not db.exists():
        return [], f"{db} not present (no DuckDB file written by this ingest yet)"
    runs = []
    for sql in sqls:
        run = measure(
            f"query {sql.stem}",
            [sys.executable, "-c", RUN_QUERY, str(db), str(sql)],
            cwd=out,
            capture_stdout=True,
        )
        if run.rc == 0 and run.stdout.strip():
            got = json.loads(run.stdout.strip().splitlines()[-1])
            run.note = f"{got['rows']} rows"
            run.out_rows = {"query_s": got["seconds"], "rows": got["rows"]}
        else:
            run.note = f"failed: {last_error_line(run.stderr)}"
        runs.append(run)
    return runs, ""


def embed_cost(out: Path) -> str:
    """Part (e): the DuckDB file's cost on ``out``, as a small table."""
    parquet = sum(f.stat().st_size for f in out.rglob("*.parquet"))
    rows = [
        f"(e) OUT/logcorr.duckdb at {parquet / 1e6:,.0f} MB of Parquet tables",
        "",
        "| file | wall s | MB |",
        "|---|---|---|",
    ]
    for flag, what in (
        ("--embed", "tables copied in"),
        ("--no-embed", "views over the Parquet files (default)"),
    ):
        run = measure(
            f"database {flag}", [sys.executable, "-m", "logcorr.cli", "database", "-d", str(out), flag]
        )
        size = (out / "logcorr.duckdb").stat().st_size / 1e6 if run.rc == 0 else float("nan")
        rows.append(f"| {what} | {run.wall:.1f} | {size:,.1f} |")
    return "\n".join(rows)


def _verdict(ok: bool | None) -> str:
    return "" if ok is None else ("ok" if ok else "MISSED")


def pair_ratios(floors: list[Run], ours: list[Run]) -> list[float]:
    """ours / floor wall time of each run and the floor run just before it, sorted: on a machine whose
    speed drifts (±20 % here), the two runs of a pair saw about the same machine."""
    return sorted(o.wall / f.wall for f, o in zip(floors, ours, strict=True) if f.wall and not (f.rc or o.rc))


def render(
    meta: dict, day: Path, a: list[Run], b: list[Run], q: list[Run], q_note: str, pairs: dict | None = None
) -> str:
    """The one table: rows per command, ratios and targets beside the figures."""
    n = meta["entries"]
    head = (
        f"logcorr ingest benchmark: {n:,} entries, {day} "
        f"(export {meta['files'].get('day.export', 0) / 1e6:,.0f} MB, json {meta['files'].get('day.json', 0) / 1e6:,.0f} MB)\n"
        f"machine: {os.cpu_count()} cores, python {platform.python_version()}, {_versions()}; "
        f"load average {meta.get('load_before', '?')} before, {' '.join(f'{x:.1f}' for x in os.getloadavg())} after\n"
    )
    cols = (
        f"{'':4}{'command':<44}{'wall s':>9}{'CPU s':>8}{'entries/s':>12}{'RSS largest':>13}{'RSS tree':>11}"
        f"  {'target / note'}"
    )
    lines = [head, cols, "-" * len(cols)]

    def row(tag: str, r: Run, target: str = "") -> None:
        if r.rc != 0:
            lines.append(
                f"{tag:<4}{r.label:<44}{'FAILED':>9}{'':>8}{'':>12}{'':>13}{'':>11}  exit {r.rc}: "
                f"{last_error_line(r.stderr)}"
            )
            return
        rate = n / r.wall if r.wall else 0
        lines.append(
            f"{tag:<4}{r.label:<44}{r.wall:>9.2f}{r.cpu:>8.1f}{rate:>12,.0f}{gb(r.rss_largest):>13}"
            f"{gb(r.rss_tree):>11}  {target}"
        )
        if r.note:
            lines.append(f"{'':8}note: {r.note}")
        if r.anon_tree and r.anon_tree < r.rss_tree * 0.95:  # journalctl's share: pages of the journal files
            lines.append(
                f"{'':8}note: RSS tree without mapped files' pages (the journal files journalctl maps):"
                f" {gb(r.anon_tree)}"
            )
        if r.out_rows and "events" in r.out_rows:
            lost = n - r.out_rows.get("lines", 0)
            lines.append(
                f"{'':8}OUT: events {r.out_rows.get('events', 0):,} rows holding {r.out_rows.get('lines', 0):,} "
                f"lines ({'none lost' if lost == 0 else f'{lost:+,} vs input entries'}); "
                + ", ".join(f"{k} {v:,}" for k, v in r.out_rows.items() if k not in ("events", "lines") and v)
            )

    def ratio(tag: str, floor: Run, ours: Run, target: float, key: str) -> None:
        if floor.rc or ours.rc or not floor.wall:
            lines.append(f"{tag:<4}{'ratio':<44}{'n/a':>9}")
            return
        x = ours.wall / floor.wall
        cpu_x = ours.cpu / floor.cpu if floor.cpu else float("nan")
        rss_ok = max(ours.rss_tree, ours.rss_largest) <= TARGET_RSS
        lines.append(
            f"{tag:<4}{'ratio logcorr / floor':<44}{x:>8.2f}×{cpu_x:>7.2f}×{'':>12}{'':>13}{'':>11}  "
            f"target ≤ {target}× {_verdict(x <= target)}; logcorr RSS ≤ 1 GB {_verdict(rss_ok)}"
        )
        each = (pairs or {}).get(key, [])
        if len(each) > 1:
            median = each[len(each) // 2]
            lines.append(
                f"{'':8}note: ratio of each run to the floor run just before it: "
                + ", ".join(f"{r:.2f}×" for r in each)
                + f" (median {median:.2f}×, target {_verdict(median <= target)})"
            )

    if a:
        row("(a)", a[0], "the floor for reading the binary journal")
        row("", a[1], f"target ≤ {TARGET_JOURNAL_RATIO}× journalctl, RSS ≤ 1 GB")
        ratio("", a[0], a[1], TARGET_JOURNAL_RATIO, "a")
    if b:
        row("(b)", b[0], "the ecosystem's plain loader")
        row("", b[1], f"target ≤ {TARGET_JSON_RATIO}× DuckDB, RSS ≤ 1 GB")
        ratio("", b[0], b[1], TARGET_JSON_RATIO, "b")
    if q or q_note:
        lines.append(
            f"(c) saved queries on OUT/logcorr.duckdb (time of the query alone, fresh process; target < {TARGET_QUERY_S:.0f} s)"
        )
        if q_note:
            lines.append(f"{'':8}skipped: {q_note}")
        for r in q:
            qs = r.out_rows.get("query_s")
            if qs is None:
                lines.append(f"{'':4}{r.label:<44}{'FAILED':>9}{'':>8}{'':>12}{'':>13}{'':>11}  {r.note}")
            else:
                lines.append(
                    f"{'':4}{r.label:<44}{qs:>9.3f}{'':>8}{'':>12}{gb(r.rss_largest):>13}{gb(r.rss_tree):>11}  "
                    f"{r.note}; < 1 s {_verdict(qs < TARGET_QUERY_S)}"
                )
    return "\n".join(lines)


def _versions() -> str:
    parts = []
    try:
        jv = subprocess.run(["journalctl", "--version"], capture_output=True, text=True, check=False)
        parts.append(jv.stdout.split("(")[0].strip() or "journalctl ?")
    except OSError:
        parts.append("no journalctl")
    for mod in ("duckdb", "polars", "pyarrow"):
        try:
            parts.append(f"{mod} {__import__(mod).__version__}")
        except ImportError:
            parts.append(f"no {mod}")
    return ", ".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, help="size of the day to generate (default 1,000,000)")
    ap.add_argument("--reuse", type=Path, help="folder made by make_day.py (generated there if absent)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--work", type=Path, help="where OUT folders go (default: a temp folder, removed)")
    ap.add_argument(
        "--only",
        default="abc",
        help="which parts: letters of abcd (default abc; d: the renderers, bench_render.py, on the journal's OUT)",
    )
    ap.add_argument("--json-out", type=Path, help="also write every measurement as JSON here")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each ingest and its floor N times, alternately; show the median",
    )
    args = ap.parse_args(argv)
    if not args.only or set(args.only) - set("abcd"):
        ap.error("--only: letters of abcd, e.g. ab or abcd")
    if args.entries is None and args.reuse is None:
        args.entries = 1_000_000
    if args.entries is not None and args.entries < 1:
        ap.error("--entries must be at least 1")
    if not shutil.which("journalctl"):
        ap.error("journalctl not found: apt-get install systemd")
    day, meta = ensure_day(args.entries, args.reuse, args.seed)
    meta["load_before"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    work = args.work or Path(tempfile.mkdtemp(prefix="logcorr-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    a: list[Run] = []
    b: list[Run] = []
    q: list[Run] = []
    q_note = ""
    pairs: dict[str, list[float]] = {}
    try:
        if "a" in args.only or "c" in args.only or "d" in args.only:
            journal = day / "journal"
            warm(journal)
            floors, ours_runs = [], []
            for _ in range(max(1, args.repeat)):
                floors.append(
                    measure(
                        "journalctl -o export > /dev/null",
                        ["journalctl", "--directory", str(journal), "-o", "export"],
                    )
                )
                ours_runs.append(ingest_run("logcorr ingest DIR/journal", journal, work / "out-journal"))
            pairs["a"] = pair_ratios(floors, ours_runs)
            floor, ours = median_run(floors), median_run(ours_runs)
            a = [floor, ours]
            print(f"(a) done: journalctl {floor.wall:.1f} s, logcorr {ours.wall:.1f} s", file=sys.stderr)
        if "b" in args.only:
            src = day / "day.json"
            floors, ours_runs = [], []
            for _ in range(max(1, args.repeat)):
                floors.append(duckdb_run(src, work / "duckdb.parquet"))
                ours_runs.append(ingest_run("logcorr ingest DIR/day.json", src, work / "out-json"))
            pairs["b"] = pair_ratios(floors, ours_runs)
            floor, ours = median_run(floors), median_run(ours_runs)
            b = [floor, ours]
            print(f"(b) done: duckdb {floor.wall:.1f} s, logcorr {ours.wall:.1f} s", file=sys.stderr)
        if "c" in args.only:
            if a and a[1].rc == 0:
                q, q_note = query_runs(work / "out-journal")
            else:
                q_note = "the journal ingest failed, no OUT to query"
        d_table = ""
        if a and a[1].rc == 0:
            d_table += "\n\n" + embed_cost(work / "out-journal")
        if "d" in args.only:
            from bench_render import render_runs, render_table

            if a and a[1].rc == 0:
                d_runs = render_runs(work / "out-journal", work)
                d_table = "\n\n" + render_table(meta["entries"], work / "out-journal", d_runs, a[1])
            else:
                d_table = "\n\n(d) skipped: the journal ingest failed, no OUT to draw"
        if "a" not in args.only:
            a = []
        table = render(meta, day, a, b, q, q_note, pairs) + d_table
        print(table)
        if args.json_out:
            args.json_out.write_text(
                json.dumps(
                    {
                        "entries": meta["entries"],
                        "day": str(day),
                        "a": [asdict(r) for r in a],
                        "b": [asdict(r) for r in b],
                        "queries": [asdict(r) for r in q],
                        "query_note": q_note,
                        "table": table,
                    },
                    indent=2,
                    default=str,
                )
                + "\n"
            )
        failed = [r for r in a + b if r.rc != 0]
        return 1 if failed else 0
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
