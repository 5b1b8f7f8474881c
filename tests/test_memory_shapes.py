"""Issue 47 items 5 and 4 (the third trial's F6, and F5's zeroed journal header): the readers that held their whole input read it in pieces,
and the rows are still right. Each test shrinks the bounds (the line over which partial lines are cut,
the records per piece of a document, the block of a scrape) so that a small file crosses them; the
memory each shape takes at full size is ``bench/bench_memory.py``'s figure, not a test."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from logcorr.analysis import saved
from logcorr.ingest import ingest
from logcorr.inputs import containers, exports, scrape
from logcorr.inputs import text as text_reader
from logcorr.inputs.rejoin import Rejoiner
from logcorr.inputs.source import ReadOptions
from logcorr.parsers import journald
from tests.conftest import SAMPLE, cli, need_journalctl, sql

CID = "c0ffee" * 10 + "c0ff"  # a Docker container id: 64 hex digits


def _events(out: Path) -> pl.DataFrame:
    return pl.read_parquet(out / "events" / "**" / "*.parquet").sort("event_id")


@pytest.fixture
def small_bounds(monkeypatch):
    """A run of partial lines over 4,000 bytes is cut in pieces of 1,000; files read 2 KiB at a time."""
    monkeypatch.setattr(containers, "MAX_LINE_BYTES", 4_000)
    monkeypatch.setattr(containers, "MAX_RECORD_BYTES", 1_000)
    monkeypatch.setattr(text_reader, "CHUNK_BYTES", 2048)


def _docker(folder: Path, closed: bool) -> Path:
    """A Docker json-file log: a whole line, 30 parts of 250 bytes (``a`` … ``z``, ``A`` …) of one line
    Docker split, closed by ``end\\n`` or never, then (when closed) one more whole line."""
    rows = [{"log": "[2025-10-29 21:30:00 TP0] before\n", "stream": "stdout", "time": "2025-10-29T21:30:00Z"}]
    rows += [
        {"log": chr(65 + i) * 250, "stream": "stdout", "time": f"2025-10-29T21:30:01.{i:06d}Z"}
        for i in range(30)
    ]
    if closed:
        rows += [{"log": "end\n", "stream": "stdout", "time": "2025-10-29T21:30:02Z"}]
        rows += [
            {"log": "[2025-10-29 21:30:03 TP0] after\n", "stream": "stdout", "time": "2025-10-29T21:30:03Z"}
        ]
    path = folder / CID / f"{CID}-json.log"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


@pytest.mark.parametrize("closed", [True, False])
def test_docker_parts_of_a_line_over_the_bound_are_kept_in_pieces(small_bounds, tmp_path, closed):
    """30 parts of 250 bytes (7,500 bytes, over the 4,000 of a line) leave as 8 pieces of 4 parts (the
    last of 2, plus ``end`` when closed), each at its first part's line and time, marked LINE_PIECE;
    joined, the pieces are the line; the lines around them are read as ever."""
    _docker(tmp_path / "containers", closed)
    result = ingest([tmp_path / "containers"], tmp_path / "out", ReadOptions(all_units=True))
    ev = _events(tmp_path / "out")
    assert any("1 line(s) the runtime split into parts" in n for n in result.reports[0].notes)
    line = "".join(chr(65 + i) * 250 for i in range(30)) + ("end" if closed else "")
    pieces = ev.filter(~pl.col("message").str.starts_with("[2025"))
    assert pieces.height == 8 and pieces["n_lines"].to_list() == [1] + [0] * 7  # the line counted once
    assert "".join(pieces["message"]) == line
    assert pieces["message"][0] == "A" * 250 + "B" * 250 + "C" * 250 + "D" * 250
    assert pieces["source_pos"].to_list() == [f"line {n}" for n in range(2, 32, 4)]
    assert pieces["ts"][1] == datetime(2025, 10, 29, 21, 30, 1, 4, UTC)  # part 5's time
    assert ev["message"][0] == "[2025-10-29 21:30:00 TP0] before"
    assert ev.height == (10 if closed else 9)
    if closed:
        assert ev["message"][-1] == "[2025-10-29 21:30:03 TP0] after" and ev["source_pos"][-1] == "line 33"


def test_cri_parts_never_closed_are_kept_in_pieces(small_bounds, tmp_path):
    """CRI ``P`` parts no ``F`` closes: 20 of 250 bytes, cut in pieces of 4 parts (1,000 bytes), every
    byte kept in order; the ``F`` line before them is one record."""
    log = (
        tmp_path
        / "pods"
        / "default_sglang-decode-0_0123abcd-0000-0000-0000-000000000000"
        / "decode"
        / "0.log"
    )
    log.parent.mkdir(parents=True)
    text = "2025-10-29T21:40:00.000000000Z stdout F [2025-10-29 21:40:00 TP0] start\n"
    text += "".join(f"2025-10-29T21:40:01.{i:09d}Z stdout P {str(i % 10) * 250}\n" for i in range(20))
    log.write_text(text)
    ingest([tmp_path / "pods"], tmp_path / "out")
    ev = _events(tmp_path / "out")
    assert ev["message"][0] == "[2025-10-29 21:40:00 TP0] start" and ev["unit"][0] == "sglang-decode-0/decode"
    pieces = ev.slice(1)
    assert pieces.height == 5 and pieces["n_lines"].to_list() == [1, 0, 0, 0, 0]
    assert "".join(pieces["message"]) == "".join(str(i % 10) * 250 for i in range(20))
    assert pieces["source_pos"].to_list() == [f"line {n}" for n in range(2, 22, 4)]


@pytest.fixture
def small_pieces(monkeypatch):
    """A line over 1,000 bytes is a document read in pieces of 4 records."""
    monkeypatch.setattr(exports, "MAX_LINE_BYTES", 1_000)
    monkeypatch.setattr(exports, "CUT_ITEMS", 4)


def test_a_one_line_otlp_logs_request_gives_every_record_in_order(small_pieces, tmp_path):
    """Two resources on one line, 11 and 3 records: each record keeps its resource's pod and its time."""

    def resource(pod: str, n: int, t0: int) -> dict:
        attrs = [{"key": "k8s.pod.name", "value": {"stringValue": pod}}]
        records = [
            {
                "timeUnixNano": str(t0 + i * 1_000_000),
                "body": {"stringValue": f"[2025-10-29 21:40:00 TP0] {pod} {i}"},
            }
            for i in range(n)
        ]
        return {"resource": {"attributes": attrs}, "scopeLogs": [{"scope": {}, "logRecords": records}]}

    t0 = 1_761_774_000_000_000_000  # 2025-10-29 21:40:00 UTC
    doc = {"resourceLogs": [resource("sglang-decode-0", 11, t0), resource("sglang-prefill-0", 3, t0 + 10**9)]}
    path = tmp_path / "logs.json"
    path.write_text(json.dumps(doc))
    assert path.stat().st_size > 1_000
    ingest([path], tmp_path / "out", ReadOptions(all_units=True))
    ev = _events(tmp_path / "out")
    assert ev["message"].to_list() == [
        f"[2025-10-29 21:40:00 TP0] sglang-decode-0 {i}" for i in range(11)
    ] + [f"[2025-10-29 21:40:00 TP0] sglang-prefill-0 {i}" for i in range(3)]
    assert ev["unit"].to_list() == ["sglang-decode-0"] * 11 + ["sglang-prefill-0"] * 3
    assert ev["ts"][9] == datetime(2025, 10, 29, 21, 40, 0, 9_000, UTC)


