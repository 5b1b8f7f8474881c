"""What every reader of an input shares: the options it is given, the report it fills (a row of the
``sources`` table) and the error it raises when an input cannot be read at all."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

CHUNK_BYTES = 16 << 20
MAX_LINE_BYTES = 16 << 20  # a longer "line" is no log line (a binary, a bomb): kept in pieces
LINE_PIECE = f"a line over {MAX_LINE_BYTES >> 20} MiB, kept in pieces: this is one"  # its entry_error
# Rows per chunk, whatever the bytes: memory per chunk is per row (about 500 bytes of columns), so a
# file of tiny lines must not make a chunk of millions. A day's log lines (about 150 bytes) fill a
# chunk of 10 MB; journalctl export entries, about 500 bytes, fill CHUNK_BYTES at 32,000.
CHUNK_LINES = 65_536
# A record longer than this (lines of one traceback or dump, joined) is no log record: kept in pieces
MAX_RECORD_LINES = 131_072
MAX_RECORD_BYTES = 4 << 20
RECORD_PIECE = (
    f"a record over {MAX_RECORD_LINES:,} lines or {MAX_RECORD_BYTES >> 20} MiB, kept in pieces: this is one"
)


# Unpacking stops past this many times the compressed size (and past UNPACK_FLOOR bytes): logs and
# journals compress 5-50 fold; a file far beyond that is a decompression bomb, not a log.
UNPACK_RATIO = 200
UNPACK_FLOOR = 64 << 20
META_MAX = 64 << 20  # bytes of a metadata file (a bundle manifest, Docker's config.v2.json) read at most


class InputError(Exception):
    """An input could not be read at all; the message names the input and the reason."""


def failure(given: Path, e: BaseException, records: int = 0) -> str:
    """The error text of an input whose reading raised ``e``, an exception no reader expected (hostile
    content, a reader's bug): the input, what was kept (``records``) and the exception, on one line."""
    what = f"{type(e).__name__}: {e}".replace("\n", " ")
    what = what if len(what) <= 300 else what[:300] + " …"
    if records:
        return f"{given}: read only in part: {records:,} records, then {what} (the rest is not read)"
    return f"{given}: not read: {what}"


@dataclass
class SourceReport:
    """What was read from one input: the row of the ``sources`` table, plus notes for the summary."""

    source: str
    format: str
    bytes: int = 0
    # the size of the copy its reader counts ``bytes`` of (a file unpacked, a document flattened), None
    # when the reader counts the file given: progress says the given file's bytes (``notes.progress_line``)
    copy_bytes: int | None = None
    records: int = 0
    unparsed: int = 0
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unread: bool = False  # nothing of it could be read: missing, permission denied, refused by journalctl
    incomplete: bool = False  # read in part: its reader ended early (journalctl killed, a corrupt journal)
    zoneless: int = 0  # records whose only time is one printed without a zone (read as UTC)
    zoned: int = 0  # records whose time has a known zone
    yearless: int = 0  # journalctl short lines without a year that no line of the input dated
    pieces: int = 0  # records cut from a line, field or record too long to keep whole (the notes say which)
    first_ts: datetime | None = None  # the earliest and latest ts of its records (UTC)
    last_ts: datetime | None = None
    units_seen: set[str] = field(default_factory=set)  # the unit (pod, container) names it holds, read or not

    def __post_init__(self) -> None:
        self.source = as_text(self.source)  # a name that is no UTF-8 must still fit the tables


def as_text(name: str) -> str:
    """``name`` (a path as Python gives it) as valid UTF-8 text: bytes of the name that are no UTF-8
    (kept by Python as lone surrogates, which Parquet, JSON and the terminal refuse) shown as ``\\xNN``."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


@dataclass
class ReadOptions:
    """Options passed through to journalctl and used for unit selection and roles."""

    units: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None
    all_units: bool = False
    roles: dict[str, str] = field(default_factory=dict)


def read_regular(path: Path, cap: int = META_MAX) -> bytes:
    """The bytes of ``path`` (links followed) when it is a regular file of at most ``cap`` bytes: opened
    without blocking, so a named pipe is never waited on, and a pipe or device never read. Raises
    ``OSError`` whose ``strerror`` says why (not a regular file, over ``cap``, or the system's reason)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a pipe or device is not read)", str(path))
        data = f.read(cap + 1)
    if len(data) > cap:
        raise OSError(errno.EFBIG, f"over {cap:,} bytes: not read", str(path))
    return data


# The format of a file a bundle names outside itself: skipped and named, never read (``in_folder``).
OUTSIDE_BUNDLE = "outside-bundle"


def in_folder(folder: Path, name: str | Path) -> Path | None:
    """``folder / name`` when it stays inside ``folder`` once links are followed (a bundle names only
    its own files), else None: an absolute ``name``, one that climbs out with ``..``, or a link to a
    file elsewhere on the machine."""
    name = Path(name)
    if name.is_absolute() or ".." in name.parts:
        return None
    path = folder / name
    inside = Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder))
    return path if inside else None


class ContentDigest:
    """The SHA-256 of a file taken while a reader reads it whole, block by block (``update``); ``done`` once
    the reader reached its end: only then is ``hexdigest`` the file's (``identity``'s ``sha256``)."""

    def __init__(self) -> None:
        self.h = hashlib.sha256()
        self.done = False

    def update(self, data: bytes) -> None:
        self.h.update(data)

    def hexdigest(self) -> str:
        return self.h.hexdigest()
