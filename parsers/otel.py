"""The span records of an OTLP traces file → the ``spans`` table.

``logcorr.inputs.traces`` makes one record of each span, of unit ``UNIT`` (or ``UNIT/prefill``,
``UNIT/decode``), whose text is ``SPAN_LINE`` (written by ``inputs.traces.span_line``, so the format
is in one place); ``spans`` reads those records back. The format is logcorr's own.
"""

from __future__ import annotations

import polars as pl

from logcorr.store.schema import ROOM_TYPE, SPANS

UNIT = "otel-trace"
SPAN_LINE = (
    r'^OTel span "(?P<name>(?:[^"\\]|\\.)*)": trace_id=(?P<trace_id>\S+) span_id=(?P<span_id>\S+)'
    r"(?: parent_span_id=(?P<parent_span_id>\S+))?(?: start_ns=(?P<start_ns>\d+))?(?: end_ns=(?P<end_ns>\d+))?"
    r"(?: status=(?P<status>\w+))?(?: rid=(?P<rid>\S+))?(?: bootstrap_room=(?P<bootstrap_room>\d+))?"
    r"(?: tp_rank=(?P<tp_rank>\d+))?(?: pp_rank=(?P<pp_rank>\d+))?(?: dp_rank=(?P<dp_rank>\d+))?"
    r"(?: pid=(?P<pid>\d+))?(?: service=(?P<service>.+))?$"
)


def _ns(text: pl.Expr) -> pl.Expr:
    us = text.cast(pl.Int64, strict=False) // 1000
    return pl.when((us >= 0) & (us < 253_402_300_800_000_000)).then(us).cast(pl.Datetime("us", "UTC"))


def spans(ev: pl.DataFrame) -> pl.DataFrame:
    """``SPANS`` rows of the span records among ``ev`` (``events`` columns): those whose unit is
    ``UNIT`` or ``UNIT/<role>`` and whose text is a ``SPAN_LINE``. Empty when there are none. Never raises."""
    if "unit" not in ev.columns or ev.height == 0:
        return pl.DataFrame(schema=SPANS.schema)
    recs = ev.filter(pl.col("unit").str.starts_with(UNIT))
    if recs.height == 0:
        return pl.DataFrame(schema=SPANS.schema)
    f = pl.col("message").str.extract_groups(SPAN_LINE)
    fields = ("trace_id", "span_id", "parent_span_id", "status", "rid", "service")
    rows = recs.select(
        "event_id", "ts", "host", "role", "source", "source_pos",
        f.struct.field("name").str.replace_all(r'\\(["\\])', "$1").alias("name"),
        *(f.struct.field(c).alias(c) for c in fields),
        f.struct.field("bootstrap_room").cast(ROOM_TYPE, strict=False).alias("bootstrap_room"),
        *(f.struct.field(c).cast(pl.Int16, strict=False).alias(c) for c in ("tp_rank", "pp_rank", "dp_rank")),
        f.struct.field("pid").cast(pl.Int32, strict=False).alias("pid"),
        pl.lit(None, pl.Int16).alias("ep_rank"),
        _ns(f.struct.field("start_ns")).alias("start_ts"),
        _ns(f.struct.field("end_ns")).alias("end_ts"),
    ).filter(pl.col("span_id").is_not_null())  # fmt: skip
    rows = rows.with_columns(
        ((pl.col("end_ts") - pl.col("start_ts")).dt.total_microseconds() / 1000).alias("duration_ms")
    )
    return rows.select(pl.col(c).cast(t, strict=False).alias(c) for c, t in SPANS.schema.items())
