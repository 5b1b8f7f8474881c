"""The line header (parsers/prefix.py): each header format of the module table, rank-token orders,
record starts, and records_from_text (parsers/records.py)."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logcorr.ingest import records_from_text
from logcorr.parsers.prefix import HEADERS, REFINES_SGLANG, is_record_start, split_prefix
from logcorr.store.schema import EVENTS

CASES = Path(__file__).parent / "cases"

# (sample, header, level, (dp, pp, tp, ep), log_ts, body) — the table of the module docstring.
SAMPLES = [
    (
        "[2025-08-31 07:26:45 TP0 EP0] msg",
        "sglang",
        None,
        (None, None, 0, 0),
        datetime(2025, 8, 31, 7, 26, 45),
        "msg",
    ),
    (
        "(SchedulerActor pid=12, ip=10.0.0.1) [2026-01-02 03:04:05 DP1 TP2] msg",
        "sglang",
        None,
        (1, None, 2, None),
        datetime(2026, 1, 2, 3, 4, 5),
        "msg",
    ),
    (
        "[2026-04-15 17:13:10][scheduler_metrics_mixin.py:424][INFO]: msg",
        "custom",
        "INFO",
        (None,) * 4,
        datetime(2026, 4, 15, 17, 13, 10),
        "msg",
    ),
    (
        "E0414 03:56:41.856248 77969 transfer_metadata_plugin.cpp:173] msg",
        "glog",
        "ERROR",
        (None,) * 4,
        None,
        "msg",  # glog prints no year: with no dated line beside it the time stays unknown, never 1970
    ),
    (
        "[rank3]:[E908 08:39:25.432755661 ProcessGroupNCCL.cpp:2068] msg",
        "torch",
        "ERROR",
        (None, None, 3, None),
        None,
        "msg",
    ),
    (
        "2025-10-29 21:49:19 ERROR target: file.rs:142: msg",
        "router",
        "ERROR",
        (None,) * 4,
        datetime(2025, 10, 29, 21, 49, 19),
        "target: file.rs:142: msg",
    ),
    (
        "2025-10-29T21:49:19.123456Z  WARN smg::x: msg",
        "router",
        "WARNING",
        (None,) * 4,
        datetime(2025, 10, 29, 21, 49, 19, 123456),
        "smg::x: msg",
    ),
    (
        'INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 200 OK',
        "uvicorn",
        "INFO",
        (None,) * 4,
        None,
        'INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 200 OK',
    ),
    (
        '{"timestamp":"2025-10-29 21:49:19","level":"INFO","message":"m"}',
        "json",
        "INFO",
        (None,) * 4,
        datetime(2025, 10, 29, 21, 49, 19),
        '{"timestamp":"2025-10-29 21:49:19","level":"INFO","message":"m"}',
    ),
    (
        "[2026-05-27 23:38:59.096 TP1] Scheduler hit an exception",
        "sglang",
        None,
        (None, None, 1, None),
        datetime(2026, 5, 27, 23, 38, 59, 96000),
        "Scheduler hit an exception",
    ),
    (
        "\x1b[2m2025-10-29 21:49:19\x1b[0m \x1b[31mERROR\x1b[0m target: msg",
        "router",
        "ERROR",
        (None,) * 4,
        datetime(2025, 10, 29, 21, 49, 19),
        "target: msg",
    ),
    ("no header at all", None, None, (None,) * 4, None, "no header at all"),
]


@pytest.mark.parametrize(
    "sample,header,level,ranks,log_ts,body", SAMPLES, ids=[s[1] or "none" for s in SAMPLES]
)
def test_header_formats(sample, header, level, ranks, log_ts, body):
    row = split_prefix(pl.Series([sample])).row(0, named=True)
    assert row["header"] == header and row["level"] == level
    assert (row["dp_rank"], row["pp_rank"], row["tp_rank"], row["ep_rank"]) == ranks
    assert row["log_ts"] == log_ts and row["body"] == body


@pytest.mark.parametrize(
    "tokens,ranks",
    [
        ("DP1 TP2 EP3 PP0", (1, 0, 2, 3)),
        ("DP1 PP0 TP2 EP3", (1, 0, 2, 3)),
        ("DP1 PP2 ATTN_CP0 MOE_DP3 TP4 EP5", (1, 2, 4, 5)),
        ("PP2 TP1", (None, 2, 1, None)),
        ("TP12", (None, None, 12, None)),
    ],
)
def test_rank_token_orders(tokens, ranks):
    row = split_prefix(pl.Series([f"[2025-08-31 07:26:45 {tokens}] Decode batch, x: 1"])).row(0, named=True)
    assert (row["dp_rank"], row["pp_rank"], row["tp_rank"], row["ep_rank"]) == ranks
    assert row["body"] == "Decode batch, x: 1"


def test_uvicorn_level_after_sglang_header_and_multiline_body():
    df = split_prefix(
        pl.Series(
            [
                "[2025-11-05 16:38:03] WARNING:  Invalid HTTP request received.",
                "[2025-11-05 16:38:03 TP0] a\nb\n  c",
            ]
        )
    )
    assert df["level"].to_list() == ["WARNING", None]
    assert df["body"][1] == "a\nb\n  c"


def test_a_vllm_file_tag_as_github_auto_links_it_is_the_headers():
    """batch9/13: a pasted issue turns `[loggers.py:259]` into `[[loggers.py:259](http://loggers.py:259/)]`:
    the link is part of the tag, so the body opens with the message (`Engine 000: …`), not with `(http…)]`."""
    df = split_prefix(
        pl.Series(
            [
                "(APIServer pid=1) INFO 06-11 12:33:59 [[loggers.py:259](http://loggers.py:259/)] Engine 000: Avg"
                " prompt throughput: 430.1 tokens/s"
            ]
        )
    )
    assert df.select("header", "level", "pid", "body").row(0) == (
        "vllm",
        "INFO",
        1,
        "Engine 000: Avg prompt throughput: 430.1 tokens/s",
    )


def test_glog_year_from_nearest_dated_row():
    df = split_prefix(
        pl.Series(["[2025-04-14 03:55:21] ready", "E0414 03:56:41.856248 77969 f.cpp:173] x", None])
    )
    assert df["log_ts"].to_list()[:2] == [
        datetime(2025, 4, 14, 3, 55, 21),
        datetime(2025, 4, 14, 3, 56, 41, 856248),
    ]
    assert set(df.row(2)) == {None}


def test_ray_prefix_before_anything_else_is_no_header():
    row = split_prefix(pl.Series(["(Actor pid=1) E0414 03:56:41.856248 7 f.cpp:1] x"])).row(0, named=True)
    assert row["header"] is None and row["body"] == "(Actor pid=1) E0414 03:56:41.856248 7 f.cpp:1] x"


def test_a_header_is_printed_in_ascii_digits():
    """Loggers print times, pids and ranks with ASCII digits: a lookalike in other digits (here
    Arabic-Indic) is text, its line kept whole, not a header with a time that cannot be read."""
    rows = split_prefix(pl.Series(["[2025-08-31 07:26:45 TP3] x", "[٢٠٢٥-08-31 07:26:45 TP3] x"]))
    assert rows.row(0, named=True)["header"] == "sglang" and rows.row(0, named=True)["tp_rank"] == 3
    other = rows.row(1, named=True)
    assert other["header"] is None and other["tp_rank"] is None
    assert other["body"] == "[٢٠٢٥-08-31 07:26:45 TP3] x"
    assert not pl.select(is_record_start(pl.lit("[٢٠٢٥-08-31 07:26:45 TP3] x"))).item()


@pytest.mark.parametrize(
    "line,start",
    [
        ("[2025-08-31 07:26:45 TP0] x", True),
        ("(SchedulerActor pid=1, ip=1.2.3.4) [2025-08-31 07:26:45] x", True),
        ("E0414 03:56:41.856248 77969 f.cpp:173] x", True),
        ("[rank3]:[E908 08:39:25.432755661 P.cpp:2068] x", True),
        ("2025-10-29 21:49:19 ERROR t: x", True),
        ("\x1b[2m2025-10-29 21:49:19\x1b[0m  INFO t: x", True),
        ('INFO:     127.0.0.1:1 - "GET / HTTP/1.1" 200 OK', True),
        ('{"timestamp":"x"}', True),
        ("[1784621081.896649] [pod:537  :1]       srd_iface.c:221  UCX  ERROR send completion", True),
        ("Receive: obj=GenerateReqInput(rid='a', bootstrap_room=1)", True),
        ("Traceback (most recent call last):", False),
        ('  File "/x.py", line 1, in f', False),
        ("Process 309: sglang::scheduler_TP6", True),  # a bare py-spy dump pasted after log lines
        ("Decode transfer failed for request rank=0 decode_req.req.rid='a'", True),
        ("# decode pod, ~70s later", True),
        ("[W227 14:33:13.089395 socket.cpp:752] msg", True),
        ("I20260317 09:49:03.944839  8123 client.cpp:12] msg", True),
        ("ip-10-0-9-12:5801:5850 [1] NCCL INFO [Service thread] Connection closed", True),
        ("INFO 11-12 09:49:50 [api_server.py:585] msg", True),
        ("[ERROR] HCCL(1234,python):2025-03-01-10:20:30.123.456 [file.cc:88] msg", True),
        ("[1784621081.896649] [host:537:0:1]  ucp_worker.c:1 UCX  ERROR x", True),
        ("    _apply (penaltylib/min_new_tokens.py:78)", False),
        ("frame #0: c10::Error::Error(c10::SourceLocation) + 0x80", False),
        ("", False),
    ],
)
def test_record_start(line, start):
    assert pl.select(is_record_start(pl.lit(line))).item() is start


def test_a_process_line_announced_by_the_watchdog_stays_in_its_record():
    announced = is_record_start(
        pl.lit("Process 309: sglang::scheduler_TP6"),
        pl.lit("[2025-10-29 11:25:58 TP6] Pyspy dump for PID 309:"),
    )
    assert pl.select(announced).item() is False


@pytest.mark.parametrize("header", HEADERS, ids=[f"{h.name}-{i}" for i, h in enumerate(HEADERS)])
def test_every_header_sample_yields_its_fields_and_is_claimed_by_its_family_only(header):
    for sample, fields in header.samples:
        row = split_prefix(pl.Series([sample])).row(0, named=True)
        if header.name not in ("ucx",):
            assert row["header"] == header.name, sample
        for name, value in fields.items():
            assert row[name] == value, (sample, name)
        assert pl.select(is_record_start(pl.lit(sample))).item() is header.starts
        others = [h for h in HEADERS if h is not header and re.match(h.regex, sample)]
        refines = header in REFINES_SGLANG  # a family before SGLang's refines it: both match
        assert all(h.name == header.name for h in others) or header.name in ("sglang", "custom") or refines, (
            sample,
            others,
        )


def test_records_from_text_rules():
    text = "\n".join(
        [
            "# a note",
            "sglang-1  |     orphan frame (x.py:1)",
            "sglang-1  | [2025-10-29 11:25:58 TP6] Pyspy dump for PID 309:",
            "sglang-1  | Process 309: sglang::scheduler_TP6",
            "sglang-1  | ",
            'sglang-1  | Thread 309 (active): "MainThread"',
            "sglang-1  | ",
            "sglang-1  | ",
            "sglang-1  | [2025-10-29 11:25:59 TP3] Watchdog timeout (self.watchdog_timeout=300)\r",
        ]
    )
    ev = records_from_text(text, "compose.log")
    assert ev.columns == [*EVENTS.schema, "header", "body"]
    assert ev["message"].to_list() == [
        "# a note",
        "    orphan frame (x.py:1)",
        "[2025-10-29 11:25:58 TP6] Pyspy dump for PID 309:\nProcess 309: sglang::scheduler_TP6\n\n"
        'Thread 309 (active): "MainThread"',
        "[2025-10-29 11:25:59 TP3] Watchdog timeout (self.watchdog_timeout=300)",
    ]
    assert ev["source_pos"].to_list() == ["line 1", "line 2", "line 3", "line 9"]
    assert ev["n_lines"].to_list() == [1, 1, 6, 1]  # the two blank lines end the dump's record
    # SGLang's ranks and no prefill-decode cue anywhere: an engine (roles.RoleFlow)
    assert ev["event_id"].to_list() == [0, 1, 2, 3] and set(ev["role"]) == {"engine"}
    assert ev["tp_rank"].to_list() == [None, None, 6, 3]
    assert str(ev["ts"].dtype) == "Datetime(time_unit='us', time_zone='UTC')"


def test_records_from_text_keeps_comments_and_ignores_bar_lines_below_half():
    text = "# not a note\n[2025-10-29 11:25:58] a | b\nname | value"
    ev = records_from_text(text, "x")
    assert ev["message"].to_list() == ["# not a note", "[2025-10-29 11:25:58] a | b\nname | value"]
    assert records_from_text("", "x").height == 0
    blank = records_from_text("\n\n  \n", "x")  # blank lines are counted, never records of their own
    assert blank["message"].to_list() == [""] and blank["n_lines"].to_list() == [3]


def test_every_case_file_splits_without_losing_a_line():
    if not CASES.exists():
        pytest.skip("shared/cases not found")
    for path in sorted((CASES / "sglang").iterdir()):
        text = path.read_text()
        ev = records_from_text(text, path.name)
        joined = "\n".join(ev["message"])
        for raw in text.splitlines():
            line = raw.removeprefix("sglang-1  | ").rstrip()
            if line and not line.startswith("#"):
                assert line in joined, (path.name, line)


@pytest.mark.heavy  # a fault test: a generated loop of minutes of CPU (CI runs -m heavy)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(max_size=80) | st.sampled_from([s[0] for s in SAMPLES]), max_size=8))
def test_split_prefix_and_records_never_raise(lines):
    df = split_prefix(pl.Series(lines, dtype=pl.String))
    assert df.height == len(lines)
    ev = records_from_text("\n".join(lines), "fuzz")
    assert ev.columns == [*EVENTS.schema, "header", "body"]


def test_rows_of_several_header_families_in_one_frame_each_lose_their_own_header():
    # SGLang's header is tried first; the other families run together on the rows it left
    lines = [
        "[2025-09-04 07:15:25 TP0] Decode batch, #running-req: 1",
        "2025-09-04 07:15:26 ERROR http_request{method=POST}: failed",
        "E0904 07:15:26.325699  5796 tcp_transport.cpp:172] Session::readBody failed",
        "[2025-09-04 07:15:27][server.py:1][INFO]: custom",
        "no header",
    ]
    df = split_prefix(pl.Series(lines))
    assert df["header"].to_list() == ["sglang", "router", "glog", "custom", None]
    assert df["body"].to_list() == [
        "Decode batch, #running-req: 1",
        "http_request{method=POST}: failed",
        "Session::readBody failed",
        "custom",
        "no header",
    ]


def test_a_family_listed_before_sglang_refines_its_header_without_ranks():
    # split_prefix tries such a family only on the rows SGLang's header claimed without ranks
    sglang = next(h for h in HEADERS if h.name == "sglang")
    for header in REFINES_SGLANG:
        for sample, _ in header.samples:
            m = re.match(sglang.regex, sample)
            assert m and m.group("ranks") == "", (header.name, sample)
