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

import codecs
import heapq
import json
import re
from collections.abc import Iterator
from pathlib import Path

import polars as pl

from logcorr.inputs.envelopes import parse_lines
from logcorr.inputs.source import MAX_LINE_BYTES, InputError

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
        for record in _records(path, fmt, report, scratch):
            f.write(json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n")
            n += 1
    report.notes.append(f"{fmt}: {n:,} log records in the document")
    return out


def _records(path: Path, fmt: str, report, scratch: Path) -> Iterator[dict]:
    if fmt == "otlp-logs":  # one request per line (the file exporter), or one pretty-printed object
        for doc in documents(path, report, SPINES[fmt], records=dict):
            yield from _otlp(doc)
        return
    if fmt == "loki-range":
        yield from _loki_streams(documents(path, report, SPINES[fmt]), scratch / f"{path.name}.loki")
        return
    for doc in documents(path, report, SPINES[fmt]):
        yield from _hits(doc)


def _loki_streams(docs: Iterator[dict], spill: Path) -> Iterator[dict]:
    """``_loki``'s records of each stream of ``docs``, oldest first. A stream that comes in several
    pieces (a document read in pieces, ``documents``) is sorted piece by piece, each piece kept in a
    file beside ``spill``, then merged (stable: as one sort of the stream would give)."""
    current, pieces = None, []  # the stream being read (held, so that its id is not reused), its pieces

    def merged() -> Iterator[dict]:
        if len(pieces) == 1 and isinstance(pieces[0], list):
            yield from pieces[0]
        elif pieces:
            files = [open(p, encoding="utf-8") for p in pieces]  # noqa: SIM115 — closed below
            try:
                lines = [(json.loads(line) for line in f) for f in files]
                yield from heapq.merge(*lines, key=lambda r: _ns(r["timestamp"]))
            finally:
                for f, p in zip(files, pieces, strict=True):
                    f.close()
                    p.unlink()

    for doc in docs:
        for stream in (doc.get("data") or {}).get("result") or []:
            if stream is not current:
                yield from merged()
                current, pieces = stream, []
            records = list(_loki({"data": {"result": [stream]}}))
            if pieces:  # a second piece of one stream: every piece to a file
                if isinstance(pieces[0], list):
                    pieces[0] = _spilled(pieces[0], spill.with_name(f"{spill.name}.0"))
                pieces.append(_spilled(records, spill.with_name(f"{spill.name}.{len(pieces)}")))
            else:
                pieces.append(records)
    yield from merged()


def _spilled(records: list[dict], path: Path) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    return path


def _ns(value) -> int:
    return int(value) if str(value).isdigit() else 0


def documents(path: Path, report, spine: dict | None = None, records: type | None = None) -> Iterator[dict]:
    """The JSON objects of the file: one per line, streamed (the collector's file exporter, NDJSON),
    or, when the first line is no whole JSON value, the file as one document (pretty-printed; at most
    ``MAX_DOCUMENT_BYTES``). Bytes that are no UTF-8 are replaced; a value that does not parse ends the
    read, named in ``report.errors``. With ``spine`` (the path to the document's records, ``SPINES``),
    a line or a document longer than ``MAX_LINE_BYTES`` (what curl saves of an API's answer: one line)
    is never held whole: from there on the file is read a block at a time and each document comes in
    pieces of the same shape, each with ``CUT_ITEMS`` records and what the document said before them
    (``_Cutter``). Each document (or piece) is checked against ``spine`` (each record against
    ``records``, when given): a value of another JSON type raises ``InputError`` saying where and what
    (``resourceLogs[0] is a number, not an object``)."""
    for doc in _documents(path, report, spine):
        if spine and (wrong := _wrong_type(doc, spine, records, "")):
            raise InputError(f"{path}: {wrong}: not the shape of its format; the rest is not read")
        yield doc


def _documents(path: Path, report, spine: dict | None) -> Iterator[dict]:
    """``documents`` before their check."""
    with open(path, "rb") as f:
        first = f.readline(MAX_LINE_BYTES + 1)
        if spine and len(first) > MAX_LINE_BYTES:
            f.seek(0)
            yield from _streamed(f, path, spine, report, 1)
            return
        try:
            json.loads(first)
            by_line = True
        except ValueError:
            by_line = False
        f.seek(0)
        if by_line:
            n = 0
            while True:
                at, line = f.tell(), f.readline(MAX_LINE_BYTES + 1 if spine else -1)
                n += 1
                if not line:
                    return
                if spine and len(line) > MAX_LINE_BYTES:
                    f.seek(at)
                    yield from _streamed(f, path, spine, report, n)
                    return
                if not line.strip():
                    continue
                try:
                    yield from _objects(json.loads(line.decode("utf-8", errors="replace")))
                except ValueError as e:
                    report.errors.append(f"{path}: line {n:,} is not JSON ({e}): the rest is not read")
                    return
        if path.stat().st_size > MAX_DOCUMENT_BYTES:
            report.errors.append(
                f"{path}: a JSON document of {path.stat().st_size / 2**20:,.0f} MiB on more than one line is "
                f"more than {MAX_DOCUMENT_BYTES >> 20} MiB to read whole: not read; export it one object per line"
            )
            return
        if spine and path.stat().st_size > MAX_LINE_BYTES:
            yield from _streamed(f, path, spine, report, 1)
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


def _wrong_type(value, spine: dict | None, records: type | None, where: str) -> str | None:
    """Where ``value`` (at ``where``) is not of the JSON type its ``spine`` says (an object for a dict, an
    array for ``{"*": …}``, ``records`` for the records), as ``resourceLogs[0] is a number, not an
    object``; None when every value along the spine has its type (a null or missing one is no value)."""
    if spine is None:
        if records is None or isinstance(value, records):
            return None
        return f"{where} is {_json_type(value)}, not {_json_type(records())}"
    if "*" in spine:
        if not isinstance(value, list):
            return f"{where} is {_json_type(value)}, not an array"
        for i, item in enumerate(value):
            if item is not None and (wrong := _wrong_type(item, spine["*"], records, f"{where}[{i}]")):
                return wrong
        return None
    if not isinstance(value, dict):
        return f"{where or 'the document'} is {_json_type(value)}, not an object"
    for key, sub in spine.items():
        if value.get(key) is not None:
            if wrong := _wrong_type(value[key], sub, records, f"{where}.{key}" if where else key):
                return wrong
    return None


def _json_type(value) -> str:
    """The JSON type of a parsed value, in words: ``a number``, ``an object``."""
    if isinstance(value, bool):
        return "true or false"
    kinds = ((dict, "an object"), (list, "an array"), (str, "a string"), (int | float, "a number"))
    return next((word for kind, word in kinds if isinstance(value, kind)), "null")


# Where each document keeps its records: a key's value is the spine below it, ``{"*": …}`` an array's
# elements, ``None`` the records themselves (read whole, one at a time).
SPINES = {
    "otlp-logs": {"resourceLogs": {"*": {"resource": {}, "scopeLogs": {"*": {"logRecords": {"*": None}}}}}},
    "loki-range": {"data": {"result": {"*": {"stream": {}, "values": {"*": None}}}}},
    "es-response": {"hits": {"hits": {"*": None}}},
}
CUT_ITEMS = 10_000  # records per piece of a document read in pieces
MAX_VALUE_CHARS = 64 << 20  # one record (or a value beside the records) of a document read in pieces


class _Text:
    """A JSON text read from a binary file a block at a time (UTF-8, bad bytes replaced), parsed by
    ``json``'s own decoder one value at a time: only the block and the value being read are in memory."""

    SPACE = re.compile(r"[ \t\r\n]*")

    def __init__(self, f) -> None:
        self.f, self.buf, self.pos, self.eof = f, "", 0, False
        self.utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.decoder = json.JSONDecoder()

    def more(self) -> bool:
        """Read the next block; False at the end of the file."""
        if self.eof:
            return False
        block = self.f.read(1 << 20)
        self.eof = not block
        self.buf = self.buf[self.pos :] + self.utf8.decode(block, final=self.eof)
        self.pos = 0
        return True

    def char(self) -> str:
        """The next character that is no white space, not consumed; "" at the end of the file."""
        while True:
            self.pos = self.SPACE.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def expect(self, c: str) -> None:
        if self.char() != c:
            raise ValueError(f"expected {c!r} at {self.where()}")
        self.pos += 1

    def value(self):
        """The next JSON value, whole. Raises ``ValueError`` where it is no JSON, cut short or longer
        than ``MAX_VALUE_CHARS``."""
        self.char()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
                if end < len(self.buf) or self.eof:  # a number at the block's end may go on
                    self.pos = end
                    return value
            except ValueError as e:
                if len(self.buf) - self.pos > MAX_VALUE_CHARS:
                    raise ValueError(
                        f"a value of more than {MAX_VALUE_CHARS >> 20} MiB at {self.where()}"
                    ) from e
                if self.eof:
                    raise ValueError(f"{e} (at {self.where()})") from None
            self.more()

    def where(self) -> str:
        return f"byte {self.f.tell() - len(self.buf[self.pos :].encode('utf-8', 'surrogatepass')):,}"


class _Cutter:
    """One document built as it is read (``_Text``) along its ``spine``, given out in pieces: when
    ``CUT_ITEMS`` records are pending, the document so far (every value before the records, the open
    arrays holding only what was not given out yet) is yielded, then emptied of what it gave. The
    pieces hold every record once, in the document's order."""

    def __init__(self, text: _Text, spine: dict) -> None:
        self.text, self.spine, self.root, self.pending, self.open = text, spine, {}, 0, set()

    def pieces(self) -> Iterator[dict]:
        yield from self._object(self.root, self.spine)
        yield self.root

    def _object(self, obj: dict, spine: dict) -> Iterator[dict]:
        t = self.text
        t.expect("{")
        while (c := t.char()) != "}":
            if c == ",":
                t.pos += 1
                continue
            key = t.value()
            if not isinstance(key, str):
                raise ValueError(f"an object key that is no string at {t.where()}")
            t.expect(":")
            sub, c = spine.get(key), t.char()
            if isinstance(sub, dict) and "*" in sub and c == "[":
                obj[key] = items = []
                yield from self._array(items, sub["*"])
            elif isinstance(sub, dict) and "*" not in sub and c == "{":
                obj[key] = child = {}
                yield from self._object(child, sub)
            else:
                obj[key] = t.value()
        t.pos += 1

    def _array(self, items: list, spine: dict | None) -> Iterator[dict]:
        t = self.text
        t.expect("[")
        self.open.add(id(items))
        while (c := t.char()) != "]":
            if c == ",":
                t.pos += 1
            elif c == "":
                raise ValueError(f"cut short at {t.where()}")
            elif isinstance(spine, dict) and c == "{":
                items.append(child := {})
                yield from self._object(child, spine)
            else:
                items.append(t.value())
                self.pending += spine is None
                if self.pending >= CUT_ITEMS:
                    yield self.root
                    self._given(self.root, self.spine)
                    self.pending = 0
        t.pos += 1
        self.open.discard(id(items))

    def _given(self, obj: dict, spine: dict) -> None:
        """Empty ``obj`` of what was given out: records, and the finished elements of open arrays."""
        for key, sub in spine.items():
            value = obj.get(key)
            if isinstance(value, list) and isinstance(sub, dict) and "*" in sub:
                if sub["*"] is not None and id(value) in self.open and value and isinstance(value[-1], dict):
                    del value[:-1]
                    self._given(value[-1], sub["*"])
                else:
                    value.clear()
            elif isinstance(value, dict) and isinstance(sub, dict):
                self._given(value, sub)


def _streamed(f, path: Path, spine: dict, report, line: int) -> Iterator[dict]:
    """The documents of ``f`` from where it is on (line ``line`` of ``path``), each in pieces
    (``_Cutter``); an array of documents gives each. What does not parse ends the read, named in
    ``report.errors``."""
    text = _Text(f)
    try:
        while (c := text.char()) != "":
            if c == "{":
                yield from _Cutter(text, spine).pieces()
            elif c == "[":
                text.pos += 1
                while (c := text.char()) != "]":
                    if c == ",":
                        text.pos += 1
                    elif c == "{":
                        yield from _Cutter(text, spine).pieces()
                    elif c == "":
                        raise ValueError(f"cut short at {text.where()}")
                    else:
                        text.value()  # not an object: not a document
                text.pos += 1
            else:
                text.value()
    except (ValueError, RecursionError) as e:
        report.errors.append(f"{path}: not JSON from line {line:,} on ({e}): the rest is not read")


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
        values.sort(key=lambda v: _ns(v[0]))
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
