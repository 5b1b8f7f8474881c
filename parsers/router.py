"""Router and HTTP access lines → ``requests`` rows.

Formats (data, lnav style; each has the version that introduced it and a sample record that
``tests/test_router_parser.py`` parses):

- ``ACCESS_FORMATS``: uvicorn access lines of the engines and of the Python ``mini_lb``, aiohttp
  access lines (Mooncake bootstrap server of early PD, ``mini_lb``), and the ``mini_lb``
  registration lines. Each has a literal ``anchor`` that ``logcorr.parsers.sglang.classify`` looks
  for in its single Aho-Corasick pass.
- ``ROUTER_FORMATS``: sgl-router / sgl-model-gateway (``smg``) lines, Rust ``tracing`` fmt (UTC time,
  level right-aligned to 5 characters, span fields such as ``http_request{method=… uri=…
  request_id="…" status_code=… latency=…}``, target, ``file.rs:line``) and the same in JSON mode.
- ``PD_MESSAGES``: the PD-router messages that name the prefill/decode pair of a request.

Span ``latency`` is printed as a Rust ``Duration`` (``"12.3ms"``, sgl-router 2025) or as an integer
number of microseconds (sgl-model-gateway 2026); both become ``latency_ms``.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from logcorr.schema import EVENTS
from logcorr.schema import REQUESTS as REQUESTS_TABLE


@dataclass(frozen=True)
class RequestFormat:
    """One named request-line format: ``regex`` (Rust syntax, named groups) over the record body
    (text after the header); ``anchor`` a literal every match contains (None: recognised by its
    header instead); ``role`` the role the line implies, or None."""

    name: str
    anchor: str | None
    regex: str
    since: str
    sample: str
    role: str | None = None


R = RequestFormat
UVICORN = R(
    "uvicorn_access",
    "HTTP/",
    r'^(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+)?(?P<client>\S+) - "(?P<method>[A-Z]+) (?P<path>\S+)'
    r' (?P<proto>HTTP/[\d.]+)" (?P<status>\d{3})\b',
    "uvicorn (SGLang http_server since v0.1, 2024)",
    '[2025-11-05 16:38:04] INFO:     127.0.0.1:32770 - "GET /health HTTP/1.1" 200 OK',
)
AIOHTTP = R(
    "aiohttp_access",
    "HTTP/",
    r'^(?P<client>\S+) \[(?P<time>[^\]\n]+)\] "(?P<method>[A-Z]+) (?P<path>\S+) (?P<proto>HTTP/[\d.]+)"'
    r" (?P<status>\d{3}) (?P<bytes>\d+|-)",
    "aiohttp default access format (Mooncake bootstrap / mini_lb, ≈v0.4.5 2025-04)",
    '[2025-04-14 03:56:41] 10.0.3.5 [14/Apr/2025:03:56:41 +0000] "GET /metadata?key=mooncake%2Fram HTTP/1.1"'
    ' 404 185 "-" "-"',
)
MINI_LB = R(
    "mini_lb_register",
    "Registered ",
    r"^Registered (?P<worker_role>prefill|decode|encode) server: (?P<url>\S+?)(?: with bootstrap port: (?P<port>\S+))?(?:$|\n)",
    "sglang.srt.disaggregation.mini_lb ≈v0.4.6 (2025-04)",
    "[2025-05-01 10:00:00] Registered prefill server: http://10.0.0.7:30000 with bootstrap port: 8998",
    "router",
)
ACCESS_FORMATS = [UVICORN, AIOHTTP, MINI_LB]

ROUTER_TEXT = R(
    "router_text",
    None,
    r"^(?:(?P<spans>[\w-]+\{[^\n]*?\}(?::[\w-]+(?:\{[^\n]*?\})?)*): )?(?P<target>[A-Za-z_][\w-]*(?:::[\w-]+)*): "
    r"(?:(?P<file>[^\s:]+\.rs):(?P<line>\d+): )?(?P<msg>[^\n]*)",
    "sgl-router (Rust, ≈v0.1.5 2025-06); sgl-model-gateway 'smg' targets ≈2026",
    '2026-02-26 13:00:13 ERROR http_request{method=POST uri=/v1/chat/completions version=HTTP/1.1 module="smg"'
    ' request_id="chatcmpl-Wly2zVLtUcyK1Vg13jmipvFZ" status_code=500 latency=1254651}: smg::response:'
    " /home/runner/work/sglang/sglang/src/middleware.rs:349: request failed with server error",
    "router",
)
ROUTER_JSON = R(
    "router_json",
    None,
    r'^\{[^\n]*"target": ?"',
    "sgl-router --log-json (tracing JSON, flattened event)",
    '{"timestamp":"2025-10-29 21:49:20","level":"INFO","message":"finished processing request",'
    '"target":"sglang_router_rs::response","filename":"src/middleware.rs","line_number":240,'
    '"span":{"latency":"1.5ms","method":"POST","request_id":"gnt-abc","status_code":200,"uri":"/generate",'
    '"version":"HTTP/1.1","name":"http_request"}}',
    "router",
)
ROUTER_FORMATS = [ROUTER_TEXT, ROUTER_JSON]
# The router text head without the message (capturing a whole message is slow); the message is
# what a replace of the head leaves.
_ROUTER_TEXT_HEAD = ROUTER_TEXT.regex.replace("(?P<msg>[^\\n]*)", "")
_ROUTER_TEXT_HEAD_ONLY = (
    _ROUTER_TEXT_HEAD.replace("(?P<spans>", "(?:")
    .replace("(?P<target>", "(?:")
    .replace("(?P<file>", "(?:")
    .replace("(?P<line>", "(?:")
)

# Router messages naming a PD pair (the prefill/decode URL columns are filled from them).
PD_MESSAGES = [
    (
        "prefill_failed_abort_decode",
        "Prefill failed, aborting paired decode request decode_url=http://10.0.0.8:30001 prefill_url=http://10.0.0.7:30000",
        "≈2026 (smg)",
    ),
    (
        "decode_error_status",
        "Decode server returned error status decode_url=http://10.99.91.49:30001 status=500 Internal Server Error",
        "≈v0.2 sgl-router (2025-09)",
    ),
    (
        "decode_stream_error",
        "Stream error from decode server http://10.0.0.50:30000: error decoding response body",
        "sgl-router 2025",
    ),
    (
        "pd_sent",
        "Sending concurrent requests prefill_url=http://10.0.0.7:30000 decode_url=http://10.0.0.8:30001",
        "smg events (DEBUG, INFO with OTEL)",
    ),
]

ROUTER_TARGET = r"^(?:sglang_router_rs|sglang_router|sgl_router|smg|sgl_model_gateway)\b"
ROUTER_HEADER_LINE = r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?Z?\s+(?:TRACE|DEBUG|INFO|WARN|ERROR)\s"

# Every field a request line may yield: the ``requests`` columns it fills, and the role its content names.
REQUESTS = REQUESTS_TABLE.schema
_PARSED = {
    **{
        c: REQUESTS_TABLE.schema[c]
        for c in (
            "method",
            "path",
            "status",
            "latency_ms",
            "request_id",
            "rid",
            "bootstrap_room",
            "prefill_url",
            "decode_url",
            "bootstrap_port",
            "client",
            "target",
            "message",
            "format",
        )
    },
    "content_role": pl.String,
}
# The ``ev`` input this module reads: ``events`` columns plus the header split.
_EV = {
    **{c: EVENTS.schema[c] for c in ("event_id", "ts", "host", "role", "pid", "level")},
    "header": pl.String,
    "body": pl.String,
    **{c: EVENTS.schema[c] for c in ("message", "source", "source_pos")},
}

_URL = r"(https?://[^\s,\"']+?)(?:[:,]?\s|[,\"']|$)"
_HEALTH_ACCESS = (
    r'^(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+)?\S+ - "[A-Z]+ /health|^\S+ \[[^\]\n]+\] "[A-Z]+ /health'
)


def is_router_line(ev: pl.DataFrame) -> pl.Series:
    """Boolean Series, one per row of ``ev``: a Rust tracing line (router header) or a tracing JSON
    line (a ``"target"`` key). Uses ``ev.header`` when present, else the ``message`` text."""
    base = _base(ev)
    header = base["header"]
    text_router = pl.select(
        pl.when(header.is_not_null())
        .then(header == "router")
        .otherwise(base["message"].str.contains(ROUTER_HEADER_LINE))
        .fill_null(False)
    ).to_series()
    json_router = base["body"].str.starts_with("{").fill_null(False) & base["body"].str.contains(
        ROUTER_JSON.regex
    ).fill_null(False)
    return (text_router | json_router).alias("router")


def kinds(ev: pl.DataFrame) -> pl.DataFrame:
    """``kind`` (``request``, ``health`` or ``other``) and ``content_role`` (``router`` or null) for
    router lines and access lines; one row per row of ``ev``, in order. Access lines are told apart
    by a match test only (no field captured); router lines are parsed."""
    base = _base(ev)
    first = base["body"]  # the access formats are anchored at the start: no need to cut lines
    router_rows = is_router_line(base)
    access = (first.str.contains(UVICORN.regex) | first.str.contains(AIOHTTP.regex)).fill_null(False)
    lb = first.str.contains(MINI_LB.regex).fill_null(False)
    health = first.str.contains(_HEALTH_ACCESS).fill_null(False)
    out = pl.DataFrame({"router": router_rows, "access": access, "lb": lb, "health": health}).select(
        pl.when(pl.col("router"))
        .then(pl.lit(None, pl.String))
        .when(pl.col("health"))
        .then(pl.lit("health"))
        .when(pl.col("access") | pl.col("lb"))
        .then(pl.lit("request"))
        .otherwise(pl.lit("other"))
        .alias("kind"),
        pl.when(~pl.col("router") & pl.col("lb")).then(pl.lit("router")).alias("content_role"),
    )
    if router_rows.any():
        req = _parse(base.filter(router_rows).with_row_index("_i"))
        path = pl.coalesce(pl.col("path"), pl.lit(""))
        is_req = pl.any_horizontal(
            [pl.col(c).is_not_null() for c in ("method", "path", "prefill_url", "decode_url", "request_id")]
        )
        health_msg = pl.coalesce(pl.col("message"), pl.lit("")).str.contains(
            r"(?i)health check (?:failed|error)"
        )
        sub = req.select(
            pl.when(path.str.contains(r"^/health") | health_msg)
            .then(pl.lit("health"))
            .when(is_req)
            .then(pl.lit("request"))
            .otherwise(pl.lit("other"))
            .alias("kind"),
            pl.col("content_role"),
        )
        pos = router_rows.arg_true()
        out = pl.DataFrame(
            {
                "kind": out["kind"].scatter(pos, sub["kind"]),
                "content_role": out["content_role"].scatter(pos, sub["content_role"]),
            }
        )
    return out


def requests(ev: pl.DataFrame) -> pl.DataFrame:
    """One row per router or HTTP access record.

    Args:
        ev: the ``ev`` frame (``event_id, ts, host, role, pid, level, body, message, source,
            source_pos``; ``header`` used when present). With a ``kind`` column only ``request`` and
            ``health`` rows are read; otherwise every row that parses as one of the formats.

    Returns:
        ``REQUESTS`` columns: ``event_id, ts, host, role`` (``ev.role`` unless unknown, else
        ``router`` for router and ``mini_lb`` lines), ``pid``, ``method``, ``path`` (with query),
        ``status`` (Int32, the HTTP status: access line, span ``status_code`` or a message's
        ``status=``), ``latency_ms`` (Float64, from the span ``latency``), ``request_id`` (router
        ``x-request-id``), ``rid`` and ``bootstrap_room`` (when a router message names them),
        ``prefill_url``/``decode_url`` (the PD pair a router message names, or the server a
        ``mini_lb`` line registers), ``bootstrap_port`` (Int32), ``client`` (``ip:port`` of an access
        line), ``target`` (Rust target), ``message`` (router event text), ``format`` (which format
        matched), ``level``, ``source``, ``source_pos``.

    Never raises on any text.
    """
    if "kind" in ev.columns:
        ev = ev.filter(pl.col("kind").is_in(["request", "health"]))
    base = _base(ev)
    if base.height == 0:
        return pl.DataFrame(schema=REQUESTS)
    out = _parse(base.with_row_index("_i")).filter(pl.col("format").is_not_null())
    own = pl.col("role")
    role = pl.when(own.is_null() | (own == "unknown")).then(
        pl.coalesce(pl.col("content_role"), pl.lit("unknown"))
    )
    out = out.with_columns(role.otherwise(own).alias("role"))
    return out.select([pl.col(c).cast(t, strict=False) for c, t in REQUESTS.items()])


def _parse(df: pl.DataFrame) -> pl.DataFrame:
    """Every request field (``_PARSED``) for every row of ``df`` (which has ``_i``), in order; null
    where no format matched. Each format runs only on the rows that can be of it."""
    df = df.with_columns(_first_line(df["body"]).alias("first"))
    router_rows = is_router_line(df)
    is_json = router_rows & df["first"].str.starts_with("{").fill_null(False)
    parts = [
        _parse_router_text(df.filter(router_rows & ~is_json)),
        _parse_router_json(df.filter(is_json)),
        _parse_access(df.filter(~router_rows)),
    ]
    parsed = pl.concat(
        [
            p.select(
                pl.col("_i").cast(pl.UInt32),
                *[
                    (pl.col(c) if c in p.columns else pl.lit(None)).cast(t, strict=False).alias(c)
                    for c, t in _PARSED.items()
                ],
            )
            for p in parts
        ]
    )
    keep = df.drop(["first", *[c for c in _PARSED if c in df.columns]])
    return keep.join(parsed, on="_i", how="left", maintain_order="left")


def _first_line(body: pl.Series) -> pl.Series:
    body = body.fill_null("")
    if body.str.contains("\n", literal=True).any():
        return body.str.replace(r"\n(?s:.*)$", "")
    return body


def _router_message_fields(msg: pl.Expr) -> list[pl.Expr]:
    """Fields a router event message may name: status, rid, room, the PD pair."""
    return [
        msg.str.extract(r"\brid=['\"]?([\w.:-]+)", 1).alias("rid"),
        msg.str.extract(r"bootstrap_room[\"']?[=:] ?([0-9]+)", 1).alias("bootstrap_room"),
        pl.coalesce(
            msg.str.extract(r"\bprefill_url=\"?([^\s\",}]+)", 1),
            msg.str.extract(r"(?i)\bprefill (?:server|worker|instance)s? " + _URL, 1),
        ).alias("prefill_url"),
        pl.coalesce(
            msg.str.extract(r"\bdecode_url=\"?([^\s\",}]+)", 1),
            msg.str.extract(r"(?i)\bdecode (?:server|worker|instance)s? " + _URL, 1),
        ).alias("decode_url"),
        msg.str.extract(r"\bstatus=([0-9]{3})\b", 1).alias("msg_status"),
    ]


def _parse_router_text(df: pl.DataFrame) -> pl.DataFrame:
    if df.height == 0:
        return pl.DataFrame(schema={"_i": pl.UInt32})
    first = pl.col("first")
    head = first.str.extract_groups(_ROUTER_TEXT_HEAD)
    msg = first.str.replace(_ROUTER_TEXT_HEAD_ONLY, "")
    # sgl-router 0.1.x names itself in its header ("[Router (Rust)] …"), not in a target
    named = pl.col("message").str.starts_with("[Router (") if "message" in df.columns else pl.lit(False)
    df = df.with_columns(named.fill_null(False).alias("_named")).with_columns(
        head.alias("h"), msg.alias("message")
    )
    spans = pl.col("h").struct.field("spans")
    target = pl.col("h").struct.field("target")
    df = df.with_columns(*_router_message_fields(pl.col("message")))
    return df.with_columns(
        spans.str.extract(r"\bmethod=([A-Z]+)", 1).alias("method"),
        spans.str.extract(r"\buri=([^\s}]+)", 1).alias("path"),
        pl.coalesce(
            spans.str.extract(r"\bstatus_code=([0-9]+)", 1),
            spans.str.extract(r"\bstatus=([0-9]{3})\b", 1),  # sgl-router ≈v0.1.9: status=500 Internal …
            pl.col("msg_status"),
        ).alias("status"),
        _latency_ms(spans.str.extract(r"\blatency=(\"?[0-9.]+(?:ns|µs|us|ms|s)?\"?)", 1)).alias("latency_ms"),
        spans.str.extract(r"\brequest_id=\"?([^\"\s}]+)", 1).alias("request_id"),
        target.alias("target"),
        pl.when(target.is_not_null()).then(pl.lit(ROUTER_TEXT.name)).alias("format"),
        pl.when(target.str.contains(ROUTER_TARGET) | pl.col("_named"))
        .then(pl.lit("router"))
        .alias("content_role"),
        pl.when(target.is_not_null()).then(pl.col("message")).alias("message"),
    )


def _parse_router_json(df: pl.DataFrame) -> pl.DataFrame:
    if df.height == 0:
        return pl.DataFrame(schema={"_i": pl.UInt32})
    first = pl.col("first")

    def js(*paths: str) -> pl.Expr:
        return pl.coalesce([first.str.json_path_match(p) for p in paths])

    df = df.with_columns(js("$.message", "$.fields.message").alias("message"), js("$.target").alias("target"))
    df = df.with_columns(*_router_message_fields(pl.col("message")))
    return df.with_columns(
        js("$.span.method", "$.method").alias("method"),
        js("$.span.uri", "$.uri").alias("path"),
        pl.coalesce(js("$.span.status_code", "$.status_code", "$.status"), pl.col("msg_status")).alias(
            "status"
        ),
        _latency_ms(js("$.span.latency", "$.latency")).alias("latency_ms"),
        js("$.span.request_id", "$.request_id").alias("request_id"),
        pl.coalesce(js("$.prefill_url", "$.fields.prefill_url"), pl.col("prefill_url")).alias("prefill_url"),
        pl.coalesce(js("$.decode_url", "$.fields.decode_url"), pl.col("decode_url")).alias("decode_url"),
        pl.lit(ROUTER_JSON.name).alias("format"),
        pl.when(pl.col("target").str.contains(ROUTER_TARGET)).then(pl.lit("router")).alias("content_role"),
    )


def _parse_access(df: pl.DataFrame) -> pl.DataFrame:
    """uvicorn, then aiohttp on what is left, then mini_lb registration."""
    out = []
    for fmt in ACCESS_FORMATS:
        if df.height == 0:
            break
        g = df["first"].str.extract_groups(fmt.regex)
        key = "url" if fmt is MINI_LB else "method"
        ok = g.struct.field(key).is_not_null()
        hit = df.filter(ok).with_columns(g.filter(ok).alias("g"))
        df = df.filter(~ok)
        if hit.height == 0:
            continue
        f = pl.col("g").struct.field
        if fmt is MINI_LB:
            role = f("worker_role")
            hit = hit.with_columns(
                pl.when(role == "prefill").then(f("url")).alias("prefill_url"),
                pl.when(role == "decode").then(f("url")).alias("decode_url"),
                f("port").alias("bootstrap_port"),
                pl.col("first").alias("message"),
                pl.lit("router").alias("content_role"),
            )
        else:
            hit = hit.with_columns(
                f("method"), f("path"), f("status"), f("client"), pl.lit(None, pl.String).alias("message")
            )
        out.append(hit.with_columns(pl.lit(fmt.name).alias("format")).drop("g"))
    return pl.concat(out, how="diagonal_relaxed") if out else pl.DataFrame(schema={"_i": pl.UInt32})


def _latency_ms(value: pl.Expr) -> pl.Expr:
    """``"12.3ms"``/``"1.2s"``/``"850µs"``/``"900ns"`` (Rust Duration Debug) or a bare integer of
    microseconds (sgl-model-gateway) → milliseconds."""
    v = value.str.strip_chars('"')
    g = v.str.extract_groups(r"^(?P<num>[\d.]+)(?P<unit>ns|µs|us|ms|s)?$")
    num = g.struct.field("num").cast(pl.Float64, strict=False)
    unit = g.struct.field("unit")
    factor = (
        pl.when(unit == "s")
        .then(1000.0)
        .when(unit == "ms")
        .then(1.0)
        .when(unit.is_in(["µs", "us"]))
        .then(1e-3)
        .when(unit == "ns")
        .then(1e-6)
        .otherwise(1e-3)
    )
    return num * factor


def _base(ev: pl.DataFrame) -> pl.DataFrame:
    cols = [
        (pl.col(c).cast(t, strict=False) if c in ev.columns else pl.lit(None, t).alias(c))
        for c, t in _EV.items()
    ]
    df = ev.select(cols)
    return df.with_columns(
        pl.coalesce(pl.col("body"), pl.col("message"), pl.lit("")).alias("body"),
        pl.coalesce(pl.col("message"), pl.col("body"), pl.lit("")).alias("message"),
    )
