"""batch9 (tests/cases/batch9, a blind batch: README written before the first run, EVAL.md the score
before the fixes): each file's body (its ``# source``/``# note`` lines off, as the evaluation read it)."""

from __future__ import annotations

from datetime import datetime

import polars as pl

from logcorr.analysis import saved
from logcorr.ingest import records_from_text
from logcorr.inputs.sniff import sniff_lines
from logcorr.render.report import report
from tests.conftest import case_body, ingested_body
from tests.test_batch8 import BATCH as BATCH8

BATCH = BATCH8.parent / "batch9"


def _body(prefix: str) -> str:
    return case_body(BATCH, prefix)


def _ingested(tmp_path, prefix: str):
    return ingested_body(tmp_path, BATCH, prefix)


def test_03_a_faulthandler_dump_at_a_segfault_is_where_it_crashed_not_a_py_spy_wait(tmp_path):
    """`Fatal Python error: Segmentation fault` then `Current thread 0x7f2ea0870640`: that thread
    crashed in all_reduce; the dump is CPython's faulthandler's, not py-spy's, and nothing waits."""
    out = _ingested(tmp_path, "03")
    caps = saved.query(out, "SELECT thread_id, thread_state, wait_class FROM captures ORDER BY thread_id")
    assert caps.rows() == [(0x7F2E93FFF640, None, "running"), (0x7F2EA0870640, "current", "all_reduce")]
    (summary,) = saved.query(out, "SELECT summary FROM findings WHERE kind = 'stacks_captured'")["summary"]
    assert summary.startswith(
        'faulthandler dump at the crash ("Fatal Python error: Segmentation fault") of 1 process'
    )
    assert "thread 139838238426688) crashed in all_reduce: all_reduce (" in summary
    text = report(out)
    assert "py-spy dumps" not in text and "bare py-spy output" not in text
    assert "waits in all_reduce" not in text


def _summary(out) -> str:
    return report(out).split("## Summary", 1)[1].split("\n## ", 1)[0]


def test_01_a_yearless_time_is_quoted_without_c10s_level_letter_and_the_chain_keeps_no_cut_parenthesis(
    tmp_path,
):
    """Line 7 `[rank7]:[E226 11:16:37.170295281 ProcessGroupNCCL.cpp:…]`: E is the level; the time printed
    is 02-26 11:16:37.170295281 (events.printed_time), and the chain step says it once, with no
    "(no time read; printed without a year." cut at the colon inside it."""
    summary = _summary(_ingested(tmp_path, "01"))
    (happened,) = [line for line in summary.splitlines() if "**What happened**" in line]
    assert "rank 7 (no time read; printed without a year: 02-26 11:16:37.170295281): ALLREDUCE" in happened
    assert "E226" not in summary
    (chain,) = [line for line in summary.splitlines() if "**How it came about**" in line]
    assert (
        chain
        == "- **How it came about**: 02-26 11:16:37.170295281 Collective timeout (NCCL watchdog) on rank 7."
    )


def test_18_glog_times_of_unexplained_errors_are_quoted_without_the_level_letter(tmp_path):
    """`E0523 06:50:40.074718   223 client.cpp:444] Transfer failed for task0`: quoted with its own
    printed time 05-23 06:50:40.074718, never "E0523 06:50:40"."""
    out = _ingested(tmp_path, "18")
    found = saved.query(out, "SELECT summary FROM findings WHERE summary LIKE '%Transfer failed for task0%'")
    (summary,) = found["summary"]
    assert "(no time read; printed without a year: 05-23 06:50:40.074718)" in summary
    assert "printed without a year: E0523" not in summary


def test_08_the_vllmworker_rank_prefix_is_read_each_line_its_own_record(tmp_path):
    """`(VllmWorker rank=0 pid=98473) DEBUG 07-08 02:13:53 [nixl_connector.py:860] …`: vLLM's worker
    prefix with its global rank (the contract's tp_rank, as PyTorch's [rankN]); 7 DEBUG records, not one."""
    ev = records_from_text(_body("08"), "08.log")
    rows = ev.filter(pl.col("level").is_not_null())
    assert rows.select("source_pos", "n_lines", "pid", "tp_rank").rows() == [
        ("line 2", 1, 98473, 0),
        ("line 3", 1, 98473, 0),
        ("line 4", 1, 98474, 1),
        ("line 5", 1, 98474, 1),
        ("line 6", 1, 98474, 1),
        ("line 7", 1, 98474, 1),
        ("line 8", 1, 98474, 1),
    ]
    assert set(rows["level"]) == {"DEBUG"} and set(rows["printed_time"]) == {"07-08 02:13:53"}
    assert rows.filter(pl.col("request_id").is_not_null())["source_pos"].to_list() == ["line 2", "line 4"]


