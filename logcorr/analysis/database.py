"""The DuckDB side of OUT: ``OUT/logcorr.duckdb`` and ``OUT/views.sql``, derived from the Parquet tables.

``write(out)`` runs at the end of every successful ingest (``ingest.ingest``) and can be run
again by hand. It writes:

* ``OUT/logcorr.duckdb``: with ``embed=False`` (the default, issue 49) a view per table over
  ``<table>/**/*.parquet``, a path relative to OUT, so that the file opens in every copy of the folder
  from inside it (``cd OUT && duckdb logcorr.duckdb``; from elsewhere DuckDB says it finds no files
  ``events/**/*.parquet``), for 0.2-0.4 s of an ingest; an OUT whose path holds a comma (DuckDB's
  ``file_search_path`` is a list) gets views by absolute path instead. With ``embed=True`` every table
  is copied into the file, which then stands on its own (mailed alone, the Parquet folders gone), at
  the cost of a second copy of the data (at 1 M journal entries 179 MB beside 66 MB of Parquet and
  6.6 CPU s, a quarter of the ingest's: hence made on request, ``logcorr database --embed``). Both
  hold every saved query as a view (``SELECT * FROM abort_to_assert``), and a
  ``saved_queries`` table documenting them. It is written with DuckDB storage version ``STORAGE_VERSION`` ("v1.0.0", storage format 64),
  the oldest the current DuckDB writes, so DuckDB 0.10.0 and every later CLI open it; the saved-query
  views use ``getvariable`` and need DuckDB 1.1.0 or later (older CLIs read the tables and fail only
  on those views).
* ``OUT/views.sql``: views over the Parquet folders with paths relative to OUT, plus the saved
  queries, for a DuckDB CLI of any version ≥ 1.1: ``cd OUT && duckdb -init views.sql``.

Both are written to a temporary name first and renamed into place. This module stands in analysis,
beside ``saved``, because the file holds the saved queries; the views over the tables come from
``store.views``, which knows no query.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

import logcorr
from logcorr import interrupts
from logcorr.analysis import saved as saved_queries
from logcorr.analysis.saved import SavedQuery, view_order
from logcorr.interrupts import is_interrupt
from logcorr.store import output as store
from logcorr.store.views import (
    derived_view_sql,
    parquet_glob,
    parquet_view_sql,
    quote_ident,
    quote_literal,
    table_folders,
)

DB_NAME = "logcorr.duckdb"
VIEWS_NAME = "views.sql"
STORAGE_VERSION = "v1.0.0"
DOC_TABLE = "saved_queries"
MEMORY_LIMIT = "512MB"


class DatabaseError(Exception):
    """The DuckDB file or views.sql could not be written (OUT missing or read-only)."""


@dataclass
class DatabaseResult:
    """What ``write`` produced: the two files, rows per table, views created, and saved queries that
    could not be created as views (``{name: error}``, e.g. a column the tables lack)."""

    path: Path
    views_sql: Path
    tables: dict[str, int] = field(default_factory=dict)
    views: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


def write(
    out: Path,
    *,
    saved: dict[str, SavedQuery] | None = None,
    embed: bool = False,
) -> DatabaseResult:
    """Build ``OUT/logcorr.duckdb`` and ``OUT/views.sql`` from the Parquet tables of OUT.

    Args:
        out: an ingest output folder (``OUT/<table>/**/*.parquet``).
        saved: the saved queries to add as views (default: ``saved.load_saved()``).
        embed: copy the tables into the file (it then opens anywhere, alone, after OUT is copied,
            moved or mailed); else (the default) views over OUT's Parquet files by paths relative to
            OUT, which open from inside any copy of OUT.

    Returns:
        A ``DatabaseResult``. A saved query that does not bind on these tables is left out of the
        file, named in ``skipped`` and in the ``saved_queries`` table with its error; it does not
        stop the rest.

    Raises:
        FileNotFoundError: OUT does not exist.
        DatabaseError: the files cannot be written.
    """
    started = time.monotonic()
    given = Path(os.path.abspath(out))
    out = given.parent.resolve() / given.name  # OUT itself unresolved: it may be a link during a swap
    table_folders(out)  # FileNotFoundError before any lock file is made beside a wrong -d
    with store.locked(out):
        store.remove_leftovers(out)  # a killed database or ingest's temporary files
        return _write(out, saved, embed, started)


def points_elsewhere(out: Path) -> str | None:
    """The folder ``OUT/logcorr.duckdb``'s views read, when it is not OUT (OUT was copied or moved
    since the file was written), else None (also for an embedded file, one of views by paths relative
    to OUT, a missing one, or one that cannot be opened). Never raises."""
    path = Path(out) / "logcorr.duckdb"
    if not path.is_file():
        return None
    try:
        con = interrupts.connect(str(path), read_only=True)
        try:
            row = con.execute(
                "SELECT sql FROM duckdb_views() WHERE view_name = 'events' AND NOT internal"
            ).fetchall()
        finally:
            con.close()
    except duckdb.Error as e:
        if is_interrupt(e):
            raise
        return None
    m = re.search(r"read_parquet\('([^']*)/events/", row[0][0] or "") if row else None
    if not m:
        return None
    named = m.group(1).replace("[[]", "[").replace("[]]", "]").replace("[*]", "*").replace("[?]", "?")
    here = str(Path(os.path.abspath(out)))
    return None if named == here or Path(named) == Path(out).resolve() else named


def _write(out: Path, saved, embed: bool, started: float) -> DatabaseResult:
    folders = table_folders(out)
    saved = saved_queries.load_saved() if saved is None else saved
    target = out / DB_NAME
    tmp = out / f".{DB_NAME}.tmp-{os.getpid()}"
    result = DatabaseResult(target, out / VIEWS_NAME)
    for stale in (tmp, Path(f"{tmp}.wal")):
        stale.unlink(missing_ok=True)
    con = interrupts.connect()
    if "events" in folders:
        _refuse_overlapping_ids(con, folders["events"])
    relative = not embed and "," not in str(out)  # file_search_path is a comma-separated list
    key = _template_key(folders, saved) if relative else None
    if key is not None and (template := _template(key)):  # views bound before on tables of the same shape
        con.close()
        data, views, skipped = template
        tmp.write_bytes(data)
        result.views, result.skipped = list(views), dict(skipped)
        result.tables = {table: _rows(folder) for table, folder in folders.items()}
        return _swap(out, tmp, target, result, folders, saved, started)
    # Ingest runs on the GPU host next to a recovering service: keep the copy's memory bounded
    # (DuckDB spills to a temporary file past it) instead of DuckDB's default of 80 % of RAM.
    con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
    con.execute("SET preserve_insertion_order = false")  # the copy in half the time; rows have no order
    if relative:  # the views' relative paths bind here as they will in `cd OUT && duckdb logcorr.duckdb`
        con.execute(f"SET file_search_path = {quote_literal(str(out))}")
    try:
        con.execute(
            f"ATTACH {quote_literal(str(tmp))} AS lc (STORAGE_VERSION {quote_literal(STORAGE_VERSION)})"
        )
        con.execute("USE lc")
        for table, folder in folders.items():
            glob = parquet_glob(folder)
            create = "CREATE TABLE" if embed else "CREATE OR REPLACE VIEW"
            con.execute(
                parquet_view_sql(table, parquet_glob(table) if relative else glob, create, folder=folder)
            )
            # the row count from the Parquet footers: no data read
            result.tables[table] = con.execute(
                f"SELECT coalesce(sum(num_rows), 0) FROM parquet_file_metadata({quote_literal(glob)})"
            ).fetchone()[0]
        for sql in derived_view_sql(folders):
            con.execute(sql)
        _saved_views(con, saved, folders, result)
        con.execute("USE memory")
        con.execute("DETACH lc")
    except BaseException as e:
        con.close()
        for left in (tmp, Path(f"{tmp}.wal")):
            with contextlib.suppress(OSError):
                left.unlink(missing_ok=True)
        # a full disk surfaces as an IOException or as a commit that cannot write its WAL
        if isinstance(e, duckdb.IOException | duckdb.OutOfMemoryException | duckdb.TransactionException):
            said = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise DatabaseError(f"{target}: cannot write the DuckDB file: {said}") from None
        raise
    con.close()
    if key is not None:
        _keep_template(key, (tmp.read_bytes(), list(result.views), dict(result.skipped)))
    return _swap(out, tmp, target, result, folders, saved, started)


def _swap(out: Path, tmp: Path, target: Path, result: DatabaseResult, folders, saved, started: float):
    """The finished temporary file in place of ``target``, then ``views.sql`` beside it."""
    try:
        os.replace(tmp, target)
        store.write_atomic(
            result.views_sql, lambda f: f.write(views_sql(folders, saved, skipped=result.skipped))
        )
    except BaseException as e:  # an interrupt too: the temporary file is not left in OUT
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if not isinstance(e, OSError):
            raise
        raise DatabaseError(f"{out}: cannot write {DB_NAME} or {VIEWS_NAME}: {e.strerror or e}") from None
    result.seconds = time.monotonic() - started
    return result


# A file of views by relative paths holds nothing of its OUT but the shape of its tables: a process writing
# several OUTs (combine, a Python caller ingesting file by file, the test suite) binds the views of a shape
# once (1.1-1.2 CPU s: 21 table views and 42 saved queries) and copies the file for the others; the file is
# kept on disk too (``template_cache``), so a later process (the next `logcorr ingest`) copies it as well.
_TEMPLATES: dict[tuple, tuple[bytes, list[str], dict[str, str]]] = {}
TEMPLATES_KEPT = 4  # in memory, and on disk per cache folder
CACHE_ENV = "LOGCORR_CACHE"


def template_cache() -> Path | None:
    """The folder where files of views are kept between processes: ``$LOGCORR_CACHE``, else
    ``$XDG_CACHE_HOME/logcorr``, else ``~/.cache/logcorr``; None when ``$LOGCORR_CACHE`` is ``off`` or
    no home folder is known. Each kept file is ~1.3 MB, at most ``TEMPLATES_KEPT`` of them."""
    said = os.environ.get(CACHE_ENV)
    if said == "off":
        return None
    if said:
        return Path(said)
    try:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    except RuntimeError:  # no HOME and no passwd entry
        return None
    return base / "logcorr"


def _template(key: tuple) -> tuple[bytes, list[str], dict[str, str]] | None:
    """The file of views of ``key``'s shape, its views and skipped queries: from this process's memory,
    else from ``template_cache`` (checked against the SHA-256 its note gives; any doubt is a miss)."""
    if key in _TEMPLATES:
        return _TEMPLATES[key]
    folder = template_cache()
    if folder is None:
        return None
    name = _template_name(key)
    try:
        note = json.loads((folder / f"{name}.json").read_text())
        data = (folder / f"{name}.duckdb").read_bytes()
        if hashlib.sha256(data).hexdigest() != note["sha256"]:
            return None
        found = (data, list(note["views"]), dict(note["skipped"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    _remember(key, found)
    return found


def _keep_template(key: tuple, template: tuple[bytes, list[str], dict[str, str]]) -> None:
    """Keep a file of views in memory and in ``template_cache`` (its note written last: a file without
    its note is never read); the oldest files there past ``TEMPLATES_KEPT`` are removed. A cache folder
    that cannot be written costs only the next process its speed."""
    _remember(key, template)
    folder = template_cache()
    if folder is None:
        return
    name, (data, views, skipped) = _template_name(key), template
    note = {"sha256": hashlib.sha256(data).hexdigest(), "views": views, "skipped": skipped}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        store.write_atomic(folder / f"{name}.duckdb", lambda f: f.write(data), binary=True)
        store.write_atomic(folder / f"{name}.json", lambda f: f.write(json.dumps(note)))
        kept = sorted(folder.glob("views-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in kept[TEMPLATES_KEPT:]:
            old.unlink(missing_ok=True)
            old.with_suffix(".duckdb").unlink(missing_ok=True)
    except OSError:
        pass


def _remember(key: tuple, template: tuple[bytes, list[str], dict[str, str]]) -> None:
    while len(_TEMPLATES) >= TEMPLATES_KEPT:  # the oldest shape out (each file ~1.3 MB)
        _TEMPLATES.pop(next(iter(_TEMPLATES)))
    _TEMPLATES[key] = template


def _template_name(key: tuple) -> str:
    """The cache file name of ``key``: a digest of its text (every element is a str or a tuple of them)."""
    return "views-" + hashlib.sha256(repr(key).encode()).hexdigest()[:32]


def _template_key(folders: dict[str, Path], saved: dict) -> tuple:
    """What the views of the file bind to: the DuckDB and storage versions, each table's distinct Parquet
    schemas (column names and types, from the footers), the derived views, the saved queries' SQL."""
    shapes = []
    for table, folder in folders.items():
        parts = sorted(Path(folder).glob("**/*.parquet"))
        seen = {tuple((f.name, _duckdb_type(f.type)) for f in pq.read_schema(p)) for p in parts}
        shapes.append((table, tuple(sorted(seen))))
    # the header too: the file's saved_queries table documents each query
    bodies = tuple(
        (q.name, q.body(), q.question, q.tables, q.columns, q.parameters, q.reading) for q in saved.values()
    )
    version = (logcorr.__version__, duckdb.__version__, STORAGE_VERSION)
    return (*version, tuple(shapes), tuple(derived_view_sql(folders)), bodies)


