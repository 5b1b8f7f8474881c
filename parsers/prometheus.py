"""A Prometheus scrape (the ``/metrics`` text exposition) → the ``metrics`` table.

Format: Prometheus' text exposition format 0.0.4 (prometheus.io/docs/instrumenting/exposition_formats),
as SGLang's ``--enable-metrics`` serves it (``observability/metrics_collector.py``, 2025-2026):
``# HELP name text`` and ``# TYPE name gauge|counter|histogram|summary|untyped`` lines, then one sample
per line, ``name{label="value",…} value [timestamp]``: the value a float (``NaN``, ``+Inf``, ``-Inf``
too), the optional timestamp milliseconds since the epoch (OpenMetrics' ``# EOF`` and seconds with a
fraction are read too). Label values escape ``\\``, ``\"`` and ``\n``.

``logcorr.inputs.scrape`` makes one record of each sample line, of unit ``UNIT``; ``metrics`` reads
those records back into the table, and the ``# TYPE`` records of the same input give each sample its
type. SGLang's labels ``engine_type``, ``tp_rank``, ``pp_rank``, ``dp_rank`` (and ``moe_ep_rank``) get
columns of their own; every label stays in ``labels`` (JSON).
"""

from __future__ import annotations

import polars as pl

from logcorr.store.schema import METRICS

UNIT = "metrics-scrape"  # the unit of a sample's record: what tells it from any process's line
NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"'
VALUE = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|Inf|inf|NaN|nan)"
SAMPLE = (
    rf"^(?P<name>{NAME})(?:\{{(?P<labels>(?:{LABEL}(?:,\s*{LABEL})*)?,?)\}})?[ \t]+"
    rf"(?P<value>{VALUE})(?:[ \t]+(?P<ts>-?\d+(?:\.\d+)?))?[ \t]*$"
)
META = rf"^#[ \t]+(?P<what>HELP|TYPE|UNIT)[ \t]+(?P<name>{NAME})(?:[ \t]+(?P<text>.*))?$"
# a histogram's or summary's series and the family they belong to
FAMILY_SUFFIX = r"_(?:bucket|sum|count|total|created|gcount|gsum)$"
# SGLang's rank and role labels → their columns
LABEL_COLUMNS = {
    "engine_type": ("engine_type", pl.String),
    "tp_rank": ("tp_rank", pl.Int16),
    "pp_rank": ("pp_rank", pl.Int16),
    "dp_rank": ("dp_rank", pl.Int16),
    "ep_rank": ("moe_ep_rank", pl.Int16),
}


def is_exposition(lines: list[str]) -> bool:
    """Are ``lines`` (the first non-blank lines of an input) a text exposition: nine in ten are samples
    or ``#`` lines (the format's comments: ``# HELP/TYPE``, ``# EOF`` and any other, which Prometheus
    ignores), half at least are samples or ``# HELP/TYPE`` lines, and one at least is a sample. Never
    raises."""
    if not lines:
        return False
    s = pl.Series("l", lines, pl.String)
    sample = s.str.contains(SAMPLE)
    meta = s.str.contains(META) | (s == "# EOF")
    comment = s.str.contains(r"^[ \t]*#")
    return (
        bool(sample.any())
        and int((sample | comment).sum()) * 10 >= 9 * len(lines)
        and int((sample | meta).sum()) * 2 >= len(lines)
    )


def sample_time(ts: pl.Expr) -> pl.Expr:
    """An exposition timestamp → UTC time: milliseconds since the epoch (Prometheus text), or seconds
    with a fraction (OpenMetrics); null when absent or not from 1970-9999."""
    x = ts.cast(pl.Float64, strict=False)
    us = pl.when(ts.str.contains(r"\.")).then(x * 1e6).otherwise(x * 1e3).round(0).cast(pl.Int64)
    return pl.when((us >= 0) & (us < 253_402_300_800_000_000)).then(us).cast(pl.Datetime("us", "UTC"))


def _labels_json(labels: pl.Expr) -> pl.Expr:
    """``a="1",b="x\\"y"`` → ``{"a":"1","b":"x\\"y"}``: the exposition's escapes are JSON's."""
    pair = r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"'
    return pl.concat_str(
        pl.lit("{"),
        labels.fill_null("").str.replace_all(pair, r'"$1":"$2"').str.strip_chars(","),
        pl.lit("}"),
    )


def metrics(ev: pl.DataFrame) -> pl.DataFrame:
    """``METRICS`` rows of the sample records among ``ev`` (``events`` columns): those of unit ``UNIT``
    whose text is a sample line (their ``ts`` is the sample's, as ``inputs.scrape`` dated it); the
    ``# TYPE`` records of the same input in the chunk give ``type``. Empty when there are none.
    Never raises."""
    if "unit" not in ev.columns or ev.height == 0:
        return pl.DataFrame(schema=METRICS.schema)
    recs = ev.filter(pl.col("unit") == UNIT)
    if recs.height == 0:
        return pl.DataFrame(schema=METRICS.schema)
    meta = recs.select("source", pl.col("message").str.extract_groups(META).alias("m")).unnest("m")
    types = meta.filter(pl.col("what") == "TYPE").select("source", "name", pl.col("text").alias("type"))
    types = types.unique(["source", "name"], keep="last")
    sample = pl.col("message").str.extract_groups(SAMPLE)
    rows = recs.with_columns(
        sample.struct.field("name").alias("name"),
        _labels_json(sample.struct.field("labels")).alias("labels"),
        sample.struct.field("value").str.to_lowercase().cast(pl.Float64, strict=False).alias("value"),
    ).filter(pl.col("name").is_not_null())
    rows = rows.with_columns(pl.col("name").str.replace(FAMILY_SUFFIX, "").alias("family"))
    typed = rows.join(types, on=["source", "name"], how="left").join(
        types.rename({"name": "family", "type": "family_type"}), on=["source", "family"], how="left"
    )
    out = typed.with_columns(
        pl.when(pl.col("type").is_not_null())
        .then(pl.col("name"))
        .otherwise(pl.col("family"))
        .alias("family"),
        pl.coalesce("type", "family_type").alias("type"),
        *(
            pl.col("labels").str.json_path_match(f"$.{key}").cast(t, strict=False).alias(column)
            for column, (key, t) in LABEL_COLUMNS.items()
        ),
    )
    return out.select(pl.col(c).cast(t, strict=False).alias(c) for c, t in METRICS.schema.items())
