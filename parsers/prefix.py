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
    ]
)

_GLOG_LEVEL = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "FATAL"}
RANK_COLUMNS = ("dp_rank", "pp_rank", "tp_rank", "ep_rank")


def is_record_start(lines: pl.Expr) -> pl.Expr:
    """Boolean expression: does this line open a new logical record (see the table in the module doc)?

    ``lines`` is an expression over a ``str`` column of single lines (no trailing newline). ANSI
    colour escapes are ignored; a null line is not a record start (null).
    """
    return lines.str.replace_all(ANSI_ESCAPE, "").str.contains(RECORD_START)


def _timestamp(date: pl.Expr, time: pl.Expr) -> pl.Expr:
    clock = time.str.replace(",", ".")
    clock = pl.when(clock.str.contains(r"\.")).then(clock).otherwise(clock + ".")
    clock = clock.str.pad_end(15, "0").str.slice(0, 15)  # HH:MM:SS.ffffff (ns cut to µs)
    return (date + " " + clock).str.to_datetime("%Y-%m-%d %H:%M:%S%.f", time_unit="us", strict=False)


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
    no_ray = pl.col("text").str.replace(RAY_PREFIX, "")
    df = df.with_columns(
        no_ray.str.extract_groups(SGLANG_HEADER).alias("sg"),
        no_ray.str.extract_groups(CUSTOM_HEADER).alias("cu"),
        pl.col("text").str.extract_groups(GLOG_HEADER).alias("gl"),
        pl.col("text").str.extract_groups(TORCH_HEADER).alias("to"),
        pl.col("text").str.extract_groups(ROUTER_HEADER).alias("ro"),
        pl.col("text").str.extract(UVICORN_LEVEL, 1).alias("uv"),
        _json_field("timestamp", json_like).alias("js_ts"),
        _json_field("level", json_like).alias("js_level"),
    )
    sg, cu, gl, to, ro = (pl.col(c).struct for c in ("sg", "cu", "gl", "to", "ro"))
    ranks = pl.when(cu.field("body").is_null()).then(sg.field("ranks"))
    header = (
        pl.when(cu.field("body").is_not_null()).then(pl.lit("custom"))
        .when(sg.field("body").is_not_null()).then(pl.lit("sglang"))
        .when(gl.field("body").is_not_null()).then(pl.lit("glog"))
        .when(to.field("body").is_not_null()).then(pl.lit("torch"))
        .when(ro.field("body").is_not_null()).then(pl.lit("router"))
        .when(pl.col("uv").is_not_null()).then(pl.lit("uvicorn"))
        .when(pl.col("js_ts").is_not_null() | pl.col("js_level").is_not_null()).then(pl.lit("json"))
    )
    dated_ts = pl.coalesce(
        _timestamp(cu.field("date"), cu.field("time")),
        _timestamp(sg.field("date"), sg.field("time")),
        _timestamp(ro.field("date"), ro.field("time")),
        _json_timestamp(pl.col("js_ts")),
    )
    df = df.with_columns(header.alias("header"), dated_ts.alias("dated_ts"))
    year = pl.col("dated_ts").dt.year().forward_fill().backward_fill().fill_null(1970).cast(pl.String)
    month = pl.coalesce(gl.field("month"), to.field("month")).str.pad_start(2, "0")
    day = pl.coalesce(gl.field("day"), to.field("day"))
    yearless_ts = _timestamp(year + "-" + month + "-" + day, pl.coalesce(gl.field("time"), to.field("time")))
    letter = pl.coalesce(gl.field("level"), to.field("level"))
    level = pl.coalesce(
        cu.field("level"),
        letter.replace_strict(_GLOG_LEVEL, default=None),
        ro.field("level").replace({"WARN": "WARNING"}),
        pl.col("uv"),
        sg.field("body").str.extract(UVICORN_LEVEL, 1),
        pl.col("js_level").str.to_uppercase().replace({"WARN": "WARNING"}),
    )
    body = pl.coalesce(
        cu.field("body"), sg.field("body"), gl.field("body"), to.field("body"), ro.field("body"), pl.col("text")
    )
    return df.select(
        pl.coalesce(pl.col("dated_ts"), yearless_ts).alias("log_ts"),
        level.alias("level"),
        _rank(ranks, "DP").alias("dp_rank"),
        _rank(ranks, "PP").alias("pp_rank"),
        pl.coalesce(_rank(ranks, "TP"), to.field("rank").cast(pl.Int16, strict=False)).alias("tp_rank"),
        _rank(ranks, "EP").alias("ep_rank"),
        pl.col("header"),
        body.alias("body"),
    )
