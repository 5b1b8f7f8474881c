"""Issue 31 items 6 and 7: a Prometheus scrape of SGLang's /metrics (text exposition 0.0.4, the PD gauges
and counters of ``observability/metrics_collector.py``) and SGLang's incident bundle
(``incident_artifact_tool.py collect-bundle``: metadata.json, the text answers, the wrapped JSON answers,
``<file>.error.json`` for a failed one)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from logcorr.analysis import saved
from logcorr.ingest import ingest
from logcorr.inputs.sniff import sniff

LABELS = 'engine_type="decode",model_name="deepseek-ai/DeepSeek-V3",pp_rank="0"'
SCRAPE = f"""# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{{{LABELS},tp_rank="0"}} 37.0
sglang:num_running_reqs{{{LABELS},tp_rank="1"}} 36.0
# HELP sglang:num_decode_transfer_queue_reqs The number of requests in the decode transfer queue.
# TYPE sglang:num_decode_transfer_queue_reqs gauge
sglang:num_decode_transfer_queue_reqs{{{LABELS},tp_rank="0"}} 12.0
# HELP sglang:num_transfer_failed_reqs_total The number of transfer failed requests.
# TYPE sglang:num_transfer_failed_reqs_total counter
sglang:num_transfer_failed_reqs_total{{{LABELS},tp_rank="0"}} 214.0
sglang:num_transfer_failed_reqs_total{{{LABELS},tp_rank="1"}} 0.0
# HELP sglang:kv_transfer_latency_ms Histogram of kv transfer latency
# TYPE sglang:kv_transfer_latency_ms histogram
sglang:kv_transfer_latency_ms_bucket{{engine_type="decode",le="100.0",tp_rank="0"}} 3.0
sglang:kv_transfer_latency_ms_bucket{{engine_type="decode",le="+Inf",tp_rank="0"}} 9.0
sglang:kv_transfer_latency_ms_sum{{engine_type="decode",tp_rank="0"}} 1234.5
process_cpu_seconds_total 1.7e3
"""


def table(out: Path, name: str, order: str = "event_id"):
    return saved.query(out, f"SELECT * FROM {name} ORDER BY {order}")


def test_a_scrape_gives_each_sample_its_labels_ranks_type_and_the_time_its_name_prints(tmp_path: Path):
    path = tmp_path / "metrics_2026-08-04_11-58-42.txt"
    path.write_text(SCRAPE)
    assert sniff(path) == "prometheus"
    result = ingest([path], tmp_path / "out")
    rows = table(tmp_path / "out", "metrics")
    assert rows.height == 9 and result.rows["metrics"] == 9
    running = rows.filter(rows["name"] == "sglang:num_running_reqs")
    assert running.select("tp_rank", "pp_rank", "value").rows() == [(0, 0, 37.0), (1, 0, 36.0)]
    first = running.row(0, named=True)
    assert first["type"] == "gauge" and first["engine_type"] == "decode" and first["role"] == "decode"
    assert json.loads(first["labels"])["model_name"] == "deepseek-ai/DeepSeek-V3"
    # the name's time, printed without a zone: kept as printed, and said so
    assert first["ts"] == datetime(2026, 8, 4, 11, 58, 42, tzinfo=UTC)
    notes = result.reports[0].notes
    assert any(
        "9 samples of 5 metrics at 2026-08-04 11:58:42 as printed (no zone) from its file name" in n
        for n in notes
    )
    failed = rows.filter(rows["name"] == "sglang:num_transfer_failed_reqs_total").row(0, named=True)
    assert failed["type"] == "counter" and failed["family"] == "sglang:num_transfer_failed_reqs_total"
    inf = rows.filter(rows["labels"].str.contains('"le":"\\+Inf"')).row(0, named=True)
    assert (
        inf["family"] == "sglang:kv_transfer_latency_ms"
        and inf["type"] == "histogram"
        and inf["value"] == 9.0
    )
    bare = rows.filter(rows["name"] == "process_cpu_seconds_total").row(0, named=True)
    assert bare["value"] == 1700.0 and bare["tp_rank"] is None and bare["type"] is None
    found = saved.query(tmp_path / "out", "findings")
    counters = found.filter(found["kind"] == "failure_counters").row(0, named=True)
    assert counters["n"] == 214 and counters["ranks"] == ["TP0"] and counters["role"] == "decode"
    assert "counts 214 failed KV transfers on decode TP0" in counters["summary"]
    assert "as printed" not in counters["summary"] and " UTC" not in counters["summary"]  # zoneless: no UTC


def test_comment_lines_before_a_scrape_leave_it_a_scrape(tmp_path: Path):
    """Any ``#`` line is the exposition format's comment (Prometheus ignores it): a scrape pasted under a
    note (batch5/10: five ``# source:``/``# note:`` lines, then the samples) is still read as one; a file
    of comments with a lone sample-shaped line is not."""
    path = tmp_path / "pasted.txt"
    notes = (
        "# source: https://github.com/vllm-project/aibrix/issues/1614\n# note: a chunk of the fenced block\n"
    )
    path.write_text(notes * 3 + SCRAPE)
    assert sniff(path) == "prometheus"
    ingest([path], tmp_path / "out")
    rows = table(tmp_path / "out", "metrics")
    assert rows.height == 9
    assert rows.filter(rows["name"] == "sglang:num_running_reqs")["value"].to_list() == [37.0, 36.0]
    (tmp_path / "comments.txt").write_text(notes * 5 + "total 12\n")
    assert sniff(tmp_path / "comments.txt") != "prometheus"


def test_exposition_timestamps_and_captured_at_date_the_samples(tmp_path: Path):
    """A sample's own timestamp (ms since the epoch) wins; the rest take --captured-at (UTC)."""
    path = tmp_path / "scrape.prom"
    path.write_text(
        "# TYPE sglang:num_queue_reqs gauge\n"
        'sglang:num_queue_reqs{engine_type="prefill",tp_rank="3"} 5 1754308722123\n'
        'sglang:num_queue_reqs{engine_type="prefill",tp_rank="2"} 4\n'
    )
    ingest([path], tmp_path / "out", captured_at="2026-08-04 12:00:00")
    rows = table(tmp_path / "out", "metrics", "tp_rank")
    assert rows.select("tp_rank", "ts", "role").rows() == [
        (2, datetime(2026, 8, 4, 12, 0, tzinfo=UTC), "prefill"),
        (3, datetime(2025, 8, 4, 11, 58, 42, 123000, tzinfo=UTC), "prefill"),
    ]


def test_a_scrape_without_any_time_keeps_its_samples_undated_and_says_what_to_give(tmp_path: Path):
    path = tmp_path / "metrics.txt"
    path.write_text(SCRAPE)
    result = ingest([path], tmp_path / "out")
    assert table(tmp_path / "out", "metrics")["ts"].null_count() == 9
    assert any("with no time (give --captured-at" in n for n in result.reports[0].notes)


def _bundle(folder: Path, *, generate_ok: bool) -> Path:
    folder.mkdir()
    meta = {"artifact_type": "incident_bundle", "base_url": "http://10.0.0.5:30000",
            "collected_at": "20260804_115842", "token_provided": False, "timeout_seconds": 10.0}  # fmt: skip
    (folder / "metadata.json").write_text(json.dumps(meta, indent=2))
    (folder / "health.txt").write_text("")
    if generate_ok:
        (folder / "health_generate.txt").write_text("")
    else:
        failed = {"ok": False, "status": -1, "path": "/health_generate", "error": "TimeoutError: timed out"}
        (folder / "health_generate.txt.error.json").write_text(json.dumps(failed, indent=2))
    (folder / "metrics.txt").write_text(SCRAPE)
    info = {"model_path": "deepseek-ai/DeepSeek-V3", "tp_size": 8, "dp_size": 1, "disaggregation_mode": "decode",
            "disable_overlap_schedule": False, "internal_states": [{"last_gen_throughput": 0.0}],
            "version": "0.5.4.post1"}  # fmt: skip
    wrap = {"ok": True, "status": 200, "path": "/server_info", "json": info}
    (folder / "server_info.json").write_text(json.dumps(wrap, indent=2))
    loads = {"loads": [{"dp_rank": 0, "num_running_reqs": 37, "num_waiting_reqs": 5, "token_usage": 0.93,
                        "queues": {"waiting": 5, "grammar": 0},
                        "disaggregation": {"mode": "decode", "decode_transfer_queue_reqs": 12}}],
             "aggregate": {"total_running_reqs": 37}}  # fmt: skip
    wrap = {"ok": True, "status": 200, "path": "/v1/loads?include=all", "json": loads}
    (folder / "loads_all.json").write_text(json.dumps(wrap, indent=2))
    (folder / "SUMMARY.txt").write_text("health.txt: ok\n")
    return folder


def test_an_incident_bundle_gives_its_answers_config_loads_and_the_lying_health(tmp_path: Path):
    folder = _bundle(tmp_path / "incident_bundle_20260804_115842", generate_ok=False)
    result = ingest([tmp_path], tmp_path / "out")  # found inside a folder given
    assert sorted(Path(r.source).name for r in result.reports) == ["metadata.json", "metrics.txt"]
    out = tmp_path / "out"
    probes = table(out, "probes")
    assert probes.select("target", "status", "latency_ms", "error").rows() == [
        ("http://10.0.0.5:30000/health", 200, None, None),
        ("http://10.0.0.5:30000/health_generate", None, None, "TimeoutError: timed out"),
        ("http://10.0.0.5:30000/metrics", 200, None, None),
        ("http://10.0.0.5:30000/server_info", 200, None, None),
        ("http://10.0.0.5:30000/v1/loads?include=all", 200, None, None),
    ]
    assert set(probes["host"]) == {"10.0.0.5"}
    config = table(out, "config", "host").row(0, named=True)
    assert (config["sglang_version"], config["tp_size"], config["disaggregation_mode"]) == (
        "0.5.4.post1",
        8,
        "decode",
    )
    loads = table(out, "metrics")
    queued = loads.filter(loads["name"] == "loads:disaggregation_decode_transfer_queue_reqs").row(
        0, named=True
    )
    assert (queued["value"], queued["dp_rank"], queued["role"]) == (12.0, 0, "decode")
    scraped = loads.filter(loads["source"] == str(folder / "metrics.txt"))
    assert scraped.height == 9 and set(scraped["host"]) == {"10.0.0.5"}
    assert set(scraped["ts"]) == {datetime(2026, 8, 4, 11, 58, 42, tzinfo=UTC)}  # collected_at, as printed
    found = saved.query(out, "findings")
    lying = found.filter(found["kind"] == "health_generate_failed").row(0, named=True)
    assert lying["host"] == "10.0.0.5" and len(lying["evidence"]) == 2
    assert "/health answered 200 while /health_generate failed (TimeoutError: timed out)" in lying["summary"]


def test_a_bundle_whose_generate_answered_has_no_lying_health(tmp_path: Path):
    _bundle(tmp_path / "incident_bundle_20260804_115842", generate_ok=True)
    ingest([tmp_path / "incident_bundle_20260804_115842"], tmp_path / "out")
    found = saved.query(tmp_path / "out", "findings")
    assert "health_generate_failed" not in set(found["kind"])
    assert set(found["kind"]) == {"failure_counters"}


def test_a_log_line_with_a_number_at_its_end_is_no_scrape(tmp_path: Path):
    path = tmp_path / "server.log"
    path.write_text(
        "[2026-08-04 11:58:42] Decode batch, #running-req: 3, #token: 900, token usage: 0.01\n" * 3
    )
    assert sniff(path) == "text"
    path.write_text("uptime_seconds 12\nload 0.5\nINFO server started on port 30000\n")
    assert sniff(path) == "text"
