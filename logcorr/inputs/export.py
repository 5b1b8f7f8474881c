"""Reading ``journalctl -o export`` streams (a capture file or journalctl's own pipe) in chunks cut
between entries, never inside a binary field (the journal export format,
https://systemd.io/JOURNAL_EXPORT_FORMATS/)."""

from __future__ import annotations

import re
import threading
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import IO

import polars as pl

from logcorr.inputs.source import (
    CHUNK_BYTES,
    LINE_PIECE,
    MAX_LINE_BYTES,
    MAX_RECORD_BYTES,
    ContentDigest,
    SourceReport,
)
from logcorr.inputs.text import char_boundary
from logcorr.parsers import journald


def read_export_file(
    path: Path, report: SourceReport, digest: ContentDigest | None = None
) -> Iterator[pl.DataFrame]:
    """Records of a ``journalctl -o export`` capture file, streamed in chunks cut between entries; every
    byte read also goes to ``digest``, ``done`` at the file's end."""
    with open(path, "rb") as f:
        yield from export_chunks(_blocks(f, digest), report.source, report)


# sd-journal's cursor as journalctl prints it (sd_journal_get_cursor, systemd 252): what --after-cursor takes
CURSOR = re.compile(r"s=[0-9a-f]{32};i=[0-9a-f]+;b=[0-9a-f]{32};m=[0-9a-f]+;t=[0-9a-f]+;x=[0-9a-f]+")


def _blocks(f, digest: ContentDigest | None) -> Iterator[bytes]:
    while block := f.read(CHUNK_BYTES):
        if digest is not None:
            digest.update(block)
        yield block
    if digest is not None:
        digest.done = True


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


class Segment:
    """One journalctl's share of an export stream (``journal.read_journal``): its pipe read in blocks of
    ``CHUNK_BYTES`` (``blocks``, on a thread of its own) until ``limit`` bytes were read, then no further
    until the stream's reader asks for more (``go_on``): where it stops, journalctl has written little
    that the next segment's journalctl must write again."""

    def __init__(self, pipe: IO[bytes], limit: int) -> None:
        self.pipe, self.limit, self.read = pipe, limit, 0
        self._more = threading.Event()

    def blocks(self) -> Iterator[bytes]:
        """The pipe's blocks, pausing once ``limit`` bytes were read until ``go_on``."""
        while True:
            if self.read >= self.limit:
                self._more.wait()
            block = self.pipe.read(CHUNK_BYTES)
            if not block:
                return
            self.read += len(block)
            yield block

    def go_on(self) -> None:
        """Read on past ``limit``, to the stream's end (the reader could not stop there; or it stopped
        and journalctl was killed: the pipe's end is read and the thread ends)."""
        self._more.set()


