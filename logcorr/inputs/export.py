"""Reading ``journalctl -o export`` streams (a capture file or journalctl's own pipe) in chunks cut
between entries, never inside a binary field (the journal export format,
https://systemd.io/JOURNAL_EXPORT_FORMATS/)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl

from logcorr.inputs.source import CHUNK_BYTES, SourceReport
from logcorr.parsers import journald


def read_export_file(path: Path, report: SourceReport) -> Iterator[pl.DataFrame]:
    """Records of a ``journalctl -o export`` capture file, streamed in chunks cut between entries."""
    with open(path, "rb") as f:
        yield from export_chunks(iter(lambda: f.read(CHUNK_BYTES), b""), report.source, report)


def _safe_cut(buf: bytes) -> int:
    """Index just after the last entry separator (blank line) that is not inside a binary field."""
    spans, pos = [], 0
    while m := journald.BINARY_FIELD.search(buf, pos):
        size_at = m.end()
        if size_at + 8 > len(buf):
            spans.append((m.start(), len(buf)))
            break
        size = int.from_bytes(buf[size_at : size_at + 8], "little")
        end = size_at + 8 + size
        if (end < len(buf) and buf[end : end + 1] != b"\n") or size > journald.MAX_FIELD_BYTES:
            pos = size_at  # a damaged length prefix: not a span (parse_export keeps it as damaged)
            continue
        spans.append((m.start(), end))
        pos = end + 1
    cut = buf.rfind(b"\n\n")
    while cut >= 0 and any(a <= cut < b for a, b in spans):
        start = next(a for a, b in spans if a <= cut < b)
        cut = buf.rfind(b"\n\n", 0, start)
    return cut + 2 if cut >= 0 else 0


def export_chunks(blocks: Iterator[bytes], source: str, report: SourceReport) -> Iterator[pl.DataFrame]:
    rest, entries = b"", 0  # entries so far: "entry N" for an entry without a cursor
    for block in blocks:
        report.bytes += len(block)
        buf = rest + block
        cut = buf.rfind(b"\n\n") + 2  # fast guess; wrong only when a binary field spans it
        if cut == 1:
            rest = buf
            continue
        try:
            df = journald.parse_export(buf[:cut], source=source, whole=True, first_entry=entries)
        except journald.CutInsideBinaryField:
            cut = _safe_cut(buf)
            if cut == 0:
                rest = buf
                continue
            df = journald.parse_export(buf[:cut], source=source, first_entry=entries)
        rest = buf[cut:]
        entries += df.height
        yield df
    if rest.strip():
        yield _cut_entry(rest, source, entries)


def _cut_entry(rest: bytes, source: str, first_entry: int) -> pl.DataFrame:
    """The entries after the last blank line of a capture. Without a blank line after it, the last
    entry was cut short (a capture copied while written, a truncated upload): it is kept, with
    ``entry_error`` saying so, and a cut ``__REALTIME_TIMESTAMP`` line is not read as its time (a few
    digits of it would put the entry in 1970)."""
    df = journald.parse_export(rest, source=source, first_entry=first_entry)
    if rest.endswith(b"\n\n") or df.height == 0:
        return df
    last_line = rest[rest.rfind(b"\n", 0, len(rest) - 1) + 1 :]
    cut_time = not rest.endswith(b"\n") and last_line.startswith(b"__REALTIME_TIMESTAMP=")
    note = "the capture ends inside this entry (cut short" + (f": {last_line.decode()})" if cut_time else ")")
    last = pl.int_range(pl.len()) == pl.len() - 1
    error = pl.concat_str([pl.col("entry_error"), pl.lit(note)], separator="; ", ignore_nulls=True)
    return df.with_columns(
        pl.when(last).then(error).otherwise(pl.col("entry_error")).alias("entry_error"),
        pl.when(last & cut_time).then(None).otherwise(pl.col("ts")).alias("ts"),
    )