def _duckdb_type(arrow_type) -> str:
    """An Arrow type as DuckDB binds it: ``large_string`` and ``string`` are both VARCHAR (a table with
    rows and one without are written with either), so they make one shape, not two."""
    return re.sub(r"\blarge_(string|binary|list)\b", r"\1", str(arrow_type))


def _rows(folder: Path) -> int:
    """The rows of a table's Parquet parts, from their footers."""
    return sum(pq.read_metadata(p).num_rows for p in Path(folder).glob("**/*.parquet"))


def _saved_views(con: duckdb.DuckDBPyConnection, saved: dict, folders: dict, result: DatabaseResult) -> None:
    """Each saved query as a view of the attached file, and the ``saved_queries`` table documenting
    them; a query that does not bind on these tables is named in ``result.skipped``."""
    docs = []
    for q in view_order(saved):
        error = None
        if q.name in folders:
            error = f"a table named {q.name} exists"
        else:
            try:
                con.execute(f"CREATE VIEW {quote_ident(q.name)} AS {q.body()}")
                result.views.append(q.name)
            except duckdb.Error as e:
                if is_interrupt(e):
                    raise
                error = str(e).strip().splitlines()[0]
        if error:
            result.skipped[q.name] = error
        docs.append(
            (
                q.name,
                q.question,
                ", ".join(q.tables),
                "\n".join(f"{c}: {t}" for c, t in q.columns),
                "\n".join(f"{p}: {t}" for p, t in q.parameters),
                q.reading,
                error is None,
                error,
            )
        )
    con.execute(
        f'CREATE TABLE "{DOC_TABLE}" (name VARCHAR, question VARCHAR, tables VARCHAR, columns VARCHAR, '
        "parameters VARCHAR, reading VARCHAR, view_created BOOLEAN, error VARCHAR)"
    )
    if docs:
        con.executemany(f'INSERT INTO "{DOC_TABLE}" VALUES (?, ?, ?, ?, ?, ?, ?, ?)', docs)


