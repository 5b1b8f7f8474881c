"""batch7 (tests/cases/batch7, a blind batch: README written before the first run, EVAL.md the score
before the fixes): each file's body (its ``# source``/``# note`` lines off, as the evaluation read
it) through the reader, re-joiner and enrichment of an ingest (``records_from_text``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from logcorr.ingest import records_from_text

# one worker runs the module (pytest-xdist --dist loadgroup): each file's body ingested once (events,
# ingested, outs)
pytestmark = pytest.mark.xdist_group("batch7")

BATCH = Path(__file__).parent / "cases" / "batch7"


def body(prefix: str) -> str:
    path = next(BATCH.glob(f"{prefix}_*.log"))
    lines = path.read_text().splitlines()
    return "\n".join(line for line in lines if not line.startswith(("# source:", "# note:"))) + "\n"


@pytest.fixture(scope="module")
def events():
    return {p: records_from_text(body(p), f"{p}.log") for p in ("02", "09", "11", "13")}


def test_02_sglang_headers_with_a_time_of_day_only_are_batch_lines_of_tp0(events):
    ev = events["02"]
    batches = ev.filter(ev["kind"] == "batch")
    assert batches.height == 7
    assert set(batches["tp_rank"]) == {0}
    # 16:43:29 … 16:43:33 printed without a date: kept as printed, never a made-up day
    assert batches["printed_time"].to_list() == [
        "16:43:29", "16:43:29", "16:43:30", "16:43:30", "16:43:31", "16:43:32", "16:43:33"
    ]  # fmt: skip
    assert batches["log_ts"].null_count() == 7 and batches["ts"].null_count() == 7
    assert ev.filter(ev["message"] == "[16:43:29] Prompts loaded.")["printed_time"].to_list() == ["16:43:29"]
    assert set(ev["role"]) == {"engine"}  # SGLang's own lines, nothing of prefill-decode


def test_09_a_quoted_glog_line_and_empty_time_rank_tags_open_records(events):
    ev = events["09"]
    glog = ev.filter(ev["message"].str.starts_with("I1120 11:09:23.594488"))
    assert glog["level"].to_list() == ["INFO"]  # the opening quote taken off
    assert glog["printed_time"].to_list() == ["11-20 11:09:23.594488"]  # glog prints no year
    tagged = ev.filter(ev["message"].str.starts_with("[ TP"))
    assert tagged["tp_rank"].to_list() == [2, 3, 1, 0, 0, 2, 2]
    crash = ev.filter(ev["kind"] == "traceback")
    assert crash["tp_rank"].to_list() == [2] and crash["message"][0].startswith("[ TP2] Scheduler hit")
    timeout = ev.filter(ev["message"].str.starts_with("E1120 11:10:27.133715"))
    assert timeout["level"].to_list() == ["ERROR"] and timeout["n_lines"].to_list() == [1]
    assert set(ev["role"]) == {"engine"}  # HiCache with a Mooncake store is no PD cue


def test_11_a_padded_line_is_no_terminal_wrap_and_a_worker_prefix_opens_a_record(events):
    ev = events["11"]
    worker = ev.filter(ev["message"].str.starts_with("(VllmWorkerProcess pid=8441)"))
    assert worker["pid"].to_list() == [8441] and worker["n_lines"].to_list() == [1]
    # the metrics line the terminal did wrap is joined back whole, without the newline
    metrics = ev.filter(ev["message"].str.contains("Avg prompt throughput"))
    assert "Running: 0 reqs, Swapped: 0 reqs" in metrics["message"][0]


def test_13_a_paste_indented_as_a_whole_reads_as_its_records(events):
    ev = events["13"]
    info = ev.filter(ev["level"] == "INFO")
    assert info.height >= 6
    assert info["message"][0].startswith("INFO 03-21 02:38:51 worker.py:269] model weights take 14.99GiB")
    assert info["printed_time"][0] == "03-21 02:38:51"
    assert ev.filter(ev["message"].str.starts_with("INFO 03-21 02:38:51 executor_base.py:110]")).height == 2


def test_18_an_nccl_watchdog_ended_by_an_nccl_error_is_no_collective_timeout(tmp_path):
    from logcorr.ingest import ingest
    from tests.conftest import open_db

    log = tmp_path / "18.log"
    log.write_text(body("18"))
    out = tmp_path / "out"
    ingest([log], out)
    con = open_db(out)
    rows = con.sql("SELECT watchdog_kind, tp_rank, reason FROM watchdogs").fetchall()
    assert rows == [
        (
            "nccl_error",
            1,
            "NCCL error: remote process exited or there was a network error, NCCL version 2.21.5",
        )
    ]
    kinds = [k for (k,) in con.sql("SELECT kind FROM findings").fetchall()]
    assert "collective_error" in kinds and "collective_timeout" not in kinds


def test_19_a_wrapped_what_line_of_the_default_group_names_its_global_rank():
    ev = records_from_text(body("19"), "19.log")
    what = ev.filter(ev["message"].str.contains("what():", literal=True))
    assert what["kind"].to_list() == ["watchdog"] and what["tp_rank"].to_list() == [3]


def test_01_a_timeout_of_another_process_group_names_its_rank_as_printed_and_the_thrown_type(tmp_path):
    from logcorr.analysis import saved
    from logcorr.ingest import ingest

    log = tmp_path / "01.log"
    log.write_text(body("01"))
    ingest([log], tmp_path / "out")
    found = saved.query(
        tmp_path / "out", "SELECT kind, ranks, summary FROM findings WHERE kind = 'collective_timeout'"
    )
    assert found["ranks"].to_list() == [["PG 3 rank 5"]]  # a group rank: no global rank is claimed
    summary = found["summary"][0]
    assert "SeqNum 9141 ran 600020 ms, past its 600 s timeout" in summary
    assert summary.endswith("the process terminated with c10::DistBackendError")


def test_17_a_worker_record_glued_to_prose_is_found_and_a_decode_only_state_names_decode():
    ev = records_from_text(body("17"), "17.log")
    waiting = ev.filter(ev["message"].str.contains("WAITING_FOR_REMOTE_KVS"))
    assert waiting.height == 3  # the first one glued to the Chinese prose, no newline
    assert set(waiting["pid"]) == {9246} and set(waiting["dp_rank"]) == {0}
    assert set(waiting["level"]) == {"DEBUG"} and set(waiting["printed_time"]) == {"01-06 12:06:06"}
    assert set(ev["role"]) == {"decode"}  # vLLM's consumer waits for the KV its prefill sends


def test_04_20_a_cut_traceback_keeps_its_frames_and_the_type_its_message_opens_with(tmp_path):
    from logcorr.analysis import saved
    from logcorr.ingest import ingest

    rows = {}
    for p in ("04", "20"):
        log = tmp_path / f"{p}.log"
        log.write_text(body(p))
        ingest([log], tmp_path / p)
        rows[p] = saved.query(tmp_path / p, "SELECT exception, function, line FROM tracebacks").rows()
    # 04: the middle of a stack, neither its head nor its exception line pasted
    assert rows["04"] == [(None, "_wait_one_response", 888)]
    # 20: logger.exception's message names nixlUnknownError before the traceback, which is cut
    assert rows["20"] == [("nixlUnknownError", "handle_new_input", 343)]


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    """``ingested(prefix)``: a function of SQL over the tables of the file's body ingested alone (as the
    evaluation ran it), each file ingested once per module."""
    from logcorr.analysis import saved
    from logcorr.ingest import ingest

    outs = {}

    def run(prefix: str):
        if prefix not in outs:
            root = tmp_path_factory.mktemp(f"b7_{prefix}")
            log = root / f"{prefix}.log"
            log.write_text(body(prefix))
            ingest([log], root / "out")
            outs[prefix] = root / "out"
        return lambda sql: saved.query(outs[prefix], sql).rows()

    return run


def test_16_a_klog_header_prints_the_process_id_where_glog_prints_a_thread(ingested):
    q = ingested("16")
    # line 12 (kubectl's stamp, then klog's `I0808 21:06:08.476800       1 proxy.go:206]`): pid 1
    assert q("SELECT source_pos, pid, level FROM events WHERE message LIKE '%proxy.go:206]%'") == [
        ("line 12", 1, "INFO")
    ]
    # the EngineCores' own pids stay theirs
    assert q("SELECT pid FROM events WHERE message LIKE '(EngineCore%' ORDER BY event_id") == [(290,), (304,)]


def test_01_19_the_type_std_terminate_names_is_the_watchdog_rows_exception(ingested):
    # 01: `terminate called after throwing an instance of 'c10::DistBackendError'` opens the what() record
    assert ingested("01")("SELECT source_pos, watchdog_kind, nccl_seq, exception FROM watchdogs") == [
        ("line 7", "nccl_watchdog", 9141, "c10::DistBackendError")
    ]
    # 19: six processes' announcements interleaved mid-word on lines 1-7 (their quotes and names
    # scattered: 'c10::DistBackendErrorc10::DistBackendError', a lone `'`); the what() record on line 8
    # takes the one type their copies spell, from the announcement record right above it
    q = ingested("19")
    assert q("SELECT source_pos, tp_rank, nccl_op, exception FROM watchdogs") == [
        ("line 8", 3, "BROADCAST", "c10::DistBackendError")
    ]
    summary = q("SELECT summary FROM findings WHERE kind = 'collective_timeout'")[0][0]
    assert summary.endswith("; the process terminated with c10::DistBackendError")


def test_18_an_nccl_error_watchdog_row_names_the_nccl_result_and_the_remote_peer(ingested):
    q = ingested("18")
    # the `terminate called` line is not in the excerpt: no exception type is claimed
    assert q("SELECT watchdog_kind, nccl_error, peer, exception FROM watchdogs") == [
        ("nccl_error", "ncclRemoteError", "ip-172-31-36-217.eu-north-1.compute.internal:59116", None)
    ]
    summary = q("SELECT summary FROM findings WHERE kind = 'collective_error'")[0][0]
    assert "; ncclRemoteError; remote peer ip-172-31-36-217.eu-north-1.compute.internal:59116" in summary


@pytest.mark.parametrize(
    "announcements,thrown",
    [
        # one clean announcement, then a blank line: the what() record right below takes its type
        (
            "terminate called after throwing an instance of 'c10::DistBackendError'\n\n",
            "c10::DistBackendError",
        ),
        # two processes, one name each, the second announcement inside the first's quotes
        (
            "terminate called after throwing an instance of 'terminate called after throwing an instance of "
            "'c10::DistBackendError'\nc10::DistBackendError'\n",
            "c10::DistBackendError",
        ),
        # two processes naming different types: which one the what() belongs to is not printed
        (
            "terminate called after throwing an instance of 'c10::DistBackendErrorterminate called after "
            "throwing an instance of 'std::runtime_error'\n'\n",
            None,
        ),
        # another line between the announcement and the what(): not its announcement
        (
            "terminate called after throwing an instance of 'c10::DistBackendError'\nSegmentation fault\n",
            None,
        ),
    ],
)
def test_a_what_record_takes_the_type_of_the_announcements_right_above_it_only_when_they_agree(
    announcements, thrown
):
    from logcorr.parsers import sglang

    what = (
        "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 2] Process group watchdog thread terminated with "
        "exception: [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, "
        "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n"
    )
    rows = sglang.watchdogs(records_from_text(announcements + what, "x.log"))
    assert rows.select("tp_rank", "nccl_seq", "exception").rows() == [(2, 7, thrown)]


def test_05_an_exception_group_member_line_is_the_cut_tracebacks_exception_and_ends_at_its_line(ingested):
    q = ingested("05")
    # line 2 `    | fastapi.exceptions.HTTPException: 500: Prefill bootstrap failed …`; the chained traceback
    # after it is cut before its exception line
    [(exception, message, function)] = q("SELECT exception, exc_message, function FROM tracebacks")
    assert exception == "fastapi.exceptions.HTTPException" and function == "stream_response"
    assert message.startswith(
        "500: Prefill bootstrap failed for request rank=0 req.rid='f15164aa0a47471fa392d314eaf6603f'"
    )
    # line 3, the group's closing border `    +-----…`, is no part of the member's message
    assert message.endswith("Failed due to an unknown reason from another rank")
    assert q("SELECT exception, cause, reason FROM transfer_errors") == [
        ("KVTransferError", "other_rank", "Failed due to an unknown reason from another rank")
    ]


def test_08_a_print_before_a_traceback_is_its_own_record_and_no_systemd_message(ingested):
    q = ingested("08")
    rows = q(
        "SELECT source_pos, n_lines, kind FROM events WHERE source_pos IN ('line 8', 'line 9') ORDER BY event_id"
    )
    # line 8 `Starting initial single prompt test run...` (the client's print), line 9 the cut traceback
    assert rows == [("line 8", 1, "other"), ("line 9", 1, "traceback")]
    assert q("SELECT source_pos, n_frames, exception FROM tracebacks") == [("line 9", 0, None)]
    # systemd's "Starting …..." wording, but no unit named and no unit or process gave the record
    assert q("SELECT count(*) FROM lifecycle") == [(0,)]


def test_11_a_header_less_line_never_joins_a_record_across_another_process_line(ingested):
    q = ingested("11")
    rows = q(
        "SELECT source_pos, n_lines, pid, ts FROM events WHERE source_pos IN ('line 2', 'line 3', 'line 4')"
    )
    # line 2 the fragment `560.)`, line 3 worker pid 8441's line, line 4 UCX's untimed callback message
    assert rows == [("line 2", 1, None, None), ("line 3", 1, 8441, None), ("line 4", 1, None, None)]
    assert q("SELECT message FROM events WHERE source_pos = 'line 4'")[0][0].startswith(
        "error handling callback was invoked with status -3 (Input/output error)"
    )


# --- the second evaluation's causes H and C and its report rules (EVAL.md "Second evaluation") --------


@pytest.fixture(scope="module")
def outs(tmp_path_factory):
    """The OUT of each file's body ingested alone, as the evaluation did (``logcorr ingest file -o OUT``)."""
    from logcorr.ingest import ingest

    root = tmp_path_factory.mktemp("batch7")
    made = {}
    for p in ("03", "04", "10", "11", "12", "14", "15", "20"):
        log = root / f"{p}.log"
        log.write_text(body(p))
        ingest([log], root / p)
        made[p] = root / p
    return made


