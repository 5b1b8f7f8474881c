"""The line header: time printed in the line, level, and the rank prefix of SGLang's loggers.

Every function here works on a whole column (polars string expressions, Rust regex); nothing loops
over lines in Python. Formats, each with a sample a test parses (tests/test_prefix.py):

| format | sample | where it comes from |
|---|---|---|
| SGLang default | ``[2025-08-31 07:26:45 TP0 EP0] msg`` | ``configure_logger``: ``[%(asctime)s{prefix}] ``, prefix tokens ``DP PP ATTN_CP MOE_DP TP EP`` in the orders SGLang used 2024-2026; ``SGLANG_LOG_MS`` adds ``.mmm`` |
| Ray actor | ``(SchedulerActor pid=12, ip=10.0.0.1) [2026-…] msg`` | Ray's worker-log prefix in front of the SGLang header |
| custom logging config | ``[2026-04-15 17:13:10][scheduler_metrics_mixin.py:424][INFO]: msg`` | ``SGLANG_LOGGING_CONFIG_PATH`` |
| glog | ``E0414 03:56:41.856248 77969 transfer_metadata_plugin.cpp:173] msg`` | Mooncake / C++ libraries (no year: taken from the nearest line with one) |
| PyTorch c10 | ``[rank3]:[E908 08:39:25.432755661 ProcessGroupNCCL.cpp:2068] msg`` | ``TORCH_CPP_LOG_LEVEL`` output of ProcessGroupNCCL (global rank, stored as ``tp_rank``) |
| sgl-router | ``2025-10-29 21:49:19 ERROR target: file.rs:142: msg`` | Rust ``tracing`` fmt, UTC, level right-aligned to 5 characters |
| uvicorn | ``INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 200 OK`` | uvicorn's default formatter (level only) |
| JSON line | ``{"timestamp":"2025-10-29 21:49:19","level":"INFO","message":"…"}`` | sgl-router ``--log-json`` (time UTC) and SGLang ``--log-requests-format json`` (``"timestamp"`` only, local ISO time) |
| UCX | ``[1784621081.896649] [host:537  :1]  srd_iface.c:221  UCX  ERROR msg`` | UCX (under NIXL/Mooncake); a record start only, so it never glues onto an SGLang record |

ANSI colour escapes (the router colours its output by default) are ignored everywhere.

SGLang's own header carries no level; the level column is filled only where the line prints one.
"""

from __future__ import annotations

import re

import polars as pl

_DATE = r"\d{4}-\d\d-\d\d"
_TIME = r"\d\d:\d\d:\d\d(?:[.,]\d+)?"
_RANK_TOKENS = r"(?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+"

RAY_PREFIX = r"^\(\w+ pid=\d+(?:, ip=[^)]*)?\) "
SGLANG_HEADER = rf"(?s)^\[(?P<date>{_DATE})[ T](?P<time>{_TIME})(?P<ranks>(?: {_RANK_TOKENS})*)\] ?(?P<body>.*)"
CUSTOM_HEADER = (
    rf"(?s)^\[(?P<date>{_DATE})[ T](?P<time>{_TIME})\]\[(?P<origin>[^\]\n]*)\]\[(?P<level>[A-Z]+)\]:? ?(?P<body>.*)"
)
GLOG_HEADER = (
    r"(?s)^(?P<level>[IWEF])(?P<month>\d\d)(?P<day>\d\d) (?P<time>\d\d:\d\d:\d\d\.\d+)\s+\d+ [^\]\s]+:\d+\] ?(?P<body>.*)"
)
TORCH_HEADER = (
    r"(?s)^\[rank(?P<rank>\d+)\]:\[(?P<level>[IWEF])(?P<month>\d\d?)(?P<day>\d\d) (?P<time>\d\d:\d\d:\d\d\.\d+)"
    r" [^\]\s]+:\d+\] ?(?P<body>.*)"
)
ROUTER_HEADER = (
    rf"(?s)^(?P<date>{_DATE})[ T](?P<time>{_TIME})Z?\s+(?P<level>TRACE|DEBUG|INFO|WARN|ERROR)\s+(?P<body>.*)"
)
UVICORN_LEVEL = r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+"
ANSI_ESCAPE = r"\x1b\[[0-9;]*[A-Za-z]"
UCX_START = r"^\[\d{9,}\.\d+\] \[[^\]]*:\d+\s*:\d+\]"

