#!/usr/bin/env python3
"""Digests of every table an ingest wrote: the check that a speed-up changed no row (issue 49).

A table's digest is the SHA-256 of its rows, every column (the ``origin`` partition included), each
row as one JSON line, the lines sorted: two OUTs digest alike when their tables hold the same rows,
whatever their order or their split into part files. ``sources`` is left out of ``--cases`` and
``--day`` runs only where it names the temporary folder of the run (it never does today).

Usage::

    python bench/table_digest.py OUT                         # one OUT: a digest per table
    python bench/table_digest.py --day /tmp/day300k/day.export --save day.json
    python bench/table_digest.py --cases --save cases.json   # every file of tests/cases and
                                                             # /work/shared/cases, each ingested alone
    python bench/table_digest.py --cases --check cases.json  # the same, compared: exit 1 on a change

``--cases`` and ``--day`` ingest in this process (``logcorr.ingest.ingest``, views instead of the
DuckDB copy: the tables are the Parquet files either way); ``--check`` prints every file and table
whose digest differs from the saved one, with both row counts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
CASE_FOLDERS = (ROOT / "tests" / "cases", Path("/work/shared/cases"))


def table_digests(out: Path) -> dict[str, str]:
    """``{table: "rows:sha256"}`` for every table folder of ``out`` (see the module's docstring)."""
    found = {}
    for folder in sorted(p for p in out.iterdir() if p.is_dir() and any(p.rglob("*.parquet"))):
        df = pl.read_parquet(folder / "**" / "*.parquet", hive_partitioning=True)
        df = df.select(sorted(df.columns))
        lines = sorted(df.write_ndjson().splitlines()) if df.height else []
        sha = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:20]
        found[folder.name] = f"{df.height}:{sha}"
    return found


def ingest_digests(path: Path) -> dict[str, str]:
    """Ingest ``path`` alone into a temporary OUT and digest its tables; an ingest that raises gives
    ``{"error": its type}`` (compared like a digest)."""
    from logcorr.ingest import ingest

    with tempfile.TemporaryDirectory(prefix="logcorr-digest-") as tmp:
        out = Path(tmp) / "out"
        try:
            ingest([path], out, embed=False)
        except Exception as e:  # noqa: BLE001 — the outcome is what is compared
            return {"error": type(e).__name__}
        return table_digests(out)


def case_files() -> list[Path]:
    """Every file under the case folders, sorted; this checkout's own by their path relative to it (``main``
    runs from there), so that two checkouts' digests compare: a record's ``source`` is its path as given."""
    found = sorted(p for d in CASE_FOLDERS if d.is_dir() for p in d.rglob("*") if p.is_file())
    return [p.relative_to(ROOT) if p.is_relative_to(ROOT) else p for p in found]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", type=Path, help="an OUT folder to digest")
    ap.add_argument("--day", type=Path, action="append", default=[], help="an input to ingest and digest")
    ap.add_argument("--cases", action="store_true", help="every case file, each ingested alone")
    ap.add_argument("--save", type=Path, help="write the digests here (JSON)")
    ap.add_argument("--check", type=Path, help="compare with digests saved before; exit 1 on a change")
    args = ap.parse_args()
    args.day = [p.resolve() for p in args.day]
    args.out = args.out.resolve() if args.out else None
    args.check = args.check.resolve() if args.check else None
    args.save = args.save.resolve() if args.save else None
    os.chdir(ROOT)  # the case files are named relative to it
    digests: dict[str, dict[str, str]] = {}
    if args.out:
        digests[str(args.out)] = table_digests(args.out)
    for path in args.day + (case_files() if args.cases else []):
        digests[str(path)] = ingest_digests(path)
    if args.save:
        args.save.write_text(json.dumps(digests, indent=1, sort_keys=True))
    if not args.check:
        for name, tables in digests.items():
            print(name)
            for table, d in tables.items():
                print(f"  {table:<16} {d}")
        return 0
    saved = json.loads(args.check.read_text())
    changed = 0
    for name, tables in digests.items():
        before = saved.get(name)
        if before is None:
            print(f"{name}: not in {args.check}")
            changed += 1
            continue
        for table in sorted(set(before) | set(tables)):
            if before.get(table) != tables.get(table):
                print(f"{name}: {table}: {before.get(table)} -> {tables.get(table)}")
                changed += 1
    print(f"{len(digests)} inputs, {changed} difference(s) from {args.check}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
