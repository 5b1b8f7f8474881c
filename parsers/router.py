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
- ``SPAN_FIELDS`` and ``MESSAGE_FIELDS``: the fields a router line's span and its message print (the
  PD pair of a request, its rid and room, its status), applied by ``fields.extract_fields``.

Span ``latency`` is printed as a Rust ``Duration`` (``"12.3ms"``, sgl-router 2025) or as an integer
number of microseconds (sgl-model-gateway 2026); both become ``latency_ms``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from logcorr.parsers.batch_lines import first_line
from logcorr.parsers.fields import extract_fields
from logcorr.parsers.prefix import HEADERS, ROUTER_LOCAL_HEADER, strip_groups
from logcorr.parsers.rules import FieldRule
from logcorr.store.schema import EVENTS
from logcorr.store.schema import REQUESTS as REQUESTS_TABLE


@dataclass(frozen=True)
class RequestFormat:
    """One named request-line format: ``regex`` (Rust syntax) over the record body (text after the
    header), its named groups ``requests`` columns (``_``: a part the parser combines; an access
    line's other groups are not kept); ``anchor`` a literal every match contains (None: recognised by
    its header instead); ``role`` the role the line implies, or None; ``yields`` the ``requests``
    columns the sample's row must hold (``tests/test_router_parser.py``)."""

    name: str
    anchor: str | None
    regex: str
    since: str
    sample: str
    role: str | None = None
    yields: dict = field(default_factory=dict, compare=False, hash=False)