def refuse_two_ingests_of_one_origin(out: Path) -> None:
    """Raise ``DatabaseError`` naming both parts when OUT's ``events`` holds two separate ingests of one
    origin (see ``_refuse_overlapping_ids``): every command refuses such a folder, whose event ids
    would each name two records and whose counts would be doubled. Reads Parquet footers only; a
    folder without events passes."""
    events = store.stable_out(Path(out)) / "events"
    if events.is_dir() and next(events.rglob("*.parquet"), None) is not None:
        with interrupts.connect() as con:
            _refuse_overlapping_ids(con, events)


def _refuse_overlapping_ids(con: duckdb.DuckDBPyConnection, events: Path) -> None:
    """Raise ``DatabaseError`` when two ``events`` parts of one origin hold overlapping event ids:
    two separate ingests of one origin (the same host ingested into two outputs, or two outputs
    given the same ``--origin``) combined into one folder, whose ids would name two records each.
    Reads the Parquet footers' statistics only."""
    stats = con.execute(
        "SELECT file_name, min(TRY_CAST(stats_min_value AS BIGINT)), max(TRY_CAST(stats_max_value AS BIGINT)) "
        f"FROM parquet_metadata({quote_literal(parquet_glob(events))}) WHERE path_in_schema = 'event_id' "
        "GROUP BY file_name"
    ).fetchall()
    by_origin: dict[str, list[tuple[int, int, str]]] = {}
    for name, lo, hi in stats:
        # a file of several origins (``logcorr combine``'s) was checked when it was written
        if lo is not None and hi is not None and lo >> 40 == hi >> 40:
            by_origin.setdefault(Path(name).parent.name, []).append((lo, hi, name))
    for origin, spans in by_origin.items():
        spans.sort()
        for (_, hi, a), (lo, _, b) in zip(spans, spans[1:], strict=False):
            if lo <= hi:
                raise DatabaseError(
                    f"{a} and {b}: two separate ingests of {origin} (their event ids overlap) in one folder; "
                    "ingest one of them again with its own --origin NAME, or add it with --append"
                )


