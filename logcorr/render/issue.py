"""``issue()``: a draft upstream bug report for SGLang, in the layout of its bug template (describe the
bug, reproduction, environment), drawn from the report's rows: the summary and findings, the evidence
records per rank, the py-spy groups, the matched known families with their links, and the engines'
configuration. Everything is a row of OUT; what the data does not hold is said as missing.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from logcorr.analysis import findings as findings_mod
from logcorr.analysis import saved as saved_mod
from logcorr.markdown import md
from logcorr.render import report as report_mod
from logcorr.render.redact import Redactor, redact_rows
from logcorr.store.schema import short_position

# Findings whose records are shown as evidence, per rank (the rest are cited by their summary).
EVIDENCE_KINDS = (
    "scheduler_crash", "start_up_failure", "collective_timeout", "collective_error", "watchdog_hang", "transfer_assertion",
    "cuda_error",
    "scheduler_watchdog", "wedge", "stop", "crash_loop", "bootstrap_failures", "transfer_failures",
)  # fmt: skip
# Settings that matter for a PD/TP bug report, in this order (config columns).
SETTINGS = (
    "model_path", "tp_size", "dp_size", "pp_size", "ep_size", "nnodes", "enable_dp_attention", "disaggregation_mode",
    "disaggregation_transfer_backend", "disable_overlap_schedule", "enable_hierarchical_cache",
    "speculative_algorithm", "chunked_prefill_size", "watchdog_timeout", "dist_timeout",
)  # fmt: skip
PER_FINDING = 4  # evidence records shown per finding (one per rank first)
HEAD_LINES, TAIL_LINES = 2, 5  # a longer record: its first lines, then its last (a traceback's exception)
MAX_LINE = 2000  # a line longer than this is cut at a space
STACK_FRAMES = 12  # innermost frames shown per divergent rank
TITLE_WIDTH = 150
# A finding's time in its words ("at 2025-10-29 21:34:47 UTC", "from … to 21:34:46 UTC"): not in a title
WHEN = re.compile(
    r" (?:at|from) \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: UTC)?"
    r"(?: to (?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d(?:\.\d+)?(?: UTC)?)?"
)


def title(main: dict | None) -> str:
    """The draft's title (its data not yet escaped): what broke, in the main finding's words up to its
    first "; ", without its time; without its asides in brackets when longer than ``TITLE_WIDTH``."""
    if main is None:
        return "no failure in the data"
    text = WHEN.sub("", (main["summary"] or main["kind"]).split("; ")[0])
    return re.sub(r" \([^()]*\)", "", text) if len(text) > TITLE_WIDTH else text


def _record_text(message: str | None) -> str:
    """A record's lines, whole: all of them, or a longer record's first ``HEAD_LINES`` and last
    ``TAIL_LINES`` (a traceback's innermost frame and its exception line) with "…" between."""
    lines = (message or "").splitlines()
    if len(lines) > HEAD_LINES + TAIL_LINES + 1:
        lines = [*lines[:HEAD_LINES], "…", *lines[-TAIL_LINES:]]
    return "\n".join(ln if len(ln) <= MAX_LINE else ln[:MAX_LINE].rsplit(" ", 1)[0] + " …" for ln in lines)


def _records(out: Path, ids: list[int], con) -> pl.DataFrame:
    if not ids:
        return pl.DataFrame()
    sql = (
        "SELECT event_id, ts, role, source, source_pos, message, "
        "concat_ws(' ', 'DP' || dp_rank, 'PP' || pp_rank, 'TP' || tp_rank, 'EP' || ep_rank) AS rank_label "
        f"FROM events WHERE event_id IN ({', '.join(str(int(i)) for i in ids)}) ORDER BY ts NULLS LAST, event_id"
    )
    return saved_mod.query(out, sql, con=con)


def _evidence(out: Path, found: pl.DataFrame, con, clean) -> list[str]:
    """Per finding of ``EVIDENCE_KINDS``: its records, one per rank first, as fenced log text;
    ``clean`` redacts the records' rows."""
    lines: list[str] = []
    for f in found.filter(pl.col("kind").is_in(EVIDENCE_KINDS)).iter_rows(named=True):
        recs = clean(_records(out, list(f["evidence"] or []), con))
        if not recs.height:
            continue
        picked = recs.unique("rank_label", keep="first", maintain_order=True).head(PER_FINDING)
        lines += [f"**{f['step']}. {md(f['kind'])}** ({md(f['role']) or 'several roles'}):", ""]
        for r in picked.iter_rows(named=True):
            where = f"{r['source']}:{short_position(r['source_pos'])}"
            lines.append(f"{r['role']} {r['rank_label'] or '(rank not printed)'}, {md(where, code=True)}:")
            lines.append(md(_record_text(r["message"]) + "\n", code=True))
        lines.append("")
    return lines or ["No finding has records to quote.", ""]


def _pyspy(stuck: pl.DataFrame) -> list[str]:
    if not stuck.height:
        return ["No py-spy or faulthandler dump was read.", ""]
    lines = []
    for r in stuck.unique(["role", "pp_rank"], keep="first", maintain_order=True).iter_rows(named=True):
        lines.append(f"- {md(r['role']) or 'unknown role'}: **{md(r['verdict'])}**: {md(r['groups'])}")
    lines += ["", "| role | rank | waits in | backend | event loop |", "|---|---|---|---|---|"]
    for r in stuck.iter_rows(named=True):
        cells = [r["role"], r["rank_label"], r["wait_class"], r["backend"], r["event_loop"]]
        lines.append("| " + " | ".join(md(c, cell=True) for c in cells) + " |")
    return [*lines, ""]


def _families(known: pl.DataFrame) -> list[str]:
    if not known.height:
        return ["No known family has evidence rows in the data (searched: `logcorr query known_issues`).", ""]
    lines = []
    for m in known.sort("rank").iter_rows(named=True):
        lines += [
            f"- **{m['family']}: {m['title']}** ({m['strength']}, {m['evidence_rows']} evidence rows)",
            f"  - what the data says: {md(m['evidence'], width=300)}",
            f"  - workaround: {m['workaround']}",
            f"  - links: {m['links']}",
        ]
    return [*lines, ""]


def _environment(config: pl.DataFrame) -> list[str]:
    if not config.height:
        return [
            "- SGLang version, server_args, hardware: not read (logcorr read no server_args line or launch command)."
        ]
    versions = sorted({v for v in config["sglang_version"].to_list() if v})
    lines = [f"- SGLang version: {', '.join(versions) if versions else 'not read'}",
             "- Hardware: not in the data (add `nvidia-smi` / `python -m sglang.check_env`)", ""]  # fmt: skip
    heads = [f"{r['role']} pid {r['pid']}" for r in config.iter_rows(named=True)]
    lines += ["| server_args | " + " | ".join(heads) + " |", "|---|" + "---|" * len(heads)]
    for c in SETTINGS:
        if c in config.columns and config[c].is_not_null().any():
            vals = ["" if v is None else str(v) for v in config[c].to_list()]
            lines.append(f"| {c} | " + " | ".join(md(v, cell=True) for v in vals) + " |")
    return lines


# The main thread's frames of the given captures (py-spy dumps), innermost first.
STACK_SQL = """
SELECT s.capture_id, s.depth, s.function, s.file, s.line, s.thread_name, s.thread_state
FROM stacks AS s JOIN captures AS c USING (capture_id, thread_id)
WHERE c.is_main AND s.capture_id IN ({ids}) ORDER BY s.capture_id, s.depth
"""


def _frame(f: dict) -> str:
    """A frame as py-spy prints it: ``    function (file:line)``; a native frame without a line."""
    where = f["file"] if f["line"] is None else f"{f['file']}:{f['line']}"
    return f"    {f['function']} ({where})"


def _stacks(out: Path, stuck: pl.DataFrame, con, clean) -> list[str]:
    """Per rank of a divergent TP group: its main thread's innermost ``STACK_FRAMES`` frames as text,
    one fenced block per rank; ``clean`` redacts the frames' rows."""
    ranks = stuck.filter((pl.col("verdict") == "divergent") & pl.col("capture_id").is_not_null())
    if not ranks.height:
        return ["No TP group whose ranks wait in different places: no stack to quote.", ""]
    ids = ", ".join("'" + c.replace("'", "''") + "'" for c in ranks["capture_id"].unique())
    frames = clean(saved_mod.query(out, STACK_SQL.format(ids=ids), con=con))
    lines: list[str] = []
    for rk in ranks.iter_rows(named=True):
        fr = frames.filter(pl.col("capture_id") == rk["capture_id"])
        if not fr.height:
            continue
        t = fr.row(0, named=True)
        lines.append(
            f"{md(rk['role'])} {md(rk['rank_label'])} (pid {rk['pid']}) waits in {md(rk['wait_label'])};"
            f" thread {md(t['thread_name'] or '?')} ({md(t['thread_state'] or '?')}), innermost frame first:"
        )
        text = [_frame(f) for f in fr.head(STACK_FRAMES).iter_rows(named=True)]
        if fr.height > STACK_FRAMES:
            text.append(f"    … {fr.height - STACK_FRAMES} outer frame(s)")
        lines += [md("\n".join(text) + "\n", code=True), ""]
    return lines or ["The divergent ranks' captures hold no main thread's frames.", ""]


def _redactor(out: Path, config: pl.DataFrame, con) -> Redactor:
    """The ``Redactor`` of OUT: the host names its records carry, the model paths its engines ran."""
    hosts = saved_mod.query(out, "SELECT DISTINCT host FROM events WHERE host IS NOT NULL", con=con)
    models = config["model_path"].to_list() if "model_path" in config.columns else []
    return Redactor(hosts["host"].to_list(), models)


REDACTED = (
    "_Redacted by logcorr: host names and addresses as host-N, model paths as model-N, directories as"
    " `<path>`, internal URLs' hosts; `logcorr report --format issue --no-redact` keeps them._"
)


def issue(out: Path, *, redact: bool = True) -> str:
    """A draft SGLang bug report (Markdown) for the incident in OUT.

    Args:
        out: an ingest output folder.
        redact: replace host names (and IPv4 addresses), directories, the hosts of internal URLs and
            the model paths with stable placeholders (``host-1``, ``<path>/conn.py``, ``model-1``);
            False keeps them.

    Returns:
        Markdown: a title saying what broke, then the template's sections ("Describe the bug",
        "Reproduction", "Environment") filled from the data, with the evidence records per rank
        (whole lines; a traceback's last frame and exception line), the py-spy groups, the stacks of
        the ranks of a divergent group, and the matched known families; under 300 lines.

    Raises:
        FileNotFoundError: OUT does not exist. ReportError: a saved query fails on OUT's tables.
    """
    out = Path(out)
    r = report_mod.gather(out)
    con = saved_mod.connect(out, only=set())  # its queries read tables only
    redactor = _redactor(out, r["config"], con) if redact else None

    def clean(df: pl.DataFrame) -> pl.DataFrame:
        return redact_rows(df, redactor) if redactor is not None else df

    r = {name: clean(df) for name, df in r.items()}
    found = r["findings"]
    main = findings_mod.main_finding(found)
    cov = r["coverage"]
    span = report_mod.data_span(cov).removeprefix(", ") or "no time in the data"
    lines = [
        f"# [Bug] {md(title(main))}",
        "",
        "_Draft written by logcorr from the logs; check every line before filing._",
        "",
        *([REDACTED, ""] if redact else []),
    ]
    lines += ["### Describe the bug", ""] + [f"- {line}" for line in report_mod.summary_lines(r)] + [""]
    lines += ["What the logs show, in causal order:", ""]
    lines += [f"{f['step']}. {md(f['summary'], width=300)}" for f in found.head(20).iter_rows(named=True)]
    lines += ["", "### Reproduction", ""]
    lines += [
        f"Not reproduced yet; facts from the data ({span}): the findings above, the configuration under Environment,"
        " and the records below. `logcorr report -d OUT` has every row.",
        "",
        "#### Evidence per rank",
        "",
    ]
    lines += _evidence(out, found, con, clean)
    lines += ["#### py-spy groups (where each rank waits)", ""] + _pyspy(r["desync"])
    lines += ["#### py-spy stacks of the divergent ranks (main thread)", ""]
    lines += _stacks(out, r["desync"], con, clean)
    lines += ["#### Related upstream issues (matched by logcorr's known families)", ""] + _families(
        r["known_issues"]
    )
    lines += ["### Environment", ""] + _environment(r["config"])
    return "\n".join(lines) + "\n"
