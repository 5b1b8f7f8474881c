"""Reading one input, a stage at a time: ``open_input`` (its report and format), ``read_chunks`` (stage 1:
record chunks, by format), ``rejoined`` (multi-line records re-joined), ``enriched`` (stage 2: ``events``
rows); ``contained`` keeps an error of one input to that input's report. ``logcorr.ingest.read_input``
runs them, each a chunk ahead of the next on its own thread.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import polars as pl

from logcorr.inputs import (
    bundle,
    containers,
    dumps,
    export,
    exports,
    journal,
    packed,
    scrape,
    sniff,
    text,
    traces,
)
from logcorr.inputs import paths as input_files
from logcorr.inputs.rejoin import Rejoiner
from logcorr.inputs.source import (
    CHUNK_LINES,
    MAX_RECORD_BYTES,
    MAX_RECORD_LINES,
    OUTSIDE_BUNDLE,
    ContentDigest,
    InputError,
    SourceReport,
    failure,
)
from logcorr.interrupts import is_interrupt
from logcorr.pipeline.enrich import Enricher
from logcorr.pipeline.plan import OptionError
from logcorr.pipeline.run import Run


def open_input(run: Run, given: Path, known_fmt: str, scratch: Path) -> SourceReport | None:
    """The input's ``SourceReport`` with its format found, or None when there is nothing to read
    (skipped by name, unreadable, empty: said in its report)."""
    if known_fmt == OUTSIDE_BUNDLE:  # a bundle reads only its own files
        note = f"{given}: outside the bundle given (its manifest or a link names another file of this machine): not read"
        run.reports.append(SourceReport(str(given), "skipped", notes=[note]))
        return None
    if known_fmt == bundle.KEPT:  # a bundle's dmesg.txt, nvidia-smi.txt: listed with why
        run.reports.append(SourceReport(str(given), "skipped", notes=[bundle.kept_note(given)]))
        return None
    if known_fmt == bundle.UNLISTED:  # dropped into a bundle later: not read, so the run exits 3
        run.reports.append(
            SourceReport(str(given), "skipped", errors=[bundle.unlisted_note(given)], unread=True)
        )
        return None
    if known_fmt == "skipped":  # not an error: a note, kept out of manifest["errors"]
        why = input_files.not_a_log(given, run.plan.roots.get(given))
        pod = containers.skip_pod(given, run.plan.opts)
        fmt = "skipped-pod" if pod and not why else "skipped"
        run.reports.append(SourceReport(str(given), fmt, notes=[why or pod or ""]))
        return None
    path = given
    try:
        if known_fmt == "?" and not path.is_file():  # a pipe: read it once, into a file
            path = input_files.spool(given, scratch)
        fmt = sniff.sniff(path) if known_fmt == "?" else known_fmt
    except OSError as e:
        error = input_failure(given, e, 0, scratch) if e.errno in (errno.ENOSPC, errno.EDQUOT) else None
        error = error or f"{given}: {e.strerror or e}"
        run.reports.append(SourceReport(str(given), "unreadable", errors=[error], unread=True))
        return None
    report = SourceReport(str(given), fmt)
    report.path = path  # type: ignore[attr-defined]
    run.reports.append(report)
    if run.plan.repeats.get(given):
        report.notes.append(f"given {run.plan.repeats[given] + 1} times: read once")
    if fmt == "empty":
        report.errors.append(f"{given}: empty file")
        return None
    return report


def read_chunks(
    run: Run, path: Path, fmt: str, report: SourceReport, scratch: Path
) -> Iterator[pl.DataFrame]:
    """Stage 1, reading and parsing: record chunks of one input; journald's formats without the entries
    an earlier input gave (``run.seen``, None when there is only one input)."""
    opts = run.plan.opts
    if fmt in packed.REFUSED:
        raise InputError(
            f"{path}: a {fmt} file: not read (logcorr has no {fmt} decompressor: unpack it and name the files)"
        )
    if fmt in packed.ARCHIVES:  # a tar or zip piped in, or packed inside a folder's file
        raise InputError(
            f"{report.source}: a {fmt} archive: not read (an archive is unpacked when its file is named on the"
            " command line; or unpack it and name the folder)"
        )
    if fmt in packed.COMPRESSED:
        unpacked, damaged = input_files.unpack(path, scratch, fmt)
        inner = sniff.sniff(unpacked)
        report.notes.append(f"unpacked {fmt}: {inner}")
        report.copy_bytes = unpacked.stat().st_size
        if damaged:
            report.errors.append(damaged)
        return read_chunks(run, unpacked, inner, report, scratch)
    if fmt in exports.DOCUMENTS:  # OTLP logs, a Loki query_range answer, Elasticsearch hits
        flat = exports.flatten(path, fmt, scratch, report)
        report.copy_bytes = flat.stat().st_size  # its lines are counted, not the document's bytes
        return read_chunks(run, flat, "log-export", report, scratch)
    if fmt == "pickle":
        report.errors.append(
            f"{path}: a Python pickle that names no SGLang class: not read (only SGLang's crash and request "
            "dumps are, and none of their code runs)"
        )
        return iter(())
    if fmt in ("journal-dir", "journal"):
        chunks = journal.read_journal(path, opts, report)
    elif fmt == "export":
        chunks = journal.CaptureUnits(opts).read(
            export.read_export_file(path, report, _digest(run, path)), report
        )
    elif fmt == "json":
        chunks = journal.CaptureUnits(opts).read(
            text.read_text(path, fmt, report, _digest(run, path)), report
        )
    elif fmt == dumps.FORMAT:  # SGLang's crash or request dump, unpickled without running its code
        chunks = _dump_records(path, report, scratch)
    elif fmt == scrape.FORMAT:  # a Prometheus scrape: a record per sample
        chunks = scrape.read(path, report, run.plan.captured_at)
    elif fmt == scrape.BUNDLE_FORMAT:  # SGLang's incident bundle: its endpoint answers
        chunks = scrape.read_bundle(path, report)
    elif fmt == traces.FORMAT:  # OpenTelemetry spans (--enable-trace through a collector's file exporter)
        chunks = traces.read(path, report)
    elif fmt in bundle.FORMATS:  # a logcorr collect bundle's dumps (timed) and steps
        chunks = bundle.read(path, fmt, report)
    elif fmt in containers.FORMATS:  # Docker json-file, CRI, kubectl, stern, a log platform's export
        if fmt == "log-export":
            path = exports.oldest_first(path, scratch, report)
        chunks = containers.read(path, fmt, opts, report)
    else:
        chunks = text.read_text(path, fmt, report, _digest(run, path))
    if run.seen is None or fmt in ("pyspy", "pyspy-json", "bundle-pyspy"):
        return chunks
    return run.seen.unseen(chunks, report, journald=fmt in ("journal-dir", "journal", "export", "json"))


def _digest(run: Run, path: Path) -> ContentDigest | None:
    """A ``ContentDigest`` for the reader of ``path`` when it is an input whose identity waits for its
    content (``Plan.deferred``; not a copy unpacked or spooled from it), kept in ``run.digests``."""
    if path not in run.plan.deferred:
        return None
    return run.digests.setdefault(path, ContentDigest())


def _dump_records(path: Path, report: SourceReport, scratch: Path) -> Iterator[pl.DataFrame]:
    """``dumps.read``, a file it refuses named in the report and nothing read from it (``unread``)."""
    try:
        yield from dumps.read(path, report, scratch)
    except dumps.DumpError as e:
        report.errors.append(str(e))
        report.unread = report.records == 0


# Readers whose every record is a stream of its own, whole: the re-joiner holds none of them back
WHOLE_RECORDS = (dumps.FORMAT, scrape.FORMAT, scrape.BUNDLE_FORMAT, traces.FORMAT)


def rejoined(chunks: Iterator[pl.DataFrame], report: SourceReport, forced: str | None) -> Generator:
    """Stage 1's second half, on the reading thread: one input's chunks re-joined into logical records
    (one frame per chunk; the last with the record the re-joiner held back, so an input of one chunk is
    enriched whole and a role its last record shows reaches the others). On the reading thread because
    that thread uses few other regexes: polars keeps only 32 compiled patterns per thread, and the
    re-joiner's record-start pattern (every header family) costs 2.5 ms to compile again."""
    rejoin = Rejoiner(join_all=forced is not None, whole=report.format in WHOLE_RECORDS)
    held = None
    try:
        for chunk in chunks:
            if held is not None:
                yield held
            held = rejoin.feed(chunk)
        tail = rejoin.finish()
        yield tail if held is None else pl.concat([held, tail], how="vertical_relaxed")
        report.pieces += rejoin.pieces
        if rejoin.pieces:
            report.notes.append(
                f"{rejoin.pieces:,} piece(s) of records over {MAX_RECORD_LINES:,} lines or"
                f" {MAX_RECORD_BYTES >> 20} MiB: kept in pieces, each marked in entry_error"
            )
    finally:
        getattr(chunks, "close", lambda: None)()  # stops journalctl when this stage stops early


