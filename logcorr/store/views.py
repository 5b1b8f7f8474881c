"""OUT's tables as DuckDB views: which table folders OUT holds, the SQL of a view over a folder's
Parquet parts, and the views an older OUT needs for the tables it lacks.

Every reader of OUT builds its connection from these: ``analysis.saved.connect`` (queries, report,
timeline), ``analysis.database`` (``OUT/logcorr.duckdb`` and ``OUT/views.sql``) and ``combine``. The
table names come from the contract (``store.schema.TABLES``); nothing here knows the saved queries.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from logcorr.store import processes
from logcorr.store.output import glob_escape
from logcorr.store.schema import TABLES, empty_view_sql, null_columns_sql


def table_folders(out: Path) -> dict[str, Path]:
    """``{table: folder}`` for every folder of OUT holding Parquet parts (``OUT/<table>/**/*.parquet``:
    one ``origin=NAME`` partition per host whose output was placed here). Only the names of the
    table contract (``schema.TABLES``) count: any other folder is passed over, so a folder name copied
    in from elsewhere never reaches SQL. Raises ``FileNotFoundError``
    when OUT does not exist or holds neither tables nor a manifest (not an ingest output)."""
    if out.is_file():
        raise FileNotFoundError(f"{out}: is a file; -d names the folder logcorr ingest -o wrote")
    if not out.is_dir():
        raise FileNotFoundError(f"{out}: no such folder; run logcorr ingest first or pass -d OUT")
    folders = {
        p.name: p
        for p in sorted(out.iterdir())
        if p.name in TABLES and p.is_dir() and any(p.glob("**/*.parquet"))
    }
    if not folders and not (out / "manifest.json").exists():
        raise FileNotFoundError(
            f"{out}: not a logcorr output folder (no tables, no manifest.json); -d names the folder "
            "logcorr ingest -o wrote"
        )
    return folders


def quote_literal(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def quote_ident(name: str) -> str:
    """``name`` as a quoted SQL identifier (``"`` doubled, as DuckDB reads it)."""
    return '"' + name.replace('"', '""') + '"'


def parquet_glob(folder: Path | str) -> str:
    """The DuckDB glob of every Parquet part below ``folder``, the folder's own path escaped
    (``store.glob_escape``) so that only its parts match."""
    return glob_escape(folder) + "/**/*.parquet"


def parquet_view_sql(
    table: str, glob: str, create: str = "CREATE OR REPLACE VIEW", folder: Path | None = None
) -> str:
    """``CREATE OR REPLACE VIEW table AS SELECT * FROM read_parquet(glob)`` (glob absolute or
    relative to the working directory of whoever runs it; see ``parquet_glob``), the name quoted
    as an identifier and the glob as a literal; ``create="CREATE TABLE"`` copies the rows instead.
    With ``folder`` (the parts' folder), a contract column no part holds (an OUT written before the
    column existed) is added as a typed NULL, so queries written since still bind."""
    missing = (
        null_columns_sql(table, parquet_columns(folder)) if folder is not None and table in TABLES else ""
    )
    return (
        f"{create} {quote_ident(table)} AS SELECT *{missing} FROM read_parquet({quote_literal(glob)}, "
        "union_by_name = true, hive_partitioning = false)"
    )


def parquet_columns(folder: Path) -> set[str]:
    """The column names any Parquet part below ``folder`` holds (read from the footers only)."""
    names: set[str] = set()
    for part in sorted(Path(folder).glob("**/*.parquet")):
        names.update(pq.read_schema(part).names)
    return names


def derived_view_sql(folders: dict[str, Path]) -> list[str]:
    """``CREATE VIEW`` statements for tables an older OUT lacks: ``processes`` derived from
    ``events``, ``batch_seconds`` from ``batches`` (see ``logcorr.processes``), any other table of
    the contract as an empty view with its columns. Empty when OUT has them all."""
    views = []
    if "processes" not in folders and "events" in folders:
        views.append(f'CREATE OR REPLACE VIEW "processes" AS {processes.FROM_EVENTS_SQL.strip()}')
    if "batch_seconds" not in folders and "batches" in folders:
        views.append(f'CREATE OR REPLACE VIEW "batch_seconds" AS {processes.BATCH_SECONDS_SQL.strip()}')
    derived = {"processes", "batch_seconds"} if "events" in folders else set()
    # any other table of the contract OUT lacks (written before the table existed): empty, typed
    views += [empty_view_sql(t) for t in TABLES if t not in folders and t not in derived]
    return views
