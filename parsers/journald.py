"""journald's own formats → records: the export stream, ``-o json`` lines, ``-o short-*`` lines.

Formats: https://systemd.io/JOURNAL_EXPORT_FORMATS/ (export and json) and journalctl(1) ("short-iso",
"short-iso-precise", "short-unix"); checked against systemd 252. All functions take text or bytes
already in memory (one bounded chunk) and return a polars DataFrame with the columns of
``logcorr.schema.RECORD`` plus ``stream`` (the key of one process's output stream, for re-joining
lines), ``cmdline`` and ``comm`` (for role detection), and ``entry_error`` (why an entry was only
partly read, or null). Per-field work runs on whole columns; Python touches only the rare
binary-safe fields and non-UTF-8 byte arrays.
"""

from __future__ import annotations

import json
import re
import threading

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from logcorr.store.schema import RECORD, UTC_US

ANSI = r"\x1b\[[0-9;:?]*[ -/]*[@-~]"
# Fields read from journal entries; journalctl --output-fields also always prints the __ fields.
FIELDS = (
    "MESSAGE", "_PID", "_SYSTEMD_UNIT", "UNIT", "_HOSTNAME", "_COMM", "SYSLOG_IDENTIFIER", "_CMDLINE",
    "COREDUMP_UNIT", "OBJECT_SYSTEMD_UNIT",
)  # fmt: skip
# __LOGCORR_PIECE: logcorr's reader marks an entry holding a piece of an over-long field (its value
# is the entry's error; journald writes no such field)
_META = ("__CURSOR", "__REALTIME_TIMESTAMP", "_BOOT_ID", "__LOGCORR_PIECE")
BINARY_FIELD = re.compile(rb"(?m)^([A-Za-z0-9_]+)\n")
# Where the entry after a damaged binary field starts: a blank line, then a text field (journald's
# field names are upper case).
_NEXT_ENTRY = re.compile(rb"\n\n(?=[A-Z0-9_]+=)")
# journald stores no field larger than this (DATA_SIZE_MAX, 768 MiB): a longer length prefix is damage.
MAX_FIELD_BYTES = 768 << 20
_FIELD_NAME = re.compile(rb"[A-Za-z0-9_]+")

# ``ts_zoneless``: the reader's ``ts`` is a time its envelope printed without a zone (a launcher's
# ``[YYYY-MM-DD HH:MM:SS] [/bin/sh@<0,0>]:``), taken as printed, not UTC (``logcorr.clocks.zoneless``).
RECORD_COLUMNS = {
    **RECORD,
    **dict.fromkeys(("stream", "cmdline", "comm", "entry_error"), pl.String),
    "ts_zoneless": pl.Boolean,
    # a time an envelope prints without a year that none of its chunk lends (`-o short`'s `Dec 19 02:07:16`),
    # as MM-DD HH:MM:SS[.f]: the record's printed time where its own header prints none; null: none
    "envelope_time": pl.String,
    # input lines a reader already joined into the entry (a short capture's indented lines); null: one
    "entry_lines": pl.Int32,
}


class CutInsideBinaryField(ValueError):
    """``parse_export(…, whole=True)``: the data ends inside a binary-safe field's value."""


# A realtime timestamp (µs since the Unix epoch) is read as a time when it lies in [1970, 10000):
# before, it would be read as 1914 (a negative value); after, Python's datetime cannot hold it.
REALTIME_MAX_US = 253_402_300_800_000_000


def realtime(text: pl.Expr) -> pl.Expr:
    """``__REALTIME_TIMESTAMP`` text → UTC time, null where it is no number or out of range."""
    us = text.cast(pl.Int64, strict=False)
    return pl.when((us >= 0) & (us < REALTIME_MAX_US)).then(us).cast(UTC_US)


def realtime_error(text: pl.Expr) -> pl.Expr:
    """Why ``realtime(text)`` is null for a value that is there: ``entry_error`` text, else null."""
    return pl.when(text.is_not_null() & realtime(text).is_null()).then(
        pl.format("__REALTIME_TIMESTAMP={} is not a time from 1970 to 9999: kept without a time", text)
    )


def clean_text(expr: pl.Expr) -> pl.Expr:
    """Remove ANSI colour/cursor escapes and carriage returns before newlines from a text column."""
    cleaned = expr.str.replace_all(ANSI, "").str.replace_all("\r\n", "\n").str.strip_suffix("\r")
    return pl.when(expr.str.contains("[\x1b\r]")).then(cleaned).otherwise(expr)


def _decode(value: bytes) -> str:
    return value.decode("utf-8", errors="replace")


def record_columns(**columns: pl.Expr) -> list[pl.Expr]:
    """Select expressions for the ``RECORD_COLUMNS`` in their order from ``columns`` (column name →
    expression; a column not given is null), then the other ``columns`` given."""
    nulls = {c: pl.lit(None, t) for c, t in RECORD_COLUMNS.items()}
    return [e.alias(c) for c, e in {**nulls, **columns}.items()]