def sql(out, query: str) -> list[tuple]:
    from logcorr.analysis import saved

    return saved.query(out, query).rows()


def summary_of(out) -> list[str]:
    from logcorr.render import report as report_mod

    return report_mod.summary_lines(report_mod.gather(out))


def test_03_a_decode_oom_is_a_retraction_row_per_rank_and_a_finding_that_the_kv_cache_ran_out(outs):
    out = outs["03"]
    rows = sql(
        out,
        "SELECT tp_rank, strftime(ts, '%Y-%m-%d %H:%M:%S'), retracted_reqs, new_token_ratio_before,"
        " new_token_ratio_after, role FROM retractions ORDER BY event_id",
    )
    assert [r[0] for r in rows] == [0, 5, 7, 2, 6]  # not in rank order, as printed
    assert {r[1:] for r in rows} == {("2025-01-06 02:58:44", 1, 0.098, 0.9446, "engine")}
    assert sql(out, "SELECT count(*) FROM events WHERE kind = 'retraction'") == [(5,)]
    (found,) = sql(out, "SELECT kind, ranks, n, summary FROM findings WHERE kind <> 'no_data'")
    kind, ranks, n, text = found
    assert (kind, ranks, n) == ("decode_retraction", ["TP0", "TP2", "TP5", "TP6", "TP7"], 5)
    # one retraction mirrored by the TP group, not five requests
    assert "Decode ran out of KV cache memory: 1 retraction(s), 1 request(s)" in text
    assert "(new_token_ratio 0.0980 → 0.9446)" in text and "token usage 1.00" in text
    assert summary_of(out)[0].startswith("**What happened**: Decode ran out of KV cache memory")