R = RequestFormat
UVICORN = R(
    "uvicorn_access",
    "HTTP/",
    r'^(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+)?(?P<client>\S+) - "(?P<method>[A-Z]+) (?P<path>\S+)'
    r' (?P<proto>HTTP/[\d.]+)" (?P<status>\d{3})\b',
    "uvicorn (SGLang http_server since v0.1, 2024)",
    '[2025-11-05 16:38:04] INFO:     127.0.0.1:32770 - "GET /health HTTP/1.1" 200 OK',
    yields={"client": "127.0.0.1:32770", "method": "GET", "path": "/health", "status": 200},
)
AIOHTTP = R(
    "aiohttp_access",
    "HTTP/",
    r'^(?P<client>\S+) \[(?P<time>[^\]\n]+)\] "(?P<method>[A-Z]+) (?P<path>\S+) (?P<proto>HTTP/[\d.]+)"'
    r" (?P<status>\d{3}) (?P<bytes>\d+|-)",
    "aiohttp default access format (Mooncake bootstrap / mini_lb, ≈v0.4.5 2025-04)",
    '[2025-04-14 03:56:41] 10.0.3.5 [14/Apr/2025:03:56:41 +0000] "GET /metadata?key=mooncake%2Fram HTTP/1.1"'
    ' 404 185 "-" "-"',
    yields={"client": "10.0.3.5", "path": "/metadata?key=mooncake%2Fram", "status": 404},
)
MINI_LB = R(
    "mini_lb_register",
    "Registered ",
    r"^Registered (?P<_role>prefill|decode|encode) server: (?P<_url>\S+?)"
    r"(?: with bootstrap port: (?P<bootstrap_port>\S+))?(?:$|\n)",
    "sglang.srt.disaggregation.mini_lb ≈v0.4.6 (2025-04)",
    "[2025-05-01 10:00:00] Registered prefill server: http://10.0.0.7:30000 with bootstrap port: 8998",
    "router",
    yields={"prefill_url": "http://10.0.0.7:30000", "bootstrap_port": 8998, "role": "router"},
)
# An HTTP client's report of the answer it got: httpx's ``raise_for_status`` message, which any Python
# client of an engine or of the gateway prints (an RL rollout's retry loop, a benchmark). Not at the
# start of the body: the client's own logger words come first.
HTTPX_STATUS = R(
    "httpx_status_error",
    "' for url '",
    r"\b(?:Server|Client) error '(?P<status>[45]\d{2})\b[^'\n]*' for url "
    r"'(?P<target>(?:https?://[^/'\s]*)?(?P<path>/[^'\s]*)?)'",
    "httpx ≥0.23 Response.raise_for_status (2022)",
    "[2025-12-19 15:17:52] http_utils.py:153 - Error: Server error '503 Service Unavailable' for url"
    " 'http://10.0.13.1:3968/generate'",
    yields={"status": 503, "path": "/generate", "target": "http://10.0.13.1:3968/generate"},
)
ACCESS_FORMATS = [UVICORN, AIOHTTP, MINI_LB, HTTPX_STATUS]
# The answer's own words in a client's record of it (the server's JSON error "message", else the
# "response=…" a retry loop prints on the line joined to it: slime's http_utils, batch14/13:
# `retrying... (attempt 51/60, url=…, response={"error":{…,"message":"No available workers (all circuits
# open or unhealthy)"}})`): the requests row's message.
HTTPX_ANSWER = r'"message":\s*"(?P<answer>[^"\n]+)"|\bresponse=(?P<said>[^{\n][^\n]*?)\)?$'

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
    yields={"target": "smg::response", "message": "request failed with server error", "latency_ms": 1254.651},
)
ROUTER_JSON = R(
    "router_json",
    None,
    # Dynamo's frontend prints its http_request span's events flattened, without a target when its
    # tracing JSON leaves it out: "span_name":"http_request" (dynamo#3493: batch17/08)
    r'^\{[^\n]*"(?:target|span_name)": ?"',
    "sgl-router --log-json (tracing JSON, flattened event); Dynamo's frontend (DYN_LOGGING_JSONL)",
    '{"timestamp":"2025-10-29 21:49:20","level":"INFO","message":"finished processing request",'
    '"target":"sglang_router_rs::response","filename":"src/middleware.rs","line_number":240,'
    '"span":{"latency":"1.5ms","method":"POST","request_id":"gnt-abc","status_code":200,"uri":"/generate",'
    '"version":"HTTP/1.1","name":"http_request"}}',
    "router",
    yields={"method": "POST", "path": "/generate", "status": 200, "latency_ms": 1.5, "request_id": "gnt-abc"},
)
ROUTER_FORMATS = [ROUTER_TEXT, ROUTER_JSON]
# The router text head without the message (capturing a whole message is slow); the message is
# what a replace of the head leaves.
_ROUTER_TEXT_HEAD = ROUTER_TEXT.regex.replace("(?P<msg>[^\\n]*)", "")
_ROUTER_TEXT_HEAD_ONLY = strip_groups(_ROUTER_TEXT_HEAD)

F = FieldRule
# The span of a text line (a spans sample from sample_logs/router.log); status before the message's.
_SPANS = (
    'http_request{method=POST uri=/generate version=HTTP/1.1 request_id="gnt-Hw2QDuBtaYlH1sx4r6tE47KS"'
    ' status_code=200 latency="9.441684526s"}'
)
_SGL_ROUTER = "sgl-router ≈v0.1.5 (2025-06)"
SPAN_FIELDS = [
    F("method", r"\bmethod=(?P<method>[A-Z]+)", "spans", _SGL_ROUTER, _SPANS, {"method": "POST"}),
    F("uri", r"\buri=(?P<path>[^\s}]+)", "spans", _SGL_ROUTER, _SPANS, {"path": "/generate"}),
    F("status_code", r"\bstatus_code=(?P<status>[0-9]+)", "spans", _SGL_ROUTER, _SPANS, {"status": 200}),
    F(
        "status",
        r"\bstatus=(?P<status>[0-9]{3})\b",
        "spans",
        "sgl-router ≈v0.1.9",
        "http_request{method=POST uri=/v1/completions version=HTTP/1.1 request_id=cmpl-hvNcVSx9FaPb13dmSHtom1fF"
        " status=500 Internal Server Error latency=2.041450065s}",
        {"status": 500},
    ),
    F(
        "latency",
        r"\blatency=(?P<_latency>\"?[0-9.]+(?:ns|µs|us|ms|s)?\"?)",
        "spans",
        "sgl-router 2025 (Duration), sgl-model-gateway 2026 (µs)",
        _SPANS,
        {"_latency": '"9.441684526s"'},
    ),
    F(
        "request_id",
        r"\brequest_id=\"?(?P<request_id>[^\"\s}]+)",
        "spans",
        _SGL_ROUTER,
        _SPANS,
        {"request_id": "gnt-Hw2QDuBtaYlH1sx4r6tE47KS"},
    ),
]


