"""The stacks_captured finding (queries/findings/stacks.sql): a file whose evidence is py-spy dumps says
where every dumped main thread waits, grouped, and leads the summary only when nothing else is found.
Values from each case folder's README (sglang/, pyspy/, real2/, batch3/, batch4/)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from logcorr.analysis import findings as findings_mod
from logcorr.render import report as report_mod
from tests.conftest import CASES, ingested_alone, sql


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("stacks")


def stacks_row(out: Path) -> dict:
    """The one stacks_captured finding of OUT (ts, role, ranks, n, summary, evidence)."""
    rows = sql(
        out, "SELECT ts, role, ranks, n, summary, evidence FROM findings WHERE kind = 'stacks_captured'"
    )
    assert len(rows) == 1, rows
    return dict(zip(("ts", "role", "ranks", "n", "summary", "evidence"), rows[0], strict=True))


def what_happened(out: Path) -> str:
    """The report's "What happened" line."""
    text = report_mod.report(out)
    return next(line for line in text.splitlines() if "**What happened**" in line)


def case(workdir: Path, rel: str) -> Path:
    folder, prefix = rel.split("/")
    return ingested_alone(workdir, CASES / folder, prefix)


def test_pynccl_init_hang_groups_four_scheduler_ranks_in_synchronize(workdir):
    """batch3/03: TP0-TP3 (pids 544360-544363) active in synchronize (torch/cuda/streams.py:102) under
    pynccl's __init__ (pynccl.py:121), in init frames: a start-up hang, not all_reduce; the two
    launch_server processes 544105 and 581325 idle in _recv under _wait_for_scheduler_ready."""
    out = case(workdir, "batch3/03")
    row = stacks_row(out)
    assert row["n"] == 6 and row["ranks"] == ["TP0", "TP1", "TP2", "TP3"]
    assert (
        "4 scheduler ranks TP0-TP3 wait in a device synchronize: synchronize (torch/cuda/streams.py:102)"
        " under __init__ (pynccl.py:121), in init frames" in row["summary"]
    )
    assert ": a start-up hang" in row["summary"]
    assert (
        "2 decode processes (pid 544105, pid 581325) are idle in _recv (multiprocessing/connection.py:395)"
        " under _wait_for_scheduler_ready (engine.py:894)" in row["summary"]
    )
    assert "all_reduce" not in row["summary"].split(";")[0]
    assert "bare py-spy output" in row["summary"]
    line = what_happened(out)
    assert line.startswith("- **What happened**: py-spy dumps of 6 processes: 4 scheduler ranks TP0-TP3")


def test_megatron_grouped_threads_wait_in_all_reduce_and_recv(workdir):
    """real2/10: threads 686181-686184 in all_reduce (distributed_c10d.py:1316) under _reduce_outputs
    (deepspeed/runtime/pipe/engine.py:519), threads 686185-686188 in recv (distributed_c10d.py:1002)
    under deepspeed's p2p recv (p2p.py:83); no rank, no role is printed, so none is said."""
    out = case(workdir, "real2/10")
    row = stacks_row(out)
    assert row["n"] == 8 and row["ranks"] == [] and row["role"] is None
    assert (
        "4 main threads (thread 686181-686184) wait in all_reduce: all_reduce"
        " (torch/distributed/distributed_c10d.py:1316) under _reduce_outputs (deepspeed/runtime/pipe/engine.py:519)"
        in row["summary"]
    )
    assert (
        "4 main threads (thread 686185-686188) wait in recv: recv (torch/distributed/distributed_c10d.py:1002)"
        " under recv (deepspeed/runtime/pipe/p2p.py:83)" in row["summary"]
    )
    assert not re.search(r"prefill|decode|scheduler", row["summary"])