# A line matching any of these opens a new logical record; any other line continues the record
# before it in the same process stream (a traceback, an embedded py-spy dump, a C++ stack).
RECORD_START = "|".join(
    [
        rf"^(?:{RAY_PREFIX[1:]})?\[{_DATE}[ T]{_TIME}(?: {_RANK_TOKENS})*\]",
        r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^\]\s]+:\d+\]",
        r"^\[rank\d+\]:\[",
        rf"^{_DATE}[ T]{_TIME}Z?\s+(?:TRACE|DEBUG|INFO|WARN|ERROR)\s",
        r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):\s",
        r'^\{"',
        UCX_START,
        # --log-requests with a bare "%(message)s" target (stdout/file): one request per line
        r"^(?:Receive|Finish): obj=",
    ]
)

# Before the first record start of a stream, a line of these shapes continues the line before it
# (an excerpt pasted from the middle of a dump or traceback); any other line is a record of its own.
CONTINUATION = r"^(?:[ \t]+\S|Thread (?:0x[0-9A-Fa-f]+|\d+) \()"

# The header families above, without their bodies, as one anchored alternation (tried in this
# order: a custom header before the plain SGLang one it starts like). Group prefixes: c_ custom,
# s_ SGLang, g_ glog, t_ PyTorch, r_ router.
_D = "[0-9]"
_ADATE = f"{_D}{{4}}-{_D}{{2}}-{_D}{{2}}"
_ATIME = f"{_D}{{2}}:{_D}{{2}}:{_D}{{2}}(?:[.,]{_D}+)?"
_ARANK = f"(?:DP|PP|ATTN_CP|MOE_DP|TP|EP){_D}+"
_HEAD_PARTS = [
    rf"^\[(?P<c_date>{_ADATE})[ T](?P<c_time>{_ATIME})\]\[(?P<c_origin>[^\]\n]*)\]\[(?P<c_level>[A-Z]+)\]:? ?",
    rf"^\[(?P<s_date>{_ADATE})[ T](?P<s_time>{_ATIME})(?P<s_ranks>(?: {_ARANK})*)\] ?",
    rf"^(?P<g_level>[IWEF])(?P<g_month>{_D}{{2}})(?P<g_day>{_D}{{2}}) (?P<g_time>{_D}{{2}}:{_D}{{2}}:{_D}{{2}}\.{_D}+)\s+{_D}+"
    r" [^\]\s]+:[0-9]+\] ?",
    rf"^\[rank(?P<t_rank>{_D}+)\]:\[(?P<t_level>[IWEF])(?P<t_month>{_D}{_D}?)(?P<t_day>{_D}{{2}})"
    rf" (?P<t_time>{_D}{{2}}:{_D}{{2}}:{_D}{{2}}\.{_D}+) [^\]\s]+:{_D}+\] ?",
    rf"^(?P<r_date>{_ADATE})[ T](?P<r_time>{_ATIME})Z?\s+(?P<r_level>TRACE|DEBUG|INFO|WARN|ERROR)\s+",
]
_HEAD = "|".join(_HEAD_PARTS)
_HEAD_ONLY = re.sub(r"\(\?P<\w+>", "(?:", _HEAD)

_GLOG_LEVEL = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "FATAL"}
RANK_COLUMNS = ("dp_rank", "pp_rank", "tp_rank", "ep_rank")