# Records per chunk for the stages after reading (``batched``): two 16 MB blocks of a journald capture
# (15-17 k entries of about 1 KB each). Four (``CHUNK_LINES``) cut their CPU by a third again, but the
# ingest's peak RSS grew to 0.95 GB (0.73 GB with one block, 0.82 GB with two) on the 1 M day (issue 49).
BATCH_ROWS = CHUNK_LINES // 2


def batched(joined: Generator, rows: int | None = None) -> Generator:
    """Stage 1's output regrouped for the stages after it: consecutive re-joined frames of one input
    joined into chunks of up to ``rows`` records (default ``BATCH_ROWS``; a frame that holds more is passed whole), in input
    order. Every later stage pays a fixed cost per chunk (about 300 polars calls, 60 ms whatever the
    rows), which frames joined pay once; the re-joiner itself is not cheaper on larger frames, so it
    runs on the reader's blocks as they come."""
    rows = BATCH_ROWS if rows is None else rows  # read at the call: a test sets smaller pieces
    held: list[pl.DataFrame] = []
    n = 0
    first = True
    try:
        for frame in joined:
            # the first frame goes on alone: the later stages start a block earlier (the pipeline fills
            # while one core reads the second block)
            if held and (first or n + frame.height > rows):
                first = False
                yield pl.concat(held, how="vertical_relaxed") if len(held) > 1 else held[0]
                held, n = [], 0
            held.append(frame)
            n += frame.height
        if held:
            yield pl.concat(held, how="vertical_relaxed") if len(held) > 1 else held[0]
    finally:
        joined.close()