def _url_after(role: str) -> str:
    # "Prefill server http://…: …", "Prefill worker: host:8000, …" (vllm_router_rs): the worker as printed
    # (a URL, or a host:port without a scheme, a redacted <PLACEHOLDER> too), without the punctuation after it
    return (
        rf"(?i)\b{role} (?:server|worker|instance)s?:? "
        rf"(?P<{role}_url>https?://[^\s,\"']+?|[^\s,\"'/:]+:\d+(?:/[^\s,\"']*?)?)(?:[:,]?\s|[,\"']|$)"
    )


# The router messages that name a request's PD pair, rid, room or status (these samples are also
# parsed as whole router lines by tests/test_router_parser.py).
MESSAGE_FIELDS = [
    F(
        "rid",
        r"\brid=['\"]?(?P<rid>[\w.:-]+)",
        "message",
        "smg ≈2026",
        "Request rid=ab12 aborted",
        {"rid": "ab12"},
    ),
    F(
        "bootstrap_room",
        r"bootstrap_room[\"']?[=:] ?(?P<bootstrap_room>[0-9]+)",
        "message",
        "smg ≈2026",
        "Injected bootstrap_room=4793981895866140836",
        {"bootstrap_room": 4793981895866140836},
    ),
    F(
        "prefill_url_key",
        r"\bprefill_url=\"?(?P<prefill_url>[^\s\",}]+)",
        "message",
        "smg events (DEBUG, INFO with OTEL)",
        "Sending concurrent requests prefill_url=http://10.0.0.7:30000 decode_url=http://10.0.0.8:30001",
        {"prefill_url": "http://10.0.0.7:30000", "decode_url": "http://10.0.0.8:30001"},
    ),
    F(
        "prefill_url_words",
        _url_after("prefill"),
        "message",
        "sgl-router 2025 (pd_router.rs); vllm_router_rs ≈2026-01 `Prefill worker: host:port, Decode worker: …`",
        "Prefill server http://10.0.0.7:30000 failed (non-critical): error sending request",
        {"prefill_url": "http://10.0.0.7:30000"},
    ),
    F(
        "decode_url_key",
        r"\bdecode_url=\"?(?P<decode_url>[^\s\",}]+)",
        "message",
        "≈2026 (smg)",
        "Prefill failed, aborting paired decode request decode_url=http://10.0.0.8:30001 prefill_url=http://10.0.0.7:30000",
        {"decode_url": "http://10.0.0.8:30001", "prefill_url": "http://10.0.0.7:30000"},
    ),
    F(
        "decode_url_words",
        _url_after("decode"),
        "message",
        "sgl-router 2025; vllm_router_rs ≈2026-01 (vllm_pd_router.rs)",
        "Stream error from decode server http://10.0.0.50:30000: error decoding response body",
        {"decode_url": "http://10.0.0.50:30000"},
    ),
    F(
        "status",
        r"\bstatus=(?P<status>[0-9]{3})\b",
        "message",
        "≈v0.2 sgl-router (2025-09)",
        "Decode server returned error status decode_url=http://10.99.91.49:30001 status=500 Internal Server Error",
        {"decode_url": "http://10.99.91.49:30001", "status": 500},
    ),
]

ROUTER_TARGET = r"^(?:sglang_router_rs|sglang_router|sgl_router|smg|sgl_model_gateway)\b"
ROUTER_HEADER_LINE = next(h.regex for h in HEADERS if h.name == "router")