def is_record_start(lines: pl.Expr) -> pl.Expr:
    """Boolean expression: does this line open a new logical record (see the table in the module doc)?

    ``lines`` is an expression over a ``str`` column of single lines (no trailing newline). ANSI
    colour escapes are ignored; a null line is not a record start (null).
    """
    return lines.str.replace_all(ANSI_ESCAPE, "").str.contains(RECORD_START)


def _timestamp(date: pl.Expr, time: pl.Expr) -> pl.Expr:
    # HH:MM:SS[.fraction] with "." or ","; a fraction past microseconds is cut (ns → µs).
    clock = time.str.replace(",", ".", literal=True).str.slice(0, 15)
    return pl.concat_str([date, clock], separator=" ").str.strptime(
        pl.Datetime("us"), "%Y-%m-%d %H:%M:%S%.f", strict=False
    )


def _json_field(key: str, present: bool) -> pl.Expr:
    if not present:
        return pl.lit(None, pl.String)
    text = pl.col("text")
    return pl.when(text.str.starts_with('{"')).then(text.str.json_path_match(f"$.{key}"))


def _json_timestamp(value: pl.Expr) -> pl.Expr:
    """``2025-10-29 21:49:19``, ``2025-10-29T21:49:19.123456`` or with a ``Z``/offset (dropped)."""
    m = value.str.extract_groups(rf"^(?P<date>{_DATE})[ T](?P<time>\d\d:\d\d:\d\d(?:\.\d+)?)")
    return _timestamp(m.struct.field("date"), m.struct.field("time"))


def _rank(tokens: pl.Expr, name: str) -> pl.Expr:
    return tokens.str.extract(rf"(?:^| ){name}(\d+)", 1).cast(pl.Int16, strict=False)


