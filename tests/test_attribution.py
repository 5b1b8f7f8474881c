"""One role attribution (logcorr/roles.py) for the tables and the report's coverage, and the clocks of
an input (logcorr/clocks.py) in ``sources`` and the report's span: real excerpts of batches 3 and 4
(tests/cases/batch3/README.md, batch4/README.md), each ingested alone, asserted by SQL on the tables
and on the report's sentences."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from logcorr.ingest import ingest
from logcorr.parsers.roles import OWN_NAMES, frame_role, text_role
from logcorr.render.report import report
from tests.conftest import CASES, ingested, is_shared, shared_report, sql

FILES = {
    "b3_01": "batch3/01_server_args_pd_decode_v058post1_tp16_mooncake.log",
    "b4_01": "batch4/01_kubectl_logs_sgl_router_pod_pd_k8s_discovery_truncated_year.log",
    "b4_02": "batch4/02_sgl_router_k8s_discovery_adds_prefill_decode_pods.log",
    "b4_03": "batch4/03_cri_stderr_prefill_pod_c10d_timeout_dp_tp_ep_exception_cut.log",
    "b4_05": "batch4/05_hicache_prefill_launcher_prefix_two_stamps_8h_apart.log",
    "b4_06": "batch4/06_prefill_bootstrap_abortreq_dp_ep_vs_router_8h_apart.log",
    "b4_12": "batch4/12_nccl_info_pd_prefill_pod_hostname_wrapped_commid_no_timestamps.log",
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("attribution")


def out_of(workdir: Path, key: str) -> Path:
    """The shared OUT of the case file ``key`` ingested alone (``tests.conftest.ingested``)."""
    path = CASES / FILES[key]
    if not path.exists():
        pytest.skip(f"{path} not found")
    return ingested(path)


def report_of(out: Path) -> str:
    """The report of OUT: a shared OUT's made once for the tests that read its parts."""
    return shared_report(out) if is_shared(out) else report(out)


def coverage(out: Path) -> str:
    return report_of(out).split("## What the data cannot say (coverage)")[1]


def head(out: Path) -> str:
    return report_of(out).splitlines()[2].split("Written by")[0]


# --- the text rules -------------------------------------------------------------------------------


@pytest.mark.parametrize("rule", OWN_NAMES, ids=[r.what for r in OWN_NAMES])
def test_each_own_name_rule_gives_its_samples_role(rule):
    assert text_role(pl.Series([rule.sample])).to_list() == [rule.role]


def test_a_peer_named_in_a_router_line_is_not_the_lines_role():
    """sgl-router naming the prefill pod it found (batch4/02 line 6) is the router's line (its target is
    the router's crate), not prefill's."""
    line = (
        "2025-07-30 00:09:38  INFO sglang_router_rs::service_discovery: src/service_discovery.rs:377: Healthy pod "
        "found: sglang-router-1p1d-roleset-d6xd4-prefill-6d5d66b5b8-0 (type: Some(Prefill)). Adding worker: "
        "http://10.0.8.2:30000"
    )
    assert text_role(pl.Series([line])).to_list() == ["router"]


def test_server_args_and_frames_name_the_role():
    assert text_role(
        pl.Series(
            [
                "[2026-02-27 14:33:04] server_args=ServerArgs(model_path='/m', disaggregation_mode='decode', tp_size=16)",
                "[2026-02-26 05:19:58] server_args=ServerArgs(model_path='/m', disaggregation_mode='null', tp_size=8)",
                "[2025-11-25 16:01:47] [/bin/sh@<0,0>]:     scheduler.event_loop_overlap_disagg_prefill()",
            ]
        )
    ).to_list() == ["decode", "engine", "prefill"]
    assert frame_role(
        ["run_scheduler_process scheduler.py", "event_loop_overlap_disagg_decode scheduler.py"]
    ) == ("decode")
    assert frame_role(["event_loop_normal scheduler.py"]) == "engine"  # a plain loop: no PD half


# --- roles flow through a process, a pod, an input -------------------------------------------------


