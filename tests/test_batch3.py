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
    http = sql(out, "SELECT level FROM events WHERE message LIKE '%HTTP Request:%'")
    assert len(http) == 11 and sum(r[0] == "INFO" for r in http) == 4


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


def test_13_a_backtick_before_glog_and_a_double_worker_prefix(workdir):
    out = out_of(workdir, "13")
    glog = sql(
        out, "SELECT level, log_ts FROM events WHERE regexp_matches(message, '^[IE]0328 ') ORDER BY event_id"
    )
    assert [r[0] for r in glog] == ["ERROR", "INFO", "ERROR", "INFO", "ERROR"]
    assert {r[1] for r in glog} == {None}  # no year anywhere in the file


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
