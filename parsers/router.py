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

UTC_US = pl.Datetime("us", "UTC")


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
    "uvicorn_access", "HTTP/",
    r'^(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+)?(?P<client>\S+) - "(?P<method>[A-Z]+) (?P<path>\S+)'
    r' (?P<proto>HTTP/[\d.]+)" (?P<status>\d{3})\b',
    "uvicorn (SGLang http_server since v0.1, 2024)",
    '[2025-11-05 16:38:04] INFO:     127.0.0.1:32770 - "GET /health HTTP/1.1" 200 OK',
)
AIOHTTP = R(
    "aiohttp_access", "HTTP/",
    r'^(?P<client>\S+) \[(?P<time>[^\]\n]+)\] "(?P<method>[A-Z]+) (?P<path>\S+) (?P<proto>HTTP/[\d.]+)"'
    r' (?P<status>\d{3}) (?P<bytes>\d+|-)',
    "aiohttp default access format (Mooncake bootstrap / mini_lb, ≈v0.4.5 2025-04)",
    '[2025-04-14 03:56:41] 10.0.3.5 [14/Apr/2025:03:56:41 +0000] "GET /metadata?key=mooncake%2Fram HTTP/1.1"'
    ' 404 185 "-" "-"',
)
MINI_LB = R(
    "mini_lb_register", "Registered ",
    r"^Registered (?P<worker_role>prefill|decode|encode) server: (?P<url>\S+?)(?: with bootstrap port: (?P<port>\S+))?$",
    "sglang.srt.disaggregation.mini_lb ≈v0.4.6 (2025-04)",
    "[2025-05-01 10:00:00] Registered prefill server: http://10.0.0.7:30000 with bootstrap port: 8998",
    "router",
)
ACCESS_FORMATS = [UVICORN, AIOHTTP, MINI_LB]

ROUTER_TEXT = R(
    "router_text", None,
    r"^(?:(?P<spans>[\w-]+\{[^\n]*?\}(?::[\w-]+(?:\{[^\n]*?\})?)*): )?(?P<target>[A-Za-z_][\w-]*(?:::[\w-]+)*): "
    r"(?:(?P<file>[^\s:]+\.rs):(?P<line>\d+): )?(?P<msg>[^\n]*)",
    "sgl-router (Rust, ≈v0.1.5 2025-06); sgl-model-gateway 'smg' targets ≈2026",
    '2026-02-26 13:00:13 ERROR http_request{method=POST uri=/v1/chat/completions version=HTTP/1.1 module="smg"'
    ' request_id="chatcmpl-Wly2zVLtUcyK1Vg13jmipvFZ" status_code=500 latency=1254651}: smg::response:'
    " /home/runner/work/sglang/sglang/src/middleware.rs:349: request failed with server error",
    "router",
)
ROUTER_JSON = R(
    "router_json", None,
    r'^\{[^\n]*"target": ?"',
    "sgl-router --log-json (tracing JSON, flattened event)",
    '{"timestamp":"2025-10-29 21:49:20","level":"INFO","message":"finished processing request",'
    '"target":"sglang_router_rs::response","filename":"src/middleware.rs","line_number":240,'
    '"span":{"latency":"1.5ms","method":"POST","request_id":"gnt-abc","status_code":200,"uri":"/generate",'
    '"version":"HTTP/1.1","name":"http_request"}}',
    "router",
)
ROUTER_FORMATS = [ROUTER_TEXT, ROUTER_JSON]

# Router messages naming a PD pair (the prefill/decode URL columns are filled from them).
PD_MESSAGES = [
    ("prefill_failed_abort_decode",
     "Prefill failed, aborting paired decode request decode_url=http://10.0.0.8:30001 prefill_url=http://10.0.0.7:30000",
     "≈2026 (smg)"),
    ("decode_error_status",
     "Decode server returned error status decode_url=http://10.99.91.49:30001 status=500 Internal Server Error",
     "≈v0.2 sgl-router (2025-09)"),
    ("decode_stream_error",
     "Stream error from decode server http://10.0.0.50:30000: error decoding response body", "sgl-router 2025"),
    ("pd_sent", "Sending concurrent requests prefill_url=http://10.0.0.7:30000 decode_url=http://10.0.0.8:30001",
     "smg events (DEBUG, INFO with OTEL)"),
]

ROUTER_TARGET = r"^(?:sglang_router_rs|sglang_router|sgl_router|smg|sgl_model_gateway)\b"
ROUTER_HEADER_LINE = (
    r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?Z?\s+(?:TRACE|DEBUG|INFO|WARN|ERROR)\s"
)