def views_sql(
    folders: dict[str, Path], saved: dict[str, SavedQuery], *, skipped: dict[str, str] | None = None
) -> str:
    """The text of ``OUT/views.sql``: ``SET TimeZone``, a view per Parquet folder (path relative to
    OUT), then each saved query as a view, each preceded by its question. Queries in ``skipped``
    are written commented out, with the reason."""
    skipped = skipped or {}
    lines = [
        f"-- logcorr {logcorr.__version__}: views over the Parquet tables of this folder and the saved queries.",
        "-- Use from this folder (paths are relative to it): cd OUT && duckdb -init views.sql",
        "-- Needs a DuckDB CLI >= 1.1 (getvariable). Parameters: SET VARIABLE room = 123; then query the view.",
        "SET TimeZone = 'UTC';",
        "",
    ]
    lines += [
        parquet_view_sql(table, parquet_glob(table), folder=folder) + ";" for table, folder in folders.items()
    ]
    lines += [sql + ";" for sql in derived_view_sql(folders)]
    for q in view_order(saved):
        lines += ["", f"-- {q.name}: {q.question}"]
        if q.name in skipped:
            lines += [f"-- not created here: {skipped[q.name]}", *(f"-- {x}" for x in q.body().splitlines())]
        else:
            lines += [f"CREATE OR REPLACE VIEW {quote_ident(q.name)} AS", q.body() + ";"]
    return "\n".join(lines) + "\n"
