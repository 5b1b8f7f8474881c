"""Every real case file, ingested alone, gets a summary that names its main event as the folder's
README describes it (kind, time, role, ranks, room, cause), or says the data shows no failure where the
README lists none; and the report words nothing its rows contradict (``report_audit``: no "no failure"
beside an error record, no "not printed" beside the printed value, no "UTC" for a time printed without
a zone, no role "unknown" worded as a role)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from logcorr.analysis import findings as findings_mod
from logcorr.render import report as report_mod
from tests.conftest import CASES, ingested_alone
from tests.report_audit import audit

NO_FAILURE = None
NOTHING_KNOWN = "nothing known"  # no record of a known kind or role: "logcorr read no record as an SGLang engine's" (issue 46)

# file → (kind of the main finding, words its "What happened" line holds); values from the READMEs.
EXPECTED: dict[str, tuple[str | None, list[str]]] = {
    "sglang/01": ("transfer_failures", ['1 "Decode transfer failed" record(s) on decode TP0', "(4793981895866140836)", "cause aborted"]),
    "sglang/02": ("bootstrap_failures", ['3 "Prefill bootstrap failed"', "TP0 EP0, TP1 EP1, TP7 EP7", "(7561186998443553199)"]),
    "sglang/04": ("scheduler_watchdog", ["watchdog fired on engine TP3 at 2025-08-02 19:24:30 (timeout 300 s)"]),
    "sglang/05": ("scheduler_watchdog", ["watchdog fired on engine DP0 TP2, DP1 TP5"]),
    "sglang/06": ("scheduler_watchdog", ["watchdog fired on TP3"]),
    "sglang/07": ("stacks_captured", ["DP1 PP0 TP1 EP1 waits in send", "distributed_c10d.py:2487"]),
    "sglang/09": ("stacks_captured", ["rank TP6"]),
    "sglang/10": (NO_FAILURE, []),
    "sglang/11": (NO_FAILURE, []),
    "sglang/12": ("failed_requests", ["Failed requests on router", "2025-10-29 21:49:19 UTC", "POST /generate"]),
    "sglang/13": ("scheduler_crash", ["Scheduler (decode) crashed on TP1 at 2026-05-27 23:38:59:", "process_decode_queue (decode.py:1773)"]),
    "sglang/15": (NO_FAILURE, []),
    "sglang/17": ("transfer_failures", ["backend mooncake"]),
    "sglang/18": ("request_aborts", ["1 request(s) aborted", "61165a643f00435ca1112901a78071f7", "disconnected from the client"]),
    "sglang/20": ("collective_timeout", ["NCCL watchdog", "rank 3", "_REDUCE_SCATTER_BASE SeqNum 432927", "600 s timeout"]),
    "pyspy/01": ("scheduler_watchdog", ["watchdog fired on PP1 TP1"]),
    "pyspy/02": ("stacks_captured", ["idle in backward", "no frame of its stack names a collective"]),
    "pyspy/03": ("stacks_captured", ["thread 4079) waits in all_gather"]),
    "pyspy/05": ("stacks_captured", ["pid 2403"]),
    "pyspy/06": ("stacks_captured", ["pid 338370"]),
    "real2/01": ("transfer_failures", ["on prefill", "backend mooncake", "connect: Cannot assign requested address"]),
    "real2/02": ("transfer_failures", ["backend mooncake", "Session::readBody failed: End of file ×2"]),
    "real2/03": ("transfer_failures", ['2 "Decode transfer failed" record(s) on decode TP1, TP2', "(1655955501905217457)", "propagated: not the root cause"]),
    "real2/04": ("scheduler_crash", ["Scheduler (prefill) crashed on TP2 at 2026-01-16 22:03:02:", "exception type not printed", "poll (conn.py:1120)"]),
    "real2/05": ("scheduler_crash", ["crashed on PP0 TP7 at 2026-05-20 08:02:44 UTC", "exception type not printed"]),
    "real2/06": ("transfer_failures", ["on prefill", "(1788380104266545413)", "RuntimeError: PD Disaggregation does NOT support PD different TP sizes", "backend nixl"]),
    "real2/07": ("transfer_failures", ['"Decode transfer failed" record(s) on decode TP0', "(5911547551050461423)", "cause prefill_dead"]),
    "real2/08": ("transfer_failures", ['8 "Prefill transfer failed" record(s) on prefill', "(4073374190146881990)", "cause decode_dead", "backend mooncake"]),
    "real2/09": ("transfer_failures", ['4 "Decode transfer failed" record(s) on decode TP1, TP2, TP8, TP9', "(4073374190146881990)"]),
    "real2/10": ("stacks_captured", ["wait in all_reduce", "wait in recv", "thread 686181-686184", "thread 686185-686188"]),
    "real2/11": ("collective_timeout", ["rank 0, rank 1", "ALLREDUCE SeqNum 1", "last completed work -1"]),
    "real2/12": ("scheduler_watchdog", ["watchdog fired on engine DP4 TP4 at 2025-06-26 07:25:31 (timeout 300 s)"]),
    "real2/13": ("unexplained_errors", ["2 record(s) that no other finding explains", "engine TP1 ×1, engine TP7 ×1", '"\\[2026-08-04 11:58:42 TP1\\] Scheduler debug info:" on engine TP1']),
    "batch3/01": (NO_FAILURE, []),
    "batch3/02": (NO_FAILURE, []),
    "batch3/03": ("stacks_captured", ["4 scheduler ranks TP0-TP3 wait in a device synchronize", "pynccl.py:121", "a start-up hang"]),
    "batch3/04": ("transfer_failures", ['4 "NIXL transport error" record(s) on prefill TP1 EP1, TP2 EP2, TP5 EP5, TP7 EP7', "(6555093254675405189)", "NIXL_ERR_REMOTE_DISCONNECT"]),
    "batch3/05": ("scheduler_crash", ["Scheduler (engine) crashed on TP1 at 2026-07-07 07:20:43:", "RuntimeError", "SIGQUIT received"]),
    "batch3/06": ("stacks_captured", ["rank TP0", "transfer_to_npu.py:182", "py-spy failed on PID 163686"]),
    "batch3/07": ("start_up_failure", ["ValueError: Free memory on device cuda:0", "exited (openclaw-vllm.service, 1/FAILURE)", "restart counter 64"]),
    "batch3/08": ("crash_loop", ["openclaw-vllm.service crashed 1 time(s)", "restart counter up to 76", "2026-02-22 06:55:47 to 06:55:54"]),
    "batch3/09": ("failed_requests", ["Failed requests on router", "Failed to select PD pair"]),
    "batch3/10": ("bootstrap_failures", ['1 "Prefill bootstrap failed" record(s) on prefill TP0', "(389535395827821955)", "cause aborted"]),
    "batch3/11": (NO_FAILURE, []),  # SGLang's own header lines, role unknown: SGLang data (batch7/06's rule)
    "batch3/12": ("transfer_failures", ["DP1 TP0 EP8", "TRANSFER_FAIL", "backend mooncake"]),
    "batch3/13": ("transfer_failures", ["4 KV transfer backend error record(s) on TP2", "TRANSFER_FAIL ×2", "Transfer slice failed"]),
    "batch4/01": (NO_FAILURE, []),
    "batch4/02": (NO_FAILURE, []),
    "batch4/03": ("scheduler_crash", ["Scheduler (prefill) crashed on DP1 TP1 EP1 at 2026-03-24 04:06:11 UTC", "exception type not printed"]),
    "batch4/04": ("scheduler_crash", ["crashed on TP2 at 2025-07-24 23:53:08 UTC", "exception type not printed", "eagle_worker.py:325"]),
    "batch4/05": ("scheduler_crash", ["Scheduler (prefill) crashed (rank not printed)", "exception type not printed"]),
    "batch4/06": ("bootstrap_failures", ['1 "Prefill bootstrap failed" record(s) on prefill DP2 TP2 EP2', "(806626514800541158)", "cause aborted"]),
    "batch4/07": ("bootstrap_failures", ['2 "Prefill bootstrap failed" record(s) on prefill DP1 TP0', "818533314937763119, 5560925207985320907", "routing_conflict"]),
    "batch4/08": ("cuda_error", ["device-side assert triggered on decode rank 3", "2025-11-17 21:22:11"]),
    "batch4/09": ("scheduler_crash", ["TpModelWorkerClient crashed on DP11 TP11 at 2025-05-07 09:29:36:", "exception type not printed"]),
    "batch4/10": (NO_FAILURE, []),
    "batch4/11": ("start_up_failure", ["failed at start-up on DP10 TP10 EP10 at 2025-08-28 21:19:34", "exception type not printed"]),
    "batch4/12": (NO_FAILURE, []),
    "batch4/13": (NO_FAILURE, []),
    "batch4/14": ("stacks_captured", ["DP1 TP3 is active in draft (eagle_worker.py:397)", "no frame of its stack names a collective"]),
    "batch4/15": ("scheduler_crash", ["Scheduler (decode) crashed on DP2 TP2 EP2 at 2025-10-03 14:38:55:", "exception type not printed"]),
    "batch5/01": ("stacks_captured", ["pid 10366", "idle in wait4", "run_data_parallel_controller_process", "no frame of its stack names a collective"]),
    "batch5/02": ("unexplained_crash", ["Unexplained crash or exception", "in collective_rpc", "DP0"]),
    "batch5/03": ("unexplained_errors", ["svm advise failed", "at 2025-09-22 20:20:40", "6 record(s)", "5 error level, 1 failure word"]),
    "batch5/04": (NO_FAILURE, []),
    "batch5/05": (NO_FAILURE, []),
    "batch5/06": ("unexplained_errors", ["failure detected by watchdog at work sequence id: 40231", "on TP1", "TP7 ×3, TP1 ×2"]),
    "batch5/07": ("collective_timeout", ["NCCL watchdog", "rank 2, rank 4", "_ALLGATHER_BASE SeqNum 1522789 ran 600094 ms, past its 600 s timeout", "last completed work 1522788, last enqueued 1522789"]),
    "batch5/08": (NOTHING_KNOWN, []),
    "batch5/09": ("start_up_stall", ['Start-up stalled in "Init torch distributed"', "8 rank(s) began it at 2026-07-14 07:49:04", "none printed its end"]),
    "batch5/10": (NOTHING_KNOWN, []),
    "batch5/11": ("unexplained_crash", ["json.decoder.JSONDecodeError: Expecting value", "at 2025-03-08 02:04:48"]),
    "batch5/12": ("transfer_failures", ['6 "Connect failed" record(s)', "peer 10.0.9.3 (6 ports)", "backend mooncake"]),
    "batch5/13": ("scheduler_crash", ["Scheduler (decode) crashed on DP1 TP1 EP1 at 2026-07-05 19:49:44:", "torch.AcceleratorError: CUDA error: an illegal memory access", "sampler.py:128"]),
    "batch5/14": ("unexplained_crash", ['"!!!!!!! Segfault encountered !!!!!!!"']),
    "batch5/15": ("unexplained_crash", ['Fatal Python error: "Segmentation fault', "on decode"]),
    "batch5/16": (NO_FAILURE, []),
    "batch5/17": (NOTHING_KNOWN, []),
    "batch6/01": ("start_up_failure", ["failed at start-up on TP2 at 2025-02-09 21:23:00", "init_torch_distributed", "SIGQUIT"]),
    "batch6/02": ("scheduler_crash", ["Scheduler (prefill) crashed on TP5 at 2026-06-09 11:38:45", "exception type not printed"]),
    "batch6/03": ("scheduler_crash", ["TpModelWorkerClient (prefill) crashed on DP0 TP0 EP0 at 2025-08-24 20:28:03"]),
    "batch6/04": ("scheduler_crash", ["Scheduler (decode) crashed on DP10 TP21 at 2025-05-28 04:24:31", "a subprocess crashed (exit code 131)"]),
    "batch6/05": ("scheduler_crash", ["Scheduler (decode) crashed on DP1 TP4 at 2025-05-27 04:36:06", "synchronize (streams.py:224)"]),
    "batch6/06": ("transfer_failures", ['"Decode transfer failed"', "(2170015846053279415)"]),
    "batch6/07": ("unexplained_crash", ['"Fatal Python error: Segmentation fault"']),
    "batch6/08": ("collective_timeout", ["rank 4", "ALLREDUCE SeqNum 91885 ran 600037 ms, past its 600 s timeout", "last completed work 91884"]),
    "batch6/09": ("scheduler_watchdog", ["TP0, TP1, TP2, TP3, TP4, TP5, TP6, TP7 from 2025-03-09 00:57:15 to 00:57:16", "(timeout 300 s)"]),
    "batch6/10": ("start_up_failure", ["failed at start-up on TP5 at 2025-02-08 00:55:32"]),
    "batch6/11": ("scheduler_crash", ["Scheduler (engine) crashed on TP0 at 2025-11-06 01:16:21"]),
    "batch6/12": ("unexplained_crash", ['"Fatal Python error: Aborted"']),
    "batch6/13": ("unexplained_crash", ["ERROR 07-03 20:47:11 \\[core.py:517\\]", "vllm/v1/engine/core.py"]),
    "batch6/14": ("unexplained_crash", ["UnicodeDecodeError: 'utf-8' codec can't decode byte 0xbb"]),
    "batch6/15": (NO_FAILURE, []),
    "batch6/16": ("transfer_failures", ["backend UCX", "send(110) failed: Input/output error"]),
    "batch6/17": ("unexplained_errors", ["Failed to connect gRPC client for worker grpc://localhost:20000", "on router"]),
    "batch6/18": (NO_FAILURE, []),
    "batch6/19": ("cuda_error", ["CUDA illegal memory access"]),
    "batch6/20": (NO_FAILURE, []),
}  # fmt: skip


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("summaries")


def test_every_case_file_has_an_expectation():
    files = {f"{p.parent.name}/{p.name[:2]}" for d in ("sglang", "pyspy", "real2", "batch3", "batch4", "batch5", "batch6")
             for p in (CASES / d).glob("[0-9][0-9]_*")}  # fmt: skip
    assert files == set(EXPECTED)


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_the_summary_names_the_main_event(workdir, case):
    folder, prefix = case.split("/")
    out = ingested_alone(workdir, CASES / folder, prefix)
    results = report_mod.gather(out)
    with report_mod.drawn(results):
        text = report_mod.markdown(out, results)
    assert audit(out, text, results["findings"]) == []
    lines = report_mod.summary_lines(results)
    kind, words = EXPECTED[case]
    main = findings_mod.main_finding(results["findings"])
    happened = lines[0]
    if kind in (NO_FAILURE, NOTHING_KNOWN):
        assert main is None, main
        said = (
            "cannot be told: logcorr read no record as an SGLang engine"
            if kind
            else "the data shows no failure"
        )
        assert happened.startswith(f"**What happened**: {said}"), happened
        return
    assert main is not None and main["kind"] == kind, (main or {}).get("summary")
    for w in words:
        assert w in happened, (w, happened)
    text = "\n".join(lines)
    assert not re.search(r"\bon unknown\b|\(unknown\)|role unknown [A-Z]", text), text
    if main["zoned"] is False:  # a time printed without a zone is stated as printed
        assert main["ts"] is not None
        assert " UTC" not in happened and "as printed (zone not printed)" in lines[1]


def test_impact_states_each_roles_5xx_in_its_own_clock(workdir):
    """real2/02: the router's two 500s print UTC, the decode server's access line prints no zone."""
    out = ingested_alone(workdir, CASES / "real2", "02")
    lines = report_mod.summary_lines(report_mod.gather(out))
    (impact,) = [line for line in lines if line.startswith("**Impact**")]
    assert "2 router request(s) answered 5xx (500×2, 07:15:26 UTC to 07:15:26 UTC)" in impact
    assert "1 request(s) answered 5xx (500×1, 07:15:26 to 07:15:26)" in impact
