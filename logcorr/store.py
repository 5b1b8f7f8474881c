"""Store: rows → Parquet tables under OUT/, written whole or not at all.

Layout: ``OUT/<table>/origin=<name>/part-<n>.parquet`` for every table, plus ``OUT/manifest.json``.
``origin`` names where the ingest ran (a GPU node's host name, by default): outputs of several hosts
combine by copying their folders into one, hive-style, and every reader globs ``<table>/**/*.parquet``.
Everything is written into a hidden sibling folder first and swapped into place when complete, so an
ingest killed half way leaves the previous OUT as it was. With ``append=True`` the previous OUT's
parts are kept (hard-linked) and new parts added beside them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from logcorr.schema import conform

DERIVED = ("logcorr.duckdb", "logcorr.duckdb.wal", "views.sql")  # rebuilt from the tables after each ingest
# The tables an ingest writes (DESIGN.md "Tables"; ``ingest.table_schemas()`` gives their columns, and a
# test keeps the two equal). Only folders of OUT with these names become views: a folder name is data
# (copied in from another host's output), never SQL.
TABLES = (
    "events", "sources", "batches", "aborts", "transfer_errors", "requests", "rooms", "watchdogs",
    "tracebacks", "stacks", "captures", "processes", "batch_seconds",
)  # fmt: skip


def glob_escape(path: str | Path) -> str:
    """``path`` as a DuckDB or polars glob pattern that matches only itself: each of ``[ ] * ?``
    wrapped in a bracket class (``out[1]`` → ``out[[]1[]]``), so an OUT named ``out[1]`` never
    reads the files of a sibling ``out1``. Append ``/**/*.parquet`` after escaping."""
    return re.sub(r"([\[\]*?])", r"[\1]", str(path))


def _remove_stale(out: Path) -> None:
    """Remove temporary folders left by an ingest that was killed (its process is gone)."""
    for tmp in out.parent.glob(f".{out.name}.tmp-*"):
        pid = tmp.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(tmp, ignore_errors=True)
        elif pid == str(os.getpid()):
            shutil.rmtree(tmp, ignore_errors=True)


def safe_name(text: str) -> str:
    """``text`` usable as one path component (hive partition value): letters, digits, ``._-`` kept."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text) or "_"


def _dictionary_columns(df: pl.DataFrame) -> list[str]:
    """The text columns whose values repeat (a quarter or fewer distinct in ``df``, a table's first
    chunk): Parquet dictionary encoding pays for those. On unique text (messages, journal cursors)
    pyarrow builds a dictionary only to drop it: measured on a day of events, half the write time
    and 12 % larger files."""
    return [c for c, t in df.schema.items() if t == pl.String and df[c].n_unique() * 4 <= df.height]


class OutputError(Exception):
    """OUT cannot be written (not a logcorr output folder, no permission)."""


class Output:
    """An OUT folder being written. Use ``write`` per chunk, then ``commit`` or ``abort``."""

    def __init__(
        self, out: Path, schemas: dict[str, dict], *, origin: str | None = None, append: bool = False
    ) -> None:
        self.out = out
        self.schemas = schemas
        self.partition = f"origin={safe_name(origin or socket.gethostname())}"
        self.tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._finished: set[str] = set()
        self.rows: dict[str, int] = dict.fromkeys(schemas, 0)
        if out.exists() and not out.is_dir():
            raise OutputError(f"{out}: is a file, not a folder; -o names the output folder")
        for parent in out.parents:
            if parent.exists() and not parent.is_dir():
                raise OutputError(f"{out}: {parent} is a file, not a folder")
        if out.exists() and not (out / "manifest.json").exists() and any(out.iterdir()):
            raise OutputError(
                f"{out}: exists and is not a logcorr output folder (no manifest.json); choose another -o"
            )
        out.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale(out)
        if append and out.exists():
            # Parquet parts are never modified once written: hard links cost nothing. The manifest is
            # rewritten, and the DuckDB file is rebuilt, so those must not share the old inodes.
            shutil.copytree(
                out, self.tmp, copy_function=os.link, ignore=shutil.ignore_patterns("manifest.json", *DERIVED)
            )
            shutil.copy2(out / "manifest.json", self.tmp / "manifest.json")
        else:
            self.tmp.mkdir()
        self.part = self._next_part()

    def _next_part(self) -> int:
        parts = [int(p.stem.split("-")[1]) for p in self.tmp.glob(f"*/{self.partition}/part-*.parquet")]
        return max(parts, default=-1) + 1

    def previous_manifest(self) -> dict | None:
        m = self.tmp / "manifest.json"
        return json.loads(m.read_text()) if m.exists() else None

    def write(self, table: str, df: pl.DataFrame) -> None:
        """Append rows to ``table`` (conformed to its schema: missing columns null, extras dropped)."""
        if df.height == 0:
            return
        if table in self._finished:
            raise RuntimeError(f"{table}: written after finish()")
        frame = conform(df, self.schemas[table])
        arrow = frame.to_arrow(compat_level=pl.CompatLevel.newest())  # string views: no copy
        writer = self._writers.get(table)
        if writer is None:
            folder = self.tmp / table / self.partition
            folder.mkdir(parents=True, exist_ok=True)
            writer = pq.ParquetWriter(
                folder / f"part-{self.part}.parquet",
                arrow.schema,
                compression="zstd",
                use_dictionary=_dictionary_columns(frame),
                store_schema=False,  # Parquet's own types only: text reads back as plain strings
            )
            self._writers[table] = writer
        writer.write_table(arrow)
        self.rows[table] += df.height

    def finish(self, table: str) -> list[Path]:
        """Close the part of ``table`` this ingest wrote, so it can be read back (e.g. by DuckDB), and
        return its path ([] when no row was written). Writing to ``table`` afterwards raises."""
        self._finished.add(table)
        writer = self._writers.pop(table, None)
        if writer is None:
            return []
        writer.close()
        return [self.tmp / table / self.partition / f"part-{self.part}.parquet"]

    def commit(self, manifest: dict) -> Path:
        """Close every table (an empty one gets a zero-row part with its schema), write manifest.json
        and swap the folder into place. Returns OUT."""
        for table, schema in self.schemas.items():
            if table not in self._writers and not any((self.tmp / table).glob("**/*.parquet")):
                (self.tmp / table / self.partition).mkdir(parents=True, exist_ok=True)
                empty = pl.DataFrame(schema=schema).to_arrow()
                pq.write_table(empty, self.tmp / table / self.partition / f"part-{self.part}.parquet")
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        (self.tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
        old = self.out.parent / f".{self.out.name}.old-{os.getpid()}"
        if self.out.exists():
            self.out.rename(old)
        self.tmp.rename(self.out)
        shutil.rmtree(old, ignore_errors=True)
        return self.out

    def abort(self) -> None:
        """Drop everything written; OUT stays as it was."""
        for writer in self._writers.values():
            with contextlib.suppress(Exception):  # a broken writer must not hide the first error
                writer.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