def split_lines(data: bytes) -> pl.Series:
    """The lines of ``data`` as a String Series: UTF-8 with invalid bytes replaced (U+FFFD), blank
    lines as ``""``, ``\r\n`` read as a line end, a final newline ending the last line rather than
    opening an empty one. Polars' CSV reader does the splitting (Rust, both cores, no Python object
    per line); data holding a NUL byte (its separator) or invalid UTF-8 is split the slower way."""
    lines = _split_utf8(data)
    if lines is not None:
        return lines
    text = _decode(data).removesuffix("\n")  # invalid UTF-8 replaced exactly as Python's decoder does
    return pl.Series("line", [text]).str.split("\n").explode().str.strip_suffix("\r")


def _split_utf8(data: bytes) -> pl.Series | None:
    """``split_lines`` by the CSV reader alone; None when ``data`` holds a NUL or invalid UTF-8."""
    if not data:
        return pl.Series("line", [], pl.String)
    if b"\x00" in data:
        return None
    # a newline first where the reader would take the first line for something else: it unpacks data that
    # starts like gzip, zlib or zstd (a line "x^2") and drops a byte order mark; it reads bytes only
    lead = not isinstance(data, bytes) or data[:1] in (b"\x1f", b"x", b"(", b"\xef")
    try:
        frame = pl.read_csv(
            b"\n" + data if lead else data,
            has_header=False,
            separator="\x00",
            quote_char=None,
            schema={"line": pl.String},
        )
    except (pl.exceptions.PolarsError, OSError):
        return None
    return (frame["line"].slice(1) if lead else frame["line"]).fill_null("")


def _split_export(
    data: bytes, whole: bool = False
) -> tuple[pl.Series, list[tuple[int, str, bytes]], str | None]:
    """Split an export chunk that holds binary-safe fields (``NAME\\n<u64 le length><bytes>\\n``),
    NUL bytes or invalid UTF-8 into its text lines and its binary fields, with one split by Arrow.

    Returns the text lines (a String Series, invalid UTF-8 replaced), ``(entry_index, name, value)``
    per binary field, and an error text when a length prefix runs past the end of the data (a cut
    capture; the lines before that field are kept). A length prefix that disagrees with the data
    (its value not followed by a newline, or running past the data while another entry follows)
    is damage, not a cut: the value is taken up to the next entry (a blank line, then a field
    name; with ``whole``, a value running past the data is taken as cut, for the caller to
    read on), the field's entry kept with an error naming it (``(entry_index, "error", text)`` among
    the fields), and the entries after it read as usual. Python looks only at the lines holding
    no ``=`` (binary field names, or bytes inside their values): a few per chunk.
    """
    if data.endswith(b"\n"):
        data = data[:-1]  # a final newline ends the last line rather than opening an empty one
    lines = pc.split_pattern(pa.array([data], pa.large_binary()), b"\n").flatten()
    sizes = pl.Series(pc.binary_length(lines)).cast(pl.Int64)
    starts = (sizes + 1).cum_sum() - (sizes + 1)
    named = pc.and_(pc.greater(pc.binary_length(lines), 0), pc.invert(pc.match_substring(lines, "=")))
    fields, dropped, error, resume = [], [], None, 0
    for i in pc.indices_nonzero(named).to_pylist():
        off = starts[i]
        if off < resume or not (m := BINARY_FIELD.match(data, off)):
            continue  # inside a value already taken, or not a field name
        size_at = m.end()
        name = m.group(1).decode()
        if size_at + 8 > len(data):
            error = f"binary field {name} cut short"
        else:
            size = int.from_bytes(data[size_at : size_at + 8], "little")
            end = size_at + 8 + size
            if end > len(data) or (end < len(data) and data[end : end + 1] != b"\n"):
                nxt = _NEXT_ENTRY.search(data, size_at + 8)
                if end > len(data) and size <= MAX_FIELD_BYTES and (nxt is None or whole):
                    error = f"binary field {name} of {size:,} bytes cut short"
                else:  # the length is wrong: the value runs to the next entry (or the data's end)
                    end = nxt.start() if nxt else len(data)
                    note = (
                        f"binary field {name}: its length prefix says {size:,} bytes but {end - size_at - 8:,} "
                        "follow before the next entry (damaged); kept as they are"
                    )
                    fields.append((i, "\x00error", note.encode()))
        if error:
            dropped.extend(range(i, len(sizes)))  # everything from the broken field on is unreadable
            break
        last = starts.search_sorted(end, side="right") - 1  # the line the value's newline ends
        dropped.extend(range(i, last + 1))
        fields.append((i, name, data[size_at + 8 : end]))
        resume = end + 1
    keep = ~pl.int_range(len(sizes), eager=True).is_in(pl.Series(dropped, dtype=pl.Int64).implode())
    kept = pl.Series(lines).filter(keep)
    try:
        text = kept.cast(pl.String)
    except pl.exceptions.ComputeError:  # invalid UTF-8 in a text line (journald writes none)
        text = pl.Series([_decode(v) for v in kept.to_list()], dtype=pl.String)
    if fields:  # the entry of a binary field: the blank lines kept before it
        blank_before = ((sizes == 0) & keep).cum_sum()
        fields = [(int(blank_before[i]), name, value) for i, name, value in fields]
    return text.alias("line"), fields, error