def test_06_python_logging_with_the_level_before_the_logger_is_a_header(tmp_path):
    """`2025-06-25 11:25:58,633 - INFO - flashinfer.jit: Prebuilt kernels not found, …` (line 25)."""
    ev = records_from_text(_body("06"), "06.log")
    (row,) = ev.filter(pl.col("source_pos") == "line 25").select("log_ts", "level").rows()
    assert row == (datetime(2025, 6, 25, 11, 25, 58, 633000), "INFO")


def test_15_a_z_stamp_followed_by_a_level_is_the_programs_header_not_a_container_stamp(tmp_path):
    """Dynamo's `2025-04-24T07:42:04.064Z  INFO __init__…: …` (lines 4-14): 11 records, each with its own
    UTC time and level INFO, not one record under a kubectl --timestamps envelope."""
    lines = [line for line in _body("15").splitlines() if line.strip()]
    assert sniff_lines(lines) is None
    out = _ingested(tmp_path, "15")
    ev = saved.query(out, "SELECT source_pos, n_lines, level, ts, zoned FROM events WHERE level IS NOT NULL")
    assert ev["source_pos"].to_list() == [f"line {n}" for n in range(4, 15)]
    assert set(ev["n_lines"]) == {1} and set(ev["level"]) == {"INFO"} and set(ev["zoned"]) == {True}
    assert str(ev["ts"][0]) == "2025-04-24 07:42:04.064000+00:00"
    assert str(ev["ts"][-1]) == "2025-04-24 07:42:11.771000+00:00"


def test_02_a_record_glued_after_a_tqdm_bar_is_its_own_and_the_bars_are_no_part_of_a_record():
    """Line 8 `  0%|…| 0/23 [00:00<?, ?it/s][2025-03-10 16:21:21 TP1] Capture cuda graph begin. …`: the bar's
    carriage return was lost in the copy; TP1's record starts at its `[`, and the two bars (lines 8, 9) are
    tqdm's own output, not lines of TP0's record of line 7."""
    ev = records_from_text(_body("02"), "02.log")
    rows = ev.filter(pl.col("source_pos").is_in(["line 7", "line 8", "line 9"]))
    assert rows.select("source_pos", "tp_rank", "n_lines", "level").rows() == [
        ("line 7", 0, 1, None),
        ("line 8", None, 1, None),
        ("line 8", 1, 1, None),
        ("line 9", None, 1, None),
    ]
    assert rows["message"][2].startswith("[2025-03-10 16:21:21 TP1] Capture cuda graph begin.")
    assert rows["log_ts"][2] == datetime(2025, 3, 10, 16, 21, 21)


def test_06_a_progress_bar_after_a_blank_line_does_not_take_the_time_of_the_record_above():
    """Line 27 `  0%|          | 0/17 [00:00<?, ?it/s]` after line 25's timed Python-logging record."""
    ev = records_from_text(_body("06"), "06.log")
    rows = ev.filter(pl.col("source_pos").is_in(["line 25", "line 27"]))
    assert rows.select("source_pos", "n_lines", "log_ts").rows() == [
        ("line 25", 2, datetime(2025, 6, 25, 11, 25, 58, 633000)),
        ("line 27", 1, None),
    ]


def test_17_gdbs_warning_lines_are_no_part_of_the_glog_record_above():
    """Lines 8-9 `warning: could not find '.gnu_debugaltlink' file for …` (gdb's) after glog's line 7."""
    ev = records_from_text(_body("17"), "17.log")
    rows = ev.filter(pl.col("source_pos").is_in(["line 7", "line 8", "line 9"]))
    assert rows.select("source_pos", "n_lines", "level").rows() == [
        ("line 7", 1, "INFO"),
        ("line 8", 1, None),
        ("line 9", 1, None),
    ]


def test_08_a_nixl_worker_loading_kv_from_a_remote_engine_is_on_the_decode_side():
    """`start_load_kv for request cmpl-… from remote engine d8db2325-…` (lines 2, 4): NixlConnector's KV
    consumer; the other lines of the same worker processes (pid 98473, 98474) take its side."""
    ev = records_from_text(_body("08"), "08.log").filter(pl.col("pid").is_not_null())
    assert ev.group_by("pid").agg(pl.col("role").unique()).sort("pid").rows() == [
        (98473, ["decode"]),
        (98474, ["decode"]),
    ]


