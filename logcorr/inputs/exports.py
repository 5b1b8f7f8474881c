"""Log platforms' whole-document exports → JSON lines of the ``log-export`` shape, which
``containers.read`` then reads as every other JSON-lines export.

The documents (field names from each project's reference; samples in the tests):

- ``otlp-logs``: OpenTelemetry's OTLP JSON (``opentelemetry-proto`` ``ExportLogsServiceRequest``), one
  object per line as the collector's ``file`` exporter writes it, or one object:
  ``{"resourceLogs":[{"resource":{"attributes":[{"key":"k8s.pod.name","value":{"stringValue":…}}]},
  "scopeLogs":[{"logRecords":[{"timeUnixNano":…,"body":{"stringValue":…},"attributes":[…]}]}]}]}``;
  the resource's and the record's attributes give pod, container, namespace, node and unit
  (``k8s.*``, ``host.name``, ``service.name``).
- ``loki-range``: Grafana Loki's HTTP API ``query_range`` answer for streams:
  ``{"status":"success","data":{"resultType":"streams","result":[{"stream":{labels},"values":[["<ns>","<line>"]]}]}}``.
- ``es-response``: an Elasticsearch/OpenSearch search answer: ``{"hits":{"hits":[{"_source":{…}}]}}``;
  each hit's ``_source`` is a record (``message``, ``@timestamp``, Kubernetes and ECS fields).

Each record becomes ``{"line", "timestamp", "labels": {"pod", "container", "namespace", "node",
"unit"}}`` (labels as the platform names them are kept too), in the document's order. A document that
is not valid JSON is read as far as it parses: the rest is named in the report.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import polars as pl

DOCUMENTS = ("otlp-logs", "loki-range", "es-response")
# a document on several lines is parsed whole (Python's json: several times its size in memory)
MAX_DOCUMENT_BYTES = 256 << 20
# a newest-first export larger than this is read as it is (and said so), not turned around in memory
MAX_REVERSED_BYTES = 256 << 20

# OTel semantic conventions (resource attributes) → the labels the log-export reader looks up
OTEL_LABELS = {
    "k8s.pod.name": "pod",
    "k8s.container.name": "container",
    "k8s.namespace.name": "namespace",
    "k8s.node.name": "node",
    "host.name": "node",
    "service.name": "unit",
}


def sniff_document(text: str) -> str | None:
    """The document format of an input from its first characters (``text``), or None."""
    start = text.lstrip()[:1]
    if start not in ("{", "["):
        return None
    if re.match(r'\s*\{\s*"resourceLogs"\s*:', text):
        return "otlp-logs"
    if re.search(r'"resultType"\s*:\s*"streams"', text[:4096]):
        return "loki-range"
    if re.search(r'"hits"\s*:\s*\{', text[:4096]) and '"_source"' in text:
        return "es-response"
    return None


def flatten(path: Path, fmt: str, scratch: Path, report) -> Path:
    """Write ``path``'s records (``fmt`` one of ``DOCUMENTS``) as JSON lines into ``scratch`` and return
    that file; ``report.notes`` says how many records the document held, ``report.errors`` where it
    stopped parsing. Raises ``OSError`` when ``path`` cannot be read or ``scratch`` written."""
    out = scratch / f"{path.name}.{fmt}.jsonl"
    n = 0
    with open(out, "w", encoding="utf-8") as f:
        for record in _records(path, fmt, report):
            f.write(json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n")
            n += 1
    report.notes.append(f"{fmt}: {n:,} log records in the document")
    return out


def _records(path: Path, fmt: str, report) -> Iterator[dict]:
    if fmt == "otlp-logs":  # one request per line (the file exporter), or one pretty-printed object
        for doc in documents(path, report):
            yield from _otlp(doc)
        return
    for doc in documents(path, report):
        yield from (_loki if fmt == "loki-range" else _hits)(doc)


def documents(path: Path, report) -> Iterator[dict]:
    """The JSON objects of the file: one per line, streamed (the collector's file exporter, NDJSON),
    or, when the first line is no whole JSON value, the file as one document (pretty-printed; at most
    ``MAX_DOCUMENT_BYTES``). Bytes that are no UTF-8 are replaced; a value that does not parse ends the
    read, named in ``report.errors``."""
    with open(path, "rb") as f:
        first = f.readline()
        try:
            json.loads(first)
            by_line = True
        except ValueError:
            by_line = False
        f.seek(0)
        if by_line:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    yield from _objects(json.loads(line.decode("utf-8", errors="replace")))
                except ValueError as e:
                    report.errors.append(f"{path}: line {n:,} is not JSON ({e}): the rest is not read")
                    return
            return
        if path.stat().st_size > MAX_DOCUMENT_BYTES:
            report.errors.append(
                f"{path}: a JSON document of {path.stat().st_size / 2**20:,.0f} MiB on more than one line is "
                f"more than {MAX_DOCUMENT_BYTES >> 20} MiB to read whole: not read; export it one object per line"
            )
            return
        text = f.read().decode("utf-8", errors="replace")
    decoder = json.JSONDecoder()
    i = 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return
        try:
            doc, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError as e:
            report.errors.append(f"{path}: not JSON from character {i:,} on ({e.msg}): the rest is not read")
            return
        yield from _objects(doc)


def _objects(doc) -> Iterator[dict]:
    if isinstance(doc, dict):
        yield doc
    elif isinstance(doc, list):
        yield from (d for d in doc if isinstance(d, dict))


def _value(v) -> str | None:
    """An OTLP ``AnyValue`` as text."""
    if not isinstance(v, dict):
        return None if v is None else str(v)
    for key in ("stringValue", "intValue", "doubleValue", "boolValue"):
        if key in v:
            return str(v[key])
    return json.dumps(v, separators=(",", ":")) if v else None


def attributes(items) -> dict[str, str]:
    """OTLP ``attributes`` (``[{"key", "value": AnyValue}]``) as ``{key: text}``."""
    return {a.get("key"): _value(a.get("value")) for a in items or [] if isinstance(a, dict) and a.get("key")}


def _labels(attrs: dict[str, str]) -> dict[str, str]:
    labels = dict(attrs)
    for key, label in OTEL_LABELS.items():
        if attrs.get(key) and not labels.get(label):
            labels[label] = attrs[key]
    return labels


def _otlp(doc: dict) -> Iterator[dict]:
    for resource in doc.get("resourceLogs") or []:
        res = attributes((resource.get("resource") or {}).get("attributes"))
        for scope in resource.get("scopeLogs") or []:
            for rec in scope.get("logRecords") or []:
                labels = _labels({**res, **attributes(rec.get("attributes"))})
                ts = rec.get("timeUnixNano") or rec.get("observedTimeUnixNano")
                yield {"line": _value(rec.get("body")) or "", "timestamp": str(ts or ""), "labels": labels}


def _loki(doc: dict) -> Iterator[dict]:
    for stream in (doc.get("data") or {}).get("result") or []:
        labels = {k: str(v) for k, v in (stream.get("stream") or {}).items()}
        values = [v for v in stream.get("values") or [] if isinstance(v, list) and len(v) >= 2]
        # the API answers newest first unless asked direction=forward: a stream is read oldest first
        values.sort(key=lambda v: int(v[0]) if str(v[0]).isdigit() else 0)
        for value in values:
            yield {"line": str(value[1]), "timestamp": str(value[0]), "labels": labels}


def _hits(doc: dict) -> Iterator[dict]:
    for hit in (doc.get("hits") or {}).get("hits") or []:
        source = hit.get("_source") if isinstance(hit, dict) else None
        if isinstance(source, dict):
            yield {"_source": source}


def newest_first(head_lines: list[str]) -> bool:
    """Do the first lines of a JSON-lines export run newest first? Loki's ``logcli query`` without
    ``--forward`` answers so (and, without ``--limit``, with the newest 30 lines only). True when at
    least 3 of 4 steps between timed lines go back in time."""
    from logcorr.inputs.containers import parse_lines  # containers → sniff → exports: at call time

    ts = parse_lines(pl.Series(head_lines[:200], dtype=pl.String), "log-export")["ts"].drop_nulls()
    steps = ts.diff().drop_nulls().dt.total_microseconds()
    back = int((steps < 0).sum())
    return steps.len() >= 2 and back * 4 >= steps.len() * 3


def oldest_first(path: Path, scratch: Path, report) -> Path:
    """``path`` turned around (its lines last to first) into ``scratch`` when its lines run newest first
    (``newest_first``), said in ``report.notes``; else ``path``. A file over ``MAX_REVERSED_BYTES`` is
    read as it is, and the note says its multi-line records may be split."""
    with open(path, "rb") as f:
        head = f.read(1 << 16).decode("utf-8", errors="replace").splitlines()[:200]
    if not newest_first([ln for ln in head if ln.strip()]):
        return path
    hint = "Loki's logcli answers so without --forward, and only the newest 30 lines without --limit"
    if path.stat().st_size > MAX_REVERSED_BYTES:
        report.notes.append(f"lines newest first ({hint}): read as they are; tracebacks may be split")
        return path
    out = scratch / f"{path.name}.oldest-first.jsonl"
    lines = path.read_bytes().splitlines()
    out.write_bytes(b"\n".join(reversed(lines)) + b"\n")
    report.notes.append(
        f"lines newest first ({hint}): read oldest first; export with --forward --limit 0 for every line"
    )
    return out