def split_prefix(text: pl.Series) -> pl.DataFrame:
    """Split each record's header from its body.

    Args:
        text: ``str`` Series, one logical record per element (may hold several lines; only the first
            line's header is read).

    Returns:
        A DataFrame with one row per element, in order: ``log_ts`` (``Datetime[us]`` without zone: the
        time as printed, local time for SGLang, UTC for the router; glog/PyTorch lines get the year of
        the nearest earlier row), ``level`` (str or null), ``dp_rank, pp_rank, tp_rank, ep_rank``
        (Int16 or null), ``header`` (which format matched: ``sglang``, ``custom``, ``glog``,
        ``torch``, ``router``, ``uvicorn``, ``json`` or null) and ``body`` (the text after the header,
        ANSI escapes removed; the whole text when no header matched; for a JSON line the whole
        line, with ``log_ts`` and ``level`` read from its ``"timestamp"`` and ``"level"`` keys).

    Never raises on any string input; nulls stay null.
    """
    df = pl.DataFrame({"text": text.cast(pl.String)})
    if df.select(pl.col("text").str.contains("\x1b", literal=True).any()).item():
        df = df.with_columns(pl.col("text").str.replace_all(ANSI_ESCAPE, ""))
    json_like = df.select(pl.col("text").str.starts_with('{"').any()).item()
    ray_like = df.select(pl.col("text").str.starts_with("(").any()).item()
    # One anchored pass for every header family (captures on the header only: capturing the body
    # with ``.*`` costs twenty times more), one replace to cut the header off. A Ray prefix is cut
    # first, and only a custom or SGLang header may follow it.
    head_src = pl.col("text").str.replace(RAY_PREFIX, "") if ray_like else pl.col("text")
    df = df.with_columns(head_src.alias("src"))
    # One pass per family: an alternation of all of them defeats the regex engine's fast path.
    df = df.with_columns(
        *[pl.col("src").str.extract_groups(part).alias(f"h{i}") for i, part in enumerate(_HEAD_PARTS)],
        pl.col("src").str.replace(_HEAD_ONLY, "").alias("body"),
        _json_field("timestamp", json_like).alias("js_ts"),
        _json_field("level", json_like).alias("js_level"),
    )
    df = df.with_columns(pl.struct([pl.col(f"h{i}").struct.unnest() for i in range(len(_HEAD_PARTS))]).alias("h"))
    h = pl.col("h").struct
    stripped = (pl.col("src") != pl.col("text")) if ray_like else pl.lit(False)
    header = (
        pl.when(h.field("c_date").is_not_null()).then(pl.lit("custom"))
        .when(h.field("s_date").is_not_null()).then(pl.lit("sglang"))
        .when(stripped).then(pl.lit(None, pl.String))
        .when(h.field("g_level").is_not_null()).then(pl.lit("glog"))
        .when(h.field("t_level").is_not_null()).then(pl.lit("torch"))
        .when(h.field("r_date").is_not_null()).then(pl.lit("router"))
    )
    df = df.with_columns(header.alias("header"))
    if ray_like:  # a Ray prefix before anything but a custom/SGLang header: no header at all
        keep = pl.col("header").is_in(["custom", "sglang"]) | ~stripped
        df = df.with_columns(
            pl.when(keep).then(pl.col("body")).otherwise(pl.col("text")).alias("body"),
            pl.when(keep).then(pl.col("h")).otherwise(pl.lit(None)).alias("h"),
        )
    uv = pl.when(pl.col("header").is_null() | (pl.col("header") == "sglang")).then(
        pl.col("body").str.extract(UVICORN_LEVEL, 1)
    )
    json_ts = _json_timestamp(pl.col("js_ts")) if json_like else pl.lit(None, pl.Datetime("us"))
    dated_ts = pl.coalesce(
        _timestamp(
            pl.coalesce(h.field("c_date"), h.field("s_date"), h.field("r_date")),
            pl.coalesce(h.field("c_time"), h.field("s_time"), h.field("r_time")),
        ),
        json_ts,
    )
    df = df.with_columns(
        pl.when(pl.col("header").is_not_null())
        .then(pl.col("header"))
        .when(uv.is_not_null())
        .then(pl.lit("uvicorn"))
        .when(pl.col("js_ts").is_not_null() | pl.col("js_level").is_not_null())
        .then(pl.lit("json"))
        .alias("header"),
        uv.alias("uv"),
        dated_ts.alias("dated_ts"),
    )
    yearless = pl.col("header").is_in(["glog", "torch"])
    if df.select(yearless.any()).item():
        year = pl.col("dated_ts").dt.year().forward_fill().backward_fill().fill_null(1970).cast(pl.String)
        month = pl.coalesce(h.field("g_month"), h.field("t_month")).str.pad_start(2, "0")
        day = pl.coalesce(h.field("g_day"), h.field("t_day"))
        yearless_ts = _timestamp(year + "-" + month + "-" + day, pl.coalesce(h.field("g_time"), h.field("t_time")))
        log_ts = pl.coalesce(pl.col("dated_ts"), yearless_ts)
    else:
        log_ts = pl.col("dated_ts")
    letter = pl.coalesce(h.field("g_level"), h.field("t_level"))
    level = pl.coalesce(
        h.field("c_level"),
        letter.replace_strict(_GLOG_LEVEL, default=None, return_dtype=pl.String),
        h.field("r_level").replace({"WARN": "WARNING"}),
        pl.col("uv"),
        pl.col("js_level").str.to_uppercase().replace({"WARN": "WARNING"}),
    )
    ranks = h.field("s_ranks")
    return df.select(
        log_ts.alias("log_ts"),
        level.alias("level"),
        _rank(ranks, "DP").alias("dp_rank"),
        _rank(ranks, "PP").alias("pp_rank"),
        pl.coalesce(_rank(ranks, "TP"), h.field("t_rank").cast(pl.Int16, strict=False)).alias("tp_rank"),
        _rank(ranks, "EP").alias("ep_rank"),
        pl.col("header"),
        pl.col("body"),
    )
