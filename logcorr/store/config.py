"""The ``config`` table: each engine process's settings, from its ``server_args=ServerArgs(…)`` line
and its launch command line (journald ``_CMDLINE``), summed up at the end of an ingest.

``observations(ev)`` picks, per chunk of enriched events, the few records that matter (``server_args``
lines; one record per process and distinct command line that launches SGLang); ``rows(frames)`` turns
all of them into one ``config`` row per process (host, boot_id, unit, pid; a plain log without pids
gives one row per ``server_args`` line). When both exist the ``server_args`` value wins (it is the
resolved one) and a disagreement with the command line is named in ``disagreements``. With only a
command line, the typed columns it does not name take SGLang's declaration default (the same from
2025-08 to 2026-07 for every one of them, per SGLang's ``server_args.py``) and ``defaulted`` lists them.
"""

from __future__ import annotations

import re

import polars as pl

from logcorr.parsers import server_args as sa
from logcorr.store.schema import CONFIG, EVENTS

# The typed columns: field → (polars type, SGLang's default when a command line does not name it;
# None = unknown without a server_args line, e.g. resolved at start-up).
TYPED = {
    "tp_size": (pl.Int32, 1),
    "dp_size": (pl.Int32, 1),
    "pp_size": (pl.Int32, 1),
    "ep_size": (pl.Int32, 1),
    "nnodes": (pl.Int32, 1),
    "enable_dp_attention": (pl.Boolean, False),
    "disaggregation_mode": (pl.String, "null"),
    "disaggregation_transfer_backend": (pl.String, "mooncake"),
    "disable_overlap_schedule": (pl.Boolean, False),
    "enable_hierarchical_cache": (pl.Boolean, False),
    "hicache_storage_backend": (pl.String, None),
    "speculative_algorithm": (pl.String, None),
    "watchdog_timeout": (pl.Float64, 300.0),
    "dist_timeout": (pl.Float64, None),
    "chunked_prefill_size": (pl.Int64, None),
    "model_path": (pl.String, None),
}
OBS = {
    **{c: EVENTS.schema[c] for c in ("host", "boot_id", "unit", "role", "pid", "ts", "event_id")},
    "kind": pl.String,  # server_args, cmdline, version
    "text": pl.String,
    "source": pl.String,
    "source_pos": pl.String,
}
# A version an engine states: a pip/venv name ("sglang==0.5.8", "sglang-0.5.8.post1"), a docker tag
# ("lmsysorg/sglang:v0.5.6"), "sglang version: 0.5.6", a ``python -m sglang.check_env`` line
# ("sglang: 0.5.4.post1", the line's only text).
VERSION = re.compile(
    r"(?im)(?:\bsglang(?:==|-|:v|[ _]version[:= ]+v?)|^\s*sglang:\s+v?)(\d+\.\d+\.\d+(?:\.post\d+|rc\d+|\.dev\d+)?)"
)
_VERSION_HINT = r"(?im)sglang(?:==|-\d|:v\d|[ _]version)|^\s*sglang:\s+v?\d"


def observations(ev: pl.DataFrame) -> pl.DataFrame:
    """The records of one chunk of enriched events (``ingest``'s ``events`` columns plus ``body`` and
    ``cmdline``) that carry configuration: ``server_args=ServerArgs(`` lines, the first record of each
    (process, SGLang launch command line), and lines stating an SGLang version. Columns ``OBS``."""
    if ev.height == 0:
        return pl.DataFrame(schema=OBS)
    keep = [c for c in OBS if c not in ("kind", "text")]
    frames = _said(ev.filter(~_one_batch_line(ev)) if "kind" in ev.columns else ev, keep)
    if "cmdline" in ev.columns:
        cm = ev.filter(pl.col("cmdline").is_not_null())
        if cm.height:
            cm = cm.unique(["host", "boot_id", "unit", "pid", "cmdline"], keep="first", maintain_order=True)
            cm = cm.filter(pl.col("cmdline").str.contains(sa.LAUNCH.pattern))
            frames.append(cm.select(*keep, pl.lit("cmdline").alias("kind"), pl.col("cmdline").alias("text")))
    if not frames:
        return pl.DataFrame(schema=OBS)
    return pl.concat([f.cast(OBS) for f in frames]).select(list(OBS))  # type: ignore[arg-type]