def test_eagle_draft_dump_is_dp1_tp3_and_names_no_collective(workdir):
    """batch4/14: the dump logged as "[… DP1 TP3] Pyspy dump for PID 231810" at 2025-06-05 08:28:03 is of
    DP1 TP3 (not the watchdog batch's DP3 TP7), active in draft (eagle_worker.py:397) under
    forward_batch_speculative_generation in event_loop_normal; no frame names a collective."""
    out = case(workdir, "batch4/14")
    row = stacks_row(out)
    assert row["ranks"] == ["DP1 TP3"] and row["n"] == 1
    assert row["ts"] == datetime(2025, 6, 5, 8, 28, 3, tzinfo=UTC)
    assert (
        "1 engine scheduler rank DP1 TP3 is active in draft (eagle_worker.py:397) under"
        " forward_batch_speculative_generation (eagle_worker.py:267), in the serving loop event_loop_normal;"
        " no frame of its stack names a collective" in row["summary"]
    )
    assert "DP3" not in row["summary"] and not re.search(r"wait(s)? in", row["summary"])
    assert (
        '"Pyspy dump for PID 231810"' in row["summary"] and "watchdog or crash diagnostics" in row["summary"]
    )
    (dump_event,) = row["evidence"]
    assert sql(out, f"SELECT kind, tp_rank, dp_rank FROM events WHERE event_id = {dump_event}") == [
        ("pyspy", 3, 1)
    ]
    assert (
        "**What happened**: py-spy dumps of 1 process: 1 engine scheduler rank DP1 TP3 is active in draft"
        in (what_happened(out))
    )


def test_npu_dump_by_crash_diagnostics_and_the_failed_pid(workdir):
    """batch3/06: "Pyspy dump for PID 163685" (07:20:50), TP0 from the title, MainThread idle in read
    (libc.so.6) inside decorated (transfer_to_npu.py:182) under _compute_mrope_positions
    (forward_batch_info.py:1106); py-spy failed on PID 163686 (two "Pyspy failed" records, one "All
    pyspy dump attempts failed"); the note line quoting "Pyspy failed" is no evidence."""
    out = case(workdir, "batch3/06")
    row = stacks_row(out)
    assert row["ranks"] == ["TP0"] and row["ts"] == datetime(2026, 7, 7, 7, 20, 50, tzinfo=UTC)
    assert (
        "1 engine scheduler rank TP0 is idle in read (libc.so.6) inside decorated (torch_npu/contrib/transfer_to_npu.py:182)"
        " under _compute_mrope_positions (forward_batch_info.py:1106), in the serving loop event_loop_overlap"
        in row["summary"]
    )
    assert "no frame of its stack names a collective" in row["summary"]
    assert "SGLang's py-spy failed on PID 163686 (3 records)" in row["summary"]
    kinds = sql(
        out, f"SELECT kind, count(*) FROM events WHERE event_id IN {tuple(row['evidence'])} GROUP BY kind"
    )
    assert sorted(kinds) == [("pyspy", 1), ("watchdog", 3)]


def test_pp_send_and_gloo_recv_dumps(workdir):
    """sglang/07: bare dump of DP1 PP0 TP1 EP1 (pid 3438121), prefill (event_loop_pp_disagg_prefill),
    waiting in send (distributed_c10d.py:2487). pyspy/01: PP2 TP1 (pid 88693, logged by SGLang) and
    the fragment's thread 88692 wait in gloo's waitRecv; the watchdog on PP1 TP1 leads, worded without
    an "unknown" role."""
    row = stacks_row(case(workdir, "sglang/07"))
    assert row["role"] == "prefill" and row["ranks"] == ["DP1 PP0 TP1 EP1"]
    assert (
        "1 prefill scheduler rank DP1 PP0 TP1 EP1 waits in send: send (torch/distributed/distributed_c10d.py:2487)"
        " under send_object (distributed/parallel_state.py:886), in the serving loop event_loop_pp_disagg_prefill"
        in row["summary"]
    )
    out = case(workdir, "pyspy/01")
    row = stacks_row(out)
    assert row["n"] == 2 and row["ranks"] == ["PP2 TP1"]
    assert (
        "2 main threads (thread 88692, PP2 TP1) wait in recv (gloo): gloo::transport::tcp::UnboundBuffer::waitRecv"
        in row["summary"]
    )
    assert '1 of them logged by SGLang: "Pyspy dump for PID 88693"' in row["summary"]
    line = what_happened(out)
    assert "SGLang's scheduler watchdog fired on PP1 TP1 at 2026-01-29 13:12:37 (timeout 300 s)" in line
    assert "unknown" not in line