def _binary_field_at(data: bytes, nul: int, lo: int) -> tuple[int, str, int, bytes] | None:
    """The binary-safe field whose length prefix holds the NUL byte at ``nul`` (its name line starts
    at or after ``lo``): ``(start of its name line, name, index after its value's newline, value)``,
    or None when that NUL is not in a well-formed, complete binary field."""
    for q in range(max(lo, nul - 8), nul):  # q: the newline ending the name line
        if data[q] != 0x0A:
            continue
        start = max(data.rfind(b"\n", lo, q) + 1, lo)
        name = data[start:q]
        if not _FIELD_NAME.fullmatch(name):
            continue
        end = q + 9 + int.from_bytes(data[q + 1 : q + 9], "little")
        if end < len(data) and data[end] == 0x0A:
            return start, name.decode(), end + 1, data[q + 9 : end]
    return None


def _take_binary_fields(data: bytes) -> tuple[bytes, list[tuple[int, str, bytes]]] | None:
    """``data`` without its binary-safe fields, and ``(offset in the rest, name, value)`` of each.

    Every binary-safe field holds a NUL byte (the top byte of its 64-bit length), and text fields
    hold none, so the NUL bytes (found by ``bytes.find``) lead to every binary field without a scan of
    the lines. None when a NUL is not part of a complete field (a cut capture, bytes that are not
    export format): ``_split_export`` then reads ``data`` the slow way.
    """
    nul = data.find(b"\x00")
    if nul < 0:
        return data, []
    pieces, found, kept_from, at = [], [], 0, 0
    view = memoryview(data)  # the text between the fields is copied once, by the join
    while nul >= 0:
        field = _binary_field_at(data, nul, kept_from)
        if field is None:
            return None
        start, name, after, value = field
        pieces.append(view[kept_from:start])
        at += start - kept_from
        found.append((at, name, value))
        kept_from = after
        nul = data.find(b"\x00", kept_from)
    pieces.append(view[kept_from:])
    return b"".join(pieces), found


def _export_lines(
    data: bytes, whole: bool
) -> tuple[pl.Series, list[tuple[int, str, bytes]], str | None, bool]:
    """The text lines of export ``data``, its binary-safe fields as ``(entry index, name, value)``,
    an error text (see ``_split_export``), and whether every line is known to be blank or hold a
    ``=``. The common case (text fields, and binary ones only where journalctl wrote a control
    character or invalid UTF-8) never looks at a line in Python."""
    taken = _take_binary_fields(data)
    if taken is not None:
        text, found = taken
        lines = _split_utf8(text)
        if lines is not None and not (~lines.str.contains("=", literal=True) & (lines != "")).any():
            if not found:
                return lines, [], None, True
            sizes = lines.str.len_bytes().cast(pl.Int64)
            starts = (sizes + 1).cum_sum() - (sizes + 1)
            blank_starts = starts.filter(lines == "")
            entries = blank_starts.search_sorted(pl.Series([at for at, _, _ in found]), side="left")
            return lines, [(int(e), n, v) for e, (_, n, v) in zip(entries, found, strict=True)], None, True
    lines, binaries, error = _split_export(bytes(data), whole)
    if error and whole:
        raise CutInsideBinaryField(error)
    return lines, binaries, error, False


def _field_columns(df: pl.DataFrame, entries: pl.Series, binaries: pl.DataFrame) -> pl.DataFrame:
    """One column per field of ``_META`` and ``FIELDS``, one row per entry of ``entries`` (sorted
    entry indexes of ``df``'s ``entry`` column): the field's value (a text line of ``df`` or a row of
    ``binaries``), null where the entry has none, the values joined by newlines where an entry gives
    the field twice. A field every entry has (cursor, time, MESSAGE…) is taken as it is, in order;
    only the others are aligned by a join."""
    line = pl.col("line")
    names = (*_META, *FIELDS)
    # one pass: each line's field name and value, split at its first "=" (a filter per name cost more)
    eq = line.str.find("=", literal=True)
    named = df.select("entry", line.str.slice(0, eq).alias("key"), line.str.slice(eq + 1).alias("value"))
    by_name = named.filter(pl.col("key").is_in(names)).partition_by("key", as_dict=True, include_key=False)
    none = pl.DataFrame(schema={"entry": df.schema["entry"], "value": pl.String})
    columns = {}
    for name in names:
        rows = by_name.get((name,), none)
        extra = binaries.filter(pl.col("key") == name)
        if extra.height:
            rows = pl.concat([rows, extra.drop("key")]).sort("entry", maintain_order=True)
        if rows.height == entries.len() and rows["entry"].equals(entries):
            columns[name] = rows["value"]
            continue
        if rows["entry"].n_unique() < rows.height:
            rows = rows.group_by("entry", maintain_order=True).agg(pl.col("value").str.join("\n"))
        columns[name] = entries.to_frame().join(rows, on="entry", how="left", maintain_order="left")["value"]
    return pl.DataFrame(columns, schema=dict.fromkeys(names, pl.String))


