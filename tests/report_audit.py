"""An audit of a report against its own tables (issue "the report says only what it read").

Each rule reads a claim of the report's Summary, Findings and coverage lines and checks it against the
rows of OUT, with its own reading of the records (Python regexes over ``events.message``), not with the
SQL that made the claim: a claim of absence must hold in the raw text of the records it is about, a
time stated in UTC must rest on records that print a zone, and a count must be the count of its
evidence. ``audit`` returns the broken rules, one sentence each (empty: the report passes).
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from logcorr.analysis import saved

ERROR_LEVELS = {"ERROR", "ERR", "CRITICAL", "CRIT", "FATAL", "E", "F", "ALERT", "EMERG"}
CRASH = re.compile(r"Fatal Python error|Segmentation fault|\bSegfault\b|core dumped|terminate called", re.I)
EXCEPTION_LINE = re.compile(r"(?m)^\s*([A-Za-z_]\w*\.)*[A-Z]\w*(Error|Exception)(: |:?$)")
RANK_TAG = re.compile(r"\b(TP|DP|PP|EP)\d+\b|\[rank\d+\]")
NO_FAILURE = ("the data shows no failure", "No finding:")
# Kinds whose n counts exactly the records they cite.
COUNTED = ("transfer_failures", "bootstrap_failures", "unexplained_crash", "unexplained_errors", "cuda_error")


def _table(out: Path, name: str, con) -> pl.DataFrame:
    return saved.query(out, f"SELECT * FROM {name}", con=con)


# A chained traceback up to its last lead line ("During handling of the above exception, …").
CHAINED_HEAD = re.compile(
    r"(?s)^.*\n(?:\([^)\n]*\) )*(?:During handling of the above exception, another exception occurred"
    r"|The above exception was the direct cause of the following exception):[ \t]*\n"
)


def _messages(events: pl.DataFrame, ids: list[int] | None) -> list[str]:
    rows = events.filter(pl.col("event_id").is_in(ids or []))
    return [m or "" for m in rows["message"].to_list()]


def _section(text: str, title: str) -> str:
    """The lines of the Markdown section whose heading starts with ``title`` (up to the next ``## ``)."""
    m = re.search(rf"(?ms)^## {re.escape(title)}[^\n]*\n(.*?)(?=^## |\Z)", text)
    return m.group(1) if m else ""


def audit(out: Path, text: str, found: pl.DataFrame) -> list[str]:
    """The rules the Markdown report ``text`` of OUT breaks, given its findings rows ``found``
    (``findings.findings``): claims of no failure, of a value not printed, of a role with no record,
    a "UTC" on a time its records print without a zone, a count that is not the count of its evidence."""
    con = saved.connect(out, only=set())  # one connection for the tables read here, no saved view
    events = _table(out, "events", con)
    broken = []
    said = _section(text, "Summary") + _section(text, "Findings")
    if any(p in said for p in NO_FAILURE):
        errors = events.filter(pl.col("level").str.to_uppercase().is_in(ERROR_LEVELS))
        crashes = [m for m in events["message"].drop_nulls().to_list() if CRASH.search(m)]
        typed = {t: _table(out, t, con).height for t in ("tracebacks", "watchdogs", "transfer_errors")}
        if errors.height or crashes or any(typed.values()):
            broken.append(
                f"says no failure beside {errors.height} error-level record(s), {len(crashes)} crash marker(s), {typed}"
            )
    for r in found.iter_rows(named=True):
        summary, messages = r["summary"] or "", _messages(events, r["evidence"])
        if "op not printed" in summary and any("OpType=" in m for m in messages):
            broken.append(f"{r['kind']}: 'op not printed' beside OpType= in its records")
        if re.search(r"\branks? not printed", summary) and any(RANK_TAG.search(m) for m in messages):
            broken.append(f"{r['kind']}: 'rank not printed' beside a rank tag in its records")
        # (of a chained traceback, its final part alone: an earlier part's exception is what it was raised
        # while handling, never its own)
        if "exception type not printed" in summary and any(
            EXCEPTION_LINE.search(CHAINED_HEAD.sub("", m)) for m in messages
        ):
            broken.append(
                f"{r['kind']}: 'exception type not printed' beside an exception line in its records"
            )
        if r.get("zoned") is False and " UTC" in summary:
            broken.append(f"{r['kind']}: 'UTC' on a time its records print without a zone: {summary[:120]}")
        if r["kind"] in COUNTED and r["n"] is not None and r["n"] != len(r["evidence"] or []):
            broken.append(f"{r['kind']}: counts {r['n']} records but cites {len(r['evidence'] or [])}")
    roles = set(events["role"].drop_nulls().to_list())
    for role in re.findall(r"no record read as the (\w+)", text):
        if role in roles:
            broken.append(f"says no record was read as the {role}'s, but events has {role} rows")
    m = re.search(r"- ([\d,]+) record\(s\) have no role", text)
    unknown = events.filter(pl.col("role") == "unknown").height
    if (int(m.group(1).replace(",", "")) if m else 0) != unknown:
        broken.append(f"counts {m.group(1) if m else 0} records without a role; events has {unknown}")
    return broken