def test_12_a_glibc_abort_line_is_a_record_of_its_own_after_the_traceback(outs):
    out = outs["12"]
    (tb,) = sql(
        out,
        "SELECT source_pos, exception, exc_message, traceback FROM tracebacks WHERE source_pos = 'line 2'",
    )
    assert tb[:3] == ("line 2", "nixl._bindings.nixlNotFoundError", "NIXL_ERR_NOT_FOUND")
    assert tb[3].endswith("nixl._bindings.nixlNotFoundError: NIXL_ERR_NOT_FOUND")  # free() is not in it
    abort = sql(
        out,
        "SELECT e.source_pos, e.n_lines, e.ts, w.watchdog_kind, w.reason FROM events e"
        " JOIN watchdogs w USING (event_id)",
    )
    assert abort == [("line 14", 1, None, "glibc_abort", "free(): invalid pointer")]  # no time of line 15


def test_14_15_a_prose_line_naming_the_decode_half_sets_the_role_of_the_records_after_it(outs):
    for p in ("14", "15"):
        roles = sql(
            outs[p], "SELECT DISTINCT role FROM events WHERE kind <> 'other' OR printed_time IS NOT NULL"
        )
        assert roles == [("decode",)], p
    # 15 names both halves: the errors were seen "on multiple decode workers", a prefill worker crashed
    assert sql(outs["15"], "SELECT role, tp_rank, ep_rank, pid FROM events WHERE source_pos = 'line 3'") == [
        ("decode", 0, 0, 865)
    ]


