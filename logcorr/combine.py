"""Several hosts' OUTs combined into one folder whose tables are one Parquet file each.

``logcorr ingest`` on each node writes ``OUT/<table>/origin=<host>/part-….parquet``; copying N such
folders into one gives N part files per table, and every reader (the saved queries' views, the
timeline's scans) then opens, binds and plans N files per table per use: at 16 hosts of 20,000 entries
that cost more than the rows (issue 49). ``combine`` reads every part of every table of the given OUTs
and writes each table as one file, ``ALL/<table>/origin=combined/part-0-<digest>.parquet`` (rows of each
OUT in turn, in the order given, each OUT's rows in its own order, except that ``events``' records that
are a batch line alone follow all the others, in the same order: ``LAST``; ``host`` names each row's host),
plus one ``manifest.json`` holding every OUT's inputs, rows and next event ids (so ``--append``
continues each origin's ids), and ``ALL/logcorr.duckdb`` and ``ALL/views.sql`` (``database.write``).
The folder is written beside ALL under a temporary name and renamed into place whole. Like ``ingest``,
a command's plain function on top of the stages: it writes the store's tables and then the DuckDB file
of ``analysis.database``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

import logcorr
from logcorr import interrupts
from logcorr.analysis import database
from logcorr.interrupts import is_interrupt
from logcorr.store import output as store
from logcorr.store.schema import TABLES
from logcorr.store.views import quote_literal, table_folders

COMBINED = "origin=combined"  # the partition folder of a combined table's one file

# Rows a table's file holds after all its others, so that they fill row groups of their own: in
# ``events`` the records that are a batch line alone (nine in ten records of a serving day, which no
# rule searching text reads: ``finding_kinds.RECORDS_SQL``). A query filtering them out by ``kind`` and
# ``n_lines`` then skips those row groups by their statistics instead of decoding every record's text:
# ``findings``' records at 64 hosts 0.24 -> 0.03 CPU s (issue 49).
LAST = {"events": "kind = 'batch' AND n_lines = 1"}
ORIGIN_SHIFT = 40  # an event id's origin tag: bits 40-52 (``ingest``)


class CombineError(Exception):
    """The OUTs cannot be combined (one is no logcorr output, two hold one origin's overlapping ids, ALL
    exists and is not a combined folder, a write failed)."""


@dataclass
class CombineResult:
    """What ``combine`` wrote: ALL, the OUTs read, rows and input part files per table, seconds."""

    path: Path
    outs: list[Path]
    rows: dict[str, int] = field(default_factory=dict)
    parts_read: int = 0
    seconds: float = 0.0


def combine(outs: list[Path], dest: Path, *, embed: bool = False) -> CombineResult:
    """Combine the OUTs ``outs`` (each written by ``logcorr ingest``, or by ``combine``) into ``dest``.

    Args:
        outs: two or more ingest output folders (one is accepted too: its parts compacted).
        dest: the combined folder (ALL); replaced when it is a folder ``combine`` wrote before.
        embed: copy the tables into ``ALL/logcorr.duckdb`` (``database.write``); else views.

    Returns:
        A ``CombineResult``: rows per table (from the files written), the part files read.

    Raises:
        CombineError: an OUT is missing, damaged or no logcorr output; two OUTs hold overlapping
            event ids of one origin (the same host ingested twice); ALL is one of ``outs``, or exists
            and was not written by ``combine``; a write failed (disk full, read-only).
    """
    started = time.monotonic()
    given = list(outs)
    outs = [store.stable_out(Path(o)) for o in outs]
    dest = store.real_out(Path(os.path.abspath(dest)))
    if not outs:
        raise CombineError("no OUT to combine: name the output folders of each host's ingest")
    _refuse_one_folder_twice(given, outs)
    _refuse_nested(given, outs, dest)
    folders = []
    for out in outs:
        try:
            store.check_intact(out)
            folders.append(table_folders(out))
        except (FileNotFoundError, store.OutputError) as e:
            raise CombineError(str(e)) from None
        if not (out / "manifest.json").is_file():
            raise CombineError(f"{out}: not a logcorr output folder (no manifest.json)")
        if dest.exists() and out.resolve() == dest.resolve():
            raise CombineError(f"{dest}: is one of the OUTs combined; -o names a new folder")
    if dest.exists() and not _combined_before(dest):
        raise CombineError(
            f"{dest}: exists and was not written by logcorr combine; choose another -o (or remove it)"
        )
    parts = {t: [p for f in folders if t in f for p in sorted(f[t].glob("**/*.parquet"))] for t in TABLES}
    parts = {t: ps for t, ps in parts.items() if ps}
    result = CombineResult(dest, outs, parts_read=sum(map(len, parts.values())))
    digest = hashlib.sha256("\n".join(p.name for ps in parts.values() for p in ps).encode()).hexdigest()[:12]
    with store.locked(dest):
        tmp = dest.parent / f".{dest.name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            with interrupts.connect() as con:
                con.execute(f"SET memory_limit = '{database.MEMORY_LIMIT}'")  # spills beyond: bounded
                if "events" in parts:
                    _refuse_one_origin_twice(con, parts["events"])
                for table, files in parts.items():
                    result.rows[table] = _compact(
                        con, files, tmp / table / COMBINED / f"part-0-{digest}.parquet", LAST.get(table)
                    )
            manifest = _manifest(outs, result.rows)
            (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
            old = dest.parent / f".{dest.name}.old-{os.getpid()}"
            if dest.exists():
                os.rename(dest, old)
            os.rename(tmp, dest)
            shutil.rmtree(old, ignore_errors=True)
        except BaseException as e:
            shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(e, OSError | duckdb.IOException | duckdb.OutOfMemoryException) and not is_interrupt(
                e
            ):
                said = getattr(e, "strerror", None) or str(e).strip().splitlines()[0]
                raise CombineError(f"{dest}: cannot be written: {said}; nothing changed") from None
            raise
        try:
            database.write(dest, embed=embed)
        except database.DatabaseError as e:
            raise CombineError(str(e)) from None
    result.seconds = time.monotonic() - started
    return result


def _refuse_one_folder_twice(given: list, outs: list[Path]) -> None:
    """Raise ``CombineError`` when two arguments (``given``) resolve to one folder (``outs``, their real
    paths: the same name, a link to it, ``./x/``): its rows would be read twice."""
    seen: dict[Path, object] = {}
    for arg, out in zip(given, outs, strict=True):
        if out in seen:
            raise CombineError(
                f"{seen[out]} and {arg}: name one folder ({out}); its rows would be read twice. "
                "Name each OUT once"
            )
        seen[out] = arg


def _refuse_nested(given: list, outs: list[Path], dest: Path) -> None:
    """Raise ``CombineError`` when ALL (``dest``) lies inside one of the OUTs combined, or an OUT inside
    ALL: the next ingest of that OUT, or the next combine into ALL, would replace the other whole."""
    target = dest.resolve()
    for arg, out in zip(given, outs, strict=True):
        if target != out and target.is_relative_to(out):
            raise CombineError(
                f"{dest}: is inside {arg}, one of the OUTs combined; -o names a folder outside it"
            )
        if target != out and out.is_relative_to(target):
            raise CombineError(
                f"{arg}: is inside {dest}, which combine replaces whole; -o names another folder"
            )


def _combined_before(dest: Path) -> bool:
    """Whether ``dest`` is a folder ``combine`` wrote (its manifest names the OUTs it combined)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        return bool(json.loads((dest / "manifest.json").read_text()).get("combined_from"))
    return not any(dest.iterdir()) if dest.is_dir() else False