def parse_export(data: bytes, *, source: str, whole: bool = False, first_entry: int = 0) -> pl.DataFrame:
    """Parse whole entries of journal export format into records.

    Args:
        data: export bytes holding whole entries (a chunk cut after a blank line, or a whole file);
            text fields ``NAME=value`` and binary-safe fields, repeated fields allowed.
        source: path of the journal or capture, copied into ``source``.

    Returns:
        One row per entry in input order, columns of ``RECORD_COLUMNS`` + ``systemd_unit`` and
        ``about_unit`` (``_entry_columns``): ``ts`` from
        ``__REALTIME_TIMESTAMP`` (µs, UTC), ``host`` from ``_HOSTNAME``, ``unit`` from
        ``UNIT`` (the unit systemd's own messages are about, e.g. "Stopping …") else
        ``_SYSTEMD_UNIT``, ``message`` from ``MESSAGE`` (repeated fields joined by a
        newline; an entry without MESSAGE keeps all its fields as ``NAME=value`` lines so nothing is
        lost), ANSI escapes removed, invalid UTF-8 replaced by U+FFFD; ``source_pos`` the ``__CURSOR``,
        or ``entry N`` (1-based, counted from ``first_entry``) for an entry without one (an export
        written by another tool, e.g. the input of systemd-journal-remote).

    Never raises on bad bytes: a cut binary field is reported in ``entry_error`` of the last entry
    and the text before it is kept. With ``whole=True`` (a chunk cut by the caller at a guessed entry
    boundary) a binary field running past the end raises ``CutInsideBinaryField`` instead.
    """
    lines, raw, error, checked = _export_lines(data, whole)
    df = pl.DataFrame({"line": lines}).with_columns((pl.col("line") == "").cum_sum().alias("entry"))
    df = df.filter(pl.col("line") != "")
    bad_lines = 0 if checked else df.filter(~pl.col("line").str.contains("=", literal=True)).height
    found = pl.DataFrame(
        [(e, name, _decode(v)) for e, name, v in raw],
        schema={"entry": df.schema["entry"], "key": pl.String, "value": pl.String},
        orient="row",
    )
    binaries = found.filter(pl.col("key") != "\x00error")
    entries = pl.concat([df["entry"], binaries["entry"]]).unique().sort()
    wide = pl.concat([entries.to_frame(), _field_columns(df, entries, binaries)], how="horizontal")
    if wide["MESSAGE"].null_count():
        wide = _render_without_message(df, wide, binaries)
    damaged = found.filter(pl.col("key") == "\x00error").group_by("entry", maintain_order=True)
    damaged = damaged.agg(pl.col("value").str.join("; ").alias("damaged"))
    wide = wide.join(damaged, on="entry", how="left", maintain_order="left")
    errors = [e for e in (bad_lines and f"{bad_lines} line(s) not in KEY=value form", error) if e]
    return _export_records(wide, source, first_entry, errors)


def _export_records(wide: pl.DataFrame, source: str, first_entry: int, errors: list[str]) -> pl.DataFrame:
    """The record columns of ``parse_export``'s entries (one row each, a column per field): the
    chunk's own ``errors`` are said on its last entry."""
    message = pl.col("MESSAGE")
    if wide.select(message.str.contains("[\x1b\r]").any()).item():
        message = clean_text(message)
    entry_error = pl.concat_str(
        [
            pl.col("__LOGCORR_PIECE"),
            pl.col("damaged"),
            realtime_error(pl.col("__REALTIME_TIMESTAMP")),
            pl.when(pl.col("entry") == pl.col("entry").max()).then(
                pl.lit("; ".join(errors) or None, pl.String)
            ),
        ],
        separator="; ",
        ignore_nulls=True,
    ).replace("", None)
    entry_n = pl.format("entry {}", pl.int_range(1, pl.len() + 1) + first_entry)
    source_pos = pl.coalesce("__CURSOR", entry_n)
    # an entry without MESSAGE is no line of a process's output: a stream, so a record, of its own
    own = (
        pl.when(pl.col("no_message")).then(entry_n)
        if "no_message" in wide.columns
        else pl.lit(None, pl.String)
    )
    return wide.select(_entry_columns(message, source, source_pos, own, entry_error))


def _entry_columns(
    message: pl.Expr, source: str, source_pos: pl.Expr, own_stream: pl.Expr, entry_error: pl.Expr
) -> list[pl.Expr]:
    """The record columns of journal entries (export or json) from their field columns, and the
    fields that name a unit for choosing entries as ``journalctl --unit`` does (re-joining drops
    them): ``systemd_unit`` (``_SYSTEMD_UNIT``), ``about_unit`` (``COREDUMP_UNIT`` else
    ``OBJECT_SYSTEMD_UNIT``). ``own_stream``, where not null, is appended to an entry's ``stream``."""
    return record_columns(
        ts=realtime(pl.col("__REALTIME_TIMESTAMP")),
        host=pl.col("_HOSTNAME"),
        boot_id=pl.col("_BOOT_ID"),
        unit=pl.coalesce("UNIT", "_SYSTEMD_UNIT"),
        pid=pl.col("_PID").cast(pl.Int32, strict=False),
        message=message,
        source=pl.lit(source),
        source_pos=source_pos,
        stream=pl.concat_str(
            ["_BOOT_ID", "_PID", "_SYSTEMD_UNIT", own_stream], separator="/", ignore_nulls=True
        ),
        cmdline=pl.col("_CMDLINE"),
        comm=pl.coalesce("_COMM", "SYSLOG_IDENTIFIER"),
        entry_error=entry_error,
        systemd_unit=pl.col("_SYSTEMD_UNIT"),
        about_unit=pl.coalesce("COREDUMP_UNIT", "OBJECT_SYSTEMD_UNIT"),
    )


