"""The plan of one ingest, decided before anything is read: the inputs found and put in reading order,
the options read (``--since/--until`` as UTC, ``--captured-at``), the origin (partition) and the run's tag.

``make_plan`` returns a ``Plan`` (nothing in it changes once reading starts); a time option that cannot
be used raises ``OptionError`` before any input is opened.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import polars as pl

from logcorr.clocks import TIME_OF_DAY, on_first_day
from logcorr.inputs import bundle, journal, sniff
from logcorr.inputs import paths as input_files
from logcorr.inputs.source import OUTSIDE_BUNDLE, InputError, ReadOptions, SourceReport, failure
from logcorr.interrupts import is_interrupt
from logcorr.store.schema import ROLES

# Inputs a plan names but never opens: skipped by name or kind, or outside the bundle that named them.
NOT_READ = ("skipped", OUTSIDE_BUNDLE, bundle.KEPT, bundle.UNLISTED)


class OptionError(ValueError):
    """An option's value cannot be used; the message names the option."""


def parse_roles(pairs: list[str]) -> dict[str, str]:
    """``--role UNIT=ROLE`` values as ``{unit: role}`` (``ReadOptions.roles``). Raises ``OptionError``
    for a value without ``=`` or a role not in ``schema.ROLES``."""
    roles = {}
    for pair in pairs:
        unit, sep, role = pair.partition("=")
        if not sep or role not in ROLES:
            raise OptionError(f"--role {pair!r}: expected UNIT=ROLE with ROLE one of {', '.join(ROLES)}")
        roles[unit] = role
    return roles


@dataclass
class Plan:
    """What one ingest reads and how (``make_plan``); nothing in it changes once reading starts."""

    out: Path
    opts: ReadOptions
    append: bool
    started: float  # time.monotonic() at the start
    captured_at: datetime | None  # --captured-at, UTC
    missing: list[SourceReport]  # the reports of the paths not found (``Run.reports`` starts with them)
    inputs: list[tuple[Path, str]]  # (path, format or "?") in reading order (``_read_order``)
    repeats: dict[Path, int]  # per input kept, how many more times it was given
    window: tuple[datetime | None, datetime | None] | None  # --since/--until (``time_window``)
    dumps_outside: bool  # --captured-at is outside the window: so are the bare dumps
    origin: str
    selection: str  # what of an input was read: the same path read with other units or times is another input
    identities: dict[Path, dict]  # per input read, ``input_files.identity``
    run_tag: str  # 8 hex digits naming what this ingest read (``Output``'s ``run``)
    deferred: set[Path]  # inputs whose identity's sha256 is taken while reading (``finish`` completes it)
    roots: dict[Path, Path]  # per input found in a folder, the PATH given that holds it
    window_notes: list[str]  # how a --since/--until without a date was dated (``_dated``)


def make_plan(
    paths: Iterable[Path],
    out: Path,
    opts: ReadOptions,
    *,
    append: bool,
    captured_at: str | None,
    origin: str | None,
) -> Plan:
    """Find the inputs (``input_files.discover``; a path not found gets a ``missing`` report), put them
    in reading order and read the options. Raises ``OptionError`` for a time option that cannot be used,
    or a ``$LOGCORR_STREAM_CAP`` that is no size (checked before anything is read, pipe or not)."""
    captured = _parse_time("--captured-at", captured_at) if captured_at else None
    try:
        input_files.stream_cap()
    except ValueError as e:
        raise OptionError(str(e)) from None
    started = time.monotonic()
    missing: list[SourceReport] = []
    found: list[tuple[Path, str]] = []
    roots: dict[Path, Path] = {}
    for given in map(Path, paths):
        problems: list[tuple[Path, str]] = []  # what of a folder could not be listed or looked at
        try:
            inside = input_files.discover(given, opts, problems)
            roots.update((p, given) for p, _ in inside if p != given)
            found += inside
        except InputError as e:
            missing.append(SourceReport(str(given), "missing", errors=[str(e)], unread=True))
        except MemoryError:
            raise
        except Exception as e:  # noqa: BLE001 — one hostile PATH costs only itself
            if is_interrupt(e):
                raise
            problems.append((given, failure(given, e)))
        missing += [SourceReport(str(p), "unreadable", errors=[why], unread=True) for p, why in problems]
    inputs, repeats = _read_order(found)
    opts, window_notes = _dated(opts, inputs, out if append else None)
    window = time_window(opts, inputs)
    since, until = window or (None, None)
    at = captured  # a bare dump's time: when it is outside --since/--until, so are the dumps
    dumps_outside = at is not None and not (since or at) <= at <= (until or at)
    origin = origin or default_origin(inputs, out, append)
    selection = (
        f"units={','.join(opts.units)} all_units={opts.all_units} since={opts.since} until={opts.until}"
    )
    read = [p for p, fmt in inputs if fmt not in NOT_READ]
    # without --append nothing is compared before reading: a large file's digest is taken as it is read
    deferred = (
        set()
        if append
        else {p for p in read if _signature(p).get("size", 0) >= input_files.DIGEST_WHILE_READING}
    )
    identities = {p: input_files.identity(p, captured, content=p not in deferred) for p in read}
    # the part-<n>-<tag>.parquet of two outputs differ unless they read the same data (a file whose digest
    # is not taken yet: the same file, by its size and modification time)
    idents = sorted(
        json.dumps({**i, **(_signature(p) if p in deferred else {})}, sort_keys=True)
        for p, i in identities.items()
    )
    run_tag = hashlib.sha256(json.dumps([origin, selection, idents]).encode()).hexdigest()[:8]
    return Plan(
        deferred=deferred,
        out=out,
        opts=opts,
        append=append,
        started=started,
        captured_at=captured,
        missing=missing,
        inputs=inputs,
        repeats=repeats,
        window=window,
        dumps_outside=dumps_outside,
        origin=origin,
        selection=selection,
        identities=identities,
        run_tag=run_tag,
        roots=roots,
        window_notes=window_notes,
    )