REQUESTS = {
    "event_id": pl.Int64,
    "ts": UTC_US,
    "host": pl.String,
    "role": pl.String,
    "pid": pl.Int32,
    "method": pl.String,
    "path": pl.String,
    "status": pl.Int32,
    "latency_ms": pl.Float64,
    "request_id": pl.String,
    "rid": pl.String,
    "bootstrap_room": pl.Int64,
    "prefill_url": pl.String,
    "decode_url": pl.String,
    "bootstrap_port": pl.Int32,
    "client": pl.String,
    "target": pl.String,
    "message": pl.String,
    "format": pl.String,
    "level": pl.String,
    "source": pl.String,
    "source_pos": pl.String,
}
_EV = {
    "event_id": pl.Int64,
    "ts": UTC_US,
    "host": pl.String,
    "role": pl.String,
    "pid": pl.Int32,
    "level": pl.String,
    "header": pl.String,
    "body": pl.String,
    "message": pl.String,
    "source": pl.String,
    "source_pos": pl.String,
}

_URL = r"(https?://[^\s,\"']+?)(?:[:,]?\s|[,\"']|$)"


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
    router lines and access lines; one row per row of ``ev``, in order."""
    req = _parse(_base(ev).with_row_index("_i"))
    path = pl.coalesce(pl.col("path"), pl.lit(""))
    is_req = (
        pl.col("method").is_not_null()
        | pl.col("path").is_not_null()
        | pl.col("prefill_url").is_not_null()
        | pl.col("decode_url").is_not_null()
        | pl.col("request_id").is_not_null()
    )
    health = path.str.contains(r"^/health") | pl.coalesce(pl.col("message"), pl.lit("")).str.contains(
        r"(?i)health check (?:failed|error)"
    )
    return req.select(
        pl.when(health).then(pl.lit("health")).when(is_req).then(pl.lit("request")).otherwise(pl.lit("other"))
        .alias("kind"),
        pl.col("content_role"),
    )


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
    base = _base(ev)
    if "kind" in ev.columns:
        base = base.filter(ev["kind"].is_in(["request", "health"]))
    if base.height == 0:
        return pl.DataFrame(schema=REQUESTS)
    out = _parse(base.with_row_index("_i")).filter(pl.col("format").is_not_null())
    own = pl.col("role")
    role = pl.when(own.is_null() | (own == "unknown")).then(pl.coalesce(pl.col("content_role"), pl.lit("unknown")))
    out = out.with_columns(role.otherwise(own).alias("role"))
    return out.select([pl.col(c).cast(t, strict=False) for c, t in REQUESTS.items()])


def _parse(df: pl.DataFrame) -> pl.DataFrame:
    """Every request field for every row of ``df`` (null where no format matched)."""
    router_rows = is_router_line(df)
    body = pl.col("body")
    first = body.str.extract(r"^([^\n]*)", 1)
    json_row = pl.lit(router_rows) & body.str.starts_with("{")
    text_row = pl.lit(router_rows) & ~body.str.starts_with("{")

    rt = first.str.extract_groups(ROUTER_TEXT.regex)
    spans = rt.struct.field("spans")
    msg_text = rt.struct.field("msg")

    def js(path: str) -> pl.Expr:
        return first.str.json_path_match(path)

    uv = first.str.extract_groups(UVICORN.regex)
    ah = first.str.extract_groups(AIOHTTP.regex)
    lb = first.str.extract_groups(MINI_LB.regex)

    is_text = text_row & rt.struct.field("target").is_not_null()
    is_json = json_row
    is_uv = ~pl.lit(router_rows) & uv.struct.field("method").is_not_null()
    is_ah = ~pl.lit(router_rows) & ah.struct.field("method").is_not_null()
    is_lb = ~pl.lit(router_rows) & lb.struct.field("url").is_not_null()

    message = pl.when(is_text).then(msg_text).when(is_json).then(
        pl.coalesce(js("$.message"), js("$.fields.message"))
    )
    span_method = spans.str.extract(r"\bmethod=([A-Z]+)", 1)
    span_uri = spans.str.extract(r"\buri=([^\s}]+)", 1)
    span_rid = spans.str.extract(r"\brequest_id=\"?([^\"\s}]+)", 1)
    span_status = spans.str.extract(r"\bstatus_code=(\d+)", 1)
    span_latency = spans.str.extract(r"\blatency=(\"?[\d.]+(?:ns|µs|us|ms|s)?\"?)", 1)
    msg = pl.coalesce(message, pl.lit(""))
    method = (
        pl.when(is_text).then(span_method)
        .when(is_json).then(pl.coalesce(js("$.span.method"), js("$.method")))
        .when(is_uv).then(uv.struct.field("method"))
        .when(is_ah).then(ah.struct.field("method"))
    )
    path = (
        pl.when(is_text).then(span_uri)
        .when(is_json).then(pl.coalesce(js("$.span.uri"), js("$.uri")))
        .when(is_uv).then(uv.struct.field("path"))
        .when(is_ah).then(ah.struct.field("path"))
    )
    status = (
        pl.when(is_text).then(pl.coalesce(span_status, msg.str.extract(r"\bstatus=(\d{3})\b", 1)))
        .when(is_json).then(
            pl.coalesce(js("$.span.status_code"), js("$.status_code"), js("$.status"), msg.str.extract(r"\bstatus=(\d{3})\b", 1))
        )
        .when(is_uv).then(uv.struct.field("status"))
        .when(is_ah).then(ah.struct.field("status"))
    )
    latency = pl.when(is_text).then(span_latency).when(is_json).then(pl.coalesce(js("$.span.latency"), js("$.latency")))
    request_id = pl.when(is_text).then(span_rid).when(is_json).then(
        pl.coalesce(js("$.span.request_id"), js("$.request_id"))
    )
    target = pl.when(is_text).then(rt.struct.field("target")).when(is_json).then(js("$.target"))
    router_msg = pl.when(is_text | is_json).then(msg)
    json_text = pl.when(is_json).then(first)
    prefill_url = pl.coalesce(
        router_msg.str.extract(r"\bprefill_url=\"?([^\s\",}]+)", 1),
        json_text.str.json_path_match("$.prefill_url"),
        router_msg.str.extract(r"(?i)\bprefill (?:server|worker|instance)s? " + _URL, 1),
        pl.when(is_lb & (lb.struct.field("worker_role") == "prefill")).then(lb.struct.field("url")),
    )
    decode_url = pl.coalesce(
        router_msg.str.extract(r"\bdecode_url=\"?([^\s\",}]+)", 1),
        json_text.str.json_path_match("$.decode_url"),
        router_msg.str.extract(r"(?i)\bdecode (?:server|worker|instance)s? " + _URL, 1),
        pl.when(is_lb & (lb.struct.field("worker_role") == "decode")).then(lb.struct.field("url")),
    )
    fmt = (
        pl.when(is_text).then(pl.lit(ROUTER_TEXT.name))
        .when(is_json).then(pl.lit(ROUTER_JSON.name))
        .when(is_uv).then(pl.lit(UVICORN.name))
        .when(is_ah).then(pl.lit(AIOHTTP.name))
        .when(is_lb).then(pl.lit(MINI_LB.name))
    )
    target_col = pl.coalesce(target, pl.lit(""))
    content_role = (
        pl.when((is_text | is_json) & target_col.str.contains(ROUTER_TARGET)).then(pl.lit("router"))
        .when(is_lb).then(pl.lit("router"))
    )
    return df.with_columns(
        method.alias("method"),
        path.alias("path"),
        status.cast(pl.Int32, strict=False).alias("status"),
        _latency_ms(latency).alias("latency_ms"),
        request_id.alias("request_id"),
        router_msg.str.extract(r"\brid=['\"]?([\w.:-]+)", 1).alias("rid"),
        router_msg.str.extract(r"bootstrap_room[\"']?[=:] ?(\d+)", 1).cast(pl.Int64, strict=False).alias("bootstrap_room"),
        prefill_url.alias("prefill_url"),
        decode_url.alias("decode_url"),
        pl.when(is_lb).then(lb.struct.field("port")).cast(pl.Int32, strict=False).alias("bootstrap_port"),
        pl.when(is_uv).then(uv.struct.field("client")).when(is_ah).then(ah.struct.field("client")).alias("client"),
        target.alias("target"),
        pl.when(is_lb).then(first).otherwise(router_msg).alias("message"),
        fmt.alias("format"),
        content_role.alias("content_role"),
    )


def _latency_ms(value: pl.Expr) -> pl.Expr:
    """``"12.3ms"``/``"1.2s"``/``"850µs"``/``"900ns"`` (Rust Duration Debug) or a bare integer of
    microseconds (sgl-model-gateway) → milliseconds."""
    v = value.str.strip_chars('"')
    g = v.str.extract_groups(r"^(?P<num>[\d.]+)(?P<unit>ns|µs|us|ms|s)?$")
    num = g.struct.field("num").cast(pl.Float64, strict=False)
    unit = g.struct.field("unit")
    factor = (
        pl.when(unit == "s").then(1000.0)
        .when(unit == "ms").then(1.0)
        .when(unit.is_in(["µs", "us"])).then(1e-3)
        .when(unit == "ns").then(1e-6)
        .otherwise(1e-3)
    )
    return num * factor


def _base(ev: pl.DataFrame) -> pl.DataFrame:
    cols = [
        (pl.col(c).cast(t, strict=False) if c in ev.columns else pl.lit(None, t).alias(c)) for c, t in _EV.items()
    ]
    df = ev.select(cols)
    return df.with_columns(
        pl.coalesce(pl.col("body"), pl.col("message"), pl.lit("")).alias("body"),
        pl.coalesce(pl.col("message"), pl.col("body"), pl.lit("")).alias("message"),
    )
