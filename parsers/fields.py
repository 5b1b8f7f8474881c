"""The field engine the record parsers share: ``extract_fields`` applies ``FieldRule``/``LinePattern``
named groups (``parsers/rules.py``) to records, in the scopes of ``SCOPES``, typed by the table contract;
``base_columns`` gives every parser the same ``ev`` columns. Imports only the rules, SGLang's scope
regexes (``sglang_fields``) and the contract, so every parser (``sglang``, ``router``, ``request_log``)
can use it."""

from __future__ import annotations

import re

import polars as pl

from logcorr.parsers.rules import FieldRule, LinePattern
from logcorr.parsers.sglang_fields import (
    ESCAPED_FRAME,
    EXCEPTION_AFTER_FRAMES,
    FINISH_REASON,
    FIRST_LINE,
    FRAME_LINE,
    LAST_CHAINED,
    LOGGED_FRAMES_TEXT,
    META_INFO,
    REQUEST_OUT,
    REVERSED_FRAMES,
    TRACEBACK_TEXT,
    WRAPPED_LINE,
)
from logcorr.store.schema import EVENTS, RANK_COLUMNS

# Where a ``FieldRule`` searches, as expressions over ``body`` or over the scope they are cut from
# (``_<scope>``). ``extract_fields`` keeps each scope it needed as a column ``_<scope>`` (builders read
# them too).
SCOPES = {
    "first_line": pl.col("body").str.extract(FIRST_LINE, 1),
    "wrapped_line": pl.col("body").str.extract(WRAPPED_LINE, 1).str.replace_all(r"\n[ \t]+", " "),
    "traceback": pl.coalesce(
        pl.col("body").str.extract(TRACEBACK_TEXT, 1), pl.col("body").str.extract(LOGGED_FRAMES_TEXT, 1)
    )
    .str.strip_chars_end()
    # a traceback printed inside a string, its line ends escaped (`output.error='Traceback …\n  File "…", line
    # 93, in connection_lost\n    …'`: a benchmark client's error repr, sglang#6701, batch25/11): read with
    # them as the line ends they stand for, so that each frame ends at its own line
    .pipe(
        lambda tb: (
            pl.when(tb.str.contains(ESCAPED_FRAME))
            .then(tb.str.replace_all(r"\n", "\n", literal=True))
            .otherwise(tb)
        )
    ),
    # the final exception's line: in a chained traceback, after its last lead line only
    "exception_line": pl.col("_traceback")
    .str.replace(LAST_CHAINED, "")
    .str.extract(EXCEPTION_AFTER_FRAMES, 1),
    # the innermost frame: the last one printed, the first in a paste that runs newest first
    "last_frame": pl.col("_traceback")
    .str.extract_all(FRAME_LINE)
    .list.get(
        pl.when(pl.col("_traceback").str.contains(REVERSED_FRAMES)).then(0).otherwise(-1), null_on_oob=True
    ),
    "request_out": pl.col("body").str.extract(REQUEST_OUT, 1),
    "meta_info": pl.col("_request_out").str.extract(META_INFO, 1),
    "finish_reason": pl.col("_meta_info").str.extract(FINISH_REASON, 1),
}
_PARENT = {name: e.meta.root_names()[0][1:] for name, e in SCOPES.items() if e.meta.root_names() != ["body"]}
_GROUP = re.compile(r"\(\?P<(\w+)>")


def extract_fields(df: pl.DataFrame, rules: list[LinePattern | FieldRule], table) -> pl.DataFrame:
    """``df`` (with ``body``) with the columns the named groups of ``rules`` give, typed by ``table``'s
    contract (``logcorr.schema``): for each column, the first non-null value over the rules in order
    (one ``extract_groups`` per rule, in its ``scope``: ``body`` or one of ``SCOPES``; a
    ``LinePattern`` searches the body). A column ``df`` already has (a rank its header printed) keeps
    its value where it has one. A group ``<name>_ms`` (``<name>_ns``) fills ``<name>_s`` in seconds, a group
    ``exit_signal`` (a child killed by signal N) ``exit_code`` as -N (Python's word for it); a group starting
    with ``_`` is kept as text for the builder. Each scope the rules name is kept as a column
    ``_<scope>``. Never raises on any text; a value that does not parse as its type is null."""
    wanted = {getattr(rule, "scope", "body") for rule in rules}
    for name in reversed(SCOPES):  # a scope's parent comes before it
        if name in wanted and name in _PARENT:
            wanted.add(_PARENT[name])
    for name, expr in SCOPES.items():
        if name in wanted:
            df = df.with_columns(expr.alias(f"_{name}"))
    found = [(i, rule, groups) for i, rule in enumerate(rules) if (groups := _GROUP.findall(rule.regex))]
    df = df.with_columns(
        pl.col(_scope_column(rule)).str.extract_groups(rule.regex).alias(f"__rule{i}") for i, rule, _ in found
    )
    values: dict[str, list[pl.Expr]] = {}
    for i, rule, groups in found:
        for name in groups:
            value = pl.col(f"__rule{i}").struct.field(name)
            if getattr(rule, "nonempty", False):
                value = pl.when(value.str.len_bytes() > 0).then(value)
            column = name
            for unit, per_s in (("_ms", 1e3), ("_ns", 1e9)):
                if name.endswith(unit) and name not in table.schema and f"{name[:-3]}_s" in table.schema:
                    column, value = f"{name[:-3]}_s", value.cast(pl.Float64, strict=False) / per_s
            # a child killed by signal N: exit code -N
            if name == "exit_signal" and "exit_code" in table.schema:
                column, value = "exit_code", -value.cast(pl.Int64, strict=False)
            values.setdefault(column, []).append(_typed_field(value, table.schema.get(column, pl.String)))
    return df.with_columns(
        pl.coalesce([pl.col(c), *v] if c in df.columns else v).alias(c) for c, v in values.items()
    ).drop(f"__rule{i}" for i, _, _ in found)


def _scope_column(rule) -> str:
    scope = getattr(rule, "scope", "body")
    return "body" if scope == "body" else f"_{scope}"


def _typed_field(value: pl.Expr, dtype) -> pl.Expr:
    if dtype == pl.Boolean:
        return value.replace_strict({"True": True, "False": False}, default=None, return_dtype=pl.Boolean)
    return value if dtype == pl.String else value.cast(dtype, strict=False)


# The columns the parsers read from ``ev``; the first ones every table copies (DESIGN.md: provenance
# on every row).
EV_DEFAULTS = {
    **{
        name: EVENTS.schema[name]
        for name in ("event_id", "ts", "zoned", "host", "role", "pid", *RANK_COLUMNS)
    },
    **dict.fromkeys(
        ("boot_id", "level", "body", "message", "header", "kind", "source", "source_pos"), pl.String
    ),
}


def base_columns(ev: pl.DataFrame) -> pl.DataFrame:
    """``ev`` (one row per record, any columns) with every column the parsers read (``EV_DEFAULTS``,
    missing ones null, cast to their types), ``body``/``message`` never null (each falls back on the other)."""
    cols = [
        pl.col(name).cast(dtype, strict=False) if name in ev.columns else pl.lit(None, dtype).alias(name)
        for name, dtype in EV_DEFAULTS.items()
        if name in ev.columns or name != "kind"
    ]
    df = ev.select(cols)
    return df.with_columns(
        pl.coalesce(pl.col("body"), pl.col("message"), pl.lit("")).alias("body"),
        pl.coalesce(pl.col("message"), pl.col("body"), pl.lit("")).alias("message"),
    )