def _render_without_message(df: pl.DataFrame, wide: pl.DataFrame, binaries: pl.DataFrame) -> pl.DataFrame:
    """``wide`` with MESSAGE of an entry that has none: all its fields but the cursor and times, as
    ``NAME=value`` lines (a line not in that form as it is), so nothing of it is lost."""
    no_message = pl.col("entry").is_in(wide.filter(pl.col("MESSAGE").is_null())["entry"].implode())
    line = pl.col("line")
    eq = line.str.find("=", literal=True)
    fields = df.filter(no_message).select(
        "entry",
        pl.coalesce(line.str.slice(0, eq), line).alias("key"),
        line.str.slice(eq + 1).alias("value"),
    )
    rendered = (
        pl.concat([fields, binaries.filter(no_message)])
        .filter(~pl.col("key").is_in(_META))
        .group_by("entry", maintain_order=True)
        .agg(
            pl.coalesce(pl.col("key") + "=" + pl.col("value"), pl.col("key")).str.join("\n").alias("rendered")
        )
    )
    return wide.join(rendered, on="entry", how="left", maintain_order="left").with_columns(
        pl.col("MESSAGE").is_null().alias("no_message"), pl.coalesce("MESSAGE", "rendered").alias("MESSAGE")
    )


def _json_text(value: object) -> str | None:
    """One json field value as text: a string as is, an array of byte ints decoded (binary or
    non-UTF-8 data), an array of strings joined by newlines (a repeated field), null as None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        if all(isinstance(i, int) for i in value):
            return _decode(bytes(i & 0xFF for i in value))
        return "\n".join(i if isinstance(i, str) else _json_text(i) or "" for i in value)
    return json.dumps(value)


_local = threading.local()


def _duckdb() -> duckdb.DuckDBPyConnection:
    if not hasattr(_local, "con"):  # one per thread: a connection is not shared between threads
        _local.con = duckdb.connect()
    return _local.con


# An array value, however spaced: systemd 252 writes compact JSON ('"MESSAGE":[104,105]'), older
# systemd (CentOS 7's 219) a space each side of the colon ('"MESSAGE" : [ 104, 105 ]').
_ARRAY_ANYHOW = r'"\s*:\s*\['


def _json_fields(df: pl.DataFrame) -> pl.DataFrame:
    """Add a String column per field of the JSON object in ``line`` (null when the line is not
    JSON), ``_json``: the line parsed as JSON (true for a whole object whose fields are all null,
    ``MESSAGE: null`` and no cursor), and ``_message_type``: DuckDB's ``json_type`` of the object's
    own ``MESSAGE`` (``VARCHAR``, ``ARRAY``, ``NULL``, a number's, ``OBJECT``, ``BOOLEAN``; null
    when it has none). DuckDB's JSON reader parses each line once for all fields; the rare lines
    holding an array value (bytes, a repeated field) are read again by Python's json module."""
    names = (*_META, *FIELDS)
    paths = "[" + ", ".join(f"'$.{n}'" for n in names) + "]"
    lines = df.select("line")  # noqa: F841 (read by DuckDB by name)
    query = f"SELECT try(json_extract_string(line, {paths})) AS v, try(json_type(line, '$.MESSAGE')) AS t FROM lines"
    found = _duckdb().sql(query).pl()
    values = found["v"]
    df = df.with_columns(
        values.is_not_null().alias("_json"),
        found["t"].alias("_message_type"),
        values.list.to_struct(fields=list(names)).alias("fields"),
    ).unnest("fields")
    fixed = []
    for n, line in (
        df.filter(pl.col("_json") & pl.col("line").str.contains(_ARRAY_ANYHOW))
        .select("n", "line")
        .iter_rows()
    ):
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # DuckDB's reader is more lenient (or deeper): keep what it read
            continue
        if isinstance(obj, dict):
            fixed.append({"n": n, **{k: _json_text(obj.get(k)) for k in names}})
    if fixed:  # each fixed line's values put in its row (``n`` ascends: a join would cost ten times more)
        rows = df["n"].search_sorted(pl.Series([f["n"] for f in fixed], dtype=df.schema["n"]))
        df = df.with_columns(
            df[k].clone().scatter(rows, pl.Series([f[k] for f in fixed], dtype=pl.String)) for k in names
        )
    return df


def parse_json_lines(lines: pl.Series, *, source: str, first_line: int = 1) -> pl.DataFrame:
    """Parse ``journalctl -o json`` lines (one JSON object per line) into records.

    Values may be strings, arrays of byte ints (binary or non-UTF-8 data), arrays of strings
    (a repeated field), or null (journalctl's ``-o json`` rules). A line that is not a whole JSON
    object (cut in half, garbage) is kept as a record with ``entry_error`` set and the raw line as
    message. An entry whose own ``MESSAGE`` is no text (a number, an object, true or false: log
    platforms write them, journalctl never does) or null or absent is a stream of its own.
    ``source_pos`` is the cursor, or ``line N`` when the object has none.
    """
    df = pl.DataFrame({"line": lines.cast(pl.String)}).with_row_index("n", offset=first_line)
    return _json_line_records(df.with_columns(pl.col("n").cast(pl.Int64)), source).drop("n")