def test_a_one_line_loki_answer_newest_first_is_read_oldest_first_per_stream(small_pieces, tmp_path):
    """Loki's default answer runs newest first: a stream of 10 values in pieces of 4 is still read
    oldest first (each piece sorted, the pieces merged), the streams in the answer's order."""
    t0 = 1_761_774_000_000_000_000

    def stream(pod: str, n: int) -> dict:
        values = [
            [str(t0 + i * 1000), f"[2025-10-29 21:40:00 TP0] {pod} line {i} " + "x" * 100] for i in range(n)
        ]
        return {"stream": {"pod": pod, "container": "sglang"}, "values": values[::-1]}

    doc = {
        "status": "success",
        "data": {"resultType": "streams", "result": [stream("decode-0", 10), stream("prefill-0", 6)]},
    }
    path = tmp_path / "loki.json"
    path.write_text(json.dumps(doc))
    ingest([path], tmp_path / "out", ReadOptions(all_units=True))
    ev = _events(tmp_path / "out")
    assert ev.height == 16
    assert ev["message"].str.extract(r"(\S+ line \d+)").to_list() == [
        f"decode-0 line {i}" for i in range(10)
    ] + [f"prefill-0 line {i}" for i in range(6)]
    assert ev["unit"][0] == "decode-0/sglang" and ev["unit"][15] == "prefill-0/sglang"
    assert not list(tmp_path.glob("**/*.loki.*"))  # the pieces' files are gone


