"""Plain text → logical records: the ``ev`` frame the line parsers take, built from one text.

``records_from_text`` is what ``logcorr ingest`` uses for a plain log file, a paste from a bug report
or a ``docker compose logs`` capture (journal inputs arrive already split into entries; they go
through the same joining rules in the reader). It is also how the tests build their inputs.

Rules, in order (each is vectorised over the lines; nothing loops over lines in Python):

1. Split on ``\\n`` (a trailing ``\\r`` is dropped). Line numbers are 1-based and count every line
   of the input, so ``source_pos`` points at the real line even after comment lines are dropped.
2. Drop comment lines: lines starting with ``comment_prefix`` (``#`` by default; pass ``None`` to
   keep them). The case files of ``shared/cases`` use ``#`` for notes.
3. Remove ANSI colour escapes (the router and ``docker compose`` colour their output by default).
4. Strip a ``docker compose logs`` prefix (``sglang-1  | ``, ``router_1 | ``) when at least half of
   the non-blank lines carry one; the prefix is removed only from the lines that have it.
5. Join: a line for which :func:`logcorr.parsers.prefix.is_record_start` is false continues the
   record before it (tracebacks, embedded py-spy dumps, C++ stacks). Lines before the first record
   start form one record of their own (an excerpt that starts mid-dump). Blank lines at the end of a
   record are dropped, so blank lines between records never become records; blank lines inside a
   record (a py-spy dump has some) are kept.
6. :func:`logcorr.parsers.prefix.split_prefix` reads the header of each record.
"""

from __future__ import annotations

import polars as pl

from logcorr.parsers.prefix import ANSI_ESCAPE, is_record_start, split_prefix
from logcorr.schema import PROVENANCE, RANKS, UTC_US

# docker compose v2 ("name-1  | ") and v1 ("name_1  | "), also a custom container_name ("sglang  | ").
COMPOSE_PREFIX = r"^[A-Za-z0-9][\w.-]*\s+\| ?"

RECORD_COLUMNS = {
    "event_id": pl.Int64,
    "ts": UTC_US,
    "log_ts": pl.Datetime("us"),
    "host": pl.String,
    "role": pl.String,
    "pid": pl.Int32,
    **RANKS,
    "level": pl.String,
    "header": pl.String,
    "body": pl.String,
    "message": pl.String,
    "n_lines": pl.Int32,
    **PROVENANCE,
}


def records_from_text(text: str, source: str, *, comment_prefix: str | None = "#") -> pl.DataFrame:
    """Split one log text into logical records, shaped as the ``ev`` input of the line parsers.

    Args:
        text: the whole text (``str``; decode bytes with ``errors="replace"`` first).
        source: provenance written into every row (a path, or a name for a paste).
        comment_prefix: lines starting with this are notes, not log, and are dropped; ``None``
            keeps every line.

    Returns:
        One row per logical record, in input order, with the columns of ``RECORD_COLUMNS``:
        ``event_id`` (Int64, 0-based record number within this text), ``ts`` (``Datetime[us, UTC]``:
        the printed time taken as UTC, since a plain file carries no zone; null when the record has
        no time), ``log_ts`` (the printed time, no zone), ``host`` (null), ``role`` (``"unknown"``),
        ``pid`` (null), ``dp_rank, pp_rank, tp_rank, ep_rank`` (Int16 from the rank prefix),
        ``level``, ``header`` (which header format matched, see ``split_prefix``), ``body`` (record
        text after the header), ``message`` (the whole record text, lines joined with ``\\n``),
        ``n_lines`` (Int32, physical lines joined), ``source`` and ``source_pos`` (str: 1-based line
        number of the record's first line).

    Never raises on any text; an empty text gives an empty frame with these columns.

    Example:
        >>> records_from_text("[2025-08-31 07:26:45 TP1] Prefill batch. #new-seq: 1", "x.log")["tp_rank"][0]
        1
    """
    lines = (
        pl.DataFrame({"line": [text]}, schema={"line": pl.String})
        .select(pl.col("line").str.split("\n"))
        .explode("line")
        .with_row_index("line_no", offset=1)
        .with_columns(pl.col("line").str.strip_suffix("\r"))
    )
    if comment_prefix:
        lines = lines.filter(~pl.col("line").str.starts_with(comment_prefix))
    lines = lines.with_columns(pl.col("line").str.replace_all(ANSI_ESCAPE, ""))
    lines = _strip_compose_prefix(lines)
    blank = pl.col("line").str.strip_chars().str.len_bytes() == 0
    lines = lines.with_columns(
        blank.alias("blank"),
        (is_record_start(pl.col("line")) & ~blank).cum_sum().alias("rec"),
    )
    # Drop trailing blank lines of each record (and a text of only blank lines).
    last_non_blank = pl.when(~pl.col("blank")).then(pl.col("line_no")).max().over("rec")
    lines = lines.filter(pl.col("line_no") <= last_non_blank)
    records = (
        lines.group_by("rec", maintain_order=True)
        .agg(
            pl.col("line").str.join("\n").alias("message"),
            pl.col("line_no").first().cast(pl.String).alias("source_pos"),
            pl.len().cast(pl.Int32).alias("n_lines"),
        )
        .drop("rec")
    )
    head = split_prefix(records["message"])
    out = pl.concat([records, head], how="horizontal").with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("event_id"),
        pl.col("log_ts").dt.replace_time_zone("UTC").alias("ts"),
        pl.lit(None, pl.String).alias("host"),
        pl.lit("unknown").alias("role"),
        pl.lit(None, pl.Int32).alias("pid"),
        pl.lit(source).alias("source"),
    )
    return out.select([pl.col(name).cast(dtype) for name, dtype in RECORD_COLUMNS.items()])


def _strip_compose_prefix(lines: pl.DataFrame) -> pl.DataFrame:
    non_blank = lines.filter(pl.col("line").str.strip_chars().str.len_bytes() > 0)
    if non_blank.height == 0:
        return lines
    share = non_blank.select(pl.col("line").str.contains(COMPOSE_PREFIX).mean()).item()
    if not share or share < 0.5:
        return lines
    return lines.with_columns(pl.col("line").str.replace(COMPOSE_PREFIX, ""))
