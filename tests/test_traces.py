"""Issue 31 item 5: OpenTelemetry traces of SGLang's ``--enable-trace`` as the collector's file exporter
writes them (OTLP JSON, one ``ExportTraceServiceRequest`` per line or one document), in SGLang's span
model (``observability/trace.py``): a ``"<role> Req <rid[:8]>"`` root with ``rid`` and ``bootstrap_room``
(hex), a thread span with the ranks and ``pid``, stage spans under it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from logcorr.analysis import saved
from logcorr.ingest import ingest
from logcorr.inputs.sniff import sniff

ROOM = 7431880375122374861
START_NS = 1_785_844_722_000_000_000  # 2026-08-04 11:58:42 UTC


def _attrs(**kv) -> list[dict]:
    return [
        {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
        for k, v in kv.items()
    ]


def _span(
    span_id: str, name: str, start_ms: float, end_ms: float, parent: str = "", status: int = 0, **attrs
):
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(START_NS + int(start_ms * 1e6)),
        "endTimeUnixNano": str(START_NS + int(end_ms * 1e6)),
        "attributes": _attrs(**attrs),
        "status": {"code": status} if status else {},
    }
    return span


def _request(spans: list[dict]) -> dict:
    resource = {"attributes": _attrs(**{"service.name": "sglang", "host.name": "gpu-node-7"})}
    return {
        "resourceSpans": [
            {"resource": resource, "scopeSpans": [{"scope": {"name": "sglang"}, "spans": spans}]}
        ]
    }


def trace_file(path: Path, *, as_array: bool = False) -> Path:
    rid = "f3a9c2e1d4b5467f8a9b0c1d2e3f4a5b"
    root = _span(
        "a1", f"Decode Req {rid[:8]}", 0, 900, rid=rid, module="sglang::request", bootstrap_room=hex(ROOM)
    )
    thread = _span(
        "b2", "Scheduler [TP 1] [PP 0] [DP 0] (host:8f2c11aa | pid:41877)", 0.5, 799.5, parent="a1", status=2,
        tp_rank=1, pp_rank=0, dp_rank=0, host_id="8f2c11aa", pid=41877, thread_label="Scheduler",
    )  # fmt: skip
    stage = _span("c3", "decode_bootstrap", 10, 310.5, parent="b2")
    # the exporter writes a request per line as its spans end: the stage and thread first, the root last
    docs = [_request([stage, thread]), _request([root])]
    path.write_text(json.dumps(docs) if as_array else "\n".join(json.dumps(d) for d in docs) + "\n")
    return path


def test_spans_carry_their_request_rid_room_role_and_thread_ranks(tmp_path: Path):
    path = trace_file(tmp_path / "otel_trace.json")
    assert sniff(path) == "otlp-traces"
    result = ingest([path], tmp_path / "out")
    spans = saved.query(tmp_path / "out", "SELECT * FROM spans ORDER BY start_ts")
    assert spans["name"].to_list() == [
        "Decode Req f3a9c2e1",
        "Scheduler [TP 1] [PP 0] [DP 0] (host:8f2c11aa | pid:41877)",
        "decode_bootstrap",
    ]
    assert spans["role"].to_list() == ["decode"] * 3
    assert spans["bootstrap_room"].to_list() == [ROOM] * 3
    assert spans["rid"].to_list() == ["f3a9c2e1d4b5467f8a9b0c1d2e3f4a5b"] * 3
    assert spans["tp_rank"].to_list() == [None, 1, 1] and spans["pid"].to_list() == [None, 41877, 41877]
    assert spans["duration_ms"].to_list() == [900.0, 799.0, 300.5]
    assert spans["status"].to_list() == [None, "ERROR", None]
    assert spans["parent_span_id"].to_list() == [None, "a1", "b2"]
    assert spans["host"].to_list() == ["gpu-node-7"] * 3 and spans["service"].to_list() == ["sglang"] * 3
    assert spans["start_ts"][0] == datetime(2026, 8, 4, 11, 58, 42, tzinfo=UTC) == spans["ts"][0]
    # the room reaches rooms as any record's, and the notes say what a trace cannot show
    rooms = saved.query(tmp_path / "out", f"SELECT role FROM rooms WHERE bootstrap_room = {ROOM}")
    assert rooms["role"].to_list() == ["decode"]
    assert any("3 spans of 1 traces" in n and "still in flight" in n for n in result.reports[0].notes)


def test_a_trace_document_in_one_array_reads_the_same(tmp_path: Path):
    path = trace_file(tmp_path / "traces.json", as_array=True)
    assert sniff(path) == "otlp-traces"
    ingest([path], tmp_path / "out")
    spans = saved.query(tmp_path / "out", "SELECT span_id, tp_rank FROM spans ORDER BY span_id")
    assert spans.rows() == [("a1", None), ("b2", 1), ("c3", 1)]


def test_a_trace_file_cut_short_keeps_the_spans_before_the_cut(tmp_path: Path):
    path = trace_file(tmp_path / "otel_trace.json")
    text = path.read_text()
    path.write_text(text[: text.index("\n") + 1] + text[text.index("\n") + 1 :][:40])
    result = ingest([path], tmp_path / "out")
    spans = saved.query(tmp_path / "out", "SELECT span_id, rid FROM spans ORDER BY span_id")
    assert spans.rows() == [("b2", None), ("c3", None)]  # the root with the rid was after the cut
    assert any("line 2 is not JSON" in e for e in result.reports[0].errors)
