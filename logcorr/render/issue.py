"""``issue()``: a draft upstream bug report for SGLang, in the layout of its bug template (describe the
bug, reproduction, environment), drawn from the report's rows: the summary and findings, the evidence
records per rank, the py-spy groups, the matched known families with their links, and the engines'
configuration. Everything is a row of OUT; what the data does not hold is said as missing.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from logcorr.analysis import findings as findings_mod
from logcorr.analysis import saved as saved_mod
from logcorr.markdown import md
from logcorr.render import report as report_mod
from logcorr.store.schema import short_position

# Findings whose records are shown as evidence, per rank (the rest are cited by their summary).
EVIDENCE_KINDS = (
    "scheduler_crash", "start_up_failure", "collective_timeout", "transfer_assertion", "cuda_error",
    "scheduler_watchdog", "wedge", "stop", "crash_loop", "bootstrap_failures", "transfer_failures",
)  # fmt: skip
# Settings that matter for a PD/TP bug report, in this order (config columns).
SETTINGS = (
    "model_path", "tp_size", "dp_size", "pp_size", "ep_size", "nnodes", "enable_dp_attention", "disaggregation_mode",
    "disaggregation_transfer_backend", "disable_overlap_schedule", "enable_hierarchical_cache",
    "speculative_algorithm", "chunked_prefill_size", "watchdog_timeout", "dist_timeout",
)  # fmt: skip
PER_FINDING = 4  # evidence records shown per finding (one per rank first)
LINES_PER_RECORD = 4


def _fence(text: str) -> str:
    """Log text safe inside a ``` fence: no fence of its own, at most LINES_PER_RECORD lines of 200 chars."""
    lines = (text or "").replace("```", "'''").splitlines()[:LINES_PER_RECORD]
    return "\n".join(line if len(line) <= 200 else line[:199] + "…" for line in lines)


def _records(out: Path, ids: list[int], con) -> pl.DataFrame:
    if not ids:
        return pl.DataFrame()
    sql = (
        "SELECT event_id, ts, role, source, source_pos, message, "
        "concat_ws(' ', 'DP' || dp_rank, 'PP' || pp_rank, 'TP' || tp_rank, 'EP' || ep_rank) AS rank_label "
        f"FROM events WHERE event_id IN ({', '.join(str(int(i)) for i in ids)}) ORDER BY ts NULLS LAST, event_id"
    )
    return saved_mod.query(out, sql, con=con)


def _evidence(out: Path, found: pl.DataFrame, con) -> list[str]:
    """Per finding of ``EVIDENCE_KINDS``: its records, one per rank first, as fenced log text."""
    lines: list[str] = []
    for f in found.filter(pl.col("kind").is_in(EVIDENCE_KINDS)).iter_rows(named=True):
        recs = _records(out, list(f["evidence"] or []), con)
        if not recs.height:
            continue
        picked = recs.unique("rank_label", keep="first", maintain_order=True).head(PER_FINDING)
        lines += [f"**{f['step']}. {md(f['kind'])}** ({md(f['role']) or 'several roles'}):", ""]
        for r in picked.iter_rows(named=True):
            where = f"{r['source']}:{short_position(r['source_pos'])}"
            lines += [
                f"{r['role']} {r['rank_label'] or '(rank not printed)'}, {md(where, code=True)}:",
                "```text",
            ]
            lines += [_fence(r["message"]), "```"]
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


def issue(out: Path) -> str:
    """A draft SGLang bug report (Markdown) for the incident in OUT.

    Returns:
        Markdown: a title line, then the template's sections ("Describe the bug", "Reproduction",
        "Environment") filled from the data, with the evidence per rank, the py-spy groups and the
        matched known families; under 300 lines.

    Raises:
        FileNotFoundError: OUT does not exist. ReportError: a saved query fails on OUT's tables.
    """
    out = Path(out)
    r = report_mod.gather(out)
    found = r["findings"]
    main = findings_mod.main_finding(found)
    title = main["summary"].split(": ")[0].split("; ")[0] if main else "no failure in the data"
    con = saved_mod.connect(out)
    cov = r["coverage"]
    span = report_mod.data_span(cov).removeprefix(", ") or "no time in the data"
    lines = [
        f"# [Bug] {title}",
        "",
        "_Draft written by logcorr from the logs; check every line before filing._",
        "",
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
    lines += _evidence(out, found, con)
    lines += ["#### py-spy groups (where each rank waits)", ""] + _pyspy(r["desync"])
    lines += ["#### Related upstream issues (matched by logcorr's known families)", ""] + _families(
        r["known_issues"]
    )
    lines += ["### Environment", ""] + _environment(r["config"])
    return "\n".join(lines) + "\n"