def _one_batch_line(ev: pl.DataFrame) -> pl.Expr:
    """A record that is a batch line alone (most of a serving day): its text is SGLang's batch
    statistics, never a server_args line or a version, so it is not searched."""
    lines = pl.col("n_lines") if "n_lines" in ev.columns else pl.lit(1)
    return ((pl.col("kind") == "batch") & (lines == 1)).fill_null(False)


def _said(ev: pl.DataFrame, keep: list[str]) -> list[pl.DataFrame]:
    """The ``server_args`` and ``version`` observations of ``ev``'s texts."""
    body = ev["body"] if "body" in ev.columns else ev["message"]
    frames = []
    has_sa = body.str.contains(sa.MARKER, literal=True).fill_null(False)
    # an ASCII case-insensitive pass first (a sixth of Aho-Corasick's case-insensitive mode): the
    # Unicode case-insensitive regex over every line of a day costs a second
    maybe = body.str.contains("(?i-u)sglang").fill_null(False)
    has_v = maybe & body.str.contains(_VERSION_HINT).fill_null(False) if maybe.any() else maybe
    for kind, hit in (("server_args", has_sa), ("version", has_v)):
        if hit.any():
            frames.append(
                ev.filter(hit).select(*keep, pl.lit(kind).alias("kind"), body.filter(hit).alias("text"))
            )
    return frames


def unit_observations(found: list[dict], source: str) -> pl.DataFrame:
    """``OBS`` rows (kind ``cmdline``) of the launch command lines of a journal's units as
    ``logcorr.journal.unit_cmdlines`` found them: each with the first process that ran it (pid, boot, host,
    time of its first entry); the records of a journal carry no ``_CMDLINE`` themselves."""
    recs = [
        (
            f["host"],
            f["boot_id"],
            f["unit"],
            None,
            f["pid"],
            f["ts"],
            None,
            "cmdline",
            f["cmdline"],
            source,
            f"journalctl _CMDLINE=… (first entry of pid {f['pid']})",
        )
        for f in found
    ]
    df = pl.DataFrame(recs, schema={**OBS, "ts": pl.Int64}, orient="row")
    return df.with_columns(pl.from_epoch("ts", time_unit="us").dt.replace_time_zone("UTC")).cast(OBS)  # type: ignore[arg-type]


def _typed(value, dtype):
    if value is None:
        return None
    try:
        if dtype == pl.Boolean:
            return value if isinstance(value, bool) else str(value).lower() in ("true", "1")
        if dtype in (pl.Int32, pl.Int64):
            return int(value)
        if dtype == pl.Float64:
            return float(value)
    except (TypeError, ValueError):
        return None
    return None if value == "None" else str(value)


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == float(b)
    return a == b


