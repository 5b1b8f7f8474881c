#!/usr/bin/env python3
"""The fleet figure (issue 49): N hosts' OUTs combined into one folder, as docs/many_hosts.md says.

Each host is a synthetic day of ``make_day.py`` with its own seed and host name (``gpu-node-00`` …,
journald's ``_HOSTNAME``, so each OUT is the partition of its host), ``--entries`` journal entries
(default 20,000: 64 hosts are 1.28 M entries, generated and ingested in about 5 minutes on a busy
2-core machine), written as an export capture (no binary journal: the fleet figure is about what
reads the combined folder, not the ingest) and ingested into its own OUT, once, under
``WORK/outs/`` (kept and reused by later runs with the same ``--entries``).

Then, for each N of ``--hosts`` (default 4, 16, 64), the first N OUTs are combined into
``WORK/all-N`` by the recipe of docs/many_hosts.md (``--recipe``: ``combine``, today's, is
``logcorr combine OUT… -o ALL``; ``copy`` is the recipe before issue 49: ``cp -r`` each OUT into one
folder, then ``logcorr database -d ALL``), and timed, each in a fresh child process:

* every saved query: ``bench_queries.py --out ALL --repeat 3`` (one connection, as ``logcorr query``
  opens OUT; median wall seconds of three runs), and the connection itself (views over the tables);
* ``logcorr report -d ALL`` and ``logcorr timeline -d ALL``: wall seconds and peak RSS of the process
  tree (``common.measure``).

The table shows each figure per N side by side, and its growth from the smallest N to the largest
beside the growth of the rows (N); a figure growing faster than the rows is marked. Targets: at 64
hosts every saved query under 2 s; report and timeline at most 1 GB peak RSS; each figure growing no
faster than linearly in the rows.

Usage::

    python bench/bench_fleet.py --work /tmp/fleet                      # 4, 16, 64 hosts of 20,000 entries
    python bench/bench_fleet.py --work /tmp/fleet --hosts 4,16 --entries 40000
    python bench/bench_fleet.py --work /tmp/fleet --recipe copy        # the recipe before issue 49
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import GB, measure  # noqa: E402


def host_name(i: int) -> str:
    """The i-th host of the fleet (``gpu-node-00`` …): its ``_HOSTNAME`` and so its origin."""
    return f"gpu-node-{i:02d}"


def build_hosts(work: Path, n: int, entries: int, log=print) -> list[Path]:
    """Make and ingest the first ``n`` hosts' days (seed ``1000 + i``, ``host_name(i)``) into
    ``WORK/outs/<host>``; an OUT already there of the same ``entries`` is kept. Returns the OUTs."""
    from make_day import make_day

    from logcorr.ingest import ingest

    outs = []
    for i in range(n):
        name = host_name(i)
        day, out = work / "days" / name, work / "outs" / name
        made = out / "fleet.json"
        if not (made.exists() and json.loads(made.read_text()).get("entries") == entries):
            began = time.perf_counter()
            shutil.rmtree(out, ignore_errors=True)
            make_day(
                entries, day, seed=1000 + i, journal=False, json_capture=False, host=name, log=lambda s: None
            )
            ingest([day / "day.export"], out)
            shutil.rmtree(day, ignore_errors=True)  # the OUT is what the figure reads
            made.write_text(json.dumps({"entries": entries, "host": name}) + "\n")
            log(f"{name}: {entries:,} entries made and ingested in {time.perf_counter() - began:.1f} s")
        outs.append(out)
    return outs


def _logcorr(*args: str) -> list[str]:
    return [sys.executable, "-m", "logcorr.cli", *args]


def combine(outs: list[Path], dest: Path, recipe: str) -> float:
    """Combine ``outs`` into ``dest`` (replaced) by ``recipe`` (see the module docstring); returns
    the wall seconds of the recipe's logcorr command (the copies not counted for ``copy``)."""
    shutil.rmtree(dest, ignore_errors=True)
    if recipe == "copy":
        dest.mkdir(parents=True)
        for out in outs:
            subprocess.run(["cp", "-r", f"{out}/.", f"{dest}/"], check=True)
        cmd = _logcorr("database", "-d", str(dest))
    else:
        cmd = _logcorr("combine", *map(str, outs), "-o", str(dest))
    began = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - began