def test_15_a_dynamo_prefillworker_service_is_the_prefill_half():
    """`dynamo_service_PrefillWorker entrypoint created`, `[PrefillWorker] Registering component …`: the
    Dynamo service the process runs names its half; its other Z-stamped lines (NIXL, arbiter) take it."""
    ev = records_from_text(_body("15"), "15.log").filter(pl.col("level").is_not_null())
    assert ev.height == 11 and set(ev["role"]) == {"prefill"}


def test_10_the_ids_a_mooncake_pull_failure_lists_are_request_ids_not_rids():
    """`pulling kv_caches for ['973ca62f1bc3666d'] failed: Timeout waiting for P side ready.` (lines 10-12):
    vLLM's MooncakeConnector transfer ids, in a Python list after "for"."""
    ev = records_from_text(_body("10"), "10.log").filter(pl.col("level") == "ERROR")
    assert ev.select("source_pos", "rid", "request_id").rows() == [
        ("line 10", None, "973ca62f1bc3666d"),
        ("line 11", None, "a067ac70e68581a1"),
        ("line 12", None, "94a7d5ac08490bb5"),
    ]


def test_04_a_segfault_whose_current_thread_is_in_init_frames_is_a_start_up_failure(tmp_path):
    """`Fatal Python error: Segmentation fault`, `Current thread 0x00007f4858f86740` innermost
    pynccl_wrapper.py:351 ncclCommInitRank ← … ← init_torch_distributed ← ModelRunner.__init__: the process
    died while it started, not an unexplained crash."""
    out = _ingested(tmp_path, "04")
    found = saved.query(out, "SELECT kind, summary FROM findings WHERE kind <> 'stacks_captured'")
    assert found.rows() == [
        (
            "start_up_failure",
            "A process failed at start-up (rank not printed) (no time read): Fatal Python error: Segmentation"
            " fault in ncclCommInitRank (pynccl_wrapper.py:351); raised in init frames, before serving; then"
            " no exit or restart read after it",
        )
    ]


def test_03_a_segfault_in_a_serving_collective_stays_a_crash_not_a_start_up_failure(tmp_path):
    """03's current thread crashed in all_reduce (no init frame): a crash naming where the current thread
    was (all_reduce, distributed_c10d.py:2501), no start-up failure claimed."""
    out = _ingested(tmp_path, "03")
    found = saved.query(out, "SELECT kind, summary FROM findings ORDER BY kind")
    assert found["kind"].to_list() == ["scheduler_crash", "stacks_captured"]
    assert found["summary"][0] == (
        "A process crashed (rank not printed) (no time read): Fatal Python error: Segmentation fault in all_reduce"
        " (distributed_c10d.py:2501); then no exit or restart read after it"
    )


def test_09_enginecore_failed_to_start_above_a_cut_traceback_is_a_start_up_failure(tmp_path):
    """`(EngineCore_0 pid=1147865) ERROR 08-08 17:42:35 [core.py:682] EngineCore failed to start.`, then a
    traceback cut after core.py:673 run_engine_core: the record's own words say start-up failed (and its last code
    line builds EngineCoreProc); no rank printed, so the process is named by its pid."""
    out = _ingested(tmp_path, "09")
    found = saved.query(out, "SELECT kind, summary FROM findings")
    assert found.rows() == [
        (
            "start_up_failure",
            "A process (pid 1147865) failed at start-up (rank not printed) at 2025-08-08 17:42:35: exception type"
            " not printed (the traceback is cut) in run_engine_core (core.py:673); raised while constructing"
            " EngineCoreProc (its frames cut), before serving; then no exit or restart read after it",
        )
    ]


def test_05_scrambled_frame_fragments_are_unexplained_stack_text_that_names_no_crash_site(tmp_path):
    """Lines 2-12: several processes' stack dumps written at once (`File ", line  in , line   File
    run_event_loop"…`, `, line 3933`), no frame intact: shown, quoted, as stack text no parser read,
    with no function named as where it failed and no exception type."""
    out = _ingested(tmp_path, "05")
    (row,) = saved.query(out, "SELECT kind, n, summary FROM findings").rows()
    kind, n, summary = row
    assert (kind, n) == ("unexplained_crash", 3)
    assert summary.startswith(
        'Unexplained crash or exception: "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py/'
    )
    assert "(fragments of Python stack frames, none intact: what failed cannot be told)" in summary
    for word in ("pop_and_process", "wrapper", "run_event_loop", "Error", "Exception:"):
        assert f" in {word}" not in summary and f"Unexplained exception {word}" not in summary