def _json_line_records(df: pl.DataFrame, source: str) -> pl.DataFrame:
    """``parse_json_lines`` of ``df`` (``n``: Int64 line numbers, ``line``): ``n`` and the record
    columns, one row per line that is not blank."""
    df = df.filter(~pl.col("line").str.contains(r"^\s*$"))  # not blank
    line = pl.col("line")
    whole = line.str.contains(r"^\s*\{") & line.str.contains(r"\}\s*$")
    df = _json_fields(df)
    # broken: the line is no JSON object (cut, garbage); a whole object may hold no cursor and a null
    # MESSAGE (a capture of another tool, a log platform's): that entry is whole, its fields read
    df = df.with_columns((~whole | ~pl.col("_json")).alias("broken")).drop("_json")
    return df.select(
        "n",
        *_entry_columns(
            # an absent MESSAGE keeps the entry's JSON as its text (nothing of it is lost); a null one
            # is an empty message: the entry logged none
            clean_text(
                pl.when(pl.col("broken"))
                .then(line)
                .when(pl.col("MESSAGE").is_null() & (pl.col("_message_type") == "NULL"))
                .then(pl.lit(""))
                .when(pl.col("MESSAGE").is_null())
                .then(line)
                .otherwise(pl.col("MESSAGE"))
            ),
            source,
            pl.coalesce(pl.col("__CURSOR"), pl.format("line {}", pl.col("n"))),
            # a MESSAGE that is a JSON object, number or boolean (never journalctl's own output, but
            # log platforms write them) is no line of a process's stdout: a stream, so a record, of its own
            pl.when(
                pl.col("_message_type").is_null() | ~pl.col("_message_type").is_in(["VARCHAR", "ARRAY"])
            ).then(pl.format("entry {}", pl.col("n"))),
            pl.when(pl.col("broken"))
            .then(pl.lit("not a whole JSON object"))
            .otherwise(realtime_error(pl.col("__REALTIME_TIMESTAMP"))),
        ),
    )


# The block reader's parser: the fields read, each a string where the entry has it. A value of
# another JSON type (journalctl's arrays of bytes or of a repeated field's values), a key given
# twice, a line that is no object or no UTF-8 make it refuse the lines it was given.
_JSON_SCHEMA = pa.schema([(n, pa.string()) for n in (*_META, *FIELDS)])
_JSON_PARSE = pa_json.ParseOptions(explicit_schema=_JSON_SCHEMA, unexpected_field_behavior="ignore")
_JSON_READ = pa_json.ReadOptions(use_threads=False, block_size=1 << 30)  # a block is parsed whole
_ARRAY_VALUE = b'":['  # how journalctl writes an array value (compact JSON)


def parse_json_block(data: bytes, *, source: str, first_line: int = 1) -> pl.DataFrame | None:
    """``parse_json_lines(split_lines(data), …)``, the same rows, without a column of lines: the block
    is parsed whole by Arrow's JSON reader (each line one object, the fields read strings), and only
    the lines it cannot read that way go through ``parse_json_lines``: a line holding an array value
    (journalctl's binary or repeated fields, ``":[``), an entry whose MESSAGE is null or absent.

    Args:
        data: whole lines of a ``journalctl -o json`` capture (the last newline may be missing),
            line ``first_line`` first.

    Returns:
        The records (columns as ``parse_json_lines``), or None when the block is not plain lines of
        JSON objects whose fields are strings: a NUL byte, invalid UTF-8, a blank line, a line that
        is no object or gives a field twice or as another type. The caller reads such a block line by
        line (``parse_json_lines``), so an odd line costs its block's speed, never its semantics.
    """
    if not data or data.find(b"\x00") >= 0:
        return None
    if not data.isascii():
        try:
            data.decode()
        except UnicodeDecodeError:
            return None
    newlines = np.flatnonzero(np.frombuffer(data, np.uint8) == 0x0A)
    ends = newlines if data.endswith(b"\n") else np.append(newlines, len(data))
    starts = np.concatenate(([0], newlines + 1))[: len(ends)]  # line i: data[starts[i]:ends[i]]
    if not (np.frombuffer(data, np.uint8)[starts] == 0x7B).all():  # "{": no blank line, one object a line
        return None
    odd = _array_lines(data, ends)
    rest = pa.py_buffer(data if not odd else _blanked(data, starts, ends, odd))
    try:
        table = pa_json.read_json(pa.BufferReader(rest), read_options=_JSON_READ, parse_options=_JSON_PARSE)
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return None
    if table.num_rows != len(ends):  # two objects on a line
        return None
    fast = pl.from_arrow(table).with_columns(pl.int_range(0, len(ends), dtype=pl.Int64).alias("n"))
    no_message = fast["MESSAGE"].is_null()  # the blanked lines too
    # such a line's text is the line's (absent MESSAGE) or empty (null): read as a line, its row replaced
    odd = no_message.arg_true().to_list() if no_message.any() else []
    records = fast.with_columns(pl.col("n") + first_line).select(
        "n",
        *_entry_columns(
            clean_text(pl.col("MESSAGE")),
            source,
            pl.coalesce(pl.col("__CURSOR"), pl.format("line {}", pl.col("n"))),
            pl.lit(None, pl.String),
            realtime_error(pl.col("__REALTIME_TIMESTAMP")),
        ),
    )
    if odd:
        text = [data[starts[i] : ends[i]].decode() for i in odd]
        lines = pl.DataFrame(
            {"n": [first_line + i for i in odd], "line": text}, schema={"n": pl.Int64, "line": pl.String}
        )
        records = _rows_replaced(records, _json_line_records(lines, source), odd)
    return records.drop("n")