# Every field a request line may yield (the ``requests`` columns from ``method`` to ``format``), and
# the role its content names.
REQUESTS = REQUESTS_TABLE.schema
_COLUMNS = list(REQUESTS)
PARSED_FIELDS = {c: REQUESTS[c] for c in _COLUMNS[_COLUMNS.index("method") : _COLUMNS.index("format") + 1]}
PARSED_FIELDS["content_role"] = pl.String
# The column of ``kinds``' output (carried on the classified records) that holds a router line's
# fields, parsed once: ``requests`` reads them there.
PARSED = "_request"
# The ``ev`` input this module reads: ``events`` columns plus the header split.
_EV = {
    **{c: EVENTS.schema[c] for c in ("event_id", "ts", "host", "role", "pid", "level")},
    "header": pl.String,
    "body": pl.String,
    **{c: EVENTS.schema[c] for c in ("message", "source", "source_pos")},
}
_HEALTH_ACCESS = (
    r'^(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+)?\S+ - "[A-Z]+ /health|^\S+ \[[^\]\n]+\] "[A-Z]+ /health'
)


def is_router_line(ev: pl.DataFrame) -> pl.Series:
    """Boolean Series, one per row of ``ev``: a Rust tracing line (router header) or a tracing JSON
    line (a ``"target"`` key). Uses ``ev.header`` when present, else the ``message`` text."""
    base = _base(ev)
    header = base["header"]
    # the text is searched only where no header was split off (a header already names its family)
    named = header.is_in(["router", ROUTER_LOCAL_HEADER]).fill_null(False)
    text_router = named | _on_rows(header.is_null(), base["message"], ROUTER_HEADER_LINE)
    json_router = _on_rows(
        base["body"].str.starts_with("{").fill_null(False), base["body"], ROUTER_JSON.regex
    )
    return (text_router | json_router).alias("router")


def _on_rows(rows: pl.Series, text: pl.Series, pattern: str) -> pl.Series:
    """``rows`` (Boolean, no null) and ``text`` matching ``pattern``: the pattern is searched on those
    rows only (most of a journal is neither JSON nor a router's line)."""
    if not rows.any():
        return rows
    at = rows.arg_true()
    return rows.clone().scatter(at, text.gather(at).str.contains(pattern).fill_null(False))


# A Rust tracing line's target that is a router crate's (sglang_router_rs::, vllm_router_rs::, smg::,
# sgl_model_gateway::), after any span (``http_request{…}: ``): the router's own line. Other programs
# print the same header (Dynamo's runtime and its engine handlers: ``dynamo_runtime::…``, ``engine.…:``).
OWN_TARGET = r"^(?:\S[^\n]*?\}: )?(?:\w*router\w*|smg|\w*model_gateway\w*)::"


def is_own_router_line(ev: pl.DataFrame, router: pl.Series | None = None) -> pl.Series:
    """Boolean Series, one per row of ``ev``: a router line (``is_router_line``, or ``router`` when the
    caller has it) that is the router's own: sgl-router 0.1.x's header, a tracing JSON line, or a Rust
    tracing line whose target is a router crate (``OWN_TARGET``). The other Rust tracing lines are
    another program's in the same format."""
    base = _base(ev)
    router = is_router_line(base) if router is None else router
    plain = ((base["header"] == ROUTER_LOCAL_HEADER) | base["body"].str.starts_with("{")).fill_null(False)
    own = plain | _on_rows(router & ~plain, base["body"], OWN_TARGET)
    return (router & own).alias("own_router")


def kinds(ev: pl.DataFrame) -> pl.DataFrame:
    """``kind`` (``request``, ``health`` or ``other``) and ``content_role`` (``router`` or null) for
    router lines and access lines; one row per row of ``ev``, in order. Access lines are told apart
    by a match test only (no field captured); router lines are parsed, and their fields kept in
    ``PARSED`` (a struct, null on the other rows) for ``requests`` to read instead of parsing again."""
    base = _base(ev)
    # the access formats are anchored at the start (httpx's on its one line): no need to cut lines
    first = base["body"]
    router_rows = is_router_line(base)
    access = first.str.contains(UVICORN.regex) | first.str.contains(AIOHTTP.regex)
    access = (access | first.str.contains(HTTPX_STATUS.regex)).fill_null(False)
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
        parsed = req.select(pl.struct(list(PARSED_FIELDS)).alias(PARSED))
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
        out = out.with_columns(out[c].scatter(pos, sub[c]) for c in out.columns)
        return out.with_columns(spread(parsed[PARSED], pos, out.height))
    return out.with_columns(pl.lit(None, pl.Struct(PARSED_FIELDS)).alias(PARSED))