def _read_order(inputs: list[tuple[Path, str]]) -> tuple[list[tuple[Path, str]], dict[Path, int]]:
    """The inputs in reading order: journals first (the fullest record of a host: a capture given
    with its journal then adds only the entries the journal lacks, and a traceback or dump the two
    share stays one record), each file or folder once however often it was given or reached (by a
    link, a hard link, ``a/`` and ``a``: one device and inode). Returns the inputs and, per input
    kept, how many more times it came."""
    kept: dict[tuple[int, int] | str, tuple[Path, str]] = {}
    repeats: dict[Path, int] = {}
    for path, fmt in inputs:
        key: tuple[int, int] | str = str(path)  # a pipe is read as it is
        if path.is_file() or path.is_dir():
            st = path.stat()
            key = (st.st_dev, st.st_ino)
        if key in kept:
            first = kept[key][0]
            repeats[first] = repeats.get(first, 0) + 1
        else:
            kept[key] = (path, fmt)
    journal_first = sorted(kept.values(), key=lambda i: not is_journal(*i))
    return journal_first, repeats


def is_journal(path: Path, fmt: str) -> bool:
    """A journal folder or file: by format, by its first bytes, or by a name like ``system.journal~``
    or ``user-1000.journal.xz`` (what is packed cannot be looked into before it is unpacked); never
    an input that is not read (``NOT_READ``)."""
    if fmt in NOT_READ:
        return False
    if fmt == "journal-dir" or ".journal" in path.name:
        return True
    try:
        return path.is_file() and sniff.sniff(path) == "journal"
    except OSError:
        return False


def _dated(
    opts: ReadOptions, inputs: list[tuple[Path, str]], out: Path | None
) -> tuple[ReadOptions, list[str]]:
    """``opts`` with a ``--since/--until`` given as a bare time of day (``21:34``) dated on the data's
    first day (UTC), as every command does (``clocks.on_first_day``), and what to say about it. The
    data's days are known before reading for journals (their first and last entries) and, with
    ``--append``, for OUT (``out``); other inputs are read only later: then a clear refusal
    (``OptionError``)."""
    bare = [t for t in (opts.since, opts.until) if t and TIME_OF_DAY.fullmatch(t.strip())]
    if not bare:
        return opts, []
    ends = [t for p, fmt in inputs if is_journal(p, fmt) for t in journal.entry_span(p) if t]
    if out is not None and (out / "events").is_dir():
        ts = pl.scan_parquet(out / "events" / "**" / "*.parquet", hive_partitioning=False).select("ts")
        ends += [
            t
            for t in ts.select(pl.col("ts").min().alias("a"), pl.col("ts").max().alias("b")).collect().row(0)
            if t
        ]
    first, last = (min(ends), max(ends)) if ends else (None, None)
    notes, dated = [], {}
    for flag, given in (("--since", opts.since), ("--until", opts.until)):
        if not given or not TIME_OF_DAY.fullmatch(given.strip()):
            continue
        if first is None:
            raise OptionError(
                f"{flag} {given!r}: a time of day needs a date, and the data's first day is known before"
                " reading only for a journal (or OUT with --append); give the date too ('2025-10-29 21:30')"
            )
        dated[flag], note = on_first_day(given, first, last)
        notes.append(f"{flag} {note}")
    return replace(
        opts, since=dated.get("--since", opts.since), until=dated.get("--until", opts.until)
    ), notes


