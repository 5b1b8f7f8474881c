"""The third batch of real excerpts (tests/cases/batch3/README.md): each file ingested alone, the README's
items about envelopes, line headers, levels, times, ranks, record counts and joining asserted by SQL on
the tables. (py-spy, faulthandler, watchdog and rid items: tests/test_batch_typing.py.)"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import polars as pl
import pytest

from logcorr.analysis import saved
from logcorr.parsers.prefix import is_record_start
from tests.conftest import CASES, ingested_alone, sql

BATCH = CASES / "batch3"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("batch3")


def out_of(workdir: Path, prefix: str) -> Path:
    return ingested_alone(workdir, BATCH, prefix)


# 08's indented `systemctl status` lines are still lost by the journalctl short reader (issue 28, item 1)
FILES = sorted(p.name[:2] for p in BATCH.glob("*_*"))


@pytest.mark.parametrize("prefix", FILES)
def test_every_non_blank_line_is_in_a_record(workdir, prefix):
    out = out_of(workdir, prefix)
    (path,) = BATCH.glob(f"{prefix}_*")
    covered = set()
    for pos, n in sql(out, "SELECT CAST(substr(source_pos, 6) AS INT), n_lines FROM events"):
        covered |= set(range(pos, pos + n))
    lines = path.read_text().splitlines()
    assert {i for i, line in enumerate(lines, 1) if line.strip()} <= covered
    assert sql(out, "SELECT count(*) FROM events WHERE year(ts) < 2000 OR year(log_ts) < 2000") == [(0,)]


def test_01_level_location_lines_c10d_warnings_and_gloo_lines(workdir):
    out = out_of(workdir, "01")
    levels = sql(
        out,
        "SELECT regexp_extract(message, 'server_args.py:\\d+'), level FROM events "
        "WHERE message LIKE '%] INFO server_args.py:%' OR message LIKE '%] WARNING server_args.py:%' ORDER BY event_id",
    )
    assert levels == [("server_args.py:1697", "INFO"), ("server_args.py:2326", "WARNING")]
    init = sql(
        out,
        "SELECT tp_rank FROM events WHERE message LIKE '%Init torch distributed begin.%' ORDER BY event_id",
    )
    assert [r[0] for r in init] == [1, 5, 6, 3, 2, 4, 7, 0]
    c10d = sql(
        out, "SELECT level, log_ts, tp_rank FROM events WHERE message LIKE '[W227 %' ORDER BY event_id"
    )
    assert len(c10d) == 4 and {r[0] for r in c10d} == {"WARNING"} and {r[2] for r in c10d} == {None}
    assert c10d[0][1] == datetime(2026, 2, 27, 14, 33, 13, 89845)  # the year of the dated lines beside it
    gloo = sql(out, "SELECT tp_rank, log_ts FROM events WHERE message LIKE '[Gloo] Rank %' ORDER BY event_id")
    assert gloo == [(None, None), (None, None)]  # records of their own, no rank, no time


def test_02_level_location_prefix_and_bare_lines_are_separate_records(workdir):
    out = out_of(workdir, "02")
    warnings = sql(
        out,
        "SELECT regexp_extract(message, '\\w+\\.py:\\d+') FROM events WHERE level = 'WARNING' ORDER BY event_id",
    )
    assert [r[0] for r in warnings] == [
        "model_config.py:1025",
        "server_args.py:1245",
        "server_args.py:1252",
        "server_args.py:1177",
    ]
    transformers = sql(
        out,
        "SELECT level FROM events WHERE message LIKE '%Transformers version 5.3.0.dev0%' ORDER BY event_id",
    )
    assert transformers == [("WARNING",), (None,)]
    http = sql(out, "SELECT level FROM events WHERE message LIKE '%HTTP Request:%'")
    assert len(http) == 11 and sum(r[0] == "INFO" for r in http) == 4
    aiter = sql(out, "SELECT tp_rank, log_ts, n_lines FROM events WHERE message LIKE '[aiter] import%'")
    assert aiter == [(None, None, 1)] * 4
    assert sql(out, "SELECT count(*) FROM events WHERE tp_rank IS NOT NULL") == [(0,)]


def test_04_ucx_epoch_time_pid_and_host(workdir):
    out = out_of(workdir, "04")
    ucx = saved.query(out, "SELECT * FROM events WHERE message LIKE '[1784621081.%' ORDER BY event_id")
    assert ucx.height == 17 and set(ucx["level"]) == {"ERROR"}
    assert set(ucx["pid"]) == {531, 532, 535, 537}
    assert set(ucx["host"]) == {"kimi-k2-7-disagg-on-sp-v1-prefill-92c6hc-07210529-x04q3qgn-pod"}
    assert ucx["log_ts"][:3].to_list() == [
        datetime(2026, 7, 21, 8, 4, 41, 896649),
        datetime(2026, 7, 21, 8, 4, 41, 896667),
        datetime(2026, 7, 21, 8, 4, 41, 896648),  # not in time order, as printed
    ]
    glog = sql(out, "SELECT level, log_ts FROM events WHERE message LIKE 'E0721 %' ORDER BY event_id")
    assert len(glog) == 4 and glog[0] == ("ERROR", datetime(2026, 7, 21, 8, 6, 26, 781179))
    worker = sql(
        out,
        "SELECT tp_rank, ep_rank, n_lines, message LIKE '%nixlNotFoundError: NIXL_ERR_NOT_FOUND' FROM events "
        "WHERE message LIKE '%Unexpected transfer worker error for room 5839938415251080346%'",
    )
    assert worker == [(1, 1, 15, True)]


def test_05_cann_torch_npu_and_hccl_watchdog_headers(workdir):
    out = out_of(workdir, "05")
    cann = sql(
        out,
        "SELECT DISTINCT level, pid, log_ts, tp_rank FROM events WHERE message LIKE '[ERROR] 2026-07-07-07:20:43 (PID:%'",
    )
    assert cann == [("ERROR", 163686, datetime(2026, 7, 7, 7, 20, 43), None)]  # RankID:-1 is no TP rank
    codes = sql(out, "SELECT pid, log_ts FROM events WHERE message LIKE 'E_9999[PID: %' ORDER BY event_id")
    assert codes == [
        (163686, datetime(2026, 7, 7, 7, 20, 43, 817000)),
        (163686, datetime(2026, 7, 7, 7, 20, 43, 937000)),
    ]
    npu = sql(out, "SELECT pid, level, log_ts FROM events WHERE message LIKE '[163686] [2026-07-07 %'")
    assert npu == [(163686, "ERROR", datetime(2026, 7, 7, 7, 20, 43))]
    hccl = sql(out, "SELECT tp_rank, level FROM events WHERE message LIKE '[rank1]:[E707 %HCCL watchdog%'")
    assert hccl == [(1, "ERROR")]
    exc = sql(out, "SELECT tp_rank, log_ts FROM events WHERE message LIKE '%Scheduler hit an exception%'")
    assert exc == [(1, datetime(2026, 7, 7, 7, 20, 43))]
    sigquit = sql(out, "SELECT tp_rank FROM events WHERE message LIKE '%SIGQUIT received%'")
    assert sigquit == [(None,)]


def test_06_caused_by_bodies_stay_and_a_glued_record_is_split(workdir):
    out = out_of(workdir, "06")
    failed = sql(
        out,
        "SELECT n_lines, message LIKE '%Caused by:%' FROM events WHERE message LIKE '%] Pyspy failed (%' ORDER BY event_id",
    )
    assert failed == [(6, True), (6, True)]
    assert sql(out, "SELECT count(*) FROM events WHERE message LIKE 'Caused by:%'") == [(0,)]
    glued = sql(
        out,
        "SELECT source_pos, log_ts, substr(message, 23, 22) FROM events WHERE source_pos = 'line 125' ORDER BY event_id",
    )
    assert glued == [
        ("line 125", datetime(2026, 7, 7, 7, 21, 6), "CUDA user-triggered co"),
        ("line 125", datetime(2026, 7, 7, 7, 21, 6), "CUDA coredump pipe not"),
    ]


def test_07_worker_prefixed_traceback_lines_join_in_the_journal(workdir):
    out = out_of(workdir, "07")
    rows = sql(
        out,
        "SELECT pid, dp_rank, n_lines, split_part(message, chr(10), -1) FROM events "
        "WHERE message LIKE '(EngineCore_DP0 %' OR message LIKE '(APIServer %' ORDER BY event_id",
    )
    assert [r[:3] for r in rows] == [(14520, 0, 9), (14452, None, 56)]
    assert rows[0][3].startswith("(EngineCore_DP0 pid=14520) ValueError: Free memory on device cuda:0")
    assert rows[1][3].startswith("(APIServer pid=14452) RuntimeError: Engine core initialization failed.")
    torch = sql(out, "SELECT tp_rank, level, pid FROM events WHERE message LIKE '[rank0]:[W222 %'")
    assert torch == [(0, "WARNING", 14520)]


def test_08_vllm_lines_behind_the_worker_prefix_keep_their_level(workdir):
    out = out_of(workdir, "08")
    levels = sql(out, "SELECT level, count(*) FROM events WHERE pid = 3285 GROUP BY level")
    assert levels == [("INFO", 10)]


def test_10_backticked_lines_are_records_of_their_own(workdir):
    out = out_of(workdir, "10")
    rows = sql(
        out, "SELECT left(message, 24), n_lines FROM events WHERE kind = 'transfer_error' ORDER BY event_id"
    )
    assert rows == [("Prefill bootstrap failed", 2), ("Decode transfer failed f", 1)]


def test_11_glog_lines_take_the_year_of_the_sglang_lines(workdir):
    out = out_of(workdir, "11")
    glog = sql(out, "SELECT level, log_ts FROM events WHERE message LIKE 'I0325 %' ORDER BY event_id")
    assert [r[0] for r in glog] == ["INFO"] * 3
    assert glog[0][1] == datetime(2026, 3, 25, 9, 32, 23, 100996)


def test_12_vllm_worker_prefix_gives_dp_tp_ep_and_pid(workdir):
    out = out_of(workdir, "12")
    rows = sql(
        out,
        "SELECT level, dp_rank, tp_rank, ep_rank, pid, log_ts FROM events "
        "WHERE message LIKE '(Worker_DP1_TP0_EP8 pid=23143)%' ORDER BY event_id",
    )
    when = datetime(2026, 3, 17, 9, 49, 3)  # the year of the glog lines beside them
    assert rows == [("ERROR", 1, 0, 8, 23143, when), ("INFO", 1, 0, 8, 23143, when)]
    glog = sql(out, "SELECT level FROM events WHERE message LIKE '_20260317 %' ORDER BY event_id")
    assert glog == [("INFO",), ("ERROR",)]


def test_13_a_backtick_before_glog_and_a_double_worker_prefix(workdir):
    out = out_of(workdir, "13")
    glog = sql(
        out, "SELECT level, log_ts FROM events WHERE regexp_matches(message, '^[IE]0328 ') ORDER BY event_id"
    )
    assert [r[0] for r in glog] == ["ERROR", "INFO", "ERROR", "INFO", "ERROR"]
    assert {r[1] for r in glog} == {None}  # no year anywhere in the file
    worker = sql(
        out, "SELECT tp_rank, dp_rank, pid, level FROM events WHERE message LIKE '(Worker pid=107182) %'"
    )
    assert worker == [(2, None, 107182, "ERROR")]


@pytest.mark.parametrize(
    "line,start",
    [
        (
            "[Gloo] Rank 1 is connected to 15 peer ranks. Expected number of connected peer ranks is : 15",
            True,
        ),
        (
            "[aiter] import [module_aiter_enum] under /sgl-workspace/aiter/aiter/jit/module_aiter_enum.so",
            True,
        ),
        ("[full] total=4974080, available=1024, evictable=4947200", False),  # a record's body (real2/13)
        ("EZ9999: Inner Error!", True),
        ("Prefill bootstrap failed for request rank=0 req.rid='894df0a757e04ae3b19e360e86055b6d'", True),
        ("Prefill batch, #new-seq: 1, #new-token: 2048, #cached-token: 0", True),
        ("WARNING server_args.py:2326: KV cache is forced as chunk cache for decode server", True),
        ("025-07-31 21:42:46  INFO http_request{method=GET}: sglang_router_rs::request: x", True),
        ("Caused by:", False),
        ('(APIServer pid=14452)   File "/usr/lib/python3.12/asyncio/runners.py", line 194, in run', False),
        ("(APIServer pid=3285) INFO 02-22 06:36:02 [launcher.py:46] Route: /score, Methods: POST", True),
    ],
)
def test_record_starts_of_batch3_and_batch4_lines(line, start):
    assert pl.select(is_record_start(pl.lit(line))).item() is start