def _compact(con: duckdb.DuckDBPyConnection, files: list[Path], target: Path, last: str | None = None) -> int:
    """Write the rows of ``files`` (one table's parts, in that order, columns by name: a column a part
    lacks is null there) into the one Parquet file ``target`` (zstd); returns its rows. ``last``, an SQL
    condition on the table's columns (``LAST``), puts the rows it holds for after every other row, each
    part's rows in their order on either side: those rows then fill row groups of their own."""
    target.parent.mkdir(parents=True)
    names = ", ".join(quote_literal(str(f)) for f in files)
    rows = f"read_parquet([{names}], union_by_name = true, hive_partitioning = false"
    if last is None:
        select = f"SELECT * FROM {rows})"
    else:  # the parts' order, then each part's own: the rows as written, the rows of ``last`` after
        select = (
            f"SELECT * EXCLUDE (filename, file_row_number) FROM {rows}, filename = true, "
            f"file_row_number = true) ORDER BY coalesce({last}, false), list_position([{names}], filename), "
            "file_row_number"
        )
    con.execute(f"COPY ({select}) TO {quote_literal(str(target))} (FORMAT parquet, COMPRESSION zstd)")
    return con.execute(
        f"SELECT num_rows FROM parquet_file_metadata({quote_literal(str(target))})"
    ).fetchone()[0]


def _refuse_one_origin_twice(con: duckdb.DuckDBPyConnection, files: list[Path]) -> None:
    """Raise ``CombineError`` when two ``events`` part files hold overlapping event ids of one origin
    (the origin tag of the id, bits 40-52): one host ingested twice into two OUTs, whose ids would each
    name two records. Reads the ``event_id`` column of every part."""
    names = ", ".join(quote_literal(str(f)) for f in files)
    spans = con.execute(
        f"SELECT event_id >> {ORIGIN_SHIFT} AS tag, filename, min(event_id), max(event_id) "
        f"FROM read_parquet([{names}], filename = true, hive_partitioning = false) "
        "GROUP BY ALL ORDER BY tag, min(event_id)"
    ).fetchall()
    for (tag, a, _, hi), (tag2, b, lo, _) in zip(spans, spans[1:], strict=False):
        if tag == tag2 and lo <= hi:
            raise CombineError(
                f"{a} and {b}: two separate ingests of one origin (their event ids overlap); ingest one of "
                "them again with its own --origin NAME, or add it to the other with --append"
            )


def _manifest(outs: list[Path], rows: dict[str, int]) -> dict:
    """ALL's manifest: every OUT's inputs (each with the OUT it came from), the rows written, the time
    span of them all, each origin's next event id, every OUT's errors, and the OUTs combined."""
    ms = [json.loads((o / "manifest.json").read_text()) for o in outs]
    ends = [t for m in ms for t in m.get("time_span", []) if t]
    next_ids: dict[str, int] = {}
    for m in ms:
        for origin, n in (m.get("next_event_id") or {}).items():
            next_ids[origin] = max(next_ids.get(origin, 0), int(n))
    origins = {m.get("origin") for m in ms}
    return {
        "logcorr_version": logcorr.__version__,
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "combined_from": [str(o) for o in outs],
        "inputs": [i | {"out": str(o)} for o, m in zip(outs, ms, strict=True) for i in m.get("inputs", [])],
        "rows": rows,
        "time_span": [min(ends), max(ends)] if ends else [None, None],
        **({"origin": origins.pop()} if len(origins) == 1 else {}),
        "next_event_id": next_ids,
        "errors": [e for m in ms for e in m.get("errors", [])],
    }
