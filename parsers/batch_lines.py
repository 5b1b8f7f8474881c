"""Batch lines (``Prefill batch`` / ``Decode batch``) split into typed fields: the keys as data
(``BATCH_FIELDS``, each with the SGLang version that introduced it) and the vectorised split.

Lines are grouped by their sequence of keys (their *shape*: one SGLang version and mode prints one
shape), one anchored regex is built per shape from its first line and tells the lines of that shape
among those left; their values are then cut at ``, `` in one pass (a shape whose values hold no list)
or captured by the regex, and only lines of a rare shape (beyond ``MAX_BATCH_SHAPES``) go through a
Python tokenizer. Known keys
become typed columns, every other key lands in ``extra`` (JSON text), so no field is ever lost.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import polars as pl

from logcorr.store.schema import BATCH_FIELD_COLUMNS

# ---------------------------------------------------------------------------------------------
# Batch fields: key as printed → (column, type). Type "int", "float", "pct" (a float printed with
# "%", kept in percent), or "bool". Any "<device> graph: True|False" key becomes graph + graph_kind.


@dataclass(frozen=True)
class BatchField:
    key: str
    column: str
    since: str

    @property
    def type(self) -> str:
        """How the value is read: ``pct`` (printed with ``%``), ``int`` or ``float``, from the contract."""
        if self.column.endswith("_pct"):
            return "pct"
        return "int" if BATCH_FIELD_COLUMNS[self.column].dtype == pl.Int64 else "float"


F = BatchField


BATCH_FIELDS = [
    F("#new-seq", "new_seq", "v0.1 (2024)"),
    F("#new-token", "new_token", "v0.1 (2024)"),
    F("#cached-token", "cached_token", "v0.1 (2024)"),
    F("cache hit rate", "cache_hit_rate_pct", "v0.1 (2024), gone ≈v0.4"),
    F("token usage", "token_usage", "v0.2 (2024)"),
    F("full token usage", "full_token_usage", "≈v0.4.9 (2025-07, SWA hybrid)"),
    F("swa token usage", "swa_token_usage", "≈v0.4.9 (2025-07, SWA hybrid)"),
    F("mamba usage", "mamba_usage", "≈v0.5.2 (2025-09, Mamba hybrid)"),
    F("#token", "token", "v0.2 (2024)"),
    F("#full token", "full_token", "≈v0.4.9 (2025-07)"),
    F("#swa token", "swa_token", "≈v0.4.9 (2025-07)"),
    F("mamba num", "mamba_num", "≈v0.5.2 (2025-09)"),
    F("#running-req", "running_req", "v0.1 (2024)"),
    F("#queue-req", "queue_req", "v0.1 (2024)"),
    F("#pending-token", "pending_token", "≈2026"),
    F("#prealloc-req", "prealloc_req", "≈v0.4.7 (2025-06)"),
    F("#inflight-req", "inflight_req", "≈v0.4.7 (2025-06)"),
    F("#bootstrap-req", "bootstrap_req", "≈2026"),
    F("#unbootstrapped-req", "unbootstrapped_req", "≈v0.4.6 (2025-04)"),
    F("#transferring-req", "transferring_req", "≈v0.4.6 (2025-04)"),
    F("#transfer-req", "transfer_req", "≈v0.4.7 (2025-06)"),
    F("#retracted-req", "retracted_req", "≈v0.4.9 (2025-07)"),
    F("#optimistic-req", "optimistic_req", "≈2026"),
    F("pre-allocated usage", "pre_allocated_usage", "≈v0.4.7 (2025-06)"),
    F("accept len", "accept_len", "≈v0.4.1 (2025-01, speculative)"),
    F("accept rate", "accept_rate", "≈v0.5.3 (2025-10)"),
    F("gen throughput (token/s)", "gen_throughput", "v0.2 (2024)"),
    F("input throughput (token/s)", "input_throughput", "≈v0.4.6 (2025-04)"),
    F("fwd occupancy", "fwd_occupancy_pct", "≈2026 (SGLANG_ENABLE_METRICS_DEVICE_TIMER)"),
]


BATCH_FIELD_BY_KEY = {f.key: f for f in BATCH_FIELDS}
GRAPH_KEY = re.compile(r"^(\w+) graph$")
MAX_BATCH_SHAPES = 32

# The head of a batch line, for Python (the rare shapes) and Rust (one regex per shape) alike.
_HEAD_RX = r"^(?P<_bt>Prefill|Decode) batch(?:\(mixed #running-req: (?P<_mixed>\d+)\))?(?: \[(?P<_iter>\d+)\])?[.,] ?"
_HEAD = re.compile(_HEAD_RX)
# A value: printable ASCII but ",". Lines with other characters in a value take the slow path.
_VALUE = r"[\x20-\x2b\x2d-\x7e]*"
_LIST_VALUE = r"\[[\x20-\x5c\x5e-\x7e]*\]"


def first_line(s: pl.Series) -> pl.Series:
    """The first line of each text of ``s`` (str; null → ``""``)."""
    s = s.fill_null("")
    if s.str.contains("\n", literal=True).any():
        s = s.str.replace(r"(?s)\n.*$", "")
    return s


def _split_items(rest: str) -> list[tuple[str, str | None]]:
    """``key: value`` items of a batch line after its head, split on ``, `` outside brackets."""
    items, depth, cur = [], 0, []
    i = 0
    while i < len(rest):
        ch = rest[i]
        if ch in "[({":
            depth += 1
        elif ch in "])}" and depth:
            depth -= 1
        if depth == 0 and rest.startswith(", ", i):
            items.append("".join(cur))
            cur = []
            i += 2
            continue
        cur.append(ch)
        i += 1
    items.append("".join(cur))
    out = []
    for j, raw in enumerate(items):
        item = raw.strip() if j == len(items) - 1 else raw
        if item in ("", ","):
            continue
        if j == len(items) - 1 and item.endswith(","):
            item = item[:-1].rstrip()
        key, sep, value = item.partition(": ")
        if not sep and item.endswith(":"):
            key, value, sep = item[:-1], "", ":"
        out.append((key, value if sep else None))
    return out


def _parse_batch_py(line: str) -> dict:
    """Slow path for one line of a rare shape: the same result as the vectorised path."""
    m = _HEAD.match(line)
    if not m:
        return {}
    row = m.groupdict()
    seen: dict[str, int] = {}
    for key, value in _split_items(line[m.end() :]):
        seen[key] = seen.get(key, 0) + 1
        name = key if seen[key] == 1 else f"{key}#{seen[key]}"
        row["k:" + name] = value
    return row


@dataclass(frozen=True)
class Shape:
    """The regexes of every batch line of one key sequence (``_shape``): ``whole`` matches a whole line
    of it (a fast yes/no), ``capture`` the same without the end anchor, a group per value; ``keys`` in
    order; ``fixed`` the head columns every such line shares. ``head`` is the literal head every line
    of the shape opens with when no value can hold ``, `` (no list value): then the values are cut at
    ``, `` (``_cut``) instead of captured, twice as fast; ``printed`` the keys as the line prints them
    (``keys`` numbers a repeated one: ``#token#2``)."""

    whole: str
    capture: str
    keys: list[str]
    fixed: dict[str, str]
    head: str | None
    printed: list[str]


def _shape(line: str) -> Shape | None:
    """The ``Shape`` of ``line`` (a head without ``(mixed …)`` or ``[N]`` is matched as the literal text
    it is: a fifth faster than capturing it); None when the line cannot be described this way (a value
    holding ``, `` outside brackets, an item without ``: ``)."""
    m = _HEAD.match(line)
    if not m:
        return None
    head, fixed, literal = _HEAD_RX, {}, None
    if m.group(2) is None and m.group(3) is None:
        head, fixed, literal = "^" + _escape(m.group(0)), {"_bt": m.group(1)}, m.group(0)
    items = _split_items(line[m.end() :])
    if not items or any(v is None for _, v in items):
        return None
    parts, keys, seen = [], [], {}
    for i, (key, value) in enumerate(items):  # (items' keys: as printed)
        if "\n" in key or ", " in key:
            return None
        if value.startswith("[") and value.endswith("]"):
            vpat, literal = _LIST_VALUE, None
        elif ", " in value or "\n" in value:
            return None
        else:
            vpat = _VALUE
        parts.append(f"{_escape(key)}: (?P<v{i}>{vpat})")
        seen[key] = seen.get(key, 0) + 1
        keys.append(key if seen[key] == 1 else f"{key}#{seen[key]}")
    capture = head + ", ".join(parts)
    return Shape(capture + r"(?:, ?|,)?$", capture, keys, fixed, literal, [k for k, _ in items])


def _cut(lines: pl.Series, shape: Shape) -> pl.Series:
    """The values of ``lines`` (each a whole line of ``shape``, which has a literal ``head``) as the
    struct ``extract_groups(shape.capture)`` gives (fields ``v0``…), by cutting at ``, ``: the
    shape's values hold no comma, so the n-th piece after the head is the n-th key, ``: `` and its
    value; the last may end with the line's trailing ``,``."""
    n = len(shape.keys)
    pieces = lines.str.slice(len(shape.head)).str.split_exact(", ", n - 1).struct.unnest()
    return pieces.select(
        (
            pl.col(f"field_{i}").str.slice(len(key) + 2).str.strip_suffix(",")
            if i == n - 1
            else pl.col(f"field_{i}").str.slice(len(key) + 2)
        ).alias(f"v{i}")
        for i, key in enumerate(shape.printed)
    ).to_struct("g")


def _escape(text: str) -> str:
    """A literal for the Rust regex engine: letters, digits, space and ``_`` as they are, anything
    else as ``\\x{…}`` (Python's ``re.escape`` emits escapes Rust may refuse)."""
    return "".join(c if c.isalnum() or c in " _" else f"\\x{{{ord(c):x}}}" for c in text)


def parse_batch_lines(lines: pl.Series) -> pl.DataFrame:
    """Vectorised batch-line parse of ``lines`` (str, one batch line each, without its header).

    Returns one row per line, in order: ``batch_type`` (``prefill``/``decode``; null when the line is
    not a batch line), ``forward_iter`` (Int64), one typed column per ``BATCH_FIELDS`` key found in
    any line (Int64 counts, Float64 ratios and throughputs, ``*_pct`` in percent), ``graph`` and
    ``graph_kind`` when a ``<device> graph`` key is printed, ``extra`` (JSON text of other keys and
    of values that do not parse) when any line has one. Never raises on any text."""
    n = lines.len()
    idx = pl.int_range(n, dtype=pl.UInt32, eager=True).alias("_i")
    todo = pl.DataFrame([idx, lines.alias("line")])
    groups = []
    for _ in range(MAX_BATCH_SHAPES):
        if todo.height == 0:
            break
        shape = _shape(todo["line"][0])
        if shape is None:
            break
        try:
            ok = todo["line"].str.contains(shape.whole).fill_null(False)
            if not ok[0]:
                break
            hit = todo.filter(ok)
            g = _cut(hit["line"], shape) if shape.head else hit["line"].str.extract_groups(shape.capture)
        except pl.exceptions.PolarsError:  # a key the regex engine cannot take: slow path
            break
        matched = (
            pl.DataFrame([hit["_i"], g])
            .unnest(g.name)
            .with_columns(pl.lit(v).alias(c) for c, v in shape.fixed.items())
        )
        renames = {f"v{i}": "k:" + k for i, k in enumerate(shape.keys)}
        groups.append(matched.rename(renames))
        todo = todo.filter(~ok)
    if todo.height:
        rows = [_parse_batch_py(line or "") for line in todo["line"].to_list()]
        slow = pl.DataFrame(rows, infer_schema_length=None) if any(rows) else pl.DataFrame()
        slow = slow.with_columns(todo["_i"]) if slow.width else pl.DataFrame([todo["_i"]])
        slow = slow.with_columns(pl.all().exclude("_i").cast(pl.String))
        groups.append(slow)
    if not groups:
        groups = [pl.DataFrame([idx])]
    # Typed per group (numbers move faster than their text); every line is in exactly one group, so
    # sorting on the row number restores the input order.
    typed = [
        _type_batch_fields(
            g.with_columns(
                pl.lit(None, pl.String).alias(c) for c in ("_bt", "_mixed", "_iter") if c not in g.columns
            )
        )
        for g in groups
    ]
    out = pl.concat(typed, how="diagonal_relaxed")
    return out.sort("_i").drop("_i") if len(typed) > 1 else out.drop("_i")


def _type_batch_fields(raw: pl.DataFrame) -> pl.DataFrame:
    """Raw ``k:<key>`` string columns → typed columns + ``extra`` (JSON text of unknown keys and of
    known keys whose value does not parse)."""
    key_cols = [c for c in raw.columns if c.startswith("k:")]
    raw = raw.with_columns([pl.col(c).str.strip_chars() for c in key_cols])
    typed_exprs, graph_vals, graph_kinds = [], [], []
    checks: dict[str, pl.Expr] = {}  # key column → "a value is there but did not parse"
    for col in key_cols:
        field, gm = BATCH_FIELD_BY_KEY.get(col[2:]), GRAPH_KEY.match(col[2:])
        if field is None and gm is None:
            checks[col] = pl.col(col).is_not_null()
            continue
        typed = field.column if field else "g:" + col
        typed_exprs.append(_typed(pl.col(col), field.type if field else "bool").alias(typed))
        checks[col] = pl.col(col).is_not_null() & (pl.col(col) != "") & pl.col(typed).is_null()
        if field is None:
            graph_vals.append(pl.col(typed))
            graph_kinds.append(pl.when(pl.col(col).is_not_null()).then(pl.lit(gm.group(1))))
    df = raw.with_columns(typed_exprs)
    # Only columns with something for extra build JSON (the common line has nothing for it).
    flagged = df.select([e.any().alias(c) for c, e in checks.items()]).row(0, named=True) if checks else {}
    entries = [pl.when(checks[c]).then(_json_entry(c[2:], pl.col(c))) for c, f in flagged.items() if f]
    if df["_mixed"].is_not_null().any():
        entries.append(_json_entry("mixed #running-req", pl.col("_mixed")))
    out = [
        pl.col("_i"),
        pl.col("_bt").str.to_lowercase().alias("batch_type"),
        pl.col("_iter").cast(pl.Int64, strict=False).alias("forward_iter"),
        *[pl.col(f.column) for f in BATCH_FIELDS if f.column in df.columns],
    ]
    if graph_vals:
        out.append(pl.coalesce(graph_vals).alias("graph"))
        out.append(pl.coalesce(graph_kinds).alias("graph_kind"))
    if entries:
        joined = pl.concat_list(entries).list.drop_nulls()
        out.append(
            pl.when(joined.list.len() > 0)
            .then(pl.lit("{") + joined.list.join(", ") + pl.lit("}"))
            .alias("extra")
        )
    return df.select(out)


def _typed(v: pl.Expr, kind: str) -> pl.Expr:
    if kind == "int":
        return v.cast(pl.Int64, strict=False)
    if kind == "float":
        return v.cast(pl.Float64, strict=False)
    if kind == "pct":
        return v.str.strip_suffix("%").str.strip_chars().cast(pl.Float64, strict=False)
    return v.replace_strict({"True": True, "False": False}, default=None, return_dtype=pl.Boolean)


def _json_entry(key: str, value: pl.Expr) -> pl.Expr:
    esc = (
        value.str.replace_all("\\", "\\\\", literal=True)
        .str.replace_all('"', '\\"', literal=True)
        .str.replace_all("\t", "\\t", literal=True)
        .str.replace_all("\r", "\\r", literal=True)
    )
    return pl.lit(json.dumps(key) + ': "') + esc + pl.lit('"')