def rows(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """One ``config`` row per engine process from the ``observations`` of every chunk of an ingest.

    A process is (host, boot_id, unit, pid); records without a pid (plain logs) are not grouped: each
    ``server_args`` line is its own row. Versions are taken from the process's own lines, else from
    its command line. Returns a frame with exactly the ``config`` columns, ordered by time."""
    obs = pl.concat(frames) if frames else pl.DataFrame(schema=OBS)
    if obs.height == 0:
        return pl.DataFrame(schema=CONFIG.schema)
    obs = obs.sort("ts", "event_id", nulls_last=True)
    groups: dict[tuple, dict] = {}
    by_unit: dict[str, set[str]] = {}  # the distinct launch command lines of each unit
    for unit, text in obs.filter(pl.col("kind") == "cmdline").select("unit", "text").iter_rows():
        by_unit.setdefault(unit, set()).add(text)
    cm_of_unit = {
        u: obs.filter((pl.col("kind") == "cmdline") & (pl.col("unit") == u)).row(0, named=True)
        for u, t in by_unit.items()
        if len(t) == 1 and u is not None  # processes outside any unit share no command line
    }
    # a paste names no process: a version it states (check_env's "sglang: 0.5.4") is its server_args
    # lines' when it states one version only
    pasted: dict[str, list[dict]] = {}
    for r in obs.iter_rows(named=True):
        key = (r["host"], r["boot_id"], r["unit"], r["pid"])
        if r["pid"] is None:  # no process to group by: each server_args line stands alone
            if r["kind"] == "version" and (m := VERSION.search(r["text"] or "")):
                pasted.setdefault(r["source"], []).append({**r, "_v": m.group(1)})
            if r["kind"] != "server_args":
                continue
            key = (*key, r["event_id"])
        g = groups.setdefault(key, {})
        slot = g.setdefault(r["kind"], r)
        if r["kind"] == "version" and slot is not r and not VERSION.search(slot["text"] or ""):
            g["version"] = r
    for key, g in groups.items():
        said = pasted.get(g.get("server_args", {}).get("source"), []) if key[3] is None else []
        if said and "version" not in g and len({v["_v"] for v in said}) == 1:
            g["version"] = said[0]
    out = []
    for key, g in groups.items():
        if "server_args" in g and "cmdline" not in g and key[2] in cm_of_unit:
            # a journal's process whose own command line is not in its records: its unit ran one
            # launch command (a restart runs the same one), so it is this process's
            g["cmdline"] = {**cm_of_unit[key[2]], "via_unit": True}
        if "server_args" in g or "cmdline" in g:
            out.append(_row(g))
    df = pl.DataFrame(out, schema=CONFIG.schema, orient="row") if out else pl.DataFrame(schema=CONFIG.schema)
    return df.sort("first_ts", "event_id", nulls_last=True)


def _row(g: dict) -> tuple:
    sa_rec, cm_rec = g.get("server_args"), g.get("cmdline")
    first = sa_rec or cm_rec
    notes: list[str] = []
    from_sa = sa.parse_server_args(sa_rec["text"]) if sa_rec else None
    from_cm = sa.parse_cmdline(cm_rec["text"]) if cm_rec else None
    if from_sa:
        notes += [f"server_args: {n}" for n in from_sa.notes]
    if from_cm:
        notes += [f"command line: {n}" for n in from_cm.notes]
    if cm_rec and cm_rec.get("via_unit"):
        notes.append(
            f"command line: the one launch command of {cm_rec['unit']} (journal entries carry no _CMDLINE)"
        )
    settings = dict(from_sa.fields) if from_sa else {}
    disagree = []
    for k, v in (from_cm.fields if from_cm else {}).items():
        if k not in settings:
            settings[k] = v
        elif not _same(settings[k], v):
            disagree.append(f"{k}: server_args {settings[k]!r}, cmdline {v!r}")
    typed, defaulted = {}, []
    # only a command line (or a cut server_args line): SGLang's default where it is version-independent
    use_defaults = from_sa is None or (not from_sa.complete and from_cm)
    for name, (dtype, default) in TYPED.items():
        if name in settings:
            typed[name] = _typed(settings[name], dtype)
        elif use_defaults and default is not None:
            typed[name] = default
            defaulted.append(name)
        else:
            typed[name] = None
    if "disable_overlap_schedule" in defaulted and (typed.get("pp_size") or 1) > 1:
        typed["disable_overlap_schedule"] = True  # __post_init__: pp_size > 1 turns overlap off
    role = first["role"]
    mode = typed.get("disaggregation_mode")
    if role in (None, "unknown") and mode:
        role = mode if mode in ("prefill", "decode") else "engine"
    found = (VERSION.search(rec["text"] or "") for rec in (g.get("version"), cm_rec) if rec)
    version = next((m.group(1) for m in found if m), None)
    origin = "+".join(k for k in ("server_args", "cmdline") if k in g)
    return (
        first["host"],
        first["boot_id"],
        first["unit"],
        role or "unknown",
        first["pid"],
        first["ts"],
        first["event_id"],
        origin,
        version,
        *[typed[n] for n in TYPED],
        ", ".join(defaulted) or None,
        "; ".join(disagree) or None,
        sa.to_json(settings),
        cm_rec["text"] if cm_rec else None,
        "; ".join(notes) or None,
        first["source"],
        first["source_pos"],
    )