def test_b3_01_server_args_decode_is_the_role_of_the_whole_log(workdir):
    out = out_of(workdir, "b3_01")
    # every record decode (22 since issue 28's record starts: bare batch lines and tags open records;
    # 26 since a Python warning or "..." after a c10 line is no longer glued to it)
    assert sql(out, "SELECT role, count(*) FROM events GROUP BY role") == [("decode", 27)]
    ranks = sql(
        out,
        "SELECT tp_rank FROM events WHERE role = 'decode' AND message LIKE '%Init torch distributed begin.%' "
        "ORDER BY tp_rank",
    )
    assert [r for (r,) in ranks] == list(range(8))
    assert sql(out, "SELECT role, disaggregation_mode, tp_size FROM config") == [("decode", "decode", 16)]
    text = coverage(out)
    assert "decode: no record read as the decode engine's" not in text
    assert "- prefill: no record read as the prefill engine's" in text  # a decode node's log alone
    assert "have no role" not in text


@pytest.mark.parametrize("key,n", [("b4_01", 9), ("b4_02", 4)])
def test_b4_01_02_router_logs_are_router(workdir, key, n):
    """Every line in the router's format is the router's; the prose, fences and curl lines pasted
    beside them stay of no role (a router prints no other line)."""
    out = out_of(workdir, key)
    lines = "regexp_matches(message, '^2025-07-3\\d \\d\\d:\\d\\d:\\d\\d  INFO ')"
    assert sql(out, f"SELECT role, count(*) FROM events WHERE {lines} GROUP BY role") == [("router", n)]
    text = coverage(out)
    assert "no record read as the router's" not in text


def test_b4_01_the_kubectl_command_names_the_router_pod(workdir):
    out = out_of(workdir, "b4_01")
    assert sql(out, "SELECT role FROM events WHERE message LIKE '%k logs -f sglang-router-1p1d-%'") == [
        ("router",)
    ]
    assert sql(out, "SELECT DISTINCT role FROM requests") == [("router",)]  # the started line too
    assert sql(out, "SELECT role, status FROM requests WHERE status IS NOT NULL") == [("router", 200)]
    assert "router:" not in coverage(out)  # it has its request lines


def test_b4_03_the_c10d_socket_names_the_prefill_pod(workdir):
    out = out_of(workdir, "b4_03")
    assert sql(out, "SELECT DISTINCT role FROM events") == [("prefill",)]
    assert sql(out, "SELECT role FROM tracebacks") == [("prefill",)]
    text = coverage(out)
    assert "prefill: no record read as the prefill engine's" not in text and "have no role" not in text


def test_b4_05_the_event_loop_frame_names_prefill(workdir):
    out = out_of(workdir, "b4_05")
    assert sql(out, "SELECT role, tp_rank FROM tracebacks") == [("prefill", None)]
    assert sql(out, "SELECT DISTINCT role FROM events") == [("prefill",)]
    assert "prefill: no record read as the prefill engine's" not in coverage(out)


def test_b4_06_two_roles_in_one_paste_give_their_role_to_no_other_record(workdir):
    out = out_of(workdir, "b4_06")
    assert sql(out, "SELECT role, dp_rank, tp_rank, ep_rank, bootstrap_room FROM transfer_errors") == [
        ("prefill", 2, 2, 2, 806626514800541158)
    ]
    assert sql(out, "SELECT role FROM requests") == [("router",)]
    unknown = sql(out, "SELECT kind, left(message, 8) FROM events WHERE role = 'unknown' ORDER BY event_id")
    # the notes, the prose lines and the markdown fences (each its own record: a note or a fence is
    # one line): no role
    assert unknown == [
        ("other", "# source"),
        ("other", "# note: "),
        ("other", "# note: "),
        ("other", "On the p"),
        ("other", "```"),
        ("other", "```"),
        ("other", "Meanwhil"),
        ("other", "```"),
    ]


def test_b4_12_the_nccl_host_names_the_prefill_pod(workdir):
    out = out_of(workdir, "b4_12")
    assert sql(out, "SELECT role, count(*), count(ts) FROM events GROUP BY role") == [("prefill", 15, 0)]
    assert sql(out, "SELECT DISTINCT pid FROM events WHERE pid IS NOT NULL") == [(206899,)]
    text = coverage(out)
    assert "prefill: no record read as the prefill engine's" not in text and "have no role" not in text
    assert head(out).rstrip(". ").endswith("`")  # no time in the data: no span


def test_a_pd_half_named_once_makes_its_batch_lines_that_half(tmp_path):
    """A batch line of a build that prints no PD key, in the log of an engine whose server_args say
    prefill, is prefill's (not an engine outside a PD pair)."""
    log = tmp_path / "prefill.log"
    log.write_text(
        "[2026-02-27 14:33:04] server_args=ServerArgs(model_path='/m', disaggregation_mode='prefill', tp_size=2)\n"
        "[2026-02-27 14:35:01 TP0] Prefill batch. #new-seq: 1, #new-token: 64, #cached-token: 0, token usage: "
        "0.00, #running-req: 0, #queue-req: 0, \n"
    )
    ingest([log], tmp_path / "out")
    assert sql(tmp_path / "out", "SELECT role, tp_rank FROM batches") == [("prefill", 0)]