def test_04_a_bare_http_server_traceback_names_no_role():
    ev = records_from_text(body("04"), "04.log")
    assert set(ev["role"]) == {"unknown"}  # SGLang's frames are the same on prefill, decode and engine


def test_20_11_a_traceback_finding_names_the_exception_read_not_a_frame_line(outs):
    ((s20,),) = sql(outs["20"], "SELECT summary FROM findings WHERE kind = 'unexplained_crash'")
    assert s20.startswith(
        "Unexplained exception nixlUnknownError: NIXL_ERR_UNKNOWN in handle_new_input (engine.py:343) on prefill"
    )
    assert 'File "' not in s20
    assert sql(outs["11"], "SELECT exception, exc_message FROM tracebacks") == [
        ("nixlBackendError", "NIXL_ERR_BACKEND")
    ]
    chain = next(line for line in summary_of(outs["11"]) if line.startswith("**How it came about**"))
    assert "Unexplained exception nixlBackendError" in chain


@pytest.mark.parametrize(
    "p,printed",
    [
        ("10", "03-31 12:03:04.222625"),
        ("14", "07-30 15:51:33"),  # the NIXL transfer failure (vLLM prints no fraction), not the glog line
        ("15", "05-01 15:00:23"),
        ("20", "03-20 02:45:15"),
    ],
)
def test_a_summary_quoting_a_yearless_time_says_it_as_printed_not_no_time_read(outs, p, printed):
    (where,) = [line for line in summary_of(outs[p]) if line.startswith("**When and where**")]
    assert where.startswith(f"**When and where**: {printed} as printed (no year or zone printed), ")
    assert "no time read" not in where


def test_06_a_record_in_sglang_format_is_sglang_data_whatever_its_role(tmp_path):
    """06's rule: the summary says "no SGLang data was read" only when no record is in SGLang's line format
    nor names an SGLang rid; here a PD cue keeps the engine role off, so the role is unknown."""
    from logcorr.ingest import ingest

    log = tmp_path / "06.log"
    log.write_text(
        "Our PD setup (bootstrap port 8998) logs:\n```\n[2026-08-24 06:49:47] Cache flushed successfully!\n"
    )
    ingest([log], tmp_path / "out")
    assert sql(
        tmp_path / "out", "SELECT role, kind FROM events WHERE printed_time IS NULL AND ts IS NOT NULL"
    ) == [("unknown", "other")]
    happened = summary_of(tmp_path / "out")[0]
    assert happened.startswith("**What happened**: the data shows no failure"), happened
    assert "no record as an SGLang engine" not in happened
