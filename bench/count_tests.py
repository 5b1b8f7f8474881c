#!/usr/bin/env python3
"""What the test suite asserts, counted (issue 48: "no assertion lost"): per test file, the ``assert``
statements (by ``ast``) and the collected test ids (``pytest --collect-only -q``: all, and those with a
parameter); per case folder, the expectations written as data (``tests/cases/*/expect.toml``: each
query's rows and each summary fact counts as one assertion, as ``tests/test_cases_data.py`` checks them).

Usage::

    python bench/count_tests.py                 # the table, then the totals
    python bench/count_tests.py --json F.json   # also the figures as JSON (to compare two checkouts)
    python bench/count_tests.py --no-collect    # asserts only (no pytest run)
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


def asserts_per_file() -> dict[str, int]:
    """``tests/**/*.py`` → the number of ``assert`` statements in it (helpers and conftest included)."""
    counts = {}
    for path in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        counts[str(path.relative_to(ROOT))] = sum(isinstance(n, ast.Assert) for n in ast.walk(tree))
    return counts


def data_expectations() -> dict[str, int]:
    """``tests/cases/<folder>/expect.toml`` → its assertions as data: one per query (its rows), one per
    summary kind, one per word the summary must say and one per trap it must not."""
    counts = {}
    for path in sorted((TESTS / "cases").glob("*/expect.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        n = len(data.get("query", []))
        for s in data.get("summary", []):
            n += 1 + len(s.get("says", [])) + len(s.get("not_said", []))
        counts[str(path.relative_to(ROOT))] = n
    return counts


def collected() -> tuple[Counter, Counter]:
    """Collected test ids per file, all and parametrised (an id with ``[``); the heavy ones too (``-m ""``)."""
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",  # xdist stays loaded: addopts names its --dist mode (no -n: one process)
            "-m",
            "",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    ids = [line for line in run.stdout.splitlines() if "::" in line]
    if run.returncode != 0 or not ids:
        sys.exit(
            f"pytest --collect-only failed ({run.returncode}):\n{run.stdout[-2000:]}{run.stderr[-2000:]}"
        )
    every, params = Counter(), Counter()
    for test_id in ids:
        file = test_id.split("::", 1)[0]
        every[file] += 1
        params[file] += "[" in test_id
    return every, params


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--no-collect", action="store_true", help="count asserts only")
    args = ap.parse_args()
    asserts, data = asserts_per_file(), data_expectations()
    every, params = (Counter(), Counter()) if args.no_collect else collected()
    files = sorted(set(asserts) | set(every) | set(data))
    print(f"{'file':<58} {'asserts':>7} {'tests':>6} {'param':>6}")
    for f in files:
        a = asserts.get(f, data.get(f, 0))
        print(f"{f:<58} {a:>7} {every.get(f, 0):>6} {params.get(f, 0):>6}")
    totals = {
        "assert_statements": sum(asserts.values()),
        "data_expectations": sum(data.values()),
        "assertions": sum(asserts.values()) + sum(data.values()),
        "tests": sum(every.values()),
        "parametrised": sum(params.values()),
    }
    print(
        f"\n{totals['assert_statements']} assert statements + {totals['data_expectations']} expectations "
        f"as data = {totals['assertions']} assertions; {totals['tests']} tests collected, "
        f"{totals['parametrised']} of them parametrised cases"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {"totals": totals, "asserts": asserts, "data": data, "tests": every, "params": params},
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
