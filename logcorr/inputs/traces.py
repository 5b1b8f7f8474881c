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
from logcorr.store.schema import conform

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


def _spans(path: Path, report: SourceReport) -> list[dict]:
    spans = []
    for doc in documents(path, report):
        for resource in doc.get("resourceSpans") or []:
            res = attributes((resource.get("resource") or {}).get("attributes"))
            for scope in resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans") or []:
                for span in scope.get("spans") or []:
                    if isinstance(span, dict) and span.get("spanId"):
                        spans.append({**span, "_resource": res})
    return spans


def _inherited(spans: list[dict]) -> dict[tuple[str, str], dict]:
    """Per (trace, span): the rid, room, role of its request root and the ranks, pid of its thread span,
    found by walking up its parents (within the file)."""
    by_id = {(s.get("traceId"), s.get("spanId")): s for s in spans}
    found: dict[tuple[str, str], dict] = {}

    def of(key, depth=0) -> dict:
        if key in found:
            return found[key]
        span = by_id.get(key)
        if span is None or depth > 64:
            return {}
        attrs = attributes(span.get("attributes"))
        parent = (key[0], span.get("parentSpanId")) if span.get("parentSpanId") else None
        up = dict(of(parent, depth + 1)) if parent else {}
        root = ROOT_NAME.match(span.get("name") or "")
        if root:
            up["role"] = ROLE_OF.get((root.group("role") or "").lower(), up.get("role"))
        for k in ("rid", "tp_rank", "pp_rank", "dp_rank", "pid"):
            if attrs.get(k) is not None:
                up[k] = attrs[k]
        if (room := _room(attrs.get("bootstrap_room"))) is not None:
            up["bootstrap_room"] = room
        found[key] = up
        return up

    for key in by_id:
        of(key)
    return found


def span_line(span: dict, inherited: dict) -> str:
    """The ``SPAN_LINE`` text of one span (``parsers.otel.SPAN_LINE``)."""
    start, end = span.get("startTimeUnixNano"), span.get("endTimeUnixNano")
    status = span.get("status") or {}
    code = STATUS.get(str(status.get("code"))) if isinstance(status, dict) else None
    fields = {
        "trace_id": span.get("traceId"),
        "span_id": span.get("spanId"),
        "parent_span_id": span.get("parentSpanId") or None,
        "start_ns": start,
        "end_ns": end,
        "status": code,
        **{k: inherited.get(k) for k in ("rid", "bootstrap_room", "tp_rank", "pp_rank", "dp_rank", "pid")},
        "service": span["_resource"].get("service.name"),
    }
    shown = " ".join(f"{k}={v}" for k, v in fields.items() if v not in (None, ""))
    return f"OTel span {json.dumps(span.get('name') or '', ensure_ascii=False)}: {shown}"


def read(path: Path, report: SourceReport) -> Iterator[pl.DataFrame]:
    """Record chunks (``journald.RECORD_COLUMNS``) of one OTLP traces file, a span each at its start
    time (UTC), in the file's order; ``report.notes`` says how many spans of how many traces and that
    unfinished requests are absent. A document cut short keeps the spans before the cut (named in
    ``report.errors``, by ``exports.documents``)."""
    report.bytes += path.stat().st_size
    spans = _spans(path, report)
    inherited = _inherited(spans)
    rows = []
    for i, span in enumerate(spans):
        up = inherited.get((span.get("traceId"), span.get("spanId")), {})
        start = span.get("startTimeUnixNano")
        us = int(start) // 1000 if str(start or "").isdigit() else None
        host = span["_resource"].get("host.name")
        unit = f"{UNIT}/{up['role']}" if up.get("role") else UNIT
        rows.append({"ts_us": us, "host": host, "unit": unit, "message": span_line(span, up),
                     "source": report.source, "source_pos": f"span {i}", "stream": f"{report.source}|{i}"})  # fmt: skip
    traces = len({s.get("traceId") for s in spans})
    report.notes.append(
        f"OTLP traces: {len(spans):,} spans of {traces:,} traces (spans are exported when they end: a request "
        "still in flight at the incident is not in the file)"
    )
    report.unit_roles = {f"{UNIT}/{r}": r for r in ROLE_OF.values()}  # type: ignore[attr-defined]
    for at in range(0, len(rows), CHUNK_SPANS):
        frame = pl.DataFrame(rows[at : at + CHUNK_SPANS], infer_schema_length=None)
        frame = frame.with_columns(journald.realtime(pl.col("ts_us").cast(pl.String)).alias("ts")).drop(
            "ts_us"
        )
        yield conform(frame, journald.RECORD_COLUMNS, strict=False)