def _rows_replaced(records: pl.DataFrame, rows: pl.DataFrame, at: list[int]) -> pl.DataFrame:
    """``records`` with row ``at[k]`` replaced by row k of ``rows`` (``at`` ascending, one row of ``rows``
    each): the rows between are slices of ``records``, so no column of the block is copied or sorted."""
    if rows.height != len(at) or len(at) > 64:  # many odd lines: one sort instead of many pieces
        kept = records.filter(~pl.int_range(0, pl.len()).is_in(at))
        return pl.concat([kept, rows]).sort("n")
    pieces, prev = [], 0
    for k, i in enumerate(at):
        pieces += [records.slice(prev, i - prev), rows.slice(k, 1)]
        prev = i + 1
    return pl.concat([*pieces, records.slice(prev)], rechunk=False)


def _array_lines(data: bytes, ends: np.ndarray) -> list[int]:
    """Indexes of the lines of ``data`` (their ends ``ends``) that hold ``_ARRAY_VALUE``: found from the
    block's ``[`` bytes (a few per line: SGLang's headers) by the two bytes before each, as a search for
    the three bytes is slowed by the ``":`` of every key."""
    buf = np.frombuffer(data, np.uint8)
    at = np.flatnonzero(buf == 0x5B)  # "["
    at = at[at >= 2]
    at = at[(buf[at - 1] == 0x3A) & (buf[at - 2] == 0x22)]  # '":['
    return np.unique(np.searchsorted(ends, at)).tolist()


def _blanked(data: bytes, starts: np.ndarray, ends: np.ndarray, lines: list[int]) -> bytearray:
    """A copy of ``data`` with the given lines (indexes) each made an empty object padded with spaces
    (``{}   ``): Arrow reads them as rows of nulls, so row i stays line i; the caller reads them apart."""
    out = bytearray(data)
    for i in lines:
        a, b = int(starts[i]), int(ends[i])
        out[a:b] = b"{}" + b" " * (b - a - 2)
    return out


# journalctl -o short-iso / short-iso-precise / short-unix: "TIME HOST IDENT[PID]: MESSAGE".
# `-o short` prints the month with strftime's %b, in the host's locale: English, or French (`déc.`), German
# (`Dez`), Spanish, Italian, Portuguese, Dutch … abbreviations (batch12/08), or a number and 月/월 (CJK); their
# month numbers:
SHORT_MONTHS = {
    **{m: i for i, m in enumerate(("jan feb mar apr may jun jul aug sep oct nov dec").split(), 1)},
    **{m: i for i, m in enumerate(("janv févr mars avr mai juin juil août sept oct nov déc").split(), 1)},
    **{m: i for i, m in enumerate(("jan feb mär apr mai jun jul aug sep okt nov dez").split(), 1)},
    **{m: i for i, m in enumerate(("ene feb mar abr may jun jul ago sept oct nov dic").split(), 1)},
    **{m: i for i, m in enumerate(("gen feb mar apr mag giu lug ago set ott nov dic").split(), 1)},
    **{m: i for i, m in enumerate(("jan fev mar abr mai jun jul ago set out nov dez").split(), 1)},
    **{m: i for i, m in enumerate(("jan feb mrt apr mei jun jul aug sep okt nov dec").split(), 1)},
    "fév": 2, "mrz": 3,  # the short forms some locales print too
    # Chinese and Japanese print the month's number and 月 (`2月 04 13:16:56`), Korean and 월 (batch14/09)
    **{f"{i}{sign}": i for sign in "月월" for i in range(1, 13)},
}  # fmt: skip
_SHORT_MONTH = "(?i:" + "|".join(sorted(SHORT_MONTHS, key=len, reverse=True)) + r")\.?"
SHORT_LINE = (
    r"^(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:?\d\d|Z)|\d{9,11}\.\d+"
    rf"|{_SHORT_MONTH} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?)"
    r" (?P<host>\S+) (?P<ident>[^\s\[:]+)(?:\[(?P<pid>\d+)\])?: (?P<message>.*)$"
)
# A line that prints a year: an ISO date and time anywhere in it, or `date`'s `Sat Feb 21 21:00:31 UTC 2026`.
DATED_LINE = (
    r"(\d{4})-\d\d-\d\d[ T]\d\d:\d\d"
    r"|^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?: [A-Z][A-Za-z+\-\d]*)? (\d{4})\s*$"
)
SHORT_SKIP = r"^-- (?:Boot [0-9a-f]+|No entries|Journal begins|Logs begin|Reboot) .*--$|^-- No entries --$"


