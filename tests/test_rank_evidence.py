"""Issue 31 items 2 and 8: the per-rank evidence SGLang and NCCL print besides batches. SGLang's
scheduler status lines (``SGLANG_LOG_SCHEDULER_STATUS_TARGET``, ``log_utils.log_json``) and NCCL's
collective lines (``NCCL_DEBUG_SUBSYS=COLL``, ``src/enqueue.cc``: ``opCount %lx … comm %p
[nranks=%d]``), each read by its saved query."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from logcorr.analysis import saved
from logcorr.ingest import ingest

T0 = 1761773680_000000  # 2025-10-29 21:34:40 UTC, µs
BOOT = "0123456789abcdef0123456789abcdef"


def _entry(i: int, us: int, pid: int, message: str, unit: str = "sglang-decode.service") -> str:
    return (
        f"__CURSOR=s=x;i={i:x}\n__REALTIME_TIMESTAMP={us}\n_BOOT_ID={BOOT}\n_HOSTNAME=gpu-node-1\n"
        f"_PID={pid}\n_COMM=python3\n_SYSTEMD_UNIT={unit}\nMESSAGE={message}\n\n"
    )


def test_nccl_collective_counts_name_the_rank_behind(tmp_path: Path):
    """Four decode ranks issue all_reduce after all_reduce; TP2 stops one short (opCount 0x1f3 against
    0x1f4, hex as NCCL prints it): it is 1 behind, the others 0; each row names its pid's rank."""
    entries, i = [], 0
    pids = {0: 3301, 1: 3302, 2: 3303, 3: 3304}
    for tp, pid in pids.items():
        i += 1
        entries.append(_entry(i, T0 + tp, pid, f"[2025-10-29 21:34:40 TP{tp}] Decode batch, #running-req: 3, #token: 900, token usage: 0.01, cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0"))  # fmt: skip
    for op in range(0x1F0, 0x1F5):
        for tp, pid in pids.items():
            if tp == 2 and op == 0x1F4:
                continue
            i += 1
            us = T0 + 1_000_000 + (op - 0x1F0) * 1000 + tp
            line = (
                f"gpu-node-1:{pid}:{pid} [{tp}] NCCL INFO AllReduce: opCount {op:x} sendbuff 0x7f3a00000000 "
                f"recvbuff 0x7f3a00000000 count 31040 datatype 9 op 0 root 0 comm 0x{0x650E4700 + tp * 0x100:x} "
                "[nranks=4] stream 0x5567a2b0"
            )
            entries.append(_entry(i, us, pid, line))
    (tmp_path / "decode.export").write_text("".join(entries))
    ingest([tmp_path / "decode.export"], tmp_path / "out")
    rows = saved.query(tmp_path / "out", "nccl_collectives")
    got = rows.select(
        "tp_rank", "pid", "calls", "last_op", "last_op_count", "peers", "max_op_count", "behind"
    )
    assert got.rows() == [
        (0, 3301, 5, "AllReduce", 0x1F4, 4, 0x1F4, 0),
        (1, 3302, 5, "AllReduce", 0x1F4, 4, 0x1F4, 0),
        (2, 3303, 4, "AllReduce", 0x1F3, 4, 0x1F4, 1),
        (3, 3304, 5, "AllReduce", 0x1F4, 4, 0x1F4, 0),
    ]
    tp2 = rows.filter(rows["tp_rank"] == 2).row(0, named=True)
    assert tp2["comm"] == "0x650e4900" and tp2["role"] == "decode" and tp2["host"] == "gpu-node-1"
    assert tp2["last_ts"] == datetime(2025, 10, 29, 21, 34, 41, 3002, tzinfo=UTC)


def test_scheduler_status_lines_show_a_rank_whose_requests_stop_changing(tmp_path: Path):
    """A folder target's ``gpu-node-1_3.log``: three status lines a minute apart, local time without a
    zone. The host comes from the file name, zoned is false, and from the second line on the running
    rids stay the same while a request waits: unchanged since 21:34:42."""
    rid, other = "3e64727659014c729d0ee75279c38a28", "9f1c2d3e4b5a69788796a5b4c3d2e1f0"
    lines = [
        {"timestamp": "2025-10-29T21:33:42.123456", "event": "scheduler.status", "rank": 3,
         "running_rids": [rid], "queued_rids": []},
        {"timestamp": "2025-10-29T21:34:42.123456", "event": "scheduler.status", "rank": 3,
         "running_rids": [rid, other], "queued_rids": ["q1"]},
        {"timestamp": "2025-10-29T21:35:42.123456", "event": "scheduler.status", "rank": 3,
         "running_rids": [other, rid], "queued_rids": ["q1", "q2"]},
    ]  # fmt: skip
    path = tmp_path / "gpu-node-1_3.log"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    ingest([path], tmp_path / "out")
    rows = saved.query(tmp_path / "out", "scheduler_status")
    got = rows.select("ts", "zoned", "host", "rank", "running", "queued", "unchanged", "unchanged_since")
    at = [datetime(2025, 10, 29, 21, m, 42, 123456, tzinfo=UTC) for m in (33, 34, 35)]
    assert got.rows() == [
        (at[0], False, "gpu-node-1", 3, 1, 0, False, None),
        (at[1], False, "gpu-node-1", 3, 2, 1, False, None),
        (at[2], False, "gpu-node-1", 3, 2, 2, True, at[1]),
    ]
    assert rows["running_rids"][2].to_list() == [other, rid]