def spread(values: pl.Series, pos: pl.Series, n: int) -> pl.Series:
    """``values`` (any type, a struct too) at the row numbers ``pos`` of a Series of ``n`` rows, null
    elsewhere."""
    at = pl.Series(dtype=pl.UInt32).clear(n).scatter(pos, pl.int_range(len(pos), dtype=pl.UInt32, eager=True))
    return values.gather(at)


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
        line), ``target`` (Rust target), ``message`` (router event text; the answer's own words a client's record of a 5xx prints), ``format`` (which format
        matched), ``level``, ``source``, ``source_pos``.

    Never raises on any text.
    """
    if "kind" in ev.columns:
        ev = ev.filter(pl.col("kind").is_in(["request", "health"]))
    base = _base(ev)
    if base.height == 0:
        return pl.DataFrame(schema=REQUESTS)
    base = base.with_row_index("_i")
    known = ev[PARSED].is_not_null() if PARSED in ev.columns else pl.repeat(False, ev.height, eager=True)
    if known.any():  # router lines ``kinds`` parsed already (at ingest, all of them): their fields
        done = pl.concat(
            [
                base.filter(known).drop(c for c in PARSED_FIELDS if c in base.columns),
                ev.filter(known)[PARSED].struct.unnest(),
            ],
            how="horizontal",
        )
        rest = [_parse(base.filter(~known))] if not known.all() else []
        out = pl.concat([done, *rest], how="diagonal_relaxed").sort("_i")
    else:
        out = _parse(base)
    out = out.filter(pl.col("format").is_not_null())
    own = pl.col("role")
    role = pl.when(own.is_null() | (own == "unknown")).then(
        pl.coalesce(pl.col("content_role"), pl.lit("unknown"))
    )
    out = out.with_columns(role.otherwise(own).alias("role"))
    return out.select([pl.col(c).cast(t, strict=False) for c, t in REQUESTS.items()])


def _parse(df: pl.DataFrame) -> pl.DataFrame:
    """Every request field (``PARSED_FIELDS``) for every row of ``df`` (which has ``_i``), in order; null
    where no format matched. Each format runs only on the rows that can be of it."""
    df = df.with_columns(first_line(df["body"]).alias("first"))
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
                    for c, t in PARSED_FIELDS.items()
                ],
            )
            for p in parts
        ]
    )
    keep = df.drop(["first", *[c for c in PARSED_FIELDS if c in df.columns]])
    return keep.join(parsed, on="_i", how="left", maintain_order="left")


def _fields(df: pl.DataFrame, rules: list[FieldRule] | list[RequestFormat]) -> pl.DataFrame:

    return extract_fields(df, rules, REQUESTS_TABLE)


def _parse_router_text(df: pl.DataFrame) -> pl.DataFrame:
    if df.height == 0:
        return pl.DataFrame(schema={"_i": pl.UInt32})
    first = pl.col("first")
    # sgl-router 0.1.x names itself in its header ("[Router (Rust)] …"), not in a target
    named = pl.col("message").str.starts_with("[Router (").fill_null(False)
    head = first.str.extract_groups(_ROUTER_TEXT_HEAD)
    df = df.with_columns(
        named.alias("_named"),
        head.struct.field("spans").alias("_spans"),
        head.struct.field("target").alias("target"),
        first.str.replace(_ROUTER_TEXT_HEAD_ONLY, "").alias("_message"),
    )
    target = pl.col("target")
    return _fields(df, SPAN_FIELDS + MESSAGE_FIELDS).with_columns(
        _latency_ms(pl.col("_latency")).alias("latency_ms"),
        pl.when(target.is_not_null()).then(pl.lit(ROUTER_TEXT.name)).alias("format"),
        pl.when(target.str.contains(ROUTER_TARGET) | pl.col("_named"))
        .then(pl.lit("router"))
        .alias("content_role"),
        pl.when(target.is_not_null()).then(pl.col("_message")).alias("message"),
    )


def _parse_router_json(df: pl.DataFrame) -> pl.DataFrame:
    if df.height == 0:
        return pl.DataFrame(schema={"_i": pl.UInt32})
    first = pl.col("first")

    def js(*paths: str) -> pl.Expr:
        return pl.coalesce([first.str.json_path_match(p) for p in paths])

    # the JSON keys first; the message's own words fill what they leave null
    df = df.with_columns(
        js("$.message", "$.fields.message").alias("_message"),
        js("$.target").alias("target"),
        js("$.span.method", "$.method").alias("method"),
        js("$.span.uri", "$.uri", "$.path").alias("path"),  # Dynamo: path
        js("$.span.status_code", "$.status_code", "$.status").alias("status"),
        _latency_ms(js("$.span.latency", "$.latency")).alias("latency_ms"),
        js("$.span.request_id", "$.request_id", "$.x_request_id").alias("request_id"),  # Dynamo: x_request_id
        js("$.prefill_url", "$.fields.prefill_url").alias("prefill_url"),
        js("$.decode_url", "$.fields.decode_url").alias("decode_url"),
    )
    return _fields(df, MESSAGE_FIELDS).with_columns(
        pl.col("_message").alias("message"),
        pl.lit(ROUTER_JSON.name).alias("format"),
        pl.when(pl.col("target").str.contains(ROUTER_TARGET)).then(pl.lit("router")).alias("content_role"),
    )


def _parse_access(df: pl.DataFrame) -> pl.DataFrame:
    """uvicorn, aiohttp and mini_lb registration lines (no line is of two of them), on their first line."""
    if df.height == 0:
        return pl.DataFrame(schema={"_i": pl.UInt32})
    first = pl.col("first")
    fmt = pl.coalesce([pl.when(first.str.contains(f.regex)).then(pl.lit(f.name)) for f in ACCESS_FORMATS])
    df = _fields(df.with_columns(first.alias("body"), fmt.alias("format")), ACCESS_FORMATS)
    registered = pl.col("format") == MINI_LB.name
    answer = pl.col("message").str.extract_groups(HTTPX_ANSWER)  # the whole record: the lines joined to it
    answer = pl.coalesce(answer.struct.field("answer"), answer.struct.field("said"))
    return df.with_columns(
        pl.when(pl.col("_role") == "prefill").then(pl.col("_url")).alias("prefill_url"),
        pl.when(pl.col("_role") == "decode").then(pl.col("_url")).alias("decode_url"),
        pl.when(registered)
        .then(first)
        .when(pl.col("format") == HTTPX_STATUS.name)
        .then(answer)
        .alias("message"),
        pl.when(registered).then(pl.lit("router")).alias("content_role"),
    )


def _latency_ms(value: pl.Expr) -> pl.Expr:
    """``"12.3ms"``/``"1.2s"``/``"850µs"``/``"900ns"`` (Rust Duration Debug; Dynamo's frontend writes
    ``"0 ms"``, a space before the unit) or a bare integer of microseconds (sgl-model-gateway) →
    milliseconds."""
    g = value.str.strip_chars('"').str.extract_groups(r"^(?P<num>[\d.]+) ?(?P<unit>ns|µs|us|ms|s)?$")
    factor = g.struct.field("unit").replace_strict(
        {"s": 1000.0, "ms": 1.0, "µs": 1e-3, "us": 1e-3, "ns": 1e-6}, default=1e-3, return_dtype=pl.Float64
    )
    return g.struct.field("num").cast(pl.Float64, strict=False) * factor


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