def parse_short_lines(lines: pl.Series, *, source: str, first_line: int = 1) -> pl.DataFrame:
    """Parse ``journalctl -o short|short-precise|short-iso|short-iso-precise|short-unix`` lines
    (also the journal tail ``systemctl status`` prints) into records.

    A line that starts with whitespace continues the previous entry's message (journalctl indents
    the continuation lines of a multi-line MESSAGE to the prefix width); ``-- Boot … --`` and
    ``-- No entries --`` lines are skipped; any other line that does not match keeps its text as a
    record with ``entry_error`` set. ``ts`` is UTC (offsets in the line applied); ``-o short``
    prints neither year nor zone: the year is the nearest one a line of the same chunk prints
    (an SGLang or router header, a status line), else ``ts`` stays null, and the time is read as UTC (journalctl
    printed the local time of the machine it ran on; ``ts_zoneless`` says so). ``unit`` is the syslog identifier (short
    formats do not print the unit), ``source_pos`` is ``line N``. The year of a yearless line is that
    of the nearest line of the chunk that prints one (``DATED_LINE``: the line before it, else after).
    """
    df = pl.DataFrame({"line": lines.cast(pl.String)}).with_columns(clean_text(pl.col("line")))
    df = df.with_row_index("n", offset=first_line).filter(~pl.col("line").str.contains(SHORT_SKIP))
    df = df.with_columns(pl.col("line").str.extract_groups(SHORT_LINE).alias("g")).unnest("g")
    is_cont = pl.col("time").is_null() & pl.col("line").str.contains(r"^\s") & (pl.col("n") > first_line)
    df = df.with_columns(is_cont.alias("cont")).with_columns((~pl.col("cont")).cum_sum().alias("entry"))
    # Continuation lines: strip the indentation journalctl added (the prefix width of the first line).
    # A line that is no journal line (a `systemctl status` header) keeps its indented lines verbatim.
    width = (
        (pl.col("line").str.len_chars() - pl.col("message").str.len_chars())
        .fill_null(0)
        .first()
        .over("entry")
    )
    df = df.with_columns(
        pl.when(pl.col("cont"))
        .then(pl.col("line").str.slice(width))
        .otherwise(pl.col("message"))
        .alias("text")
    )
    grouped = df.group_by("entry", maintain_order=True).agg(
        pl.col("n", "time", "host", "ident", "pid").first(),
        pl.col("line").first().alias("raw"),
        pl.col("text").fill_null(pl.col("line")).str.join("\n"),
        pl.len().cast(pl.Int32).alias("entry_lines"),
    )
    unix = pl.col("time").str.contains(r"^\d+\.\d+$")
    yearless = pl.col("time").str.contains(rf"^{_SHORT_MONTH} ")
    # the month's number, the day and the time: `déc. 19 02:07:16` → 12, "19", "02:07:16"
    short = pl.col("time").str.extract_groups(r"^([^\s.]+)\.? +(\d+) (\S+)$")
    month = (
        short.struct.field("1")
        .str.to_lowercase()
        .replace_strict(SHORT_MONTHS, default=None, return_dtype=pl.Int8)
    )
    day, clock = short.struct.field("2").str.zfill(2), short.struct.field("3")
    month_day = pl.concat_str([month.cast(pl.String).str.zfill(2), day], separator="-")
    # the year of the nearest dated line before it, else after it: any line of the chunk that prints
    # one (a short-iso time, an ISO date in a message or a `systemctl status` line, `date` output)
    printed = pl.coalesce(
        pl.col("time").str.extract(r"^(\d{4})-\d\d-\d\dT", 1),
        pl.col("text").str.extract(DATED_LINE, 1),
        pl.col("text").str.extract(DATED_LINE, 2),
    )
    year = printed.forward_fill().backward_fill()
    short_ts = (
        pl.concat_str([year, month_day, clock], separator=" ")
        .str.to_datetime("%Y %m-%d %H:%M:%S%.f", time_unit="us", strict=False)
        .dt.replace_time_zone("UTC")
    )
    iso = pl.col("time").str.replace(r"([+-]\d\d)(\d\d)$", "$1:$2").str.replace("Z$", "+00:00")
    ts = (
        pl.when(unix)
        .then((pl.col("time").cast(pl.Float64, strict=False) * 1e6).round().cast(pl.Int64).cast(UTC_US))
        .when(yearless)
        .then(short_ts)
        .otherwise(iso.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%:z", time_unit="us", strict=False))
        .dt.convert_time_zone("UTC")
    )
    return grouped.select(
        record_columns(
            ts=ts,
            host=pl.col("host"),
            unit=pl.col("ident"),
            pid=pl.col("pid").cast(pl.Int32, strict=False),
            message=pl.col("text"),
            source=pl.lit(source),
            source_pos=pl.format("line {}", pl.col("n")),
            stream=pl.concat_str(["host", "ident", "pid"], separator="/", ignore_nulls=True),
            comm=pl.col("ident"),
            entry_error=pl.when(pl.col("time").is_null()).then(pl.lit("not a journalctl short line")),
            # `-o short` prints the local time without a zone: as printed, not UTC (clocks.zoneless)
            ts_zoneless=pl.when(yearless).then(True),
            entry_lines=pl.when(pl.col("entry_lines") > 1).then(pl.col("entry_lines")),
            # no year printed nor lent: the time as printed (MM-DD HH:MM:SS), never a guessed year
            envelope_time=pl.when(yearless & year.is_null()).then(
                pl.concat_str([month_day, clock], separator=" ")
            ),
        )
    )