def test_a_non_pd_engine_is_an_engine_and_no_pd_half_is_missing(tmp_path):
    """batch3/02's server_args (disaggregation_mode='null') and a batch line without a PD key."""
    log = tmp_path / "engine.log"
    log.write_text(
        "[2026-02-26 05:19:58] server_args=ServerArgs(model_path='/m', disaggregation_mode='null', tp_size=8)\n"
        "[2026-02-26 05:21:03 TP0] Prefill batch. #new-seq: 1, #new-token: 64, #cached-token: 0, token usage: "
        "0.00, #running-req: 0, #queue-req: 0, \n"
    )
    ingest([log], tmp_path / "out")
    assert sql(tmp_path / "out", "SELECT DISTINCT role FROM events") == [("engine",)]
    text = coverage(tmp_path / "out")
    assert (
        "no record read as the prefill engine's" not in text
        and "no record read as the decode engine's" not in text
    )
    roles = sql(tmp_path / "out", "SELECT role FROM coverage WHERE scope = 'role' ORDER BY role")
    assert roles == [("engine",), ("router",)]


# --- clocks ---------------------------------------------------------------------------------------


def test_b3_01_a_clock_without_a_zone_is_said_so(workdir):
    out = out_of(workdir, "b3_01")
    assert sql(
        out, "SELECT zoned, zoneless, zoneless_first_ts::VARCHAR, zoneless_last_ts::VARCHAR FROM sources"
    ) == [(0, 16, "2026-02-27 14:33:03+00", "2026-02-27 14:33:15.835161+00")]
    assert head(out).endswith(
        ", 2026-02-27 14:33:03 to 2026-02-27 14:33:15.835 as printed (zone not printed). "
    )
    assert "16 record(s) carry only a time printed without a zone" in coverage(out)


def test_b4_05_two_stamps_8_h_apart_are_one_clock_in_two_zones(workdir):
    out = out_of(workdir, "b4_05")
    ((offset, n, zoned),) = sql(out, "SELECT clock_offset_s, clock_offset_records, zoned FROM sources")
    assert (abs(offset), n, zoned) == (28800.0, 1, 0)
    span = head(out)
    assert "2025-11-25 16:01:47 to 2025-11-25 16:01:47 as printed (zone not printed)" in span
    assert "8 h" in span and "one clock printed in two zones" in span and " UTC to " not in span
    # the SGLang header's 08:01:47 is behind the launcher's 16:01:47 (the envelope, the other stamp)
    assert "two clocks: the header's time is 8 h behind" in coverage(out)


def test_b4_06_engine_and_router_clocks_are_not_put_in_one_order(workdir):
    out = out_of(workdir, "b4_06")
    assert sql(
        out, "SELECT zoned, zoneless, zoned_first_ts::VARCHAR, zoneless_first_ts::VARCHAR FROM sources"
    ) == [(1, 1, "2025-11-12 05:43:40+00", "2025-11-11 21:44:24+00")]
    span = head(out)
    assert span.startswith(
        f"Data: `{out}`, 2025-11-12 05:43:40 UTC to 2025-11-12 05:43:40 UTC for the 1 record(s)"
    )
    assert "2025-11-11 21:44:24 to 2025-11-11 21:44:24 as printed (zone not printed)" in span
    assert "cannot be put in one order" in span and "apart as printed" not in span  # no gap across two clocks
    assert "2025-11-11 21:44:24 UTC" not in report_of(out)
    clocks = sql(out, "SELECT clock, events FROM coverage WHERE scope = 'clock' ORDER BY clock")
    assert clocks == [("UTC", 1), ("zone not printed", 1)]


def test_b4_06_a_zoneless_cell_of_mixed_data_carries_no_utc(workdir):
    """The engine's abort (21:44:24, printed without a zone) beside the router's UTC line: its cell in
    the detail table is stated as printed, and the column says which cells are UTC."""
    text = report_of(out_of(workdir, "b4_06"))
    row = next(line for line in text.splitlines() if line.startswith("| 806626514800541158 |"))
    assert "| 21:44:24 | prefill | TP2 | transfer_aborted |" in row
    assert "| abort (UTC where marked) |" in text