def test_02_16_17_start_up_facts_are_rows_of_facts_and_never_a_finding(tmp_path):
    """02: SGLang's Load weight end / KV cache #tokens / CUDA graph seconds per rank; 16: Mooncake's Transfer
    Engine (P2P handshake, RPC address, 8 HCAs, its RDMA devices); 17: NIXL's UCX config. Facts only: the
    findings stay what they were (none for 02, 16, 17)."""
    out = _ingested(tmp_path, "02")
    got = saved.query(
        out,
        "SELECT tp_rank, statement, key, number, value_unit FROM facts WHERE key IN ('mem usage', '#tokens',"
        " 'Time elapsed') AND statement <> 'Memory pool end' ORDER BY event_id, key",
    )
    assert got.rows() == [
        (1, "Load weight end", "mem usage", 14.0, "GB"),
        (0, "Load weight end", "mem usage", 14.0, "GB"),
        (1, "KV Cache is allocated", "#tokens", 10240.0, None),
        (0, "KV Cache is allocated", "#tokens", 10240.0, None),
        (1, "Capture cuda graph end", "Time elapsed", 9.4, "s"),
        (1, "Capture cuda graph end", "mem usage", 3.38, "GB"),
        (0, "Capture cuda graph end", "Time elapsed", 9.41, "s"),
        (0, "Capture cuda graph end", "mem usage", 3.38, "GB"),
    ]
    assert saved.query(out, "SELECT count(*) FROM findings").item() == 0
    out = _ingested(tmp_path, "16")
    got = saved.query(
        out, "SELECT key, value FROM facts WHERE key IN ('Metadata', 'listening on', 'HCAs', 'RDMA device')"
    )
    assert sorted(got.rows()) == [
        ("HCAs", "8"),
        ("Metadata", "P2PHANDSHAKE"),
        ("RDMA device", "mlx5_bond_5"),
        ("RDMA device", "mlx5_bond_6"),
        ("RDMA device", "mlx5_bond_7"),
        ("RDMA device", "mlx5_bond_8"),
        ("listening on", "127.0.0.1:15317"),
    ]
    out = _ingested(tmp_path, "17")
    got = saved.query(
        out, "SELECT key, value FROM facts WHERE statement = 'Modified UCX config' ORDER BY source_pos"
    )
    assert got.rows() == [
        ("ADDRESS_VERSION", "v2"),
        ("RNDV_THRESH", "inf"),
        ("MAX_COMPONENT_MDS", "32"),
        ("MAX_RMA_RAILS", "2"),
    ]


def test_11_13_vllm_engine_stats_are_engine_stats_rows_never_batches(tmp_path):
    """`Engine 000: Avg prompt throughput: 430.1 tokens/s, …, Running: 3 reqs, …` (13 read through GitHub's
    auto-linked `[[loggers.py:259](http://loggers.py:259/)]` tag): typed rows of engine_stats; batches,
    which SGLang's wedge and stop rules read, stay empty, and no finding is made of them."""
    out = _ingested(tmp_path, "13")
    got = saved.query(
        out,
        "SELECT source_pos, engine_index, prompt_throughput, generation_throughput, running_reqs, waiting_reqs,"
        " gpu_kv_cache_usage_pct, prefix_cache_hit_rate_pct, extra, printed_time FROM engine_stats"
        " JOIN events USING (event_id, source_pos) ORDER BY source_pos",
    )
    assert got.rows() == [
        ("line 2", 0, 0.0, 13.2, 0, 0, 0.0, 0.0, '{"External prefix cache hit rate": 0.0}', "06-11 12:33:49"),
        (
            "line 6",
            0,
            430.1,
            45.4,
            3,
            0,
            40.0,
            10.8,
            '{"External prefix cache hit rate": 6.3}',
            "06-11 12:33:59",
        ),
    ]
    assert saved.query(out, "SELECT count(*) FROM batches").item() == 0
    assert saved.query(out, "SELECT count(*) FROM findings").item() == 0
    out = _ingested(tmp_path, "11")
    got = saved.query(
        out, "SELECT source_pos, prompt_throughput, running_reqs FROM engine_stats ORDER BY source_pos"
    )
    assert got.rows() == [("line 3", 0.0, 0), ("line 7", 3397.5, 0)]
    assert saved.query(out, "SELECT count(*) FROM findings").item() == 0
