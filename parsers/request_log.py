"""``--log-requests`` lines (``Receive: obj=…``, ``Receive OpenAI:``, ``Finish: obj=…, out={…}`` and
their JSON form) → the ``request_log`` table, and the tool-call markup a returned text may leak. The
fields are data (``REQUEST_LOG_FIELDS``, ``REQUEST_LOG_JSON`` in ``parsers/sglang_fields.py``)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import polars as pl

from logcorr.parsers.fields import base_columns, extract_fields
from logcorr.parsers.prefix import METRICS_RECORD
from logcorr.parsers.sglang import recognise, rid_room
from logcorr.parsers.sglang_fields import PY_STR, REQUEST_LOG_FIELDS, REQUEST_LOG_JSON, REQUEST_METRICS_JSON
from logcorr.store.schema import REQUEST_LOG, ROOM_TYPE, conform


# Tool-call markup that, found in the text an engine returned, means the tool-call parser let it through
# as plain content (research notes F19: sglang#17593, #35736, #40236). The separator is DeepSeek's
# fullwidth ``｜`` (U+FF5C); clients and re-encoders also show it as ASCII ``|``, doubled, or ``‖``.
@dataclass(frozen=True)
class Markup:
    """One markup family: ``markup_leak`` value, a regex whose match is the token as printed, where it
    comes from, and a sample text that must match."""

    name: str
    regex: str
    since: str
    sample: str


_BAR = r"(?:｜｜|｜|\|\||\||‖)"
MARKUP_FAMILIES = [
    Markup(
        "deepseek_tool_calls",
        rf"<{_BAR}\s*tool[▁_ ](?:calls?[▁_ ](?:begin|end)|sep|outputs?[▁_ ](?:begin|end)){_BAR}>",
        "DeepSeek-V3/V3.1 chat template (function_call/deepseekv3_detector.py, deepseekv31_detector.py)",
        'Sure.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}',
    ),
    Markup(
        "deepseek_dsml",
        rf"</?{_BAR}\s*DSML\s*{_BAR}[A-Za-z_]*",
        "DeepSeek-V3.2 <｜DSML｜function_calls> and V4 <｜DSML｜tool_calls> (deepseekv32/v4 detectors)",
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">',
    ),
]
_MARKUP_RX = [(m.name, re.compile(m.regex)) for m in MARKUP_FAMILIES]


def find_markup(text: str | None) -> tuple[str | None, str | None]:
    """``(family, token as printed)`` of the leftmost tool-call markup token in ``text``
    (``MARKUP_FAMILIES``), or ``(None, None)``: no markup, or no text at all."""
    if not text:
        return None, None
    found = [(m.start(), name, m.group(0)) for name, rx in _MARKUP_RX if (m := rx.search(text))]
    return min(found, key=lambda f: f[0])[1:] if found else (None, None)


_CUT_PARTS = re.compile(rf"""^({PY_STR}) \.\.\. ({PY_STR})$""", re.S)
REQUEST_TEXT_CHARS = 400  # request_log.output_text keeps this many characters
_JSON_CUT = 2048  # SGLang's level-2 limit: a longer string is logged as head (1024) + "..." + tail (1024)


def _py_str(token: str | None) -> str | None:
    """A Python repr string token (or two joined by SGLang's `` ... `` cut) as the text it stands for."""
    if token is None:
        return None
    m = _CUT_PARTS.match(token)
    try:
        if m:
            return ast.literal_eval(m.group(1)) + " ... " + ast.literal_eval(m.group(2))
        return ast.literal_eval(token)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return token


def request_log(ev: pl.DataFrame) -> pl.DataFrame:
    """One row per ``--log-requests`` line (``REQUEST_LOG_PATTERNS``): what the engine received and
    what it returned.

    Formats (research notes, section 5): the text form ``Receive: obj=GenerateReqInput(…)``,
    ``Receive OpenAI: obj=…`` and ``Finish: obj=…[, headers={…}], out={'text': …, 'meta_info': {'id':
    rid, 'finish_reason': {'type', 'message', 'status_code'}, 'prompt_tokens', 'completion_tokens',
    'cached_tokens', 'e2e_latency', …}}`` (SGLang v0.3 onwards, tokenizer_manager.py, since 2025-12-24
    utils/request_logger.py), and the JSON form of ``--log-requests-format json`` (``{"event":
    "request.received" | "request.received.openai" | "request.finished", "rid", "obj", "out"}``, since
    2025-12-24), and the records of the request-metrics exporter (``--export-metrics-to-file``, files
    ``sglang-request-metrics-YYYYMMDD_HH.log``: ``{"request_parameters": "<the request as a JSON
    string>", <meta_info keys>}``, a finished request each, ``format`` ``metrics_export``). Fields are read by key, never by position: a prompt quoting ``'text': `` or
    ``, out={`` inside a string cannot move them. Level 0 and 1 log no text (``output_text`` null);
    level 2 cuts a string over 2048 characters to ``'head' ... 'tail'`` (JSON: ``head...tail``), kept
    as ``head ... tail`` with ``output_cut`` true; markup is looked for in head and tail apart, so the
    cut never makes one.

    Args:
        ev: the ``ev`` frame (see ``classify``); with a ``kind`` column only ``request_received`` and
            ``request_finished`` rows are read; ``rid``/``bootstrap_room`` columns, when present,
            are used as they are.

    Returns:
        ``REQUEST_LOG`` columns: provenance, ``event`` (``received``, ``received_openai``,
        ``finished``), ``rid``, ``bootstrap_room``, ``finish_type``, ``finish_message``,
        ``status_code`` (Int32), ``prompt_tokens``/``completion_tokens``/``cached_tokens`` (Int64),
        ``e2e_latency_s`` (seconds), ``output_text`` (cut to ``REQUEST_TEXT_CHARS``),
        ``output_chars`` (characters as logged), ``output_cut``, ``markup_leak`` (a
        ``MARKUP_FAMILIES`` name or null), ``markup`` (the token as printed), ``format`` (``text``,
        ``json`` or ``metrics_export``), ``level``, ``source``, ``source_pos``.
    """
    base, kinds = _request_rows(ev)
    if base.height == 0:
        return pl.DataFrame(schema=REQUEST_LOG.schema)
    if "rid" not in base.columns:
        base = pl.concat([base, rid_room(base, kinds)], how="horizontal")
    df = extract_fields(base, REQUEST_LOG_FIELDS, REQUEST_LOG)
    df = df.with_columns(pl.col("finish_type", "_id").str.strip_chars("'\""))
    return conform(_returned_text_columns(df.with_columns(_logged_fields(kinds))), REQUEST_LOG, strict=False)


def _request_rows(ev: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series]:
    """The ``--log-requests`` rows of ``ev`` (``base_columns``, with its ``rid``/``bootstrap_room``
    when it has them) and their kinds (``request_received``/``request_finished``)."""
    if "kind" in ev.columns:
        sub = ev.filter(pl.col("kind").is_in(["request_received", "request_finished"]))
        base = base_columns(sub)
        kinds = sub["kind"]
        if {"rid", "bootstrap_room"} <= set(sub.columns):
            base = base.with_columns(
                sub["rid"].cast(pl.String).alias("rid"),
                sub["bootstrap_room"].cast(ROOM_TYPE).alias("bootstrap_room"),
            )
    else:
        base = base_columns(ev)
        kinds = recognise(base)["kind"] if base.height else pl.Series("kind", [], pl.String)
        keep = kinds.is_in(["request_received", "request_finished"]).fill_null(False)
        base, kinds = base.filter(keep), kinds.filter(keep)
    return base, kinds


def _logged_fields(kinds: pl.Series) -> list[pl.Expr]:
    """``event``, ``format`` and ``rid`` of each request line, and for a JSON line the fields
    ``REQUEST_LOG_FIELDS`` read from the text form, by their ``REQUEST_LOG_JSON`` paths."""
    body = pl.col("body")
    is_json = body.str.starts_with("{")
    exported = body.str.starts_with(METRICS_RECORD)
    json_event = body.str.json_path_match("$.event")
    event = (
        pl.when(exported)
        .then(pl.lit("finished"))
        .when(is_json)
        .then(json_event.replace_strict(_JSON_EVENTS, default=None, return_dtype=pl.String))
        .when(body.str.contains("Receive OpenAI: obj=", literal=True))
        .then(pl.lit("received_openai"))
        .when(pl.lit(kinds) == "request_received")
        .then(pl.lit("received"))
        .otherwise(pl.lit("finished"))
    )
    return [
        event.alias("event"),
        pl.when(exported)
        .then(pl.lit("metrics_export"))
        .when(is_json)
        .then(pl.lit("json"))
        .otherwise(pl.lit("text"))
        .alias("format"),
        *[
            pl.when(is_json)
            .then(
                pl.when(exported)
                .then(
                    body.str.json_path_match(REQUEST_METRICS_JSON[c]) if c in REQUEST_METRICS_JSON else None
                )
                .otherwise(body.str.json_path_match(path))
                .cast(REQUEST_LOG.schema.get(c, pl.String), strict=False)
            )
            .otherwise(pl.col(c))
            .alias(c)
            for c, path in REQUEST_LOG_JSON.items()
        ],
        pl.coalesce(
            pl.when(is_json).then(body.str.json_path_match("$.rid")),
            pl.col("rid"),
            pl.when(~is_json).then(pl.col("_id")),
        ).alias("rid"),
    ]


def _returned_text_columns(df: pl.DataFrame) -> pl.DataFrame:
    """``finish_message`` and ``_TEXT_COLUMNS`` from the raw ``_message``/``_text`` of the finished
    requests (a few rows per chunk: read in Python, as repr or JSON strings)."""
    df = df.with_columns(
        pl.when(pl.col("event") != "finished").then(None).otherwise(pl.col("_text")).alias("_text")
    )
    texts, messages, formats = df["_text"].to_list(), df["_message"].to_list(), df["format"].to_list()
    rows = [_returned_text(t, f) for t, f in zip(texts, formats, strict=True)]
    msgs = [_py_str(m) if f == "text" else m for m, f in zip(messages, formats, strict=True)]
    return df.with_columns(
        pl.Series("finish_message", msgs, pl.String),
        *[
            pl.Series(name, [r[i] for r in rows], dtype)
            for i, (name, dtype) in enumerate(_TEXT_COLUMNS.items())
        ],
    )


_JSON_EVENTS = {
    "request.received": "received",
    "request.received.openai": "received_openai",
    "request.finished": "finished",
}
_TEXT_COLUMNS = {
    "output_text": pl.String,
    "output_chars": pl.Int64,
    "output_cut": pl.Boolean,
    "markup_leak": pl.String,
    "markup": pl.String,
}


def _returned_text(raw: str | None, fmt: str) -> tuple:
    """``_TEXT_COLUMNS`` of one returned text as the line holds it (a repr token or a JSON string)."""
    if raw is None:
        return None, None, None, None, None
    if fmt == "text":
        m = _CUT_PARTS.match(raw)
        parts = [_py_str(m.group(1)), _py_str(m.group(2))] if m else [_py_str(raw)]
    else:
        half = _JSON_CUT // 2
        cut = len(raw) == _JSON_CUT + 3 and raw[half : half + 3] == "..."
        parts = [raw[:half], raw[half + 3 :]] if cut else [raw]
    found = [find_markup(p) for p in parts]
    family, token = next(((f, t) for f, t in found if f), (None, None))
    text = " ... ".join(p or "" for p in parts)
    chars = sum(len(p or "") for p in parts)
    return text[:REQUEST_TEXT_CHARS], chars, len(parts) == 2, family, token
