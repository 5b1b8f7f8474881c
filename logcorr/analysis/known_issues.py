"""Known upstream bug families as data, and the saved queries ``known_issues`` / ``known_issue_evidence``.

A family is one ``.sql`` file (shipped under ``queries/known_issues/``; more in the folders of
``$LOGCORR_KNOWN_ISSUES``, ``os.pathsep``-separated, a later file replacing a family of the same id).
It opens with ``-- key: text`` lines (an indented ``--`` line continues the one before): ``id``,
``title``, ``weight`` (1 = a bug mechanism, 2 = a symptom; ranks ties), ``links``, ``affects``,
``needs`` (the configuration in words), ``config`` (a DuckDB boolean over the ``config`` table's
columns), ``shows`` (config columns the report prints), ``fixed_in`` (first release with the fix, when
one is known), ``fix``, ``workaround``, ``explains``, ``evidence`` (what the SQL finds, in words).
Then one SELECT returning evidence rows: ``event_id`` (null for a py-spy capture), ``ts``, ``host``,
``role``, ``source``, ``source_pos``, ``what``.

The two queries are generated from the families (``saved.load_saved`` adds them), so ``logcorr query
known_issues`` and the ``known_issues`` view of ``OUT/logcorr.duckdb`` run the same SQL. A family with
no evidence row is never a match; its configuration alone (``config only``) is not reported as one.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from logcorr.analysis.shipped import shipped_families
from logcorr.markdown import md
from logcorr.store.schema import SHORT_POSITION_SQL

KEYS = (
    "id", "title", "weight", "links", "affects", "needs", "config", "shows", "fixed_in", "fix",
    "workaround", "explains", "evidence",
)  # fmt: skip


@dataclass(frozen=True)
class Family:
    """One known bug family: its header fields (``KEYS``) and its evidence SQL."""

    id: str
    sql: str
    meta: dict[str, str] = field(default_factory=dict)
    path: str | None = None


def parse_family(text: str, path: str | None = None) -> Family:
    """A family file → ``Family``. Never raises: missing keys stay empty."""
    meta: dict[str, str] = {}
    key = None
    body: list[str] = []
    in_header = True
    for line in text.splitlines():
        s = line.strip()
        if in_header and s.startswith("--"):
            m = re.match(r"--\s?([a-z_]+):\s*(.*)$", s)
            if m and m.group(1) in KEYS:
                key = m.group(1)
                meta[key] = m.group(2).strip()
            elif key:
                meta[key] = (meta[key] + " " + s[2:].strip()).strip()
            continue
        if in_header and not s:
            continue
        in_header = False
        body.append(line)
    sql = "\n".join(body).strip().rstrip(";")
    return Family(meta.get("id", Path(path).stem if path else "?"), sql, meta, path)


def load_families(extra_dirs: tuple[Path, ...] = ()) -> dict[str, Family]:
    """Every family: shipped, then ``extra_dirs``, then ``$LOGCORR_KNOWN_ISSUES`` folders; by id."""
    found: dict[str, Family] = {}
    env = tuple(Path(p) for p in os.environ.get("LOGCORR_KNOWN_ISSUES", "").split(os.pathsep) if p)
    for folder in (shipped_families(), *extra_dirs, *env):
        if not Path(folder).is_dir():
            continue
        for p in sorted(Path(folder).glob("*.sql")):
            if not p.name.startswith("_"):
                fam = parse_family(p.read_text(encoding="utf-8"), str(p))
                found[fam.id] = fam
    return found


def _lit(text: str | None) -> str:
    return "NULL" if text is None or text == "" else "'" + text.replace("'", "''") + "'"


def _body(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))


def shared_views(families: dict[str, Family]) -> list[tuple[str, str]]:
    """``(name, SQL)`` of the shipped saved queries (``queries/*.sql``) that two or more families read,
    directly or through another saved query (``desync`` reads ``wedge``: F1, F2 and F15 all need
    ``wedge``), each after the ones it reads; the SQL without comment lines. ``evidence_sql`` computes each once (a materialised CTE of the
    view's name holding the shipped query's SQL) instead of once per family: a ``wedge`` is a pass
    over a day's batch seconds. A saved query of the same name in another folder is not used there."""
    texts = {p.stem: _body(p.read_text(encoding="utf-8")) for p in shipped_families().parent.glob("*.sql")}
    words = {n: re.compile(rf"\b{re.escape(n)}\b") for n in texts}

    def reads(text: str) -> set[str]:
        return {n for n, w in words.items() if w.search(text)}

    closure: dict[str, set[str]] = {}

    def deep(name: str, seen: frozenset = frozenset()) -> set[str]:
        if name not in closure:
            direct = reads(texts[name]) - {name} - seen
            closure[name] = direct.union(*(deep(n, seen | {name}) for n in direct))
        return closure[name]

    count: dict[str, int] = {}
    for fam in families.values():
        direct = reads(_body(fam.sql))
        for n in direct.union(*(deep(n) for n in direct)):
            count[n] = count.get(n, 0) + 1
    shared = sorted((n for n, c in count.items() if c >= 2), key=lambda n: (len(deep(n)), n))
    return [(n, texts[n].strip().rstrip(";")) for n in shared]


def evidence_sql(families: dict[str, Family]) -> str:
    """SQL of ``known_issue_evidence``: every family's evidence rows, each with the verdict of the
    configuration of its engine (host and role): ``applies``, ``against`` (known and not matching) or
    ``unknown`` (no config row for that engine). Saved queries several families read
    (``shared_views``) are computed once, as materialised CTEs under their own names."""
    if not families:
        return (
            "SELECT NULL::VARCHAR AS family, NULL::BIGINT AS event_id, NULL::TIMESTAMPTZ AS ts, NULL::VARCHAR AS host,"
            " NULL::VARCHAR AS role, NULL::VARCHAR AS source, NULL::VARCHAR AS source_pos, NULL::VARCHAR AS what,"
            " NULL::VARCHAR AS config_verdict, NULL::VARCHAR AS config_values, NULL::VARCHAR AS sglang_version WHERE false"
        )
    parts = []
    for fam in families.values():
        shows = [c.strip() for c in fam.meta.get("shows", "").split(",") if c.strip()]
        values = " || ', ' || ".join(f"'{c}=' || coalesce(CAST({c} AS VARCHAR), '?')" for c in shows) or "''"
        parts.append(
            f"""SELECT {_lit(fam.id)} AS family, e.event_id::BIGINT AS event_id, e.ts::TIMESTAMPTZ AS ts,
       e.host::VARCHAR AS host, e.role::VARCHAR AS role, e.source::VARCHAR AS source,
       e.source_pos::VARCHAR AS source_pos, e.what::VARCHAR AS what,
       CASE WHEN c.n IS NULL THEN 'unknown' WHEN c.ok THEN 'applies' ELSE 'against' END AS config_verdict,
       c.config_values, c.sglang_version
FROM ({fam.sql}) e
LEFT JOIN (
    SELECT role, host, count(*) AS n, bool_or(coalesce(({fam.meta.get("config") or "false"}), false)) AS ok,
           string_agg(DISTINCT role || ' (' || origin || '): ' || {values}, '; '
                      ORDER BY role || ' (' || origin || '): ' || {values}) AS config_values,
           max(sglang_version) AS sglang_version
    FROM config GROUP BY role, host
) c ON c.role = e.role AND (e.host IS NULL OR c.host = e.host)"""
        )
    # each shared view's own SQL (not a reference to the view: a view's body would not see the CTEs
    # before it, and desync would compute its wedge again)
    shared = shared_views(families)
    head = (
        "WITH " + ",\n".join(f"{n} AS MATERIALIZED (\n{body}\n)" for n, body in shared) + "\n"
        if shared
        else ""
    )
    return head + "\nUNION ALL\n".join(parts)


def _version_key(expr: str) -> str:
    """A text that sorts like the version ``expr`` (0.4.9.post5 → 0000.0004.0009.0005)."""
    clean = f"regexp_replace({expr}, '[^0-9.]', '', 'g')"
    return " || '.' || ".join(
        f"lpad(coalesce(nullif(split_part({clean}, '.', {i}), ''), '0'), 4, '0')" for i in range(1, 5)
    )


_META_KEYS = ("id", "title", "weight", "links", "needs", "fixed_in", "fix", "workaround", "explains")


def known_issues_sql(families: dict[str, Family]) -> str:
    """SQL of ``known_issues``: one row per family with evidence whose configuration is not known to
    rule it out, ranked: ``signature+config`` before ``signature`` (configuration unknown), then by the
    family's weight, then by its first evidence."""
    meta_rows = ",\n".join(  # no family: one row of NULLs
        "(" + ", ".join(_lit(fam.meta.get(k)) for k in _META_KEYS) + ")"
        for fam in families.values() or [Family("", "")]
    )
    return f"""WITH meta(family, title, weight, links, needs, fixed_in, fix, workaround, explains) AS (VALUES
{meta_rows}),
ev AS (SELECT * FROM known_issue_evidence),
per AS (
    SELECT family,
           count(*) AS evidence_rows,
           count(*) FILTER (WHERE config_verdict = 'applies') AS rows_config_applies,
           count(*) FILTER (WHERE config_verdict = 'unknown') AS rows_config_unknown,
           min(ts) AS first_ts,
           list(event_id ORDER BY ts, event_id) FILTER (WHERE event_id IS NOT NULL) AS event_ids,
           string_agg(what || ' [' || {SHORT_POSITION_SQL} || ']', ' | ' ORDER BY ts, event_id) AS evidence,
           string_agg(DISTINCT config_values, '; ' ORDER BY config_values) AS config_values,
           max(sglang_version) AS sglang_version
    FROM ev GROUP BY family
)
SELECT row_number() OVER (ORDER BY CASE WHEN rows_config_applies > 0 THEN 0 ELSE 1 END,
                                   TRY_CAST(m.weight AS INTEGER) NULLS LAST, first_ts, p.family) AS rank,
       p.family, m.title,
       CASE WHEN rows_config_applies > 0 THEN 'signature+config' ELSE 'signature' END AS strength,
       evidence_rows, first_ts, event_ids, evidence,
       CASE WHEN rows_config_applies > 0 THEN 'applies: ' || coalesce(config_values, '')
            ELSE 'cannot tell: no server_args line or command line for the engine the evidence is on'
       END AS config_check,
       m.needs,
       CASE WHEN m.fixed_in IS NULL THEN 'no release with a fix is known (' || coalesce(m.fix, 'no fix') || ')'
            WHEN sglang_version IS NULL THEN 'fixed in ' || m.fixed_in || '; this engine''s version is not in the data'
            WHEN {_version_key("sglang_version")} >= {_version_key("m.fixed_in")}
                THEN 'fixed in ' || m.fixed_in || '; this engine runs ' || sglang_version || ', which has the fix: look again'
            ELSE 'fixed in ' || m.fixed_in || '; this engine runs ' || sglang_version END AS version_check,
       m.workaround, m.fix, m.explains, m.links
FROM per p JOIN meta m USING (family)
WHERE rows_config_applies > 0 OR rows_config_unknown > 0
ORDER BY rank"""


HEADER_EVIDENCE = """-- question: Which rows are evidence of a known upstream bug family, and does the configuration of the
--   engine they come from allow it? (generated from queries/known_issues/*.sql and $LOGCORR_KNOWN_ISSUES)
-- tables: transfer_errors, captures, stacks, tracebacks, aborts, batches, events, config, desync, wedge
-- columns:
--   family          the family's id (F1, F14, …)
--   event_id        events.event_id of the evidence (null for a py-spy capture: see source_pos)
--   ts              its time (UTC)
--   host            host
--   role            the engine it comes from
--   source          file or journal
--   source_pos      position in it
--   what            the evidence in words
--   config_verdict  applies, against (the engine's configuration rules the family out) or unknown
--   config_values   the settings the family depends on, per engine process (origin in brackets)
--   sglang_version  the engine's SGLang version where the data states it
-- parameters:
--   min_gap_s    wedge: a stop is a gap without batches of at least this many seconds (DOUBLE; default 60)
--   gap_factor   wedge: and at least this many times the role's usual pause (DOUBLE; default 3)
--   since        wedge: only batches at or after this time (TIMESTAMPTZ, UTC)
--   until        wedge: only batches and records at or before this time (TIMESTAMPTZ, UTC)
--   max_gap_s    stuck_ranks: same-fingerprint captures of a pid this close are no progress (DOUBLE; default 600)
--   round_gap_s  stuck_ranks: captures of a role this close belong to one round (DOUBLE; default 30)
-- reading: one row per evidence row per family; known_issues sums it up. The parameters are those of
--   wedge and stuck_ranks, which it computes once for every family (with desync).
"""

HEADER_MATCHES = """-- question: Which known upstream bug families does the evidence match, how strongly, and what is the
--   workaround? (generated from queries/known_issues/*.sql and $LOGCORR_KNOWN_ISSUES)
-- tables: known_issue_evidence, config
-- columns:
--   rank            1 = the best match
--   family          the family's id
--   title           what the family is
--   strength        signature+config (evidence and the engine's configuration allow it) or signature
--                   (evidence; configuration not known). A configuration alone is never a match.
--   evidence_rows   how many evidence rows
--   first_ts        the first of them (UTC)
--   event_ids       their events.event_id (captures have none: see evidence)
--   evidence        the evidence in words, each with its source position
--   config_check    the settings that make it apply, or "cannot tell: …"
--   needs           the configuration the family needs, in words
--   version_check   the fixed version against this engine's version, where both are known
--   workaround      what to do now
--   fix             the upstream fix (PR, version)
--   explains        what the family explains in the incident
--   links           upstream issues and pull requests
-- parameters: none.
-- reading: rows whose engine's configuration rules the family out are left out (see
--   known_issue_evidence, config_verdict = against). Empty: no family has evidence here.
"""


def saved_queries(families: dict[str, Family] | None = None) -> dict[str, str]:
    """``{name: text}`` of the two generated saved queries (header + SQL), for ``saved.load_saved``."""
    families = load_families() if families is None else families
    return {
        "known_issue_evidence": HEADER_EVIDENCE + evidence_sql(families) + "\n",
        "known_issues": HEADER_MATCHES + known_issues_sql(families) + "\n",
    }


def report_sections(matches, config) -> list[str]:
    """Markdown lines of the report's "Known upstream issues" and "Configuration" sections.

    Args:
        matches: ``known_issues`` rows (polars DataFrame; empty or column-less when OUT has none), in
            the order to show them (``findings.ranked_families``; a ``why`` column on the first).
        config: ``config`` rows (likewise).
    """
    out = ["", "## Known upstream issues (known_issues)", ""]
    if matches.height == 0:
        out += ["No known family has evidence rows here (a configuration alone is never a match).", ""]
    for m in matches.iter_rows(named=True):
        roles = sorted(set(re.findall(r"\b(prefill|decode)\b", m["evidence"] or "")))
        now = m["workaround"] or ""
        flag = re.search(r"--[a-z][a-z0-9-]+", now)
        if flag and roles:
            now = f"run {' and '.join(roles)} with `{flag.group(0)}`. {now}"
        issue = re.search(r"sglang#\d+", m["title"] or "") or re.search(r"sglang#\d+", m["workaround"] or "")
        check = m["version_check"] or ""  # without a fixed release it repeats the fix text in brackets
        check = check.partition(" (")[0] if check.startswith("no release with a fix is known") else check
        out += [  # the action first, the evidence under it, the links last: one short line each
            f"**{m['rank']}. {m['family']}: {m['title']}** ({m['strength']}, {m['evidence_rows']} evidence rows"
            f"{', ' + issue.group(0) if issue else ''})",
            "",
            *([f"- First because it is {m['why']}."] if m.get("why") else []),
            f"- What to do now: {now}",
            f"- What matches: {md(m['evidence'])}.",
            f"- Configuration: {md(m['config_check'])} (needs {m['needs']}).",
            f"- Fix: {m['fix']}; {check}.",
            f"- Links: {m['links']}.",
            "",
        ]
    out += ["## Configuration (config)", ""]
    if config.height == 0:
        out.append("cannot tell: logcorr read no server_args line or launch command.")
        return out
    cols = [
        "tp_size", "dp_size", "pp_size", "ep_size", "enable_dp_attention", "disaggregation_mode",
        "disaggregation_transfer_backend", "disable_overlap_schedule", "enable_hierarchical_cache",
        "hicache_storage_backend", "speculative_algorithm", "watchdog_timeout", "dist_timeout",
        "chunked_prefill_size", "model_path", "sglang_version",
    ]  # fmt: skip
    heads = [f"{r['role']} pid {r['pid']} ({r['origin']})" for r in config.iter_rows(named=True)]
    out.append("| setting | " + " | ".join(heads) + " |")
    out.append("|---|" + "---|" * len(heads))
    for c in cols:
        vals = ["" if v is None else str(v) for v in config[c].to_list()]
        mark = "**" if len(set(vals)) > 1 else ""
        out.append(f"| {mark}{c}{mark} | " + " | ".join(md(v, cell=True) for v in vals) + " |")
    for r in config.iter_rows(named=True):
        extra = [x for x in (r["defaulted"] and f"SGLang defaults (not on the command line): {r['defaulted']}",
                             r["disagreements"] and f"server_args and command line differ: {r['disagreements']}",
                             r["note"]) if x]  # fmt: skip
        if extra:
            out.append(f"- {r['role']} pid {r['pid']}: " + "; ".join(md(x) for x in extra))
    return [*out, "", "Settings that differ between the engines are in bold."]