# journalctl's own --since/--until forms that are no ISO time (systemd.time(7)): a keyword, a
# relative time ("-1h", "+3h 5min", "2h ago"), Unix seconds after "@".
JOURNALCTL_TIME = re.compile(
    r"(?:now|today|yesterday|tomorrow|@\d+(?:\.\d+)?|[+-]?\s*\d+\s*[a-zµ]+(?:\s+\d+\s*[a-zµ]+)*(?:\s+ago)?)",
    re.IGNORECASE,
)


def time_window(
    opts: ReadOptions, inputs: list[tuple[Path, str]]
) -> tuple[datetime | None, datetime | None] | None:
    """``--since/--until`` as UTC datetimes: the window every record's first line must be in (for
    a journal, journalctl reads it a little wider: ``journal.journalctl_window``). ISO forms:
    ``2025-10-29 21:30``, ``2025-10-29T21:30:00+02:00``; no offset means UTC. Raises ``OptionError``
    naming the option for anything else, unless every input is a journal: journalctl also takes
    its own syntax (``yesterday``, ``-1h``), and then cuts alone (None)."""
    if not opts.since and not opts.until:
        return None
    others = [str(p) for p, fmt in inputs if fmt not in NOT_READ and not is_journal(p, fmt)]
    try:
        bounds = (("--since", opts.since), ("--until", opts.until))
        window = tuple(_parse_time(flag, text) if text else None for flag, text in bounds)
    except OptionError as e:
        if not others and all(JOURNALCTL_TIME.fullmatch(t.strip()) for t in (opts.since, opts.until) if t):
            return None
        if not others:  # refused here, not by journalctl (whose refusal reads as a damaged journal)
            raise OptionError(
                f"{e}; with journals journalctl's own forms work too ('yesterday', 'today', '-1h', '2h ago',"
                " '@1761773640')"
            ) from None
        raise OptionError(
            f"{e}; journalctl's own forms ('yesterday', '-1h') work only when every input is a journal, "
            f"and {', '.join(others[:3])}{' …' if len(others) > 3 else ''} is not"
        ) from None
    if window[0] and window[1] and window[1] < window[0]:
        raise OptionError(
            f"--until {opts.until} is before --since {opts.since}: nothing could be in the window"
        )
    return window


def _parse_time(option: str, text: str) -> datetime:
    t = journal.iso_utc(text)
    if t is None:
        raise OptionError(f"{option} {text!r}: use a time like '2025-10-29 21:30' (UTC, or with an offset)")
    return t


def default_origin(inputs: list[tuple[Path, str]], out: Path, append: bool) -> str:
    """The default partition name of an ingest: the host(s) its data comes from (``input_files.hosts_in``:
    journald's ``_HOSTNAME``), never the machine running the ingest (the laptop several nodes'
    journals are copied to). Several hosts: their names joined by ``+`` (the first three, then how
    many more). None named by the data: with ``--append``, the origin OUT has (dumps added to a
    node's output are that node's); else ``logs-<digest of the inputs' names>``."""
    hosts = sorted(set().union(*(input_files.hosts_in(p, fmt) for p, fmt in inputs if fmt not in NOT_READ)))
    if hosts:
        return "+".join(hosts[:3]) + (f"+{len(hosts) - 3}-more" if len(hosts) > 3 else "")
    if append:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            prev = json.loads((out / "manifest.json").read_text())
            if prev.get("origin"):
                return str(prev["origin"])
    names = "\n".join(sorted(p.name for p, _ in inputs))
    return f"logs-{hashlib.sha256(names.encode(errors='surrogateescape')).hexdigest()[:8]}"


def _signature(path: Path) -> dict[str, int]:
    """A regular file's size and modification time (ns): what tells two versions of one file apart before
    its content is read; ``{}`` for anything else or what cannot be read."""
    try:
        st = path.stat() if path.is_file() else None
    except OSError:
        return {}
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns} if st else {}