def export_chunks(
    blocks: Iterator[bytes],
    source: str,
    report: SourceReport,
    *,
    first_entry: int = 0,
    segment: Segment | None = None,
) -> Generator[pl.DataFrame, None, tuple[str, int] | None]:
    """Records of an export stream given as byte ``blocks``, parsed a chunk of whole entries at a time
    (``journald.parse_export``). A binary field over ``MAX_LINE_BYTES`` is read
    in pieces of ``MAX_RECORD_BYTES`` (``_held``), each the record of an entry of its own, so memory
    stays bounded. ``first_entry``: the entries before this stream (an entry without a cursor is
    "entry N" of the whole read).

    With ``segment`` (``blocks`` are its ``Segment.blocks``): once its ``limit`` bytes were read, the
    stream stops after the first chunk whose last entry has a cursor (the bytes after it are dropped, and
    not counted in ``report.bytes``) and returns ``(that cursor, the entries read so far)``, for the
    caller to go on from the entry after it (``journalctl --after-cursor``); where it cannot stop (no
    cursor, an entry larger than a block) it asks the segment to read on. A stream read to its end
    returns None."""
    rest, entries = b"", first_entry  # entries so far: "entry N" for an entry without a cursor
    blocks, held, read, resume = iter(blocks), 0, 0, None
    for block in blocks:
        report.bytes += len(block)
        read += len(block)
        buf = bytearray(rest)
        buf += block  # the one copy of the block: the entries are cut off its end in place
        cut = buf.rfind(b"\n\n") + 2  # fast guess; wrong only when a binary field spans it
        if cut == 1:
            if segment is not None:  # an entry larger than a block: read on to its end
                segment.go_on()
            before = entries
            rest, entries = yield from _held(bytes(buf), blocks, source, report, entries)
            held += entries - before
            continue
        rest = bytes(buf[cut:])
        del buf[cut:]
        try:
            df = journald.parse_export(buf, source=source, whole=True, first_entry=entries)
        except journald.CutInsideBinaryField:
            buf += rest
            cut = _safe_cut(buf)
            if cut == 0:
                if segment is not None:
                    segment.go_on()
                before = entries
                rest, entries = yield from _held(bytes(buf), blocks, source, report, entries)
                held += entries - before
                continue
            rest = bytes(buf[cut:])
            del buf[cut:]
            df = journald.parse_export(buf, source=source, first_entry=entries)
        entries += df.height
        yield df
        if segment is not None and read >= segment.limit:
            cursor = df["source_pos"][-1] if df.height else None
            if cursor and CURSOR.fullmatch(cursor):  # journald's own
                resume = (cursor, entries)
                report.bytes -= len(rest)  # read again, from the entry after the cursor
                break
            segment.go_on()  # an entry without a cursor: read on
    if resume is None and rest.strip():
        yield _cut_entry(rest, source, entries)
    report.pieces += held
    if held:
        report.notes.append(
            f"{held} piece(s) of {MAX_RECORD_BYTES >> 20} MiB cut from binary fields over"
            f" {MAX_LINE_BYTES >> 20} MiB"
            " (each an entry of its own; the field's last piece follows them)"
        )
    return resume


# A field journald never writes (its own double-underscore fields are addresses): logcorr's mark on
# the entries that hold a piece of a binary field too long to keep whole; parse_export reads it as
# the entry's error.
PIECE_LINE = b"__LOGCORR_PIECE=" + LINE_PIECE.encode() + b"\n"


def _held(buf: bytes, blocks: Iterator[bytes], source: str, report: SourceReport, entries: int) -> Generator:
    """``buf``, which holds no whole entry yet, to be held for the next block; when it is over
    ``MAX_LINE_BYTES`` and its first entry has a binary field over that, that field's pieces are
    yielded, each the record of an entry of its own, and what to hold is the field's last piece.
    Returns what to hold and ``entries`` plus the entries yielded."""
    at = _huge_field(buf) if len(buf) > MAX_LINE_BYTES else None
    if at is None:
        return buf, entries
    name_start, value_start, size = at
    head = buf[:name_start] + PIECE_LINE + buf[name_start : value_start - 8]  # the fields before, NAME\n
    data, left = buf[value_start:], size
    while left > MAX_RECORD_BYTES:
        while len(data) < MAX_RECORD_BYTES and (block := next(blocks, b"")):
            report.bytes += len(block)
            data += block
        if len(data) < MAX_RECORD_BYTES:  # the stream ends inside the field: a cut field, said as such
            break
        cut = char_boundary(data, MAX_RECORD_BYTES)
        piece, data = data[:cut], data[cut:]
        entry = head + len(piece).to_bytes(8, "little") + piece + b"\n\n"
        df = journald.parse_export(entry, source=source, first_entry=entries)
        entries += df.height
        left -= len(piece)
        yield df
    return head + left.to_bytes(8, "little") + data, entries  # the last piece, read on as any field


def _huge_field(buf: bytes) -> tuple[int, int, int] | None:
    """Where the first binary field of ``buf``'s first entry that is over ``MAX_LINE_BYTES`` (and no
    more than ``journald.MAX_FIELD_BYTES``, beyond which a length is damage) is: ``(start of its name
    line, start of its value, its length)``; None when there is none (the fields before it are
    skipped by their lengths, so bytes inside a value are never read as a field)."""
    pos = 0
    while m := journald.BINARY_FIELD.search(buf, pos):
        size_at = m.end()
        if size_at + 8 > len(buf) or b"\n\n" in buf[pos : m.start()]:
            return None  # a cut length, or the field is in a later entry
        size = int.from_bytes(buf[size_at : size_at + 8], "little")
        if size > journald.MAX_FIELD_BYTES:
            return None
        if size > MAX_LINE_BYTES:
            return m.start(), size_at + 8, size
        pos = size_at + 8 + size + 1
    return None


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