def enriched(joined: Generator, report: SourceReport, forced: str | None, enrich: Enricher) -> Generator:
    """Stage 2: classified records of one input's re-joined chunks (one frame per chunk)."""
    try:
        for recs in joined:
            if recs.height:
                yield enrich(recs, getattr(report, "unit_roles", {}), forced)
    finally:
        joined.close()  # stops the reading stage (and journalctl) when this one stops early


def lazy(make: Callable[[], Iterator[pl.DataFrame]]) -> Iterator[pl.DataFrame]:
    """The chunks of ``make()``, called when the first is asked for: on the reading thread, where what
    it raises is the input's error (``contained``)."""
    chunks = make()
    try:
        yield from chunks
    finally:
        getattr(chunks, "close", lambda: None)()


def contained(stages: Iterator, report: SourceReport, given: Path, scratch: Path) -> Iterator:
    """The items of one input's reading stages; an exception they raise ends them, named in ``report``
    (``InputError`` as it says, any other by ``input_failure``), the items before it kept. ``AlreadyIngested``
    becomes ``OptionError``; ``MemoryError`` goes up."""
    try:
        yield from stages
    except input_files.AlreadyIngested as e:
        raise OptionError(str(e)) from None
    except InputError as e:
        report.errors.append(str(e))
        report.unread = report.records == 0
    except MemoryError:
        raise
    except Exception as e:  # noqa: BLE001 — one hostile input costs only itself
        if is_interrupt(e):
            raise
        report.errors.append(input_failure(given, e, report.records, scratch))
        report.unread = report.records == 0
        report.incomplete = not report.unread


def input_failure(given: Path, e: BaseException, records: int, scratch: Path) -> str:
    """The error text of an input whose reading raised ``e`` (``failure``); a disk full or over quota
    names the folder that is: while an input is read, logcorr writes only its copy in ``scratch`` (a
    ``.gz``/``.xz`` unpacked, a pipe spooled, a log platform's export flattened), in TMPDIR."""
    if not (isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)):
        return failure(given, e, records)
    kept = f"read only in part: {records:,} records, then " if records else "not read: "
    return (
        f"{given}: {kept}{scratch.parent} (TMPDIR), where logcorr unpacks or copies it, is full ({e.strerror}):"
        " set TMPDIR to a folder with room"
    )


def input_size(path: Path, fmt: str) -> int | None:
    """The size of the file an input's progress is told in (``notes.progress_line``; a reader that counts
    a copy, unpacked or flattened, has it scaled by ``SourceReport.copy_bytes``): None for a journal
    (journalctl's output is counted) and a pipe."""
    if fmt in ("journal", "journal-dir") or not path.is_file():
        return None
    return path.stat().st_size
