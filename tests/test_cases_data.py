"""Each case file's expectations, as data beside it (Perfetto's diff tests: an input, a query, the expected
rows): ``tests/cases/<folder>/expect.toml`` holds, per file of the folder,

- ``[[query]]``: an item of the folder's README as SQL over the tables of the file ingested alone, with the
  rows it must give (``rows``: one line per row, values as ``render`` prints them: ``NULL``, a quoted string,
  a number, ``true``/``false``, a time as ``2026-02-27 14:33:13.089845``, a list in brackets);
- ``[[summary]]``: the report's summary: the kind of the main finding (``none``: "the data shows no
  failure", and its ``says`` name what the data shows; ``nothing known``: no record read as an SGLang
  engine's), the words its "What happened" line says, and the traps it must not say (``not_said``: regular expressions over every summary line).

One parametrised test runs each, over every folder; each file is ingested once per run
(``tests.conftest.ingested``), for these tests and every other that reads it alone. docs/design.md says
how to add a case with its expectations; the README tables stay the human view.
"""

from __future__ import annotations

import json
import re
import tomllib
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from logcorr.analysis import findings as findings_mod
from logcorr.render import report as report_mod
from tests.conftest import CASES, case_group, ingested, shared_gather, shared_report, sql
from tests.report_audit import audit

KINDS_WITHOUT_MAIN = {"none": "the data shows no failure", "nothing known": "cannot be told: logcorr read no record as an SGLang engine"}  # fmt: skip
# the folders whose every case file must have a summary expectation
SUMMARISED = ("sglang", "pyspy", "real2", "batch3", "batch4", "batch5", "batch6")


def load() -> dict[str, dict]:
    """``folder`` → its expect.toml, read."""
    return {
        p.parent.name: tomllib.loads(p.read_text(encoding="utf-8"))
        for p in sorted(CASES.glob("*/expect.toml"))
    }


def case_file(folder: str, prefix: str) -> Path:
    (path,) = (CASES / folder).glob(f"{prefix}_*")
    return path


def render(value) -> str:
    """One value of a result row as the ``rows`` of expect.toml write it."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int | Decimal):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, datetime | date | time | timedelta):
        return str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(render(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{render(k)}: {render(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no rendering for {type(value).__name__}: {value!r}")


def render_rows(rows: list[tuple]) -> str:
    return "\n".join(", ".join(render(v) for v in row) for row in rows)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().splitlines() if line.strip()]


DATA = load()
QUERIES = [(folder, q) for folder, data in DATA.items() for q in data.get("query", [])]
SUMMARIES = [(folder, s) for folder, data in DATA.items() for s in data.get("summary", [])]


def params(items: list[tuple[str, dict]], ids: list[str]) -> list:
    """``items`` as pytest params, each in its case file's xdist group (``case_group``): the file's
    queries, summary and other modules' tests run where its OUT and report were made."""
    out = []
    for (folder, x), name in zip(items, ids, strict=True):
        found = list((CASES / folder).glob(f"{x['file']}_*"))
        marks = [case_group(found[0])] if len(found) == 1 else []  # else the test says what is wrong
        out.append(pytest.param(folder, x, marks=marks, id=name))
    return out


def test_every_expectation_names_one_case_file_and_says_what_it_checks():
    assert QUERIES and SUMMARIES
    for folder, item in QUERIES + SUMMARIES:
        case_file(folder, item["file"])  # exactly one file of the folder starts with it
    for folder, q in QUERIES:
        assert set(q) == {"file", "item", "sql", "rows"}, (folder, q)
        assert q["item"].strip(), (folder, q)
    for folder, s in SUMMARIES:
        assert set(s) <= {"file", "kind", "says", "not_said"}, (folder, s)


def test_every_case_file_has_a_summary_expectation():
    files = {f"{p.parent.name}/{p.name[:2]}" for d in SUMMARISED for p in (CASES / d).glob("[0-9][0-9]_*")}
    # batch9 has summaries but not for every file (13's note quotes a crash word the audit counts)
    assert files == {f"{folder}/{s['file']}" for folder, s in SUMMARIES if folder in SUMMARISED}


def test_render_writes_each_type_as_expect_toml_reads_it():
    row = (None, True, 'a "b"', 3, 0.5, datetime(2026, 2, 27, 14, 33, 13, 89845), [1, None], {"k": 2})
    assert (
        render_rows([row])
        == 'NULL, true, "a \\"b\\"", 3, 0.5, 2026-02-27 14:33:13.089845, [1, NULL], {"k": 2}'
    )


@pytest.mark.parametrize(
    ("folder", "q"), params(QUERIES, [f"{f}/{q['file']}-{i}" for i, (f, q) in enumerate(QUERIES)])
)
def test_the_query_gives_the_expected_rows(folder, q):
    out = ingested(case_file(folder, q["file"]))
    got = _lines(render_rows(sql(out, q["sql"])))
    assert got == _lines(q["rows"]), f"{folder}/{q['file']}: {q['item']}\n{q['sql']}"


@pytest.mark.parametrize(("folder", "s"), params(SUMMARIES, [f"{f}/{s['file']}" for f, s in SUMMARIES]))
def test_the_summary_names_the_main_event(folder, s):
    """The summary names the README's main event (or says the data shows none) and none of its traps;
    the report words nothing its rows contradict (``report_audit``)."""
    out = ingested(case_file(folder, s["file"]))
    results, text = shared_gather(out), shared_report(out)
    assert audit(out, text, results["findings"]) == []
    lines = report_mod.summary_lines(results)
    main = findings_mod.main_finding(results["findings"])
    happened = lines[0]
    for trap in s.get("not_said", []):
        assert not re.search(trap, "\n".join(lines)), (trap, lines)
    for w in s.get("says", []):  # without a main event too: what the data shows (its main event)
        assert w in happened, (w, happened)
    if s["kind"] in KINDS_WITHOUT_MAIN:
        assert main is None, main
        assert happened.startswith(f"**What happened**: {KINDS_WITHOUT_MAIN[s['kind']]}"), happened
        return
    assert main is not None and main["kind"] == s["kind"], (main or {}).get("summary")
    text = "\n".join(lines)
    assert not re.search(r"\bon unknown\b|\(unknown\)|role unknown [A-Z]", text), text
    if main["zoned"] is False:  # a time printed without a zone is stated as printed
        assert main["ts"] is not None
        assert " UTC" not in happened and "as printed (zone not printed)" in lines[1]
