"""Issue 31 item 4: SGLang's per-request stage times, ``Req Time Stats(rid=…)`` lines
(``--enable-request-time-stats-logging``, schedule_batch.py ``log_time_stats``), and the records of its
request-metrics exporter (``--export-metrics-to-file``: ``sglang-request-metrics-YYYYMMDD_HH.log``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from logcorr.analysis import saved
from logcorr.ingest import ingest

ROOM = 4611686018427387911
PREFILL = f"""[2026-03-02 08:14:04 TP0] Prefill batch, #new-seq: 1, #new-token: 1024, #cached-token: 0, token usage: 0.01, #running-req: 0, #queue-req: 0, #unbootstrapped-req: 0, #transferring-req: 1
[2026-03-02 08:14:05 TP0] Req Time Stats(rid=9f1c2e0b7a6d4e3f8a1b2c3d4e5f6a7b, bootstrap_room={ROOM}, input len=1024, output len=1, type=prefill): bootstrap_duration=12.50ms, alloc_wait_duration=0.40ms, queue_duration=3.10ms, forward_duration=85.02ms, entry_time=1772439244.912, transfer_speed=18.25 GB/s, transfer_total=120.00 MB, #retries=1
"""
DECODE = f"""[2026-03-02 08:14:09 TP0] Req Time Stats(rid=0d5c9a1e, bootstrap_room={ROOM}, input len=1024, output len=256, type=decode): prealloc_duration=4.00ms, transfer_duration=30.50ms, queue_duration=0.20ms, forward_duration=2100.75ms, start_time=51234.567
"""
UNIFIED = """[2026-03-02 08:14:10] Req Time Stats(rid=b2bb906b3afe40ada934bcade595dcb3, input len=69, output len=4621, type=unified): queue_duration=0.00ms, forward_duration=1753355419058.33ms, start_time=0.0
"""


def rows(out: Path, sql: str) -> list[dict]:
    return saved.query(out, sql).to_dicts()


def test_time_stats_lines_give_stage_durations_role_and_the_room_of_both_sides(tmp_path):
    (tmp_path / "prefill.log").write_text(PREFILL)
    (tmp_path / "decode.log").write_text(DECODE)
    (tmp_path / "single.log").write_text(UNIFIED)
    out = tmp_path / "out"
    result = ingest([tmp_path / f"{name}.log" for name in ("prefill", "decode", "single")], out)
    assert result.rows["req_time_stats"] == 3
    got = rows(out, "SELECT * FROM req_time_stats ORDER BY ts")
    prefill, decode, unified = got
    assert (prefill["role"], prefill["tp_rank"], prefill["disagg_mode"]) == ("prefill", 0, "prefill")
    assert prefill["rid"] == "9f1c2e0b7a6d4e3f8a1b2c3d4e5f6a7b" and prefill["bootstrap_room"] == ROOM
    assert (prefill["input_len"], prefill["output_len"]) == (1024, 1)
    assert prefill["bootstrap_s"] == 0.0125 and prefill["alloc_wait_s"] == 0.0004
    assert prefill["queue_s"] == 0.0031 and prefill["forward_s"] == 0.08502
    assert (prefill["transfer_gb_s"], prefill["transfer_mb"], prefill["retries"]) == (18.25, 120.0, 1)
    # entry_time is the wall clock (Unix seconds): 08:14:04.912 UTC, before the line's own 08:14:05
    assert prefill["entry_ts"] == datetime(2026, 3, 2, 8, 14, 4, 912000, tzinfo=UTC)
    assert (decode["role"], decode["rid"], decode["bootstrap_room"]) == ("decode", "0d5c9a1e", ROOM)
    assert (decode["prealloc_s"], decode["transfer_s"], decode["forward_s"]) == (0.004, 0.0305, 2.10075)
    assert decode["entry_ts"] is None  # start_time= is a perf_counter value, no time of day
    assert decode["source_pos"] == "line 1"
    # no PD: no room, no role; the 1.7e12 ms of sglang#8335 is kept as printed
    # SGLang's own lines and no prefill-decode cue in its log: an engine (disagg_mode unified agrees)
    assert (unified["disagg_mode"], unified["bootstrap_room"], unified["role"]) == (
        "unified",
        None,
        "engine",
    )
    assert unified["forward_s"] == 1753355419.05833
    # the room joins the prefill rid and the decode rid
    pairs = rows(out, f"SELECT role, rid FROM rooms WHERE bootstrap_room = {ROOM} ORDER BY role")
    assert pairs == [
        {"role": "decode", "rid": "0d5c9a1e"},
        {"role": "prefill", "rid": "9f1c2e0b7a6d4e3f8a1b2c3d4e5f6a7b"},
    ]
    kinds = rows(out, "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind")
    assert kinds == [{"kind": "batch", "n": 1}, {"kind": "req_time_stats", "n": 3}]


def metrics_record(rid: str, room: int, finish: dict, sent: float | None = None) -> str:
    """One line as FileRequestMetricsExporter writes it: the request's fields as a JSON string, then
    the meta_info keys of the answer."""
    params = {"text": "Hi", "sampling_params": {"max_new_tokens": 8}, "rid": rid, "stream": False,
              "bootstrap_host": "10.0.0.7", "bootstrap_port": 8998, "bootstrap_room": room}  # fmt: skip
    meta = {"id": rid, "finish_reason": finish, "prompt_tokens": 2, "weight_version": "default",
            "completion_tokens": 8, "cached_tokens": 1, "e2e_latency": 0.21}  # fmt: skip
    if sent is not None:
        meta["response_sent_to_client_ts"] = sent
    return json.dumps({"request_parameters": json.dumps(params), **meta})


def test_request_metrics_file_gives_finished_requests_with_room_and_time(tmp_path):
    path = tmp_path / "sglang-request-metrics-20251211_08.log"
    path.write_text(
        metrics_record(
            "5b02aee35dae49aba98a333ce89964e6",
            1788380104266545413,
            {"type": "length", "length": 8},
            1765440000.25,
        )  # fmt: skip
        + "\n"
        + metrics_record(
            "77aa", 99, {"type": "abort", "message": "Abort in waiting queue", "status_code": 500}
        )
        + "\n"
    )
    out = tmp_path / "out"
    result = ingest([path], out)
    got = rows(out, "SELECT * FROM request_log ORDER BY event_id")
    assert [(r["event"], r["format"], r["rid"], r["bootstrap_room"]) for r in got] == [
        ("finished", "metrics_export", "5b02aee35dae49aba98a333ce89964e6", 1788380104266545413),
        ("finished", "metrics_export", "77aa", 99),
    ]
    first, second = got
    assert first["ts"] == datetime(2025, 12, 11, 8, 0, 0, 250000, tzinfo=UTC)  # response_sent_to_client_ts
    assert (first["finish_type"], first["completion_tokens"], first["cached_tokens"]) == ("length", 8, 1)
    assert first["e2e_latency_s"] == 0.21
    assert (second["finish_type"], second["status_code"], second["finish_message"]) == (
        "abort", 500, "Abort in waiting queue")  # fmt: skip
    assert second["ts"] is None
    notes = " ".join(result.reports[0].notes)
    assert "1 request-metrics records carry no time" in notes and "2025-12-11 08:00" in notes
    assert rows(out, "SELECT rid FROM rooms WHERE bootstrap_room = 99") == [{"rid": "77aa"}]


def test_a_request_metrics_record_inside_other_text_is_read_by_content(tmp_path):
    # pasted into a bug report between log lines: no file name to go by
    line = metrics_record("c0ffee", 42, {"type": "stop"}, 1765440001.0)
    path = tmp_path / "paste.txt"
    path.write_text(f"[2025-12-11 08:00:01] INFO server started\n{line}\n")
    out = tmp_path / "out"
    ingest([path], out)
    got = rows(out, "SELECT rid, bootstrap_room, finish_type, format FROM request_log")
    assert got == [{"rid": "c0ffee", "bootstrap_room": 42, "finish_type": "stop", "format": "metrics_export"}]