def test_a_one_line_elasticsearch_answer_gives_every_hit(small_pieces, tmp_path):
    hits = [
        {"_source": {"message": f"[2025-10-29 21:40:{i:02d} TP1] hit {i}", "@timestamp": f"2025-10-29T21:40:{i:02d}Z",
                     "kubernetes": {"pod_name": "sglang-decode-1", "container_name": "sglang"}}}
        for i in range(30)
    ]  # fmt: skip
    path = tmp_path / "es.json"
    path.write_text(json.dumps({"took": 3, "hits": {"total": {"value": 30}, "hits": hits}}))
    ingest([path], tmp_path / "out", ReadOptions(all_units=True))
    ev = _events(tmp_path / "out")
    assert ev["message"].to_list() == [f"[2025-10-29 21:40:{i:02d} TP1] hit {i}" for i in range(30)]
    assert ev["ts"][17] == datetime(2025, 10, 29, 21, 40, 17, tzinfo=UTC)


def test_one_line_of_otlp_spans_in_pieces_still_inherit_from_their_root(small_pieces, tmp_path):
    """Six requests' spans on one line in pieces of 4: each stage span (before its root in the file, as the
    exporter writes them) still gets its request's rid, room and role, and its thread's rank."""
    spans = []
    for r in range(6):
        rid, tid = f"rid{r:05d}abcdef", f"trace{r}"
        common = {"traceId": tid, "startTimeUnixNano": str(1_785_844_722_000_000_000 + r * 10**9)}
        spans += [
            {**common, "spanId": f"s{r}", "parentSpanId": f"t{r}", "name": "decode_bootstrap"},
            {**common, "spanId": f"t{r}", "parentSpanId": f"r{r}", "name": "Scheduler [TP 2]",
             "attributes": [{"key": "tp_rank", "value": {"intValue": "2"}}]},
            {**common, "spanId": f"r{r}", "name": f"Decode Req {rid[:8]}",
             "attributes": [{"key": "rid", "value": {"stringValue": rid}},
                            {"key": "bootstrap_room", "value": {"stringValue": hex(1000 + r)}}]},
        ]  # fmt: skip
    path = tmp_path / "spans.json"
    path.write_text(
        json.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": spans}]}]})
    )
    ingest([path], tmp_path / "out")
    got = saved.query(
        tmp_path / "out", "SELECT span_id, rid, bootstrap_room, tp_rank, role FROM spans ORDER BY ts, span_id"
    )
    assert got.height == 18
    assert got.filter(pl.col("span_id") == "s5").rows() == [("s5", "rid00005abcdef", 1005, 2, "decode")]
    assert got.filter(pl.col("span_id") == "r0").rows() == [("r0", "rid00000abcdef", 1000, None, "decode")]