def test_native_crashdump_main_process_tp6(workdir):
    """sglang/09: "Pyspy dump for PID 187" at 08:34:44, sglang::scheduler_TP6, MainThread idle in a
    native lock inside threading's _shutdown: no collective."""
    row = stacks_row(case(workdir, "sglang/09"))
    assert row["ranks"] == ["TP6"] and row["ts"] == datetime(2026, 7, 14, 8, 34, 44, tzinfo=UTC)
    assert (
        "1 scheduler rank TP6 is idle in PyThread_acquire_lock_timed (python3.12) inside _shutdown (threading.py:1622)"
        in row["summary"]
    )
    assert "no frame of its stack names a collective" in row["summary"]


@pytest.mark.parametrize(
    ("rel", "said"),
    [
        ("pyspy/02", "1 process (pid 39) is idle in backward (torch/autograd/__init__.py:266) under backward"
                     " (deepspeed/runtime/fp16/loss_scaler.py:63); no frame of its stack names a collective"),
        ("pyspy/03", "1 thread (thread 4079) waits in all_gather: all_gather_into_tensor"
                     " (torch/distributed/distributed_c10d.py:2709) under all_gather_into_tensor (deepspeed/comm/torch.py:219)"
                     "; 1 main thread (thread 42) is idle in backward (torch/autograd/__init__.py:266)"),
        ("pyspy/05", "1 process (pid 2403) is active in top_k_top_p_sampling_from_logits (flashinfer/sampling.py:1548)"
                     " under flashinfer_sample (vllm/v1/sample/ops/topk_topp_sampler.py:508), in init frames"
                     " (__init__ (vllm/v1/engine/core.py:145), no event loop)"),
        ("pyspy/06", "1 process (pid 338370) is idle in <module> (yolo.py:8); no frame of its stack names a collective"),
    ],
)  # fmt: skip
def test_training_and_vllm_dumps_say_what_they_show_without_sglang_roles(workdir, rel, said):
    """pyspy/02, 03 (accelerate/DeepSpeed training), 05 (vLLM EngineCore), 06 (--json): the frames as
    printed, no SGLang role, rank or scheduler, and they lead the summary (nothing else is found)."""
    out = case(workdir, rel)
    row = stacks_row(out)
    assert said in row["summary"]
    assert row["role"] is None and row["ranks"] == []
    assert not re.search(r"prefill|decode|scheduler|TP\d", row["summary"])
    assert "bare py-spy output" in row["summary"]
    assert what_happened(out).startswith("- **What happened**: py-spy dumps of 1 process: ")


def test_the_watchdog_leads_over_the_dumps(workdir):
    """sglang/06: the scheduler watchdog on TP3 (11:25:58) leads; the dump of pid 309
    (sglang::scheduler_TP6, active in _apply (penaltylib/min_new_tokens.py:78)) is a finding below it
    and out of the chain line; stacks_captured sits last in MAIN_ORDER but for unexplained error-level records."""
    assert findings_mod.MAIN_ORDER[-2:] == ("stacks_captured", "unexplained_errors")
    out = case(workdir, "sglang/06")
    found = findings_mod.findings(out)
    assert findings_mod.main_finding(found)["kind"] == "scheduler_watchdog"
    row = stacks_row(out)
    assert row["ranks"] == ["TP6"]
    assert "1 scheduler rank TP6 is active in _apply (penaltylib/min_new_tokens.py:78)" in row["summary"]
    text = report_mod.report(out)
    assert "SGLang's scheduler watchdog fired on TP3 at 2025-10-29 11:25:58 " in what_happened(out)
    chain = next((line for line in text.splitlines() if "**How it came about**" in line), "")
    assert "py-spy dumps" not in chain
