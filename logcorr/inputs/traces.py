"""OpenTelemetry traces of SGLang's ``--enable-trace`` (OTLP JSON) → one record per span.

The file: what an OpenTelemetry collector's ``file`` exporter writes (SGLang's
``examples/monitoring/opentelemetry.yaml`` sends its traces to ``/tmp/otel_trace.json``): one
``ExportTraceServiceRequest`` per line, or one document (an object or an array of them):
``{"resourceSpans":[{"resource":{"attributes":[…service.name…]},"scopeSpans":[{"spans":[{"traceId",
"spanId","parentSpanId","name","startTimeUnixNano","endTimeUnixNano","attributes":[…],"status":{…}}]}]}]}``
(``opentelemetry-proto``'s JSON encoding: ids in hex, times as strings of nanoseconds).

SGLang's span model (``python/sglang/srt/observability/trace.py``, 2026): a request's root span
``"<role> Req <rid[:8]>"`` (role empty for a unified server) with attributes ``rid``, ``module``
(``sglang::…``) and ``bootstrap_room`` as a hex string; under it one span per thread,
``"<label> [TP n] [PP n] [DP n] (host:<machine-id[:8]> | pid:<thread id>)"`` with ``tp_rank``,
``pp_rank``, ``dp_rank``, ``host_id``, ``pid``, ``thread_label`` (status ERROR when the request was
aborted); under those the stages (``prefill_forward``, ``decode_bootstrap`` …). A span inherits the
rid, room and role of its request's root and the ranks of its thread's span.

Spans are exported when they end: a request wedged in flight never ended its spans and is not in
the file; the trace shows what finished.

Each span becomes one record (``SPAN_LINE``) at its start, of unit ``UNIT`` (``UNIT/prefill``,
``UNIT/decode`` for a PD half's spans, so the role is the request's), which ``parsers.otel.spans``
reads back into the ``spans`` table; its ``rid=`` and ``bootstrap_room=`` reach ``events`` and
``rooms`` as any record's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import polars as pl

from logcorr.inputs.exports import attributes, documents
from logcorr.inputs.source import SourceReport
from logcorr.parsers import journald
from logcorr.parsers.otel import UNIT

FORMAT = "otlp-traces"
CHUNK_SPANS = 65_536
ROOT_NAME = re.compile(r"^(?:(?P<role>\w+) )?Req (?P<rid>\S+)$")
STATUS = {"1": "OK", "2": "ERROR", "STATUS_CODE_OK": "OK", "STATUS_CODE_ERROR": "ERROR"}
ROLE_OF = {"prefill": "prefill", "decode": "decode"}


def sniff_traces(text: str) -> bool:
    """Does the text start like an OTLP JSON traces export (``{"resourceSpans":`` or an array of them)?"""
    return bool(re.match(r'\s*\[?\s*\{\s*"resourceSpans"\s*:', text))


def _room(value: str | None) -> int | None:
    """``bootstrap_room`` as SGLang sets it (``str(hex(room))``), or a decimal; None when neither."""
    if not value:
        return None
    try:
        return int(value, 16) if value.lower().startswith("0x") else int(value)
    except ValueError:
        return None


# What each span leaves for its record (``span_line``): its own fields, as text (``_shown``), its key and
# its parent's (``repr`` of the JSON values: what a dict keyed by them tells apart), and what it gives its
# descendants (``INHERITED``; ``role`` from a request root's name).
SHOWN = ("trace_id", "span_id", "parent_span_id", "start_ns", "end_ns", "status")
INHERITED = ("rid", "bootstrap_room", "tp_rank", "pp_rank", "dp_rank", "pid", "role")
COLUMNS = ("key", "parent", "trace", "name", *SHOWN, *INHERITED, "service", "host", "ts_us")
_SPANS = {"*": {"spans": {"*": None}}}
SPINE = {
    "resourceSpans": {"*": {"resource": {}, "scopeSpans": _SPANS, "instrumentationLibrarySpans": _SPANS}}
}  # exports.documents
MAX_DEPTH = 64  # parents walked up from a span at most (a chain longer than any request's is hostile)


def _shown(value) -> str | None:
    """A span's field as its record shows it: ``f"{value}"``, None for a value it leaves out (none, "")."""
    return None if value is None or value == "" else f"{value}"


def _row(span: dict, res: dict[str, str]) -> tuple:
    """One span as the values of ``COLUMNS`` (its own: what it inherits is found later, ``_resolve``)."""
    attrs = attributes(span.get("attributes"))
    name = span.get("name")
    root = ROOT_NAME.match(name) if isinstance(name, str) else None
    start, end = span.get("startTimeUnixNano"), span.get("endTimeUnixNano")
    status = span.get("status") or {}
    code = STATUS.get(str(status.get("code"))) if isinstance(status, dict) else None
    trace, parent = span.get("traceId"), span.get("parentSpanId")
    room = _room(attrs.get("bootstrap_room"))
    return (
        repr((trace, span.get("spanId"))),
        repr((trace, parent)) if parent else None,
        repr(trace),
        json.dumps(name or "", ensure_ascii=False),
        *(_shown(v) for v in (trace, span.get("spanId"), parent or None, start, end, code)),
        *(attrs.get(k) for k in ("rid",)),
        None if room is None else str(room),
        *(attrs.get(k) for k in ("tp_rank", "pp_rank", "dp_rank", "pid")),
        ROLE_OF.get((root.group("role") or "").lower()) if root else None,
        res.get("service.name"),
        res.get("host.name"),
        int(start) // 1000 if str(start or "").isdigit() else None,
    )


def _spans(path: Path, report: SourceReport) -> pl.DataFrame:
    """Every span of the file (``COLUMNS``, in the file's order), gathered ``CHUNK_SPANS`` at a time into
    columns: no span is kept as a Python object past its chunk."""
    frames, rows = [], []
    schema = {c: pl.String for c in COLUMNS} | {"ts_us": pl.Int64}

    def flush() -> None:
        frames.append(pl.DataFrame(rows, schema=schema, orient="row"))
        rows.clear()

    for doc in documents(path, report, SPINE):
        for resource in doc.get("resourceSpans") or []:
            res = attributes((resource.get("resource") or {}).get("attributes"))
            for scope in resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans") or []:
                for span in scope.get("spans") or []:
                    if isinstance(span, dict) and span.get("spanId"):
                        rows.append(_row(span, res))
                        if len(rows) >= CHUNK_SPANS:
                            flush()
    flush()
    return pl.concat(frames)


def _resolve(spans: pl.DataFrame) -> pl.DataFrame:
    """Per span key: what it inherits (``INHERITED``), its own value else its nearest ancestor's within the
    file (a request root gives rid, room and role; a thread span its ranks and pid), found by joining
    each span to its parent's values until nothing changes (at most ``MAX_DEPTH`` rounds). A key given
    twice is the last span of that key, as a span id names one span."""
    own = spans.select("key", "parent", *INHERITED).unique("key", keep="last", maintain_order=True)
    found = own
    for _ in range(MAX_DEPTH):
        up = found.select(pl.col("key").alias("parent"), *[pl.col(c).alias(f"_{c}") for c in INHERITED])
        step = own.join(up, on="parent", how="left", maintain_order="left").select(
            "key", "parent", *[pl.coalesce(c, f"_{c}").alias(c) for c in INHERITED]
        )
        if step.equals(found):
            break
        found = step
    return found.drop("parent")


def span_line(fields: dict[str, pl.Expr]) -> pl.Expr:
    """The ``SPAN_LINE`` text of each span (``parsers.otel.SPAN_LINE``): ``OTel span "<name>": k=v …``
    of the fields given (in order), those without a value left out."""
    shown = pl.concat_str(
        [pl.when(v.is_not_null() & (v != "")).then(pl.lit(f"{k}=") + v) for k, v in fields.items()],
        separator=" ",
        ignore_nulls=True,
    )
    return pl.format("OTel span {}: {}", pl.col("name"), shown.fill_null(""))


def read(path: Path, report: SourceReport) -> Iterator[pl.DataFrame]:
    """Record chunks (``journald.RECORD_COLUMNS``) of one OTLP traces file, a span each at its start
    time (UTC), in the file's order; ``report.notes`` says how many spans of how many traces and that
    unfinished requests are absent. A document cut short keeps the spans before the cut (named in
    ``report.errors``, by ``exports.documents``). The spans are held as columns (about 200 bytes a
    span), never as Python objects."""
    report.bytes += path.stat().st_size
    spans = _spans(path, report)
    inherited = _resolve(spans)
    spans = spans.drop(INHERITED)
    traces = spans["trace"].n_unique()
    report.notes.append(
        f"OTLP traces: {spans.height:,} spans of {traces:,} traces (spans are exported when they end: a request "
        "still in flight at the incident is not in the file)"
    )
    report.unit_roles = {f"{UNIT}/{r}": r for r in ROLE_OF.values()}  # type: ignore[attr-defined]
    fields = (
        {k: pl.col(k) for k in SHOWN}
        | {k: pl.col(k) for k in INHERITED if k != "role"}
        | {"service": pl.col("service")}
    )
    for at in range(0, spans.height, CHUNK_SPANS):
        chunk = spans.slice(at, CHUNK_SPANS).with_row_index(
            "i", at
        )  # joined a chunk at a time: no copy of all
        chunk = chunk.join(inherited, on="key", how="left", maintain_order="left")
        yield chunk.select(
            journald.record_columns(
                ts=journald.realtime(pl.col("ts_us").cast(pl.String)),
                host=pl.col("host"),
                unit=pl.when(pl.col("role").is_not_null() & (pl.col("role") != ""))
                .then(pl.lit(f"{UNIT}/") + pl.col("role"))
                .otherwise(pl.lit(UNIT)),
                message=span_line(fields),
                source=pl.lit(report.source),
                source_pos=pl.format("span {}", "i"),
                stream=pl.format("{}|{}", pl.lit(report.source), "i"),
            )
        )