def test_a_scrape_read_in_blocks_keeps_every_sample_its_line_and_the_role_its_last_block_names(
    monkeypatch, tmp_path
):
    """A scrape of 400 samples read 512 bytes at a time: every sample, each at its own line number; the
    ``engine_type`` label that only the last lines carry still gives every sample its role."""
    monkeypatch.setattr(scrape, "CHUNK_BYTES", 512)
    lines = ["# HELP sglang:num_running_reqs running", "# TYPE sglang:num_running_reqs gauge"]
    lines += [f'sglang:num_running_reqs{{tp_rank="{i % 8}",req="{i}"}} {i % 64}.0' for i in range(400)]
    lines += ["# TYPE sglang:engine_info gauge", 'sglang:engine_info{engine_type="decode"} 1.0']
    path = tmp_path / "metrics.txt"
    path.write_text("\n".join(lines) + "\n")
    ingest([path], tmp_path / "out", captured_at="2025-10-29 21:40:10")
    ev = _events(tmp_path / "out")
    samples = ev.filter(pl.col("message").str.starts_with("sglang:"))
    assert samples.height == 401
    assert samples.filter(pl.col("message").str.contains('req="399"'))["source_pos"].to_list() == ["line 402"]
    assert (samples["role"] == "decode").all()
    metrics = saved.query(tmp_path / "out", "SELECT count(*) AS n, min(ts) AS t FROM metrics")
    assert metrics.rows() == [(401, datetime(2025, 10, 29, 21, 40, 10, tzinfo=UTC))]


def test_records_that_are_whole_leave_with_their_chunk():
    """A crash dump's records (each a stream of its own, all at one time): the re-joiner gives every one
    back with its chunk instead of holding them all as open records until the end."""
    n = 1000
    chunk = pl.DataFrame(
        {
            "ts": [datetime(2025, 10, 29, 21, 40, 48, tzinfo=UTC)] * n,
            "message": [f"Receive: obj=GenerateReqInput(rid='r{i}')" for i in range(n)],
            "source": ["d.pkl"] * n,
            "source_pos": [f"requests[{i}] created" for i in range(n)],
            "stream": [f"d.pkl|requests[{i}] created" for i in range(n)],
        }
    ).select(
        journald.record_columns(**{c: pl.col(c) for c in ("ts", "message", "source", "source_pos", "stream")})
    )
    chunk = chunk.cast({c: t for c, t in journald.RECORD_COLUMNS.items()})
    out = Rejoiner(whole=True).feed(chunk)
    assert out.height == n and out["message"][n - 1] == "Receive: obj=GenerateReqInput(rid='r999')"


def test_a_journal_file_whose_header_is_zeroed_is_named_and_the_ingest_exits_3(tmp_path):
    """The trial's F5 case: journalctl leaves a file with a zeroed header out of a folder, says so on
    stderr only and exits 0; the file is named in the input's errors and the run exits 3 (read in part),
    the other file's records written."""
    need_journalctl()
    journal = shutil.copytree(SAMPLE / "journal", tmp_path / "j")
    archived = next(journal.glob("*/system@*.journal"))
    with open(archived, "r+b") as f:
        f.write(bytes(4096))
    run = cli("ingest", str(journal), "--all-units", "-o", str(tmp_path / "out"))
    assert run.returncode == 3, run.stderr
    assert f"{archived}: journalctl left this file out (corrupted)" in run.stdout + run.stderr
    errors = json.loads((tmp_path / "out" / "manifest.json").read_text())["errors"]
    assert any(e.startswith(f"{archived}: journalctl left this file out") for e in errors)
    assert sql(tmp_path / "out", "SELECT count(*) FROM events") == [(1341,)]  # system.journal's, as before