def figures(all_: Path, work: Path) -> dict:
    """Every figure of one combined folder: the saved queries' median seconds, the connection's
    seconds, report and timeline wall seconds and peak RSS (bytes), the part files and rows."""
    got = subprocess.run(
        [sys.executable, str(HERE / "bench_queries.py"), "--out", str(all_), "--repeat", "3", "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    queries = {q["query"]: q for q in json.loads(got.stdout)["queries"]}
    connect = subprocess.run(
        [sys.executable, "-c", CONNECT_TIMER, str(all_)], check=True, capture_output=True, text=True
    )
    fig = {
        "parts": sum(1 for _ in all_.glob("*/**/*.parquet")),
        "rows": json.loads(connect.stdout)["rows"],
        "connect_s": json.loads(connect.stdout)["seconds"],
        "queries": {k: (q["median_s"], q["error"], q["cpu_s"]) for k, q in queries.items()},
    }
    report = measure("report", _logcorr("report", "-d", str(all_), "-o", str(work / "report.md")))
    page = work / f"{all_.name}.html"
    timeline = measure("timeline", _logcorr("timeline", "-d", str(all_), "-o", str(page)))
    for key, run in (("report", report), ("timeline", timeline)):
        fig[key] = (run.wall, run.rss_tree, run.rc, run.cpu)
        if run.rc:
            print(f"{key} on {all_} exited {run.rc}: {run.stderr.strip()[-300:]}", file=sys.stderr)
    fig["page_bytes"] = page.stat().st_size if page.exists() else 0
    return fig


CONNECT_TIMER = """
import json, sys, time
from pathlib import Path
from logcorr.analysis import saved
began = time.perf_counter()
con = saved.connect(Path(sys.argv[1]))
took = time.perf_counter() - began
rows = con.execute("SELECT count(*) FROM events").fetchone()[0]
print(json.dumps({"seconds": round(took, 3), "rows": rows}))
"""


def table(ns: list[int], figs: dict[int, dict]) -> str:
    """The figures per N side by side, with their growth from the first N to the last against the
    rows' growth (``!`` marks a figure that grows faster than the rows, or a target missed)."""
    lo, hi = ns[0], ns[-1]
    rows_growth = figs[hi]["rows"] / max(figs[lo]["rows"], 1)
    head = (
        "| figure | "
        + " | ".join(f"{n} hosts" for n in ns)
        + f" | growth {lo}→{hi} (rows ×{rows_growth:.1f}) |"
    )
    lines = [head, "|" + "---|" * (len(ns) + 2)]

    def row(label: str, values: list[float | None], fmt, limit: float | None = None) -> None:
        cells = [fmt(v) if v is not None else "-" for v in values]
        if limit is not None and values[-1] is not None and values[-1] > limit:
            cells[-1] += " !"
        a, b = values[0], values[-1]
        growth = b / a if a and b else None
        grow = "-" if growth is None else f"×{growth:.1f}" + (" !" if growth > rows_growth * 1.1 else "")
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {grow} |")

    secs = lambda v: f"{v:.2f} s"  # noqa: E731
    row("rows of events", [figs[n]["rows"] for n in ns], lambda v: f"{v:,}")
    row("Parquet part files", [figs[n]["parts"] for n in ns], lambda v: f"{v:,}")
    row("connect (views over the tables)", [figs[n]["connect_s"] for n in ns], secs)
    for q in sorted(figs[hi]["queries"]):
        vals = [figs[n]["queries"].get(q, (None, None, None))[0] for n in ns]
        row(f"`{q}`", vals, secs, 2.0)
        cpus = [figs[n]["queries"].get(q, (None, None, None))[2] for n in ns]
        row(f"`{q}` CPU", cpus, secs)
    for key in ("report", "timeline"):
        row(f"`logcorr {key}` wall", [figs[n][key][0] for n in ns], secs)
        row(f"`logcorr {key}` CPU", [figs[n][key][3] for n in ns], secs)
        row(f"`logcorr {key}` peak RSS", [figs[n][key][1] / GB for n in ns], lambda v: f"{v:.2f} GB", 1.0)
    row("timeline page", [figs[n]["page_bytes"] / 1e6 for n in ns], lambda v: f"{v:.1f} MB")
    row("combine (the recipe's logcorr command)", [figs[n]["combine_s"] for n in ns], secs)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--work", type=Path, required=True, help="folder for the hosts' OUTs and the combined ones"
    )
    ap.add_argument("--hosts", default="4,16,64", help="numbers of hosts to combine, comma-separated")
    ap.add_argument("--entries", type=int, default=20_000, help="journal entries per host")
    ap.add_argument("--recipe", choices=("combine", "copy"), default="combine")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = ap.parse_args(argv)
    ns = sorted(int(n) for n in args.hosts.split(","))
    args.work.mkdir(parents=True, exist_ok=True)
    outs = build_hosts(args.work, ns[-1], args.entries, log=lambda s: print(s, file=sys.stderr))
    figs = {}
    for n in ns:
        all_ = args.work / f"all-{n}"
        took = combine(outs[:n], all_, args.recipe)
        figs[n] = figures(all_, args.work) | {"combine_s": took}
        print(f"{n} hosts: done (load average {os.getloadavg()[0]:.1f})", file=sys.stderr)
    print(
        f"{args.entries:,} entries per host, recipe {args.recipe}; load average {os.getloadavg()[0]:.1f};"
        " saved queries: median of 3 runs on one connection"
    )
    print(table(ns, figs))
    errors = {q: e for n in ns for q, (_, e, _) in figs[n]["queries"].items() if e}
    for q, e in errors.items():
        print(f"{q}: {e}")
    if args.json:
        print(json.dumps(figs, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
