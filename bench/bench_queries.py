#!/usr/bin/env python3
"""Time every saved query (``logcorr query NAME``) on the OUT of a synthetic day.

Each query runs three times on one connection from ``saved.connect(OUT)`` (views over OUT's Parquet
files, as ``logcorr query`` opens them) and the table shows the median wall time, the rows returned
and the entry count of the day. A query that needs a parameter runs with the value the day's
``meta.json`` gives (the incident's room) where it takes one, else with its defaults.

Targets (issues 17 and 18): ``known_issues`` and ``markup_leaks`` under 1 s at 5 M entries; every saved
query under 1 s CPU on the sample incident (``--sample``; the ``over`` column marks a miss).

OUT is an ingest output of a day made by ``make_day.py``: pass it with ``--out`` (and the day's folder
with ``--day`` for its entry count and room), or pass ``--day`` and ``--work`` to ingest the day's
journal first, or ``--entries`` and ``--work`` to make the day too (with ``--request-log``: the
request-log lines ``markup_leaks`` reads).

Usage::

    python bench/bench_queries.py --out /tmp/out-5m --day /tmp/day-5m      # an OUT ingested before
    python bench/bench_queries.py --day /tmp/day-5m --work /tmp/bq          # ingest the day's journal, then time
    python bench/bench_queries.py --entries 1000000 --request-log --work /tmp/bq   # make, ingest, time
    python bench/bench_queries.py --sample --work /tmp/bq                       # the sample incident
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def time_queries(
    out: Path, names: list[str] | None = None, repeat: int = 3, room: str | None = None
) -> list[dict]:
    """``[{query, rows, median_s, runs_s, cpu_s, error}]`` for each saved query (or those in
    ``names``), by name; wall times in seconds of ``saved.query`` on one shared connection (the first
    run included in the median) and the median CPU seconds of this process over a run (DuckDB's
    threads included: the figure a busy machine does not inflate). ``room`` is passed to queries that
    take a ``room`` parameter."""
    from logcorr.analysis import saved

    queries = saved.load_saved()
    con = saved.connect(out, queries)
    rows = []
    for name in names or sorted(queries):
        params = {"room": room} if room and "room" in saved.all_parameters(queries[name], queries) else None
        runs, cpus, n, error = [], [], None, None
        for _ in range(repeat):
            began, cpu = time.perf_counter(), _cpu()
            try:
                n = saved.query(out, name, params, saved=queries, con=con).height
            except Exception as e:  # noqa: BLE001 - a query that cannot run here is reported, not fatal
                error = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
                break
            runs.append(time.perf_counter() - began)
            cpus.append(_cpu() - cpu)
        rows.append(
            {
                "query": name,
                "rows": n,
                "median_s": round(statistics.median(runs), 3) if runs else None,
                "runs_s": [round(r, 3) for r in runs],
                "cpu_s": round(statistics.median(cpus), 3) if cpus else None,
                "error": error,
            }
        )
    return rows


def _cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def entries_of(out: Path, meta: dict | None) -> int:
    """The day's entry count: ``meta.json``'s ``entries`` when the day is known, else the lines OUT
    holds (``sum(events.n_lines)``: every record with the lines re-joined into it)."""
    if meta and meta.get("entries"):
        return int(meta["entries"])
    from logcorr.analysis import saved

    return int(saved.query(out, "SELECT sum(n_lines) AS n FROM events")["n"][0] or 0)


def ingest_sample(out: Path) -> Path:
    """Ingest the sample incident as the tests do (``sample_logs/journal`` and the py-spy round of
    21:40:10 with its capture time) into ``out`` (replaced); returns ``out``."""
    import shutil

    from logcorr.ingest import ingest

    sample = HERE.parent / "sample_logs"
    shutil.rmtree(out, ignore_errors=True)
    pyspy = sorted((sample / "pyspy").glob("*_214010.txt"))
    ingest([sample / "journal", *pyspy], out, captured_at="2025-10-29 21:40:10")
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="an ingest output (OUT) to time the queries on")
    ap.add_argument("--day", type=Path, help="a make_day.py folder: ingest its journal/ into WORK/out first")
    ap.add_argument("--entries", type=int, help="make a day of this many entries into WORK/day first")
    ap.add_argument("--request-log", action="store_true", help="with --entries: make_day.py --request-log")
    ap.add_argument(
        "--sample", action="store_true",
        help="ingest sample_logs/ (journal and the 21:40:10 py-spy round) into WORK/sample-out and time that",
    )  # fmt: skip
    ap.add_argument("--work", type=Path, help="folder for the day and the OUT made here")
    ap.add_argument("--query", action="append", help="only this saved query (repeatable)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args(argv)
    if not args.out and not args.day and not args.entries and not args.sample:
        ap.error("give --out, --day, --entries or --sample")
    if ((args.day and not args.out) or args.entries or args.sample) and not args.work:
        ap.error("--entries, --sample, and --day without --out, need --work")
    out, day = args.out, args.day
    if args.sample:
        out = ingest_sample(args.work / "sample-out")
    if args.entries:
        from make_day import make_day

        day = args.work / "day"
        make_day(
            args.entries, day, json_capture=False, request_log=0.02 if args.request_log else 0.0,
            log=lambda s: print(s, file=sys.stderr),
        )  # fmt: skip
    if day and not out:
        from logcorr.ingest import ingest

        out = args.work / "out"
        began = time.perf_counter()
        ingest([day / "journal"], out)
        print(
            f"ingested {day / 'journal'} into {out} in {time.perf_counter() - began:.1f} s", file=sys.stderr
        )
    meta = json.loads((day / "meta.json").read_text()) if day and (day / "meta.json").exists() else None
    room = str((meta or {}).get("incident", {}).get("room") or "") or None
    rows = time_queries(out, args.query, args.repeat, room)
    n = entries_of(out, meta)
    if args.json:
        print(json.dumps({"out": str(out), "entries": n, "queries": rows}, indent=2))
        return 0
    load = os.getloadavg()[0]
    print(f"{out}: {n:,} entries; median of {args.repeat} runs per saved query; load average {load:.1f}")
    print(f"| {'query':<24} | {'rows':>9} | {'median s':>8} | {'CPU s':>6} | over | runs s |")
    print(f"|{'-' * 26}|{'-' * 11}|{'-' * 10}|{'-' * 8}|------|---|")
    for r in rows:
        runs = r["error"] or ", ".join(f"{x:.3f}" for x in r["runs_s"])
        median = "-" if r["median_s"] is None else f"{r['median_s']:.3f}"
        rows_n = "-" if r["rows"] is None else f"{r['rows']:,}"
        cpu = "-" if r["cpu_s"] is None else f"{r['cpu_s']:.3f}"
        over = "yes" if (r["cpu_s"] or 0) >= 1.0 else ""
        print(f"| {r['query']:<24} | {rows_n:>9} | {median:>8} | {cpu:>6} | {over:>4} | {runs} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
