"""py-spy dumps → stacks/captures rows, wait classification, stuck ranks (parsers/pyspy.py)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logcorr.ingest import ingest
from logcorr.inputs.sniff import sniff as sniff_file
from logcorr.parsers import pyspy_rules
from logcorr.parsers.pyspy import (
    _RE,
    CAPTURES,
    LINE_FORMATS,
    LINE_KINDS,
    STACKS,
    PyspyError,
    _clean,
    classify_stack,
    parse_dump,
)
from tests.conftest import open_db

CASES = Path(__file__).parent / "cases"
SQL = Path(__file__).parents[1] / "queries" / "stuck_ranks.sql"
T0 = datetime(2026, 1, 29, 13, 12, 37, tzinfo=UTC)


def case(name: str) -> str:
    path = CASES / name
    if not path.exists():
        pytest.skip(f"real case {name} not found under {CASES}")
    return path.read_text()


def only(df: pl.DataFrame, **where) -> dict:
    rows = df.filter(*[pl.col(k).eq_missing(v) for k, v in where.items()])
    assert rows.height == 1, rows
    return rows.row(0, named=True)


def frames_of(result, capture_seq: int, thread_id) -> list[str | None]:
    cap_id = result.captures.filter(pl.col("capture_seq") == capture_seq)["capture_id"][0]
    rows = result.frames.filter((pl.col("capture_id") == cap_id) & pl.col("thread_id").eq_missing(thread_id))
    return rows.sort("depth")["function"].to_list()


def check_lines_kept(text: str, result, shared: int = 0) -> None:
    """Every line has one kind; unknown ones are in unparsed_lines/other_lines, frames in the table
    (``shared``: frame rows that are copies of a grouped form's stack, on top of the frame lines)."""
    lines = text.splitlines()
    kinds = result.line_kinds
    assert len(kinds) == len(lines)
    assert set(kinds) <= set(LINE_KINDS)
    assert result.unparsed_lines == [ln for ln, k in zip(lines, kinds, strict=True) if k == "unparsed"]
    assert result.other_lines == [ln for ln, k in zip(lines, kinds, strict=True) if k == "other"]
    for line, kind in zip(lines, kinds, strict=True):
        # a line read as blank is blank once ANSI codes and a compose/kubectl prefix are gone
        assert kind != "blank" or not _clean(line).strip(), line
    if "json" not in kinds:
        assert result.frames["function"].is_not_null().sum() == kinds.count("frame") + shared
        locals_lines = sum(len(t.split("\n")) for t in result.frames["locals"].drop_nulls())
        assert locals_lines == kinds.count("locals")
    thread_rows = result.captures.height
    assert result.frames.select("capture_id", "thread_id").unique().height <= thread_rows


# --- real cases (../shared/cases/README.md) --------------------------------------------------------


def test_pyspy_01_gloo_waitrecv_native_two_fragments():
    text = case("pyspy/01_sglang_pp_gloo_waitRecv_native.txt")
    r = parse_dump(text, source="01.txt")
    check_lines_kept(text, r)
    assert r.unparsed_lines == []
    caps = r.captures
    assert caps["capture_seq"].unique().sort().to_list() == [0, 1, 2]
    # fragment 1 starts mid-dump: its threads are still there, pid unknown; the first one starts
    # mid-thread (partial), the second is whole (_bootstrap under its libc frames)
    head = caps.filter(pl.col("capture_seq") == 0)
    assert head["partial"].to_list() == [True, False]
    assert head["pid"].to_list() == [None, None]
    assert head["thread_id"].to_list() == [None, 90522]
    assert head["n_frames"].to_list() == [10, 13]
    assert frames_of(r, 0, None)[0] == "0x7f259f401d71"
    # the watchdog line between the dumps is kept, outside the dumps
    assert r.other_lines == [
        "[2026-01-29 13:12:37 PP1 TP1] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)"
    ]
    main = only(caps, pid=88693)
    assert (main["pp_rank"], main["tp_rank"], main["dp_rank"], main["ep_rank"]) == (2, 1, None, None)
    assert main["process_name"] == "sglang::scheduler_PP2_TP1"
    assert main["is_main"] and main["thread_name"] == "MainThread" and main["thread_state"] == "idle"
    assert (main["wait_class"], main["backend"]) == ("recv", "gloo")
    assert main["wait_frame"] == "gloo::transport::tcp::UnboundBuffer::waitRecv (libtorch_cpu.so)"
    assert main["capture_ts"] == datetime(2026, 1, 29, 13, 12, 37, tzinfo=UTC)
    assert main["partial"] and main["n_frames"] == 4  # the excerpt stops at RecvWork::wait
    assert "gloo::transport::tcp::UnboundBuffer::waitRecv" in frames_of(r, 1, 88693)
    # fragment 2: Python header without Process line (pid unknown, not taken from the thread id),
    # last frame cut by the paste and kept whole
    frag2 = only(caps, capture_seq=2)
    assert frag2["partial"] and frag2["pid"] is None
    assert (frag2["wait_class"], frag2["backend"]) == ("recv", "gloo")
    assert (frag2["thread_id"], frag2["is_main"]) == (88692, True)
    last_line = text.splitlines()[-1]
    assert len(last_line) == 1000
    last = r.frames.filter(pl.col("capture_id") == frag2["capture_id"]).sort("depth").row(-1, named=True)
    assert last["function"] == last_line.strip() and last["depth"] == 4 and last["file"] is None
    assert last["is_native"] is True
    native = r.frames.filter(pl.col("file") == "libc.so.6")
    assert native.height > 0 and native["is_native"].all()


def test_pyspy_01_at_ingest_keeps_every_fragment_and_the_long_frame(tmp_path):
    """Issue 28: ingested, the second fragment (after a `# ---` note line) is a dump of its own:
    thread 88692 keeps its 5 frames, the last the 1,000-character pybind11 frame; fragment 1's
    threads and pid 88693's capture stay as the parser gives them."""
    path = CASES / "pyspy/01_sglang_pp_gloo_waitRecv_native.txt"
    ingest([path], tmp_path / "out")
    db = open_db(tmp_path / "out")
    caps = db.sql(
        "SELECT thread_id, pid, n_frames, partial FROM captures"
        " ORDER BY CAST(regexp_extract(source_pos, '\\d+') AS INT), capture_seq"
    ).fetchall()
    assert caps == [
        (None, None, 10, True),
        (90522, None, 13, False),
        (88693, 88693, 4, True),
        (88692, None, 5, True),
    ]
    frames = db.sql("SELECT function, file FROM stacks WHERE thread_id = 88692 ORDER BY depth").fetchall()
    long_line = path.read_text().splitlines()[-1]
    assert len(frames) == 5 and frames[-1] == (long_line.strip(), None) and len(long_line) == 1000
    assert frames[2] == ("gloo::transport::tcp::UnboundBuffer::waitRecv", "libtorch_cpu.so")


FAULTHANDLER = """\
Fatal Python error: Aborted

Thread 0x00007f775a7fc640 (most recent call first):
  File "/usr/lib/python3.10/threading.py", line 324 in wait
  File "/usr/lib/python3.10/threading.py", line 973 in _bootstrap

Current thread 0x00007f8edafe1000 (most recent call first):
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2741 in run_scheduler_process
  File "<string>", line 1 in <module>

Extension modules: numpy._core._multiarray_umath, zmq.backend.cython._zmq (total: 2)
"""


def test_faulthandler_dump_threads_and_frames():
    """CPython faulthandler: a hex thread id, no name, frames innermost first (py-spy's order); the
    "Current thread" (the one that crashed) has state current; the fatal error line and the
    extension list are not frames."""
    r = parse_dump(FAULTHANDLER)
    check_lines_kept(FAULTHANDLER, r)
    assert r.captures.select("thread_id", "thread_name", "thread_state", "n_frames", "partial").rows() == [
        (0x00007F775A7FC640, None, None, 2, False),
        (0x00007F8EDAFE1000, None, "current", 2, False),
    ]
    assert r.captures["innermost"].to_list() == [
        "wait (/usr/lib/python3.10/threading.py:324)",
        "run_scheduler_process (/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py:2741)",
    ]
    assert r.line_kinds[0] == "other" and r.line_kinds[-1] != "frame"
    assert not r.frames["is_native"].any()


def test_pyspy_02_shell_prompt_and_header():
    text = case("pyspy/02_pytorch_accelerate_deepspeed_backward.txt")
    r = parse_dump(text)
    check_lines_kept(text, r)
    assert r.line_kinds[2] == "decoration"  # the pgrep | xargs py-spy dump command line
    assert r.other_lines == [] and r.unparsed_lines == []
    c = only(r.captures)
    assert c["pid"] == 39 and c["python_version"] == "3.10.12"
    assert c["partial"]  # the excerpt stops at backward (accelerate/utils/deepspeed.py:166)
    assert c["process_name"].startswith("/usr/bin/python3.10 -u src/app/scripts/fine_tune_accelerate.py")
    assert c["thread_name"] == "MainThread" and c["n_frames"] == 8
    assert c["innermost"] == "backward (torch/autograd/__init__.py:266)"
    assert not r.frames["is_native"].any()


def test_pyspy_03_unnamed_threads_without_frames_and_all_gather():
    text = case("pyspy/03_accelerate_all_gather_unnamed_threads.txt")
    r = parse_dump(text)
    check_lines_kept(text, r)
    caps = r.captures
    assert caps["thread_id"].to_list() == [42, 928, 4076, 4077, 4078, 4079]
    # starts mid-dump (no Process line): pid unknown, never the main thread's id; stacks whole down
    # to <module> / _bootstrap, empty ones whole, the last one cut by the excerpt
    assert caps["pid"].to_list() == [None] * 6 and only(caps, thread_id=42)["is_main"]
    assert caps["partial"].to_list() == [False, False, False, False, False, True]
    # unnamed frameless headers in a row before an active one are not the grouped form
    for tid in (4076, 4077, 4078):
        c = only(caps, thread_id=tid)
        assert (c["thread_name"], c["thread_state"], c["n_frames"], c["wait_class"]) == (
            None,
            "idle",
            0,
            None,
        )
        f = only(r.frames, thread_id=tid)
        assert f["depth"] == 0 and f["function"] is None and f["is_native"] is None
    busy = only(caps, thread_id=4079)
    assert busy["thread_state"] == "active" and busy["thread_name"] is None
    assert busy["wait_class"] == "all_gather"
    assert busy["innermost"] == "all_gather_into_tensor (torch/distributed/distributed_c10d.py:2709)"


def test_pyspy_05_python314_thread_without_name():
    text = case("pyspy/05_vllm_py314_thread_without_name.txt")
    r = parse_dump(text)
    check_lines_kept(text, r)
    c = only(r.captures)
    assert (c["pid"], c["process_name"], c["python_version"]) == (2403, "VLLM::EngineCore", "3.14.7")
    assert (c["thread_id"], c["thread_name"], c["thread_state"], c["is_main"]) == (2403, None, "active", True)
    assert c["innermost"] == "top_k_top_p_sampling_from_logits (flashinfer/sampling.py:1548)"
    assert c["n_frames"] == 21 and c["wait_class"] == "running"


def test_pyspy_06_json_py_spy_03_with_locals():
    text = case("pyspy/06_pyspy_json_locals.txt")
    r = parse_dump(text)
    check_lines_kept(text, r)
    assert r.format == "json" and r.unparsed_lines == [] and r.line_kinds[2] == "decoration"
    c = only(r.captures)
    assert (c["pid"], c["thread_id"], c["thread_name"], c["thread_state"]) == (338370, 338370, None, "idle")
    assert c["is_main"] and not c["partial"]
    f = only(r.frames)
    assert (f["function"], f["file"], f["line"], f["is_native"], f["locals"]) == (
        "<module>",
        "yolo.py",
        8,
        False,
        None,
    )


def test_sglang_06_docker_compose_prefix():
    text = case("sglang/06_pyspy_dump_docker_compose_prefix.log")
    r = parse_dump(text, host="node-a")
    check_lines_kept(text, r)
    c = only(r.captures, pid=309)
    assert (c["process_name"], c["tp_rank"], c["dp_rank"]) == ("sglang::scheduler_TP6", 6, None)
    assert (c["thread_name"], c["thread_state"], c["is_main"]) == ("MainThread", "active", True)
    assert c["innermost"] == "_apply (penaltylib/min_new_tokens.py:78)"
    assert c["n_frames"] == 7  # the blank line inside the thread does not end it
    assert c["capture_ts"] == datetime(2025, 10, 29, 11, 25, 58, tzinfo=UTC) and c["host"] == "node-a"
    assert r.other_lines == [
        "sglang-1  | [2025-10-29 11:25:58 TP3] Watchdog timeout (self.watchdog_timeout=300)"
    ]
    assert not any(f.startswith("sglang-1") for f in r.frames["function"].drop_nulls())
    assert r.unparsed_lines == []


def test_sglang_07_bare_dump_pp_disagg_send():
    text = case("sglang/07_pyspy_dump_pp_disagg_prefill_hang.log")
    r = parse_dump(text)
    check_lines_kept(text, r)
    c = only(r.captures)
    assert c["pid"] == 3438121
    assert (c["dp_rank"], c["tp_rank"], c["ep_rank"], c["pp_rank"]) == (1, 1, 1, 0)
    assert c["n_frames"] == 7 and c["innermost"] == "send (torch/distributed/distributed_c10d.py:2487)"
    assert c["wait_class"] == "send" and c["event_loop"] == "event_loop_pp_disagg_prefill"


def test_sglang_09_native_dump_in_log_line_without_ranks():
    text = case("sglang/09_pyspy_native_crashdump_main_process.log")
    r = parse_dump(text)
    check_lines_kept(text, r)
    caps = r.captures
    assert caps.height == 2 and caps["thread_name"].to_list() == ["MainThread", "tqdm_monitor"]
    assert caps["pid"].unique().to_list() == [187] and caps["tp_rank"].unique().to_list() == [6]
    assert caps["capture_ts"][0] == datetime(2026, 7, 14, 8, 34, 44, tzinfo=UTC)
    f = r.frames
    addr = f.filter(pl.col("function").str.starts_with("0x"))
    assert addr.height == 6 and addr["is_native"].all() and set(addr["file"]) == {"libc.so.6"}
    assert only(f, function="PyThread_acquire_lock_timed", thread_id=187)["is_native"]
    assert only(f, function="_shutdown")["is_native"] is False
    assert only(caps, thread_id=187)["wait_class"] == "queue_wait"


REAL2_10 = "real2/10_pyspy_megatron_grouped_threads_allreduce_recv.txt"
ALL_REDUCE_1316 = "all_reduce (torch/distributed/distributed_c10d.py:1316)"
RECV_1002 = "recv (torch/distributed/distributed_c10d.py:1002)"


def check_real2_10(captures: pl.DataFrame, stacks: pl.DataFrame) -> None:
    caps = captures.sort("thread_id")
    assert caps["thread_id"].to_list() == list(range(686181, 686189))
    assert caps["n_frames"].to_list() == [10] * 4 + [12] * 4
    assert caps["wait_class"].to_list() == ["all_reduce"] * 4 + ["recv"] * 4
    assert caps["innermost"].to_list() == [ALL_REDUCE_1316] * 4 + [RECV_1002] * 4
    assert caps["pid"].to_list() == [None] * 8  # no Process line: never a thread id
    assert caps["partial"].to_list() == [False] * 8  # every stack reaches <module> (pretrain_gpt.py:249)
    assert caps["thread_name"].unique().to_list() == ["MainThread"] and caps["is_main"].all()
    assert caps["thread_state"].unique().to_list() == ["active"]
    assert caps["fingerprint"].n_unique() == 2 and caps["capture_id"].n_unique() == 8  # 8 processes
    per_thread = stacks.group_by("thread_id").agg(pl.len(), pl.col("function").sort_by("depth"))
    per_thread = per_thread.sort("thread_id")
    assert per_thread["len"].to_list() == [10] * 4 + [12] * 4
    functions = per_thread["function"].to_list()
    for stack in functions[:4]:
        assert stack[:2] == ["all_reduce", "_reduce_outputs"] and stack[-1] == "<module>"
    for stack in functions[4:]:
        assert stack[:3] == ["recv", "recv", "_exec_recv_activations"] and stack[-1] == "<module>"
    assert not stacks["partial"].any() and stacks["pid"].null_count() == stacks.height


def test_real2_10_grouped_threads_share_their_stack():
    text = case(REAL2_10)
    r = parse_dump(text)
    check_lines_kept(text, r, shared=3 * 10 + 3 * 12)
    assert r.unparsed_lines == [] and r.other_lines == []
    assert r.line_kinds.count("thread") == 8 and r.line_kinds.count("frame") == 22
    check_real2_10(r.captures, r.frames)


def test_real2_10_ingested_end_to_end(tmp_path):
    path = CASES / REAL2_10
    if not path.exists():
        pytest.skip(f"real case {REAL2_10} not found under {CASES}")
    out = tmp_path / "out"
    ingest([path], out)
    captures = pl.read_parquet(out / "captures" / "**" / "*.parquet")
    stacks = pl.read_parquet(out / "stacks" / "**" / "*.parquet")
    assert captures.height == 8 and stacks.height == 4 * 10 + 4 * 12
    check_real2_10(captures, stacks)


# --- formats -----------------------------------------------------------------------------------------


def test_every_line_format_sample_matches():
    for fmt in LINE_FORMATS:
        assert re.match(fmt.pattern, fmt.sample), fmt.name


def test_every_rule_sample_is_recognised_by_its_rule():
    for rule in pyspy_rules.WAIT_RULES:
        assert rule.level in pyspy_rules.LEVELS and rule.wait_class in pyspy_rules.WAIT_CLASSES
        assert pyspy_rules.match_wait(*rule.sample) is rule, rule.name
    for rule in pyspy_rules.BACKEND_RULES:
        assert pyspy_rules.match_backend(*rule.sample) == rule.backend, rule.name
    for rule in pyspy_rules.ENTRY_RULES:
        assert pyspy_rules.match_entry(*rule.sample, native=rule.native) is rule, rule.name
    assert pyspy_rules.match_event_loop(pyspy_rules.EVENT_LOOP_SAMPLE)
    assert classify_stack([("select", "selectors.py", 415)]).wait_class == "running"


SUBPROCESSES = """\
Process 100: python3 -m sglang.launch_server --model-path /m --disaggregation-mode decode
  --served-model-name "two
line name"
Python v3.12.3 (/usr/bin/python3.12)

Thread 100 (idle): "MainThread"
    wait (threading.py:359)
    main (sglang/launch_server.py:14)

-------------------------------------------------------------------------------
Process 101: sglang::scheduler_TP1
Python v3.12.3 (/usr/bin/python3.12)
Parent Process 100: python3 -m sglang.launch_server --model-path /m --disaggregation-mode decode

Thread 101 (active+gil): "MainThread"
    forward (sglang/srt/models/llama.py:300)
        Arguments:
            self: <LlamaModel at 0x7f00>
            input_ids: tensor([1, 2])
        Locals:
            hidden: Linear (in=4)
    run_batch (sglang/srt/managers/scheduler.py:1800)
Thread 0x7FFF8A3C6340 (gil)
    _bootstrap (threading.py:1030)
"""


def test_subprocesses_parent_multiline_cmdline_locals_hex_thread():
    r = parse_dump(SUBPROCESSES, role_hint="prefill")
    check_lines_kept(SUBPROCESSES, r)
    assert r.unparsed_lines == [] and r.other_lines == []
    assert r.line_kinds[1:3] == ["cmdline", "cmdline"]
    parent = only(r.captures, pid=100)
    assert parent["process_name"].endswith('"two\nline name"') and parent["role"] == "decode"
    child = r.captures.filter(pl.col("pid") == 101)
    assert child["role"].unique().to_list() == ["decode"]  # from the Parent Process command line
    assert child["tp_rank"].unique().to_list() == [1]
    assert child["thread_state"].to_list() == ["active+gil", "active+gil"]
    assert child["thread_id"].to_list() == [101, 0x7FFF8A3C6340]
    fwd = only(r.frames, function="forward")
    assert fwd["locals"] == (
        "Arguments:\nself: <LlamaModel at 0x7f00>\ninput_ids: tensor([1, 2])\nLocals:\nhidden: Linear (in=4)"
    )
    assert only(r.frames, function="run_batch")["depth"] == 1  # locals are not frames


OLD_AND_DECORATED = """\
**Rank 0**
```
$ py-spy dump --pid 7
\x1b[1m\x1b[33mProcess 7\x1b[0m: python worker.py
Python v3.6.8 (/usr/bin/python3.6)

Thread 7 (active)
\t step (worker.py:12)
\t <module> (worker.py:30)
        Arguments::
            n: 3
```
<details><summary>rank 1</summary>

[pod/sglang-1/engine] Process 8: python worker.py
[pod/sglang-1/engine] Python v3.6.8 (/usr/bin/python3.6)
[pod/sglang-1/engine] Thread 8 (idle)
[pod/sglang-1/engine]     get (queue.py:170)
</details>
"""


def test_markdown_ansi_prompts_tab_frames_and_prefixes():
    r = parse_dump(OLD_AND_DECORATED)
    check_lines_kept(OLD_AND_DECORATED, r)
    assert r.unparsed_lines == [] and r.other_lines == []
    assert r.captures["pid"].to_list() == [7, 8]
    assert frames_of(r, 0, 7) == ["step", "<module>"]
    assert only(r.frames, function="<module>")["locals"] == "Arguments:\nn: 3"
    assert only(r.captures, pid=8)["wait_class"] == "queue_wait"


def test_unknown_lines_inside_a_dump_are_kept_and_counted():
    text = (
        'Process 5: python a.py\nPython v3.11.2 (/usr/bin/python3)\n\nThread 5 (idle): "MainThread"\n'
        "    foo (a.py:1)\n!! something py-spy never prints\n    bar (a.py:2)\n\nand then some prose\n"
    )
    r = parse_dump(text)
    check_lines_kept(text, r)
    assert r.unparsed_lines == ["!! something py-spy never prints"]
    assert r.other_lines == ["and then some prose"]
    assert frames_of(r, 0, 5) == ["foo", "bar"]


def test_marker_hints_and_capture_ts_offsets():
    text = (
        "[2026-01-29 13:12:37 DP1 TP3] Pyspy dump for PID 9 (py-spy dump --native --pid 9):\n"
        "Process 9: sglang::scheduler\nPython v3.12.3 (/usr/bin/python3.12)\n\n"
        'Thread 9 (idle): "MainThread"\n    barrier (torch/distributed/distributed_c10d.py:4000)\n\n'
        "[2026-01-29 13:12:42.250 DP1 TP3] Pyspy dump for PID 9:\n"
        'Thread 9 (idle): "MainThread"\n    barrier (torch/distributed/distributed_c10d.py:4000)\n'
    )
    r = parse_dump(text, capture_ts=datetime(2026, 1, 29, 14, 0, 0, tzinfo=UTC), ranks_hint={"tp_rank": 0})
    check_lines_kept(text, r)
    caps = r.captures
    assert caps["tp_rank"].to_list() == [3, 3] and caps["dp_rank"].to_list() == [1, 1]  # marker beats hint
    assert caps["capture_ts"].to_list() == [
        datetime(2026, 1, 29, 14, 0, 0, tzinfo=UTC),
        datetime(2026, 1, 29, 14, 0, 5, 250000, tzinfo=UTC),
    ]
    assert caps["pid"].to_list() == [9, 9] and caps["wait_class"].to_list() == ["barrier", "barrier"]
    bare = parse_dump(
        'Thread 4 (idle): "MainThread"\n    x (a.py:1)\n', ranks_hint={"tp_rank": 2}, pid_hint=77
    )
    assert only(bare.captures)["tp_rank"] == 2 and only(bare.captures)["pid"] == 77


TRUNCATED_JSON = """\
[
  {
    "pid": 21,
    "thread_id": 139900,
    "thread_name": "MainThread",
    "os_thread_id": 21,
    "active": true,
    "owns_gil": true,
    "frames": [
      {"name": "all_reduce", "filename": "/x/torch/distributed/distributed_c10d.py",
       "module": null, "short_filename": "torch/distributed/distributed_c10d.py", "line": 2050,
       "locals": [{"name": "tensor", "addr": 1, "arg": true, "repr": "tensor([1.])"}],
       "is_entry": true, "is_shim_entry": false},
      {"name": "ncclAllReduce", "filename": "libnccl.so.2", "module": "libnccl.so.2", "short_filename": null, "line": 0,
       "locals": null},
      {
        "name": "forw
"""


def test_json_cut_short_is_partial_and_keeps_whole_frames():
    r = parse_dump(TRUNCATED_JSON)
    check_lines_kept(TRUNCATED_JSON, r)
    c = only(r.captures)
    assert (c["pid"], c["thread_id"], c["thread_state"], c["partial"]) == (21, 21, "active+gil", True)
    assert (c["wait_class"], c["backend"]) == ("all_reduce", "nccl")
    f = r.frames.sort("depth")
    assert f["function"].to_list() == ["all_reduce", "ncclAllReduce"]
    assert f["is_native"].to_list() == [False, True] and f["line"].to_list() == [2050, None]
    assert f["locals"][0] == "Arguments:\ntensor: tensor([1.])"
    assert r.unparsed_lines == ['        "name": "forw']  # the cut object's text


def test_capture_ids_are_stable_and_provenance_is_kept():
    text = case("sglang/09_pyspy_native_crashdump_main_process.log")
    a = parse_dump(text, source="a.log", source_pos="120")
    b = parse_dump(text, source="a.log", source_pos="120")
    c = parse_dump(text, source="a.log", source_pos="121")
    assert a.frames.equals(b.frames) and a.captures.equals(b.captures)
    assert a.captures["capture_id"][0] != c.captures["capture_id"][0]
    assert set(a.frames["source_pos"]) == {"120"} and set(a.frames["source"]) == {"a.log"}


def test_schemas_and_empty_input():
    r = parse_dump("")
    assert dict(r.frames.schema) == STACKS and dict(r.captures.schema) == CAPTURES
    assert r.format == "none" and r.line_kinds == []


def test_bad_arguments_raise_named_errors():
    with pytest.raises(PyspyError, match="ISO 8601"):
        parse_dump("", capture_ts="yesterday")
    with pytest.raises(PyspyError, match="not ranks"):
        parse_dump("", ranks_hint={"tp": 1})


def test_sniff(tmp_path):
    def sniff(text: str) -> str:
        path = tmp_path / "f.txt"
        path.write_text(text)
        return sniff_file(path)

    assert sniff(case("sglang/07_pyspy_dump_pp_disagg_prefill_hang.log")) == "pyspy"
    assert sniff(case("pyspy/06_pyspy_json_locals.txt")) == "pyspy-json"
    assert sniff(case("pyspy/03_accelerate_all_gather_unnamed_threads.txt")) == "pyspy"
    assert sniff("[2025-10-29 11:25:58 TP3] Watchdog timeout (self.watchdog_timeout=300)\n") == "text"


# --- grouped form, partial stacks, idle threads, pid (issue 15 item 6) --------------------------------

GROUPED = """\
Thread 501 (active): "MainThread"
Thread 502 (active): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:1316)
    train (megatron/training.py:904)
    <module> (pretrain_gpt.py:249)
Thread 503 (idle): "MainThread"
Thread 504 (idle): "MainThread"
Thread 505 (idle): "MainThread"
    recv (torch/distributed/distributed_c10d.py:1002)
    _exec_recv_activations (deepspeed/runtime/pipe/engine.py:1073)
"""


def test_grouped_form_gives_the_shared_stack_to_every_thread_of_the_group():
    r = parse_dump(GROUPED)
    check_lines_kept(GROUPED, r, shared=3 + 2 * 2)
    caps = r.captures
    assert caps["thread_id"].to_list() == [501, 502, 503, 504, 505]
    assert caps["n_frames"].to_list() == [3, 3, 2, 2, 2]
    assert caps["wait_class"].to_list() == ["all_reduce"] * 2 + ["recv"] * 3
    assert caps["innermost"].to_list()[2:] == ["recv (torch/distributed/distributed_c10d.py:1002)"] * 3
    # the second group's stack is cut (no entry frame at its base): every copy says so
    assert caps["partial"].to_list() == [False, False, True, True, True]
    assert caps["capture_id"].n_unique() == 5 and caps["pid"].null_count() == 5
    assert frames_of(r, 0, 501) == ["all_reduce", "train", "<module>"]
    assert only(r.frames, thread_id=504, depth=1)["function"] == "_exec_recv_activations"


def test_frameless_headers_that_are_not_a_group_keep_an_empty_stack():
    # unnamed (threads running no Python code, as in pyspy/03), or named otherwise than the stack's
    text = (
        "Process 9: python train.py\nPython v3.11.4 (/usr/bin/python3)\n\n"
        "Thread 4076 (idle)\nThread 4077 (idle)\nThread 4079 (idle)\n    get (queue.py:171)\n"
        "    run (worker.py:3)\n    _bootstrap (threading.py:1002)\n"
        'Thread 9 (idle): "MainThread"\nThread 12 (idle): "Thread-1"\n    wait (threading.py:320)\n'
    )
    r = parse_dump(text)
    check_lines_kept(text, r)
    caps = r.captures
    assert caps["thread_id"].to_list() == [4076, 4077, 4079, 9, 12]
    assert caps["n_frames"].to_list() == [0, 0, 3, 0, 1]
    assert caps["wait_class"].to_list() == [None, None, "queue_wait", None, "queue_wait"]
    assert caps["pid"].unique().to_list() == [9] and caps["capture_id"].n_unique() == 1


def test_partial_is_a_stack_without_an_entry_frame_at_its_base():
    def partial(stack: str) -> bool:
        head = 'Process 7: python x.py\nPython v3.12.3 (/usr/bin/python3)\n\nThread 7 (idle): "MainThread"\n'
        r = parse_dump(head + stack)
        return only(r.captures)["partial"]

    assert not partial("    step (worker.py:12)\n    <module> (worker.py:30)\n")
    assert not partial("    <module> (<string>:1)\n")  # a multiprocessing spawn child, python -c
    assert not partial(
        "    wait (threading.py:359)\n    run (threading.py:1010)\n    _bootstrap_inner (threading.py:1073)\n"
        "    _bootstrap (threading.py:1030)\n    0x7f259f405aa4 (libc.so.6)\n    0x7f259f492c6c (libc.so.6)\n"
    )
    assert not partial(
        "    main (pkg/cli.py:5)\n    _run_code (<frozen runpy>:88)\n    _run_module_as_main (<frozen runpy>:198)\n"
    )
    assert not partial("    epoll_wait (libc.so.6)\n    start_thread (libc.so.6)\n    clone3 (libc.so.6)\n")
    # cut: a base that is no entry (excerpts of sglang/07, pyspy/02), natives only down to an address
    assert partial(
        "    send (torch/distributed/distributed_c10d.py:2487)\n    run_scheduler_process (scheduler.py:2618)\n"
    )
    assert partial("    backward (torch/_tensor.py:522)\n    backward (accelerate/utils/deepspeed.py:166)\n")
    assert partial("    run (subprocess.py:550)\n    pyspy_dump_schedulers (utils/common.py:2317)\n")
    assert partial("    pthread_cond_timedwait (libc.so.6)\n    0x7fa2d1487d71 (libc.so.6)\n")
    assert not partial("")  # a thread running no Python code: nothing is cut


def test_an_elision_inside_a_stack_makes_it_partial():
    text = (
        'Thread 1 (active): "MainThread"\n    all_reduce (torch/distributed/distributed_c10d.py:1316)\n'
        "    ...\n    <module> (pretrain_gpt.py:249)\n"
        'Thread 2 (idle): "Thread-1"\n    wait (threading.py:320)\n    _bootstrap (threading.py:1002)\n'
        "    [... 3 threads omitted ...]\n"
        'Thread 3 (idle): "Thread-2"\n    …\n'
        'Thread 4 (idle): "Thread-3"\n    get (queue.py:171)\n    <snip>\n    _bootstrap (threading.py:1002)\n'
    )
    r = parse_dump(text)
    check_lines_kept(text, r)
    assert r.line_kinds.count("elision") == 4 and r.unparsed_lines == []
    caps = r.captures
    assert caps["thread_id"].to_list() == [1, 2, 3, 4]
    # frames on both sides of the cut; after a whole stack it cuts threads, not the stack
    assert caps["partial"].to_list() == [True, False, True, True]
    assert caps["n_frames"].to_list() == [2, 2, 0, 2]
    assert frames_of(r, 0, 1) == ["all_reduce", "<module>"]
    for line in ("...", "    …", "    ... (12 more frames)", "  (...)", "[snip]", "<truncated>"):
        assert re.match(_RE["elision"], line), line
    for line in ("    <module> (x.py:1)", "    <lambda> (x.py:2)", "    [pod/x] y (z.py:3)"):
        assert not re.match(_RE["elision"], line), line


def test_a_thread_py_spy_calls_idle_is_never_running():
    text = (
        "Process 5: python serve.py\nPython v3.12.3 (/usr/bin/python3)\n\n"
        'Thread 5 (idle): "MainThread"\n    select (selectors.py:415)\n    <module> (serve.py:9)\n'
        'Thread 6 (active): "Thread-1"\n    select (selectors.py:415)\n    _bootstrap (threading.py:1030)\n'
        'Thread 7 (idle): "Thread-2"\n    all_reduce (torch/distributed/distributed_c10d.py:1316)\n'
    )
    r = parse_dump(text)
    assert r.captures["wait_class"].to_list() == ["idle", "running", "all_reduce"]
    assert classify_stack([("select", "selectors.py", 415)], "idle").wait_class == "idle"
    assert classify_stack([("select", "selectors.py", 415)], "active+gil").wait_class == "running"
    assert classify_stack([], "idle").wait_class is None
    js = (
        '[{"pid": 3, "thread_id": 3, "active": false, "owns_gil": false,'
        ' "frames": [{"name": "poll", "filename": "x.py", "line": 2}]}]'
    )
    c = only(parse_dump(js).captures)
    assert (c["thread_state"], c["wait_class"]) == ("idle", "idle")


def test_without_a_process_line_the_pid_is_null():
    bare = 'Thread 4 (idle): "MainThread"\n    x (a.py:1)\n    <module> (a.py:3)\n'
    c = only(parse_dump(bare).captures)
    assert (c["pid"], c["thread_id"], c["is_main"], c["partial"]) == (None, 4, True, False)
    c = only(parse_dump("Python v3.12.3 (/usr/bin/python3)\n\n" + bare).captures)
    assert c["pid"] is None
    assert only(parse_dump("Process 4: python a.py\n" + bare).captures)["pid"] == 4
    # a second main thread is another process: the hint names the first one only
    two = bare + bare.replace("Thread 4", "Thread 5")
    caps = parse_dump(two, pid_hint=77).captures
    assert caps["pid"].to_list() == [77, None] and caps["capture_id"].n_unique() == 2


# --- synthetic SGLang TP desync --------------------------------------------------------------------

GLOO_BROADCAST = """\
    0x7f0000000d71 (libc.so.6)
    pthread_cond_timedwait (libc.so.6)
    gloo::transport::tcp::UnboundBuffer::waitRecv (libtorch_cpu.so)
    gloo::broadcast (libtorch_cpu.so)
    c10d::ProcessGroupGloo::AsyncBroadcastWork::run (libtorch_cpu.so)
    broadcast (torch/distributed/distributed_c10d.py:2728)
    wrapper (torch/distributed/c10d_logger.py:81)
    broadcast_pyobj (sglang/srt/utils/common.py:1143)
    recv_requests (sglang/srt/managers/scheduler.py:1190)
    event_loop_overlap_disagg_decode (sglang/srt/disaggregation/decode.py:780)
    decorate_context (torch/utils/_contextlib.py:120)
    run_scheduler_process (sglang/srt/managers/scheduler.py:2900)
"""
NCCL_ALL_REDUCE = """\
    synchronize (torch/cuda/__init__.py:985)
    all_reduce (sglang/srt/distributed/device_communicators/pynccl.py:140)
    _all_reduce_in_place (sglang/srt/distributed/parallel_state.py:612)
    all_reduce (sglang/srt/distributed/parallel_state.py:546)
    tensor_model_parallel_all_reduce (sglang/srt/distributed/communication_op.py:13)
    forward (sglang/srt/layers/linear.py:1290)
    forward_decode (sglang/srt/model_executor/model_runner.py:1700)
    run_batch (sglang/srt/managers/scheduler.py:1800)
    event_loop_overlap_disagg_decode (sglang/srt/disaggregation/decode.py:790)
    run_scheduler_process (sglang/srt/managers/scheduler.py:2900)
"""


def sglang_dump(tp: int, pid: int, stack: str, when: str = "2026-01-29 13:12:37") -> str:
    return (
        f"[{when} TP{tp}] Pyspy dump for PID {pid} (py-spy dump --native --pid {pid}):\n"
        f"Process {pid}: sglang::scheduler_TP{tp}\nPython v3.12.3 (/usr/bin/python3.12)\n\n"
        f'Thread {pid} (idle): "MainThread"\n{stack}'
        f'Thread {pid + 50} (idle): "Thread-2 (_watchdog_thread)"\n    wait (threading.py:359)\n\n'
    )


def engine(role: str, stacks: list[str], base_pid: int, ts: datetime, pos: str) -> pl.DataFrame:
    text = "".join(sglang_dump(tp, base_pid + tp, s) for tp, s in enumerate(stacks))
    r = parse_dump(
        text, source=f"{role}.journal", source_pos=pos, capture_ts=ts, host="gpu-1", role_hint=role
    )
    return r.captures


def incident(second_decode_dump: bool = True) -> pl.DataFrame:
    prefill = engine("prefill", [NCCL_ALL_REDUCE] * 4, 2000, T0, "10")
    decode = [GLOO_BROADCAST, GLOO_BROADCAST, NCCL_ALL_REDUCE, NCCL_ALL_REDUCE]
    parts = [prefill, engine("decode", decode, 3000, T0, "20")]
    if second_decode_dump:
        parts.append(engine("decode", decode, 3000, T0 + timedelta(seconds=5), "30"))
    return pl.concat(parts)


def test_tp_desync_divergent_decode_lockstep_prefill():
    out = stuck_ranks(incident())
    assert out.height == 8
    assert out["rank_label"].to_list() == ["TP0", "TP1", "TP2", "TP3"] * 2
    decode = out.filter(pl.col("role") == "decode")
    assert decode["wait_class"].to_list() == ["broadcast", "broadcast", "all_reduce", "all_reduce"]
    assert decode["backend"].to_list() == ["gloo", "gloo", "nccl", "nccl"]
    assert set(decode["verdict"]) == {"divergent"}
    assert set(decode["groups"]) == {"broadcast(gloo): TP0,TP1 | all_reduce(nccl): TP2,TP3"}
    assert set(decode["event_loop"]) == {"event_loop_overlap_disagg_decode"}
    assert decode["n_captures"].to_list() == [2] * 4
    assert decode["no_progress"].all() and decode["progress_gap_s"].to_list() == [5.0] * 4
    assert decode["wait_frame"][0] == "gloo::broadcast (libtorch_cpu.so)"
    prefill = out.filter(pl.col("role") == "prefill")
    assert set(prefill["verdict"]) == {"lockstep"}
    assert set(prefill["groups"]) == {"all_reduce(nccl): TP0,TP1,TP2,TP3"}
    assert set(prefill["fingerprint_group"]) == {"all_reduce(nccl)"}
    assert prefill["fingerprint"].n_unique() == 1
    assert not prefill["no_progress"].any()  # one capture each


def test_sample_incident_dumps():
    """sample_logs/pyspy: files named ROLE_tpN_HHMMSS.txt (the incident day is 2025-10-29, UTC)."""
    folder = Path(__file__).parents[1] / "sample_logs" / "pyspy"
    files = sorted(folder.glob("*_tp*_*.txt"))
    if not files:
        pytest.skip("sample_logs/pyspy not found")
    parts = []
    for path in files:
        role, _tp, hms = re.match(r"(\w+?)_tp(\d+)_(\d{6})", path.stem).groups()
        ts = datetime.strptime(f"20251029{hms}", "%Y%m%d%H%M%S").replace(tzinfo=UTC)
        r = parse_dump(path.read_text(), source=str(path), capture_ts=ts, host="gpu-1", role_hint=role)
        assert r.unparsed_lines == [] and r.other_lines == []
        parts.append(r.captures)
    out = stuck_ranks(pl.concat(parts))
    prefill = out.filter(pl.col("role") == "prefill")
    assert prefill["tp_rank"].to_list() == [0, 1, 2, 3]
    assert set(prefill["wait_class"]) == {"all_reduce"} and set(prefill["verdict"]) == {"lockstep"}
    decode = out.filter(pl.col("role") == "decode")
    assert decode["wait_class"].to_list() == ["broadcast", "broadcast", "all_reduce", "all_reduce"]
    assert decode["backend"][:2].to_list() == ["gloo", "gloo"]
    assert set(decode["verdict"]) == {"divergent"}
    assert set(decode["groups"]) == {"broadcast(gloo): TP0,TP1 | all_reduce(nccl): TP2,TP3"}


def test_no_progress_needs_same_stack_and_a_small_gap():
    first = engine("decode", [NCCL_ALL_REDUCE], 3000, T0, "1")
    moved = engine("decode", [GLOO_BROADCAST], 3000, T0 + timedelta(seconds=5), "2")
    late = engine("decode", [NCCL_ALL_REDUCE], 3000, T0 + timedelta(hours=2), "3")
    assert stuck_ranks(pl.concat([first, moved]))["no_progress"].to_list() == [False]
    hours_later = stuck_ranks(pl.concat([first, late]))  # two hours apart: two rounds, one row each
    assert hours_later["round_no"].to_list() == [1, 2]
    assert hours_later["no_progress"].to_list() == [False, False]
    same = stuck_ranks(
        pl.concat([first, engine("decode", [NCCL_ALL_REDUCE], 3000, T0 + timedelta(seconds=3), "4")])
    )
    assert same["no_progress"].to_list() == [True] and same["n_captures"].to_list() == [2]
    assert same["capture_id"][0] != first["capture_id"][0]  # the later capture is the one reported


def test_same_class_different_stacks_get_numbered_groups():
    other = NCCL_ALL_REDUCE.replace("forward (sglang/srt/layers/linear.py:1290)", "forward (moe.py:10)")
    caps = engine("prefill", [NCCL_ALL_REDUCE, other, NCCL_ALL_REDUCE, other], 2000, T0, "1")
    out = stuck_ranks(caps)
    assert set(out["verdict"]) == {"lockstep"}
    assert out["fingerprint_group"].to_list() == ["all_reduce(nccl)#1", "all_reduce(nccl)#2"] * 2
    assert set(out["groups"]) == {"all_reduce(nccl)#1: TP0,TP2 | all_reduce(nccl)#2: TP1,TP3"}


IDLE_RECV = """\
    recv_pyobj (zmq/sugar/socket.py:1051)
    recv_requests (sglang/srt/managers/scheduler.py:1098)
    event_loop_overlap_disagg_decode (sglang/srt/disaggregation/decode.py:812)
    run_scheduler_process (sglang/srt/managers/scheduler.py:2618)
"""


def one_rank(role: str, tp: int, pid: int, stack: str, ts: datetime, pos: str) -> pl.DataFrame:
    text = sglang_dump(tp, pid, stack)
    return parse_dump(
        text, source=f"{role}.journal", source_pos=pos, capture_ts=ts, host="gpu-1", role_hint=role
    ).captures


def test_routine_dumps_after_the_restart_are_rounds_of_their_own():
    """bench/make_day.py's day: the incident's dumps, then, hours after the restart, single dumps of
    new pids. Each verdict compares one round; the incident round keeps its split."""
    after = [
        one_rank("decode", 0, 4000, IDLE_RECV, T0 + timedelta(hours=6), "40"),
        one_rank("decode", 2, 4002, IDLE_RECV, T0 + timedelta(hours=10), "50"),
        one_rank("prefill", 3, 5003, IDLE_RECV, T0 + timedelta(hours=10, seconds=2), "60"),
    ]
    out = stuck_ranks(pl.concat([incident(second_decode_dump=False), *after]))
    decode = out.filter(pl.col("role") == "decode")
    assert decode["round_no"].to_list() == [1] * 4 + [2, 3]
    first = decode.filter(pl.col("round_no") == 1)
    assert set(first["groups"]) == {"broadcast(gloo): TP0,TP1 | all_reduce(nccl): TP2,TP3"}
    assert set(first["verdict"]) == {"divergent"} and set(first["round_ts"]) == {T0}
    assert first["latest_round"].to_list() == [False] * 4
    later = decode.filter(pl.col("round_no") > 1)
    assert later["verdict"].to_list() == ["cannot tell: one rank captured"] * 2
    assert later["latest_round"].to_list() == [False, True] and later["rounds"].to_list() == [3, 3]
    prefill = out.filter(pl.col("role") == "prefill")
    assert prefill["round_no"].to_list() == [1] * 4 + [2]
    assert set(prefill.filter(pl.col("round_no") == 1)["verdict"]) == {"lockstep"}


def test_a_new_pid_of_a_rank_opens_a_new_round_even_seconds_later():
    before = one_rank("decode", 0, 3000, NCCL_ALL_REDUCE, T0, "1")
    peer = one_rank("decode", 1, 3001, NCCL_ALL_REDUCE, T0 + timedelta(seconds=1), "2")
    restarted = one_rank("decode", 0, 4000, IDLE_RECV, T0 + timedelta(seconds=4), "3")
    out = stuck_ranks(pl.concat([before, peer, restarted]))
    assert out["round_no"].to_list() == [1, 1, 2]
    assert out["verdict"].to_list() == ["lockstep", "lockstep", "cannot tell: one rank captured"]


def test_round_gap_parameter():
    caps = pl.concat(
        [
            one_rank("decode", tp, 3000 + tp, NCCL_ALL_REDUCE, T0 + timedelta(seconds=20 * tp), str(tp))
            for tp in range(3)
        ]
    )
    assert stuck_ranks(caps)["round_no"].to_list() == [1, 1, 1]  # each 20 s after the previous: one pass
    assert run_sql(caps, round_gap_s=10)["round_no"].to_list() == [1, 2, 3]


def test_one_wait_is_one_group_named_with_the_backend_any_stack_shows():
    """recv_requests seen without its broadcast frames (classed broadcast, no backend) is the same wait
    as a gloo broadcast that shows its backend: one group, named broadcast(gloo)."""
    caps = engine("decode", [GLOO_BROADCAST, IDLE_RECV, NCCL_ALL_REDUCE, NCCL_ALL_REDUCE], 3000, T0, "1")
    assert caps.filter(pl.col("is_main"))["wait_class"].to_list()[:2] == ["broadcast", "broadcast"]
    assert caps.filter(pl.col("is_main"))["backend"].to_list()[:2] == ["gloo", None]
    out = stuck_ranks(caps)
    assert out["wait_label"].to_list() == ["broadcast(gloo)"] * 2 + ["all_reduce(nccl)"] * 2
    assert set(out["groups"]) == {
        "broadcast(gloo)#1: TP0 | broadcast(gloo)#2: TP1 | all_reduce(nccl): TP2,TP3"
    }
    assert set(out["verdict"]) == {"divergent"}


def test_lockstep_needs_two_ranks_and_a_launcher_is_not_a_rank():
    launcher = parse_dump(
        'Process 2999: sglang::launch\nPython v3.12.3 (/usr/bin/python3.12)\n\nThread 2999 (idle): "MainThread"\n'
        + NCCL_ALL_REDUCE,
        source="decode.journal",
        source_pos="9",
        capture_ts=T0,
        host="gpu-1",
        role_hint="decode",
    ).captures
    rank = one_rank("decode", 0, 3000, NCCL_ALL_REDUCE, T0 + timedelta(seconds=1), "1")
    out = stuck_ranks(pl.concat([launcher, rank]))
    assert out["is_rank"].to_list() == [True, False] and out["rank_label"].to_list() == ["TP0", "pid2999"]
    assert set(out["verdict"]) == {"cannot tell: one rank captured"}
    assert set(out["groups"]) == {"all_reduce(nccl): TP0"} and set(out["ranks_in_group"]) == {1}
    alone = stuck_ranks(launcher)
    assert alone["verdict"].to_list() == ["cannot tell: no rank captured"]
    assert alone["groups"].to_list() == ["all_reduce(nccl): pid2999"]


def run_sql(
    captures: pl.DataFrame, frames: pl.DataFrame | None = None, max_gap_s=None, round_gap_s=None
) -> pl.DataFrame:
    con = duckdb.connect()
    if max_gap_s is not None:
        con.execute(f"SET VARIABLE max_gap_s = '{max_gap_s}'")
    if round_gap_s is not None:
        con.execute(f"SET VARIABLE round_gap_s = '{round_gap_s}'")
    con.register("captures", captures.to_arrow())
    if frames is not None:
        con.register("stacks", frames.to_arrow())
    return con.sql(SQL.read_text()).pl()


def stuck_ranks(captures: pl.DataFrame, max_gap_s=None) -> pl.DataFrame:
    """The saved query ``stuck_ranks`` over these captures (what ``logcorr query stuck_ranks`` runs)."""
    return run_sql(captures, max_gap_s=max_gap_s)


def comparable(df: pl.DataFrame) -> pl.DataFrame:
    return df.with_columns(
        pl.col("capture_ts").dt.convert_time_zone("UTC").dt.replace_time_zone(None),
        pl.col("n_captures").cast(pl.Int64),
    )


def test_without_role_the_pid_keeps_engines_apart():
    caps = incident().with_columns(pl.lit(None, pl.String).alias("role"))
    out = stuck_ranks(caps)
    assert out.height == 8 and out["pid"].n_unique() == 8
    assert out["rank_label"].to_list()[:3] == ["TP0@2000", "TP0@3000", "TP1@2001"]


def test_sql_max_gap_parameter():
    assert stuck_ranks(incident(), max_gap_s=2)["no_progress"].to_list() == [False] * 8


def test_sql_header_documents_the_query():
    head = SQL.read_text().split("WITH", 1)[0]
    for word in ("Question:", "Tables:", "Columns:", "Parameters:", "How to read:", "captures"):
        assert word in head
    assert all(line.startswith("--") for line in head.strip().splitlines())


# --- never raises, never loses a line ----------------------------------------------------------------

DUMP_LINES = [
    "Process 12: sglang::scheduler_DP1_TP1_EP1_PP0",
    "Python v3.12.3 (/usr/bin/python3.12)",
    'Thread 12 (idle): "MainThread"',
    "Thread 0x7F00 (active+gil)",
    "    all_reduce (a.py:1)",
    "    0x7f00 (libc.so.6)",
    "        Arguments:",
    "            self: <x>",
    "        Locals::",
    "[2026-01-29 13:12:37 TP1] Pyspy dump for PID 12:",
    "Parent Process 1: python",
    "-----",
    "```",
    "[",
    "  {",
    '    "pid": 12,',
    '    "frames": [',
    "    ]",
    "  }",
    "]",
    "",
    "   ",
    "sglang-1  | ",
    "$ py-spy dump --pid 12",
    "**TP1**",
    "garbage (",
    "    cut (torch/dist",
    "\x1b[1mThread 3\x1b[0m (idle)",
    "[2026-01-29 13:12:37 TP1] Watchdog timeout",
    '[{"pid": 1, "frames": []}]',
    "\t x (y.py:2)",
    "    ...",
    "    <module> (a.py:1)",
    "    _bootstrap (threading.py:1030)",
]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_never_raises_on_arbitrary_text(text):
    check_lines_kept(text, parse_dump(text))


@pytest.mark.heavy  # a fault test: a generated loop of minutes of CPU (CI runs -m heavy)
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(DUMP_LINES), st.text(max_size=30)), max_size=40))
def test_never_raises_on_dump_like_text(lines):
    text = "\n".join(lines)
    r = parse_dump(text, source="f", capture_ts=T0)
    check_lines_kept(text, r)
    stuck_ranks(r.captures)
